//! The catalog's on-disk and on-the-wire format, shared by every source and by
//! local bundles:
//!
//! - a source holds `index.json`, `{"format": 1, "items": [<entry>...]}`, where an entry
//!   is an item's metadata (`type`, `id`, `name`, `version`, `description`, `author`,
//!   `tags`, `sha256`), and one file per item at `items/<type>/<id>.json` (a fixed
//!   layout, so an index cannot point outside the source);
//! - an item file (and a local bundle, which is the same thing uploaded) is the metadata
//!   plus `content`, whose shape depends on the type ([`AnswerTemplateContent`],
//!   [`ProfileContent`], [`NetbootContent`], [`ScriptContent`], [`BaselineContent`]);
//! - `sha256` is the SHA-256 of `content` in canonical JSON ([`content_sha256`]: object
//!   keys sorted, no whitespace, UTF-8 as is; floats are not used), the same bytes as
//!   Python's `json.dumps(content, sort_keys=True, separators=(",", ":"),
//!   ensure_ascii=False)`; `scripts/catalog-index.py` computes it and writes the index.
//!
//! The sha256 detects an item that changed after its index was written, or a corrupted
//! bundle; it is not a signature (whoever controls a source controls its index). No state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::answers::AnswerFormat;
use bootlane_boot::boot::catalog::MenuEntry;

/// The index format this server reads.
pub const FORMAT: u32 = 1;

/// What an item installs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ItemType {
    /// An answer template (`/netboot/answer-templates`).
    AnswerTemplate,
    /// A boot profile (`/profiles`).
    Profile,
    /// A netboot overlay of a built-in catalog distribution (`/netboot/overlays/{distro}`).
    Netboot,
    /// A post-install script (`/scripts`).
    Script,
    /// A baseline with its scripts (`/baselines`).
    Baseline,
}

impl ItemType {
    /// Every type, in display order.
    pub const ALL: [ItemType; 5] = [
        Self::AnswerTemplate,
        Self::Profile,
        Self::Netboot,
        Self::Script,
        Self::Baseline,
    ];

    /// The name used in paths, filters and files (`answer-template`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AnswerTemplate => "answer-template",
            Self::Profile => "profile",
            Self::Netboot => "netboot",
            Self::Script => "script",
            Self::Baseline => "baseline",
        }
    }

    /// The type named `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// The names of every type, comma-separated (for error messages).
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

/// True for an item id or source name: 1-64 of `a-z0-9._-`, starting with a letter or
/// digit (so it is safe as a file name and a URL segment).
pub fn valid_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// An item's metadata, as the index lists it (and as the item file repeats it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Meta {
    /// What it installs as.
    #[serde(rename = "type")]
    pub kind: ItemType,
    /// Id, unique per type within a source ([`valid_id`]).
    pub id: String,
    /// Display name; also the name it is installed under unless `rename` is given.
    pub name: String,
    /// The item's own version (free text, e.g. `1.0.0`).
    #[serde(default)]
    pub version: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Who wrote it.
    #[serde(default)]
    pub author: String,
    /// Free tags (lower-case words), used by the `tag` filter.
    #[serde(default)]
    pub tags: Vec<String>,
    /// SHA-256 of the content in canonical JSON ([`content_sha256`]), lower-case hex.
    pub sha256: String,
}

/// `index.json` of a source.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    /// Format version ([`FORMAT`]).
    pub format: u32,
    /// The items, by metadata.
    pub items: Vec<Meta>,
}

/// An item file (`items/<type>/<id>.json`), also the format of a local bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Item {
    /// Its metadata.
    #[serde(flatten)]
    pub meta: Meta,
    /// The type-specific payload.
    pub content: serde_json::Value,
}

/// `content` of an `answer-template` item.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerTemplateContent {
    /// The answer-file format.
    pub format: AnswerFormat,
    /// The minijinja template text (the variables of `/netboot/answer-templates`).
    pub template: String,
}

/// `content` of a `profile` item.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileContent {
    /// The profile's description.
    #[serde(default)]
    pub description: String,
    /// Menu timeout in seconds (default 5).
    #[serde(default)]
    pub timeout_secs: Option<u32>,
    /// Menu entries, as `/profiles` takes them.
    pub entries: Vec<MenuEntry>,
}

/// `content` of a `netboot` item: an overlay for one distribution of the built-in
/// netboot catalog.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NetbootContent {
    /// Distribution id of the netboot catalog (`debian`, `rocky`, ...).
    pub distro: String,
    /// Mirror replacing the catalog's.
    #[serde(default)]
    pub mirror: Option<String>,
    /// Kernel arguments appended to the catalog's.
    #[serde(default)]
    pub extra_args: String,
    /// Initrd URLs appended after the catalog's.
    #[serde(default)]
    pub extra_initrds: Vec<String>,
}

/// A variable a script expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StoreScriptVariable)]
pub struct ScriptVariable {
    /// Name, used in the script as the minijinja placeholder `{{ name }}`.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// Value when the baseline gives none; `null` or absent: the variable is required.
    #[serde(default)]
    pub default: Option<String>,
}

/// `content` of a `script` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptContent {
    /// Interpreter: `sh`, `bash`, `python`, `powershell` or `cmd`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The script text.
    pub content: String,
    /// The variables it expects.
    #[serde(default)]
    pub variables: Vec<ScriptVariable>,
}

/// One script of a `baseline` item (carried whole, so a baseline installs alone).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselineScript {
    /// The script's catalog id.
    pub id: String,
    /// The name it is installed under.
    pub name: String,
    /// Interpreter.
    #[serde(rename = "type")]
    pub kind: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The script text.
    pub content: String,
    /// The variables it expects.
    #[serde(default)]
    pub variables: Vec<ScriptVariable>,
}

/// Which machines a baseline applies to (the `/baselines` OS filter).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StoreOsFilter)]
pub struct OsFilter {
    /// OS family as image detection names it (`debian`, `ubuntu`, `rhel`, `windows`,
    /// ...); absent or `null`: any.
    #[serde(default)]
    pub family: Option<String>,
    /// Version pattern (`*` matches any run of characters); absent or `null`: any.
    #[serde(default)]
    pub version: Option<String>,
}

/// `content` of a `baseline` item.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselineContent {
    /// What it sets up.
    #[serde(default)]
    pub description: String,
    /// Which machines it applies to (default: any).
    #[serde(default)]
    pub os_filter: OsFilter,
    /// Variables with their defaults.
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
    /// Its scripts, in the order they run.
    pub scripts: Vec<BaselineScript>,
}

/// `value` with every object's keys in sorted order (recursively), whatever map type
/// `serde_json` was built with.
fn canonical(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// SHA-256 of `content` in canonical JSON (keys sorted, compact, UTF-8), lower-case hex.
pub fn content_sha256(content: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(&canonical(content)).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}

/// Parses an index (`format` must be [`FORMAT`]; every entry's type and id valid).
///
/// # Errors
/// What is wrong, for a message naming the source.
pub fn parse_index(bytes: &[u8]) -> Result<Index, String> {
    let index: Index = serde_json::from_slice(bytes).map_err(|e| format!("index.json is not a catalog index: {e}"))?;
    if index.format != FORMAT {
        return Err(format!(
            "index.json has format {}, this server reads format {FORMAT}",
            index.format
        ));
    }
    if let Some(bad) = index.items.iter().find(|m| !valid_id(&m.id)) {
        return Err(format!("index.json lists an item with the invalid id {:?}", bad.id));
    }
    Ok(index)
}

/// Parses an item file or a bundle and checks its metadata (a valid id, 1-100
/// character name) and that its `sha256` is its content's.
///
/// # Errors
/// What is wrong, naming the item.
pub fn parse_item(bytes: &[u8]) -> Result<Item, String> {
    let item: Item = serde_json::from_slice(bytes).map_err(|e| format!("not a catalog item: {e}"))?;
    let m = &item.meta;
    if !valid_id(&m.id) {
        return Err(format!("item id {:?} must be 1-64 of a-z 0-9 . _ -", m.id));
    }
    if m.name.trim().is_empty() || m.name.chars().count() > 100 {
        return Err(format!(
            "item {}/{}: 'name' must be 1-100 characters",
            m.kind.as_str(),
            m.id
        ));
    }
    let actual = content_sha256(&item.content);
    if !actual.eq_ignore_ascii_case(&m.sha256) {
        return Err(format!(
            "item {}/{}: the sha256 of its content is {actual}, but the item says {}; it was changed or corrupted",
            m.kind.as_str(),
            m.id,
            m.sha256
        ));
    }
    Ok(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_hash_ignores_key_order_and_whitespace() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b": 1, "a": {"y": "é\n", "x": [1, 2]}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":{"x":[1,2],"y":"é\n"},"b":1}"#).unwrap();
        assert_eq!(content_sha256(&a), content_sha256(&b));
        // The bytes hashed are Python's json.dumps(sort_keys=True, separators=(",",":"),
        // ensure_ascii=False): {"a":{"x":[1,2],"y":"é\n"},"b":1}
        let expected = hex::encode(Sha256::digest(
            "{\"a\":{\"x\":[1,2],\"y\":\"é\\n\"},\"b\":1}".as_bytes(),
        ));
        assert_eq!(content_sha256(&a), expected);
        let c: serde_json::Value = serde_json::from_str(r#"{"b": 2, "a": {"y": "é\n", "x": [1, 2]}}"#).unwrap();
        assert_ne!(content_sha256(&a), content_sha256(&c));
    }

    #[test]
    fn a_changed_item_is_refused() {
        let content = serde_json::json!({"type": "sh", "content": "echo hi\n"});
        let mut item = serde_json::json!({"type": "script", "id": "hi", "name": "Hi", "sha256": content_sha256(&content), "content": content});
        assert!(parse_item(item.to_string().as_bytes()).is_ok());
        item["content"]["content"] = "rm -rf /\n".into();
        let e = parse_item(item.to_string().as_bytes()).unwrap_err();
        assert!(e.contains("script/hi") && e.contains("sha256"), "{e}");
        item["id"] = "../x".into();
        assert!(parse_item(item.to_string().as_bytes()).unwrap_err().contains("id"));
    }

    #[test]
    fn ids_are_safe_path_segments() {
        for ok in ["debian", "rocky-9", "a.b_c"] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", "..", ".x", "a/b", "A", "a b", &"x".repeat(65)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
