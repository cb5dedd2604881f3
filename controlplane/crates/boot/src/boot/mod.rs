//! The boot directory and the iPXE script, shared by TFTP and HTTP boot.
//!
//! - [`resolve_in_root`] is the one place a client-supplied path becomes a file: `\` is
//!   read as `/`, a leading `/` is relative to the root, `..` components are refused,
//!   and the canonical result (symlinks followed) must still lie under the canonical
//!   root, so neither `..`, absolute paths nor symlinks can leave it.
//! - [`guard`] says which directories may be a boot root and which files are never served
//!   from one.
//! - [`populate`] copies Debian's iPXE builds into the root at start when missing.
//! - [`populate_pxelinux`] copies Debian's `pxelinux.0` and the BIOS modules its menu needs
//!   ([`PXELINUX_FILES`], [`SYSLINUX_MODULES`]) the same way.
//! - [`populate_secure_boot`] copies the Microsoft-signed shim and Debian's signed network
//!   GRUB ([`SECURE_BOOT_FILES`]) under the names shim and GRUB look for.
//! - [`pxelinux`] generates `pxelinux.cfg/...` and [`grub`] `grub/grub.cfg...` from the
//!   profiles; [`generated`] serves both to TFTP and HTTP.
//! - [`catalog`] holds profiles, script versions and the iPXE script template
//!   (rendered with minijinja from [`DEFAULT_SCRIPT`] or a replacement).
//!
//! - [`netboot`] is the netboot settings group (boot root, HTTP base URL) the readers
//!   follow through a [`netboot::Netboot`] receiver.
//! - [`file_body`] streams a byte range of a boot file as an HTTP body (page-cache reads
//!   on the worker, the blocking pool otherwise).
//!
//! Holds no global state.

pub mod binary;
pub mod catalog;
pub mod file_body;
pub mod generated;
pub mod grub;
pub mod guard;
pub mod netboot;
pub mod pxelinux;

use std::{
    io,
    path::{Component, Path, PathBuf},
};

use serde::{Deserialize, Serialize};

/// `[boot]`: the boot directory, the iPXE script and the public boot routes' rate limit.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BootConfig {
    /// The boot directory, served by TFTP and by HTTP under `/boot/...`.
    ///
    /// Default: `"<data_dir>/boot"`.
    pub root: Option<PathBuf>,
    /// Where the iPXE binaries (`undionly.kpxe`, `ipxe.efi`, `snponly.efi`) copied into the
    /// boot directory at start, when missing, come from (Debian's `ipxe`).
    ///
    /// Default: `"/usr/lib/ipxe"`.
    pub ipxe_source: Option<PathBuf>,
    /// Where `pxelinux.0` comes from (Debian's `pxelinux`).
    ///
    /// Default: `"/usr/lib/PXELINUX"`.
    pub pxelinux_source: Option<PathBuf>,
    /// Where `ldlinux.c32`, `menu.c32`, `libutil.c32`, `libcom32.c32` come from (Debian's
    /// `syslinux-common`).
    ///
    /// Default: `"/usr/lib/syslinux/modules/bios"`.
    pub syslinux_modules: Option<PathBuf>,
    /// The Microsoft-signed shim (`shimx64.efi`, `mmx64.efi`; Debian's `shim-signed`).
    ///
    /// Default: `"/usr/lib/shim"`.
    pub shim_source: Option<PathBuf>,
    /// Debian's signed network GRUB, copied as `grubx64.efi` (Debian's
    /// `grub-efi-amd64-signed`).
    ///
    /// Default: `"/usr/lib/grub/x86_64-efi-signed"`.
    pub grub_efi_source: Option<PathBuf>,
    /// The ARM64 GRUB (`grubaa64.efi`) and shim (`bootnetaa64.efi`, copied as `shimaa64.efi`),
    /// from Debian's `debian-installer-12-netboot-arm64`.
    ///
    /// Default: `"/usr/lib/debian-installer/images/12/arm64/text/debian-installer/arm64"`.
    pub arm64_source: Option<PathBuf>,
    /// A minijinja template replacing the built-in iPXE script (a template stored through `PUT
    /// /services/ipxe-script` wins).
    pub ipxe_script: Option<String>,
    /// Requests per second per client address on the public boot routes (0: no limit); 429
    /// beyond.
    pub rate_per_client: u32,
    /// Requests a client may make at once above that rate.
    pub rate_burst: u32,
    /// Directories under which `PUT /settings/netboot` may move the boot root, besides `root`
    /// and the tree under it. The data directory (but its `boot/`), its parents and system
    /// directories are never accepted.
    pub allowed_roots: Vec<PathBuf>,
}

impl Default for BootConfig {
    fn default() -> Self {
        Self {
            root: None,
            ipxe_source: None,
            pxelinux_source: None,
            syslinux_modules: None,
            shim_source: None,
            grub_efi_source: None,
            arm64_source: None,
            ipxe_script: None,
            rate_per_client: 50,
            rate_burst: 200,
            allowed_roots: vec![PathBuf::from("/srv")],
        }
    }
}

impl BootConfig {
    /// Checks the section: `allowed_roots` are absolute; `ipxe_script`, when set, compiles
    /// and renders ([`catalog::check_template`]).
    ///
    /// # Errors
    /// A message naming the key, with minijinja's reason.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(p) = self.allowed_roots.iter().find(|p| !p.is_absolute()) {
            anyhow::bail!("[boot] allowed_roots: {} is not an absolute path", p.display());
        }
        if let Some(t) = &self.ipxe_script {
            if let Err(e) = catalog::check_template(t) {
                anyhow::bail!("[boot] ipxe_script is not a valid template: {e}");
            }
        }
        Ok(())
    }
}

/// The files [`populate`] copies: Debian ships them as `undionly.kpxe` (BIOS, chains
/// through the PXE ROM's UNDI driver), `ipxe.efi` (x86-64 UEFI, own drivers) and
/// `snponly.efi` (x86-64 UEFI through the firmware's SNP driver).
pub const IPXE_FILES: [&str; 3] = ["undionly.kpxe", "ipxe.efi", "snponly.efi"];

/// The PXELINUX loader [`populate_pxelinux`] copies from `[boot] pxelinux_source`.
pub const PXELINUX_FILES: [&str; 1] = ["pxelinux.0"];

/// The syslinux BIOS modules [`populate_pxelinux`] copies from `[boot] syslinux_modules`:
/// `ldlinux.c32` (PXELINUX's core, loaded right after `pxelinux.0`), and `menu.c32` with
/// the libraries it links against (`libutil.c32`, `libcom32.c32`) for the generated menu.
pub const SYSLINUX_MODULES: [&str; 4] = ["ldlinux.c32", "menu.c32", "libutil.c32", "libcom32.c32"];

/// The Secure Boot chain [`populate_secure_boot`] copies, as `(source file, name in the
/// root)`: from `[boot] shim_source`, the Microsoft-signed shim (the DHCP boot file of
/// Secure Boot clients) and MokManager (which shim fetches when a key enrolment is
/// pending); from `[boot] grub_efi_source`, Debian's signed network GRUB, under the name
/// shim loads next (`grubx64.efi`, from the TFTP root: measured with shim 15.8, which asks
/// for it there even when shim itself was served from a subdirectory).
pub const SECURE_BOOT_FILES: [(&str, &str); 3] = [
    ("shimx64.efi.signed", "shimx64.efi"),
    ("mmx64.efi.signed", "mmx64.efi"),
    ("grubnetx64.efi.signed", "grubx64.efi"),
];

/// The ARM64 UEFI chain [`populate_arm64`] copies from `[boot] arm64_source` (Debian's
/// `debian-installer-12-netboot-arm64` set; Debian has no `grub-efi-arm64-signed` for
/// amd64 hosts and no ARM64 iPXE): its signed GRUB (the default boot file of architecture
/// 11, prefix `/debian-installer/arm64/grub`) and its Microsoft-signed shim, renamed
/// `shimaa64.efi` (the Secure Boot boot file of architecture 11), which loads
/// `grubaa64.efi` next.
pub const ARM64_FILES: [(&str, &str); 2] = [("grubaa64.efi", "grubaa64.efi"), ("bootnetaa64.efi", "shimaa64.efi")];

/// The default `[boot] arm64_source`.
pub const ARM64_SOURCE: &str = "/usr/lib/debian-installer/images/12/arm64/text/debian-installer/arm64";

/// The boot file Secure Boot clients are handed (the first of [`SECURE_BOOT_FILES`]).
pub const SHIM_FILE: &str = "shimx64.efi";

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// Empty, contains NUL or `..`, or names the root itself.
    #[error("invalid path {0:?}")]
    Invalid(String),
    /// Does not exist (or is not a regular file).
    #[error("no such file {0:?}")]
    NotFound(String),
    /// Resolves (through a symlink) outside the boot root.
    #[error("{0:?} is outside the boot directory")]
    Outside(String),
}

/// Resolves a client-supplied `path` to a regular file under `root`; a file
/// [`guard::is_protected`] refuses (a key, the admin password, anything in a data
/// directory outside its `boot/`) is answered as missing.
///
/// # Errors
/// [`PathError`]: invalid, missing (or protected), or leaving the root.
pub fn resolve_in_root(root: &Path, path: &str) -> Result<PathBuf, PathError> {
    if path.is_empty() || path.len() > 1024 || path.contains('\0') {
        return Err(PathError::Invalid(path.to_string()));
    }
    let cleaned = path.replace('\\', "/");
    let rel = cleaned.trim_start_matches('/');
    let mut joined = root.to_path_buf();
    let mut parts = 0;
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => {
                joined.push(p);
                parts += 1;
            }
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Invalid(path.to_string()))
            }
        }
    }
    if parts == 0 {
        return Err(PathError::Invalid(path.to_string()));
    }
    let canon_root = root.canonicalize().map_err(|_| PathError::NotFound(path.to_string()))?;
    let canon = joined
        .canonicalize()
        .map_err(|_| PathError::NotFound(path.to_string()))?;
    if !canon.starts_with(&canon_root) {
        return Err(PathError::Outside(path.to_string()));
    }
    // Answered as missing, so a refusal says nothing about what exists.
    if !canon.is_file() || guard::is_protected(&canon) {
        return Err(PathError::NotFound(path.to_string()));
    }
    Ok(canon)
}

/// Creates `root` and copies every [`IPXE_FILES`] entry found in `source` that the root
/// lacks (symlinks in `source` are followed). Returns the names copied.
///
/// # Errors
/// Creating the root or copying a file failed.
pub fn populate(root: &Path, source: &Path) -> io::Result<Vec<String>> {
    copy_missing(root, source, &IPXE_FILES)
}

/// [`populate`] for PXELINUX: [`PXELINUX_FILES`] from `loader_dir` and
/// [`SYSLINUX_MODULES`] from `modules_dir`, each only when the root lacks it. Returns the
/// names copied; missing sources are skipped (PXELINUX is optional).
///
/// # Errors
/// Creating the root or copying a file failed.
pub fn populate_pxelinux(root: &Path, loader_dir: &Path, modules_dir: &Path) -> io::Result<Vec<String>> {
    let mut copied = copy_missing(root, loader_dir, &PXELINUX_FILES)?;
    copied.extend(copy_missing(root, modules_dir, &SYSLINUX_MODULES)?);
    Ok(copied)
}

/// [`populate`] for ARM64 UEFI clients: [`ARM64_FILES`] from `source`, renamed, each only
/// when the root lacks it. Returns the names copied; a missing source is skipped.
///
/// # Errors
/// Creating the root or copying a file failed.
pub fn populate_arm64(root: &Path, source: &Path) -> io::Result<Vec<String>> {
    let pairs: Vec<(PathBuf, &str)> = ARM64_FILES.iter().map(|&(src, dst)| (source.join(src), dst)).collect();
    copy_pairs(root, &pairs)
}

/// [`populate`] for Secure Boot: the shim pair of [`SECURE_BOOT_FILES`] from `shim_dir`
/// and GRUB from `grub_dir`, renamed, each only when the root lacks it. Returns the names
/// copied; missing sources are skipped (Secure Boot is optional).
///
/// # Errors
/// Creating the root or copying a file failed.
pub fn populate_secure_boot(root: &Path, shim_dir: &Path, grub_dir: &Path) -> io::Result<Vec<String>> {
    let pairs: Vec<(PathBuf, &str)> = SECURE_BOOT_FILES
        .iter()
        .map(|&(src, dst)| {
            let dir = if src.starts_with("grub") { grub_dir } else { shim_dir };
            (dir.join(src), dst)
        })
        .collect();
    copy_pairs(root, &pairs)
}

fn copy_missing(root: &Path, source: &Path, names: &[&str]) -> io::Result<Vec<String>> {
    let pairs: Vec<(PathBuf, &str)> = names.iter().map(|&n| (source.join(n), n)).collect();
    copy_pairs(root, &pairs)
}

/// Copies each `(source file, name)` whose name the root lacks and whose source exists.
fn copy_pairs(root: &Path, pairs: &[(PathBuf, &str)]) -> io::Result<Vec<String>> {
    std::fs::create_dir_all(root)?;
    let mut copied = Vec::new();
    for (src, name) in pairs {
        let (src, name) = (src.as_path(), *name);
        let dst = root.join(name);
        if dst.exists() || !src.exists() {
            continue;
        }
        // Copy to a temporary name first so a crash never leaves a truncated boot file.
        let tmp = root.join(format!(".{name}.part"));
        std::fs::copy(src, &tmp)?;
        std::fs::rename(&tmp, &dst)?;
        copied.push(name.to_string());
    }
    Ok(copied)
}

/// The built-in iPXE script template (minijinja). Variables:
/// - `mac`: the client's MAC (lower case, colon form) or `unknown`;
/// - `server`: `host[:port]` the client used to reach Bootlane; `base_url`: `http://<server>`;
/// - `host`: the registered host's name, or none; `profile`: the profile's name;
/// - `timeout_ms`: menu timeout in milliseconds (0: none); `default_item`: key of the
///   default item;
/// - `items`: the menu entries, each with `key` (`e1`, `e2`, ...), `label`, `type`
///   (`local`, `linux`, `chain`, `sanboot`, `custom`), `kernel`, `initrds` (absolute
///   URLs), `cmdline`, `url`, `script`.
///
/// The first line after `#!ipxe` is the `echo Bootlane: booting <mac>` marker the
/// end-to-end tests read from the serial console.
pub const DEFAULT_SCRIPT: &str = r#"#!ipxe
echo Bootlane: booting {{ mac }}
menu Bootlane: {{ profile }}{% if host %} ({{ host }}){% endif %}
item --gap Profile {{ profile }}
{% for i in items %}item {{ i.key }} {{ i.label }}
{% endfor %}choose {% if timeout_ms %}--timeout {{ timeout_ms }} {% endif %}--default {{ default_item }} target || goto {{ default_item }}
goto ${target}
{% for i in items %}
:{{ i.key }}
{% if i.type == "local" %}echo Bootlane: exit to local disk
exit
{% elif i.type == "linux" %}kernel {{ i.kernel }}{% if i.cmdline %} {{ i.cmdline }}{% endif %}
{% for r in i.initrds %}initrd {{ r }}
{% endfor %}boot
{% elif i.type == "chain" %}chain {{ i.url }}
{% elif i.type == "sanboot" %}sanboot {{ i.url }}
{% elif i.type == "custom" %}{{ i.script }}
{% endif %}{% endfor %}"#;

/// Menu entries and profiles for the boot-loader renderers' unit tests.
#[cfg(any(test, feature = "test-support"))]
pub mod test_menu {
    use super::catalog::{EntryType, MenuEntry, Profile};

    /// An entry of `kind` with nothing but its label set.
    pub fn entry(label: &str, kind: EntryType) -> MenuEntry {
        MenuEntry {
            label: label.into(),
            kind,
            kernel: None,
            initrds: Vec::new(),
            cmdline: None,
            url: None,
            script: None,
            is_default: false,
        }
    }

    /// Profile "lab" (id 1) with `entries` and `timeout_secs`.
    pub fn profile(timeout_secs: u32, entries: Vec<MenuEntry>) -> Profile {
        Profile {
            id: 1,
            name: "lab".into(),
            description: String::new(),
            is_default: false,
            timeout_secs,
            entries,
            baseline_id: None,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            updated_at: time::OffsetDateTime::UNIX_EPOCH,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_refuses_escapes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("boot");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.bin"), b"a").unwrap();
        std::fs::write(root.join("sub/b.bin"), b"b").unwrap();
        std::fs::write(tmp.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("a.bin"), root.join("inner")).unwrap();

        assert!(resolve_in_root(&root, "a.bin").is_ok());
        assert!(resolve_in_root(&root, "/a.bin").is_ok());
        assert!(resolve_in_root(&root, "sub/b.bin").is_ok());
        assert!(resolve_in_root(&root, "sub\\b.bin").is_ok());
        assert!(resolve_in_root(&root, "./sub/./b.bin").is_ok());
        assert!(resolve_in_root(&root, "inner").is_ok());
        assert!(matches!(
            resolve_in_root(&root, "../secret"),
            Err(PathError::Invalid(_))
        ));
        assert!(matches!(
            resolve_in_root(&root, "sub/../../secret"),
            Err(PathError::Invalid(_))
        ));
        assert!(matches!(
            resolve_in_root(&root, "..\\secret"),
            Err(PathError::Invalid(_))
        ));
        assert!(matches!(resolve_in_root(&root, "link"), Err(PathError::Outside(_))));
        assert!(matches!(resolve_in_root(&root, "sub"), Err(PathError::NotFound(_))));
        assert!(matches!(resolve_in_root(&root, "missing"), Err(PathError::NotFound(_))));
        assert!(resolve_in_root(&root, "").is_err());
        assert!(resolve_in_root(&root, "/").is_err());
        assert!(resolve_in_root(&root, "a\0b").is_err());
    }

    #[test]
    fn populate_copies_missing_only() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("undionly.kpxe"), b"new").unwrap();
        std::fs::write(src.join("ipxe.efi"), b"new").unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("ipxe.efi"), b"mine").unwrap();
        let copied = populate(&root, &src).unwrap();
        assert_eq!(copied, vec!["undionly.kpxe".to_string()]);
        assert_eq!(std::fs::read(root.join("ipxe.efi")).unwrap(), b"mine");
        assert_eq!(std::fs::read(root.join("undionly.kpxe")).unwrap(), b"new");
        assert!(populate(&root, &src).unwrap().is_empty());
    }

    #[test]
    fn populate_pxelinux_copies_loader_and_modules() {
        let tmp = tempfile::tempdir().unwrap();
        let (loader, modules, root) = (tmp.path().join("l"), tmp.path().join("m"), tmp.path().join("root"));
        std::fs::create_dir_all(&loader).unwrap();
        std::fs::create_dir_all(&modules).unwrap();
        std::fs::write(loader.join("pxelinux.0"), b"p").unwrap();
        for m in SYSLINUX_MODULES {
            std::fs::write(modules.join(m), m).unwrap();
        }
        std::fs::write(modules.join("vesamenu.c32"), b"v").unwrap();
        let copied = populate_pxelinux(&root, &loader, &modules).unwrap();
        assert_eq!(
            copied,
            ["pxelinux.0", "ldlinux.c32", "menu.c32", "libutil.c32", "libcom32.c32"]
        );
        assert!(!root.join("vesamenu.c32").exists());
        assert!(populate_pxelinux(&root, &loader, &modules).unwrap().is_empty());
        // Missing sources are skipped, not an error.
        assert!(
            populate_pxelinux(&root, &tmp.path().join("none"), &tmp.path().join("none"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn populate_secure_boot_renames_into_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let (shim, grub, root) = (tmp.path().join("s"), tmp.path().join("g"), tmp.path().join("root"));
        std::fs::create_dir_all(&shim).unwrap();
        std::fs::create_dir_all(&grub).unwrap();
        std::fs::write(shim.join("shimx64.efi.signed"), b"shim").unwrap();
        std::fs::write(grub.join("grubnetx64.efi.signed"), b"grub").unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let copied = populate_secure_boot(&root, &shim, &grub).unwrap();
        assert_eq!(copied, ["shimx64.efi", "grubx64.efi"]);
        assert_eq!(std::fs::read(root.join("grubx64.efi")).unwrap(), b"grub");
        assert_eq!(std::fs::read(root.join(SHIM_FILE)).unwrap(), b"shim");
        assert!(populate_secure_boot(&root, &shim, &grub).unwrap().is_empty());
    }

    #[test]
    fn populate_arm64_renames_the_shim() {
        let tmp = tempfile::tempdir().unwrap();
        let (src, root) = (tmp.path().join("s"), tmp.path().join("root"));
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("grubaa64.efi"), b"g").unwrap();
        std::fs::write(src.join("bootnetaa64.efi"), b"s").unwrap();
        assert_eq!(populate_arm64(&root, &src).unwrap(), ["grubaa64.efi", "shimaa64.efi"]);
        assert_eq!(std::fs::read(root.join("shimaa64.efi")).unwrap(), b"s");
        assert!(populate_arm64(&root, &src).unwrap().is_empty());
        assert!(populate_arm64(&root, &tmp.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn default_script() {
        let t = catalog::sample_script("52:54:00:77:00:42", "10.77.0.1:8080");
        assert!(t.starts_with("#!ipxe\n"), "{t}");
        assert!(t.contains("echo Bootlane: booting 52:54:00:77:00:42\n"), "{t}");
        assert!(t.contains("item e1 Boot from local disk\n"), "{t}");
        assert!(
            t.contains("choose --timeout 5000 --default e1 target || goto e1\n"),
            "{t}"
        );
        assert!(t.contains("\n:e1\necho Bootlane: exit to local disk\nexit\n"), "{t}");
        assert!(catalog::check_template("{% if %}").is_err());
        assert!(catalog::check_template("echo no shebang").is_err());
        assert!(catalog::check_template("#!ipxe\nchain {{ base_url }}/x?m={{ mac }}\n").is_ok());
    }
}
