//! Append-only journals: the store's home for histories that only grow at one end and are
//! trimmed at the other (the event history and the audit log, spec "Events" and "Audit
//! log"). They live beside the database, not in it: a history of 100,000 events in sled
//! would keep its pages in memory and every retention pass would churn the tree, so the
//! server's RSS would grow with the history. A journal's memory is a few numbers per
//! segment, whatever the history's length.
//!
//! Layout: a directory of segment files `<first id, 20 digits>.jsonl`, each a run of
//! serde-JSON lines in ascending id order, closed at about [`SEGMENT_BYTES`]. An append
//! is written and `fdatasync`ed before it returns (so an acknowledged event survives
//! `kill -9`, as it did in sled). Retention hides values below a floor at once and
//! deletes a segment once all of it is below the floor. A line cut short by a crash is
//! cut off when the journal is opened; a line that does not decode is skipped on read.
//!
//! Readers take a copy of the segment list and read files without holding any lock, so a
//! slow listing never stalls the writer; a segment deleted under a reader counts as empty
//! (it was retired).

use std::{
    fs::{File, OpenOptions},
    io::{Read, Write},
    marker::PhantomData,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use time::OffsetDateTime;

use super::{Entity, Result, StoreError};

/// A segment is closed once it holds this many bytes (1 MiB); the next append starts a
/// new one. It bounds what one read decodes at a time.
pub const SEGMENT_BYTES: u64 = 1 << 20;

/// One segment file's summary (all a journal keeps in memory per segment).
#[derive(Debug, Clone)]
struct Segment {
    first_id: u64,
    last_id: u64,
    /// Lines in the file.
    count: usize,
    bytes: u64,
    /// The last value's time (retention by age deletes whole segments older than it).
    last_time: OffsetDateTime,
    path: PathBuf,
}

#[derive(Debug, Default)]
struct Index {
    segments: Vec<Segment>,
    /// Values with an id below this are retired (hidden from reads, deleted with their
    /// segment).
    floor: u64,
    /// Retired values still in the remaining segments' files.
    hidden: usize,
}

/// Lines encoded ahead of their append ([`Journal::append_batch`]), each with its id: for
/// a writer that encodes each value while it has it at hand (in the cache) and appends
/// them later in one write. [`Batch::clear`] keeps its buffers for the next batch.
#[derive(Debug, Default)]
pub struct Batch {
    buf: Vec<u8>,
    /// Each line's id and where it starts in `buf`, ids ascending.
    lines: Vec<(u64, usize)>,
    /// The last line's time.
    newest: Option<OffsetDateTime>,
}

impl Batch {
    /// Adds the line `encode` writes (a JSON object carrying `id` under `id`, without its
    /// newline) for the value `id` of time `time`.
    ///
    /// # Errors
    /// `encode`'s errors, and [`StoreError::Conflict`] when `id` is not above the last
    /// line's (a journal's ids ascend); the batch is then as it was.
    pub fn push(
        &mut self,
        id: u64,
        time: OffsetDateTime,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        if let Some(last) = self.last_id().filter(|l| id <= *l) {
            return Err(StoreError::Conflict(format!(
                "journal line {id} does not follow line {last}"
            )));
        }
        let start = self.buf.len();
        if let Err(e) = encode(&mut self.buf) {
            self.buf.truncate(start);
            return Err(e);
        }
        self.buf.push(b'\n');
        self.lines.push((id, start));
        self.newest = Some(time);
        Ok(())
    }

    /// The last line's id.
    pub fn last_id(&self) -> Option<u64> {
        self.lines.last().map(|(id, _)| *id)
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// The bytes its buffer holds room for.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// True when it holds no line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Each line's id and text (without its newline), in order.
    pub fn lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let ends = self.lines.iter().skip(1).map(|(_, s)| *s).chain([self.buf.len()]);
        self.lines
            .iter()
            .zip(ends)
            .map(|(&(id, s), e)| (id, &self.buf[s..e - 1]))
    }

    /// Empties it, keeping its buffers.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.lines.clear();
        self.newest = None;
    }
}

/// An append-only, id-ordered journal of `T` values. Cheap to clone.
pub struct Journal<T> {
    dir: PathBuf,
    index: Arc<RwLock<Index>>,
    /// The open last segment; taken by [`Journal::append`] only (one writer at a time).
    active: Arc<Mutex<Option<File>>>,
    time: fn(&T) -> OffsetDateTime,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Journal<T> {
    fn clone(&self) -> Self {
        Self {
            dir: self.dir.clone(),
            index: self.index.clone(),
            active: self.active.clone(),
            time: self.time,
            _t: PhantomData,
        }
    }
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> StoreError {
    move |source| StoreError::Io { what, source }
}

/// The complete lines of a segment file (a trailing line without `\n` is being written,
/// or was cut by a crash, and is left out). A file deleted meanwhile reads as empty.
fn read_lines(path: &Path) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut buf)
                .map_err(io_err(format!("reading {}", path.display())))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(buf),
        Err(source) => {
            return Err(StoreError::Io {
                what: format!("opening {}", path.display()),
                source,
            })
        }
    }
    let end = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    buf.truncate(end);
    Ok(buf)
}

/// The segment files in `dir` with their first ids, in id order.
fn segment_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut names: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map_err(io_err(format!("reading {}", dir.display())))?
        .filter_map(|e| {
            let p = e.ok()?.path();
            let id = p.file_name()?.to_str()?.strip_suffix(".jsonl")?.parse().ok()?;
            Some((id, p))
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The ids of a segment file's complete lines, in file order (a line without a readable
/// id is left out). Decodes nothing else.
fn ids(path: &Path) -> Result<Vec<u64>> {
    Ok(read_lines(path)?.split(|b| *b == b'\n').filter_map(line_id).collect())
}

/// A journal line's `id` field, decoding nothing else.
fn line_id(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Id {
        // Lines of the boot sessions' first layout name their order `seq`.
        #[serde(alias = "seq")]
        id: u64,
    }
    serde_json::from_slice::<Id>(line).ok().map(|i| i.id)
}

/// Every complete line of the journal in `dir` as a `(id in big-endian, JSON)` pair, in id
/// order: the journal in [`super::Snapshot`]'s shape, the same bytes a sled tree of the
/// values would hold. Retired values whose segment is not deleted yet are included
/// (retention applies again when the journal is next pruned).
///
/// # Errors
/// I/O errors reading the directory or a segment.
pub fn raw_pairs(dir: &Path) -> Result<super::Pairs> {
    let mut out = Vec::new();
    for (_, path) in segment_files(dir)? {
        for l in read_lines(&path)?.split(|b| *b == b'\n') {
            if let Some(id) = line_id(l) {
                out.push((id.to_be_bytes().to_vec(), l.to_vec()));
            }
        }
    }
    Ok(out)
}

impl<T: Entity> Journal<T> {
    /// Opens (or creates) the journal in `dir`. `time` gives a value's timestamp (for
    /// retention by age). Reads each segment once, counting its lines and decoding only
    /// its last one; cuts a torn last line off the newest segment.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the directory cannot be created or read.
    pub fn open(dir: &Path, time: fn(&T) -> OffsetDateTime) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        Self::open_inner(dir, time, true)
    }

    /// Opens the journal in `dir` for reading only, changing no file (a running server
    /// may be appending to it: a partial last line is left alone and skipped on read).
    /// For readers outside the server, such as `bootlane audit verify`.
    ///
    /// # Errors
    /// [`StoreError::Io`] when the directory cannot be read.
    pub fn open_read_only(dir: &Path, time: fn(&T) -> OffsetDateTime) -> Result<Self> {
        Self::open_inner(dir, time, false)
    }

    fn open_inner(dir: &Path, time: fn(&T) -> OffsetDateTime, repair: bool) -> Result<Self> {
        let names = segment_files(dir)?;
        let mut segments = Vec::with_capacity(names.len());
        let last = names.len().saturating_sub(1);
        for (i, (first_id, path)) in names.into_iter().enumerate() {
            let lines = read_lines(&path)?;
            if i == last && repair {
                // A crash mid-append leaves a partial line: cut it so the next append
                // starts on a line of its own.
                let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if len != lines.len() as u64 {
                    OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(lines.len() as u64))
                        .map_err(io_err(format!("repairing {}", path.display())))?;
                }
            }
            let count = lines.iter().filter(|b| **b == b'\n').count();
            let newest = lines
                .split(|b| *b == b'\n')
                .rev()
                .find_map(|l| serde_json::from_slice::<T>(l).ok());
            match newest {
                Some(v) => segments.push(Segment {
                    first_id,
                    last_id: v.id(),
                    count,
                    bytes: lines.len() as u64,
                    last_time: time(&v),
                    path,
                }),
                // Nothing readable: an empty file from a crash right after creating it.
                None if repair => {
                    let _ = std::fs::remove_file(&path);
                }
                None => {}
            }
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            index: Arc::new(RwLock::new(Index {
                segments,
                floor: 0,
                hidden: 0,
            })),
            active: Arc::new(Mutex::new(None)),
            time,
            _t: PhantomData,
        })
    }

    fn segments(&self) -> (Vec<Segment>, u64) {
        let ix = self.index.read().expect("journal index lock");
        (ix.segments.clone(), ix.floor)
    }

    /// Appends `values` (ids ascending and above every stored id; others are skipped) and
    /// syncs the file before returning. Blocking: call from a blocking context.
    ///
    /// # Errors
    /// Codec or I/O errors; on a failed write or sync the file is cut back to its length
    /// before the call, so a later append never lands behind half a line.
    pub fn append(&self, values: &[T]) -> Result<()> {
        let mut batch = Batch::default();
        let last_id = self.last_id();
        for v in values {
            if v.id() > last_id.max(batch.last_id().unwrap_or(0)) {
                batch.push(v.id(), (self.time)(v), |out| Ok(serde_json::to_writer(out, v)?))?;
            }
        }
        self.append_batch(&batch)
    }

    /// Appends the lines of `batch` whose ids are above every stored id (the others are
    /// skipped) in one write, and syncs the file before returning. Blocking: call from a
    /// blocking context. The lines must decode back as `T`.
    ///
    /// # Errors
    /// I/O errors as for [`Journal::append`].
    pub fn append_batch(&self, batch: &Batch) -> Result<()> {
        let mut active = self.active.lock().expect("journal writer lock");
        let stored = self.last_id();
        let keep = batch.lines.partition_point(|(id, _)| *id <= stored);
        let (Some(&(first, from)), Some(&(last_id, _)), Some(newest)) =
            (batch.lines.get(keep), batch.lines.last(), batch.newest)
        else {
            return Ok(());
        };
        let pending = &batch.buf[from..];
        let n = batch.lines.len() - keep;
        let current = self.index.read().expect("journal index lock").segments.last().cloned();
        let start_new = current.as_ref().is_none_or(|s| s.bytes >= SEGMENT_BYTES);
        let path = match (&current, start_new) {
            (Some(s), false) => s.path.clone(),
            _ => self.dir.join(format!("{first:020}.jsonl")),
        };
        if start_new || active.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io_err(format!("opening {}", path.display())))?;
            *active = Some(f);
        }
        let f = active.as_mut().expect("set above");
        let before = f
            .metadata()
            .map_err(io_err(format!("reading {}", path.display())))?
            .len();
        if let Err(e) = f.write_all(pending).and_then(|()| f.sync_data()) {
            let _ = f.set_len(before);
            return Err(StoreError::Io {
                what: format!("appending to {}", path.display()),
                source: e,
            });
        }
        if start_new {
            // Make the new file's name durable too.
            if let Ok(d) = File::open(&self.dir) {
                let _ = d.sync_all();
            }
        }
        let mut ix = self.index.write().expect("journal index lock");
        if start_new {
            ix.segments.push(Segment {
                first_id: first,
                last_id,
                count: n,
                bytes: pending.len() as u64,
                last_time: newest,
                path,
            });
        } else if let Some(s) = ix.segments.last_mut() {
            s.last_id = last_id;
            s.count += n;
            s.bytes += pending.len() as u64;
            s.last_time = newest;
        }
        Ok(())
    }

    /// The highest stored id (0 when empty).
    pub fn last_id(&self) -> u64 {
        self.index
            .read()
            .expect("journal index lock")
            .segments
            .last()
            .map_or(0, |s| s.last_id)
    }

    /// Values not retired.
    pub fn len(&self) -> usize {
        let ix = self.index.read().expect("journal index lock");
        ix.segments.iter().map(|s| s.count).sum::<usize>() - ix.hidden
    }

    /// True when no value is stored (or all are retired).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values of one segment with an id of at least `floor`, ascending.
    fn decode(&self, seg: &Segment, floor: u64) -> Result<Vec<T>> {
        let lines = read_lines(&seg.path)?;
        Ok(lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| match serde_json::from_slice::<T>(l) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!("skipping an undecodable line in {}: {e}", seg.path.display());
                    None
                }
            })
            .filter(|v| v.id() >= floor)
            .collect())
    }

    /// Up to `limit` values with an id above `after`, ascending. Blocking file reads
    /// (usually from the page cache).
    ///
    /// # Errors
    /// I/O errors reading a segment.
    pub fn after(&self, after: u64, limit: usize) -> Result<Vec<T>> {
        let (segments, floor) = self.segments();
        let from = after.saturating_add(1).max(floor);
        let mut out = Vec::new();
        for seg in segments.iter().filter(|s| s.last_id >= from) {
            for v in self.decode(seg, from)? {
                if out.len() == limit {
                    return Ok(out);
                }
                out.push(v);
            }
        }
        Ok(out)
    }

    /// Every value, newest first, decoded one segment at a time: a caller that stops
    /// early reads only the newest segments.
    pub fn newest_first(&self) -> NewestFirst<T> {
        let (segments, floor) = self.segments();
        NewestFirst {
            journal: self.clone(),
            segments,
            floor,
            current: Vec::new(),
        }
    }

    /// Retires the oldest values beyond `count` and those older than `max_age`, deleting
    /// every segment left wholly retired; returns how many values were retired. Blocking.
    ///
    /// # Errors
    /// I/O errors reading the boundary segment or deleting files.
    pub fn prune(&self, count: usize, max_age: time::Duration) -> Result<usize> {
        let floor = self.prune_floor(count, max_age)?;
        self.retire_below(floor)
    }

    /// The id below which values are retired now (0 before any prune).
    pub fn floor(&self) -> u64 {
        self.index.read().expect("journal index lock").floor
    }

    /// The stored value with the greatest id below `floor` that is not retired yet (the
    /// last one [`Journal::retire_below`]`(floor)` would retire), if any. Blocking.
    ///
    /// # Errors
    /// I/O errors reading its segment.
    pub fn value_before(&self, floor: u64) -> Result<Option<T>> {
        let (segments, current) = self.segments();
        let Some(seg) = segments.iter().rev().find(|s| s.first_id < floor) else {
            return Ok(None);
        };
        Ok(self.decode(seg, current)?.into_iter().rev().find(|v| v.id() < floor))
    }

    /// Every value with an id of at least `from`, ascending, decoded one segment at a
    /// time (retired values excluded).
    pub fn ascending(&self, from: u64) -> impl Iterator<Item = Result<T>> + use<T> {
        let (segments, floor) = self.segments();
        let from = from.max(floor);
        let journal = self.clone();
        segments
            .into_iter()
            .filter(move |s| s.last_id >= from)
            .flat_map(move |seg| match journal.decode(&seg, from) {
                Ok(v) => v.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            })
    }

    /// The floor [`Journal::prune`] would set for `count` and `max_age` (never below the
    /// current one); retires nothing. Blocking.
    ///
    /// # Errors
    /// I/O errors reading the boundary segment.
    pub fn prune_floor(&self, count: usize, max_age: time::Duration) -> Result<u64> {
        let before = self.len();
        let (segments, mut floor) = self.segments();
        // A pass that retires nothing decodes one line: this runs every minute, and
        // decoding whole segments each time would leave the allocator's arenas fragmented
        // (RSS creeping up in steps). Ids alone are read where counting is needed.
        // By count: the (len - count)-th visible value from the oldest becomes the floor.
        if before > count {
            let mut skip = before - count;
            for seg in &segments {
                let visible: Vec<u64> = ids(&seg.path)?.into_iter().filter(|i| *i >= floor).collect();
                if skip < visible.len() {
                    floor = floor.max(visible[skip]);
                    break;
                }
                skip -= visible.len();
                floor = floor.max(seg.last_id + 1);
            }
        }
        // By age: whole segments whose newest value is too old, then the first young
        // value of the first segment that has one, decoded line by line up to it.
        let cutoff = OffsetDateTime::now_utc() - max_age;
        for seg in &segments {
            if seg.last_id < floor {
                continue;
            }
            if seg.last_time < cutoff {
                floor = floor.max(seg.last_id + 1);
                continue;
            }
            let lines = read_lines(&seg.path)?;
            let first_young = lines
                .split(|b| *b == b'\n')
                .filter_map(|l| serde_json::from_slice::<T>(l).ok())
                .find(|v| v.id() >= floor && (self.time)(v) >= cutoff);
            if let Some(v) = first_young {
                floor = floor.max(v.id());
            }
            break;
        }
        Ok(floor)
    }

    /// Retires every value with an id below `floor` (hidden from reads at once), deleting
    /// every segment left wholly retired; returns how many values were retired. Blocking.
    ///
    /// # Errors
    /// I/O errors deleting files or counting the remaining retired values.
    pub fn retire_below(&self, floor: u64) -> Result<usize> {
        let before = self.len();
        let (segments, current) = self.segments();
        let floor = floor.max(current);
        // Delete wholly retired segments (keep the newest file: the writer appends to it).
        let keep_from = segments.len().saturating_sub(1);
        let retired: Vec<&Segment> = segments[..keep_from].iter().filter(|s| s.last_id < floor).collect();
        for s in &retired {
            match std::fs::remove_file(&s.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(StoreError::Io {
                        what: format!("deleting {}", s.path.display()),
                        source,
                    })
                }
            }
        }
        // Retired values left in the remaining files (the oldest remaining segment, or the
        // newest when everything is retired). Counted from the files, which may have grown
        // since the list was taken (only by values above the floor).
        let mut hidden = 0;
        for s in segments
            .iter()
            .filter(|s| s.first_id < floor && !retired.iter().any(|r| r.path == s.path))
        {
            hidden += ids(&s.path)?.into_iter().filter(|i| *i < floor).count();
        }
        let mut ix = self.index.write().expect("journal index lock");
        // Appends made meanwhile only added segments or lines at the end: keep them.
        ix.segments.retain(|s| !retired.iter().any(|r| r.path == s.path));
        ix.floor = floor;
        ix.hidden = hidden;
        drop(ix);
        Ok(before.saturating_sub(self.len()))
    }
}

/// The iterator of [`Journal::newest_first`].
pub struct NewestFirst<T> {
    journal: Journal<T>,
    /// Segments still to read, oldest first (popped from the end).
    segments: Vec<Segment>,
    floor: u64,
    /// The segment being returned, oldest first (popped from the end).
    current: Vec<T>,
}

impl<T: Entity> Iterator for NewestFirst<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(v) = self.current.pop() {
                return Some(Ok(v));
            }
            let seg = self.segments.pop()?;
            if seg.last_id < self.floor {
                return None;
            }
            match self.journal.decode(&seg, self.floor) {
                Ok(v) => self.current = v,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
    struct Line {
        id: u64,
        #[serde(with = "time::serde::rfc3339")]
        at: OffsetDateTime,
        pad: String,
    }
    crate::store::entity!(Line, "lines");

    fn line(id: u64, age_days: i64, pad: usize) -> Line {
        Line {
            id,
            at: OffsetDateTime::now_utc() - time::Duration::days(age_days),
            pad: "x".repeat(pad),
        }
    }

    fn open(dir: &Path) -> Journal<Line> {
        Journal::open(dir, |l: &Line| l.at).unwrap()
    }

    fn ids(j: &Journal<Line>) -> Vec<u64> {
        j.newest_first().map(|v| v.unwrap().id).collect()
    }

    #[test]
    fn lines_that_name_their_order_seq_are_counted_and_backed_up() {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (1..=3)
            .map(|i| format!("{{\"seq\":{i},\"session\":{{\"id\":9}}}}\n"))
            .collect();
        std::fs::write(dir.path().join(format!("{:020}.jsonl", 1)), lines).unwrap();
        let pairs = raw_pairs(dir.path()).unwrap();
        assert_eq!(
            pairs.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            (1u64..=3).map(|i| i.to_be_bytes().to_vec()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_batch_encoded_ahead_appends_its_new_lines_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let j = open(dir.path());
        j.append(&[line(1, 0, 1), line(2, 0, 1)]).unwrap();
        let mut b = Batch::default();
        for i in 2..=5 {
            let v = line(i, 0, 1);
            b.push(i, v.at, |out| Ok(serde_json::to_writer(out, &v)?)).unwrap();
        }
        // Ids ascend: a line that does not follow the last is refused and leaves the batch
        // as it was; so is a line whose encoding fails.
        assert!(matches!(
            b.push(5, OffsetDateTime::now_utc(), |out| {
                out.extend_from_slice(b"{}");
                Ok(())
            }),
            Err(StoreError::Conflict(_))
        ));
        let failed = b.push(6, OffsetDateTime::now_utc(), |out| {
            out.extend_from_slice(b"{\"half");
            Err(StoreError::Format("no".into()))
        });
        assert!(failed.is_err());
        assert_eq!(b.len(), 4);
        let read: Vec<(u64, Line)> = b
            .lines()
            .map(|(id, l)| (id, serde_json::from_slice(l).unwrap()))
            .collect();
        assert_eq!(
            read.iter().map(|(id, l)| (*id, l.id)).collect::<Vec<_>>(),
            [(2, 2), (3, 3), (4, 4), (5, 5)]
        );
        // Line 2 is stored already and is skipped.
        j.append_batch(&b).unwrap();
        assert_eq!(ids(&j), [5, 4, 3, 2, 1]);
        b.clear();
        assert!(b.is_empty() && b.lines().next().is_none());
        j.append_batch(&b).unwrap();
        drop(j);
        let j = open(dir.path());
        assert_eq!((j.len(), j.last_id()), (5, 5));
    }

    #[test]
    fn appends_read_back_in_both_orders_across_segments_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let j = open(dir.path());
        // 40 KiB lines: a segment closes after 26 of them.
        for chunk in (1..=100).collect::<Vec<u64>>().chunks(7) {
            let v: Vec<Line> = chunk.iter().map(|i| line(*i, 0, 40 << 10)).collect();
            j.append(&v).unwrap();
        }
        assert!(j.segments().0.len() >= 3, "several segments");
        assert_eq!(j.len(), 100);
        assert_eq!(ids(&j), (1..=100).rev().collect::<Vec<_>>());
        let after: Vec<u64> = j.after(24, 5).unwrap().iter().map(|l| l.id).collect();
        assert_eq!(after, vec![25, 26, 27, 28, 29]);
        // Stale or repeated ids are skipped, never stored twice.
        j.append(&[line(50, 0, 1), line(101, 0, 1)]).unwrap();
        assert_eq!(j.last_id(), 101);
        drop(j);
        let j = open(dir.path());
        assert_eq!((j.len(), j.last_id()), (101, 101));
        assert_eq!(j.after(99, 10).unwrap().len(), 2);
    }

    #[test]
    fn a_torn_last_line_is_cut_and_the_next_append_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let j = open(dir.path());
        j.append(&[line(1, 0, 10), line(2, 0, 10)]).unwrap();
        let path = j.segments().0[0].path.clone();
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"id\":3,\"at\":\"20").unwrap();
        drop(f);
        let j = open(dir.path());
        assert_eq!(ids(&j), vec![2, 1]);
        j.append(&[line(3, 0, 10)]).unwrap();
        assert_eq!(ids(&open(dir.path())), vec![3, 2, 1]);
    }

    #[test]
    fn prune_by_count_and_age_hides_at_once_and_deletes_whole_segments() {
        let dir = tempfile::tempdir().unwrap();
        let j = open(dir.path());
        // Ids 1-60 are 40 days old, 61-120 are new; 40 KiB each.
        for i in 1..=120 {
            j.append(&[line(i, if i <= 60 { 40 } else { 0 }, 40 << 10)]).unwrap();
        }
        let files = || std::fs::read_dir(dir.path()).unwrap().count();
        let before = files();
        assert_eq!(j.prune(1000, time::Duration::days(30)).unwrap(), 60);
        assert_eq!(j.len(), 60);
        assert_eq!(*ids(&j).last().unwrap(), 61);
        assert!(files() < before, "old segments deleted");
        assert_eq!(j.prune(25, time::Duration::days(30)).unwrap(), 35);
        assert_eq!(ids(&j), (96..=120).rev().collect::<Vec<_>>());
        assert_eq!(j.after(0, 1).unwrap()[0].id, 96);
        // Appends go on after a prune.
        j.append(&[line(121, 0, 1)]).unwrap();
        assert_eq!((j.len(), ids(&j)[0]), (26, 121));
        // Everything retired: reads are empty, the newest file stays for the writer.
        assert_eq!(j.prune(1000, time::Duration::seconds(-60)).unwrap(), 26);
        assert!(j.is_empty() && ids(&j).is_empty());
        j.append(&[line(122, 0, 1)]).unwrap();
        assert_eq!(ids(&j), vec![122]);
    }
}
