//! Bootloader files: what the DHCP architecture map hands out and whether each entry
//! points at the right kind of file.
//!
//! - [`analyze`] reads one file: size, SHA-256, kind ([`BootKind`]: a BIOS PXE/UNDI
//!   image by its extension `.kpxe`/`.kkpxe`/`.pxe`/`.0` and a plausible size, or an EFI
//!   application by its PE header: machine type and subsystem, parsed with the `object`
//!   crate) and the iPXE version string where the bytes carry one.
//! - [`check_map`] checks every arch-map entry against [`requirement`] (RFC 4578 §2.1 and
//!   the IANA "Processor Architecture Types" registry: 0 BIOS, 6/15 IA32 EFI, 7/9/16 x86-64
//!   EFI, 10/18 ARM32 EFI, 11/19 AArch64 EFI, 25/27 RISC-V 64 EFI) and lists what is
//!   missing or wrong with the fix. URL entries (UEFI HTTP boot) are checked for their
//!   file under `/boot/` when they point at this server (`{server}` or the configured HTTP
//!   base URL's host), else listed as remote.
//! - [`Bootloaders`] is the service the API uses: it reads the effective arch map from
//!   [`DhcpControl::arch_map`] and the live boot root from the settings.

use std::{
    collections::BTreeMap,
    io::Read,
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::Serialize;
use utoipa::ToSchema;

use super::{
    files::sha256_file,
    paths::{resolve, Follow},
};
use crate::settings::Settings;
pub use bootlane_boot::boot::binary::{authenticode, ipxe_version};
use bootlane_core::service_error::ServiceError;
use bootlane_dhcp::dhcp::control::DhcpControl;

/// BIOS PXE images are loaded below 640 KiB; anything of 1 MiB or more is not one.
pub const MAX_PXE_SIZE: u64 = 1 << 20;
/// Files up to this size are searched for an iPXE version string.
pub const MAX_VERSION_SCAN: u64 = 64 << 20;
/// `IMAGE_SUBSYSTEM_EFI_APPLICATION` (PE/COFF specification, "Windows Subsystem").
pub const EFI_APPLICATION: u16 = 10;

/// What a boot file is.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BootKind {
    /// A BIOS PXE/UNDI network bootstrap program (`.kpxe`, `.kkpxe`, `.pxe`, `.0`).
    BiosPxe,
    /// A PE image with the EFI application subsystem.
    EfiApplication,
    /// A PE image of another subsystem (e.g. an EFI driver or a Windows program).
    PeOther,
    /// Neither.
    Unknown,
}

/// The analysis of one boot file.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BootFileInfo {
    /// Path relative to the boot root.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lower-case hex SHA-256 of the content.
    pub sha256: String,
    /// `bios_pxe`, `efi_application`, `pe_other` or `unknown`.
    pub kind: BootKind,
    /// PE machine type as a number (0x8664 x86-64, 0xAA64 AArch64, 0x14C i386, 0x1C2 ARM).
    pub machine: Option<u16>,
    /// PE machine type by name (`x86_64`, `aarch64`, `i386`, `arm`, `riscv64`, or hex).
    pub machine_name: Option<String>,
    /// iPXE version found in the bytes (e.g. `1.0.0+git-20190125.36a4c85-5.1`); none
    /// for compressed images such as `undionly.kpxe`.
    pub ipxe_version: Option<String>,
    /// For a PE image: whether it carries an Authenticode signature ([`authenticode`]),
    /// which Secure Boot needs; `null` for other files.
    pub authenticode_signed: Option<bool>,
    /// Why the file does not look like what its name says (e.g. a `.kpxe` of 2 MiB).
    pub problems: Vec<String>,
}

/// The kind of file an architecture code needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// A BIOS PXE image.
    BiosPxe,
    /// An EFI application for one of these PE machine types.
    Efi(&'static [u16]),
}

/// PE machine types (PE/COFF specification, "Machine Types").
pub mod machine {
    /// Intel 386.
    pub const I386: u16 = 0x14c;
    /// x64.
    pub const AMD64: u16 = 0x8664;
    /// ARM Thumb-2 little endian (EFI on 32-bit ARM).
    pub const ARMNT: u16 = 0x1c4;
    /// ARM little endian.
    pub const ARM: u16 = 0x1c2;
    /// ARM64 little endian.
    pub const ARM64: u16 = 0xaa64;
    /// RISC-V 64-bit.
    pub const RISCV64: u16 = 0x5064;
}

/// A PE machine type's short name.
pub fn machine_name(m: u16) -> String {
    match m {
        machine::I386 => "i386".into(),
        machine::AMD64 => "x86_64".into(),
        machine::ARM | machine::ARMNT => "arm".into(),
        machine::ARM64 => "aarch64".into(),
        machine::RISCV64 => "riscv64".into(),
        other => format!("{other:#06x}"),
    }
}

/// What architecture code `arch` (RFC 4578 option 93) needs, if Bootlane knows it.
pub fn requirement(arch: u16) -> Option<Requirement> {
    Some(match arch {
        0 => Requirement::BiosPxe,
        6 | 15 => Requirement::Efi(&[machine::I386]),
        7 | 9 | 16 => Requirement::Efi(&[machine::AMD64]),
        10 | 18 => Requirement::Efi(&[machine::ARM, machine::ARMNT]),
        11 | 19 => Requirement::Efi(&[machine::ARM64]),
        25 | 27 => Requirement::Efi(&[machine::RISCV64]),
        _ => return None,
    })
}

fn describe(r: Requirement) -> String {
    match r {
        Requirement::BiosPxe => "a BIOS PXE image such as undionly.kpxe".into(),
        Requirement::Efi(ms) => format!("an EFI application for {}", {
            // ARM and ARM Thumb-2 share a name: say it once.
            let mut names: Vec<String> = ms.iter().map(|m| machine_name(*m)).collect();
            names.dedup();
            names.join(" or ")
        }),
    }
}

/// The PE machine type and subsystem of `head` (the file's first bytes), if it is a PE.
fn pe_header(head: &[u8]) -> Option<(u16, u16)> {
    use object::{
        pe::{ImageDosHeader, ImageNtHeaders32, ImageNtHeaders64},
        read::pe::{ImageNtHeaders, ImageOptionalHeader},
        FileKind, LittleEndian as LE,
    };
    fn parse<H: ImageNtHeaders>(head: &[u8]) -> Option<(u16, u16)> {
        let dos = ImageDosHeader::parse(head).ok()?;
        let mut off = dos.nt_headers_offset().into();
        let (nt, _) = H::parse(head, &mut off).ok()?;
        Some((nt.file_header().machine.get(LE), nt.optional_header().subsystem()))
    }
    match FileKind::parse(head).ok()? {
        FileKind::Pe32 => parse::<ImageNtHeaders32>(head),
        FileKind::Pe64 => parse::<ImageNtHeaders64>(head),
        _ => None,
    }
}

/// Analyses the file at `path` (shown as `shown`).
///
/// # Errors
/// Reading the file.
pub fn analyze(path: &Path, shown: &str) -> std::io::Result<BootFileInfo> {
    let size = std::fs::metadata(path)?.len();
    let mut head = Vec::with_capacity(64 << 10);
    std::fs::File::open(path)?.take(64 << 10).read_to_end(&mut head)?;
    let pe = pe_header(&head);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let mut problems = Vec::new();
    let kind = match pe {
        Some((_, EFI_APPLICATION)) => BootKind::EfiApplication,
        Some((_, sub)) => {
            problems.push(format!("a PE image of subsystem {sub}, not an EFI application (10)"));
            BootKind::PeOther
        }
        None if matches!(ext.as_str(), "kpxe" | "kkpxe" | "pxe" | "0") => {
            if size == 0 || size >= MAX_PXE_SIZE {
                problems.push(format!(
                    "{size} bytes is not a plausible BIOS PXE image (must be 1 byte to 1 MiB)"
                ));
                BootKind::Unknown
            } else if head.starts_with(b"\x7fELF") || head.starts_with(b"MZ") {
                problems.push("an ELF or DOS executable, not a PXE image".into());
                BootKind::Unknown
            } else {
                BootKind::BiosPxe
            }
        }
        None => BootKind::Unknown,
    };
    if kind != BootKind::EfiApplication && ext == "efi" && pe.is_none() {
        problems.push("named .efi but not a PE image".into());
    }
    let ipxe = if size <= MAX_VERSION_SCAN {
        ipxe_version(&std::fs::read(path)?)
    } else {
        None
    };
    Ok(BootFileInfo {
        path: shown.to_string(),
        size,
        sha256: sha256_file(path)?,
        kind,
        machine: pe.map(|p| p.0),
        machine_name: pe.map(|p| machine_name(p.0)),
        ipxe_version: ipxe,
        authenticode_signed: if pe.is_some() { authenticode(path)? } else { None },
        problems,
    })
}

/// Where an arch-map entry's file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A path under the boot root (TFTP file name, or a URL to this server's `/boot/`).
    Local(String),
    /// A URL to another server: not checked.
    Remote(String),
}

/// Where entry `value` points: a TFTP file name, or an `http(s)://` URL that is local when
/// its host is `{server}` (filled in per client with this server's address) or the host of
/// `http_base` and its path starts with `/boot/`.
pub fn target_of(value: &str, http_base: Option<&str>) -> Target {
    let lower = value.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Target::Local(value.trim_start_matches('/').to_string());
    }
    let filled = value
        .replace("{server}", "bootlane-self.invalid")
        .replace("{http_port}", "80");
    let Ok(url) = url::Url::parse(&filled) else {
        return Target::Remote(value.to_string());
    };
    let host = url.host_str().unwrap_or_default();
    let base_host = http_base
        .and_then(|b| url::Url::parse(b).ok())
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    let ours = host == "bootlane-self.invalid" || base_host.as_deref() == Some(host);
    match url.path().strip_prefix("/boot/") {
        Some(p) if ours && !p.is_empty() => Target::Local(percent_decode(p).unwrap_or_else(|| p.to_string())),
        _ => Target::Remote(value.to_string()),
    }
}

fn percent_decode(p: &str) -> Option<String> {
    let bytes = p.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let h = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Result of one arch-map entry in `GET /bootloader/check`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EntryCheck {
    /// Architecture code (RFC 4578 option 93).
    pub arch: u16,
    /// The arch-map value (file name or URL).
    pub value: String,
    /// What the code needs, in words (none for codes without a rule).
    pub needs: Option<String>,
    /// `ok`, `missing`, `wrong_kind`, `invalid_path`, `remote` (a URL to another server,
    /// not checked) or `unchecked` (no rule for this code; the file exists).
    pub status: String,
    /// The file's analysis when it exists.
    pub file: Option<BootFileInfo>,
    /// What is wrong and how to fix it (none when `ok`).
    pub fix: Option<String>,
}

/// `GET /bootloader/check` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckReport {
    /// True when no entry is `missing`, `wrong_kind` or `invalid_path`.
    pub ok: bool,
    /// One result per arch-map entry, by code.
    pub entries: Vec<EntryCheck>,
}

fn entry_check(root: &Path, arch: u16, value: &str, http_base: Option<&str>) -> EntryCheck {
    let need = requirement(arch);
    let mut out = EntryCheck {
        arch,
        value: value.to_string(),
        needs: need.map(describe),
        status: "ok".into(),
        file: None,
        fix: None,
    };
    let rel = match target_of(value, http_base) {
        Target::Remote(_) => {
            out.status = "remote".into();
            return out;
        }
        Target::Local(p) => p,
    };
    let put = |out: &mut EntryCheck, status: &str, fix: String| {
        out.status = status.into();
        out.fix = Some(fix);
    };
    let path = match resolve(root, &rel, Follow::All) {
        Ok(p) if p.is_file() => p,
        Ok(_) => {
            put(&mut out, "missing", format!("{rel:?} is not a regular file; put {} there or change arch map entry {arch} (PUT /api/v1/services/archmap)", need.map_or_else(|| "the boot file".into(), describe)));
            return out;
        }
        Err(super::paths::PathError::NotFound(_)) => {
            put(&mut out, "missing", format!("{rel:?} does not exist in the boot root; upload {} there (POST /api/v1/files/upload) or change arch map entry {arch} (PUT /api/v1/services/archmap)", need.map_or_else(|| "the boot file".into(), describe)));
            return out;
        }
        Err(e) => {
            put(
                &mut out,
                "invalid_path",
                format!("{e}; change arch map entry {arch} to a file name under the boot root"),
            );
            return out;
        }
    };
    let info = match analyze(&path, &rel) {
        Ok(i) => i,
        Err(e) => {
            put(
                &mut out,
                "missing",
                format!("{rel:?} cannot be read ({e}); fix its permissions"),
            );
            return out;
        }
    };
    match need {
        None => out.status = "unchecked".into(),
        Some(Requirement::BiosPxe) if info.kind != BootKind::BiosPxe => put(
            &mut out,
            "wrong_kind",
            format!(
                "{rel:?} is {}, but architecture {arch} needs {}; point entry {arch} at undionly.kpxe",
                kind_words(&info),
                describe(Requirement::BiosPxe)
            ),
        ),
        Some(Requirement::Efi(ms))
            if info.kind != BootKind::EfiApplication || !info.machine.is_some_and(|m| ms.contains(&m)) =>
        {
            put(
                &mut out,
                "wrong_kind",
                format!(
                    "{rel:?} is {}, but architecture {arch} needs {}; upload the matching iPXE build (e.g. ipxe-{}.efi) and point entry {arch} at it",
                    kind_words(&info),
                    describe(Requirement::Efi(ms)),
                    machine_name(ms[0]).replace("x86_64", "x64"),
                ),
            )
        }
        Some(_) => {}
    }
    out.file = Some(info);
    out
}

fn kind_words(i: &BootFileInfo) -> String {
    match (i.kind, &i.machine_name) {
        (BootKind::EfiApplication, Some(m)) => format!("an EFI application for {m}"),
        (BootKind::BiosPxe, _) => "a BIOS PXE image".into(),
        (BootKind::PeOther, Some(m)) => format!("a PE image for {m} that is not an EFI application"),
        _ => "not a recognised boot file".into(),
    }
}

/// Checks every entry of `map` against the files under `root`.
pub fn check_map(root: &Path, map: &BTreeMap<u16, String>, http_base: Option<&str>) -> CheckReport {
    let entries: Vec<EntryCheck> = map
        .iter()
        .map(|(arch, v)| entry_check(root, *arch, v, http_base))
        .collect();
    CheckReport {
        ok: entries
            .iter()
            .all(|e| !matches!(e.status.as_str(), "missing" | "wrong_kind" | "invalid_path")),
        entries,
    }
}

/// One file of `GET /bootloader/files`: the analysis with the arch codes that hand it out.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MappedFile {
    /// Architecture codes whose entry names this file.
    pub arches: Vec<u16>,
    /// The analysis.
    #[serde(flatten)]
    pub info: BootFileInfo,
}

/// The bootloader service: the effective arch map and the live boot root.
pub struct Bootloaders {
    dhcp: Arc<DhcpControl>,
    settings: Arc<Settings>,
}

impl Bootloaders {
    /// A service over `dhcp`'s arch map and `settings`' boot root and HTTP base URL.
    pub fn new(dhcp: Arc<DhcpControl>, settings: Arc<Settings>) -> Arc<Self> {
        Arc::new(Self { dhcp, settings })
    }

    fn root(&self) -> PathBuf {
        self.settings.boot_root()
    }

    /// Every local file the arch map can hand out that exists, analysed, by path.
    ///
    /// # Errors
    /// Reading a file failed.
    pub async fn files(&self) -> Result<Vec<MappedFile>, ServiceError> {
        let (root, map, base) = (self.root(), self.dhcp.arch_map(), self.settings.http_base_url());
        tokio::task::spawn_blocking(move || {
            let mut by_path: BTreeMap<String, Vec<u16>> = BTreeMap::new();
            for (arch, v) in &map {
                if let Target::Local(p) = target_of(v, base.as_deref()) {
                    by_path.entry(p).or_default().push(*arch);
                }
            }
            let mut out = Vec::new();
            for (p, arches) in by_path {
                let Ok(path) = resolve(&root, &p, Follow::All) else {
                    continue;
                };
                if !path.is_file() {
                    continue;
                }
                let info = analyze(&path, &p).map_err(|e| ServiceError::io(format!("reading {p}"), e))?;
                out.push(MappedFile { arches, info });
            }
            Ok(out)
        })
        .await
        .map_err(|e| ServiceError::io("a file-system task failed", std::io::Error::other(e)))?
    }

    /// Checks every arch-map entry ([`check_map`]).
    pub async fn check(&self) -> CheckReport {
        let (root, map, base) = (self.root(), self.dhcp.arch_map(), self.settings.http_base_url());
        tokio::task::spawn_blocking(move || check_map(&root, &map, base.as_deref()))
            .await
            .unwrap_or(CheckReport {
                ok: false,
                entries: Vec::new(),
            })
    }

    /// Analyses one file under the boot root (`path` as in [`resolve`]).
    ///
    /// # Errors
    /// A refused path (400), missing or not a regular file (404), I/O.
    pub async fn check_file(&self, path: &str) -> Result<BootFileInfo, ServiceError> {
        let root = self.root();
        let p = resolve(&root, path, Follow::All)?;
        if !p.is_file() {
            return Err(ServiceError::NotFound(format!(
                "{path:?} is not a regular file under the boot root"
            )));
        }
        let shown = path.trim_end_matches('/').to_string();
        tokio::task::spawn_blocking(move || {
            analyze(&p, &shown).map_err(|e| ServiceError::io(format!("reading {shown}"), e))
        })
        .await
        .map_err(|e| ServiceError::io("a file-system task failed", std::io::Error::other(e)))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IPXE: &str = "/usr/lib/ipxe";

    /// A temp root with Debian's iPXE builds (skips when the package is missing).
    fn root() -> Option<(tempfile::TempDir, PathBuf)> {
        let src = Path::new(IPXE);
        if !src.join("ipxe.efi").exists() {
            eprintln!("skipping: {IPXE} has no ipxe.efi (apt install ipxe)");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("boot");
        std::fs::create_dir(&root).unwrap();
        for f in ["undionly.kpxe", "ipxe.efi", "snponly.efi"] {
            std::fs::copy(src.join(f), root.join(f)).unwrap();
        }
        Some((tmp, root))
    }

    #[test]
    fn real_ipxe_builds_are_recognised() {
        let Some((_t, root)) = root() else { return };
        let efi = analyze(&root.join("ipxe.efi"), "ipxe.efi").unwrap();
        assert_eq!(efi.kind, BootKind::EfiApplication);
        assert_eq!(efi.machine, Some(0x8664));
        assert_eq!(efi.machine_name.as_deref(), Some("x86_64"));
        let v = efi.ipxe_version.clone().expect("ipxe.efi carries its version");
        assert!(v.starts_with(|c: char| c.is_ascii_digit()) && v.contains('.'), "{v}");
        assert_eq!(efi.sha256, sha256_file(&root.join("ipxe.efi")).unwrap());
        assert!(efi.problems.is_empty());
        let snp = analyze(&root.join("snponly.efi"), "snponly.efi").unwrap();
        assert_eq!((snp.kind, snp.machine), (BootKind::EfiApplication, Some(0x8664)));
        let bios = analyze(&root.join("undionly.kpxe"), "undionly.kpxe").unwrap();
        assert_eq!((bios.kind, bios.machine), (BootKind::BiosPxe, None));
        // A .kpxe that is too big, and a .efi that is not a PE.
        std::fs::write(root.join("big.kpxe"), vec![0u8; 2 << 20]).unwrap();
        let big = analyze(&root.join("big.kpxe"), "big.kpxe").unwrap();
        assert_eq!(big.kind, BootKind::Unknown);
        assert!(big.problems[0].contains("plausible"));
        std::fs::write(root.join("fake.efi"), b"#!ipxe\n").unwrap();
        let fake = analyze(&root.join("fake.efi"), "fake.efi").unwrap();
        assert_eq!(fake.kind, BootKind::Unknown);
        assert!(!fake.problems.is_empty());
    }

    #[test]
    fn the_check_finds_missing_and_wrong_files() {
        let Some((_t, root)) = root() else { return };
        // An x86-64 EFI build placed at the ARM64 entry.
        std::fs::copy(root.join("ipxe.efi"), root.join("ipxe-arm64.efi")).unwrap();
        let map: BTreeMap<u16, String> = [
            (0, "undionly.kpxe"),
            (6, "ipxe32.efi"),
            (7, "ipxe.efi"),
            (9, "snponly.efi"),
            (11, "ipxe-arm64.efi"),
            (16, "http://{server}:{http_port}/boot/ipxe.efi"),
            (19, "http://mirror.example.org/ipxe-arm64.efi"),
            (20, "undionly.kpxe"),
            (25, "../etc/passwd"),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
        let r = check_map(&root, &map, None);
        let st: BTreeMap<u16, &str> = r.entries.iter().map(|e| (e.arch, e.status.as_str())).collect();
        assert_eq!(
            st,
            BTreeMap::from([
                (0, "ok"),
                (6, "missing"),
                (7, "ok"),
                (9, "ok"),
                (11, "wrong_kind"),
                (16, "ok"),
                (19, "remote"),
                (20, "unchecked"),
                (25, "invalid_path"),
            ])
        );
        assert!(!r.ok);
        let arm = r.entries.iter().find(|e| e.arch == 11).unwrap();
        let fix = arm.fix.as_deref().unwrap();
        assert!(fix.contains("x86_64") && fix.contains("aarch64"), "{fix}");
        // A BIOS image at an EFI entry, and an EFI image at the BIOS entry.
        let swapped: BTreeMap<u16, String> = [(0, "ipxe.efi"), (7, "undionly.kpxe")]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        let r = check_map(&root, &swapped, None);
        assert!(r.entries.iter().all(|e| e.status == "wrong_kind"), "{r:?}");
        let good: BTreeMap<u16, String> = [(0, "undionly.kpxe"), (7, "ipxe.efi")]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        assert!(check_map(&root, &good, None).ok);
    }

    #[test]
    fn url_targets() {
        assert_eq!(
            target_of("http://{server}:{http_port}/boot/ipxe.efi", None),
            Target::Local("ipxe.efi".into())
        );
        assert_eq!(
            target_of("http://boot.lab:8080/boot/efi/x.efi", Some("http://boot.lab:8080")),
            Target::Local("efi/x.efi".into())
        );
        assert!(matches!(
            target_of("http://other/boot/x.efi", Some("http://boot.lab")),
            Target::Remote(_)
        ));
        assert!(matches!(
            target_of("https://{server}/elsewhere/x.efi", None),
            Target::Remote(_)
        ));
        assert_eq!(target_of("/ipxe.efi", None), Target::Local("ipxe.efi".into()));
        assert_eq!(ipxe_version(b"xx iPXE 1.21.1+ (g1234)"), Some("1.21.1+".into()));
        assert_eq!(
            ipxe_version(b"iPXE\0\0\x001.0.0+git-2019\0"),
            Some("1.0.0+git-2019".into())
        );
        assert_eq!(ipxe_version(b"iPXE configuration settings"), None);
    }
}
