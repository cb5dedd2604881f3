//! Layered settings for the groups that belong to no single service: `general` and
//! `netboot`. The configuration file gives the defaults, stored values
//! (`store.kv("settings")`, one document per group) override them key by key through the
//! settings layer of [`bootlane_core::settings`], and a change is
//! validated, stored and applied: live where possible (session lifetime, boot root for
//! HTTP boot), through a restart of the one service that needs it (TFTP for a new boot
//! root), or at the next process start (server name, API listen address: the answer
//! says so). The per-service groups (`/services/dns|dhcp|tftp`, `/settings/logging`)
//! and `/settings/interfaces` delegate to their services; see `api/settings_api.rs`.
//! The netboot value reaches its readers as the layer's receiver ([`Settings::netboot_watch`]).
//! State: the two groups' layers.

use std::{net::SocketAddr, path::PathBuf, sync::Arc};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    service_error::ServiceError,
    settings::{Effect, Group, Layer, Problem, Source},
    store::Store,
};

pub use bootlane_core::settings::Applied;

/// `/settings/general`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeneralSettings {
    /// The server's name (a DNS label; its own A record). Applies at the next start.
    pub server_name: String,
    /// API and HTTP boot listen address `ip:port`. Applies at the next start.
    pub api_listen: String,
    /// Lifetime of new sessions in seconds (60-2592000). Live.
    pub session_ttl_secs: u64,
}

/// The general group of the settings layer: `[server] name`, `[api] listen` and
/// `[api] session_ttl_secs` are the base, `PUT /settings/general` stores overrides in
/// `settings/general` (older versions stored the whole document; see
/// [`bootlane_core::settings`]).
impl Group for GeneralSettings {
    const TREE: &'static str = "settings";
    const KEY: &'static str = GENERAL;
    const SERVICE: &'static str = "api";
    const WHOLE_DOCUMENT: bool = true;

    fn validate(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        if let Err(e) = bootlane_core::net::types::validate_host_label(&self.server_name) {
            p.push(Problem::new(
                "server_name",
                format!(
                    "'server_name' {:?} must be a single DNS label valid as a host name: {e}",
                    self.server_name
                ),
            ));
        }
        match self.api_listen.parse::<SocketAddr>() {
            Err(_) => p.push(Problem::new(
                "api_listen",
                format!("'api_listen' {:?} is not ip:port, e.g. 0.0.0.0:8080", self.api_listen),
            )),
            Ok(a) if a.port() == 0 => p.push(Problem::new("api_listen", "'api_listen' needs a port 1-65535")),
            Ok(_) => {}
        }
        if !(60..=2_592_000).contains(&self.session_ttl_secs) {
            p.push(Problem::new(
                "session_ttl_secs",
                "'session_ttl_secs' must be 60-2592000",
            ));
        }
        p
    }

    fn effect(key: &str) -> Effect {
        match key {
            "session_ttl_secs" => Effect::Live,
            _ => Effect::NextStart,
        }
    }
}

/// Body of `PUT /settings/general`: any subset.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GeneralPatch {
    /// See [`GeneralSettings::server_name`].
    pub server_name: Option<String>,
    /// See [`GeneralSettings::api_listen`].
    pub api_listen: Option<String>,
    /// See [`GeneralSettings::session_ttl_secs`].
    pub session_ttl_secs: Option<u64>,
}

pub use bootlane_boot::boot::netboot::NetbootSettings;

/// The boot root `root` checked against the data directory, the configured root and
/// `[boot] allowed_roots` (`limits`, see [`bootlane_boot::boot::guard::check_root`]):
/// the canonical root, or the problem naming `boot_root`.
fn root_problem(root: &std::path::Path, limits: &(PathBuf, PathBuf, Vec<PathBuf>)) -> Result<PathBuf, Problem> {
    let (data_dir, file_root, allowed) = limits;
    bootlane_boot::boot::guard::check_root(root, data_dir, file_root, allowed)
        .map_err(|why| Problem::new("boot_root", format!("'boot_root' {} {why}", root.display())))
}

/// The netboot group's layer: the configured boot root `boot_root` (`[boot] root` or
/// `<data_dir>/boot`, the default) is the base, the stored document overrides it. A stored root the
/// rules no longer accept (set before they existed, or since removed) is dropped for the
/// configured one, with a warning. `bootlane config show` reads it the same way.
///
/// # Errors
/// Store errors.
pub fn netboot_layer(
    store: &Store,
    boot_root: &std::path::Path,
    data_dir: &std::path::Path,
    allowed_roots: &[PathBuf],
) -> Result<Layer<NetbootSettings>, ServiceError> {
    let limits = (data_dir.to_path_buf(), boot_root.to_path_buf(), allowed_roots.to_vec());
    let file = NetbootSettings::with_root(boot_root);
    // With no `[boot] root` the root is `<data_dir>/boot`: that is the built-in default.
    let builtin = NetbootSettings::with_root(&data_dir.join("boot"));
    Layer::open_checked(store, builtin, file, &|n: &NetbootSettings| {
        let root = n.root();
        if root == boot_root {
            return Vec::new();
        }
        root_problem(&root, &limits).err().into_iter().collect()
    })
}

/// Body of `PUT /settings/netboot`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NetbootPatch {
    /// See [`NetbootSettings::boot_root`].
    pub boot_root: Option<String>,
    /// See [`NetbootSettings::http_base_url`]; `""` clears it (back to the default).
    pub http_base_url: Option<String>,
    /// Read-only, accepted unchanged so a GET answer can be PUT back.
    pub ipxe_script_path: Option<String>,
}

/// `/settings/interfaces`: which interfaces and addresses each service uses.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InterfaceSettings {
    /// DNS listen addresses.
    pub dns: Vec<String>,
    /// DHCP: subnet (CIDR) → interface.
    pub dhcp: std::collections::BTreeMap<String, String>,
    /// TFTP listen address.
    pub tftp: String,
}

/// The whole tree (`GET/PUT /settings`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SettingsTree {
    /// General.
    pub general: GeneralSettings,
    /// Interfaces per service.
    pub interfaces: InterfaceSettings,
    /// Netboot.
    pub netboot: NetbootSettings,
    /// Logging (see `/settings/logging`).
    #[schema(value_type = Object)]
    pub logging: serde_json::Value,
    /// DNS (see `/services/dns`).
    #[schema(value_type = Object)]
    pub dns: serde_json::Value,
    /// DHCP (see `/services/dhcp`).
    #[schema(value_type = Object)]
    pub dhcp: serde_json::Value,
    /// TFTP (see `/services/tftp`).
    #[schema(value_type = Object)]
    pub tftp: serde_json::Value,
}

/// File defaults for the two groups (from `[server]`, `[api]` and `[boot]`).
#[derive(Debug, Clone)]
pub struct SettingsDefaults {
    /// `[server] name`.
    pub server_name: String,
    /// `[api] listen`.
    pub api_listen: SocketAddr,
    /// `[api] session_ttl_secs`.
    pub session_ttl_secs: u64,
    /// `[boot] root` or `<data_dir>/boot`.
    pub boot_root: PathBuf,
    /// The data directory (never a boot root, see [`bootlane_boot::boot::guard::check_root`]).
    pub data_dir: PathBuf,
    /// `[boot] allowed_roots`.
    pub allowed_roots: Vec<PathBuf>,
    /// The general settings with no configuration file (for where each value came from).
    pub builtin_general: GeneralSettings,
}

/// The `general` and `netboot` groups.
pub struct Settings {
    general: Layer<GeneralSettings>,
    netboot: Layer<NetbootSettings>,
    /// What [`bootlane_boot::boot::guard::check_root`] checks a new root against.
    root_limits: (PathBuf, PathBuf, Vec<PathBuf>),
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
}

const GENERAL: &str = "general";

impl Settings {
    /// Loads the stored groups over the file defaults.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(store: &Store, d: &SettingsDefaults, events: Arc<EventBus>) -> Result<Arc<Self>, ServiceError> {
        let file = GeneralSettings {
            server_name: d.server_name.clone(),
            api_listen: d.api_listen.to_string(),
            session_ttl_secs: d.session_ttl_secs,
        };
        let general = Layer::open(store, d.builtin_general.clone(), file)?;
        let root_limits = (d.data_dir.clone(), d.boot_root.clone(), d.allowed_roots.clone());
        let netboot = netboot_layer(store, &d.boot_root, &d.data_dir, &d.allowed_roots)?;
        Ok(Arc::new(Self {
            general,
            netboot,
            root_limits,
            write: tokio::sync::Mutex::new(()),
            events,
        }))
    }

    /// The effective general settings.
    pub fn general(&self) -> GeneralSettings {
        self.general.get()
    }

    /// Where each general setting's value came from (`default`, `file`, `api`).
    pub fn general_sources(&self) -> std::collections::BTreeMap<String, Source> {
        self.general.sources()
    }

    /// The effective boot directory.
    pub fn boot_root(&self) -> PathBuf {
        self.netboot.get().root()
    }

    /// A receiver of the effective netboot settings (the boot root and the HTTP base URL),
    /// for the readers that follow them per request (DHCP, TFTP, HTTP boot, files, NFS).
    pub fn netboot_watch(&self) -> bootlane_boot::boot::netboot::Netboot {
        self.netboot.subscribe()
    }

    /// The configured HTTP base URL, if any.
    pub fn http_base_url(&self) -> Option<String> {
        self.netboot.get().http_base_url
    }

    /// The effective netboot settings.
    pub fn netboot(&self) -> NetbootSettings {
        self.netboot.get()
    }

    /// Where each netboot setting's value came from (`default`, `file`, `api`).
    pub fn netboot_sources(&self) -> std::collections::BTreeMap<String, Source> {
        self.netboot.sources()
    }

    /// Validates and stores a general patch; answers the new values and how each key
    /// applies (`session_ttl_secs` live through `set_ttl`, the others at next start).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key; store errors.
    pub async fn put_general(
        &self,
        p: GeneralPatch,
        set_ttl: impl FnOnce(u64),
    ) -> Result<(GeneralSettings, Applied), ServiceError> {
        let _w = self.write.lock().await;
        let before = self.general();
        let mut new = before.clone();
        let mut applied = Applied {
            live: vec![],
            restarted: vec![],
            next_start: vec![],
        };
        if let Some(n) = p.server_name {
            let n = n.trim().to_ascii_lowercase();
            bootlane_core::net::types::validate_host_label(&n).map_err(|e| {
                ServiceError::Invalid(format!(
                    "'server_name' {n:?} must be a single DNS label valid as a host name: {e}"
                ))
            })?;
            new.server_name = n;
            applied.next_start.push("server_name".into());
        }
        if let Some(l) = p.api_listen {
            let a: SocketAddr = l
                .trim()
                .parse()
                .map_err(|_| ServiceError::Invalid(format!("'api_listen' {l:?} is not ip:port, e.g. 0.0.0.0:8080")))?;
            if a.port() == 0 {
                return Err(ServiceError::Invalid("'api_listen' needs a port 1-65535".into()));
            }
            new.api_listen = a.to_string();
            applied.next_start.push("api_listen".into());
        }
        if let Some(t) = p.session_ttl_secs {
            if !(60..=2_592_000).contains(&t) {
                return Err(ServiceError::Invalid("'session_ttl_secs' must be 60-2592000".into()));
            }
            new.session_ttl_secs = t;
            applied.live.push("session_ttl_secs".into());
        }
        if new != before {
            self.general.set(new.clone()).await?;
            set_ttl(new.session_ttl_secs);
            self.events.publish(NewEvent::write(
                EventKind::SettingsChanged,
                "settings",
                "general",
                "update",
                "general settings changed",
                Some(&before),
                Some(&new),
            ));
        }
        Ok((new, applied))
    }

    /// Validates and stores a netboot patch. A new boot root applies to HTTP boot at once;
    /// the caller restarts TFTP when the returned flag says the root changed.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key; store errors.
    pub async fn put_netboot(&self, p: NetbootPatch) -> Result<(NetbootSettings, bool), ServiceError> {
        let _w = self.write.lock().await;
        let before = self.netboot();
        if let Some(x) = &p.ipxe_script_path {
            if *x != before.ipxe_script_path {
                return Err(ServiceError::Invalid(
                    "'ipxe_script_path' is read-only (it follows api_listen and the subnets' server addresses)".into(),
                ));
            }
        }
        let base = match p.http_base_url.as_deref().map(str::trim) {
            None => before.http_base_url.clone(),
            Some("") => None,
            Some(u) => Some(bootlane_boot::boot::netboot::validate_base_url(u).map_err(ServiceError::Invalid)?),
        };
        let root = match p.boot_root {
            None => self.boot_root(),
            Some(root) => {
                let root = PathBuf::from(root.trim());
                root_problem(&root, &self.root_limits).map_err(|p| ServiceError::Invalid(p.message))?
            }
        };
        let root_changed = root != self.boot_root();
        if !root_changed && base == before.http_base_url {
            return Ok((before, false));
        }
        let after = NetbootSettings {
            boot_root: root.display().to_string(),
            http_base_url: base,
            ..before.clone()
        };
        self.netboot.set(after.clone()).await?;
        self.events.publish(NewEvent::write(
            EventKind::SettingsChanged,
            "settings",
            "netboot",
            "update",
            "netboot settings changed",
            Some(&before),
            Some(&after),
        ));
        Ok((after, root_changed))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defaults(dir: &std::path::Path) -> SettingsDefaults {
        SettingsDefaults {
            server_name: "lab".into(),
            api_listen: "0.0.0.0:8080".parse().unwrap(),
            session_ttl_secs: 3600,
            boot_root: dir.join("boot"),
            data_dir: dir.join("data"),
            allowed_roots: vec![],
            builtin_general: GeneralSettings {
                server_name: "pxe".into(),
                api_listen: "0.0.0.0:8080".into(),
                session_ttl_secs: 3600,
            },
        }
    }

    #[tokio::test]
    async fn general_takes_the_file_as_base_and_keeps_a_whole_stored_document() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::temporary();
        let events = EventBus::open(&store, Default::default()).unwrap();
        // A whole document as older versions stored it; only the TTL differs from the file.
        store
            .kv("settings")
            .unwrap()
            .put(
                "general",
                &json!({"server_name": "lab", "api_listen": "0.0.0.0:8080", "session_ttl_secs": 600}),
            )
            .await
            .unwrap();
        let s = Settings::open(&store, &defaults(dir.path()), events).unwrap();
        assert_eq!(s.general().session_ttl_secs, 600);
        let src = s.general_sources();
        assert_eq!(
            (src["server_name"], src["api_listen"], src["session_ttl_secs"]),
            (Source::File, Source::Default, Source::Api)
        );
        let err = s
            .put_general(
                GeneralPatch {
                    session_ttl_secs: Some(1),
                    ..Default::default()
                },
                |_| {},
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("'session_ttl_secs'"), "{err}");
        let mut ttl = 0;
        let (_, applied) = s
            .put_general(
                GeneralPatch {
                    api_listen: Some("10.0.0.1:80".into()),
                    ..Default::default()
                },
                |t| ttl = t,
            )
            .await
            .unwrap();
        assert_eq!(applied.next_start, vec!["api_listen"]);
        assert_eq!(ttl, 600);
        let kv = store.kv("settings").unwrap();
        let stored: serde_json::Value = kv.get("general").unwrap().unwrap();
        assert_eq!(
            stored,
            json!({"api_listen": "10.0.0.1:80", "server_name": "lab", "session_ttl_secs": 600}),
            "the whole document, as older versions read it"
        );
        let keys: Vec<String> = kv.get("general.api_keys").unwrap().unwrap();
        assert_eq!(
            keys,
            vec!["api_listen", "session_ttl_secs"],
            "the keys that differ from the file"
        );
    }

    #[tokio::test]
    async fn netboot_keeps_the_whole_document_and_readers_follow_the_layer() {
        let dir = tempfile::tempdir().unwrap();
        let d = defaults(dir.path());
        std::fs::create_dir_all(d.boot_root.join("alt")).unwrap();
        let store = Store::temporary();
        let kv = store.kv("settings").unwrap();
        // As older versions stored it: whole, with the file's root and a base URL.
        kv.put(
            "netboot",
            &json!({"boot_root": d.boot_root.display().to_string(),
                    "http_base_url": "http://boot.lab:8080",
                    "ipxe_script_path": IPXE}),
        )
        .await
        .unwrap();
        let events = EventBus::open(&store, Default::default()).unwrap();
        let s = Settings::open(&store, &d, events.clone()).unwrap();
        assert_eq!(s.http_base_url().as_deref(), Some("http://boot.lab:8080"));
        assert_eq!(s.boot_root(), d.boot_root);
        assert_eq!(
            (s.netboot_sources()["boot_root"], s.netboot_sources()["http_base_url"]),
            (Source::File, Source::Api)
        );
        let rx = s.netboot_watch();

        let alt = d.boot_root.join("alt").canonicalize().unwrap();
        let (after, root_changed) = s
            .put_netboot(NetbootPatch {
                boot_root: Some(alt.display().to_string()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(root_changed);
        assert_eq!(rx.borrow().root(), alt, "a reader sees the new root at its next read");
        assert_eq!(after.http_base_url.as_deref(), Some("http://boot.lab:8080"));
        // Readable by older versions: the whole document, their own shape.
        let stored: NetbootSettings = kv.get("netboot").unwrap().unwrap();
        assert_eq!(stored, after);
        let keys: Vec<String> = kv.get("netboot.api_keys").unwrap().unwrap();
        assert_eq!(keys, vec!["boot_root", "http_base_url"]);

        let err = s
            .put_netboot(NetbootPatch {
                http_base_url: Some("ftp://x".into()),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("'http_base_url'"), "{err}");
        let err = s
            .put_netboot(NetbootPatch {
                boot_root: Some(d.data_dir.display().to_string()),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("'boot_root'"), "{err}");

        // A stored root the rules refuse (here: gone) is read as the configured one.
        std::fs::remove_dir(&alt).unwrap();
        let again = Settings::open(&store, &d, events).unwrap();
        assert_eq!(again.boot_root(), d.boot_root);
        assert_eq!(again.http_base_url().as_deref(), Some("http://boot.lab:8080"));
    }

    const IPXE: &str = bootlane_boot::boot::netboot::IPXE_SCRIPT_PATH;
}
