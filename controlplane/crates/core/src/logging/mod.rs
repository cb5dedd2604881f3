//! Logging: owns the `[logging]` config section, the global tracing subscriber and
//! everything the log endpoints need, gathered in one [`LogControl`].
//!
//! tracing writes to stderr and, through tracing-appender's non-blocking writer thread, to
//! rotating files in the log directory (`<data_dir>/logs` unless `[logging] dir`; naming
//! and rotation in [`files`]). Records of the `log` crate (aya's) are bridged into tracing.
//! Each event that passes the level filter is also sent as a structured [`LogLine`] on a
//! broadcast channel for `GET /logs/stream` ([`stream`]). The level filter sits behind a
//! reload handle, so `PUT /settings/logging` changes it live, as it does the rotation, the
//! size cap and the retention, which the file writer reads on every line.
//!
//! Settings are layered through the settings layer ([`crate::settings`]; [`LoggingSettings`]
//! is its `logging` group): the config file gives the base, the keys stored through the
//! API (`settings` tree, key `logging`, only the keys that differ from the file) win over
//! it key by key, and `--log`/`RUST_LOG` win over both for the level at start. Global state: the tracing subscriber and the `log` bridge, installed
//! once by [`init`]; [`LogControl::for_tests`] builds the same stack without installing it.

pub mod files;
pub mod stream;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock, PoisonError},
};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::{level_filters::LevelFilter, Dispatch};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{fmt, fmt::writer::BoxMakeWriter, prelude::*, reload, EnvFilter, Registry};
use utoipa::ToSchema;

pub use self::{
    files::{FilePolicy, LogFile, Rotation},
    stream::{LogLevel, LogLine},
};
use crate::{
    service_error::ServiceError,
    settings::{Effect, Group, Layer, Problem},
    store::Store,
};

/// Default size cap of one log file: 64 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;
/// Smallest accepted size cap: 64 KiB.
pub const MIN_MAX_FILE_BYTES: u64 = 64 << 10;
/// Largest accepted size cap: 1 TiB.
pub const MAX_MAX_FILE_BYTES: u64 = 1 << 40;
/// Largest accepted `keep_files`.
pub const MAX_KEEP_FILES: u32 = 10_000;
/// Largest accepted `retention_days` (10 years).
pub const MAX_RETENTION_DAYS: u32 = 3650;

const SETTINGS_TREE: &str = "settings";
// The general, DNS and logging settings (listen addresses, ports, the server's name, log
// files) belong to one machine.
crate::store::node_tree!(SETTINGS_TREE);
const SETTINGS_KEY: &str = "logging";

/// `[logging]`: level, log files, rotation and retention. Every key has a default.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingConfig {
    /// tracing `EnvFilter` syntax, e.g. `"bootlane::dhcp=debug,info"`. Precedence at start:
    /// `--log`/`RUST_LOG`, a level stored through the API, then the file.
    pub level: String,
    /// The log directory.
    ///
    /// Default: `"<data_dir>/logs"`.
    pub dir: Option<PathBuf>,
    /// `daily`, `hourly` or `never` (UTC periods).
    pub rotation: Rotation,
    /// Size cap per file (64 KiB - 1 TiB); past it the next file starts.
    pub max_file_bytes: u64,
    /// Most files kept, the current one included (1-10000).
    pub keep_files: u32,
    /// Older files are removed (1-3650).
    pub retention_days: u32,
    /// The level from `--log` or `RUST_LOG` (set by `Config::load`, not a file key). It wins
    /// over the file and the stored settings at start.
    #[serde(skip)]
    pub level_override: Option<String>,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            dir: None,
            rotation: Rotation::Daily,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            keep_files: 14,
            retention_days: 30,
            level_override: None,
        }
    }
}

impl LoggingConfig {
    /// The log directory: `dir`, or `<data_dir>/logs`.
    pub fn dir_in(&self, data_dir: &Path) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| data_dir.join("logs"))
    }

    /// The file layer of the settings.
    pub fn settings(&self) -> LoggingSettings {
        LoggingSettings {
            level: self.level.clone(),
            rotation: self.rotation,
            max_file_bytes: self.max_file_bytes,
            keep_files: self.keep_files,
            retention_days: self.retention_days,
        }
    }

    /// Checks every key (and the `--log`/`RUST_LOG` level).
    ///
    /// # Errors
    /// A message naming the key (`[logging] level: ...`) and what is expected.
    pub fn validate(&self) -> anyhow::Result<()> {
        validate(&self.settings()).map_err(|e| anyhow::anyhow!("[logging] {e}"))?;
        if let Some(l) = &self.level_override {
            parse_filter(l).map_err(|e| anyhow::anyhow!("--log / RUST_LOG: {e}"))?;
        }
        Ok(())
    }
}

/// The effective logging settings (`GET /settings/logging`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LoggingSettings {
    /// Level filter, tracing `EnvFilter` syntax.
    pub level: String,
    /// When a new file starts: `daily`, `hourly` or `never`.
    pub rotation: Rotation,
    /// Size cap of one file in bytes (65536 - 2^40).
    pub max_file_bytes: u64,
    /// Most log files kept, the current one included (1-10000).
    pub keep_files: u32,
    /// Age limit of log files in days (1-3650).
    pub retention_days: u32,
}

impl LoggingSettings {
    fn policy(&self) -> FilePolicy {
        FilePolicy {
            rotation: self.rotation,
            max_file_bytes: self.max_file_bytes,
            keep_files: self.keep_files,
            retention_days: self.retention_days,
        }
    }
}

/// The logging group of the settings layer: every key applies live; the stored document
/// holds only the keys that differ from the file (as older versions, which stored the
/// keys ever PUT, read it).
impl Group for LoggingSettings {
    const TREE: &'static str = SETTINGS_TREE;
    const KEY: &'static str = SETTINGS_KEY;
    const SERVICE: &'static str = "logging";

    fn validate(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        if let Err(e) = parse_filter(&self.level) {
            p.push(Problem::new("level", e));
        }
        let mut range = |key: &str, v: u64, lo: u64, hi: u64| {
            if !(lo..=hi).contains(&v) {
                p.push(Problem::new(key, format!("{key} = {v} is out of range; use {lo}-{hi}")));
            }
        };
        range(
            "max_file_bytes",
            self.max_file_bytes,
            MIN_MAX_FILE_BYTES,
            MAX_MAX_FILE_BYTES,
        );
        range("keep_files", self.keep_files.into(), 1, MAX_KEEP_FILES.into());
        range(
            "retention_days",
            self.retention_days.into(),
            1,
            MAX_RETENTION_DAYS.into(),
        );
        p
    }

    fn effect(_key: &str) -> Effect {
        Effect::Live
    }
}

/// Body of `PUT /settings/logging`: any subset of the settings. Unknown keys are a 400.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoggingSettingsPatch {
    /// Level filter, tracing `EnvFilter` syntax.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// `daily`, `hourly` or `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<Rotation>,
    /// Size cap of one file in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<u64>,
    /// Most log files kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_files: Option<u32>,
    /// Age limit of log files in days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u32>,
    /// The log directory of the GET answer: accepted when unchanged (so a GET answer can
    /// be PUT back); it cannot change while the server runs (`[logging] dir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
}

impl LoggingSettingsPatch {
    fn apply_to(&self, s: &mut LoggingSettings) {
        if let Some(v) = &self.level {
            s.level.clone_from(v);
        }
        if let Some(v) = self.rotation {
            s.rotation = v;
        }
        if let Some(v) = self.max_file_bytes {
            s.max_file_bytes = v;
        }
        if let Some(v) = self.keep_files {
            s.keep_files = v;
        }
        if let Some(v) = self.retention_days {
            s.retention_days = v;
        }
    }
}

fn parse_filter(level: &str) -> Result<EnvFilter, String> {
    EnvFilter::builder().parse(level).map_err(|e| {
            format!("level {level:?} is not a valid filter ({e}); use tracing EnvFilter syntax such as \"info\" or \"bootlane=debug,info\"")
        })
}

/// Checks every setting ([`Group::validate`] of [`LoggingSettings`]).
///
/// # Errors
/// [`ServiceError::Invalid`] naming the first bad key and its accepted range.
pub fn validate(s: &LoggingSettings) -> Result<(), ServiceError> {
    match Group::validate(s).into_iter().next() {
        Some(p) => Err(ServiceError::Invalid(p.message)),
        None => Ok(()),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct State {
    /// What is in force (the layer's value, the command-line level over it until a PUT
    /// sets the level).
    effective: LoggingSettings,
}

/// The handle on logging that the API gets (cheap to share as `Arc<LogControl>`): the
/// reload handle of the level filter, the log directory and the name of the file being
/// written, the broadcast of [`LogLine`]s and the layered settings.
pub struct LogControl {
    dir: PathBuf,
    filter: reload::Handle<EnvFilter, Registry>,
    lines: broadcast::Sender<Arc<LogLine>>,
    policy: Arc<Mutex<FilePolicy>>,
    current: Arc<Mutex<Option<String>>>,
    state: Mutex<State>,
    defaults: LoggingSettings,
    level_override: Option<String>,
    /// The settings layer (file base, stored keys), opened by [`LogControl::attach`].
    layer: OnceLock<Layer<LoggingSettings>>,
    write_lock: tokio::sync::Mutex<()>,
    streams_closed: CancellationToken,
    /// Whether this is the process-wide subscriber (then level changes also set `log`'s
    /// maximum level, so bridged records follow).
    global: bool,
    /// The subscriber of a [`LogControl::for_tests`] control.
    dispatch: Option<Dispatch>,
}

/// Builds the subscriber stack and its control. `stderr`: also format to stderr.
fn assemble(
    config: &LoggingConfig,
    dir: PathBuf,
    file_writer: impl FnOnce(Arc<Mutex<FilePolicy>>, Arc<Mutex<Option<String>>>) -> BoxMakeWriter,
    stderr: bool,
    global: bool,
) -> anyhow::Result<(LogControl, Dispatch)> {
    let defaults = config.settings();
    let mut effective = defaults.clone();
    if let Some(l) = &config.level_override {
        effective.level.clone_from(l);
    }
    let filter = parse_filter(&effective.level).map_err(|e| anyhow::anyhow!("[logging] {e}"))?;
    let (filter, handle) = reload::Layer::new(filter);
    let policy = Arc::new(Mutex::new(effective.policy()));
    let current = Arc::new(Mutex::new(None));
    let (tx, _) = broadcast::channel(stream::STREAM_CAPACITY);
    let subscriber = tracing_subscriber::registry()
        .with(filter)
        .with(stderr.then(|| fmt::layer().with_writer(std::io::stderr)))
        .with(
            fmt::layer()
                .with_ansi(false)
                .with_writer(file_writer(policy.clone(), current.clone())),
        )
        .with(stream::StreamLayer::new(tx.clone()));
    let control = LogControl {
        dir,
        filter: handle,
        lines: tx,
        policy,
        current,
        state: Mutex::new(State { effective }),
        defaults,
        level_override: config.level_override.clone(),
        layer: OnceLock::new(),
        write_lock: tokio::sync::Mutex::new(()),
        streams_closed: CancellationToken::new(),
        global,
        dispatch: None,
    };
    Ok((control, Dispatch::new(subscriber)))
}

/// Installs the process-wide subscriber: stderr plus rotating files in the log directory
/// (created if missing), the stream layer and the `log` bridge. Call once, before the
/// runtime starts; keep the returned guard alive until the process ends (dropping it
/// flushes the file writer's queue). Stored settings apply once
/// [`LogControl::attach`] is called with the store.
///
/// # Errors
/// An invalid level, a log directory that cannot be created, or a subscriber that is
/// already installed.
pub fn init(config: &LoggingConfig, data_dir: &Path) -> anyhow::Result<(Arc<LogControl>, WorkerGuard)> {
    let dir = config.dir_in(data_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating the log directory {}", dir.display()))?;
    let mut guard = None;
    let (control, dispatch) = assemble(
        config,
        dir.clone(),
        |policy, current| {
            let writer = files::RollingWriter::new(dir, policy, current, Box::new(OffsetDateTime::now_utc));
            let (nb, g) = tracing_appender::non_blocking(writer);
            guard = Some(g);
            BoxMakeWriter::new(nb)
        },
        true,
        true,
    )?;
    // try_init also installs the `log` bridge (tracing-subscriber's `tracing-log` feature)
    // with the current maximum level; `LogControl::apply_live` keeps it in step after that.
    dispatch.try_init().context("installing the tracing subscriber")?;
    let guard = guard.context("the file writer was not built")?;
    Ok((Arc::new(control), guard))
}

impl LogControl {
    /// A control whose subscriber is NOT installed globally (tests run in one process):
    /// files go synchronously to `dir`, nothing to stderr. Emit through it with
    /// `tracing::dispatcher::with_default(control.dispatch().unwrap(), ...)`.
    ///
    /// # Panics
    /// Never with the default settings it uses.
    pub fn for_tests(dir: &Path) -> Arc<Self> {
        let (mut control, dispatch) = assemble(
            &LoggingConfig::default(),
            dir.to_path_buf(),
            |policy, current| {
                let dir = dir.to_path_buf();
                BoxMakeWriter::new(Mutex::new(files::RollingWriter::new(
                    dir,
                    policy,
                    current,
                    Box::new(OffsetDateTime::now_utc),
                )))
            },
            false,
            false,
        )
        .expect("default logging settings are valid");
        control.dispatch = Some(dispatch);
        Arc::new(control)
    }

    /// The subscriber of a [`LogControl::for_tests`] control; `None` for the global one.
    pub fn dispatch(&self) -> Option<&Dispatch> {
        self.dispatch.as_ref()
    }

    /// Connects the control to the store and the server's lifetime: applies the stored
    /// keys over the file through the settings layer (the command-line level still wins
    /// at start), and ends every log stream when `shutdown` fires (so graceful shutdown
    /// does not wait for SSE clients). A stored key that no longer validates is ignored
    /// with a warning (the file's value serves).
    ///
    /// # Errors
    /// Store errors.
    pub async fn attach(&self, store: &Store, shutdown: CancellationToken) -> Result<LoggingSettings, ServiceError> {
        let closed = self.streams_closed.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            closed.cancel();
        });
        let _g = self.write_lock.lock().await;
        let layer = Layer::open(store, LoggingConfig::default().settings(), self.defaults.clone())?;
        let mut effective = layer.get();
        let _ = self.layer.set(layer);
        if let Some(l) = &self.level_override {
            effective.level.clone_from(l);
        }
        self.apply_live(&effective)?;
        Ok(effective)
    }

    /// The settings in force.
    pub fn settings(&self) -> LoggingSettings {
        lock(&self.state).effective.clone()
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The name of the file being written (inside [`Self::dir`]); `None` before the first line.
    pub fn current_file(&self) -> Option<String> {
        lock(&self.current).clone()
    }

    /// A new receiver of the structured log lines (for `GET /logs/stream`).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LogLine>> {
        self.lines.subscribe()
    }

    /// Fires when the server shuts down; log streams end then.
    pub fn streams_closed(&self) -> CancellationToken {
        self.streams_closed.clone()
    }

    /// Validates `patch` over the settings in force, stores the resulting overrides and
    /// applies them live (level filter, rotation, size cap and retention, including an
    /// immediate prune of the log directory).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key (bad filter, number out of range, a changed
    /// `dir`); store errors.
    pub async fn apply(&self, patch: LoggingSettingsPatch) -> Result<LoggingSettings, ServiceError> {
        let _g = self.write_lock.lock().await;
        if let Some(d) = &patch.dir {
            if Path::new(d) != self.dir {
                return Err(ServiceError::Invalid(format!(
                    "dir cannot change while the server runs (it is {}); set [logging] dir in the config file",
                    self.dir.display()
                )));
            }
        }
        let mut effective = self.settings();
        patch.apply_to(&mut effective);
        validate(&effective)?;
        if let Some(layer) = self.layer.get() {
            // The layer keeps the file and stored values; the command-line level in force
            // is not stored unless this patch sets the level.
            let mut stored = layer.get();
            patch.apply_to(&mut stored);
            layer.set(stored).await?;
        }
        self.apply_live(&effective)?;
        tracing::info!(level = %effective.level, rotation = ?effective.rotation, "logging settings changed");
        Ok(effective)
    }

    fn apply_live(&self, s: &LoggingSettings) -> Result<(), ServiceError> {
        let filter = parse_filter(&s.level).map_err(ServiceError::Invalid)?;
        if let Err(e) = self.filter.reload(filter) {
            // Only when the subscriber is gone, i.e. never while the server runs.
            tracing::warn!("the log level could not be changed: {e}");
        }
        if self.global {
            // The `log` bridge filters by its own maximum level, fixed at install time.
            log::set_max_level(match LevelFilter::current().into_level() {
                None => log::LevelFilter::Off,
                Some(tracing::Level::ERROR) => log::LevelFilter::Error,
                Some(tracing::Level::WARN) => log::LevelFilter::Warn,
                Some(tracing::Level::INFO) => log::LevelFilter::Info,
                Some(tracing::Level::DEBUG) => log::LevelFilter::Debug,
                Some(_) => log::LevelFilter::Trace,
            });
        }
        let policy = s.policy();
        *lock(&self.policy) = policy;
        let current = self.current_file();
        files::prune(&self.dir, current.as_deref(), &policy, OffsetDateTime::now_utc());
        lock(&self.state).effective = s.clone();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn emit(c: &LogControl, f: impl FnOnce()) {
        tracing::dispatcher::with_default(c.dispatch().unwrap(), f);
    }

    fn recv_now(rx: &mut broadcast::Receiver<Arc<LogLine>>) -> Option<Arc<LogLine>> {
        rx.try_recv().ok()
    }

    #[test]
    fn validation_names_the_key() {
        let ok = LoggingConfig::default().settings();
        assert!(validate(&ok).is_ok());
        for (s, key) in [
            (
                LoggingSettings {
                    level: "bootlane=nope=1".into(),
                    ..ok.clone()
                },
                "level",
            ),
            (
                LoggingSettings {
                    max_file_bytes: 10,
                    ..ok.clone()
                },
                "max_file_bytes",
            ),
            (
                LoggingSettings {
                    keep_files: 0,
                    ..ok.clone()
                },
                "keep_files",
            ),
            (
                LoggingSettings {
                    retention_days: 99_999,
                    ..ok.clone()
                },
                "retention_days",
            ),
        ] {
            let e = validate(&s).unwrap_err();
            assert!(matches!(e, ServiceError::Invalid(_)));
            assert!(e.to_string().starts_with(key), "{e}");
        }
    }

    #[tokio::test]
    async fn level_changes_live_and_lines_reach_the_stream_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = LogControl::for_tests(dir.path());
        let mut rx = c.subscribe();
        emit(&c, || tracing::debug!("hidden at info"));
        assert!(recv_now(&mut rx).is_none());
        emit(&c, || {
            tracing::info!(mac = "52:54:00:00:00:01", n = 3_u64, ok = true, "lease granted")
        });
        let line = recv_now(&mut rx).unwrap();
        assert_eq!((line.level, line.message.as_str()), (LogLevel::Info, "lease granted"));
        assert_eq!(line.target, module_path!());
        assert_eq!(
            serde_json::to_value(&line.fields).unwrap(),
            serde_json::json!({"mac": "52:54:00:00:00:01", "n": 3, "ok": true})
        );
        let v = serde_json::to_value(&*line).unwrap();
        assert_eq!(v["level"], "info");
        assert!(v["time"].as_str().unwrap().contains('T'));

        let s = c
            .apply(LoggingSettingsPatch {
                level: Some("debug".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(s.level, "debug");
        while recv_now(&mut rx).is_some() {}
        emit(&c, || tracing::debug!("now visible"));
        assert_eq!(recv_now(&mut rx).unwrap().message, "now visible");

        c.apply(LoggingSettingsPatch {
            level: Some("warn".into()),
            ..Default::default()
        })
        .await
        .unwrap();
        while recv_now(&mut rx).is_some() {}
        emit(&c, || tracing::info!("hidden at warn"));
        assert!(recv_now(&mut rx).is_none());

        // The same lines went to the current file (the test writer is synchronous).
        let cur = c.current_file().unwrap();
        assert!(files::parse_file_name(&cur).is_some());
        let text = std::fs::read_to_string(dir.path().join(cur)).unwrap();
        assert!(text.contains("lease granted") && text.contains("now visible"));
        assert!(!text.contains("hidden at"));
    }

    #[tokio::test]
    async fn a_lagging_receiver_is_told_and_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let c = LogControl::for_tests(dir.path());
        let mut rx = c.subscribe();
        emit(&c, || {
            for i in 0..stream::STREAM_CAPACITY + 10 {
                tracing::info!(i, "flood");
            }
        });
        assert!(matches!(rx.try_recv(), Err(broadcast::error::TryRecvError::Lagged(10))));
    }

    #[tokio::test]
    async fn invalid_patches_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let c = LogControl::for_tests(dir.path());
        let before = c.settings();
        for (p, key) in [
            (
                LoggingSettingsPatch {
                    level: Some("a=b=c".into()),
                    keep_files: Some(5),
                    ..Default::default()
                },
                "level",
            ),
            (
                LoggingSettingsPatch {
                    retention_days: Some(0),
                    ..Default::default()
                },
                "retention_days",
            ),
            (
                LoggingSettingsPatch {
                    dir: Some("/elsewhere".into()),
                    ..Default::default()
                },
                "dir",
            ),
        ] {
            let e = c.apply(p).await.unwrap_err().to_string();
            assert!(e.starts_with(key), "{e}");
        }
        assert_eq!(c.settings(), before);
        // The current dir is accepted (a GET answer can be PUT back).
        let same = LoggingSettingsPatch {
            dir: Some(dir.path().display().to_string()),
            ..Default::default()
        };
        assert_eq!(c.apply(same).await.unwrap(), before);
        let e = serde_json::from_str::<LoggingSettingsPatch>(r#"{"levl": "info"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `levl`"), "{e}");
    }

    #[tokio::test]
    async fn stored_overrides_layer_over_the_file_and_apply_at_start() {
        let store = Store::temporary();
        let dir = tempfile::tempdir().unwrap();
        let c = LogControl::for_tests(dir.path());
        c.attach(&store, CancellationToken::new()).await.unwrap();
        c.apply(LoggingSettingsPatch {
            level: Some("warn".into()),
            keep_files: Some(5),
            ..Default::default()
        })
        .await
        .unwrap();
        c.apply(LoggingSettingsPatch {
            rotation: Some(Rotation::Hourly),
            ..Default::default()
        })
        .await
        .unwrap();
        // Only the keys ever PUT are stored, so file defaults still reach the others.
        let stored: serde_json::Value = store.kv("settings").unwrap().get("logging").unwrap().unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"level": "warn", "keep_files": 5, "rotation": "hourly"})
        );

        // "Restart": a new control over the same store picks the overrides up...
        let again = LogControl::for_tests(dir.path());
        let shutdown = CancellationToken::new();
        let s = again.attach(&store, shutdown.clone()).await.unwrap();
        assert_eq!(
            (s.level.as_str(), s.keep_files, s.rotation, s.retention_days),
            ("warn", 5, Rotation::Hourly, 30)
        );
        assert_eq!(*lock(&again.policy), s.policy());
        let mut rx = again.subscribe();
        emit(&again, || tracing::info!("filtered by the stored level"));
        assert!(recv_now(&mut rx).is_none());
        // ...and the shutdown token ends the streams.
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(5), again.streams_closed().cancelled())
            .await
            .unwrap();

        // The command-line level wins over the stored one at start.
        let (cli, _d) = assemble(
            &LoggingConfig {
                level_override: Some("debug".into()),
                ..Default::default()
            },
            dir.path().to_path_buf(),
            |_, _| BoxMakeWriter::new(std::io::sink),
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            cli.attach(&store, CancellationToken::new()).await.unwrap().level,
            "debug"
        );
        // A PUT of another key keeps the command-line level in force without storing it.
        let s = cli
            .apply(LoggingSettingsPatch {
                retention_days: Some(7),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!((s.level.as_str(), s.retention_days), ("debug", 7));
        let stored: serde_json::Value = store.kv("settings").unwrap().get("logging").unwrap().unwrap();
        assert_eq!(stored["level"], "warn", "{stored}");

        // A stored key that no longer validates is dropped for the file's; the others hold.
        store
            .kv("settings")
            .unwrap()
            .put("logging", &serde_json::json!({"keep_files": 0, "rotation": "never"}))
            .await
            .unwrap();
        let s = LogControl::for_tests(dir.path())
            .attach(&store, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            (s.keep_files, s.rotation),
            (LoggingConfig::default().keep_files, Rotation::Never)
        );
    }
}
