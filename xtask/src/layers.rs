//! The control plane's layers, checked: every top-level module of `controlplane/src` is
//! declared in one layer of [`LAYERS`], and a module may import (`crate::<module>`) only
//! modules of its own layer or of a lower one, never a higher one, and the imports inside
//! a layer form no cycle. Test code (`tests.rs`, `*_tests.rs`, `test_support.rs`, and the
//! `#[cfg(test)] mod tests` at a file's end) and comments are not counted: they do not
//! shape what a crate cut would have to carry. `cargo test -p xtask` runs the check over
//! the real tree; `docs/src/architecture.md` explains the layers.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

/// The layers, lowest first, with the top-level modules of each. A new module goes into
/// exactly one of them.
pub(crate) const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "net",
            "escape",
            "audit",
            "logging",
            "memory",
            "swap",
            "supervisor",
            "store",
            "events",
            "metrics",
            "service_error",
            "leases",
            "backup",
            "systemd",
            "web_server",
        ],
    ),
    ("boot vocabulary", &["inventory", "access", "boot"]),
    ("protocols", &["dataplane", "dns", "dhcp", "tftp", "stats"]),
    (
        "domains",
        &[
            "answers",
            "scripts",
            "cluster",
            "bmc",
            "community",
            "install",
            "media",
            "netboot",
            "netdiag",
            "nfs",
            "updates",
            "wol",
            "settings",
        ],
    ),
    ("configuration", &["config"]),
    ("api", &["api"]),
    ("binary", &["app", "cli"]),
];

/// Module → the modules it imports (`crate::x` in code outside tests and comments).
pub(crate) type Graph = BTreeMap<String, BTreeSet<String>>;

/// The import graph of the top-level modules under `src` (`lib.rs` and `main.rs` left
/// out: they wire everything).
pub(crate) fn graph(src: &Path) -> std::io::Result<Graph> {
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    for e in std::fs::read_dir(src)? {
        let p = e?.path();
        let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        if p.is_dir() {
            walk(&p, &mut |f| files.push((name.clone(), f.to_path_buf())))?;
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

fn walk(dir: &Path, f: &mut dyn FnMut(&Path)) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            walk(&p, f)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            f(&p);
        }
    }
    Ok(())
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

/// Every breach of the layering in `g`: a module in no layer, an import of a higher
/// layer, or a cycle inside a layer (named by one of its edges).
pub(crate) fn breaches(g: &Graph) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, ms))| ms.iter().map(move |m| (*m, i)))
        .collect();
    let mut out = Vec::new();
    for (m, deps) in g {
        let Some(&lm) = layer_of.get(m.as_str()) else {
            out.push(format!("module `{m}` is in no layer of xtask/src/layers.rs"));
            continue;
        };
        for d in deps {
            if let Some(&ld) = layer_of.get(d.as_str()) {
                if ld > lm {
                    out.push(format!(
                        "`{m}` ({}) imports `{d}` ({}), a higher layer",
                        LAYERS[lm].0, LAYERS[ld].0
                    ));
                }
            }
        }
    }
    for m in g.keys() {
        let lm = layer_of.get(m.as_str());
        for d in &g[m] {
            if layer_of.get(d.as_str()) == lm && reaches(g, d, m) && m < d {
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
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controlplane/src");
        let g = graph(&src).expect("reading controlplane/src");
        assert!(g.len() > 30, "found the modules: {g:?}");
        let b = breaches(&g);
        assert!(b.is_empty(), "layering broken:\n{}", b.join("\n"));
    }

    #[test]
    fn imports_skip_comments_and_the_test_module() {
        let text = "use crate::net::X;\n// crate::api is named here\nlet a = crate::store::open(); // crate::cli\n\
                    let m = bootlane::crate_x::y; $crate::z\nuse crate::{\n    dhcp::{a, b::{c, d}},\n    dns,\n};\n\
                    #[cfg(test)]\nmod tests {\n    use crate::api;\n}\n";
        let got: Vec<String> = imports(text).into_iter().collect();
        assert_eq!(got, ["dhcp", "dns", "net", "store"]);
    }

    #[test]
    fn a_higher_import_and_a_cycle_inside_a_layer_are_breaches() {
        let mut g: Graph = BTreeMap::new();
        g.insert("net".into(), ["api".to_string()].into());
        g.insert("api".into(), BTreeSet::new());
        g.insert("dns".into(), ["dhcp".to_string()].into());
        g.insert("dhcp".into(), ["dns".to_string()].into());
        g.insert("newthing".into(), BTreeSet::new());
        let b = breaches(&g);
        assert_eq!(b.len(), 3, "{b:?}");
        assert!(b.iter().any(|x| x.contains("`net` (foundation) imports `api` (api)")));
        assert!(b.iter().any(|x| x.contains("`dhcp` and `dns` import each other")));
        assert!(b.iter().any(|x| x.contains("`newthing` is in no layer")));
    }
}
