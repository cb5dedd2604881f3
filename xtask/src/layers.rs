//! The control plane's layers, checked. Cargo already refuses a cycle between crates;
//! this adds what Cargo cannot know: every crate of the control plane
//! (`controlplane/crates/*` and the `bootlane` binary crate in `controlplane/`) is
//! declared in one layer of [`LAYERS`], depends (in `[dependencies]`) only on crates of
//! its own layer or a lower one, and holds at most [`MAX_PRODUCTION_LINES`] lines of
//! production code (test files, `test_support` modules and a trailing
//! `#[cfg(test)] mod tests` not counted), and inside each crate the top-level modules
//! import each other in no cycle. `cargo test -p xtask` runs the checks over the real
//! tree; `docs/src/architecture.md` explains the layers and the cut.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// Module → the modules of the same crate it imports (`crate::x` outside tests and
/// comments).
pub(crate) type Graph = BTreeMap<String, BTreeSet<String>>;

/// The layers, lowest first, with the crates of each. A new crate goes into exactly one.
pub(crate) const LAYERS: &[(&str, &[&str])] = &[
    ("foundation", &["bootlane-core"]),
    ("boot vocabulary", &["bootlane-boot"]),
    ("protocols", &["bootlane-dns", "bootlane-dhcp", "bootlane-tftp"]),
    (
        "domains",
        &[
            "bootlane-media",
            "bootlane-install",
            "bootlane-machines",
            "bootlane-updates",
            "bootlane-identity",
            "bootlane-doctor",
            "bootlane-cluster",
            "bootlane-sessions",
            "bootlane-backup",
        ],
    ),
    ("configuration", &["bootlane-config"]),
    ("api", &["bootlane-api"]),
    ("binary", &["bootlane"]),
];

/// The most production lines one crate may hold: above it a crate is too large to
/// rebuild quickly or to read as one piece.
pub(crate) const MAX_PRODUCTION_LINES: usize = 12_000;

/// One crate as the check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Crate {
    /// The package name (`bootlane-dns`).
    pub(crate) name: String,
    /// The `bootlane-*` packages it depends on (normal dependencies only).
    pub(crate) deps: Vec<String>,
    /// Production lines under its `src`.
    pub(crate) lines: usize,
}

/// Reads every crate of the control plane rooted at `controlplane`.
pub(crate) fn crates(controlplane: &Path) -> std::io::Result<Vec<Crate>> {
    let mut dirs = vec![controlplane.to_path_buf()];
    for e in std::fs::read_dir(controlplane.join("crates"))? {
        let p = e?.path();
        if p.join("Cargo.toml").is_file() {
            dirs.push(p);
        }
    }
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let (name, deps) = manifest(&std::fs::read_to_string(d.join("Cargo.toml"))?);
            Ok(Crate {
                name,
                deps,
                lines: production_lines(&d.join("src"))?,
            })
        })
        .collect()
}

/// The package name and the `bootlane-*` entries of `[dependencies]` of a manifest.
fn manifest(text: &str) -> (String, Vec<String>) {
    let (mut name, mut deps, mut section) = (String::new(), Vec::new(), "");
    for line in text.lines().map(str::trim) {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = if s == "package" || s == "dependencies" { s } else { "" };
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        match section {
            "package" if key == "name" => name = value.trim().trim_matches('"').to_string(),
            "dependencies" if key.starts_with("bootlane-") && key != "bootlane-common" => {
                deps.push(key.to_string());
            }
            _ => {}
        }
    }
    (name, deps)
}

/// Lines of production code under `src`: every `.rs` file but `tests.rs`, `tests_*.rs`,
/// `*_tests.rs` and `test_support.rs`, each up to its trailing `#[cfg(test)] mod tests`.
fn production_lines(src: &Path) -> std::io::Result<usize> {
    let mut files: Vec<PathBuf> = Vec::new();
    walk(src, &mut files)?;
    let mut n = 0;
    for f in files {
        let base = f.file_name().and_then(|s| s.to_str()).unwrap_or_default();
        if base.starts_with("tests") || base.ends_with("_tests.rs") || base == "test_support.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f)?;
        let code = text
            .find("#[cfg(test)]\nmod tests")
            .map_or(text.as_str(), |i| &text[..i]);
        n += code.lines().count();
    }
    Ok(n)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// Every breach: a crate in no layer, a dependency on a higher layer, a crate over the
/// size limit.
pub(crate) fn breaches(crates: &[Crate]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, cs))| cs.iter().map(move |c| (*c, i)))
        .collect();
    let mut out = Vec::new();
    for c in crates {
        let Some(&lc) = layer_of.get(c.name.as_str()) else {
            out.push(format!("crate `{}` is in no layer of xtask/src/layers.rs", c.name));
            continue;
        };
        for d in &c.deps {
            if let Some(&ld) = layer_of.get(d.as_str()) {
                if ld > lc {
                    out.push(format!(
                        "`{}` ({}) depends on `{d}` ({}), a higher layer",
                        c.name, LAYERS[lc].0, LAYERS[ld].0
                    ));
                }
            }
        }
        if c.lines > MAX_PRODUCTION_LINES {
            out.push(format!(
                "`{}` holds {} production lines, more than {MAX_PRODUCTION_LINES}: split it",
                c.name, c.lines
            ));
        }
    }
    out
}

/// The import graph of a crate's top-level modules under `src` (`lib.rs` and `main.rs`
/// left out: they wire everything). Test files are not counted.
pub(crate) fn graph(src: &Path) -> std::io::Result<Graph> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(src)? {
        let p = e?.path();
        let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        if p.is_dir() {
            let mut inner = Vec::new();
            walk(&p, &mut inner)?;
            files.extend(inner.into_iter().map(|f| (name.clone(), f)));
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push((name, p));
        }
    }
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut g: Graph = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (m, f) in &files {
        let base = f.file_name().and_then(|s| s.to_str()).unwrap_or_default();
        if base == "tests.rs" || base.ends_with("_tests.rs") || base == "test_support.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f)?;
        for t in imports(&text) {
            if t != *m && modules.contains(&t) {
                g.get_mut(m).expect("module").insert(t);
            }
        }
    }
    Ok(g)
}

/// The modules named after every `crate::` in `text` (the first segment, or every
/// first-level name of a `crate::{...}` group, which may span lines), outside comments
/// and outside a trailing `#[cfg(test)] mod tests { ... }`.
fn imports(text: &str) -> BTreeSet<String> {
    let mut code = String::new();
    let mut prev_cfg_test = false;
    for line in text.lines() {
        let l = line.trim();
        if prev_cfg_test && l.starts_with("mod ") && l.ends_with('{') && l.contains("tests") {
            break;
        }
        prev_cfg_test = l == "#[cfg(test)]";
        if !l.starts_with("//") {
            code.push_str(l.split("//").next().unwrap_or_default());
            code.push('\n');
        }
    }
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        // `bootlane_crate::x` or `$crate::` are not this crate's modules.
        let own = !rest[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        let after = &rest[i + "crate::".len()..];
        rest = after;
        if !own {
            continue;
        }
        let Some(group) = after.strip_prefix('{') else {
            let seg = ident(after);
            if !seg.is_empty() {
                out.insert(seg);
            }
            continue;
        };
        // A group: the names that start an item at depth 1.
        let (mut depth, mut starts) = (1usize, true);
        let mut chars = group.char_indices().peekable();
        while let Some((k, c)) = chars.next() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => starts = true,
                c if c.is_ascii_alphabetic() || c == '_' => {
                    let name = ident(&group[k..]);
                    if starts && depth == 1 {
                        out.insert(name.clone());
                    }
                    starts = false;
                    for _ in 1..name.len() {
                        chars.next();
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Every pair of top-level modules of one crate that import each other, directly or
/// through others (named by one of the edges of the cycle).
pub(crate) fn cycles(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for (m, deps) in g {
        for d in deps {
            if m < d && reaches(g, d, m) {
                out.push(format!(
                    "`{m}` and `{d}` import each other (directly or through others)"
                ));
            }
        }
    }
    out
}

/// Whether `to` is reachable from `from` in `g`.
fn reaches(g: &Graph, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            todo.extend(g.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_plane_keeps_its_layers() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controlplane");
        let cs = crates(&dir).expect("reading the control plane's crates");
        assert!(cs.len() >= 10, "found the crates: {cs:?}");
        assert!(cs.iter().all(|c| c.lines > 0), "{cs:?}");
        let b = breaches(&cs);
        assert!(b.is_empty(), "layering broken:\n{}", b.join("\n"));
    }

    #[test]
    fn no_crate_has_a_cycle_between_its_top_level_modules() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controlplane");
        let mut srcs = vec![dir.join("src")];
        for e in std::fs::read_dir(dir.join("crates")).unwrap() {
            srcs.push(e.unwrap().path().join("src"));
        }
        let mut found = Vec::new();
        for src in &srcs {
            let g = graph(src).expect("reading a crate's src");
            found.extend(cycles(&g).into_iter().map(|c| format!("{}: {c}", src.display())));
        }
        assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
    }

    #[test]
    fn imports_skip_comments_and_the_test_module() {
        let text = "use crate::net::X;\n// crate::api is named here\nlet a = crate::store::open(); // crate::cli\n\
                    let m = bootlane_core::crate_x::y; $crate::z\nuse crate::{\n    dhcp::{a, b::{c, d}},\n    dns,\n};\n\
                    #[cfg(test)]\nmod tests {\n    use crate::api;\n}\n";
        let got: Vec<String> = imports(text).into_iter().collect();
        assert_eq!(got, ["dhcp", "dns", "net", "store"]);
    }

    #[test]
    fn a_cycle_through_a_third_module_is_found() {
        let mut g: Graph = BTreeMap::new();
        g.insert("dns".into(), ["zone".to_string()].into());
        g.insert("zone".into(), ["dhcp".to_string()].into());
        g.insert("dhcp".into(), ["dns".to_string()].into());
        g.insert("net".into(), BTreeSet::new());
        let c = cycles(&g);
        assert!(!c.is_empty() && c.iter().all(|x| !x.contains("net")), "{c:?}");
    }

    #[test]
    fn a_manifest_gives_its_name_and_bootlane_dependencies() {
        let text = "[package]\nname = \"bootlane-dns\"\n\n[dependencies]\nbootlane-core = { path = \"../core\" }\n\
                    bootlane-common = { workspace = true }\ntokio = \"1\"\n\n[dev-dependencies]\n\
                    bootlane-api = { path = \"../api\" }\n";
        let (name, deps) = manifest(text);
        assert_eq!(name, "bootlane-dns");
        assert_eq!(deps, ["bootlane-core"]);
    }

    #[test]
    fn a_higher_dependency_an_unknown_crate_and_a_large_one_are_breaches() {
        let c = |name: &str, deps: &[&str], lines| Crate {
            name: name.into(),
            deps: deps.iter().map(|d| d.to_string()).collect(),
            lines,
        };
        let b = breaches(&[
            c("bootlane-core", &["bootlane-api"], 10),
            c("bootlane-dns", &["bootlane-dhcp", "bootlane-core"], 10),
            c("bootlane-newthing", &[], 10),
            c("bootlane-api", &[], MAX_PRODUCTION_LINES + 1),
        ]);
        assert_eq!(b.len(), 3, "{b:?}");
        assert!(b
            .iter()
            .any(|x| x.contains("`bootlane-core` (foundation) depends on `bootlane-api` (api)")));
        assert!(b.iter().any(|x| x.contains("`bootlane-newthing` is in no layer")));
        assert!(b
            .iter()
            .any(|x| x.contains("`bootlane-api` holds 12001 production lines")));
    }
}
