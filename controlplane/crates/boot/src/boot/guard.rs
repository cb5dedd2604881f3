//! What may be a boot root, and which files are never served from one.
//!
//! The boot root is served to anyone on the network without login (TFTP, `GET /boot/...`)
//! and is writable through the file API, so it must never be a tree holding Bootlane's
//! own secrets or the system's. Two checks, both without state:
//!
//! - [`check_root`]: a boot root set through the API (`PUT /settings/netboot`) must be the
//!   configured root (`[boot] root`, default `<data_dir>/boot`) or lie under it or under one
//!   of `[boot] allowed_roots` (default `/srv`), and it may never be, contain or lie inside
//!   a system directory ([`SYSTEM_DIRS`], [`SYSTEM_TREES`]) or the data directory (only
//!   `<data_dir>/boot` and below is allowed inside it).
//! - [`is_protected`]: a file is refused by name (`initial-admin-password`, `*.key`, the
//!   store's format file) and by location (inside a data directory, recognised by its
//!   [`DATA_DIR_MARKERS`], but not under its `boot/`), whatever the root: a root set by
//!   hand in the configuration file to the data directory still serves none of it.

use std::path::{Path, PathBuf};

/// Directories that may never be a boot root, nor lie under one: the file system's root
/// and the system's own trees.
pub const SYSTEM_DIRS: [&str; 22] = [
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/root",
    "/run", "/sbin", "/sys", "/tmp", "/usr", "/var", "/var/lib", "/var/log", "/var/tmp",
];

/// Trees nothing under which may be a boot root (kernel interfaces, devices, the system's
/// configuration, root's home, runtime state, the installed system). `/var/lib` itself is
/// refused by [`SYSTEM_DIRS`] but not the trees under it: the packaged data directory
/// `/var/lib/bootlane` holds the default root `boot/`.
pub const SYSTEM_TREES: [&str; 10] = [
    "/proc", "/sys", "/dev", "/etc", "/root", "/run", "/boot", "/usr", "/bin", "/sbin",
];

/// Files whose presence marks a directory as a Bootlane data directory: the store's
/// format file, the generated admin password, the BMC key (`bmc.key`, created at every
/// start; `bmc::secret` checks that its name is here).
pub const DATA_DIR_MARKERS: [&str; 3] = [bootlane_core::store::FORMAT_FILE, "initial-admin-password", "bmc.key"];

/// File names never served or written, wherever they are: the generated admin password,
/// the store's format file, and keys.
fn protected_name(name: &str) -> bool {
    matches!(name, "initial-admin-password" | bootlane_core::store::FORMAT_FILE) || name.ends_with(".key")
}

/// Whether `dir` holds one of [`DATA_DIR_MARKERS`].
fn is_data_dir(dir: &Path) -> bool {
    DATA_DIR_MARKERS.iter().any(|m| dir.join(m).exists())
}

/// Whether `path` (canonical, or a canonical parent joined with a last component) must not
/// be served, written or deleted through a boot root: a protected name, or a place inside
/// a data directory other than its `boot/` tree.
pub fn is_protected(path: &Path) -> bool {
    if path.file_name().and_then(|n| n.to_str()).is_some_and(protected_name) {
        return true;
    }
    path.ancestors()
        .skip(1)
        .find(|d| is_data_dir(d))
        .is_some_and(|data| !path.starts_with(data.join("boot")))
}

/// Checks a boot root asked for through the API and answers its canonical form.
///
/// `candidate`: the path asked for (absolute, an existing directory); `data_dir`: the
/// data directory; `file_root`: the configured root (`[boot] root` or `<data_dir>/boot`);
/// `allowed`: `[boot] allowed_roots`.
///
/// # Errors
/// A sentence saying which rule `candidate` breaks (for a `400` naming `boot_root`).
pub fn check_root(candidate: &Path, data_dir: &Path, file_root: &Path, allowed: &[PathBuf]) -> Result<PathBuf, String> {
    if !candidate.is_absolute() || !candidate.is_dir() {
        return Err("must be an absolute path to an existing directory".into());
    }
    let root = candidate
        .canonicalize()
        .map_err(|e| format!("cannot be resolved: {e}"))?;
    if let Some(d) = SYSTEM_DIRS.iter().map(Path::new).find(|d| d.starts_with(&root)) {
        return Err(format!(
            "is or contains the system directory {}: a boot root is served without login",
            d.display()
        ));
    }
    if let Some(t) = SYSTEM_TREES.iter().map(Path::new).find(|t| root.starts_with(t)) {
        return Err(format!("lies in the system directory {}", t.display()));
    }
    let data = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_path_buf());
    if data.starts_with(&root) {
        return Err(format!(
            "is or contains the data directory {} (keys, passwords, the store)",
            data.display()
        ));
    }
    if root.starts_with(&data) && !root.starts_with(data.join("boot")) {
        return Err(format!(
            "lies in the data directory {}; only its boot/ tree may be served",
            data.display()
        ));
    }
    let mut parents = std::iter::once(file_root).chain(allowed.iter().map(PathBuf::as_path));
    if !parents.any(|p| p.canonicalize().is_ok_and(|p| root.starts_with(p))) {
        return Err(format!(
            "is not under the configured boot root {} nor under one of [boot] allowed_roots {:?}",
            file_root.display(),
            allowed
        ));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dirs {
        _t: tempfile::TempDir,
        data: PathBuf,
        srv: PathBuf,
    }

    fn dirs() -> Dirs {
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("data");
        std::fs::create_dir_all(data.join("boot/alt")).unwrap();
        std::fs::create_dir_all(data.join("db")).unwrap();
        std::fs::create_dir_all(data.join("logs")).unwrap();
        std::fs::write(data.join("initial-admin-password"), "pw").unwrap();
        std::fs::write(data.join("bmc.key"), "k").unwrap();
        let srv = t.path().join("srv");
        std::fs::create_dir_all(srv.join("tftp")).unwrap();
        Dirs {
            data: data.canonicalize().unwrap(),
            srv: srv.canonicalize().unwrap(),
            _t: t,
        }
    }

    /// `PUT /settings/netboot {"boot_root": <data dir>}` made `/boot/initial-admin-password`
    /// and `/boot/bmc.key` public; no API call may make the data directory, its parents or
    /// a system directory a boot root.
    #[test]
    fn regression_the_data_dir_and_system_dirs_are_never_a_root() {
        let d = dirs();
        let file_root = d.data.join("boot");
        let allowed = vec![d.srv.clone(), PathBuf::from("/")];
        let check = |p: &Path| check_root(p, &d.data, &file_root, &allowed);
        for bad in [
            d.data.clone(),
            d.data.parent().unwrap().to_path_buf(),
            d.data.join("logs"),
            d.data.join("db"),
            PathBuf::from("/"),
            PathBuf::from("/etc"),
            PathBuf::from("/etc/ssh"),
            PathBuf::from("/root"),
            PathBuf::from("/home"),
            PathBuf::from("/var/lib"),
            PathBuf::from("/usr"),
            PathBuf::from("/usr/lib"),
            PathBuf::from("/proc"),
            PathBuf::from("/proc/self"),
            PathBuf::from("/sys"),
            PathBuf::from("/var"),
            PathBuf::from("/tmp"),
        ] {
            assert!(check(&bad).is_err(), "{} was accepted", bad.display());
        }
        // `..` and symlinks are resolved before the checks.
        let link = d.srv.join("to-data");
        std::os::unix::fs::symlink(&d.data, &link).unwrap();
        assert!(check(&link).unwrap_err().contains("data directory"));
        assert!(check(&d.srv.join("tftp/../../data")).is_err());
        assert!(check(Path::new("relative")).is_err());
        assert!(check(&d.srv.join("missing")).is_err());
    }

    #[test]
    fn roots_under_the_configured_root_or_an_allowed_parent_are_accepted() {
        let d = dirs();
        let file_root = d.data.join("boot");
        let check = |p: &Path, allowed: &[PathBuf]| check_root(p, &d.data, &file_root, allowed);
        assert_eq!(check(&file_root, &[]).unwrap(), file_root);
        assert!(check(&file_root.join("alt"), &[]).is_ok());
        let srv = std::slice::from_ref(&d.srv);
        assert!(check(&d.srv.join("tftp"), srv).is_ok());
        assert!(check(&d.srv, srv).is_ok());
        let e = check(&d.srv.join("tftp"), &[]).unwrap_err();
        assert!(e.contains("allowed_roots"), "{e}");
    }

    #[test]
    fn secrets_are_protected_by_name_and_by_location() {
        let d = dirs();
        assert!(is_protected(&d.data.join("initial-admin-password")));
        assert!(is_protected(&d.data.join("bmc.key")));
        assert!(is_protected(&d.data.join("db/conf")));
        assert!(is_protected(&d.data.join("logs/bootlane.log")));
        assert!(is_protected(&d.srv.join("tftp/server.key")));
        assert!(is_protected(&d.data.join("boot/initial-admin-password")));
        assert!(!is_protected(&d.data.join("boot/ipxe.efi")));
        assert!(!is_protected(&d.data.join("boot/alt/linux")));
        assert!(!is_protected(&d.srv.join("tftp/ipxe.efi")));
    }
}
