//! The log endpoints: the log files (`GET /logs/files`, `GET /logs/disk-usage`,
//! `POST /logs/cleanup`), the live stream of structured log lines (`GET /logs/stream`,
//! server-sent events) and the logging settings (`GET`/`PUT /settings/logging`, applied
//! live). Handlers take the [`LogControl`] as sub-state; all routes need a session.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{FromRef, State},
    response::sse::{Event, KeepAlive, Sse},
};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiQuery, Envelope},
    AppState,
};
use bootlane_core::events::{EventBus, EventKind, NewEvent};
use bootlane_core::logging::{
    files::{self, Combine},
    LogControl, LogFile, LogLevel, LogLine, LoggingSettings, LoggingSettingsPatch,
};

/// Interval of the keep-alive comment on `GET /logs/stream`.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

impl FromRef<AppState> for Arc<LogControl> {
    fn from_ref(s: &AppState) -> Self {
        s.logs.clone()
    }
}

fn io_error(what: &str, e: std::io::Error) -> ApiError {
    ApiError::Internal(anyhow::Error::new(e).context(what.to_string()))
}

fn list(logs: &LogControl) -> Result<Vec<LogFile>> {
    files::list(logs.dir(), logs.current_file().as_deref()).map_err(|e| io_error("listing the log directory", e))
}

/// `GET /logs/files` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogFileList {
    /// The log directory.
    pub dir: String,
    /// The log files, newest first.
    pub files: Vec<LogFile>,
}

/// The log files (names `bootlane.<stamp>[.<n>].log`), newest first.
#[utoipa::path(get, path = "/api/v1/logs/files", extensions(("x-bootlane-role" = json!("viewer"))), tag = "logs",
    responses((status = 200, body = LogFileList), (status = 401)))]
pub async fn list_files(State(logs): State<Arc<LogControl>>) -> Result<Envelope<LogFileList>> {
    Ok(Envelope::ok(LogFileList {
        dir: logs.dir().display().to_string(),
        files: list(&logs)?,
    }))
}

/// One file's share of `GET /logs/disk-usage`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileUsage {
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub size_bytes: u64,
}

/// `GET /logs/disk-usage` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DiskUsage {
    /// The log directory.
    pub dir: String,
    /// Bytes in all log files.
    pub total_bytes: u64,
    /// Bytes per log file, newest first.
    pub files: Vec<FileUsage>,
    /// Bytes free for unprivileged use on the volume holding the log directory (statvfs).
    pub volume_free_bytes: u64,
    /// Size of that volume in bytes.
    pub volume_total_bytes: u64,
}

/// Disk use of the log files and free space on their volume.
#[utoipa::path(get, path = "/api/v1/logs/disk-usage", extensions(("x-bootlane-role" = json!("viewer"))), tag = "logs",
    responses((status = 200, body = DiskUsage), (status = 401)))]
pub async fn disk_usage(State(logs): State<Arc<LogControl>>) -> Result<Envelope<DiskUsage>> {
    let files: Vec<FileUsage> = list(&logs)?
        .into_iter()
        .map(|f| FileUsage {
            name: f.name,
            size_bytes: f.size_bytes,
        })
        .collect();
    let free = fs2::available_space(logs.dir()).map_err(|e| io_error("reading the volume's free space", e))?;
    let total = fs2::total_space(logs.dir()).map_err(|e| io_error("reading the volume's size", e))?;
    Ok(Envelope::ok(DiskUsage {
        dir: logs.dir().display().to_string(),
        total_bytes: files.iter().map(|f| f.size_bytes).sum(),
        files,
        volume_free_bytes: free,
        volume_total_bytes: total,
    }))
}

/// Body of `POST /logs/cleanup`: at least one rule. With both, a file goes only when both
/// select it ("older than N days, but keep the latest M").
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupRequest {
    /// Remove files last modified more than this many days ago (0: any age; at most
    /// 36500).
    #[schema(maximum = 36500)]
    pub older_than_days: Option<u32>,
    /// Keep this many newest files (the current file counts among them and is never
    /// removed; at most 100000).
    #[schema(maximum = 100000)]
    pub keep_latest: Option<u32>,
}

/// `POST /logs/cleanup` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CleanupResult {
    /// The files removed.
    pub removed: Vec<LogFile>,
    /// Bytes freed.
    pub freed_bytes: u64,
}

/// Remove old log files (never the current one; only files of the log-file pattern).
#[utoipa::path(post, path = "/api/v1/logs/cleanup", extensions(("x-bootlane-role" = json!("admin"))), tag = "logs", request_body = CleanupRequest,
    responses((status = 200, body = CleanupResult), (status = 400, description = "No rule given"), (status = 401)))]
pub async fn cleanup(
    State(logs): State<Arc<LogControl>>,
    ApiJson(req): ApiJson<CleanupRequest>,
) -> Result<Envelope<CleanupResult>> {
    if req.older_than_days.is_none() && req.keep_latest.is_none() {
        return Err(ApiError::BadRequest(
            "give older_than_days, keep_latest or both (e.g. {\"keep_latest\": 7})".into(),
        ));
    }
    if req.older_than_days.is_some_and(|d| d > 36_500) {
        return Err(ApiError::BadRequest(
            "older_than_days is at most 36500 (100 years)".into(),
        ));
    }
    if req.keep_latest.is_some_and(|n| n > 100_000) {
        return Err(ApiError::BadRequest("keep_latest is at most 100000".into()));
    }
    let all = list(&logs)?;
    let doomed = files::select(
        &all,
        req.older_than_days,
        req.keep_latest,
        Combine::All,
        OffsetDateTime::now_utc(),
    );
    let removed = files::remove(logs.dir(), doomed);
    if !removed.is_empty() {
        tracing::info!(files = removed.len(), "log files removed by request");
    }
    Ok(Envelope::ok(CleanupResult {
        freed_bytes: removed.iter().map(|f| f.size_bytes).sum(),
        removed,
    }))
}

/// Query parameters of `GET /logs/stream`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamParams {
    /// Minimum level: `trace`, `debug`, `info` (default), `warn` or `error`. Lines below
    /// the server's own level (`/settings/logging`) are never produced.
    pub level: Option<String>,
    /// Only lines whose target starts with this (e.g. `bootlane::dhcp`).
    pub target: Option<String>,
}

fn log_events(
    logs: &LogControl,
    min: LogLevel,
    target: Option<String>,
) -> impl Stream<Item = std::result::Result<Event, axum::Error>> + use<> {
    let wanted = move |l: &LogLine| l.level >= min && target.as_deref().is_none_or(|t| l.target.starts_with(t));
    futures::stream::unfold(logs.subscribe(), move |mut rx| {
        let wanted = wanted.clone();
        async move {
            loop {
                match rx.recv().await {
                    Ok(line) if wanted(&line) => return Some((Event::default().event("log").json_data(&*line), rx)),
                    Ok(_) => {}
                    Err(RecvError::Lagged(n)) => {
                        let ev = Event::default()
                            .event("lagged")
                            .json_data(serde_json::json!({ "skipped": n }));
                        return Some((ev, rx));
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    })
    .take_until(logs.streams_closed().cancelled_owned())
}

/// Live log lines as server-sent events: each line is an event `log` whose data is a
/// [`LogLine`] in JSON; a client that falls behind gets an event `lagged` with
/// `{"skipped": n}` (logging never waits for it); a comment every 15 s keeps the
/// connection open.
#[utoipa::path(get, path = "/api/v1/logs/stream", extensions(("x-bootlane-role" = json!("viewer"))), tag = "logs", params(StreamParams),
    responses((status = 200, description = "Server-sent events: `log` (data: LogLine JSON) and `lagged` (data: {\"skipped\": n})", content_type = "text/event-stream"),
        (status = 400, description = "Unknown level"), (status = 401)))]
pub async fn stream(
    State(logs): State<Arc<LogControl>>,
    ApiQuery(p): ApiQuery<StreamParams>,
) -> Result<Sse<impl Stream<Item = std::result::Result<Event, axum::Error>>>> {
    let min = match p.level.as_deref() {
        None => LogLevel::Info,
        Some(l) => LogLevel::parse(l).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "level {l:?} is not a level; use trace, debug, info, warn or error"
            ))
        })?,
    };
    let target = p.target.filter(|t| !t.is_empty());
    Ok(Sse::new(log_events(&logs, min, target)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// `GET /settings/logging` answer: the settings in force plus the log directory.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoggingSettingsView {
    /// The settings in force.
    #[serde(flatten)]
    pub settings: LoggingSettings,
    /// The log directory (`[logging] dir`; read-only here).
    pub dir: String,
}

/// `PUT /settings/logging` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoggingApplied {
    /// How the change took effect: always `live` (no restart).
    pub applied: String,
    /// The settings now in force.
    pub settings: LoggingSettingsView,
}

fn view(logs: &LogControl, settings: LoggingSettings) -> LoggingSettingsView {
    LoggingSettingsView {
        settings,
        dir: logs.dir().display().to_string(),
    }
}

/// The logging settings (level, rotation, size cap, retention).
#[utoipa::path(get, path = "/api/v1/settings/logging", extensions(("x-bootlane-role" = json!("viewer"))), tag = "logs",
    responses((status = 200, body = LoggingSettingsView), (status = 401)))]
pub async fn get_settings(State(logs): State<Arc<LogControl>>) -> Envelope<LoggingSettingsView> {
    Envelope::ok(view(&logs, logs.settings()))
}

/// Change any subset of the logging settings; stored, and applied live.
#[utoipa::path(put, path = "/api/v1/settings/logging", extensions(("x-bootlane-role" = json!("admin"))), tag = "logs", request_body = LoggingSettingsPatch,
    responses((status = 200, body = LoggingApplied), (status = 400, description = "Bad filter, out-of-range number or unknown key (the message names it)"), (status = 401)))]
pub async fn put_settings(
    State(logs): State<Arc<LogControl>>,
    State(events): State<Arc<EventBus>>,
    ApiJson(patch): ApiJson<LoggingSettingsPatch>,
) -> Result<Envelope<LoggingApplied>> {
    let before = logs.settings();
    let settings = logs.apply(patch).await?;
    // The log control is built before the event bus (logging starts first), so the
    // settings.changed event of this group is published here.
    if settings != before {
        events.publish(NewEvent::write(
            EventKind::SettingsChanged,
            "settings",
            "logging",
            "update",
            "logging settings changed",
            Some(&before),
            Some(&settings),
        ));
    }
    Ok(Envelope::ok(LoggingApplied {
        applied: "live".into(),
        settings: view(&logs, settings),
    }))
}

/// The log routes (protected: merged inside the session layer).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_files))
        .routes(routes!(disk_usage))
        .routes(routes!(cleanup))
        .routes(routes!(stream))
        .routes(routes!(get_settings, put_settings))
}
