//! The files of the boot root: listing a directory, the root's space, streamed uploads and
//! deletes. [`FileService`] is the single write path: every path goes through [`resolve`],
//! every upload is written to a temporary file in the target directory and renamed into
//! place only when complete (a cut-off upload, an error or a dropped request leaves
//! nothing: [`Upload`] removes its temporary file when dropped unfinished), and every
//! write publishes an event (`file.uploaded`, `file.deleted`).
//!
//! Limits: `[files] max_upload_bytes` (413) and the free space of the root's volume,
//! checked before writing (against the announced length) and every
//! [`SPACE_CHECK_EVERY`] bytes while writing (507; ENOSPC from a write is a 507 too).

use std::{
    io::{self, Write as _},
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use utoipa::ToSchema;

use super::{
    paths::{resolve, Follow, PathError},
    FilesConfig,
};
use bootlane_core::events::{EventBus, EventKind, NewEvent};
use bootlane_core::service_error::ServiceError;

/// While uploading, the free space is checked again after this many bytes.
pub const SPACE_CHECK_EVERY: u64 = 8 << 20;

/// Reads the free bytes of the volume holding a path (statvfs; replaceable in tests).
pub type FreeSpaceProbe = Arc<dyn Fn(&Path) -> io::Result<u64> + Send + Sync>;

/// Type of a directory entry.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (socket, FIFO, device).
    Other,
}

/// One entry of `GET /files`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileEntry {
    /// Name inside its directory.
    pub name: String,
    /// Path relative to the boot root (what the other endpoints take).
    pub path: String,
    /// `file`, `dir`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: FileType,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Last modification, RFC 3339 UTC.
    pub modified: Option<String>,
    /// Lower-case hex SHA-256 of a regular file's content; only with `sha256=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A symlink's target as stored in the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_target: Option<String>,
}

/// `GET /files` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileListing {
    /// The directory listed, relative to the boot root (`""` is the root).
    pub path: String,
    /// Its entries, sorted by name.
    pub entries: Vec<FileEntry>,
    /// Names that are not valid UTF-8, shown lossily (U+FFFD): they are not listed as
    /// entries, since no endpoint accepts them; rename them on the server.
    pub skipped_non_utf8: Vec<String>,
}

/// `GET /files/root` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BootRootInfo {
    /// The boot root's path on the server.
    pub path: String,
    /// Size of its volume in bytes.
    pub total_bytes: u64,
    /// Bytes free for unprivileged use on its volume.
    pub free_bytes: u64,
}

/// `DELETE /files` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedFile {
    /// The path removed, relative to the boot root.
    pub path: String,
    /// What it was.
    #[serde(rename = "type")]
    pub kind: FileType,
    /// Whether a non-empty directory was removed with its content.
    pub recursive: bool,
}

/// The file API's service: reads the live boot root, owns uploads and deletes.
pub struct FileService {
    root: bootlane_boot::boot::netboot::Netboot,
    events: Arc<EventBus>,
    config: FilesConfig,
    free_space: FreeSpaceProbe,
}

impl From<PathError> for ServiceError {
    fn from(e: PathError) -> Self {
        match e {
            PathError::NotFound(_) => Self::NotFound(e.to_string()),
            _ => Self::Invalid(e.to_string()),
        }
    }
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned()
}

fn rfc3339(t: io::Result<std::time::SystemTime>) -> Option<String> {
    t.ok().and_then(|t| OffsetDateTime::from(t).format(&Rfc3339).ok())
}

fn kind_of(ft: std::fs::FileType) -> FileType {
    if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_dir() {
        FileType::Dir
    } else if ft.is_file() {
        FileType::File
    } else {
        FileType::Other
    }
}

/// Lower-case hex SHA-256 of a file's content, read in 1 MiB blocks.
///
/// # Errors
/// Opening or reading the file.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(hex::encode(h.finalize()));
        }
        h.update(&buf[..n]);
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ServiceError::Io {
            what: "a file-system task failed".into(),
            source: io::Error::other(e),
        })
    })
}

impl FileService {
    /// A service over the live boot root: `root`, the netboot settings' receiver.
    pub fn new(root: bootlane_boot::boot::netboot::Netboot, config: FilesConfig, events: Arc<EventBus>) -> Arc<Self> {
        Self::with_free_space(root, config, events, Arc::new(|p: &Path| fs2::available_space(p)))
    }

    /// [`FileService::new`] with another free-space probe (tests simulate a full disk).
    pub fn with_free_space(
        root: bootlane_boot::boot::netboot::Netboot,
        config: FilesConfig,
        events: Arc<EventBus>,
        free_space: FreeSpaceProbe,
    ) -> Arc<Self> {
        Arc::new(Self {
            root,
            events,
            config,
            free_space,
        })
    }

    /// Free bytes on the volume holding `path` (the service's probe), `None` when it
    /// cannot be read.
    pub fn free_bytes(&self, path: &Path) -> Option<u64> {
        (self.free_space)(path).ok()
    }

    /// The `[files]` limits in force.
    pub fn config(&self) -> &FilesConfig {
        &self.config
    }

    /// The canonical boot root now (created when missing).
    ///
    /// # Errors
    /// Creating or canonicalising it failed.
    pub fn root(&self) -> Result<PathBuf, ServiceError> {
        let root = self.root.borrow().root();
        std::fs::create_dir_all(&root)
            .map_err(|e| ServiceError::io(format!("creating the boot root {}", root.display()), e))?;
        root.canonicalize()
            .map_err(|e| ServiceError::io(format!("reading the boot root {}", root.display()), e))
    }

    /// The boot root's path and the space of its volume.
    ///
    /// # Errors
    /// Reading the root or its volume failed.
    pub fn root_info(&self) -> Result<BootRootInfo, ServiceError> {
        let root = self.root()?;
        let total = fs2::total_space(&root).map_err(|e| ServiceError::io("reading the volume's size", e))?;
        let free = fs2::available_space(&root).map_err(|e| ServiceError::io("reading the volume's free space", e))?;
        Ok(BootRootInfo {
            path: root.display().to_string(),
            total_bytes: total,
            free_bytes: free,
        })
    }

    /// Lists directory `path` (relative to the root; `""` is the root), sorted by name,
    /// with each regular file's SHA-256 when `sha256` is set.
    ///
    /// # Errors
    /// A refused path (400), missing (404), not a directory (400), I/O.
    pub async fn list(&self, path: &str, sha256: bool) -> Result<FileListing, ServiceError> {
        let root = self.root()?;
        let dir = resolve(&root, path, Follow::All)?;
        blocking(move || {
            if !dir.is_dir() {
                return Err(ServiceError::Invalid(format!(
                    "{:?} is a file, not a directory; list its directory instead",
                    rel(&root, &dir)
                )));
            }
            let rd = std::fs::read_dir(&dir).map_err(|e| ServiceError::io("reading the directory", e))?;
            let mut entries = Vec::new();
            let mut skipped = Vec::new();
            for ent in rd {
                let ent = ent.map_err(|e| ServiceError::io("reading the directory", e))?;
                let Ok(name) = ent.file_name().into_string() else {
                    skipped.push(ent.file_name().to_string_lossy().into_owned());
                    continue;
                };
                let Ok(meta) = ent.path().symlink_metadata() else {
                    continue;
                };
                let kind = kind_of(meta.file_type());
                let digest = if sha256 && kind == FileType::File {
                    Some(sha256_file(&ent.path()).map_err(|e| ServiceError::io(format!("hashing {name}"), e))?)
                } else {
                    None
                };
                entries.push(FileEntry {
                    path: rel(&root, &ent.path()),
                    link_target: (kind == FileType::Symlink)
                        .then(|| std::fs::read_link(ent.path()).ok())
                        .flatten()
                        .map(|t| t.to_string_lossy().into_owned()),
                    name,
                    kind,
                    size: meta.len(),
                    modified: rfc3339(meta.modified()),
                    sha256: digest,
                });
            }
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            skipped.sort();
            Ok(FileListing {
                path: rel(&root, &dir),
                entries,
                skipped_non_utf8: skipped,
            })
        })
        .await
    }

    /// Deletes `path`: a file or symlink (the link, never its target), an empty
    /// directory, or a non-empty one when `recursive`. Never the root. Publishes
    /// `file.deleted`.
    ///
    /// # Errors
    /// A refused path or the root (400), missing (404), a non-empty directory without
    /// `recursive` (409), I/O.
    pub async fn delete(&self, path: &str, recursive: bool) -> Result<DeletedFile, ServiceError> {
        let root = self.root()?;
        let target = resolve(&root, path, Follow::Parent)?;
        if target == root {
            return Err(ServiceError::Invalid(
                "'path' names the boot root itself, which cannot be deleted; name a file or directory in it".into(),
            ));
        }
        let shown = rel(&root, &target);
        let (kind, removed_recursively) = blocking({
            let shown = shown.clone();
            move || {
                let meta = target.symlink_metadata().map_err(|_| {
                    ServiceError::NotFound(format!("no such file or directory {shown:?} under the boot root"))
                })?;
                let kind = kind_of(meta.file_type());
                if kind != FileType::Dir {
                    std::fs::remove_file(&target).map_err(|e| ServiceError::io(format!("deleting {shown}"), e))?;
                    return Ok((kind, false));
                }
                let empty = std::fs::read_dir(&target)
                    .map_err(|e| ServiceError::io(format!("reading {shown}"), e))?
                    .next()
                    .is_none();
                if empty {
                    std::fs::remove_dir(&target).map_err(|e| ServiceError::io(format!("deleting {shown}"), e))?;
                    return Ok((kind, false));
                }
                if !recursive {
                    return Err(ServiceError::Conflict(format!(
                        "directory {shown:?} is not empty; pass recursive=true to delete it with its content"
                    )));
                }
                // remove_dir_all does not follow symlinks inside the tree.
                std::fs::remove_dir_all(&target).map_err(|e| ServiceError::io(format!("deleting {shown}"), e))?;
                Ok((kind, true))
            }
        })
        .await?;
        let out = DeletedFile {
            path: shown.clone(),
            kind,
            recursive: removed_recursively,
        };
        self.events.publish(NewEvent::write(
            EventKind::FileDeleted,
            "file",
            &shown,
            "delete",
            format!("deleted {shown}"),
            Some(&out),
            None::<&()>,
        ));
        Ok(out)
    }

    /// Starts an upload of `name` into directory `dir` (both relative to the root):
    /// checks the paths, the overwrite rule, the announced `length` (when known) against
    /// `[files] max_upload_bytes` and the free space, and opens a temporary file in `dir`.
    ///
    /// # Errors
    /// Refused paths (400), a missing directory (404), an existing target without
    /// `overwrite` or a directory in the way (409), too large (413), no space (507), I/O.
    pub async fn begin_upload(
        self: &Arc<Self>,
        dir: &str,
        name: &str,
        overwrite: bool,
        length: Option<u64>,
    ) -> Result<Upload, ServiceError> {
        if name.is_empty() || name.contains('/') {
            return Err(ServiceError::Invalid(format!(
                "the file part's file name {name:?} must be a plain name without '/'; put the directory in 'dir'"
            )));
        }
        let root = self.root()?;
        let dir_path = resolve(&root, dir, Follow::All)?;
        if !dir_path.is_dir() {
            return Err(ServiceError::Invalid(format!("'dir' {dir:?} is not a directory")));
        }
        let rel_dir = rel(&root, &dir_path);
        let joined = if rel_dir.is_empty() {
            name.to_string()
        } else {
            format!("{rel_dir}/{name}")
        };
        let target = resolve(&root, &joined, Follow::Parent)?;
        let shown = rel(&root, &target);
        if let Ok(meta) = target.symlink_metadata() {
            if meta.is_dir() {
                return Err(ServiceError::Conflict(format!(
                    "{shown:?} is a directory; delete it first"
                )));
            }
            if !overwrite {
                return Err(ServiceError::Conflict(format!(
                    "{shown:?} exists; pass overwrite=true to replace it"
                )));
            }
        }
        let max = self.config.max_upload_bytes;
        if let Some(len) = length {
            if len > max {
                return Err(too_large(max));
            }
        }
        let free = (self.free_space)(&dir_path).map_err(|e| ServiceError::io("reading the free space", e))?;
        if length.is_some_and(|len| len > free) || free == 0 {
            return Err(no_space(free));
        }
        // Not derived from the name: a 255-byte name plus a suffix would exceed NAME_MAX.
        let tmp = dir_path.join(format!(".upload-{:016x}.part", rand::random::<u64>()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| ServiceError::io(format!("creating a temporary file in {rel_dir:?}"), e))?;
        Ok(Upload {
            service: self.clone(),
            tmp: Some(tmp),
            target,
            shown,
            writer: Some(Writer::start(file)),
            written: 0,
            next_check: SPACE_CHECK_EVERY,
            overwrite,
        })
    }
}

fn too_large(max: u64) -> ServiceError {
    ServiceError::TooLarge(format!(
        "the file is larger than [files] max_upload_bytes ({max} bytes)"
    ))
}

fn no_space(free: u64) -> ServiceError {
    ServiceError::NoSpace(format!(
        "not enough free space on the boot root's volume ({free} bytes free); free some space and retry"
    ))
}

/// `POST /files/upload` answer: the file written.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UploadedFile {
    /// Path relative to the boot root.
    pub path: String,
    /// Bytes written.
    pub size: u64,
    /// Lower-case hex SHA-256 of the content (computed while writing).
    pub sha256: String,
    /// Whether an existing file was replaced.
    pub replaced: bool,
}

/// Chunks queued between the request and the writer thread (at most this many in flight).
const WRITER_QUEUE: usize = 16;
/// The writer thread's buffer: chunks are hashed, then written in writes of this size.
const WRITER_BUFFER: usize = 1 << 20;
/// Writeback window (32 MiB): each full window written is handed to the disk at once
/// (`sync_file_range`), and the one before it waited for, so the disk writes while the
/// upload is still arriving and the final fsync has at most two windows left to write.
const WRITEBACK_WINDOW: u64 = 32 << 20;

/// Starts writeback of the window `[off, off + WRITEBACK_WINDOW)` of `fd` and waits for
/// the window before it (Linux `sync_file_range(2)`): the dirty pages of an upload stay
/// bounded and the closing `fsync` is short. Advisory: failures are ignored here, as the
/// closing `fsync` reports any write error.
fn start_writeback(fd: std::os::fd::RawFd, off: u64) {
    let (Ok(o), Ok(w)) = (i64::try_from(off), i64::try_from(WRITEBACK_WINDOW)) else {
        return;
    };
    // SAFETY: plain system calls on a descriptor the caller keeps open; no memory passed.
    unsafe {
        libc::sync_file_range(fd, o, w, libc::SYNC_FILE_RANGE_WRITE);
        if o >= w {
            libc::sync_file_range(
                fd,
                o - w,
                w,
                libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE | libc::SYNC_FILE_RANGE_WAIT_AFTER,
            );
        }
    }
}

/// The writing half of an upload: one blocking thread that hashes each chunk and writes
/// it through a 1 MiB buffer, starting writeback every [`WRITEBACK_WINDOW`], then flushes
/// and syncs the file, so receiving from the
/// socket, hashing and writing overlap instead of taking turns on the request's task.
struct Writer {
    tx: Option<tokio::sync::mpsc::Sender<bytes::Bytes>>,
    done: Option<tokio::sync::oneshot::Receiver<io::Result<[u8; 32]>>>,
}

impl Writer {
    /// Starts the thread: a plain OS thread, not the runtime's blocking pool, so a runtime
    /// shutting down never waits on an upload whose sender was leaked; it ends when the
    /// sender is dropped (upload finished, failed or abandoned).
    fn start(file: std::fs::File) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(WRITER_QUEUE);
        let (done_tx, done) = tokio::sync::oneshot::channel();
        let run = move || -> io::Result<[u8; 32]> {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            let mut out = io::BufWriter::with_capacity(WRITER_BUFFER, file);
            let mut hasher = Sha256::new();
            let (mut written, mut window) = (0u64, 0u64);
            while let Some(chunk) = rx.blocking_recv() {
                hasher.update(&chunk);
                out.write_all(&chunk)?;
                written += chunk.len() as u64;
                if written - window >= WRITEBACK_WINDOW {
                    out.flush()?;
                    start_writeback(fd, window);
                    window += WRITEBACK_WINDOW;
                }
            }
            let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
            file.sync_all()?;
            Ok(hasher.finalize().into())
        };
        let spawned = std::thread::Builder::new()
            .name("bootlane-upload".into())
            .spawn(move || {
                let _ = done_tx.send(run());
            });
        match spawned {
            Ok(_) => Self {
                tx: Some(tx),
                done: Some(done),
            },
            // No thread: every send fails and says why.
            Err(e) => {
                let (err_tx, err_rx) = tokio::sync::oneshot::channel();
                let _ = err_tx.send(Err(e));
                Self {
                    tx: None,
                    done: Some(err_rx),
                }
            }
        }
    }

    /// Queues a chunk; the writer's own error when it has stopped.
    async fn send(&mut self, chunk: bytes::Bytes) -> io::Result<()> {
        if let Some(tx) = &self.tx {
            if tx.send(chunk).await.is_ok() {
                return Ok(());
            }
        }
        // The thread stopped early (or never started): its error says why.
        Err(self
            .join()
            .await
            .err()
            .unwrap_or_else(|| io::Error::other("the writer stopped")))
    }

    /// Ends the stream and waits for the flush and fsync: the content's SHA-256.
    async fn join(&mut self) -> io::Result<[u8; 32]> {
        self.tx = None;
        match self.done.take() {
            Some(rx) => rx
                .await
                .unwrap_or_else(|_| Err(io::Error::other("the writer thread ended"))),
            None => Err(io::Error::other("the upload is already finished")),
        }
    }
}

/// An upload in progress: chunks go to a temporary file next to the target. Dropped
/// before [`Upload::finish`] (error, client gone), it removes the temporary file.
pub struct Upload {
    service: Arc<FileService>,
    tmp: Option<PathBuf>,
    target: PathBuf,
    shown: String,
    writer: Option<Writer>,
    written: u64,
    next_check: u64,
    overwrite: bool,
}

impl Upload {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends one chunk (handed to the writer thread without a copy), enforcing the size
    /// limit and the free space.
    ///
    /// # Errors
    /// Too large (413), no space (507), I/O. The caller drops the upload on error, which
    /// removes the partial file.
    pub async fn write(&mut self, chunk: bytes::Bytes) -> Result<(), ServiceError> {
        let max = self.service.config.max_upload_bytes;
        let total = self.written + chunk.len() as u64;
        if total > max {
            return Err(too_large(max));
        }
        if total >= self.next_check {
            let dir = self.target.parent().unwrap_or(&self.target);
            let free = (self.service.free_space)(dir).map_err(|e| ServiceError::io("reading the free space", e))?;
            if free < chunk.len() as u64 {
                return Err(no_space(free));
            }
            self.next_check = total + SPACE_CHECK_EVERY;
        }
        let Some(writer) = self.writer.as_mut() else {
            return Err(ServiceError::Invalid("the upload is already finished".into()));
        };
        writer
            .send(chunk)
            .await
            .map_err(|e| ServiceError::io(format!("writing {}", self.shown), e))?;
        self.written = total;
        Ok(())
    }

    /// Flushes the temporary file to disk and moves it into place (without `overwrite`,
    /// atomically refusing a file that appeared meanwhile), then publishes
    /// `file.uploaded`.
    ///
    /// # Errors
    /// The target appeared meanwhile (409), I/O.
    pub async fn finish(mut self) -> Result<UploadedFile, ServiceError> {
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| ServiceError::Invalid("the upload is already finished".into()))?;
        let sha256 = writer
            .join()
            .await
            .map_err(|e| ServiceError::io(format!("writing and syncing {}", self.shown), e))?;
        let tmp = self.tmp.clone().unwrap_or_default();
        let replaced = self.target.symlink_metadata().is_ok();
        if self.overwrite {
            tokio::fs::rename(&tmp, &self.target)
                .await
                .map_err(|e| ServiceError::io(format!("moving the upload to {}", self.shown), e))?;
        } else {
            // A hard link fails when the name exists: no window in which a file that
            // appeared since the check would be replaced.
            tokio::fs::hard_link(&tmp, &self.target).await.map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    ServiceError::Conflict(format!("{:?} exists; pass overwrite=true to replace it", self.shown))
                } else {
                    ServiceError::io(format!("moving the upload to {}", self.shown), e)
                }
            })?;
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        self.tmp = None;
        let out = UploadedFile {
            path: self.shown.clone(),
            size: self.written,
            sha256: hex::encode(sha256),
            replaced,
        };
        self.service.events.publish(NewEvent::write(
            EventKind::FileUploaded,
            "file",
            &out.path,
            if replaced { "update" } else { "create" },
            format!("uploaded {} ({} bytes)", out.path, out.size),
            None::<&()>,
            Some(&out),
        ));
        Ok(out)
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(free: u64, max: u64) -> (tempfile::TempDir, Arc<FileService>) {
        let tmp = tempfile::tempdir().unwrap();
        let cell = bootlane_boot::boot::netboot::NetbootSettings::with_root(&tmp.path().join("boot")).fixed();
        let s = FileService::with_free_space(
            cell,
            FilesConfig {
                max_upload_bytes: max,
                import_dir: None,
            },
            EventBus::in_memory(),
            Arc::new(move |_: &Path| Ok(free)),
        );
        (tmp, s)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn an_upload_appears_only_when_finished() {
        let (_t, s) = service(u64::MAX, 1 << 30);
        let root = s.root().unwrap();
        let mut up = s.begin_upload("", "a.bin", false, None).await.unwrap();
        up.write(bytes::Bytes::from_static(b"hello ")).await.unwrap();
        assert!(!root.join("a.bin").exists());
        up.write(bytes::Bytes::from_static(b"world")).await.unwrap();
        let done = up.finish().await.unwrap();
        assert_eq!(std::fs::read(root.join("a.bin")).unwrap(), b"hello world");
        assert_eq!(done.sha256, hex::encode(Sha256::digest(b"hello world")));
        assert_eq!(names(&root), ["a.bin"]);
        // Cut off: dropped before finish leaves nothing.
        let mut up = s.begin_upload("", "b.bin", false, None).await.unwrap();
        up.write(bytes::Bytes::from_static(b"partial")).await.unwrap();
        drop(up);
        assert_eq!(names(&root), ["a.bin"]);
        // Exists: 409 unless overwrite.
        assert!(matches!(
            s.begin_upload("", "a.bin", false, None).await,
            Err(ServiceError::Conflict(_))
        ));
        let mut up = s.begin_upload("", "a.bin", true, None).await.unwrap();
        up.write(bytes::Bytes::from_static(b"new")).await.unwrap();
        assert!(up.finish().await.unwrap().replaced);
        assert_eq!(std::fs::read(root.join("a.bin")).unwrap(), b"new");
    }

    #[tokio::test]
    async fn size_and_space_limits_remove_the_partial_file() {
        let (_t, s) = service(u64::MAX, 10);
        let root = s.root().unwrap();
        assert!(matches!(
            s.begin_upload("", "x", false, Some(11)).await,
            Err(ServiceError::TooLarge(_))
        ));
        let mut up = s.begin_upload("", "x", false, None).await.unwrap();
        up.write(bytes::Bytes::from_static(&[0; 8])).await.unwrap();
        assert!(matches!(
            up.write(bytes::Bytes::from_static(&[0; 8])).await,
            Err(ServiceError::TooLarge(_))
        ));
        drop(up);
        assert!(names(&root).is_empty());

        let (_t, s) = service(100, 1 << 40);
        let root = s.root().unwrap();
        assert!(matches!(
            s.begin_upload("", "x", false, Some(101)).await,
            Err(ServiceError::NoSpace(_))
        ));
        // Length unknown: the check while writing catches it.
        let mut up = s.begin_upload("", "x", false, None).await.unwrap();
        let chunk = vec![0u8; SPACE_CHECK_EVERY as usize];
        assert!(matches!(up.write(chunk.into()).await, Err(ServiceError::NoSpace(_))));
        drop(up);
        assert!(names(&root).is_empty());
    }

    #[tokio::test]
    async fn delete_rules() {
        let (_t, s) = service(u64::MAX, 1 << 30);
        let root = s.root().unwrap();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/e/f"), b"x").unwrap();
        std::fs::create_dir(root.join("empty")).unwrap();
        assert!(matches!(s.delete("", true).await, Err(ServiceError::Invalid(_))));
        assert!(matches!(s.delete("d", false).await, Err(ServiceError::Conflict(_))));
        assert!(matches!(s.delete("nope", false).await, Err(ServiceError::NotFound(_))));
        assert_eq!(s.delete("empty", false).await.unwrap().kind, FileType::Dir);
        assert!(s.delete("d", true).await.unwrap().recursive);
        assert!(names(&root).is_empty());
    }
}
