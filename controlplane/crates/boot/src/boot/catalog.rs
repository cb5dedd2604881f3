//! Boot profiles, profile script versions and the iPXE script template: the single
//! write path for all three, and the per-MAC script choice used by both
//! `GET /boot/ipxe?mac=` and `GET /hosts/{id}/boot-config`. Hosts themselves are
//! [`crate::inventory`]'s; the catalog reads them through [`HostService`].
//!
//! Rules kept here (not in the handlers):
//! - Exactly one profile is the default: seeded on first start ("Default", one entry
//!   "Boot from local disk"); `is_default: true` on another profile moves the flag;
//!   the default profile and profiles used by hosts cannot be deleted.
//! - Script versions: a version is a snapshot of the profile's *whole generated menu
//!   script* (the built-in template rendered for the profile with the iPXE variables
//!   `${net0/mac}` and `${next-server}` in place of MAC and server, so it does not depend
//!   on who asks) together with the menu it was generated from. A new version is stored
//!   whenever that text changes (creation included); diffs are over that text; a rollback
//!   restores the stored menu (timeout and entries) and itself stores a new version.
//! - The template: stored one (`PUT /services/ipxe-script`) over `[boot] ipxe_script`
//!   over [`DEFAULT_SCRIPT`]; every change is compiled with minijinja first.
//!
//! State: the tables, the cached template, and one async mutex serialising writes so
//! uniqueness checks and the default-profile flag cannot race.

use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::DEFAULT_SCRIPT;
use crate::inventory::service::{HostService, ProfileExists};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    net::types::MacAddr,
    store::{Entity, Kv, Store, Table, Tx, TxError},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

use bootlane_core::service_error::{short_text, ServiceError};

// ---------------------------------------------------------------------------------------
// Profiles
// ---------------------------------------------------------------------------------------

/// Kind of a menu entry; decides the iPXE commands it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// Exit to the next boot device (local disk): iPXE `exit`.
    Local,
    /// `kernel <kernel> <cmdline>`, one `initrd` per `initrds` item, `boot`.
    Linux,
    /// `chain <url>` (http, https or tftp).
    Chain,
    /// `sanboot <url>` (http, https, iscsi, aoe, fcp, ib_srp).
    Sanboot,
    /// `script`, pasted as is (an iPXE script fragment).
    Custom,
}

/// Placeholder in a `linux` entry's `cmdline` for the server's base URL as the client
/// reaches it (`http://<server>:<port>` or the netboot `http_base_url`), without a trailing
/// `/`.
pub const BASE_URL_VAR: &str = "{base_url}";

/// One item of a profile's boot menu.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MenuEntry {
    /// Text shown in the menu (1-100 characters, no control characters).
    pub label: String,
    /// What the entry does.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// `linux`: kernel path or URL. A path without scheme is served from the boot
    /// directory (`http://<server>/boot/<path>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `linux`: initrd paths or URLs, in order (same rule as `kernel`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initrds: Vec<String>,
    /// `linux`: kernel command line (one line). [`BASE_URL_VAR`] in it becomes the base
    /// URL clients reach the server at (e.g. `url={base_url}/boot/images/3` for an
    /// image's tree), filled in per request like the kernel's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    /// `chain`, `sanboot`: the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `custom`: the iPXE script fragment (up to 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The menu's default choice (at most one entry; default: the first).
    #[serde(default)]
    pub is_default: bool,
}

/// The part of a profile that makes up its menu (what a script version restores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProfileMenu {
    /// Menu timeout in seconds before the default entry boots (0: wait for a choice).
    pub timeout_secs: u32,
    /// Entries, in menu order.
    pub entries: Vec<MenuEntry>,
}

/// A boot profile.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Profile {
    /// Id.
    pub id: u64,
    /// Name (1-64 printable characters), unique (case-insensitive).
    pub name: String,
    /// Free text.
    pub description: String,
    /// True for the one default profile (machines without a host entry or profile).
    pub is_default: bool,
    /// Menu timeout in seconds (0: no timeout), at most 3600.
    pub timeout_secs: u32,
    /// Menu entries (1-50).
    pub entries: Vec<MenuEntry>,
    /// The profile's baseline: post-install scripts for its machines, after each
    /// host's own; `null`: none.
    #[serde(default)]
    pub baseline_id: Option<u64>,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(Profile, "profiles");

impl Profile {
    fn menu(&self) -> ProfileMenu {
        ProfileMenu {
            timeout_secs: self.timeout_secs,
            entries: self.entries.clone(),
        }
    }
}

/// Body of `POST /profiles` (name and entries required) and `PUT /profiles/{id}` (any
/// subset; omitted fields keep their values).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileInput {
    /// Name.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// `true` makes this the default profile (the previous default loses the flag);
    /// `false` on the current default is refused (make another profile default instead).
    pub is_default: Option<bool>,
    /// Menu timeout in seconds (0-3600; default 5 on creation).
    pub timeout_secs: Option<u32>,
    /// Menu entries (1-50).
    pub entries: Option<Vec<MenuEntry>>,
    /// An existing baseline id (400 otherwise); `null`: none.
    #[serde(default, deserialize_with = "bootlane_core::service_error::double_option")]
    #[schema(value_type = Option<u64>)]
    pub baseline_id: Option<Option<u64>>,
    /// Comment stored with the script version this change creates (if it creates one).
    pub comment: Option<String>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

/// A stored version of a profile's generated script.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScriptVersion {
    /// Id (increasing).
    pub id: u64,
    /// The profile.
    pub profile_id: u64,
    /// The generated menu script (see the module documentation).
    pub content: String,
    /// SHA-256 of `content`, lower-case hex.
    pub checksum: String,
    /// Why it was stored (the `comment` of the change, or a generated note).
    pub comment: String,
    /// The menu this content was generated from (restored by a rollback).
    pub menu: ProfileMenu,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

bootlane_core::store::entity!(ScriptVersion, "profile_script_versions");

impl bootlane_core::store::versions::Revision for ScriptVersion {
    fn document(&self) -> u64 {
        self.profile_id
    }
    /// Profile script versions are known by their record id.
    fn ordinal(&self) -> u64 {
        self.id
    }
}

/// `GET /profiles/{id}/script-diff/{verId}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScriptDiff {
    /// The version compared.
    pub version_id: u64,
    /// True when the version equals the current script.
    pub identical: bool,
    /// Unified diff from the version (`---`) to the current script (`+++`); empty when
    /// identical.
    pub diff: String,
}

fn no_newline(field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() || v.chars().any(|c| c.is_control()) || v.len() > 4096 {
        return Err(ServiceError::Invalid(format!(
            "'{field}' must be a non-empty single line (at most 4096 bytes, no control characters)"
        )));
    }
    Ok(())
}

/// Refuses text that would change the meaning of the iPXE line it is pasted into: iPXE
/// splits a line into tokens on whitespace, ends a command at a `;`, `&&` or `||` token,
/// starts a comment at a token beginning with `#` (iPXE `exec.c`), reads a token starting
/// with `-` as an option, and expands `${...}`. `allow_vars` keeps `${...}` (useful in
/// kernel command lines, e.g. `BOOTIF=${netX/mac}`).
fn ipxe_text(field: &str, v: &str, allow_vars: bool) -> Result<()> {
    let bad_token = v
        .split_whitespace()
        .find(|t| matches!(*t, ";" | "&&" | "||") || t.starts_with('#') || (t.starts_with('-') && t.len() > 1));
    if let Some(t) = bad_token {
        return Err(ServiceError::Invalid(format!(
            "'{field}' may not contain the word {t:?}: iPXE would read it as a command separator, comment or option"
        )));
    }
    if !allow_vars && v.contains('$') {
        return Err(ServiceError::Invalid(format!(
            "'{field}' may not contain '$' (iPXE would expand it as a setting)"
        )));
    }
    Ok(())
}

fn check_url(at: &str, url: Option<&str>, schemes: &[&str]) -> Result<()> {
    let Some(u) = url else {
        return Err(ServiceError::Invalid(format!("{at} needs 'url'")));
    };
    no_newline(&format!("{at} url"), u)?;
    let lower = u.to_ascii_lowercase();
    let ok = schemes
        .iter()
        .any(|s| lower.starts_with(&format!("{s}://")) && lower.len() > s.len() + 3)
        && !u.contains(char::is_whitespace);
    if !ok {
        return Err(ServiceError::Invalid(format!(
            "{at} url {u:?} must be a {} URL without spaces",
            schemes.join("/")
        )));
    }
    Ok(())
}

/// Validates a menu as `POST/PUT /profiles` does (spec "Profiles"): 0-3600 s timeout,
/// 1-50 entries, at most one default, each entry's fields for its type, and no text that
/// would change the iPXE line it is pasted into (see `ipxe_text`). The renderers
/// (iPXE, GRUB, PXELINUX) rely on it; the `render` fuzz target feeds them only menus it
/// accepts.
///
/// # Errors
/// [`ServiceError::Invalid`] naming the entry and the field.
pub fn validate_menu(menu: &ProfileMenu) -> Result<()> {
    if menu.timeout_secs > 3600 {
        return Err(ServiceError::Invalid("'timeout_secs' must be 0-3600".into()));
    }
    if menu.entries.is_empty() || menu.entries.len() > 50 {
        return Err(ServiceError::Invalid("'entries' must hold 1-50 menu entries".into()));
    }
    if menu.entries.iter().filter(|e| e.is_default).count() > 1 {
        return Err(ServiceError::Invalid(
            "at most one entry may have 'is_default': true".into(),
        ));
    }
    for (i, e) in menu.entries.iter().enumerate() {
        let at = format!("entries[{i}] ({:?})", e.label);
        if e.label.trim().is_empty() || e.label.chars().count() > 100 || e.label.chars().any(|c| c.is_control()) {
            return Err(ServiceError::Invalid(format!(
                "entries[{i}]: 'label' must be 1-100 characters without control characters"
            )));
        }
        ipxe_text(&format!("entries[{i}].label"), &e.label, false)?;
        let unexpected = |f: &str, present: bool| -> Result<()> {
            if present {
                Err(ServiceError::Invalid(format!(
                    "{at}: '{f}' does not apply to type {:?}",
                    e.kind
                )))
            } else {
                Ok(())
            }
        };
        let linux_fields = e.kernel.is_some() || !e.initrds.is_empty() || e.cmdline.is_some();
        match e.kind {
            EntryType::Local => {
                unexpected("kernel/initrds/cmdline", linux_fields)?;
                unexpected("url", e.url.is_some())?;
                unexpected("script", e.script.is_some())?;
            }
            EntryType::Linux => {
                let Some(k) = &e.kernel else {
                    return Err(ServiceError::Invalid(format!("{at}: type linux needs 'kernel'")));
                };
                for (f, v) in std::iter::once(("kernel", k)).chain(e.initrds.iter().map(|r| ("initrds", r))) {
                    no_newline(&format!("{at} {f}"), v)?;
                    if v.contains(char::is_whitespace) || v.contains('$') || v.starts_with('#') || v.starts_with('-') {
                        return Err(ServiceError::Invalid(format!(
                            "{at}: '{f}' {v:?} must be one path or URL without spaces, '$', or a leading '#'/'-'"
                        )));
                    }
                }
                if let Some(c) = &e.cmdline {
                    if c.chars().any(|c| c.is_control()) || c.len() > 4096 {
                        return Err(ServiceError::Invalid(format!(
                            "{at}: 'cmdline' must be one line of at most 4096 bytes"
                        )));
                    }
                    ipxe_text(&format!("{at} cmdline"), c, true)?;
                }
                unexpected("url", e.url.is_some())?;
                unexpected("script", e.script.is_some())?;
            }
            EntryType::Chain => {
                check_url(&at, e.url.as_deref(), &["http", "https", "tftp"])?;
                unexpected("kernel/initrds/cmdline", linux_fields)?;
                unexpected("script", e.script.is_some())?;
            }
            EntryType::Sanboot => {
                check_url(
                    &at,
                    e.url.as_deref(),
                    &["http", "https", "iscsi", "aoe", "fcp", "ib_srp"],
                )?;
                unexpected("kernel/initrds/cmdline", linux_fields)?;
                unexpected("script", e.script.is_some())?;
            }
            EntryType::Custom => {
                match &e.script {
                    Some(s) if !s.trim().is_empty() && s.len() <= 65536 && !s.contains('\0') => {}
                    _ => {
                        return Err(ServiceError::Invalid(format!(
                            "{at}: type custom needs a non-empty 'script' (at most 64 KiB)"
                        )))
                    }
                }
                unexpected("kernel/initrds/cmdline", linux_fields)?;
                unexpected("url", e.url.is_some())?;
            }
        }
    }
    Ok(())
}

/// Checks and trims a profile name (spec "Profiles"): 1-64 characters, no control
/// characters, nothing iPXE would read as a separator, comment, option or setting
/// (the name is printed in the iPXE menu title).
///
/// # Errors
/// [`ServiceError::Invalid`] saying which rule failed.
pub fn profile_name(n: &str) -> Result<String> {
    let n = n.trim();
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(|c| c.is_control()) {
        return Err(ServiceError::Invalid(
            "'name' must be 1-64 characters without control characters".into(),
        ));
    }
    ipxe_text("name", n, false)?;
    Ok(n.to_string())
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

/// One menu item as the template sees it (`items`).
#[derive(Debug, Clone, Serialize)]
pub struct ScriptItem {
    /// The iPXE label of the item (`e1`, `e2`, ...), also its `:label` line.
    pub key: String,
    /// The menu text.
    pub label: String,
    /// `local`, `linux`, `chain`, `sanboot` or `custom`.
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// `linux`: kernel URL (relative paths made absolute under `<base_url>/boot/`).
    pub kernel: Option<String>,
    /// `linux`: initrd URLs.
    pub initrds: Vec<String>,
    /// `linux`: command line.
    pub cmdline: Option<String>,
    /// `chain`/`sanboot` URL.
    pub url: Option<String>,
    /// `custom` script.
    pub script: Option<String>,
}

/// Everything a template can use (see [`DEFAULT_SCRIPT`]). Text shown on the console
/// (`profile`, `host`, each item's `label`) is already made safe for an iPXE line with
/// [`bootlane_core::escape::ipxe_text`].
#[derive(Debug, Clone, Serialize)]
pub struct ScriptContext {
    /// Client MAC (lower-case colon form) or `unknown`.
    pub mac: String,
    /// `host[:port]` the client reached Bootlane on.
    pub server: String,
    /// `http://<server>`.
    pub base_url: String,
    /// The registered host's name, if the MAC is registered.
    pub host: Option<String>,
    /// The profile's name.
    pub profile: String,
    /// Menu timeout in milliseconds (iPXE `choose --timeout`), 0 for none.
    pub timeout_ms: u64,
    /// Key of the default item.
    pub default_item: String,
    /// The menu items.
    pub items: Vec<ScriptItem>,
}

fn absolute(base_url: &str, p: &str) -> String {
    if p.contains("://") {
        p.to_string()
    } else {
        format!("{base_url}/boot/{}", p.trim_start_matches('/'))
    }
}

impl ScriptContext {
    /// The context for `profile` as seen by `mac` (or `unknown`) reaching `server`; the
    /// base URL is `http://<server>`.
    pub fn new(profile: &Profile, mac: &str, server: &str, host: Option<&str>) -> Self {
        Self::with_base(profile, mac, server, host, format!("http://{server}"))
    }

    /// [`ScriptContext::new`] with the base URL clients should use (the netboot setting
    /// `http_base_url`, e.g. behind a reverse proxy), without a trailing `/`.
    pub fn with_base(profile: &Profile, mac: &str, server: &str, host: Option<&str>, base_url: String) -> Self {
        let items: Vec<ScriptItem> = profile
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| ScriptItem {
                key: format!("e{}", i + 1),
                label: bootlane_core::escape::ipxe_text(&e.label),
                kind: e.kind,
                kernel: e.kernel.as_deref().map(|k| absolute(&base_url, k)),
                initrds: e.initrds.iter().map(|r| absolute(&base_url, r)).collect(),
                cmdline: e.cmdline.as_deref().map(|c| c.replace(BASE_URL_VAR, &base_url)),
                url: e.url.clone(),
                script: e.script.clone(),
            })
            .collect();
        let default_idx = profile.entries.iter().position(|e| e.is_default).unwrap_or(0);
        Self {
            mac: mac.to_string(),
            server: server.to_string(),
            base_url,
            host: host.map(bootlane_core::escape::ipxe_text),
            profile: bootlane_core::escape::ipxe_text(&profile.name),
            timeout_ms: u64::from(profile.timeout_secs) * 1000,
            default_item: format!("e{}", default_idx + 1),
            items,
        }
    }
}

fn environment(template: &str) -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    // iPXE scripts are plain text: no HTML escaping; keep the trailing newline.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()?,
    );
    env.add_template_owned("script".to_string(), template.to_string())?;
    Ok(env)
}

/// Renders `template` with `ctx`.
///
/// # Errors
/// A template syntax or rendering error (message from minijinja).
pub fn render(template: &str, ctx: &ScriptContext) -> Result<String, minijinja::Error> {
    environment(template)?
        .get_template("script")?
        .render(minijinja::value::Serde(ctx))
}

/// Checks a template: it must compile and render for a sample profile.
///
/// # Errors
/// The minijinja error, or a script not starting with `#!ipxe`.
pub fn check_template(template: &str) -> Result<(), String> {
    let sample = default_profile(OffsetDateTime::UNIX_EPOCH);
    let out = render(
        template,
        &ScriptContext::new(&sample, "52:54:00:00:00:01", "192.0.2.1:8080", None),
    )
    .map_err(|e| format!("the template does not compile or render: {e:#}"))?;
    if !out.trim_start().starts_with("#!ipxe") {
        return Err("the rendered script must start with '#!ipxe'".into());
    }
    Ok(())
}

/// The default profile's script for `mac` and `server` with the built-in template.
#[cfg(any(test, feature = "test-support"))]
pub fn sample_script(mac: &str, server: &str) -> String {
    let p = default_profile(OffsetDateTime::UNIX_EPOCH);
    render(DEFAULT_SCRIPT, &ScriptContext::new(&p, mac, server, None)).expect("built-in template renders")
}

impl BootCatalog {
    /// `profile`'s iPXE script as a machine of unknown MAC reaching `server` would get it
    /// (the effective template; `base_url` as in [`ScriptContext::with_base`]), for the
    /// profile preview.
    ///
    /// # Errors
    /// Invalid with minijinja's message when the template fails.
    pub fn preview_script(&self, profile: &Profile, server: &str, base_url: String) -> Result<String> {
        let ctx = ScriptContext::with_base(profile, "${net0/mac}", server, None, base_url);
        render(&self.template().0, &ctx)
            .map_err(|e| ServiceError::Invalid(format!("the iPXE script template fails: {e}")))
    }
}

/// The generated script a version stores (see the module documentation).
fn version_content(p: &Profile) -> String {
    let ctx = ScriptContext::new(p, "${net0/mac}", "${next-server}", None);
    render(DEFAULT_SCRIPT, &ctx).unwrap_or_else(|e| format!("# rendering failed: {e}\n"))
}

fn default_profile(now: OffsetDateTime) -> Profile {
    Profile {
        id: 0,
        name: "Default".into(),
        description: "Machines without a host entry or profile boot this.".into(),
        is_default: true,
        timeout_secs: 5,
        baseline_id: None,
        entries: vec![MenuEntry {
            label: "Boot from local disk".into(),
            kind: EntryType::Local,
            kernel: None,
            initrds: Vec::new(),
            cmdline: None,
            url: None,
            script: None,
            is_default: true,
        }],
        created_at: now,
        updated_at: now,
    }
}

/// Where the effective template comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemplateSource {
    /// Set through `PUT /services/ipxe-script` (stored).
    Stored,
    /// `[boot] ipxe_script` in the configuration file.
    Config,
    /// The built-in template.
    Builtin,
}

const TEMPLATE_KEY: &str = "ipxe_template";

/// The tables a profile write touches together (see [`Store::transaction`]).
const PROFILE_TABLES: &[&str] = &[<Profile as Entity>::TREE, <ScriptVersion as Entity>::TREE];

/// Inside a profile transaction: clears the default flag of every profile in `all` but
/// `keep` that has it.
fn clear_other_defaults(tx: &Tx<'_>, all: &[Profile], keep: u64) -> Result<(), TxError> {
    for o in all.iter().filter(|o| o.id != keep && o.is_default) {
        tx.put(&Profile {
            is_default: false,
            updated_at: OffsetDateTime::now_utc(),
            ..o.clone()
        })?;
    }
    Ok(())
}

/// A version (id and profile id still 0 when `p` is new) of `p`'s generated script.
fn new_version(p: &Profile, comment: &str) -> ScriptVersion {
    let content = version_content(p);
    ScriptVersion {
        id: 0,
        profile_id: p.id,
        checksum: hex::encode(Sha256::digest(content.as_bytes())),
        content,
        comment: comment.to_string(),
        menu: p.menu(),
        created_at: OffsetDateTime::now_utc(),
    }
}

// ---------------------------------------------------------------------------------------
// The catalog
// ---------------------------------------------------------------------------------------

/// Hosts, profiles, script versions and the template. Cheap to share behind an `Arc`.
pub struct BootCatalog {
    store: Store,
    hosts: Arc<HostService>,
    profiles: Table<Profile>,
    versions: Table<ScriptVersion>,
    baselines: Table<crate::inventory::baseline::Baseline>,
    kv: Kv,
    config_template: Option<String>,
    stored_template: RwLock<Option<String>>,
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
}

impl BootCatalog {
    /// Opens the tables; seeds the default profile on first start (and repairs a store
    /// without exactly one default). `config_template` is `[boot] ipxe_script`; `hosts`
    /// answers which host a MAC is and which hosts use a profile.
    ///
    /// # Errors
    /// Store errors.
    pub async fn open(
        store: &Store,
        config_template: Option<String>,
        hosts: Arc<HostService>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        let kv = store.kv("boot_settings")?;
        let stored: Option<String> = kv.get(TEMPLATE_KEY)?;
        let c = Self {
            store: store.clone(),
            hosts,
            profiles: store.table()?,
            versions: store.table()?,
            baselines: store.table()?,
            kv,
            config_template,
            stored_template: RwLock::new(stored),
            write: tokio::sync::Mutex::new(()),
            events,
        };
        let profiles = c.profiles.list()?;
        let defaults: Vec<&Profile> = profiles.iter().filter(|p| p.is_default).collect();
        if defaults.is_empty() {
            if let Some(first) = profiles.first() {
                let mut p = first.clone();
                p.is_default = true;
                c.profiles.put(&p).await?;
            } else {
                let p = default_profile(OffsetDateTime::now_utc());
                let v = new_version(&p, "seeded on first start");
                c.store
                    .transaction(PROFILE_TABLES, |tx| {
                        let p = tx.insert(p.clone())?;
                        tx.insert(ScriptVersion {
                            profile_id: p.id,
                            ..v.clone()
                        })
                    })
                    .await?;
                tracing::info!("seeded the default boot profile");
            }
        } else if let Some(keep) = defaults.first() {
            let keep = keep.id;
            c.store
                .transaction(PROFILE_TABLES, |tx| clear_other_defaults(tx, &profiles, keep))
                .await?;
        }
        Ok(Arc::new(c))
    }

    /// The profile-existence check [`HostService`] needs for a host's `profile_id`, read
    /// straight from the profiles table (so the host service can be built first).
    ///
    /// # Errors
    /// Store errors opening the table.
    pub fn profile_lookup(store: &Store) -> Result<ProfileExists> {
        let profiles: Table<Profile> = store.table()?;
        Ok(Arc::new(move |id| Ok(profiles.get(id)?.is_some())))
    }

    /// A catalog over a fresh temporary store, with its own host service (for tests).
    #[cfg(any(test, feature = "test-support"))]
    pub async fn temporary() -> Arc<Self> {
        let store = Store::temporary();
        let events = EventBus::in_memory();
        let lookup = Self::profile_lookup(&store).unwrap();
        let hosts = HostService::open(&store, lookup, events.clone()).unwrap();
        Self::open(&store, None, hosts, events).await.unwrap()
    }

    /// `profile.*`.
    fn profile_event(&self, kind: EventKind, action: &str, before: Option<&Profile>, after: Option<&Profile>) {
        let Some(p) = after.or(before) else { return };
        let verb = kind.verb();
        self.events.publish(NewEvent::write(
            kind,
            "profile",
            p.id,
            action,
            format!("boot profile {} {verb}", p.name),
            before,
            after,
        ));
    }

    // ---- profiles ----

    /// Every profile, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn profiles(&self) -> Result<Vec<Profile>> {
        Ok(self.profiles.list()?)
    }

    /// One profile.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub fn profile(&self, id: u64) -> Result<Profile> {
        self.profiles
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no profile with id {id}")))
    }

    /// The default profile (seeded at open, so present unless the store was edited).
    ///
    /// # Errors
    /// Store errors; NotFound when no profile is marked default.
    pub fn default_profile(&self) -> Result<Profile> {
        self.profiles
            .list()?
            .into_iter()
            .find(|p| p.is_default)
            .ok_or_else(|| ServiceError::NotFound("no default profile".into()))
    }

    fn check_profile_name(&self, p: &Profile) -> Result<()> {
        if let Some(o) = self
            .profiles
            .list()?
            .into_iter()
            .find(|o| o.id != p.id && o.name.eq_ignore_ascii_case(&p.name))
        {
            return Err(ServiceError::Conflict(format!(
                "profile name {:?} is already used by profile {}",
                p.name, o.id
            )));
        }
        Ok(())
    }

    /// A new version of `p`'s script when it differs from the latest stored one (or
    /// `force`); to be inserted with the profile's write.
    fn version_if_changed(&self, p: &Profile, comment: &str, force: bool) -> Result<Option<ScriptVersion>> {
        let v = new_version(p, comment);
        let latest = self.versions(p.id)?.into_iter().next();
        if !force && latest.is_some_and(|l| l.checksum == v.checksum) {
            return Ok(None);
        }
        Ok(Some(v))
    }

    /// Checks a profile's `baseline_id`: it must name a stored baseline.
    fn baseline(&self, id: Option<u64>) -> Result<Option<u64>> {
        match id {
            Some(b) if self.baselines.get(b)?.is_none() => Err(ServiceError::Invalid(format!(
                "baseline_id {b}: no such baseline (GET /api/v1/baselines lists them)"
            ))),
            b => Ok(b),
        }
    }

    /// Creates a profile (`name` and `entries` required).
    ///
    /// # Errors
    /// Invalid, Conflict (name taken), store errors.
    pub async fn create_profile(&self, input: ProfileInput) -> Result<Profile> {
        let (Some(name), Some(entries)) = (input.name.as_deref(), input.entries.clone()) else {
            return Err(ServiceError::Invalid("'name' and 'entries' are required".into()));
        };
        let _w = self.write.lock().await;
        let now = OffsetDateTime::now_utc();
        let p = Profile {
            id: 0,
            name: profile_name(name)?,
            description: short_text("description", input.description.as_deref().unwrap_or(""), 1024)?,
            is_default: input.is_default.unwrap_or(false),
            timeout_secs: input.timeout_secs.unwrap_or(5),
            entries,
            baseline_id: self.baseline(input.baseline_id.flatten())?,
            created_at: now,
            updated_at: now,
        };
        validate_menu(&p.menu())?;
        self.check_profile_name(&p)?;
        let others = self.profiles.list()?;
        let v = new_version(&p, input.comment.as_deref().unwrap_or("created"));
        // The profile, the default flag moving to it and its first version: all or nothing.
        let p = self
            .store
            .transaction(PROFILE_TABLES, |tx| {
                let p = tx.insert(p.clone())?;
                if p.is_default {
                    clear_other_defaults(tx, &others, p.id)?;
                }
                tx.insert(ScriptVersion {
                    profile_id: p.id,
                    ..v.clone()
                })?;
                Ok(p)
            })
            .await?;
        self.profile_event(EventKind::ProfileCreated, "create", None, Some(&p));
        Ok(p)
    }

    /// Merges `input` into profile `id`; stores a script version when the script changed.
    ///
    /// # Errors
    /// NotFound, Invalid (including clearing the default flag of the default profile),
    /// Conflict, store errors.
    pub async fn update_profile(&self, id: u64, input: ProfileInput) -> Result<Profile> {
        let _w = self.write.lock().await;
        self.update_locked(id, input, false).await
    }

    async fn update_locked(&self, id: u64, input: ProfileInput, force_version: bool) -> Result<Profile> {
        let mut p = self.profile(id)?;
        let before = p.clone();
        if let Some(n) = &input.name {
            p.name = profile_name(n)?;
        }
        if let Some(d) = &input.description {
            p.description = short_text("description", d, 1024)?;
        }
        let make_default = match input.is_default {
            Some(false) if p.is_default => {
                return Err(ServiceError::Invalid(
                    "profile is the default; make another profile the default ('is_default': true on it) instead"
                        .into(),
                ))
            }
            Some(true) if !p.is_default => true,
            _ => false,
        };
        if let Some(t) = input.timeout_secs {
            p.timeout_secs = t;
        }
        if let Some(e) = input.entries {
            p.entries = e;
        }
        if let Some(b) = input.baseline_id {
            p.baseline_id = self.baseline(b)?;
        }
        validate_menu(&p.menu())?;
        self.check_profile_name(&p)?;
        p.is_default |= make_default;
        p.updated_at = OffsetDateTime::now_utc();
        let others = self.profiles.list()?;
        let v = self.version_if_changed(&p, input.comment.as_deref().unwrap_or("updated"), force_version)?;
        // The profile, the default flag and the new version: all or nothing.
        self.store
            .transaction(PROFILE_TABLES, |tx| {
                tx.put(&p)?;
                if make_default {
                    clear_other_defaults(tx, &others, p.id)?;
                }
                if let Some(v) = &v {
                    tx.insert(v.clone())?;
                }
                Ok(())
            })
            .await?;
        let kind = if force_version {
            EventKind::ProfileRolledBack
        } else {
            EventKind::ProfileUpdated
        };
        let action = if force_version { "rollback" } else { "update" };
        self.profile_event(kind, action, Some(&before), Some(&p));
        Ok(p)
    }

    /// Deletes profile `id` (and its script versions), answering the deleted profile.
    ///
    /// # Errors
    /// NotFound; Conflict when it is the default profile or a host uses it; store errors.
    pub async fn delete_profile(&self, id: u64) -> Result<Profile> {
        let _w = self.write.lock().await;
        let p = self.profile(id)?;
        if p.is_default {
            return Err(ServiceError::Conflict(format!(
                "profile {id} ({}) is the default profile; make another profile the default first",
                p.name
            )));
        }
        // No host may take this profile between the check and the delete.
        let _hosts_still = self.hosts.hold_writes().await;
        let users: Vec<String> = self
            .hosts
            .list()?
            .into_iter()
            .filter(|h| h.profile_id == Some(id))
            .map(|h| h.name)
            .collect();
        if !users.is_empty() {
            return Err(ServiceError::Conflict(format!(
                "profile {id} ({}) is used by host(s) {}; change their profile first",
                p.name,
                users.join(", ")
            )));
        }
        let versions: Vec<u64> = self.versions(id)?.iter().map(|v| v.id).collect();
        // The profile and every version of it: all or nothing.
        self.store
            .transaction(PROFILE_TABLES, |tx| {
                for v in &versions {
                    tx.remove::<ScriptVersion>(*v)?;
                }
                tx.remove::<Profile>(id)?;
                Ok(())
            })
            .await?;
        self.profile_event(EventKind::ProfileDeleted, "delete", Some(&p), None);
        Ok(p)
    }

    // ---- script versions ----

    /// The versions of profile `profile_id`, newest first (no existence check).
    ///
    /// # Errors
    /// Store errors.
    pub fn versions(&self, profile_id: u64) -> Result<Vec<ScriptVersion>> {
        Ok(bootlane_core::store::versions::history(&self.versions, profile_id)?)
    }

    /// Version `ver` of profile `profile_id`.
    ///
    /// # Errors
    /// NotFound (profile or version, or a version of another profile), store errors.
    pub fn version(&self, profile_id: u64, ver: u64) -> Result<ScriptVersion> {
        self.profile(profile_id)?;
        self.versions
            .get(ver)?
            .filter(|v| v.profile_id == profile_id)
            .ok_or_else(|| ServiceError::NotFound(format!("profile {profile_id} has no script version {ver}")))
    }

    /// Unified diff from version `ver` to the current script ([`bootlane_core::store::versions::unified_diff`]).
    ///
    /// # Errors
    /// NotFound, store errors.
    pub fn diff(&self, profile_id: u64, ver: u64) -> Result<ScriptDiff> {
        let v = self.version(profile_id, ver)?;
        let current = version_content(&self.profile(profile_id)?);
        let identical = current == v.content;
        let diff =
            bootlane_core::store::versions::unified_diff(&v.content, &current, &format!("version {ver}"), "current");
        Ok(ScriptDiff {
            version_id: ver,
            identical,
            diff,
        })
    }

    /// Restores the menu of version `ver`; stores a new version saying so.
    ///
    /// # Errors
    /// NotFound; Invalid when the stored menu no longer validates; store errors.
    pub async fn rollback(&self, profile_id: u64, ver: u64) -> Result<Profile> {
        let _w = self.write.lock().await;
        let v = self.version(profile_id, ver)?;
        let input = ProfileInput {
            timeout_secs: Some(v.menu.timeout_secs),
            entries: Some(v.menu.entries),
            comment: Some(format!("rollback to version {ver}")),
            ..Default::default()
        };
        self.update_locked(profile_id, input, true).await
    }

    // ---- the script ----

    /// The effective template and where it comes from.
    pub fn template(&self) -> (String, TemplateSource) {
        let stored = self.stored_template.read().map(|g| g.clone()).unwrap_or_default();
        match (stored, &self.config_template) {
            (Some(t), _) => (t, TemplateSource::Stored),
            (None, Some(t)) => (t.clone(), TemplateSource::Config),
            (None, None) => (DEFAULT_SCRIPT.to_string(), TemplateSource::Builtin),
        }
    }

    /// Stores a new template after checking it (`None` removes the stored one, falling
    /// back to `[boot] ipxe_script` or the built-in template). Applies at once.
    ///
    /// # Errors
    /// Invalid with the minijinja message; store errors.
    pub async fn set_template(&self, template: Option<String>) -> Result<()> {
        let _w = self.write.lock().await;
        match &template {
            Some(t) => {
                if t.len() > 256 * 1024 {
                    return Err(ServiceError::Invalid("the template must be at most 256 KiB".into()));
                }
                check_template(t).map_err(ServiceError::Invalid)?;
                self.kv.put(TEMPLATE_KEY, t).await?;
            }
            None => self.kv.remove(TEMPLATE_KEY).await?,
        }
        let before = self.stored_template.read().map(|g| g.clone()).unwrap_or_default();
        if let Ok(mut g) = self.stored_template.write() {
            *g = template.clone();
        }
        self.events.publish(NewEvent::write(
            EventKind::BootIpxeScriptUpdated,
            "ipxe_script",
            "",
            if template.is_some() { "update" } else { "delete" },
            if template.is_some() {
                "iPXE script template replaced"
            } else {
                "stored iPXE script template removed"
            },
            before.as_ref(),
            template.as_ref(),
        ));
        Ok(())
    }

    /// The profile `mac` boots and its registered host: the host's profile when the MAC
    /// is registered with one (and it still exists), otherwise the default profile. The
    /// same choice as [`BootCatalog::script_and_profile`], for the other boot-config
    /// formats ([`super::pxelinux`]).
    ///
    /// # Errors
    /// Store errors; NotFound when there is no default profile.
    pub fn profile_and_host_for(
        &self,
        mac: Option<MacAddr>,
    ) -> Result<(Profile, Option<crate::inventory::model::Host>)> {
        let host = match mac {
            Some(m) => self.hosts.by_mac(m)?,
            None => None,
        };
        let profile = match host.as_ref().and_then(|h| h.profile_id) {
            Some(pid) => match self.profiles.get(pid)? {
                Some(p) => p,
                None => self.default_profile()?,
            },
            None => self.default_profile()?,
        };
        Ok((profile, host))
    }

    /// The script for `mac` (`None`: unknown) reaching Bootlane on `server`: the host's
    /// profile when the MAC is registered with one, otherwise the default profile.
    ///
    /// # Errors
    /// Store errors; Invalid with the minijinja message when the template fails to render.
    pub fn script_for(&self, mac: Option<MacAddr>, server: &str) -> Result<String> {
        self.script_and_profile(mac, server, None).map(|(s, _, _)| s)
    }

    /// [`BootCatalog::script_for`] plus the name of the profile it came from and the
    /// registered host's name (for the `boot.ipxe.served` event). `base_url`: the URL
    /// clients should use for kernels and initrds (`/settings/netboot` `http_base_url`);
    /// `None`: `http://<server>`.
    ///
    /// # Errors
    /// As [`BootCatalog::script_for`].
    pub fn script_and_profile(
        &self,
        mac: Option<MacAddr>,
        server: &str,
        base_url: Option<&str>,
    ) -> Result<(String, String, Option<String>)> {
        let host = match mac {
            Some(m) => self.hosts.by_mac(m)?,
            None => None,
        };
        let profile = match host.as_ref().and_then(|h| h.profile_id) {
            Some(pid) => match self.profiles.get(pid)? {
                Some(p) => p,
                None => self.default_profile()?,
            },
            None => self.default_profile()?,
        };
        let mac_text = mac.map_or_else(|| "unknown".to_string(), |m| m.to_string());
        let base_url = base_url.map_or_else(|| format!("http://{server}"), str::to_owned);
        let ctx = ScriptContext::with_base(
            &profile,
            &mac_text,
            server,
            host.as_ref().map(|h| h.name.as_str()),
            base_url,
        );
        let (template, _) = self.template();
        let script =
            render(&template, &ctx).map_err(|e| ServiceError::Invalid(format!("the iPXE template failed: {e:#}")))?;
        Ok((script, profile.name, host.map(|h| h.name)))
    }
}
