//! The configuration reference, generated from the config types: every section of the
//! TOML file ([`crate::config::Config`] and the `*Config` types it holds) becomes one
//! Markdown table of `Key | Default | Meaning`. The keys and their defaults come from the
//! types themselves (serde names, `Default` values) through their JSON Schema
//! (`schemars`), the meanings from the fields' doc comments, so the book cannot list a key
//! that does not exist or a default the code does not have.
//!
//! The book's `docs/src/configuration.md` holds each table between the markers
//! `<!-- config-table SECTION -->` and `<!-- /config-table -->`; the prose around them is
//! written by hand. A unit test fails when a table there differs from [`tables`] or a
//! section has no table, and prints how to regenerate it
//! (`BOOTLANE_BLESS=1 cargo test -p bootlane-config reference`).
//!
//! Doc-comment conventions a field may use: a paragraph starting `Default:` replaces the
//! value in the Default column (for defaults computed at start, such as the machine's host
//! name); a paragraph starting `Maintainers:` is left out of the book. Rustdoc links
//! (`` [`x`](y) `` and `` [`x`] ``) keep only their text. No state.

use serde_json::Value;

use crate::config::Config;

/// One section of the configuration file and its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The TOML path: `""` for the top level, `dns`, `dns.rrl`, `dhcp.subnets` and so on.
    pub path: String,
    /// Whether the section is an array of tables (`[[dhcp.subnets]]`).
    pub array: bool,
    /// The Markdown table, header included, each line ending in `\n`.
    pub table: String,
}

/// Every section of the configuration file, in the order of the types' fields (depth
/// first), with its table.
///
/// # Panics
/// Only when the schema `schemars` derives is not the shape this module reads (a
/// programming error caught by the unit tests).
pub fn tables() -> Vec<Section> {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).expect("schema serialises");
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    walk(&schema, &defs, "", false, &mut out);
    out
}

fn resolve<'a>(s: &'a Value, defs: &'a Value) -> &'a Value {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return defs.get(name).expect("every $ref is in $defs");
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        if all.len() == 1 {
            return resolve(&all[0], defs);
        }
    }
    s
}

/// The struct a property opens as a section: a table (`[x]`) or an array of tables
/// (`[[x]]`), else `None` for a plain key. An optional struct (`Option<T>`: `anyOf` the
/// struct and `null`) is a section too (`[auth.ldap]`).
fn section_of<'a>(prop: &'a Value, defs: &'a Value) -> Option<(&'a Value, bool)> {
    let mut target = resolve(prop, defs);
    if let Some([a, b]) = target.get("anyOf").and_then(Value::as_array).map(Vec::as_slice) {
        let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
        match (is_null(a), is_null(b)) {
            (false, true) => target = resolve(a, defs),
            (true, false) => target = resolve(b, defs),
            _ => {}
        }
    }
    if target.get("properties").is_some() {
        return Some((target, false));
    }
    if target.get("type").and_then(Value::as_str) == Some("array") {
        let items = resolve(target.get("items")?, defs);
        if items.get("properties").is_some() {
            return Some((items, true));
        }
    }
    None
}

fn walk(s: &Value, defs: &Value, path: &str, array: bool, out: &mut Vec<Section>) {
    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .expect("a section has properties");
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut table = String::from("| Key | Default | Meaning |\n|---|---|---|\n");
    let mut subsections = Vec::new();
    for (key, prop) in props {
        if let Some((sub, sub_array)) = section_of(prop, defs) {
            let p = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            subsections.push((sub, p, sub_array));
            continue;
        }
        let (meaning, default_text) = describe(prop);
        let default = default_text.unwrap_or_else(|| match prop.get("default") {
            Some(v) => render_default(v),
            None if required.contains(&key.as_str()) => "required".to_string(),
            None => "unset".to_string(),
        });
        table.push_str(&format!("| `{key}` | {default} | {meaning} |\n"));
    }
    out.push(Section {
        path: path.to_string(),
        array,
        table,
    });
    for (sub, p, a) in subsections {
        walk(sub, defs, &p, a, out);
    }
}

/// The meaning (doc comment, links reduced to their text, `Maintainers:` paragraphs
/// dropped) and a `Default:` paragraph's text when the doc comment has one.
fn describe(prop: &Value) -> (String, Option<String>) {
    let doc = prop.get("description").and_then(Value::as_str).unwrap_or("");
    let mut meaning = Vec::new();
    let mut default = None;
    for para in doc.split("\n\n") {
        let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(d) = para.strip_prefix("Default:") {
            default = Some(strip_links(d.trim().trim_end_matches('.')));
        } else if !para.starts_with("Maintainers:") && !para.is_empty() {
            meaning.push(strip_links(&para));
        }
    }
    (meaning.join(" ").replace('|', "\\|"), default)
}

/// `` [`x`](y) `` becomes `` `x` `` and `` [`x`] `` becomes `` `x` ``; Markdown links to
/// book pages (`[text](page.md)`) stay.
fn strip_links(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("[`") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(close) = after.find("`]") else {
            out.push_str(&rest[i..]);
            return out;
        };
        let code = &after[..close + 1];
        out.push_str(code);
        rest = &after[close + 2..];
        if rest.starts_with('(') {
            if let Some(end) = rest.find(')') {
                rest = &rest[end + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A default value as it is written in TOML: strings quoted, lists in brackets, `unset`
/// for none, tables as `{}` when empty.
fn render_default(v: &Value) -> String {
    fn inline(v: &Value) -> String {
        match v {
            Value::Null => "unset".into(),
            Value::String(s) => format!("{s:?}"),
            Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
            Value::Object(o) if o.is_empty() => "{}".into(),
            Value::Object(o) => format!(
                "{{ {} }}",
                o.iter()
                    .map(|(k, v)| format!("{k} = {}", inline(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.to_string(),
        }
    }
    match v {
        Value::Null => "unset".into(),
        other => format!("`{}`", inline(other)),
    }
}

/// The book's configuration reference with every generated table replaced by today's
/// [`tables`]; `Err` names a section the book has no table for, or a table marker that
/// names no section.
///
/// # Errors
/// A message naming the missing or unknown section.
pub fn update_book(book: &str) -> Result<String, String> {
    let sections = tables();
    let mut out = String::with_capacity(book.len());
    let mut rest = book;
    let mut seen = Vec::new();
    const OPEN: &str = "<!-- config-table ";
    const CLOSE: &str = "<!-- /config-table -->";
    while let Some(i) = rest.find(OPEN) {
        let head_end = rest[i..].find("-->").ok_or("an unclosed config-table marker")? + i + 3;
        let name = rest[i + OPEN.len()..head_end - 3].trim();
        let sec = sections
            .iter()
            .find(|s| s.path == name)
            .ok_or_else(|| format!("the book has a table for `{name}`, which is not a section of the config types"))?;
        let end = rest[head_end..]
            .find(CLOSE)
            .ok_or_else(|| format!("the `{name}` table is not closed"))?
            + head_end;
        out.push_str(&rest[..head_end]);
        out.push('\n');
        out.push_str(&sec.table);
        seen.push(name.to_string());
        rest = &rest[end..];
    }
    out.push_str(rest);
    if let Some(missing) = sections.iter().find(|s| !seen.contains(&s.path)) {
        return Err(format!(
            "the book has no table for the section `{}`: add `<!-- config-table {} -->` and `<!-- /config-table -->` where it belongs",
            missing.path, missing.path
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../docs/src/configuration.md")
    }

    #[test]
    fn the_book_reference_matches_the_config_types() {
        let path = book_path();
        let book = std::fs::read_to_string(&path).expect("the book's configuration chapter");
        let want = update_book(&book).unwrap_or_else(|e| panic!("{e}"));
        if std::env::var_os("BOOTLANE_BLESS").is_some() {
            std::fs::write(&path, &want).expect("write the chapter");
            return;
        }
        if want != book {
            let diff: Vec<String> = want
                .lines()
                .zip(book.lines())
                .filter(|(a, b)| a != b)
                .take(5)
                .map(|(a, b)| format!("  types: {a}\n  book:  {b}"))
                .collect();
            panic!(
                "docs/src/configuration.md differs from the config types; regenerate it with \
                 `BOOTLANE_BLESS=1 cargo test -p bootlane-config reference`. First differences:\n{}",
                diff.join("\n")
            );
        }
    }

    #[test]
    fn every_key_of_the_default_file_is_in_a_table() {
        // The serialised default configuration is the other view of the same types: each
        // of its keys must be a row of its section's table.
        let toml = toml::Value::try_from(Config::default()).expect("defaults serialise");
        let sections = tables();
        fn check(v: &toml::Value, path: &str, sections: &[Section]) {
            let Some(t) = v.as_table() else { return };
            let sec = sections
                .iter()
                .find(|s| s.path == path)
                .unwrap_or_else(|| panic!("no section `{path}`"));
            for (k, v) in t {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if sections.iter().any(|s| s.path == sub) {
                    match v {
                        toml::Value::Array(items) => items.iter().for_each(|i| check(i, &sub, sections)),
                        v => check(v, &sub, sections),
                    }
                } else {
                    assert!(
                        sec.table.contains(&format!("| `{k}` |")),
                        "`{k}` of `{path}` is not in its table"
                    );
                }
            }
        }
        check(&toml, "", &sections);
    }

    #[test]
    fn a_marker_for_an_unknown_section_or_a_missing_table_is_an_error() {
        let err = update_book("<!-- config-table nosuch -->\n<!-- /config-table -->\n").unwrap_err();
        assert!(err.contains("`nosuch`"), "{err}");
        let err = update_book("nothing here\n").unwrap_err();
        assert!(err.contains("no table for the section"), "{err}");
    }

    #[test]
    fn links_keep_their_text_and_defaults_read_as_toml() {
        assert_eq!(
            strip_links("see [`Foo`](crate::Foo) and [`bar`]."),
            "see `Foo` and `bar`."
        );
        assert_eq!(strip_links("a [page](dns.md)"), "a [page](dns.md)");
        assert_eq!(render_default(&serde_json::json!(["a", 1])), "`[\"a\", 1]`");
        assert_eq!(render_default(&serde_json::json!(null)), "unset");
        assert_eq!(render_default(&serde_json::json!(true)), "`true`");
    }
}
