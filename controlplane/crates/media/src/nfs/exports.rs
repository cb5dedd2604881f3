//! The NFS settings model and its rules, the exports(5) rendering, and the parser of
//! `exportfs -v`. Pure functions over the file system (paths are resolved through
//! [`crate::media::paths::resolve`], the one place a client path becomes a path on disk);
//! no state.
//!
//! Rules of an export (each refusal a [`ServiceError::Invalid`] naming the key, e.g.
//! `exports[1].clients[0]`):
//! - `path`: relative to the boot root, or absolute and under it (given or canonical
//!   spelling); every rule of the file API applies (no `..`, no NUL, no percent tricks,
//!   no symlink leading out), and it must be an existing directory. Stored relative.
//!   A path appears once: list every client under it instead.
//! - `clients`: 1-[`MAX_CLIENTS`] IPv4/IPv6 networks in CIDR form (`10.0.0.0/24`, host
//!   bits zero) or single addresses (`10.0.0.5`). No host names, wildcards or netgroups:
//!   those depend on name resolution at mount time, and a typo would export to nobody
//!   (or everybody).
//! - `options`: exportfs option names from a whitelist ([`FLAG_OPTIONS`], plus
//!   `fsid=`, `anonuid=`, `anongid=`, `sec=`), no contradicting pair (`ro` and `rw`,
//!   `sync` and `async`, ...), no repeats. `rw` is refused unless `[nfs] allow_rw`.
//!   Missing defaults are added so the file says what the kernel does: `ro` (unless
//!   `rw`) and `no_subtree_check` (unless `subtree_check`).
//! - `comment`: at most 200 bytes, no control characters; written as a `#` line above
//!   the export.

use std::{
    collections::BTreeSet,
    net::IpAddr,
    path::{Path, PathBuf},
};

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::media::paths::{resolve, Follow};
use bootlane_core::service_error::{short_text, ServiceError};

/// Most exports in the settings.
pub const MAX_EXPORTS: usize = 64;
/// Most client networks per export.
pub const MAX_CLIENTS: usize = 32;
/// Most options per export.
pub const MAX_OPTIONS: usize = 24;
/// Longest comment, in bytes.
pub const MAX_COMMENT: usize = 200;

/// Export options without a value that may be used (exports(5) "General Options" and
/// "User ID Mapping"). Options that change the server beyond one export (`refer=`,
/// `replicas=`, `mountpoint`, `pnfs`) and anything unknown are refused.
pub const FLAG_OPTIONS: &[&str] = &[
    "ro",
    "rw",
    "sync",
    "async",
    "secure",
    "insecure",
    "wdelay",
    "no_wdelay",
    "hide",
    "nohide",
    "crossmnt",
    "subtree_check",
    "no_subtree_check",
    "secure_locks",
    "insecure_locks",
    "auth_nlm",
    "no_auth_nlm",
    "root_squash",
    "no_root_squash",
    "all_squash",
    "no_all_squash",
];

/// Pairs of options that contradict each other.
const CONFLICTS: &[(&str, &str)] = &[
    ("ro", "rw"),
    ("sync", "async"),
    ("secure", "insecure"),
    ("wdelay", "no_wdelay"),
    ("hide", "nohide"),
    ("subtree_check", "no_subtree_check"),
    ("secure_locks", "insecure_locks"),
    ("auth_nlm", "no_auth_nlm"),
    ("root_squash", "no_root_squash"),
    ("all_squash", "no_all_squash"),
];

/// Security flavours accepted in `sec=` (colon-separated).
const SEC_FLAVOURS: &[&str] = &["sys", "krb5", "krb5i", "krb5p"];

/// One exported directory.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NfsExport {
    /// The directory: relative to the boot root (`images/ubuntu-24.04`; `""` is the root
    /// itself) or absolute under it. Stored and answered relative.
    pub path: String,
    /// Who may mount it: IPv4/IPv6 networks (`10.0.0.0/24`) or single addresses.
    pub clients: Vec<String>,
    /// exportfs options applied to every client, e.g. `["ro", "no_root_squash"]`
    /// (see the module docs for the whitelist). Default: `ro`, `no_subtree_check`.
    #[serde(default)]
    pub options: Vec<String>,
    /// Free text, written above the export in the file (at most 200 bytes).
    #[serde(default)]
    pub comment: String,
}

/// The stored NFS settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NfsSettings {
    /// Whether Bootlane's exports file exists (and so its exports are loaded).
    pub enabled: bool,
    /// The exports (at most 64).
    pub exports: Vec<NfsExport>,
}

/// An export checked against the boot root: its canonical directory on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedExport {
    /// The canonical absolute directory.
    pub dir: PathBuf,
    /// The normalised export.
    pub export: NfsExport,
}

/// Resolves a client path (relative to `root`, or absolute under it) to its relative
/// spelling and its canonical directory. Does not require a directory.
///
/// # Errors
/// [`ServiceError::Invalid`] (a rule broken, outside the root), [`ServiceError::NotFound`].
pub fn resolve_path(root: &Path, input: &str) -> Result<(String, PathBuf), ServiceError> {
    let input = input.trim();
    let rel = if input.starts_with('/') {
        let canon = root.canonicalize().ok();
        let spellings = [Some(root.to_path_buf()), canon];
        let found = spellings.iter().flatten().find_map(|r| {
            let r = r.to_str()?.trim_end_matches('/');
            match input.strip_prefix(r)? {
                "" => Some(""),
                rest if rest.starts_with('/') => Some(&rest[1..]),
                _ => None,
            }
        });
        found.ok_or_else(|| {
            ServiceError::Invalid(format!(
                "path {input:?} is absolute but not under the boot root {}; give it relative to the boot root",
                root.display()
            ))
        })?
    } else {
        input
    };
    let abs = resolve(root, rel, Follow::All)?;
    Ok((rel.trim_end_matches('/').to_owned(), abs))
}

/// Checks one client: a network in CIDR form with its host bits zero, or an address.
/// Answers the canonical spelling.
///
/// # Errors
/// A message for the API client (what is wrong and how to fix it).
pub fn check_client(c: &str) -> Result<String, String> {
    let c = c.trim();
    if let Ok(a) = c.parse::<IpAddr>() {
        return Ok(a.to_string());
    }
    match c.parse::<IpNet>() {
        Ok(n) if n.trunc() == n => Ok(n.to_string()),
        Ok(n) => Err(format!(
            "{c:?} has host bits set; the network is {}",
            n.trunc()
        )),
        Err(_) => Err(format!(
            "{c:?} is not an IP network (10.0.0.0/24, fd00::/64) or address; host names, wildcards and netgroups are not accepted"
        )),
    }
}

/// A UUID as `fsid=` takes it: 32 hex digits, dashes anywhere between them.
fn is_uuid(v: &str) -> bool {
    v.len() <= 36
        && v.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        && v.bytes().filter(u8::is_ascii_hexdigit).count() == 32
}

/// Checks and normalises one export's options (see the module docs).
///
/// # Errors
/// A message naming the option and the fix.
pub fn check_options(options: &[String], allow_rw: bool) -> Result<Vec<String>, String> {
    if options.len() > MAX_OPTIONS {
        return Err(format!("at most {MAX_OPTIONS} options"));
    }
    let mut out: Vec<String> = Vec::new();
    let mut names = BTreeSet::new();
    for o in options {
        let o = o.trim();
        let name = o.split_once('=').map_or(o, |(n, _)| n);
        let valid = match o.split_once('=') {
            None => FLAG_OPTIONS.contains(&o),
            Some(("fsid", v)) => {
                v == "root" || (!v.is_empty() && v.len() <= 10 && v.bytes().all(|b| b.is_ascii_digit())) || is_uuid(v)
            }
            Some(("anonuid" | "anongid", v)) => v.parse::<u32>().is_ok(),
            Some(("sec", v)) => !v.is_empty() && v.split(':').all(|f| SEC_FLAVOURS.contains(&f)),
            Some(_) => false,
        };
        if !valid {
            return Err(format!(
                "option {o:?} is not accepted; use exportfs option names: {}, fsid=<number|root|uuid>, anonuid=<n>, anongid=<n>, sec=<sys|krb5|krb5i|krb5p>[:...]",
                FLAG_OPTIONS.join(", ")
            ));
        }
        if o == "rw" && !allow_rw {
            return Err(
                "option \"rw\" is refused: boot media is exported read-only (set [nfs] allow_rw = true to allow it)"
                    .into(),
            );
        }
        if !names.insert(name.to_owned()) {
            return Err(format!("option {name:?} is given twice"));
        }
        out.push(o.to_owned());
    }
    for (a, b) in CONFLICTS {
        if names.contains(*a) && names.contains(*b) {
            return Err(format!("options {a:?} and {b:?} contradict each other; keep one"));
        }
    }
    if !names.contains("rw") && !names.contains("ro") {
        out.insert(0, "ro".into());
    }
    if !names.contains("subtree_check") && !names.contains("no_subtree_check") {
        out.push("no_subtree_check".into());
    }
    Ok(out)
}

/// Checks the whole settings against `root` and answers them normalised (relative paths,
/// canonical clients, default options added) with each export's directory.
///
/// # Errors
/// [`ServiceError::Invalid`] naming the key (`exports[i].path`, ...); a missing path is
/// also `Invalid` (400), since it is a value in the body, not the resource.
pub fn check_settings(
    root: &Path,
    s: &NfsSettings,
    allow_rw: bool,
) -> Result<(NfsSettings, Vec<ResolvedExport>), ServiceError> {
    if s.exports.len() > MAX_EXPORTS {
        return Err(ServiceError::Invalid(format!(
            "'exports' holds at most {MAX_EXPORTS} entries"
        )));
    }
    let mut resolved: Vec<ResolvedExport> = Vec::new();
    for (i, e) in s.exports.iter().enumerate() {
        let bad = |key: &str, why: String| ServiceError::Invalid(format!("'exports[{i}].{key}': {why}"));
        let (rel, dir) = resolve_path(root, &e.path).map_err(|err| bad("path", err.to_string()))?;
        if !dir.is_dir() {
            return Err(bad("path", format!("{rel:?} is not a directory")));
        }
        if let Some(other) = resolved.iter().position(|r| r.dir == dir) {
            return Err(bad(
                "path",
                format!("the directory is already exported by exports[{other}]; list all its clients there"),
            ));
        }
        if e.clients.is_empty() || e.clients.len() > MAX_CLIENTS {
            return Err(bad(
                "clients",
                format!("give 1-{MAX_CLIENTS} networks, e.g. [\"10.0.0.0/24\"]"),
            ));
        }
        let mut clients = Vec::new();
        for (j, c) in e.clients.iter().enumerate() {
            let c = check_client(c).map_err(|why| bad(&format!("clients[{j}]"), why))?;
            if clients.contains(&c) {
                return Err(bad(&format!("clients[{j}]"), format!("{c} is listed twice")));
            }
            clients.push(c);
        }
        let options = check_options(&e.options, allow_rw).map_err(|why| bad("options", why))?;
        let comment = short_text(&format!("exports[{i}].comment"), &e.comment, MAX_COMMENT)?;
        resolved.push(ResolvedExport {
            dir,
            export: NfsExport {
                path: rel,
                clients,
                options,
                comment,
            },
        });
    }
    let normalised = NfsSettings {
        enabled: s.enabled,
        exports: resolved.iter().map(|r| r.export.clone()).collect(),
    };
    Ok((normalised, resolved))
}

/// Escapes a path for exports(5): every byte that is not printable ASCII, and `\`, `"`
/// and `#`, as a backslash and three octal digits (the form exportfs decodes), so
/// spaces and non-ASCII names survive and nothing can end the entry early.
pub fn escape_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'\\' | b'"' | b'#') {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:03o}"));
        }
    }
    out
}

/// The exports(5) file for `exports`: a header, then per export its comment line and
/// `<dir> <client>(<options>) ...`.
pub fn render(exports: &[ResolvedExport]) -> String {
    let mut out =
        String::from("# Written by Bootlane (PUT /api/v1/services/nfs); changes made here are overwritten.\n");
    for r in exports {
        if !r.export.comment.is_empty() {
            out.push_str(&format!("# {}\n", r.export.comment));
        }
        out.push_str(&escape_path(&r.dir));
        let opts = r.export.options.join(",");
        for c in &r.export.clients {
            out.push_str(&format!(" {c}({opts})"));
        }
        out.push('\n');
    }
    out
}

/// One entry of the kernel's export table (`exportfs -v`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct KernelExport {
    /// The exported directory.
    pub path: String,
    /// The client (network, address, host name or `*`, as exportfs prints it).
    pub client: String,
    /// Its effective options.
    pub options: Vec<String>,
}

/// Parses `exportfs -v` output: `<path> <client>(<options>)` per line, where a long
/// path stands alone on its line and its `<client>(<options>)` follows indented on the
/// next. Lines that fit neither shape are skipped.
pub fn parse_exportfs_v(out: &str) -> Vec<KernelExport> {
    fn client(tok: &str) -> Option<(String, Vec<String>)> {
        let (c, rest) = tok.split_once('(')?;
        let opts = rest.strip_suffix(')')?;
        Some((
            c.to_owned(),
            opts.split(',').filter(|o| !o.is_empty()).map(str::to_owned).collect(),
        ))
    }
    let mut list = Vec::new();
    let mut pending: Option<String> = None;
    for line in out.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let (Some(path), Some((c, options))) = (pending.take(), client(line.trim())) {
                list.push(KernelExport {
                    path,
                    client: c,
                    options,
                });
            }
            continue;
        }
        let line = line.trim_end();
        match line.rsplit_once(char::is_whitespace) {
            Some((path, tok)) if client(tok).is_some() => {
                let (c, options) = client(tok).unwrap_or_default();
                list.push(KernelExport {
                    path: path.trim().to_owned(),
                    client: c,
                    options,
                });
                pending = None;
            }
            _ => pending = Some(line.to_owned()),
        }
    }
    list
}

/// What kind of extracted image tree `dir` looks like, from the directories NFS-root
/// installers and live systems boot from: `casper/` (Ubuntu live), `live/` (Debian
/// live), `install.amd/` or `install/` (Debian installer), `images/pxeboot/`
/// (RHEL/Fedora), `boot/x86_64/loader/` (openSUSE), `arch/boot/` (Arch). `None`: none.
pub fn image_tree_kind(dir: &Path) -> Option<&'static str> {
    [
        ("casper", "ubuntu-casper"),
        ("live", "debian-live"),
        ("install.amd", "debian-installer"),
        ("install", "debian-installer"),
        ("images/pxeboot", "rhel-pxeboot"),
        ("boot/x86_64/loader", "suse"),
        ("arch/boot", "arch"),
    ]
    .into_iter()
    .find(|(sub, _)| dir.join(sub).is_dir())
    .map(|(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("boot");
        std::fs::create_dir_all(root.join("images/ubuntu/casper")).unwrap();
        std::fs::create_dir_all(root.join("images/deb/install.amd")).unwrap();
        std::fs::create_dir_all(root.join("with space")).unwrap();
        std::fs::write(root.join("file.iso"), b"x").unwrap();
        std::fs::create_dir(tmp.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), root.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        std::os::unix::fs::symlink("images/ubuntu", root.join("ubuntu")).unwrap();
        (tmp, root)
    }

    fn export(path: &str) -> NfsExport {
        NfsExport {
            path: path.into(),
            clients: vec!["10.0.0.0/24".into()],
            options: vec![],
            comment: String::new(),
        }
    }

    #[test]
    fn hostile_paths_are_refused() {
        let (tmp, root) = tree();
        let outside = tmp.path().join("outside").display().to_string();
        let boot_x = format!("{}x", root.display());
        let dotdot = format!("{}/../outside", root.display());
        for p in [
            "..",
            "../outside",
            "images/../../outside",
            "/etc",
            "/",
            outside.as_str(),
            boot_x.as_str(),
            dotdot.as_str(),
            "out",
            "etc",
            "images\0x",
            "%2e%2e/outside",
            "images%2fubuntu",
            "..\\outside",
            "images//ubuntu",
            "file.iso",
            "missing",
        ] {
            let s = NfsSettings {
                enabled: true,
                exports: vec![export(p)],
            };
            match check_settings(&root, &s, false) {
                Err(ServiceError::Invalid(m)) => assert!(m.contains("exports[0].path"), "{p:?}: {m}"),
                other => panic!("{p:?} must be refused, got {other:?}"),
            }
        }
    }

    #[test]
    fn paths_under_the_root_resolve_relative_or_absolute() {
        let (_tmp, root) = tree();
        let canon = root.canonicalize().unwrap();
        for (p, rel) in [
            ("images/ubuntu", "images/ubuntu"),
            ("images/ubuntu/", "images/ubuntu"),
            ("", ""),
            ("ubuntu", "ubuntu"),
        ] {
            let (r, abs) = resolve_path(&root, p).unwrap();
            assert_eq!(r, rel);
            assert!(abs.starts_with(&canon), "{abs:?}");
        }
        let abs_in = format!("{}/images/deb", root.display());
        assert_eq!(resolve_path(&root, &abs_in).unwrap().0, "images/deb");
        let canon_in = format!("{}/images/deb", canon.display());
        assert_eq!(resolve_path(&root, &canon_in).unwrap().0, "images/deb");
        // A symlink inside the root to a directory inside it exports its target.
        let (_, a) = resolve_path(&root, "ubuntu").unwrap();
        assert_eq!(a, canon.join("images/ubuntu"));
        assert_eq!(image_tree_kind(&a), Some("ubuntu-casper"));
        assert_eq!(image_tree_kind(&canon.join("images/deb")), Some("debian-installer"));
        assert_eq!(image_tree_kind(&canon.join("with space")), None);
    }

    #[test]
    fn options_whitelist_conflicts_and_defaults() {
        let o = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(check_options(&[], false).unwrap(), o(&["ro", "no_subtree_check"]));
        assert_eq!(
            check_options(&o(&["no_root_squash", "async", "fsid=7", "sec=sys:krb5"]), false).unwrap(),
            o(&[
                "ro",
                "no_root_squash",
                "async",
                "fsid=7",
                "sec=sys:krb5",
                "no_subtree_check"
            ])
        );
        assert_eq!(
            check_options(&o(&["ro", "subtree_check"]), false).unwrap(),
            o(&["ro", "subtree_check"])
        );
        let err = |v: &[&str], rw| check_options(&o(v), rw).unwrap_err();
        assert!(err(&["rw"], false).contains("allow_rw"));
        assert_eq!(
            check_options(&o(&["rw"]), true).unwrap(),
            o(&["rw", "no_subtree_check"])
        );
        assert!(err(&["ro", "rw"], true).contains("contradict"));
        assert!(err(&["sync", "async"], false).contains("contradict"));
        assert!(err(&["ro", "ro"], false).contains("twice"));
        for bad in [
            "RO",
            "refer=/x@host",
            "fsid=abc",
            "anonuid=-1",
            "sec=none",
            "ro,rw",
            "ro) 0.0.0.0/0(rw",
            "x\ny",
            "",
            "mountpoint",
        ] {
            assert!(err(&[bad], true).contains("not accepted"), "{bad:?}");
        }
    }

    #[test]
    fn clients_are_networks_or_addresses() {
        assert_eq!(check_client("10.0.0.0/24").unwrap(), "10.0.0.0/24");
        assert_eq!(check_client(" 10.0.0.5 ").unwrap(), "10.0.0.5");
        assert_eq!(check_client("fd00::/64").unwrap(), "fd00::/64");
        assert!(check_client("10.0.0.5/24").unwrap_err().contains("10.0.0.0/24"));
        for bad in ["*", "host.example", "@netgroup", "10.0.0.0/33", "", "10.0.0.0/24(rw)"] {
            assert!(check_client(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn settings_are_normalised_and_duplicates_refused() {
        let (_tmp, root) = tree();
        let s = NfsSettings {
            enabled: true,
            exports: vec![NfsExport {
                path: format!("{}/images/ubuntu/", root.display()),
                clients: vec!["10.0.0.0/24".into(), "fd00::1".into()],
                options: vec!["no_root_squash".into()],
                comment: "ubuntu live".into(),
            }],
        };
        let (n, r) = check_settings(&root, &s, false).unwrap();
        assert_eq!(n.exports[0].path, "images/ubuntu");
        assert_eq!(n.exports[0].options, ["ro", "no_root_squash", "no_subtree_check"]);
        assert_eq!(r[0].dir, root.canonicalize().unwrap().join("images/ubuntu"));
        let dup = NfsSettings {
            enabled: true,
            exports: vec![export("images/ubuntu"), export("ubuntu")],
        };
        let m = check_settings(&root, &dup, false).unwrap_err().to_string();
        assert!(m.contains("exports[1].path") && m.contains("exports[0]"), "{m}");
        let mut e = export("images/deb");
        e.clients = vec![];
        let m = check_settings(
            &root,
            &NfsSettings {
                enabled: true,
                exports: vec![e.clone()],
            },
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(m.contains("exports[0].clients"), "{m}");
        e.clients = vec!["10.0.0.0/24".into(), "10.0.0.0/24".into()];
        let m = check_settings(
            &root,
            &NfsSettings {
                enabled: true,
                exports: vec![e.clone()],
            },
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(m.contains("exports[0].clients[1]"), "{m}");
        e.clients = vec!["10.0.0.0/24".into()];
        e.comment = "a\nb".into();
        let m = check_settings(
            &root,
            &NfsSettings {
                enabled: true,
                exports: vec![e],
            },
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(m.contains("exports[0].comment"), "{m}");
    }

    #[test]
    fn rendering_escapes_paths_and_lists_clients() {
        let (_tmp, root) = tree();
        let s = NfsSettings {
            enabled: true,
            exports: vec![
                NfsExport {
                    path: "with space".into(),
                    clients: vec!["10.0.0.0/24".into(), "10.1.0.7".into()],
                    options: vec!["async".into()],
                    comment: "spaces # and all".into(),
                },
                export("images/deb"),
            ],
        };
        let (_, r) = check_settings(&root, &s, false).unwrap();
        let text = render(&r);
        let canon = root.canonicalize().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# Written by Bootlane"));
        assert_eq!(lines[1], "# spaces # and all");
        assert_eq!(
            lines[2],
            format!(
                "{}/with\\040space 10.0.0.0/24(ro,async,no_subtree_check) 10.1.0.7(ro,async,no_subtree_check)",
                canon.display()
            )
        );
        assert_eq!(
            lines[3],
            format!("{}/images/deb 10.0.0.0/24(ro,no_subtree_check)", canon.display())
        );
        assert_eq!(lines.len(), 4);
        assert_eq!(
            escape_path(Path::new("/a\"b#c\\d\u{e9}")),
            "/a\\042b\\043c\\134d\\303\\251"
        );
    }

    #[test]
    fn exportfs_v_is_parsed() {
        let out = "/srv/boot/images/ubuntu\n\t\t10.0.0.0/24(sync,wdelay,hide,no_subtree_check,sec=sys,ro,secure,root_squash,no_all_squash)\n\
                   /srv/x     \t192.168.1.5(async,ro)\n\nnoise line\n";
        let v = parse_exportfs_v(out);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].path, "/srv/boot/images/ubuntu");
        assert_eq!(v[0].client, "10.0.0.0/24");
        assert!(v[0].options.contains(&"ro".to_string()) && v[0].options.len() == 9);
        assert_eq!(
            v[1],
            KernelExport {
                path: "/srv/x".into(),
                client: "192.168.1.5".into(),
                options: vec!["async".into(), "ro".into()]
            }
        );
        assert!(parse_exportfs_v("").is_empty());
    }
}
