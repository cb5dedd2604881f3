//! The log files on disk: their naming pattern, the rolling writer that `tracing` writes
//! through (a time period plus a size cap), and listing and clean-up of the log directory
//! (issue 7 §4). Owns no global state: the writer's policy and the name of the file being
//! written are shared with [`LogControl`](super::LogControl) through `Arc<Mutex<_>>`.
//!
//! File names (times in UTC): `bootlane.<YYYY-MM-DD>.log` (daily rotation),
//! `bootlane.<YYYY-MM-DD-HH>.log` (hourly) or `bootlane.log` (never); when a file reaches
//! the size cap the writer continues in `bootlane.<stamp>.1.log`, `.2.log`, ... Only names
//! of this pattern are ever listed or removed.
//!
//! Why our own writer rather than `tracing_appender::rolling`: its `Builder` rotates by
//! time and prunes by count but has no size cap, and its file naming is private, so a
//! size cap cannot be layered on top of it. The crates that do both (`rolling-file`,
//! `file-rotate`, `logroller`) are little used or unmaintained, and none lets the policy
//! change while running, which `PUT /settings/logging` needs. tracing-appender still
//! provides the non-blocking writer thread in front of this one.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// Prefix of every log file name.
pub const FILE_PREFIX: &str = "bootlane";

/// When the writer starts a new file (`[logging] rotation`). Periods are UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rotation {
    /// A new file every day: `bootlane.YYYY-MM-DD.log`.
    #[default]
    Daily,
    /// A new file every hour: `bootlane.YYYY-MM-DD-HH.log`.
    Hourly,
    /// One file, `bootlane.log`, rolled only by the size cap.
    Never,
}

impl Rotation {
    /// The period stamp of `t` in file names, `None` for [`Rotation::Never`].
    pub fn stamp(self, t: OffsetDateTime) -> Option<String> {
        let (y, m, d, h) = (t.year(), u8::from(t.month()), t.day(), t.hour());
        match self {
            Self::Daily => Some(format!("{y:04}-{m:02}-{d:02}")),
            Self::Hourly => Some(format!("{y:04}-{m:02}-{d:02}-{h:02}")),
            Self::Never => None,
        }
    }
}

/// The part of the logging settings the file writer and the automatic pruning follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilePolicy {
    /// When a new file starts.
    pub rotation: Rotation,
    /// Size cap of one file in bytes: a write that would pass it goes to a new file.
    pub max_file_bytes: u64,
    /// Most log files kept (the oldest beyond it are removed when a file is opened).
    pub keep_files: u32,
    /// Files last modified longer ago than this many days are removed when a file is opened.
    pub retention_days: u32,
}

/// The file name for a period stamp and a size-roll index (0: the first file of the period).
pub fn file_name(stamp: Option<&str>, index: u32) -> String {
    let mut name = String::from(FILE_PREFIX);
    if let Some(s) = stamp {
        name.push('.');
        name.push_str(s);
    }
    if index > 0 {
        name.push_str(&format!(".{index}"));
    }
    name.push_str(".log");
    name
}

/// Splits a log file name of our pattern into its period stamp and size-roll index;
/// `None` for any other name (which listing and clean-up then ignore).
pub fn parse_file_name(name: &str) -> Option<(Option<String>, u32)> {
    let rest = name.strip_prefix(FILE_PREFIX)?.strip_suffix(".log")?;
    if rest.is_empty() {
        return Some((None, 0));
    }
    let parts: Vec<&str> = rest.strip_prefix('.')?.split('.').collect();
    let is_stamp = |s: &str| {
        let b = s.as_bytes();
        (b.len() == 10 || b.len() == 13)
            && b.iter().enumerate().all(|(i, c)| match i {
                4 | 7 | 10 => *c == b'-',
                _ => c.is_ascii_digit(),
            })
    };
    let index = |s: &str| {
        (!s.is_empty() && s.len() <= 9 && s.bytes().all(|c| c.is_ascii_digit()) && !s.starts_with('0'))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    match parts.as_slice() {
        [s] if is_stamp(s) => Some((Some((*s).to_string()), 0)),
        [n] => Some((None, index(n)?)),
        [s, n] if is_stamp(s) => Some((Some((*s).to_string()), index(n)?)),
        _ => None,
    }
}

/// One log file in the log directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct LogFile {
    /// File name (inside the log directory).
    pub name: String,
    /// Size in bytes.
    pub size_bytes: u64,
    /// Last modification, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub modified: OffsetDateTime,
    /// Whether the server is writing to this file now (clean-up never removes it).
    pub current: bool,
}

/// The log files of our naming pattern in `dir`, newest first (by modification time, then
/// period and index). A missing directory lists as empty.
///
/// # Errors
/// I/O errors reading the directory.
pub fn list(dir: &Path, current: Option<&str>) -> io::Result<Vec<LogFile>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if parse_file_name(&name).is_none() {
            continue;
        }
        // symlink_metadata: a symlink named like a log file is not ours to list or remove.
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        files.push(LogFile {
            current: current == Some(name.as_str()),
            name,
            size_bytes: meta.len(),
            modified: meta.modified().map_or(OffsetDateTime::UNIX_EPOCH, OffsetDateTime::from),
        });
    }
    files.sort_by_cached_key(|f| std::cmp::Reverse((f.modified, parse_file_name(&f.name))));
    Ok(files)
}

/// How [`select`] combines its two rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// A file goes when every given rule selects it (`POST /logs/cleanup`: "older than N
    /// days, but keep the latest M").
    All,
    /// A file goes when any rule selects it (automatic retention: `keep_files` and
    /// `retention_days` are two independent caps).
    Any,
}

/// The files (of `files`, newest first as [`list`] returns them) that the rules select for
/// removal: `older_than_days` selects files last modified more than that many days before
/// `now`, `keep_latest` selects all but the newest N (the current file counts among them).
/// The current file is never selected. No rule given selects nothing.
pub fn select(
    files: &[LogFile],
    older_than_days: Option<u32>,
    keep_latest: Option<u32>,
    combine: Combine,
    now: OffsetDateTime,
) -> Vec<LogFile> {
    if older_than_days.is_none() && keep_latest.is_none() {
        return Vec::new();
    }
    files
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            let old = older_than_days.map(|d| f.modified < now - time::Duration::days(i64::from(d)));
            let beyond = keep_latest.map(|n| *i >= n as usize);
            let chosen = match combine {
                Combine::All => old.unwrap_or(true) && beyond.unwrap_or(true),
                Combine::Any => old.unwrap_or(false) || beyond.unwrap_or(false),
            };
            chosen && !f.current
        })
        .map(|(_, f)| f.clone())
        .collect()
}

/// Removes the selected files from `dir`; answers those actually removed (a file that
/// vanished meanwhile is skipped).
pub fn remove(dir: &Path, files: Vec<LogFile>) -> Vec<LogFile> {
    files
        .into_iter()
        .filter(|f| match fs::remove_file(dir.join(&f.name)) {
            Ok(()) => true,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(file = %f.name, "removing an old log file failed: {e}");
                }
                false
            }
        })
        .collect()
}

/// Applies the automatic retention of `policy` to `dir` (never the current file).
pub fn prune(dir: &Path, current: Option<&str>, policy: &FilePolicy, now: OffsetDateTime) {
    if let Ok(files) = list(dir, current) {
        let doomed = select(
            &files,
            Some(policy.retention_days),
            Some(policy.keep_files),
            Combine::Any,
            now,
        );
        remove(dir, doomed);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct OpenFile {
    file: File,
    stamp: Option<String>,
    index: u32,
    written: u64,
}

/// The rolling file writer: appends to the current file, starts a new one when the period
/// of [`FilePolicy::rotation`] changes or when a write would pass the size cap, and prunes
/// the directory whenever it opens a file. The policy is read on every write, so changes
/// apply to the next line. Runs on tracing-appender's worker thread (blocking I/O is fine).
pub struct RollingWriter {
    dir: PathBuf,
    policy: Arc<Mutex<FilePolicy>>,
    current: Arc<Mutex<Option<String>>>,
    clock: Box<dyn Fn() -> OffsetDateTime + Send>,
    open: Option<OpenFile>,
}

impl RollingWriter {
    /// A writer into `dir` (created on the first write), following `policy`, publishing the
    /// name of the file it writes in `current`, with the time taken from `clock` (UTC).
    pub fn new(
        dir: PathBuf,
        policy: Arc<Mutex<FilePolicy>>,
        current: Arc<Mutex<Option<String>>>,
        clock: Box<dyn Fn() -> OffsetDateTime + Send>,
    ) -> Self {
        Self {
            dir,
            policy,
            current,
            clock,
            open: None,
        }
    }

    /// Opens the first file of period `stamp` from `index` on that is not yet full.
    fn open_from(
        &mut self,
        stamp: Option<String>,
        mut index: u32,
        policy: &FilePolicy,
        now: OffsetDateTime,
    ) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        loop {
            let name = file_name(stamp.as_deref(), index);
            let path = self.dir.join(&name);
            let size = fs::metadata(&path).map_or(0, |m| m.len());
            if size < policy.max_file_bytes || index == u32::MAX {
                let file = OpenOptions::new().create(true).append(true).open(&path)?;
                self.open = Some(OpenFile {
                    file,
                    stamp,
                    index,
                    written: size,
                });
                *lock(&self.current) = Some(name.clone());
                prune(&self.dir, Some(&name), policy, now);
                return Ok(());
            }
            index += 1;
        }
    }
}

impl Write for RollingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let policy = *lock(&self.policy);
        let now = (self.clock)();
        let stamp = policy.rotation.stamp(now);
        match &self.open {
            None => self.open_from(stamp, 0, &policy, now)?,
            Some(o) if o.stamp != stamp => self.open_from(stamp, 0, &policy, now)?,
            Some(o) if o.written > 0 && o.written + buf.len() as u64 > policy.max_file_bytes => {
                let next = o.index.saturating_add(1);
                self.open_from(stamp, next, &policy, now)?;
            }
            Some(_) => {}
        }
        let o = self.open.as_mut().ok_or_else(|| io::Error::other("no log file open"))?;
        o.file.write_all(buf)?;
        o.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.open.as_mut().map_or(Ok(()), |o| o.file.flush())
    }
}
