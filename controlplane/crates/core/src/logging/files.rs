//! The log files on disk: their naming pattern, the rolling writer that `tracing` writes
//! through (a time period plus a size cap), and listing and clean-up of the log directory.
//! Owns no global state: the writer's policy and the name of the file being
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
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
            // A cut-off before the calendar's start (a huge day count) selects nothing.
            let old = older_than_days.map(|d| {
                now.checked_sub(time::Duration::days(i64::from(d)))
                    .is_some_and(|cut| f.modified < cut)
            });
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

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn policy(rotation: Rotation, max: u64, keep: u32, days: u32) -> Arc<Mutex<FilePolicy>> {
        Arc::new(Mutex::new(FilePolicy {
            rotation,
            max_file_bytes: max,
            keep_files: keep,
            retention_days: days,
        }))
    }

    struct W {
        dir: tempfile::TempDir,
        w: RollingWriter,
        now: Arc<Mutex<OffsetDateTime>>,
        current: Arc<Mutex<Option<String>>>,
    }

    fn writer(p: Arc<Mutex<FilePolicy>>, start: OffsetDateTime) -> W {
        let dir = tempfile::tempdir().unwrap();
        let now = Arc::new(Mutex::new(start));
        let current = Arc::new(Mutex::new(None));
        let clock = now.clone();
        let w = RollingWriter::new(
            dir.path().to_path_buf(),
            p,
            current.clone(),
            Box::new(move || *clock.lock().unwrap()),
        );
        W { dir, w, now, current }
    }

    fn names(dir: &Path) -> Vec<(String, u64)> {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), e.metadata().unwrap().len())
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn names_round_trip_and_foreign_names_are_rejected() {
        for (stamp, i) in [
            (None, 0),
            (None, 3),
            (Some("2024-05-01"), 0),
            (Some("2024-05-01-13"), 12),
        ] {
            let n = file_name(stamp, i);
            assert_eq!(parse_file_name(&n), Some((stamp.map(str::to_string), i)), "{n}");
        }
        assert_eq!(file_name(Some("2024-05-01"), 2), "bootlane.2024-05-01.2.log");
        for bad in [
            "bootlane.txt",
            "other.2024-05-01.log",
            "bootlane.2024-5-01.log",
            "bootlane.2024-05-01.0.log",
            "bootlane.2024-05-01.x.log",
            "bootlane..log",
            "bootlane.2024-05-01.1.2.log",
            "bootlane.log.gz",
            "bootlanex.log",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn daily_rotation_starts_a_new_file_each_utc_day() {
        let mut t = writer(
            policy(Rotation::Daily, 1 << 20, 100, 3650),
            datetime!(2024-05-01 23:59 UTC),
        );
        t.w.write_all(b"one\n").unwrap();
        *t.now.lock().unwrap() = datetime!(2024-05-02 00:00:01 UTC);
        t.w.write_all(b"two\n").unwrap();
        assert_eq!(
            names(t.dir.path()),
            [
                ("bootlane.2024-05-01.log".into(), 4),
                ("bootlane.2024-05-02.log".into(), 4)
            ]
        );
        assert_eq!(t.current.lock().unwrap().as_deref(), Some("bootlane.2024-05-02.log"));
    }

    #[test]
    fn hourly_and_never_name_their_files() {
        let mut t = writer(
            policy(Rotation::Hourly, 1 << 20, 100, 3650),
            datetime!(2024-05-01 07:10 UTC),
        );
        t.w.write_all(b"x\n").unwrap();
        assert_eq!(names(t.dir.path())[0].0, "bootlane.2024-05-01-07.log");
        let mut t = writer(
            policy(Rotation::Never, 1 << 20, 100, 3650),
            datetime!(2024-05-01 07:10 UTC),
        );
        t.w.write_all(b"x\n").unwrap();
        *t.now.lock().unwrap() = datetime!(2024-06-01 07:10 UTC);
        t.w.write_all(b"y\n").unwrap();
        assert_eq!(names(t.dir.path()), [("bootlane.log".into(), 4)]);
    }

    #[test]
    fn size_cap_rolls_to_numbered_files_and_a_restart_continues_the_last() {
        let p = policy(Rotation::Daily, 10, 100, 3650);
        let mut t = writer(p.clone(), datetime!(2024-05-01 12:00 UTC));
        for _ in 0..5 {
            t.w.write_all(b"abcd\n").unwrap(); // 5 bytes: two lines fit under 10
        }
        assert_eq!(
            names(t.dir.path()),
            [
                ("bootlane.2024-05-01.1.log".into(), 10),
                ("bootlane.2024-05-01.2.log".into(), 5),
                ("bootlane.2024-05-01.log".into(), 10),
            ]
        );
        // A line longer than the cap still goes somewhere (alone in its file).
        t.w.write_all(b"0123456789abcdef\n").unwrap();
        assert_eq!(names(t.dir.path()).last().unwrap().1, 10);
        assert!(names(t.dir.path()).contains(&("bootlane.2024-05-01.3.log".into(), 17)));
        // A new writer (restart) skips the full files and appends to the first with room.
        let now = t.now.clone();
        let mut again = RollingWriter::new(
            t.dir.path().to_path_buf(),
            p,
            Arc::new(Mutex::new(None)),
            Box::new(move || *now.lock().unwrap()),
        );
        again.write_all(b"zz\n").unwrap();
        assert!(names(t.dir.path()).contains(&("bootlane.2024-05-01.2.log".into(), 8)));
    }

    #[test]
    fn policy_changes_apply_to_the_next_line() {
        let p = policy(Rotation::Daily, 1 << 20, 100, 3650);
        let mut t = writer(p.clone(), datetime!(2024-05-01 12:00 UTC));
        t.w.write_all(b"line\n").unwrap();
        p.lock().unwrap().rotation = Rotation::Hourly;
        t.w.write_all(b"line\n").unwrap();
        assert_eq!(t.current.lock().unwrap().as_deref(), Some("bootlane.2024-05-01-12.log"));
    }

    fn file(name: &str, age_days: i64, now: OffsetDateTime, current: bool) -> LogFile {
        LogFile {
            name: name.into(),
            size_bytes: 100,
            modified: now - time::Duration::days(age_days) - time::Duration::minutes(1),
            current,
        }
    }

    #[test]
    fn selection_rules() {
        let now = datetime!(2024-05-10 12:00 UTC);
        // Newest first, as `list` returns them.
        let files = [
            file("bootlane.2024-05-10.log", 0, now, true),
            file("bootlane.2024-05-09.log", 1, now, false),
            file("bootlane.2024-05-05.log", 5, now, false),
            file("bootlane.2024-05-01.log", 9, now, false),
        ];
        let pick = |o, k, c| -> Vec<String> { select(&files, o, k, c, now).into_iter().map(|f| f.name).collect() };
        assert!(pick(None, None, Combine::All).is_empty());
        assert_eq!(
            pick(Some(4), None, Combine::All),
            ["bootlane.2024-05-05.log", "bootlane.2024-05-01.log"]
        );
        assert_eq!(pick(None, Some(3), Combine::All), ["bootlane.2024-05-01.log"]);
        // Both: older than 0 days (all) but keep the latest 2.
        assert_eq!(
            pick(Some(0), Some(2), Combine::All),
            ["bootlane.2024-05-05.log", "bootlane.2024-05-01.log"]
        );
        // Both, AND: older than 4 days and beyond the newest 3: only the oldest.
        assert_eq!(pick(Some(4), Some(3), Combine::All), ["bootlane.2024-05-01.log"]);
        // Retention, OR: beyond the newest 3 or older than 4 days.
        assert_eq!(
            pick(Some(4), Some(3), Combine::Any),
            ["bootlane.2024-05-05.log", "bootlane.2024-05-01.log"]
        );
        // The current file is never selected, whatever the rules say.
        assert!(!pick(Some(0), Some(0), Combine::All).contains(&"bootlane.2024-05-10.log".to_string()));
        assert_eq!(pick(Some(0), Some(0), Combine::All).len(), 3);
    }

    #[test]
    fn list_and_prune_touch_only_our_files() {
        let dir = tempfile::tempdir().unwrap();
        let now = OffsetDateTime::now_utc();
        let mk = |name: &str, age_days: i64| {
            let p = dir.path().join(name);
            fs::write(&p, b"data").unwrap();
            let f = File::options().write(true).open(&p).unwrap();
            f.set_modified((now - time::Duration::days(age_days)).into()).unwrap();
        };
        mk("bootlane.2024-01-01.log", 40);
        mk("bootlane.2024-01-02.log", 39);
        mk("bootlane.2024-02-01.log", 2);
        mk("bootlane.2024-02-02.log", 1);
        mk("notes.txt", 100);
        mk("bootlane.2024-01-01.log.gz", 100);
        fs::create_dir(dir.path().join("bootlane.2023-01-01.log")).unwrap();
        let listed: Vec<String> = list(dir.path(), Some("bootlane.2024-01-01.log"))
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            listed,
            [
                "bootlane.2024-02-02.log",
                "bootlane.2024-02-01.log",
                "bootlane.2024-01-02.log",
                "bootlane.2024-01-01.log"
            ]
        );
        // 30 days' retention; the oldest file is "current" and so stays.
        let p = FilePolicy {
            rotation: Rotation::Daily,
            max_file_bytes: 1 << 20,
            keep_files: 100,
            retention_days: 30,
        };
        prune(dir.path(), Some("bootlane.2024-01-01.log"), &p, now);
        let left: Vec<String> = names(dir.path()).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            left,
            [
                "bootlane.2023-01-01.log",
                "bootlane.2024-01-01.log",
                "bootlane.2024-01-01.log.gz",
                "bootlane.2024-02-01.log",
                "bootlane.2024-02-02.log",
                "notes.txt"
            ]
        );
        // keep_files = 1: only the newest and the current file are left of ours.
        prune(
            dir.path(),
            Some("bootlane.2024-01-01.log"),
            &FilePolicy { keep_files: 1, ..p },
            now,
        );
        assert!(!dir.path().join("bootlane.2024-02-01.log").exists());
        assert!(dir.path().join("bootlane.2024-02-02.log").exists());
        assert!(dir.path().join("bootlane.2024-01-01.log").exists());
        assert!(list(&dir.path().join("missing"), None).unwrap().is_empty());
    }

    #[test]
    fn opening_a_file_prunes_beyond_keep_files() {
        let mut t = writer(policy(Rotation::Daily, 10, 2, 3650), datetime!(2024-05-01 12:00 UTC));
        for _ in 0..4 {
            t.w.write_all(b"0123456789\n").unwrap();
        }
        let left = names(t.dir.path());
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.iter().any(|(n, _)| n == "bootlane.2024-05-01.3.log"));
    }
}
