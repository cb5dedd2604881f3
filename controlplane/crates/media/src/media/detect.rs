//! Detection of what an OS image is: distro family, version, architecture, kernel and
//! initrd paths, default kernel arguments and boot method, from the list of paths inside
//! the image and a few small files read from it ([`WANTED_FILES`]: `.disk/info`,
//! `.treeinfo`, `media.1/products`, ...). A pure function ([`detect`]) with no I/O, so
//! every family is tested on a tree shaped like it, without ISOs. Paths are matched
//! case-insensitively (a plain ISO 9660 tree without Rock Ridge or Joliet has upper-case
//! names) and answered with the image's own spelling.
//!
//! Families: Debian (`install.<arch>/vmlinuz` + `initrd.gz`), Ubuntu and other casper
//! images (`casper/vmlinuz` + `initrd`), RHEL/Fedora/Rocky/Alma/CentOS
//! (`images/pxeboot/vmlinuz` + `initrd.img`, `.treeinfo`), openSUSE/SLE
//! (`boot/<arch>/loader/linux` + `initrd`), Arch (`arch/boot/<arch>/vmlinuz-linux`),
//! Alpine (`boot/vmlinuz-lts` or `-virt`), Windows (`sources/boot.wim`, `bootmgr`,
//! `boot/bcd`: booted through wimboot); anything else gets the candidate kernel/initrd
//! pairs of a generic scan, and says so ([`Detection::generic`]). No state.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Small files [`detect`] reads when present (paths relative to the image's root,
/// compared case-insensitively); the reader passes their text in [`DetectInput::files`].
pub const WANTED_FILES: &[&str] = &[
    ".disk/info",
    ".treeinfo",
    "media.1/products",
    ".alpine-release",
    "arch/version",
];

/// Placeholder in [`Detection::cmdline`] for the URL the image's tree is served from
/// (extracted or mounted), filled in when a profile is made from the image.
pub const IMAGE_URL: &str = "{image_url}";
/// Placeholder in [`Detection::cmdline`] for the URL of the ISO file itself.
pub const ISO_URL: &str = "{iso_url}";

/// Distribution family of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Debian (installer or live).
    Debian,
    /// Ubuntu and other casper-based images.
    Ubuntu,
    /// Red Hat Enterprise Linux, or an Anaconda tree not named otherwise.
    Rhel,
    /// Fedora.
    Fedora,
    /// Rocky Linux.
    Rocky,
    /// AlmaLinux.
    Alma,
    /// CentOS (Stream).
    Centos,
    /// openSUSE (Leap, Tumbleweed).
    Opensuse,
    /// SUSE Linux Enterprise.
    Sles,
    /// Arch Linux.
    Arch,
    /// Alpine Linux.
    Alpine,
    /// Microsoft Windows (Setup / WinPE).
    Windows,
    /// Not recognised: see [`Detection::candidates`].
    Unknown,
}

/// How an image boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BootMethod {
    /// A Linux kernel with its initrds and command line.
    Linux,
    /// wimboot, handed `bootmgr`, `boot/bcd`, `boot/boot.sdi` and `sources/boot.wim`
    /// ([`Detection::initrds`] in that order).
    Wimboot,
}

/// A kernel found by the generic scan, with the initrds next to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KernelCandidate {
    /// Kernel path inside the image.
    pub kernel: String,
    /// Initrd paths in the same directory (possibly none).
    pub initrds: Vec<String>,
}

/// What [`detect`] found. Paths are relative to the image's root, without a leading `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Detection {
    /// Distribution family.
    pub family: Family,
    /// Product name as the image states it (`.disk/info`, `.treeinfo`), when it does.
    pub product: Option<String>,
    /// Version, e.g. `12.5.0`, `9.3`, `15.5`, `2024.05.01`.
    pub version: Option<String>,
    /// Architecture: `x86_64`, `aarch64`, `i386`, ... (Linux spelling).
    pub arch: Option<String>,
    /// How the image boots.
    pub boot_method: BootMethod,
    /// Kernel path (`None` for wimboot and when nothing was found).
    pub kernel: Option<String>,
    /// Initrds in load order (microcode first); for wimboot, the files wimboot is given.
    pub initrds: Vec<String>,
    /// Default kernel arguments; may hold [`IMAGE_URL`] or [`ISO_URL`].
    pub cmdline: Option<String>,
    /// True when the layout was not recognised and kernel/initrd come from a generic scan
    /// (the first of [`Detection::candidates`]).
    pub generic: bool,
    /// Generic scan's kernel/initrd pairs (only when `generic`).
    pub candidates: Vec<KernelCandidate>,
    /// Remarks for the operator (what is missing, what to check).
    pub notes: Vec<String>,
}

/// Input of [`detect`]: the paths of every file in the image (relative, `/`-separated)
/// and the text of those of [`WANTED_FILES`] that exist (keyed by their lower-case path).
#[derive(Debug, Clone, Default)]
pub struct DetectInput {
    /// Every regular file's path.
    pub paths: Vec<String>,
    /// Small files' text, keyed by lower-case path.
    pub files: BTreeMap<String, String>,
}

/// Case-insensitive index: lower-case path -> the image's spelling.
struct Tree<'a> {
    by_lower: HashMap<String, &'a str>,
    input: &'a DetectInput,
}

impl<'a> Tree<'a> {
    fn new(input: &'a DetectInput) -> Self {
        let by_lower = input
            .paths
            .iter()
            .map(|p| (p.trim_start_matches('/').to_lowercase(), p.trim_start_matches('/')))
            .collect();
        Self { by_lower, input }
    }
    fn get(&self, p: &str) -> Option<String> {
        self.by_lower.get(&p.to_lowercase()).map(|s| (*s).to_string())
    }
    fn has(&self, p: &str) -> bool {
        self.by_lower.contains_key(&p.to_lowercase())
    }
    fn first(&self, ps: &[&str]) -> Option<String> {
        ps.iter().find_map(|p| self.get(p))
    }
    fn text(&self, p: &str) -> Option<&'a str> {
        self.input.files.get(&p.to_lowercase()).map(String::as_str)
    }
}

fn base(family: Family) -> Detection {
    Detection {
        family,
        product: None,
        version: None,
        arch: None,
        boot_method: BootMethod::Linux,
        kernel: None,
        initrds: Vec::new(),
        cmdline: None,
        generic: false,
        candidates: Vec::new(),
        notes: Vec::new(),
    }
}

/// Debian/Ubuntu architecture names to the Linux spelling.
fn linux_arch(a: &str) -> String {
    match a.to_lowercase().as_str() {
        "amd" | "amd64" | "x86_64" | "x64" => "x86_64".into(),
        "a64" | "arm64" | "aarch64" => "aarch64".into(),
        "386" | "i386" | "i686" | "x86" => "i386".into(),
        "ppc64el" | "ppc64le" => "ppc64le".into(),
        other => other.into(),
    }
}

/// The first whitespace-separated token of `s` that starts with a digit.
fn version_in(s: &str) -> Option<String> {
    s.split_whitespace()
        .map(|t| t.trim_matches(|c: char| c == '"' || c == ','))
        .find(|t| t.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

/// An architecture token in free text (`.disk/info`).
fn arch_in(s: &str) -> Option<String> {
    s.split(|c: char| c.is_whitespace() || c == '-' || c == '(' || c == ')')
        .find(|t| {
            ["amd64", "arm64", "i386", "x86_64", "aarch64", "ppc64el", "s390x"].contains(&t.to_lowercase().as_str())
        })
        .map(linux_arch)
}

/// `key = value` of section `[section]` in an INI text (`.treeinfo`).
fn ini(text: &str, section: &str, key: &str) -> Option<String> {
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        if let Some(s) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            inside = s.trim().eq_ignore_ascii_case(section);
            continue;
        }
        if inside {
            if let Some((k, v)) = l.split_once('=') {
                if k.trim().eq_ignore_ascii_case(key) {
                    return Some(v.trim().to_string()).filter(|v| !v.is_empty());
                }
            }
        }
    }
    None
}

/// Detects what the image is (see the module docs for the rules and their order).
pub fn detect(input: &DetectInput) -> Detection {
    let t = Tree::new(input);
    windows(&t)
        .or_else(|| debian(&t))
        .or_else(|| casper(&t))
        .or_else(|| anaconda(&t))
        .or_else(|| suse(&t))
        .or_else(|| arch(&t))
        .or_else(|| alpine(&t))
        .unwrap_or_else(|| generic(&t))
}

fn windows(t: &Tree) -> Option<Detection> {
    let wim = t.get("sources/boot.wim")?;
    let mut d = base(Family::Windows);
    d.boot_method = BootMethod::Wimboot;
    d.product = Some("Windows".into());
    d.arch = if t.has("efi/boot/bootx64.efi") {
        Some("x86_64".into())
    } else if t.has("efi/boot/bootaa64.efi") {
        Some("aarch64".into())
    } else if t.has("efi/boot/bootia32.efi") {
        Some("i386".into())
    } else {
        None
    };
    for f in ["bootmgr", "boot/bcd", "boot/boot.sdi"] {
        match t.get(f) {
            Some(p) => d.initrds.push(p),
            None => d.notes.push(format!("{f} is missing; wimboot needs it")),
        }
    }
    d.initrds.push(wim);
    d.notes
        .push("boots through wimboot (kernel: wimboot, the files above as its initrds)".into());
    Some(d)
}

fn debian(t: &Tree) -> Option<Detection> {
    for (dir, a) in [
        ("install.amd", "amd64"),
        ("install.a64", "arm64"),
        ("install.386", "i386"),
        ("install", ""),
    ] {
        let (Some(kernel), Some(initrd)) = (
            t.first(&[&format!("{dir}/vmlinuz"), &format!("{dir}/linux")]),
            t.first(&[&format!("{dir}/initrd.gz"), &format!("{dir}/initrd")]),
        ) else {
            continue;
        };
        let info = t.text(".disk/info").unwrap_or("");
        let family = if info.to_lowercase().contains("ubuntu") {
            Family::Ubuntu
        } else {
            Family::Debian
        };
        let mut d = base(family);
        if !info.is_empty() {
            d.product = Some(info.trim().to_string());
            d.version = version_in(info);
        }
        d.arch = if a.is_empty() {
            arch_in(info)
        } else {
            Some(linux_arch(a))
        };
        d.kernel = Some(kernel);
        d.initrds = vec![initrd];
        d.cmdline = Some("vga=788 quiet".into());
        return Some(d);
    }
    None
}

fn casper(t: &Tree) -> Option<Detection> {
    let kernel = t.first(&["casper/vmlinuz", "casper/vmlinuz.efi", "live/vmlinuz"])?;
    let live = kernel.to_lowercase().starts_with("live/");
    let initrd = if live {
        t.first(&["live/initrd.img", "live/initrd"])
    } else {
        t.first(&[
            "casper/initrd",
            "casper/initrd.gz",
            "casper/initrd.lz",
            "casper/initrd.img",
        ])
    }?;
    let info = t.text(".disk/info").unwrap_or("");
    let family = if live || info.to_lowercase().contains("debian") {
        Family::Debian
    } else {
        Family::Ubuntu
    };
    let mut d = base(family);
    if !info.is_empty() {
        d.product = Some(info.trim().to_string());
        d.version = version_in(info);
    }
    d.arch = arch_in(info).or_else(|| t.has("efi/boot/bootx64.efi").then(|| "x86_64".into()));
    d.kernel = Some(kernel);
    d.initrds = vec![initrd];
    d.cmdline = Some(if live {
        format!("boot=live components fetch={ISO_URL} ip=dhcp")
    } else {
        format!("boot=casper ip=dhcp url={ISO_URL}")
    });
    Some(d)
}

fn anaconda(t: &Tree) -> Option<Detection> {
    let kernel = t.get("images/pxeboot/vmlinuz")?;
    let initrd = t.get("images/pxeboot/initrd.img")?;
    let info = t.text(".treeinfo").unwrap_or("");
    // productmd 1.x ([release], [tree]) or the older [general].
    let name = ini(info, "release", "name").or_else(|| ini(info, "general", "family"));
    let lower = name.as_deref().unwrap_or("").to_lowercase();
    let family = if lower.contains("fedora") {
        Family::Fedora
    } else if lower.contains("rocky") {
        Family::Rocky
    } else if lower.contains("alma") {
        Family::Alma
    } else if lower.contains("centos") {
        Family::Centos
    } else {
        Family::Rhel
    };
    let mut d = base(family);
    d.product = name;
    d.version = ini(info, "release", "version").or_else(|| ini(info, "general", "version"));
    d.arch = ini(info, "tree", "arch").or_else(|| ini(info, "general", "arch"));
    if info.is_empty() {
        d.notes
            .push(".treeinfo is missing: family assumed RHEL, version and architecture unknown".into());
    }
    d.kernel = Some(kernel);
    d.initrds = vec![initrd];
    d.cmdline = Some(format!("inst.repo={IMAGE_URL} ip=dhcp"));
    Some(d)
}

fn suse(t: &Tree) -> Option<Detection> {
    let (kernel, a) = ["x86_64", "aarch64", "ppc64le", "s390x", "i386"]
        .iter()
        .find_map(|a| t.get(&format!("boot/{a}/loader/linux")).map(|k| (k, *a)))?;
    let initrd = t.get(&format!("boot/{a}/loader/initrd"))?;
    let products = t.text("media.1/products").unwrap_or("");
    // "/ openSUSE-Leap 15.5-1" or "/ SLES 15.5-0".
    let product = products
        .lines()
        .next()
        .map(|l| l.trim_start_matches('/').trim().to_string());
    let family = if products.contains("SLE") && !products.to_lowercase().contains("opensuse") {
        Family::Sles
    } else {
        Family::Opensuse
    };
    let mut d = base(family);
    d.version = product
        .as_deref()
        .and_then(|p| p.split_whitespace().nth(1))
        .map(|v| v.split('-').next().unwrap_or(v).to_string());
    d.product = product.filter(|p| !p.is_empty());
    d.arch = Some(a.to_string());
    d.kernel = Some(kernel);
    d.initrds = vec![initrd];
    d.cmdline = Some(format!("install={IMAGE_URL} splash=silent"));
    Some(d)
}

fn arch(t: &Tree) -> Option<Detection> {
    let (kernel, a) = ["x86_64", "aarch64"]
        .iter()
        .find_map(|a| t.get(&format!("arch/boot/{a}/vmlinuz-linux")).map(|k| (k, *a)))?;
    let initrd = t.get(&format!("arch/boot/{a}/initramfs-linux.img"))?;
    let mut d = base(Family::Arch);
    d.product = Some("Arch Linux".into());
    d.version = t
        .text("arch/version")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    d.arch = Some(a.to_string());
    d.kernel = Some(kernel);
    d.initrds = ["arch/boot/intel-ucode.img", "arch/boot/amd-ucode.img"]
        .iter()
        .filter_map(|p| t.get(p))
        .collect();
    d.initrds.push(initrd);
    d.cmdline = Some(format!("archisobasedir=arch archiso_http_srv={IMAGE_URL}/ ip=dhcp"));
    Some(d)
}

fn alpine(t: &Tree) -> Option<Detection> {
    let (kernel, initrd, flavor) = ["lts", "virt"].iter().find_map(|f| {
        Some((
            t.get(&format!("boot/vmlinuz-{f}"))?,
            t.get(&format!("boot/initramfs-{f}"))?,
            *f,
        ))
    })?;
    let mut d = base(Family::Alpine);
    d.product = Some("Alpine Linux".into());
    d.version = t.text(".alpine-release").and_then(version_in);
    d.arch = t.input.paths.iter().find_map(|p| {
        let mut s = p.trim_start_matches('/').split('/');
        (s.next()?.eq_ignore_ascii_case("apks")).then_some(())?;
        let a = s.next()?;
        s.next().is_some().then(|| a.to_string())
    });
    d.kernel = Some(kernel);
    d.initrds = vec![initrd];
    d.cmdline = Some(format!(
        "modules=loop,squashfs,sd-mod,usb-storage alpine_repo={IMAGE_URL}/apks modloop={IMAGE_URL}/boot/modloop-{flavor} ip=dhcp"
    ));
    Some(d)
}

fn is_kernel_name(n: &str) -> bool {
    n.starts_with("vmlinuz") || n.starts_with("vmlinux") || n.starts_with("bzimage") || n == "linux" || n == "kernel"
}

fn is_initrd_name(n: &str) -> bool {
    n.starts_with("initrd") || n.starts_with("initramfs")
}

fn generic(t: &Tree) -> Detection {
    let mut by_dir: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for p in &t.input.paths {
        let p = p.trim_start_matches('/');
        let (dir, name) = p.rsplit_once('/').unwrap_or(("", p));
        let lower = name.to_lowercase();
        let e = by_dir.entry(dir.to_lowercase()).or_default();
        if is_kernel_name(&lower) {
            e.0.push(p.to_string());
        } else if is_initrd_name(&lower) {
            e.1.push(p.to_string());
        }
    }
    let mut candidates = Vec::new();
    for (_, (mut kernels, mut initrds)) in by_dir {
        kernels.sort();
        initrds.sort();
        for k in kernels {
            candidates.push(KernelCandidate {
                kernel: k,
                initrds: initrds.clone(),
            });
        }
    }
    // Pairs with an initrd first; then by path.
    candidates.sort_by(|a, b| {
        a.initrds
            .is_empty()
            .cmp(&b.initrds.is_empty())
            .then(a.kernel.cmp(&b.kernel))
    });
    let mut d = base(Family::Unknown);
    d.generic = true;
    if let Some(c) = candidates.first() {
        d.kernel = Some(c.kernel.clone());
        d.initrds = c.initrds.first().cloned().into_iter().collect();
        d.notes.push(format!(
            "layout not recognised: {} kernel candidate(s) from a generic scan; check the kernel, initrd and arguments",
            candidates.len()
        ));
    } else {
        d.notes
            .push("layout not recognised and no kernel found by the generic scan".into());
    }
    d.candidates = candidates;
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(paths: &[&str], files: &[(&str, &str)]) -> DetectInput {
        DetectInput {
            paths: paths.iter().map(|s| (*s).to_string()).collect(),
            files: files
                .iter()
                .map(|(k, v)| ((*k).to_lowercase(), (*v).to_string()))
                .collect(),
        }
    }

    #[test]
    fn debian_netinst() {
        let d = detect(&input(
            &[
                "install.amd/vmlinuz",
                "install.amd/initrd.gz",
                "install.amd/gtk/vmlinuz",
                ".disk/info",
                "md5sum.txt",
            ],
            &[(
                ".disk/info",
                "Debian GNU/Linux 12.5.0 \"Bookworm\" - Official amd64 NETINST with firmware 20240210-11:27",
            )],
        ));
        assert_eq!(d.family, Family::Debian);
        assert_eq!(d.version.as_deref(), Some("12.5.0"));
        assert_eq!(d.arch.as_deref(), Some("x86_64"));
        assert_eq!(d.kernel.as_deref(), Some("install.amd/vmlinuz"));
        assert_eq!(d.initrds, ["install.amd/initrd.gz"]);
        assert!(!d.generic);
    }

    #[test]
    fn plain_iso9660_upper_case_names_keep_their_spelling() {
        let d = detect(&input(&["INSTALL.A64/VMLINUZ", "INSTALL.A64/INITRD.GZ"], &[]));
        assert_eq!(d.family, Family::Debian);
        assert_eq!(d.arch.as_deref(), Some("aarch64"));
        assert_eq!(d.kernel.as_deref(), Some("INSTALL.A64/VMLINUZ"));
    }

    #[test]
    fn ubuntu_casper() {
        let d = detect(&input(
            &[
                "casper/vmlinuz",
                "casper/initrd",
                "casper/filesystem.squashfs",
                "EFI/boot/bootx64.efi",
            ],
            &[(
                ".disk/info",
                "Ubuntu-Server 22.04.3 LTS \"Jammy Jellyfish\" - Release amd64 (20230810)",
            )],
        ));
        assert_eq!(d.family, Family::Ubuntu);
        assert_eq!(d.version.as_deref(), Some("22.04.3"));
        assert_eq!(d.arch.as_deref(), Some("x86_64"));
        assert_eq!(
            (d.kernel.as_deref(), d.initrds.as_slice()),
            (Some("casper/vmlinuz"), &["casper/initrd".to_string()][..])
        );
        assert!(d.cmdline.unwrap().contains("boot=casper"));
    }

    #[test]
    fn anaconda_families_from_treeinfo() {
        let tree = [
            "images/pxeboot/vmlinuz",
            "images/pxeboot/initrd.img",
            ".treeinfo",
            "images/install.img",
        ];
        let rocky = "[header]\ntype = productmd.treeinfo\n[release]\nname = Rocky Linux\nshort = Rocky\nversion = 9.3\n[tree]\narch = x86_64\n";
        let d = detect(&input(&tree, &[(".treeinfo", rocky)]));
        assert_eq!(
            (d.family, d.version.as_deref(), d.arch.as_deref()),
            (Family::Rocky, Some("9.3"), Some("x86_64"))
        );
        assert_eq!(d.initrds, ["images/pxeboot/initrd.img"]);
        assert!(d.cmdline.unwrap().contains("inst.repo={image_url}"));
        let old = "[general]\nfamily = Fedora\nversion = 39\narch = aarch64\n";
        let d = detect(&input(&tree, &[(".treeinfo", old)]));
        assert_eq!(
            (d.family, d.version.as_deref(), d.arch.as_deref()),
            (Family::Fedora, Some("39"), Some("aarch64"))
        );
        let alma = "[release]\nname = AlmaLinux\nversion = 8.9\n";
        assert_eq!(detect(&input(&tree, &[(".treeinfo", alma)])).family, Family::Alma);
        let d = detect(&input(&tree[..2], &[]));
        assert_eq!(d.family, Family::Rhel);
        assert!(!d.notes.is_empty());
    }

    #[test]
    fn opensuse_loader() {
        let d = detect(&input(
            &[
                "boot/x86_64/loader/linux",
                "boot/x86_64/loader/initrd",
                "media.1/products",
            ],
            &[("media.1/products", "/ openSUSE-Leap 15.5-1\n")],
        ));
        assert_eq!(d.family, Family::Opensuse);
        assert_eq!(
            (d.version.as_deref(), d.arch.as_deref()),
            (Some("15.5"), Some("x86_64"))
        );
        assert_eq!(d.kernel.as_deref(), Some("boot/x86_64/loader/linux"));
        let d = detect(&input(
            &["boot/aarch64/loader/linux", "boot/aarch64/loader/initrd"],
            &[("media.1/products", "/ SLES 15.5-0\n")],
        ));
        assert_eq!((d.family, d.arch.as_deref()), (Family::Sles, Some("aarch64")));
    }

    #[test]
    fn arch_with_microcode_first() {
        let d = detect(&input(
            &[
                "arch/boot/x86_64/vmlinuz-linux",
                "arch/boot/x86_64/initramfs-linux.img",
                "arch/boot/intel-ucode.img",
                "arch/boot/amd-ucode.img",
                "arch/version",
            ],
            &[("arch/version", "2024.05.01\n")],
        ));
        assert_eq!(d.family, Family::Arch);
        assert_eq!(d.version.as_deref(), Some("2024.05.01"));
        assert_eq!(
            d.initrds,
            [
                "arch/boot/intel-ucode.img",
                "arch/boot/amd-ucode.img",
                "arch/boot/x86_64/initramfs-linux.img"
            ]
        );
    }

    #[test]
    fn alpine_lts() {
        let d = detect(&input(
            &[
                "boot/vmlinuz-lts",
                "boot/initramfs-lts",
                "boot/modloop-lts",
                "apks/x86_64/APKINDEX.tar.gz",
                ".alpine-release",
            ],
            &[(".alpine-release", "3.19.1 240126\n")],
        ));
        assert_eq!(d.family, Family::Alpine);
        assert_eq!(
            (d.version.as_deref(), d.arch.as_deref()),
            (Some("3.19.1"), Some("x86_64"))
        );
        assert_eq!(d.kernel.as_deref(), Some("boot/vmlinuz-lts"));
        assert!(d.cmdline.unwrap().contains("modloop={image_url}/boot/modloop-lts"));
    }

    #[test]
    fn windows_through_wimboot() {
        let d = detect(&input(
            &[
                "bootmgr",
                "boot/bcd",
                "boot/boot.sdi",
                "sources/boot.wim",
                "sources/install.wim",
                "efi/boot/bootx64.efi",
            ],
            &[],
        ));
        assert_eq!((d.family, d.boot_method), (Family::Windows, BootMethod::Wimboot));
        assert_eq!(d.kernel, None);
        assert_eq!(d.initrds, ["bootmgr", "boot/bcd", "boot/boot.sdi", "sources/boot.wim"]);
        assert_eq!(d.arch.as_deref(), Some("x86_64"));
        // Upper case (UDF as Windows writes it), a file missing: named in the notes.
        let d = detect(&input(&["BOOTMGR", "BOOT/BCD", "SOURCES/BOOT.WIM"], &[]));
        assert_eq!(d.initrds, ["BOOTMGR", "BOOT/BCD", "SOURCES/BOOT.WIM"]);
        assert!(d.notes.iter().any(|n| n.contains("boot/boot.sdi")));
    }

    #[test]
    fn unknown_layout_gives_generic_candidates_and_says_so() {
        let d = detect(&input(
            &[
                "isolinux/vmlinuz0",
                "isolinux/initrd0.img",
                "extra/bzImage",
                "readme.txt",
            ],
            &[],
        ));
        assert_eq!(d.family, Family::Unknown);
        assert!(d.generic);
        assert_eq!(d.kernel.as_deref(), Some("isolinux/vmlinuz0"));
        assert_eq!(d.initrds, ["isolinux/initrd0.img"]);
        assert_eq!(d.candidates.len(), 2);
        assert!(d.notes[0].contains("generic scan"));
        let d = detect(&input(&["readme.txt"], &[]));
        assert!(d.generic && d.kernel.is_none() && d.candidates.is_empty());
    }
}
