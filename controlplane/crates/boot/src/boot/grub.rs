//! GRUB configuration generated from boot profiles, for UEFI machines that boot the
//! Microsoft-signed shim and Debian's signed network GRUB (`shimx64.efi` →
//! `grubx64.efi`, copied into the boot root by [`super::populate_secure_boot`]).
//!
//! Debian's signed network GRUB (`grubnetx64.efi.signed`) has the built-in prefix
//! `(tftp,<next-server>)/grub` and asks for `grub/grub.cfg` only (measured under OVMF with
//! Secure Boot on: no per-MAC or per-address names; upstream GRUB 2.12 adds
//! `grub.cfg-01-<mac>` and hex-IP names, which Bootlane answers too). So Bootlane serves,
//! without writing anything to disk ([`generate`]):
//! - `grub/grub.cfg` for every machine: it sends GRUB to the machine's own file by its MAC
//!   (`configfile $prefix/grub.cfg-$net_default_mac`, GRUB's lower-case colon-separated
//!   spelling), and carries the default profile's menu after that line as the fallback for
//!   a GRUB that has no `net_default_mac`;
//! - `grub/grub.cfg-<mac>` (colons) and `grub/grub.cfg-01-<mac>` (dashes, upstream's name)
//!   for any MAC: a registered host's profile menu, else the default profile's;
//! - nothing else (hex-IP and UUID names are "file not found").
//!
//! The same names are answered in any directory called `grub`: the d-i sets' GRUB images
//! (the ARM64 `grubaa64.efi` among them) have the prefix `/debian-installer/<arch>/grub`.
//!
//! A file of the same name in the boot directory wins over the generated one, as for
//! PXELINUX.
//!
//! What [`render`] writes for each entry type: `local` → `exit` (back to the firmware,
//! which tries its next boot option); `linux` → `linux` with the command line, one
//! `initrd` line with every initrd, paths in the boot directory (and URLs of this server's
//! own `/boot/` tree) loaded from GRUB's root (`(tftp,<server>)`), `tftp://host/path` from
//! `(tftp,host)/path`; `chain` → `chainloader` for an EFI binary loaded the same way;
//! `sanboot`, `custom` (iPXE commands) and other `http(s)://` URLs (Debian's signed GRUB
//! has no HTTP module and cannot load one under Secure Boot) become a comment saying why
//! they are left out. Command-line words GRUB would expand (`$`,
//! quotes, `;`, braces) are single-quoted so the kernel gets them as written. The timeout
//! is in seconds; a profile's 0 ("wait for a choice") is GRUB's `-1`.
//!
//! [`secure_boot_findings`] says, per entry, what cannot work under Secure Boot (an
//! unsigned kernel, iPXE, anything not signed), for the profile preview.
//!
//! Holds no state of its own.

use std::path::Path;

use serde::Serialize;
use utoipa::ToSchema;

use super::catalog::{BootCatalog, EntryType, MenuEntry, Profile, BASE_URL_VAR};
use super::generated::{Generated, Loader};
use bootlane_core::{escape::grub_word, net::types::MacAddr, service_error::ServiceError};

/// The directory GRUB's prefix names, under the boot root.
pub const GRUB_DIR: &str = "grub";

/// A configuration file name GRUB asks for (or is sent to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfgName {
    /// `grub.cfg`: the entry point every machine loads.
    Main,
    /// `grub.cfg-<mac>` or `grub.cfg-01-<mac>`.
    Mac(MacAddr),
    /// Another `grub.cfg-...` name (hex IP, UUID): never generated.
    Other,
}

/// Reads `path` (TFTP or HTTP, `\` or `/`, with or without a leading `/`) as a GRUB
/// configuration name in a directory named [`GRUB_DIR`]: `grub/` at the root (Debian's
/// `grubnetx64.efi.signed`) or below another directory (the d-i sets' GRUB images have the
/// prefix `/debian-installer/<arch>/grub`); `None` when it is not one.
pub fn parse_cfg_path(path: &str) -> Option<CfgName> {
    let p = path.replace('\\', "/");
    let (dir, name) = p.trim_start_matches('/').rsplit_once('/')?;
    if dir.rsplit('/').next()? != GRUB_DIR {
        return None;
    }
    if name == "grub.cfg" {
        return Some(CfgName::Main);
    }
    let rest = name.strip_prefix("grub.cfg-")?;
    let mac = rest.strip_prefix("01-").unwrap_or(rest);
    let ok = mac.len() == 17 && (mac.split(':').count() == 6 || mac.split('-').count() == 6);
    let mac = ok.then(|| bootlane_core::net::types::normalise_mac(mac).ok()).flatten();
    Some(mac.map_or(CfgName::Other, CfgName::Mac))
}

/// `grub/grub.cfg-<mac>`: the name the generated `grub.cfg` sends `mac` to.
pub fn mac_file_name(mac: MacAddr) -> String {
    format!("{GRUB_DIR}/grub.cfg-{mac}")
}

/// Where GRUB loads `p` from (`base_url`: this server's HTTP base URL, no trailing `/`):
/// a boot-directory path, or a URL of this server's `/boot/` tree, from GRUB's root over
/// TFTP (`/path`); `tftp://host/path` from `(tftp,host)/path`. `Err` with the reason for
/// any other URL: Debian 12's signed network GRUB has no `http` module built in and cannot
/// load one under Secure Boot (`(http,host)` is "disk not found", measured on ports 80 and
/// 8000), and has no TLS.
fn grub_path(p: &str, base_url: &str) -> Result<String, String> {
    if let Some(rest) = p.strip_prefix(&format!("{base_url}/boot/")) {
        return Ok(format!("/{}", rest.trim_start_matches('/')));
    }
    if let Some(rest) = p.strip_prefix("tftp://") {
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() || host.contains(['@', ' ', ')', ',', '(', ':']) {
            return Err(format!("{p:?} is not a TFTP URL GRUB can load (a host without a port)"));
        }
        return Ok(format!("(tftp,{host})/{path}"));
    }
    if p.contains("://") {
        return Err(format!(
            "{p:?} is not in the boot directory, and Debian's signed GRUB loads over TFTP only (no HTTP module, no TLS): put the file in the boot directory"
        ));
    }
    Ok(format!("/{}", p.trim_start_matches('/')))
}

/// Why an entry cannot run under GRUB, or `None` when it can.
fn unsupported(e: &MenuEntry, base_url: &str) -> Option<String> {
    match e.kind {
        EntryType::Local => None,
        EntryType::Linux => match &e.kernel {
            None => Some("it has no kernel".into()),
            Some(k) => std::iter::once(k)
                .chain(&e.initrds)
                .find_map(|p| grub_path(p, base_url).err()),
        },
        EntryType::Chain => match e.url.as_deref().map(|u| grub_path(u, base_url)) {
            None => Some("it has no URL".into()),
            Some(Err(why)) => Some(why),
            Some(Ok(_)) => None,
        },
        EntryType::Sanboot => Some("a sanboot entry runs the iPXE command `sanboot`, which GRUB does not have".into()),
        EntryType::Custom => Some("a custom entry is an iPXE script fragment, which GRUB cannot run".into()),
    }
}

/// The menu entries of `profile` (and its default and timeout) as GRUB commands, shared
/// by the per-MAC files and `grub.cfg`'s fallback.
fn menu(out: &mut String, profile: &Profile, host: Option<&str>, base_url: &str) {
    use std::fmt::Write as _;
    let runnable: Vec<usize> = (0..profile.entries.len())
        .filter(|&i| unsupported(&profile.entries[i], base_url).is_none())
        .collect();
    let wanted = profile.entries.iter().position(|e| e.is_default).unwrap_or(0);
    let default = if runnable.contains(&wanted) {
        format!("e{}", wanted + 1)
    } else if let Some(&i) = runnable.first() {
        let _ = writeln!(
            out,
            "# The profile's default entry e{} cannot run under GRUB; e{} is the default here.",
            wanted + 1,
            i + 1
        );
        format!("e{}", i + 1)
    } else {
        out.push_str("# No entry of this profile can run under GRUB: the default boots from the local disk.\n");
        "local".to_string()
    };
    let timeout = if profile.timeout_secs == 0 {
        "-1".to_string()
    } else {
        profile.timeout_secs.to_string()
    };
    let _ = writeln!(out, "set timeout={timeout}");
    out.push_str("set timeout_style=menu\n");
    let _ = writeln!(out, "set default={default}");
    let title = host.map_or_else(|| profile.name.clone(), |h| format!("{} ({h})", profile.name));
    let _ = writeln!(out, "echo {}", grub_word(&format!("Bootlane: {title}")));
    for (i, e) in profile.entries.iter().enumerate() {
        let key = format!("e{}", i + 1);
        out.push('\n');
        if let Some(why) = unsupported(e, base_url) {
            let _ = writeln!(out, "# {key} {:?} is left out: {why}.", e.label);
            continue;
        }
        let _ = writeln!(out, "menuentry {} --id {key} {{", grub_word(&e.label));
        match e.kind {
            EntryType::Linux => {
                let kernel = e
                    .kernel
                    .as_deref()
                    .and_then(|k| grub_path(k, base_url).ok())
                    .unwrap_or_default();
                let _ = writeln!(out, "  echo {}", grub_word(&format!("Loading {}", e.label)));
                // Paths are quoted like every other word: a kernel named `vmlinuz;reboot`
                // passes the profile checks (they are iPXE's rules) and would have run
                // `reboot` in GRUB.
                let mut line = format!("  linux {}", grub_word(&kernel));
                if let Some(c) = e.cmdline.as_deref().map(|c| c.replace(BASE_URL_VAR, base_url)) {
                    for w in c.split_whitespace() {
                        line.push(' ');
                        line.push_str(&grub_word(w));
                    }
                }
                let _ = writeln!(out, "{line}");
                if !e.initrds.is_empty() {
                    let list: Vec<String> = e
                        .initrds
                        .iter()
                        .filter_map(|r| grub_path(r, base_url).ok())
                        .map(|p| grub_word(&p))
                        .collect();
                    let _ = writeln!(out, "  initrd {}", list.join(" "));
                }
            }
            EntryType::Chain => {
                let target = e
                    .url
                    .as_deref()
                    .and_then(|u| grub_path(u, base_url).ok())
                    .unwrap_or_default();
                let _ = writeln!(out, "  chainloader {}", grub_word(&target));
            }
            _ => out.push_str("  exit\n"),
        }
        out.push_str("}\n");
    }
    if default == "local" {
        out.push_str("\nmenuentry 'Boot from local disk' --id local {\n  exit\n}\n");
    }
}

/// The GRUB configuration of `profile` for `mac` (`None`: the fallback in `grub.cfg`) of
/// the registered host `host`; `base_url` replaces [`BASE_URL_VAR`] in command lines (no
/// trailing `/`). Entry ids (`e1`, `e2`, ...) are the iPXE script's item keys.
pub fn render(profile: &Profile, mac: Option<MacAddr>, host: Option<&str>, base_url: &str) -> String {
    use std::fmt::Write as _;
    let who = match (mac, host) {
        (Some(m), Some(h)) => format!("{m} (host {h})"),
        (Some(m), None) => format!("{m} (not a registered host: the default profile)"),
        (None, _) => "machines without a file of their own".to_string(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Bootlane: GRUB configuration for {who}, profile {:?}.",
        profile.name
    );
    out.push_str("# Generated from the profile on every request (not a file on disk): edit the profile instead.\n");
    menu(&mut out, profile, host, base_url);
    out
}

/// `grub/grub.cfg`: loads the machine's own file by MAC, then (only reached when GRUB has
/// no `net_default_mac` or the file cannot be read) the default profile's menu.
pub fn render_main(default_profile: &Profile, base_url: &str) -> String {
    let mut out = String::from(
        "# Bootlane: GRUB entry point for every machine (generated; not a file on disk).\n\
         # Each machine's menu is in grub.cfg-<its MAC>, made from its host's profile.\n\
         if [ -n \"$net_default_mac\" ]; then\n  configfile \"$prefix/grub.cfg-$net_default_mac\"\nfi\n\
         # Reached only without a per-machine file: the default profile.\n",
    );
    let _ = std::fmt::Write::write_fmt(&mut out, format_args!("# Profile {:?}.\n", default_profile.name));
    menu(&mut out, default_profile, None, base_url);
    out
}

/// The configuration for `path` (see the module documentation), or `None` when Bootlane
/// generates no file of that name. `base_url` as in [`render`].
///
/// # Errors
/// Store errors reading hosts and profiles.
pub fn generate(catalog: &BootCatalog, path: &str, base_url: &str) -> Result<Option<Generated>, ServiceError> {
    match parse_cfg_path(path) {
        None | Some(CfgName::Other) => Ok(None),
        Some(CfgName::Main) => {
            let profile = catalog.default_profile()?;
            Ok(Some(Generated {
                text: render_main(&profile, base_url),
                profile: profile.name,
                host: None,
                mac: None,
                loader: Loader::Grub,
            }))
        }
        Some(CfgName::Mac(m)) => {
            let (profile, host) = catalog.profile_and_host_for(Some(m))?;
            let host = host.map(|h| h.name);
            Ok(Some(Generated {
                text: render(&profile, Some(m), host.as_deref(), base_url),
                profile: profile.name,
                host,
                mac: Some(m),
                loader: Loader::Grub,
            }))
        }
    }
}

/// One finding of [`secure_boot_findings`].
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct SecureBootFinding {
    /// The entry's key (`e1`, `e2`, ...).
    pub entry: String,
    /// The entry's label.
    pub label: String,
    /// `ok`: signed files only; `blocked`: the firmware or shim will refuse it;
    /// `unchecked`: a file Bootlane cannot look at (a URL).
    pub verdict: SecureBootVerdict,
    /// What was found, naming the file.
    pub detail: String,
}

/// Whether an entry can run with Secure Boot enforced.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SecureBootVerdict {
    /// Every file it loads carries an Authenticode signature (the signer is not checked
    /// against the firmware's or shim's keys here).
    Ok,
    /// It cannot run under Secure Boot.
    Blocked,
    /// It loads a file Bootlane cannot inspect (a URL).
    Unchecked,
}

/// Per entry of `profile`, whether it can run under Secure Boot behind shim and signed
/// GRUB: kernels and chain-loaded EFI binaries in the boot directory (`root`) must carry an
/// Authenticode signature (PE/COFF attribute certificate table, read with
/// [`super::binary::authenticode`]); iPXE entries (`sanboot`, `custom`) and
/// iPXE binaries cannot run at all; what the GRUB menu leaves out (HTTP(S) URLs of other
/// servers: signed GRUB loads over TFTP only) is `blocked`; `tftp://` URLs of other servers
/// are `unchecked` (URLs of this server's `/boot/` tree, `base_url` as in [`render`], are
/// its files). Initrds are not signed objects (GRUB hands them to the kernel as data), but
/// one GRUB cannot load blocks its entry.
pub fn secure_boot_findings(profile: &Profile, root: &Path, base_url: &str) -> Vec<SecureBootFinding> {
    use super::binary::{authenticode, ipxe_version};
    let own = format!("{base_url}/boot/");
    let check = |p: &str, what: &str| -> (SecureBootVerdict, String) {
        // What the GRUB menu leaves out cannot run: the same rule as `render`.
        if let Err(why) = grub_path(p, base_url) {
            return (SecureBootVerdict::Blocked, format!("the {what} {why}"));
        }
        let p = p.strip_prefix(own.as_str()).unwrap_or(p);
        if p.contains("://") {
            return (
                SecureBootVerdict::Unchecked,
                format!("the {what} {p} is on another TFTP server: its signature cannot be checked here"),
            );
        }
        let file = match super::resolve_in_root(root, p) {
            Ok(f) => f,
            Err(e) => return (SecureBootVerdict::Blocked, format!("the {what} {p}: {e}")),
        };
        match authenticode(&file) {
            Ok(Some(true)) => {
                let ipxe = std::fs::read(&file).ok().and_then(|b| ipxe_version(&b));
                match ipxe {
                    Some(v) => (SecureBootVerdict::Ok, format!("the {what} {p} is a signed iPXE {v}")),
                    None => (
                        SecureBootVerdict::Ok,
                        format!("the {what} {p} carries an Authenticode signature"),
                    ),
                }
            }
            Ok(Some(false)) => {
                let ipxe = std::fs::read(&file).ok().and_then(|b| ipxe_version(&b));
                let kind = ipxe.map_or_else(|| "unsigned".to_string(), |v| format!("an unsigned iPXE {v}"));
                (
                    SecureBootVerdict::Blocked,
                    format!("the {what} {p} is {kind}: shim and the firmware refuse it under Secure Boot"),
                )
            }
            Ok(None) => (
                SecureBootVerdict::Blocked,
                format!(
                    "the {what} {p} is not a PE image (an EFI-stub kernel or EFI binary is needed under Secure Boot)"
                ),
            ),
            Err(e) => (
                SecureBootVerdict::Blocked,
                format!("the {what} {p} cannot be read: {e}"),
            ),
        }
    };
    profile
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (verdict, detail) = match e.kind {
                EntryType::Local => (
                    SecureBootVerdict::Ok,
                    "boots from the local disk through the firmware".into(),
                ),
                EntryType::Linux => match e.kernel.as_deref() {
                    Some(k) => match e.initrds.iter().find_map(|i| grub_path(i, base_url).err()) {
                        Some(why) => (SecureBootVerdict::Blocked, format!("the initrd {why}")),
                        None => check(k, "kernel"),
                    },
                    None => (SecureBootVerdict::Blocked, "it has no kernel".into()),
                },
                EntryType::Chain => match e.url.as_deref() {
                    Some(u) => check(u, "chain-loaded binary"),
                    None => (SecureBootVerdict::Blocked, "it has no URL".into()),
                },
                EntryType::Sanboot | EntryType::Custom => (
                    SecureBootVerdict::Blocked,
                    "it needs iPXE, which is not signed for Secure Boot (shim boots GRUB instead)".into(),
                ),
            };
            SecureBootFinding {
                entry: format!("e{}", i + 1),
                label: e.label.clone(),
                verdict,
                detail,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_menu::{entry, profile};
    use super::*;

    #[test]
    fn names() {
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        assert_eq!(mac_file_name(m), "grub/grub.cfg-52:54:00:77:00:42");
        assert_eq!(parse_cfg_path("grub/grub.cfg"), Some(CfgName::Main));
        assert_eq!(parse_cfg_path("/grub/grub.cfg"), Some(CfgName::Main));
        assert_eq!(parse_cfg_path("grub\\grub.cfg"), Some(CfgName::Main));
        assert_eq!(parse_cfg_path("grub/grub.cfg-52:54:00:77:00:42"), Some(CfgName::Mac(m)));
        assert_eq!(
            parse_cfg_path("grub/grub.cfg-01-52-54-00-77-00-42"),
            Some(CfgName::Mac(m))
        );
        assert_eq!(
            parse_cfg_path("grub/grub.cfg-01-52-54-00-77-00-4A"),
            Some(CfgName::Mac("52:54:00:77:00:4a".parse().unwrap()))
        );
        assert_eq!(parse_cfg_path("grub/grub.cfg-0A4D0064"), Some(CfgName::Other));
        assert_eq!(parse_cfg_path("grub/grub.cfg-52:54:00"), Some(CfgName::Other));
        assert_eq!(parse_cfg_path("grub/x86_64-efi/command.lst"), None);
        assert_eq!(parse_cfg_path("grub.cfg"), None);
        assert_eq!(
            parse_cfg_path("debian-installer/arm64/grub/grub.cfg"),
            Some(CfgName::Main)
        );
        assert_eq!(
            parse_cfg_path("/debian-installer/arm64/grub/grub.cfg-52:54:00:77:00:42"),
            Some(CfgName::Mac(m))
        );
        assert_eq!(parse_cfg_path("grub/sub/grub.cfg"), None);
        assert_eq!(parse_cfg_path("grubby/grub.cfg"), None);
    }

    /// Found while writing the `render` fuzz target's GRUB oracle: a kernel, initrd or
    /// chain path the profile checks accept (they follow iPXE's rules, where `;` inside a
    /// word is harmless) was written unquoted, so GRUB ran what followed a `;`.
    #[test]
    fn regression_fuzz_paths_cannot_add_grub_commands() {
        let mut linux = entry("Installer", EntryType::Linux);
        linux.kernel = Some("vmlinuz;reboot".into());
        linux.initrds = vec!["initrd|halt".into()];
        let mut chain = entry("Chain", EntryType::Chain);
        chain.url = Some("tftp://10.77.0.5/x&&reboot".into());
        let t = render(&profile(5, vec![linux, chain]), None, None, "http://10.77.0.1:8080");
        assert!(t.contains("  linux '/vmlinuz;reboot'\n"), "{t}");
        assert!(t.contains("  initrd '/initrd|halt'\n"), "{t}");
        assert!(t.contains("  chainloader '(tftp,10.77.0.5)/x&&reboot'\n"), "{t}");
    }

    #[test]
    fn entries_default_timeout_and_local_boot() {
        let mut linux = entry("Debian installer", EntryType::Linux);
        linux.kernel = Some("d-i/linux".into());
        linux.initrds = vec![
            "/d-i/initrd.gz".into(),
            "http://10.77.0.1:8080/boot/fw.cpio.gz".into(),
            "tftp://10.77.0.5/d-i/extra.gz".into(),
        ];
        linux.cmdline = Some("console=ttyS0 url={base_url}/preseed?x=1 priority=critical".into());
        linux.is_default = true;
        let p = profile(5, vec![entry("Local disk", EntryType::Local), linux]);
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        let t = render(&p, Some(m), Some("node1"), "http://10.77.0.1:8080");
        assert!(
            t.starts_with("# Bootlane: GRUB configuration for 52:54:00:77:00:42 (host node1), profile \"lab\".\n"),
            "{t}"
        );
        assert!(
            t.contains("set timeout=5\nset timeout_style=menu\nset default=e2\necho 'Bootlane: lab (node1)'\n"),
            "{t}"
        );
        assert!(t.contains("\nmenuentry 'Local disk' --id e1 {\n  exit\n}\n"), "{t}");
        assert!(
            t.contains("\nmenuentry 'Debian installer' --id e2 {\n  echo 'Loading Debian installer'\n  linux /d-i/linux console=ttyS0 'url=http://10.77.0.1:8080/preseed?x=1' priority=critical\n  initrd /d-i/initrd.gz /fw.cpio.gz '(tftp,10.77.0.5)/d-i/extra.gz'\n}\n"),
            "{t}"
        );
        // 0 waits for a choice.
        let t = render(
            &profile(0, vec![entry("Local", EntryType::Local)]),
            None,
            None,
            "http://x",
        );
        assert!(t.contains("set timeout=-1\n"), "{t}");
        assert!(t.contains("for machines without a file of their own"), "{t}");
    }

    #[test]
    fn unsupported_entries_become_comments() {
        let mut chain = entry("netboot.xyz", EntryType::Chain);
        chain.url = Some("https://boot.netboot.xyz/ipxe/netboot.xyz.efi".into());
        chain.is_default = true;
        let mut efi = entry("Shell", EntryType::Chain);
        efi.url = Some("tftp://10.77.0.1/tools/shell.efi".into());
        let mut port = entry("Port", EntryType::Linux);
        port.kernel = Some("http://mirror.lab:8000/linux".into());
        let mut custom = entry("Custom", EntryType::Custom);
        custom.script = Some("echo hi".into());
        let mut san = entry("SAN", EntryType::Sanboot);
        san.url = Some("iscsi://10.0.0.1/x".into());
        let p = profile(2, vec![chain, custom, san, efi, port]);
        let t = render(&p, None, None, "http://x");
        assert!(t.contains("\n# e1 \"netboot.xyz\" is left out: \"https://boot.netboot.xyz/ipxe/netboot.xyz.efi\" is not in the boot directory, and Debian's signed GRUB loads over TFTP only"), "{t}");
        assert!(t.contains("\n# e2 \"Custom\" is left out: a custom entry"), "{t}");
        assert!(t.contains("\n# e3 \"SAN\" is left out: a sanboot entry"), "{t}");
        assert!(
            t.contains("\nmenuentry Shell --id e4 {\n  chainloader '(tftp,10.77.0.1)/tools/shell.efi'\n}\n"),
            "{t}"
        );
        assert!(
            t.contains("\n# e5 \"Port\" is left out: \"http://mirror.lab:8000/linux\" is not in the boot directory"),
            "{t}"
        );
        assert!(
            t.contains(
                "# The profile's default entry e1 cannot run under GRUB; e4 is the default here.\nset timeout=2"
            ),
            "{t}"
        );
        assert!(t.contains("set default=e4\n"), "{t}");
        for k in ["echo hi", "iscsi://", "--id e1", "--id e2", "--id e3"] {
            assert!(!t.contains(k), "{k} in\n{t}");
        }
        let t = render(&profile(1, vec![entry("C", EntryType::Custom)]), None, None, "http://x");
        assert!(t.contains("set default=local\n"), "{t}");
        assert!(
            t.ends_with("\nmenuentry 'Boot from local disk' --id local {\n  exit\n}\n"),
            "{t}"
        );
    }

    #[tokio::test]
    async fn generated_for_every_mac_and_the_entry_point() {
        let catalog = BootCatalog::temporary().await;
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        let g = generate(&catalog, &mac_file_name(m), "http://x").unwrap().unwrap();
        assert_eq!(
            (g.profile.as_str(), g.host.as_deref(), g.mac),
            ("Default", None, Some(m))
        );
        assert!(
            g.text.contains("(not a registered host: the default profile)"),
            "{}",
            g.text
        );
        assert!(generate(&catalog, "grub/grub.cfg-0A4D0064", "http://x")
            .unwrap()
            .is_none());
        assert!(generate(&catalog, "grub/x86_64-efi/fs.lst", "http://x")
            .unwrap()
            .is_none());
        let main = generate(&catalog, "grub/grub.cfg", "http://x").unwrap().unwrap();
        assert!(
            main.text.contains(
                "if [ -n \"$net_default_mac\" ]; then\n  configfile \"$prefix/grub.cfg-$net_default_mac\"\nfi\n"
            ),
            "{}",
            main.text
        );
        assert!(
            main.text
                .contains("menuentry 'Boot from local disk' --id e1 {\n  exit\n}\n"),
            "{}",
            main.text
        );
    }

    #[test]
    fn secure_boot_findings_name_what_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("plain"), b"not a PE at all").unwrap();
        let mut linux = entry("Plain", EntryType::Linux);
        linux.kernel = Some("plain".into());
        let mut remote = entry("Remote", EntryType::Linux);
        remote.kernel = Some("http://mirror/linux".into());
        let mut tftp = entry("Other TFTP", EntryType::Linux);
        tftp.kernel = Some("tftp://10.0.0.9/linux".into());
        let mut http_initrd = entry("HTTP initrd", EntryType::Linux);
        http_initrd.kernel = Some("http://10.0.0.1:8080/boot/plain".into());
        http_initrd.initrds = vec!["https://mirror/initrd.gz".into()];
        let mut missing = entry("Missing", EntryType::Linux);
        missing.kernel = Some("nope/linux".into());
        let p = profile(
            1,
            vec![
                entry("Local", EntryType::Local),
                linux,
                remote,
                missing,
                entry("C", EntryType::Custom),
                tftp,
                http_initrd,
            ],
        );
        let f = secure_boot_findings(&p, root, "http://10.0.0.1:8080");
        let v: Vec<_> = f.iter().map(|x| x.verdict).collect();
        use SecureBootVerdict::*;
        assert_eq!(v, [Ok, Blocked, Blocked, Blocked, Blocked, Unchecked, Blocked], "{f:?}");
        assert!(f[1].detail.contains("not a PE image"), "{f:?}");
        assert!(
            f[2].detail.contains("loads over TFTP only"),
            "the HTTP kernel is left out of the menu: {f:?}"
        );
        assert!(f[4].detail.contains("iPXE"), "{f:?}");
        assert!(f[6].detail.starts_with("the initrd"), "{f:?}");
        // Real binaries where the machine has them: Debian's signed shim and unsigned iPXE.
        for (file, want) in [
            ("/usr/lib/shim/shimx64.efi.signed", Ok),
            ("/usr/lib/ipxe/ipxe.efi", Blocked),
        ] {
            if !Path::new(file).exists() {
                eprintln!("skipped {file}: not installed (scripts/setup.sh installs it)");
                continue;
            }
            std::fs::copy(file, root.join("x.efi")).unwrap();
            let mut c = entry("X", EntryType::Chain);
            c.url = Some("http://10.0.0.1:8080/boot/x.efi".into());
            let f = secure_boot_findings(&profile(1, vec![c]), root, "http://10.0.0.1:8080");
            assert_eq!(f[0].verdict, want, "{file}: {f:?}");
        }
    }
}
