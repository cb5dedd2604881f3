//! The NFS service: the single write path of the NFS settings and the read side of
//! `/services/nfs`.
//!
//! A change is checked ([`check_settings`] against the live boot root), written
//! (enabled: the rendered exports file, through a temporary file and a rename, so
//! `exportfs` never reads half a file; disabled: the file removed), loaded with
//! `exportfs -ra` under `[nfs] exportfs_timeout_secs`, and only then stored and published
//! as `nfs.updated`. When `exportfs` refuses it (non-zero exit or timeout), the previous
//! file is put back, `exportfs -ra` is run again, `nfs.apply.failed` is published with
//! exportfs's stderr, and the caller gets a 502 ([`ServiceError::Upstream`]); nothing is
//! stored. When `exportfs` is not installed, the settings are stored, the file is not
//! touched, and the answer says `applied: false` with the reason.
//!
//! State: the effective settings (stored in `store.kv("nfs")`), behind one write lock.

use std::{
    io,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    exports::{
        check_settings, image_tree_kind, parse_exportfs_v, render, resolve_path, KernelExport, NfsExport, NfsSettings,
    },
    NfsConfig,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent, NfsApplyFailed, NfsExports, NfsUpdated},
    service_error::ServiceError,
    store::{Kv, Store, StoreError},
};

/// The key of the settings document in `store.kv("nfs")`.
const KEY: &str = "settings";
/// The tree of the NFS settings (the exports): each machine's own.
const TREE: &str = "nfs";
bootlane_core::store::node_tree!(TREE);
/// Most directories [`NfsService::browse`] lists.
pub const MAX_BROWSE: usize = 2000;
/// Longest stderr quoted in an error, in bytes.
const MAX_STDERR: usize = 2000;

/// Body of `PUT /services/nfs`: any subset; absent keys keep their stored value.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NfsPatch {
    /// See [`NfsSettings::enabled`].
    pub enabled: Option<bool>,
    /// The whole list of exports (replaces the stored one).
    pub exports: Option<Vec<NfsExport>>,
    /// Read-only; accepted and ignored so a GET answer can be PUT back.
    #[schema(value_type = Option<Object>)]
    pub status: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The state of the system side (`GET /services/nfs` `status`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NfsStatus {
    /// `[nfs] exports_file`.
    pub exports_file: String,
    /// `[nfs] exportfs`.
    pub exportfs: String,
    /// Whether `exportfs` is installed (`nfs-kernel-server`).
    pub exportfs_available: bool,
    /// Whether the running kernel has the NFS server (`nfsd` in `/proc/filesystems`).
    pub kernel_nfsd: bool,
    /// Whether `nfsd` threads are running (`/proc/fs/nfsd/threads` > 0): without them
    /// nothing is served even when the exports are loaded.
    pub nfsd_running: bool,
    /// Whether the exports file exists.
    pub file_present: bool,
    /// Whether the file is what the settings render to (absent when disabled). False
    /// after a boot-root change or a hand edit: a PUT rewrites it.
    pub file_in_sync: bool,
    /// The kernel's export table (`exportfs -v`; every exports file, not only ours).
    pub kernel_exports: Vec<KernelExport>,
    /// Why the kernel table or the sync state could not be read, if so.
    pub problems: Vec<String>,
}

/// `GET /services/nfs` answer: the settings and the system side.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NfsView {
    /// See [`NfsSettings::enabled`].
    pub enabled: bool,
    /// See [`NfsSettings::exports`].
    pub exports: Vec<NfsExport>,
    /// The system side.
    pub status: NfsStatus,
}

/// `PUT /services/nfs` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NfsApplied {
    /// See [`NfsSettings::enabled`].
    pub enabled: bool,
    /// The stored exports, normalised (relative paths, canonical clients, default options).
    pub exports: Vec<NfsExport>,
    /// Whether the change reached the kernel (file written and `exportfs -ra` succeeded).
    pub applied: bool,
    /// Why not (`applied: false`), or a caveat (no `nfsd` running).
    pub reason: Option<String>,
    /// What `exportfs` printed on stderr although it succeeded.
    pub warnings: Vec<String>,
}

/// `POST /services/nfs/validate-path` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PathCheck {
    /// The path as given.
    pub path: String,
    /// Whether it can be exported (a directory under the boot root): `problems` is empty.
    pub ok: bool,
    /// Relative to the boot root, when it resolves.
    pub relative: Option<String>,
    /// The canonical absolute path, when it resolves.
    pub absolute: Option<String>,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// What it looks like: `ubuntu-casper`, `debian-live`, `debian-installer`,
    /// `rhel-pxeboot`, `suse`, `arch`; `null` for none.
    pub image_tree: Option<String>,
    /// Whether the settings export it already.
    pub exported: bool,
    /// Why it cannot be exported.
    pub problems: Vec<String>,
    /// Things to check that do not stop an export (no image tree recognised).
    pub warnings: Vec<String>,
}

/// One directory of a `GET /services/nfs/browse-path` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BrowseDir {
    /// Its name.
    pub name: String,
    /// Its path relative to the boot root (what `exports[].path` takes).
    pub path: String,
    /// Whether it is a symlink (to a directory inside the boot root).
    pub symlink: bool,
    /// As in [`PathCheck::image_tree`].
    pub image_tree: Option<String>,
    /// Whether the settings export it.
    pub exported: bool,
}

/// `GET /services/nfs/browse-path` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BrowseAnswer {
    /// The directory listed, relative to the boot root (`""` is the root).
    pub path: String,
    /// Its canonical absolute path.
    pub absolute: String,
    /// Its parent relative to the boot root; `null` at the root.
    pub parent: Option<String>,
    /// As in [`PathCheck::image_tree`], for the listed directory itself.
    pub image_tree: Option<String>,
    /// Its subdirectories (symlinks leading out of the boot root and names that are not
    /// UTF-8 left out), sorted by name.
    pub directories: Vec<BrowseDir>,
    /// Whether the list stopped at [`MAX_BROWSE`].
    pub truncated: bool,
}

/// How a run of `exportfs` ended.
enum Run {
    /// Not installed.
    Missing(String),
    /// Exit 0: stdout and stderr.
    Ok(String, String),
    /// Non-zero exit, a timeout or a spawn error, described.
    Failed(String),
}

/// The NFS service (see the module docs).
pub struct NfsService {
    kv: Kv,
    config: NfsConfig,
    root: bootlane_boot::boot::netboot::Netboot,
    current: RwLock<NfsSettings>,
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
}

impl NfsService {
    /// Loads the stored settings (default: disabled, no exports). Touches nothing on the
    /// system: the exports file persists across restarts and nfs-kernel-server loads it
    /// at boot.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        config: &NfsConfig,
        store: &Store,
        root: bootlane_boot::boot::netboot::Netboot,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>, StoreError> {
        let kv = store.kv(TREE)?;
        let current = kv.get::<NfsSettings>(KEY)?.unwrap_or_default();
        Ok(Arc::new(Self {
            kv,
            config: config.clone(),
            root,
            current: RwLock::new(current),
            write: tokio::sync::Mutex::new(()),
            events,
        }))
    }

    /// The stored settings.
    pub fn settings(&self) -> NfsSettings {
        self.current
            .read()
            .map(|g| g.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    fn boot_root(&self) -> PathBuf {
        self.root.borrow().root()
    }

    /// The settings and the system side: whether exportfs and nfsd are there, whether
    /// the file matches, and the kernel's export table.
    pub async fn view(&self) -> NfsView {
        let s = self.settings();
        let mut problems = Vec::new();
        let file = &self.config.exports_file;
        let on_disk = match tokio::fs::read(file).await {
            Ok(b) => Some(b),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => {
                problems.push(format!("reading {}: {e}", file.display()));
                None
            }
        };
        let file_in_sync = if s.enabled {
            match check_settings(&self.boot_root(), &s, self.config.allow_rw) {
                Ok((_, r)) => on_disk.as_deref() == Some(render(&r).as_bytes()),
                Err(e) => {
                    problems.push(format!("the stored exports no longer check out: {e}"));
                    false
                }
            }
        } else {
            on_disk.is_none()
        };
        let mut kernel_exports = Vec::new();
        match self.exportfs(&["-v"]).await {
            Run::Ok(out, _) => kernel_exports = parse_exportfs_v(&out),
            Run::Missing(why) | Run::Failed(why) => problems.push(why),
        }
        NfsView {
            enabled: s.enabled,
            exports: s.exports,
            status: NfsStatus {
                exports_file: file.display().to_string(),
                exportfs: self.config.exportfs.display().to_string(),
                exportfs_available: self.config.exportfs.is_file(),
                kernel_nfsd: kernel_nfsd(),
                nfsd_running: nfsd_running(),
                file_present: on_disk.is_some(),
                file_in_sync,
                kernel_exports,
                problems,
            },
        }
    }

    /// Checks, applies (see the module docs), stores and publishes a change.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key; [`ServiceError::Upstream`] (502) when
    /// `exportfs` refuses the exports, with its stderr (nothing changed); I/O errors
    /// writing the file (500); store errors.
    pub async fn put(&self, p: NfsPatch) -> Result<NfsApplied, ServiceError> {
        let _w = self.write.lock().await;
        let before = self.settings();
        let wanted = NfsSettings {
            enabled: p.enabled.unwrap_or(before.enabled),
            exports: p.exports.unwrap_or_else(|| before.exports.clone()),
        };
        let (new, resolved) = check_settings(&self.boot_root(), &wanted, self.config.allow_rw)?;
        let content = new.enabled.then(|| render(&resolved));
        let (applied, reason, warnings) = match self.apply(content.as_deref()).await {
            Ok(a) => a,
            Err(e) => {
                self.events.publish(
                    NewEvent::new(EventKind::NfsApplyFailed, format!("NFS exports not applied: {e}"))
                        .resource("service", "nfs")
                        .with(&NfsApplyFailed {
                            error: e.to_string(),
                            wanted: exports_data(&new),
                        }),
                );
                return Err(e);
            }
        };
        if new != before {
            self.kv.put(KEY, &new).await?;
            if let Ok(mut g) = self.current.write() {
                *g = new.clone();
            }
        }
        let summary = match (new.enabled, applied) {
            (true, true) => format!("NFS exports applied ({} exports)", new.exports.len()),
            (false, true) => "NFS disabled: Bootlane's exports removed".to_owned(),
            (_, false) => "NFS settings stored, not applied: exportfs is missing".to_owned(),
        };
        self.events.publish(
            NewEvent::new(EventKind::NfsUpdated, summary)
                .resource("service", "nfs")
                .with(&NfsUpdated {
                    action: "update".into(),
                    before: exports_data(&before),
                    after: exports_data(&new),
                    applied,
                }),
        );
        Ok(NfsApplied {
            enabled: new.enabled,
            exports: new.exports,
            applied,
            reason,
            warnings,
        })
    }

    /// Writes `content` (or removes the file for `None`) and runs `exportfs -ra`, rolling
    /// back on refusal. Answers (applied, reason, warnings).
    async fn apply(&self, content: Option<&str>) -> Result<(bool, Option<String>, Vec<String>), ServiceError> {
        if !self.config.exportfs.is_file() {
            return Ok((false, Some(self.missing()), Vec::new()));
        }
        let file = &self.config.exports_file;
        let previous = match tokio::fs::read(file).await {
            Ok(b) => Some(b),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(ServiceError::io(format!("reading {}", file.display()), e)),
        };
        put_file(file, content.map(str::as_bytes)).await?;
        match self.exportfs(&["-ra"]).await {
            Run::Ok(_, stderr) => {
                let warnings: Vec<String> = stderr
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect();
                let reason = (content.is_some() && !nfsd_running()).then(|| {
                    "the exports are loaded, but no nfsd threads are running: start nfs-kernel-server (systemctl start nfs-server)".to_owned()
                });
                Ok((true, reason, warnings))
            }
            // Missing here: removed since the check above; undo the write the same way.
            Run::Missing(why) | Run::Failed(why) => {
                let restored = put_file(file, previous.as_deref()).await;
                let rerun = self.exportfs(&["-ra"]).await;
                if restored.is_err() || !matches!(rerun, Run::Ok(..)) {
                    tracing::warn!(file = %file.display(), "restoring the previous NFS exports failed too");
                }
                Err(ServiceError::Upstream(format!(
                    "{why}; the previous exports were restored and nothing was stored"
                )))
            }
        }
    }

    fn missing(&self) -> String {
        format!(
            "{} is not installed: install nfs-kernel-server (apt install nfs-kernel-server), then PUT the settings again; they are stored",
            self.config.exportfs.display()
        )
    }

    /// Runs `exportfs args` with the configured timeout (killed on expiry).
    async fn exportfs(&self, args: &[&str]) -> Run {
        let bin = &self.config.exportfs;
        if !bin.is_file() {
            return Run::Missing(self.missing());
        }
        let cmd = format!("{} {}", bin.display(), args.join(" "));
        let child = tokio::process::Command::new(bin)
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let secs = self.config.exportfs_timeout_secs;
        match tokio::time::timeout(Duration::from_secs(secs), child).await {
            Err(_) => Run::Failed(format!(
                "{cmd} did not finish within {secs} s ([nfs] exportfs_timeout_secs)"
            )),
            Ok(Err(e)) if e.kind() == io::ErrorKind::NotFound => Run::Missing(self.missing()),
            Ok(Err(e)) => Run::Failed(format!("{cmd} could not be started: {e}")),
            Ok(Ok(out)) => {
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                if out.status.success() {
                    Run::Ok(String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
                } else {
                    let mut msg: String = stderr.trim().chars().take(MAX_STDERR).collect();
                    if msg.is_empty() {
                        msg = "(no output)".into();
                    }
                    Run::Failed(format!("{cmd} failed ({}): {msg}", out.status))
                }
            }
        }
    }

    /// Checks one path for export (see [`PathCheck`]); path problems are answered, not
    /// errors.
    pub fn validate_path(&self, path: &str) -> PathCheck {
        let mut c = PathCheck {
            path: path.to_owned(),
            ok: false,
            relative: None,
            absolute: None,
            is_dir: false,
            image_tree: None,
            exported: false,
            problems: Vec::new(),
            warnings: Vec::new(),
        };
        match resolve_path(&self.boot_root(), path) {
            Err(e) => c.problems.push(e.to_string()),
            Ok((rel, abs)) => {
                c.is_dir = abs.is_dir();
                if c.is_dir {
                    c.image_tree = image_tree_kind(&abs).map(str::to_owned);
                    if c.image_tree.is_none() {
                        c.warnings.push(
                            "it does not look like an extracted image tree (no casper/, live/, install.amd/, images/pxeboot/, boot/x86_64/loader/ or arch/boot/)".into(),
                        );
                    }
                } else {
                    c.problems
                        .push(format!("{rel:?} is not a directory; exports are directories"));
                }
                c.exported = self.is_exported(&abs);
                c.relative = Some(rel);
                c.absolute = Some(abs.display().to_string());
            }
        }
        c.ok = c.problems.is_empty();
        c
    }

    /// Whether a stored export resolves to `abs`.
    fn is_exported(&self, abs: &Path) -> bool {
        let root = self.boot_root();
        self.settings()
            .exports
            .iter()
            .any(|e| resolve_path(&root, &e.path).is_ok_and(|(_, d)| d == abs))
    }

    /// Lists the subdirectories of `path` (relative to the boot root or absolute under
    /// it; empty for the root).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for a refused path or a file; [`ServiceError::NotFound`].
    pub fn browse(&self, path: &str) -> Result<BrowseAnswer, ServiceError> {
        let root = self.boot_root();
        let (rel, abs) = resolve_path(&root, path)?;
        if !abs.is_dir() {
            return Err(ServiceError::Invalid(format!("'path' {rel:?} is not a directory")));
        }
        let canon_root = root
            .canonicalize()
            .map_err(|e| ServiceError::io(format!("resolving the boot root {}", root.display()), e))?;
        let exported: Vec<PathBuf> = self
            .settings()
            .exports
            .iter()
            .filter_map(|e| resolve_path(&root, &e.path).ok().map(|(_, d)| d))
            .collect();
        let rd = std::fs::read_dir(&abs).map_err(|e| ServiceError::io(format!("listing {rel:?}"), e))?;
        let mut dirs = Vec::new();
        let mut truncated = false;
        for ent in rd.flatten() {
            let Ok(name) = ent.file_name().into_string() else {
                continue;
            };
            let p = abs.join(&name);
            let Ok(target) = p.canonicalize() else {
                continue;
            };
            if !target.starts_with(&canon_root) || !target.is_dir() {
                continue;
            }
            if dirs.len() == MAX_BROWSE {
                truncated = true;
                break;
            }
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            dirs.push(BrowseDir {
                symlink: ent.file_type().is_ok_and(|t| t.is_symlink()),
                image_tree: image_tree_kind(&target).map(str::to_owned),
                exported: exported.contains(&target),
                name,
                path: child,
            });
        }
        dirs.sort_by(|a, b| a.name.cmp(&b.name));
        let parent = (!rel.is_empty()).then(|| rel.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_owned()));
        Ok(BrowseAnswer {
            image_tree: image_tree_kind(&abs).map(str::to_owned),
            absolute: abs.display().to_string(),
            path: rel,
            parent,
            directories: dirs,
            truncated,
        })
    }
}

/// Writes `content` to `file` atomically (a temporary file beside it, synced, renamed
/// over it; mode 0644, since mountd reads it), or removes the file for `None` (absent
/// is fine). Creates the parent directory.
async fn put_file(file: &Path, content: Option<&[u8]>) -> Result<(), ServiceError> {
    let Some(content) = content else {
        return match tokio::fs::remove_file(file).await {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(ServiceError::io(format!("removing {}", file.display()), e))
            }
            _ => Ok(()),
        };
    };
    let file = file.to_path_buf();
    let content = content.to_vec();
    tokio::task::spawn_blocking(move || {
        use std::{io::Write, os::unix::fs::OpenOptionsExt};
        let dir = file.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(dir).map_err(|e| ServiceError::io(format!("creating {}", dir.display()), e))?;
        // Not ending in `.exports`, so exportfs never reads the temporary file.
        let tmp = dir.join(format!(".bootlane-exports.tmp-{}", std::process::id()));
        let write = || -> io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .open(&tmp)?;
            f.write_all(&content)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &file)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ServiceError::io(format!("writing {}", file.display()), e)
        })
    })
    .await
    .map_err(|e| ServiceError::Io {
        what: "writing the exports file".into(),
        source: io::Error::other(e),
    })?
}

/// Whether the kernel has the NFS server (`nfsd` in `/proc/filesystems`).
pub fn kernel_nfsd() -> bool {
    std::fs::read_to_string("/proc/filesystems")
        .is_ok_and(|s| s.lines().any(|l| l.split_whitespace().last() == Some("nfsd")))
}

/// Whether nfsd threads are running (`/proc/fs/nfsd/threads` holds a number > 0).
pub fn nfsd_running() -> bool {
    std::fs::read_to_string("/proc/fs/nfsd/threads").is_ok_and(|s| s.trim().parse::<u32>().is_ok_and(|n| n > 0))
}

/// `settings` as the `data` of an event.
fn exports_data(settings: &NfsSettings) -> NfsExports {
    NfsExports {
        enabled: settings.enabled,
        exports: settings
            .exports
            .iter()
            .map(|x| bootlane_core::events::NfsExport {
                path: x.path.clone(),
                clients: x.clients.clone(),
                options: x.options.clone(),
                comment: x.comment.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    async fn service(tmp: &Path, exportfs: PathBuf) -> Arc<NfsService> {
        let root = tmp.join("boot");
        std::fs::create_dir_all(root.join("images/ubuntu/casper")).unwrap();
        let config = NfsConfig {
            exports_file: tmp.join("exports.d/bootlane.exports"),
            exportfs,
            exportfs_timeout_secs: 1,
            allow_rw: false,
        };
        NfsService::open(
            &config,
            &Store::temporary(),
            bootlane_boot::boot::netboot::NetbootSettings::with_root(&root).fixed(),
            EventBus::in_memory(),
        )
        .unwrap()
    }

    fn patch(enabled: bool) -> NfsPatch {
        NfsPatch {
            enabled: Some(enabled),
            exports: Some(vec![NfsExport {
                path: "images/ubuntu".into(),
                clients: vec!["10.0.0.0/24".into()],
                options: vec![],
                comment: String::new(),
            }]),
            status: None,
        }
    }

    #[tokio::test]
    async fn a_refusal_or_timeout_restores_the_previous_file() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("calls");
        let ok = script(tmp.path(), "ok", &format!("echo \"$@\" >> {}", log.display()));
        let nfs = service(tmp.path(), ok).await;
        let a = nfs.put(patch(true)).await.unwrap();
        assert!(a.applied, "{a:?}");
        let file = tmp.path().join("exports.d/bootlane.exports");
        let good = std::fs::read_to_string(&file).unwrap();
        assert!(
            good.contains("/images/ubuntu 10.0.0.0/24(ro,no_subtree_check)"),
            "{good}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "-ra\n");

        // Same service, now with an exportfs that refuses: the file is put back.
        let bad = script(tmp.path(), "bad", "echo 'exportfs: bad thing' >&2; exit 1");
        let mut cfg = nfs.config.clone();
        cfg.exportfs = bad;
        let nfs2 = NfsService {
            kv: nfs.kv.clone(),
            config: cfg.clone(),
            root: nfs.root.clone(),
            current: RwLock::new(nfs.settings()),
            write: tokio::sync::Mutex::new(()),
            events: nfs.events.clone(),
        };
        let mut p = patch(true);
        p.exports.as_mut().unwrap()[0].clients = vec!["10.9.0.0/16".into()];
        let e = nfs2.put(p.clone()).await.unwrap_err();
        assert!(
            matches!(&e, ServiceError::Upstream(m) if m.contains("bad thing") && m.contains("restored")),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
        assert_eq!(nfs2.settings().exports[0].clients, ["10.0.0.0/24"]);

        // A hanging exportfs is killed after the timeout, with the same roll-back.
        let slow = script(tmp.path(), "slow", "sleep 30");
        cfg.exportfs = slow;
        let nfs3 = NfsService {
            config: cfg,
            current: RwLock::new(nfs.settings()),
            write: tokio::sync::Mutex::new(()),
            ..Arc::into_inner(nfs).unwrap()
        };
        let t0 = std::time::Instant::now();
        let e = nfs3.put(p).await.unwrap_err();
        assert!(e.to_string().contains("did not finish within 1 s"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
        // No temporary files left beside it.
        let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[tokio::test]
    async fn missing_exportfs_stores_without_applying() {
        let tmp = tempfile::tempdir().unwrap();
        let nfs = service(tmp.path(), tmp.path().join("no-exportfs")).await;
        let a = nfs.put(patch(true)).await.unwrap();
        assert!(!a.applied);
        assert!(a.reason.unwrap().contains("nfs-kernel-server"));
        assert!(nfs.settings().enabled);
        assert!(!tmp.path().join("exports.d").exists(), "the file is not touched");
        let v = nfs.view().await;
        assert!(!v.status.exportfs_available && !v.status.file_in_sync);
        assert!(
            v.status.problems.iter().any(|p| p.contains("not installed")),
            "{:?}",
            v.status.problems
        );
    }

    #[test]
    fn the_exports_in_event_data_are_the_settings_as_they_were_serialised() {
        for settings in [
            NfsSettings::default(),
            NfsSettings {
                enabled: true,
                exports: vec![NfsExport {
                    path: "images/3".into(),
                    clients: vec!["10.0.0.0/24".into(), "10.0.1.7".into()],
                    options: vec!["ro".into(), "no_subtree_check".into()],
                    comment: "ubuntu".into(),
                }],
            },
        ] {
            assert_eq!(
                serde_json::to_value(exports_data(&settings)).unwrap(),
                serde_json::to_value(&settings).unwrap()
            );
        }
    }
}
