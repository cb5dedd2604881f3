//! PXELINUX configuration generated from boot profiles, for BIOS machines that boot
//! `pxelinux.0` (Debian's `pxelinux`/`syslinux-common`) instead of iPXE.
//!
//! PXELINUX asks its TFTP server, in order, for `pxelinux.cfg/<uuid>`,
//! `pxelinux.cfg/01-<mac with dashes>`, eight shrinking hex-IP prefixes
//! (`pxelinux.cfg/0A4D0064`, `0A4D006`, ...) and `pxelinux.cfg/default`, and uses the first
//! it gets (syslinux `doc/pxelinux.txt`). Bootlane answers, without writing anything to
//! disk ([`generate`], used by TFTP and `GET /boot/...` through [`super::generated`]):
//! - `01-<mac>` for a registered host: its profile's menu (the default profile when it
//!   has none); an unregistered MAC is "file not found", so PXELINUX goes on;
//! - `default` always: the default profile's menu;
//! - nothing else (UUID and hex-IP names are "file not found").
//!
//! A file of the same name in the boot directory wins over the generated one (the TFTP
//! and HTTP handlers only ask here when the file is missing), so a site can pin a
//! hand-written configuration.
//!
//! What [`render`] writes for each entry type: `local` → `LOCALBOOT 0` (back to the BIOS,
//! which tries its next boot device); `linux` → `LINUX` (not `KERNEL`, which guesses the
//! image type from the file's extension) and `APPEND initrd=<a>,<b> <cmdline>`, paths
//! relative to the TFTP root (where `pxelinux.0` lives); `chain`, `sanboot`, `custom`
//! (iPXE commands) and `linux` entries whose kernel or initrd is a URL (`pxelinux.0` loads
//! over TFTP only) become a comment saying why they are left out. The menu uses
//! `menu.c32`; the timeout is in tenths of a second (PXELINUX's unit, at most 35996).
//!
//! Holds no state of its own.

use super::catalog::{BootCatalog, EntryType, MenuEntry, Profile, BASE_URL_VAR};
use super::generated::{Generated, Loader};
use bootlane_core::{escape::pxelinux_text, net::types::MacAddr, service_error::ServiceError};

/// The directory PXELINUX reads its configuration from, next to `pxelinux.0`.
pub const CFG_DIR: &str = "pxelinux.cfg";

/// PXELINUX's largest `TIMEOUT` (tenths of a second; syslinux `doc/syslinux.txt`).
pub const MAX_TIMEOUT_TENTHS: u64 = 35996;

/// A configuration file name PXELINUX asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfgName {
    /// `01-<mac>`: hardware type 1 (Ethernet) and the MAC in lower-case dashed hex.
    Mac(MacAddr),
    /// `default`.
    Default,
    /// Any other name in the directory (UUID, hex-IP prefixes): never generated.
    Other,
}

/// Reads `path` (as a TFTP or HTTP client gave it: `\` or `/`, with or without a leading
/// `/`, possibly below a directory when `pxelinux.0` was served from one) as a PXELINUX
/// configuration name; `None` when it is not under a `pxelinux.cfg/` directory.
pub fn parse_cfg_path(path: &str) -> Option<CfgName> {
    let p = path.replace('\\', "/");
    let p = p.trim_start_matches('/');
    let (prefix, name) = p.rsplit_once('/')?;
    let dir = prefix.rsplit('/').next()?;
    if dir != CFG_DIR || name.is_empty() {
        return None;
    }
    if name == "default" {
        return Some(CfgName::Default);
    }
    let mac = name
        .strip_prefix("01-")
        .filter(|m| m.len() == 17 && m.split('-').count() == 6)
        .and_then(|m| bootlane_core::net::types::normalise_mac(m).ok());
    Some(mac.map_or(CfgName::Other, CfgName::Mac))
}

/// The `01-<mac>` file name of `mac` (lower case, as PXELINUX asks).
pub fn mac_file_name(mac: MacAddr) -> String {
    format!("01-{}", mac.to_string().replace(':', "-"))
}

/// A boot-directory path for PXELINUX: relative to the TFTP root, or `None` for a URL.
fn tftp_path(p: &str) -> Option<String> {
    if p.contains("://") {
        return None;
    }
    Some(p.trim_start_matches('/').to_string())
}

/// Why an entry cannot run under PXELINUX, or `None` when it can.
fn unsupported(e: &MenuEntry) -> Option<String> {
    match e.kind {
        EntryType::Local => None,
        EntryType::Linux => {
            let urls = e.kernel.iter().chain(&e.initrds).any(|p| tftp_path(p).is_none());
            urls.then(|| {
                "its kernel or an initrd is a URL, and pxelinux.0 loads files over TFTP only (use a path in the boot directory)".to_string()
            })
        }
        EntryType::Chain => Some("a chain entry runs the iPXE command `chain`, which PXELINUX does not have".into()),
        EntryType::Sanboot => {
            Some("a sanboot entry runs the iPXE command `sanboot`, which PXELINUX does not have".into())
        }
        EntryType::Custom => Some("a custom entry is an iPXE script fragment, which PXELINUX cannot run".into()),
    }
}

/// The PXELINUX configuration of `profile` for `mac` (`None`: the `default` file) of the
/// registered host `host`; `base_url` replaces [`BASE_URL_VAR`] in command lines (no
/// trailing `/`). Entry keys (`e1`, `e2`, ...) are the iPXE script's item keys.
pub fn render(profile: &Profile, mac: Option<MacAddr>, host: Option<&str>, base_url: &str) -> String {
    use std::fmt::Write as _;
    let who = match (mac, host) {
        (Some(m), Some(h)) => format!("{m} (host {h})"),
        (Some(m), None) => m.to_string(),
        (None, _) => "machines without a configuration of their own".to_string(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Bootlane: PXELINUX configuration for {who}, profile {:?}.",
        profile.name
    );
    out.push_str("# Generated from the profile on every request (not a file on disk): edit the profile instead.\n");
    let runnable: Vec<usize> = (0..profile.entries.len())
        .filter(|&i| unsupported(&profile.entries[i]).is_none())
        .collect();
    let wanted = profile.entries.iter().position(|e| e.is_default).unwrap_or(0);
    let default = if runnable.contains(&wanted) {
        format!("e{}", wanted + 1)
    } else if let Some(&i) = runnable.first() {
        let _ = writeln!(
            out,
            "# The profile's default entry e{} cannot run under PXELINUX; e{} is the default here.",
            wanted + 1,
            i + 1
        );
        format!("e{}", i + 1)
    } else {
        out.push_str("# No entry of this profile can run under PXELINUX: the default boots from the local disk.\n");
        "local".to_string()
    };
    out.push_str("UI menu.c32\n");
    let title = host.map_or_else(|| profile.name.clone(), |h| format!("{} ({h})", profile.name));
    let _ = writeln!(out, "MENU TITLE Bootlane: {}", pxelinux_text(&title));
    out.push_str("PROMPT 0\n");
    let tenths = (u64::from(profile.timeout_secs) * 10).min(MAX_TIMEOUT_TENTHS);
    let _ = writeln!(out, "TIMEOUT {tenths}");
    let _ = writeln!(out, "DEFAULT {default}");
    for (i, e) in profile.entries.iter().enumerate() {
        let key = format!("e{}", i + 1);
        out.push('\n');
        if let Some(why) = unsupported(e) {
            let _ = writeln!(out, "# {key} {:?} is left out: {}.", e.label, pxelinux_text(&why));
            continue;
        }
        let _ = writeln!(out, "LABEL {key}");
        let _ = writeln!(out, "  MENU LABEL {}", pxelinux_text(&e.label));
        if key == default {
            out.push_str("  MENU DEFAULT\n");
        }
        match e.kind {
            EntryType::Linux => {
                let kernel = e.kernel.as_deref().and_then(tftp_path).unwrap_or_default();
                let _ = writeln!(out, "  LINUX {kernel}");
                let mut append: Vec<String> = Vec::new();
                if !e.initrds.is_empty() {
                    let list: Vec<String> = e.initrds.iter().filter_map(|r| tftp_path(r)).collect();
                    append.push(format!("initrd={}", list.join(",")));
                }
                if let Some(c) = e.cmdline.as_deref().map(|c| c.replace(BASE_URL_VAR, base_url)) {
                    if c.contains("${") {
                        out.push_str("  # iPXE settings (${...}) in this command line are passed as written: PXELINUX does not expand them.\n");
                    }
                    if !c.trim().is_empty() {
                        append.push(c.trim().to_string());
                    }
                }
                if !append.is_empty() {
                    let _ = writeln!(out, "  APPEND {}", append.join(" "));
                }
            }
            _ => out.push_str("  LOCALBOOT 0\n"),
        }
    }
    if default == "local" {
        out.push_str("\nLABEL local\n  MENU LABEL Boot from local disk\n  MENU DEFAULT\n  LOCALBOOT 0\n");
    }
    out
}

/// The configuration for `path` (see the module documentation), or `None` when Bootlane
/// generates no file of that name (not a `pxelinux.cfg/` path, an unregistered MAC, a
/// UUID or hex-IP name). `base_url` as in [`render`].
///
/// # Errors
/// Store errors reading hosts and profiles.
pub fn generate(catalog: &BootCatalog, path: &str, base_url: &str) -> Result<Option<Generated>, ServiceError> {
    let mac = match parse_cfg_path(path) {
        None | Some(CfgName::Other) => return Ok(None),
        Some(CfgName::Default) => None,
        Some(CfgName::Mac(m)) => Some(m),
    };
    let (profile, host) = match mac {
        Some(m) => match catalog.profile_and_host_for(Some(m))? {
            (p, Some(h)) => (p, Some(h)),
            (_, None) => return Ok(None),
        },
        None => (catalog.default_profile()?, None),
    };
    let host = host.map(|h| h.name);
    Ok(Some(Generated {
        text: render(&profile, mac, host.as_deref(), base_url),
        profile: profile.name,
        host,
        mac,
        loader: Loader::Pxelinux,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::test_menu::{entry, profile};
    use super::*;

    #[test]
    fn names() {
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        assert_eq!(mac_file_name(m), "01-52-54-00-77-00-42");
        assert_eq!(
            parse_cfg_path("pxelinux.cfg/01-52-54-00-77-00-42"),
            Some(CfgName::Mac(m))
        );
        assert_eq!(
            parse_cfg_path("/pxelinux.cfg/01-52-54-00-77-00-42"),
            Some(CfgName::Mac(m))
        );
        assert_eq!(
            parse_cfg_path("bios\\pxelinux.cfg\\01-52-54-00-77-00-42"),
            Some(CfgName::Mac(m))
        );
        assert_eq!(
            parse_cfg_path("pxelinux.cfg/01-52-54-00-77-00-4A"),
            Some(CfgName::Mac("52:54:00:77:00:4a".parse().unwrap()))
        );
        assert_eq!(parse_cfg_path("pxelinux.cfg/default"), Some(CfgName::Default));
        assert_eq!(parse_cfg_path("pxelinux.cfg/0A4D0064"), Some(CfgName::Other));
        assert_eq!(parse_cfg_path("pxelinux.cfg/0A4D"), Some(CfgName::Other));
        assert_eq!(
            parse_cfg_path("pxelinux.cfg/4c4c4544-0051-3610-8057-b7c04f4e3732"),
            Some(CfgName::Other)
        );
        assert_eq!(parse_cfg_path("pxelinux.cfg/01-5254007700"), Some(CfgName::Other));
        assert_eq!(parse_cfg_path("pxelinux.0"), None);
        assert_eq!(parse_cfg_path("default"), None);
        assert_eq!(parse_cfg_path("other/default"), None);
        assert_eq!(parse_cfg_path("pxelinux.cfg/"), None);
    }

    #[test]
    fn entries_default_timeout_and_local_boot() {
        let mut linux = entry("Debian installer", EntryType::Linux);
        linux.kernel = Some("/d-i/linux".into());
        linux.initrds = vec!["d-i/initrd.gz".into(), "d-i/firmware.cpio.gz".into()];
        linux.cmdline = Some("console=ttyS0 url={base_url}/preseed".into());
        linux.is_default = true;
        let p = profile(5, vec![entry("Boot from local disk", EntryType::Local), linux]);
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        let t = render(&p, Some(m), Some("node1"), "http://10.77.0.1:8080");
        assert!(
            t.starts_with("# Bootlane: PXELINUX configuration for 52:54:00:77:00:42 (host node1), profile \"lab\".\n"),
            "{t}"
        );
        assert!(
            t.contains("UI menu.c32\nMENU TITLE Bootlane: lab (node1)\nPROMPT 0\nTIMEOUT 50\nDEFAULT e2\n"),
            "{t}"
        );
        assert!(
            t.contains("\nLABEL e1\n  MENU LABEL Boot from local disk\n  LOCALBOOT 0\n"),
            "{t}"
        );
        assert!(
            t.contains("\nLABEL e2\n  MENU LABEL Debian installer\n  MENU DEFAULT\n  LINUX d-i/linux\n  APPEND initrd=d-i/initrd.gz,d-i/firmware.cpio.gz console=ttyS0 url=http://10.77.0.1:8080/preseed\n"),
            "{t}"
        );
        assert_eq!(t.matches("MENU DEFAULT").count(), 1, "{t}");
        // The default file names no machine; no timeout waits for a choice; PXELINUX's cap.
        let t = render(
            &profile(0, vec![entry("Local", EntryType::Local)]),
            None,
            None,
            "http://x",
        );
        assert!(t.contains("for machines without a configuration of their own"), "{t}");
        assert!(t.contains("TIMEOUT 0\nDEFAULT e1\n"), "{t}");
        let t = render(
            &profile(3600, vec![entry("Local", EntryType::Local)]),
            None,
            None,
            "http://x",
        );
        assert!(t.contains("TIMEOUT 35996\n"), "{t}");
    }

    #[test]
    fn unsupported_entries_become_comments() {
        let mut chain = entry("iPXE shell", EntryType::Chain);
        chain.url = Some("http://10.0.0.1/x.ipxe".into());
        chain.is_default = true;
        let mut custom = entry("Custom", EntryType::Custom);
        custom.script = Some("echo hi".into());
        let mut san = entry("SAN", EntryType::Sanboot);
        san.url = Some("iscsi://10.0.0.1/x".into());
        let mut remote = entry("Remote kernel", EntryType::Linux);
        remote.kernel = Some("http://mirror/linux".into());
        let mut vars = entry("Vars", EntryType::Linux);
        vars.kernel = Some("k".into());
        vars.cmdline = Some("BOOTIF=${netX/mac}".into());
        let p = profile(2, vec![chain, custom, san, remote, vars]);
        let t = render(&p, None, None, "http://x");
        assert!(t.contains("\n# e1 \"iPXE shell\" is left out: a chain entry"), "{t}");
        assert!(t.contains("\n# e2 \"Custom\" is left out: a custom entry"), "{t}");
        assert!(t.contains("\n# e3 \"SAN\" is left out: a sanboot entry"), "{t}");
        assert!(
            t.contains("\n# e4 \"Remote kernel\" is left out: its kernel or an initrd is a URL"),
            "{t}"
        );
        for k in [
            "LABEL e1",
            "LABEL e2",
            "LABEL e3",
            "LABEL e4",
            "http://mirror",
            "iscsi://",
            "echo hi",
        ] {
            assert!(!t.contains(k), "{k} in\n{t}");
        }
        // The default moves to the first entry that runs, and says so.
        assert!(
            t.contains("# The profile's default entry e1 cannot run under PXELINUX; e5 is the default here.\n"),
            "{t}"
        );
        assert!(t.contains("DEFAULT e5\n"), "{t}");
        assert!(t.contains("  # iPXE settings"), "{t}");
        assert!(t.contains("  LINUX k\n  # iPXE settings"), "{t}");
        assert!(t.contains("\n  APPEND BOOTIF=${netX/mac}\n"), "{t}");
        // Nothing runnable: a local-boot default.
        let mut only = entry("Chain", EntryType::Chain);
        only.url = Some("tftp://x/y".into());
        let t = render(&profile(1, vec![only]), None, None, "http://x");
        assert!(t.contains("DEFAULT local\n"), "{t}");
        assert!(
            t.ends_with("\nLABEL local\n  MENU LABEL Boot from local disk\n  MENU DEFAULT\n  LOCALBOOT 0\n"),
            "{t}"
        );
    }

    #[tokio::test]
    async fn generated_for_known_hosts_and_default_only() {
        let catalog = BootCatalog::temporary().await;
        let m: MacAddr = "52:54:00:77:00:42".parse().unwrap();
        let name = format!("pxelinux.cfg/{}", mac_file_name(m));
        assert!(generate(&catalog, &name, "http://x").unwrap().is_none(), "unknown MAC");
        assert!(generate(&catalog, "pxelinux.cfg/0A4D0064", "http://x")
            .unwrap()
            .is_none());
        assert!(generate(&catalog, "pxelinux.0", "http://x").unwrap().is_none());
        let d = generate(&catalog, "pxelinux.cfg/default", "http://x").unwrap().unwrap();
        assert_eq!((d.profile.as_str(), d.host.as_deref(), d.mac), ("Default", None, None));
        assert!(
            d.text
                .contains("LABEL e1\n  MENU LABEL Boot from local disk\n  MENU DEFAULT\n  LOCALBOOT 0\n"),
            "{}",
            d.text
        );
        assert!(d.text.contains("TIMEOUT 50\n"), "{}", d.text);
    }
}
