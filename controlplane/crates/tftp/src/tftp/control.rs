//! Live TFTP settings for `GET/PUT /services/tftp`, a group of the settings layer
//! ([`bootlane_core::settings`]): `[tftp]` is the base, every key can be overridden through
//! the API and the overrides are stored (`tftp_settings/overrides`). The retransmission
//! timeout and the retry count apply live: the running server follows the published
//! settings ([`TftpControl::subscribe`]) and new transfers use them; `enabled`, `port`,
//! `listen`, `root` and `max_transfers` need a new socket or server: [`TftpControl::set`]
//! says so and the caller restarts the TFTP service through the supervisor. State: the
//! settings layer and whether the server runs.

use std::{
    net::IpAddr,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use serde::{Deserialize, Serialize};

use super::TftpConfig;
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    service_error::ServiceError,
    settings::{Effect, Group, Layer, Problem, Source},
    store::Store,
};

/// The TFTP settings group: the `[tftp]` keys the API can change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TftpSettings {
    /// First retransmission timeout, milliseconds (10-60000; live).
    pub timeout_ms: u64,
    /// Retransmissions before a transfer is abandoned (0-100; live).
    pub retries: u32,
    /// Run the server (restart).
    pub enabled: bool,
    /// UDP port (1-65535; restart).
    pub port: u16,
    /// Listen address (restart).
    pub listen: IpAddr,
    /// Directory served (restart); `None`: the boot root of `/settings/netboot`.
    pub root: Option<PathBuf>,
    /// Most concurrent transfers (1-65536; restart).
    pub max_transfers: usize,
}

impl Group for TftpSettings {
    const TREE: &'static str = SETTINGS_TREE;
    const KEY: &'static str = KEY;
    const SERVICE: &'static str = "tftp";

    fn validate(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        if !(10..=60_000).contains(&self.timeout_ms) {
            p.push(Problem::new("timeout_ms", "'timeout_ms' must be 10-60000"));
        }
        if self.retries > 100 {
            p.push(Problem::new("retries", "'retries' must be 0-100"));
        }
        if self.port == 0 {
            p.push(Problem::new("port", "'port' must be 1-65535"));
        }
        if !(1..=65_536).contains(&self.max_transfers) {
            p.push(Problem::new("max_transfers", "'max_transfers' must be 1-65536"));
        }
        p
    }

    fn effect(key: &str) -> Effect {
        match key {
            "timeout_ms" | "retries" => Effect::Live,
            _ => Effect::Restart,
        }
    }

    /// Older versions stored every key, `null` for the ones not overridden.
    fn stored_overrides(doc: serde_json::Map<String, serde_json::Value>) -> serde_json::Map<String, serde_json::Value> {
        doc.into_iter().filter(|(_, v)| !v.is_null()).collect()
    }
}

/// A change to the TFTP settings (any subset; `None` keeps the value).
#[derive(Debug, Clone, Default)]
pub struct TftpChange {
    /// See [`TftpSettings::timeout_ms`] (10-60000).
    pub timeout_ms: Option<u64>,
    /// See [`TftpSettings::retries`] (0-100).
    pub retries: Option<u32>,
    /// See [`TftpSettings::enabled`].
    pub enabled: Option<bool>,
    /// See [`TftpSettings::port`] (1-65535).
    pub port: Option<u16>,
    /// See [`TftpSettings::listen`].
    pub listen: Option<IpAddr>,
    /// See [`TftpSettings::root`] (an existing directory).
    pub root: Option<PathBuf>,
    /// See [`TftpSettings::max_transfers`] (1-65536).
    pub max_transfers: Option<usize>,
}

const KEY: &str = "overrides";
/// The tree of the TFTP settings (the boot root served): each machine's own.
const SETTINGS_TREE: &str = "tftp_settings";
bootlane_core::store::node_tree!(SETTINGS_TREE);

/// Live TFTP settings. Shared by the API and the TFTP service.
pub struct TftpControl {
    base: TftpConfig,
    default_root: bootlane_boot::boot::netboot::Netboot,
    layer: Layer<TftpSettings>,
    running: AtomicBool,
    events: Arc<EventBus>,
}

impl TftpControl {
    /// Opens the stored overrides over `base` (`[tftp]`). `default_enabled` is whether TFTP
    /// runs when neither the file nor an override says (on when a DHCP subnet is active);
    /// `default_root` follows the netboot settings' boot directory (a new boot root reaches
    /// TFTP at its next start).
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        store: &Store,
        base: &TftpConfig,
        default_enabled: bool,
        default_root: bootlane_boot::boot::netboot::Netboot,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>, ServiceError> {
        let layer = settings_layer(store, base, default_enabled)?;
        Ok(Arc::new(Self {
            base: base.clone(),
            default_root,
            layer,
            running: AtomicBool::new(false),
            events,
        }))
    }

    /// `[tftp]` with the stored overrides applied (`root` and `enabled` resolved).
    pub fn effective(&self) -> TftpConfig {
        resolve(&self.base, &self.layer.get(), &self.default_root)
    }

    /// Whether TFTP should run (the effective `enabled`).
    pub fn enabled(&self) -> bool {
        self.layer.get().enabled
    }

    /// A receiver of the settings in effect: the running server takes its timeout and
    /// retries from it.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<TftpSettings> {
        self.layer.subscribe()
    }

    /// Where each key's value came from (`default`, `file`, `api`).
    pub fn sources(&self) -> std::collections::BTreeMap<String, Source> {
        self.layer.sources()
    }

    /// Records whether the server runs (the TFTP unit, at its start and stop).
    pub fn set_running(&self, running: bool) {
        self.running.store(running, Ordering::Relaxed);
    }

    /// The event bus (the TFTP server publishes transfer events on it).
    pub fn events(&self) -> &Arc<EventBus> {
        &self.events
    }

    /// True when the TFTP server runs.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    /// Validates, stores and publishes a change (the running server picks up the timeout
    /// and retries). Returns the effective settings and whether the running server must be
    /// restarted for it (socket, root or limits changed).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key for a value out of range, store errors.
    pub async fn set(&self, c: TftpChange) -> Result<(TftpConfig, bool), ServiceError> {
        let before_settings = self.layer.get();
        let mut o = before_settings.clone();
        o.timeout_ms = c.timeout_ms.unwrap_or(o.timeout_ms);
        o.retries = c.retries.unwrap_or(o.retries);
        o.enabled = c.enabled.unwrap_or(o.enabled);
        o.port = c.port.unwrap_or(o.port);
        o.listen = c.listen.unwrap_or(o.listen);
        o.max_transfers = c.max_transfers.unwrap_or(o.max_transfers);
        if let Some(p) = o.validate().into_iter().next() {
            return Err(ServiceError::Invalid(p.message));
        }
        if let Some(r) = c.root {
            // The current root sent back unchanged (a GET answer PUT back) is fine.
            if self.effective().root.as_ref() != Some(&r) {
                if !r.is_absolute() || !r.is_dir() {
                    return Err(ServiceError::Invalid(format!(
                        "'root' {} must be an absolute path to an existing directory",
                        r.display()
                    )));
                }
                o.root = Some(r);
            }
        }
        let before = self.effective();
        let change = self.layer.set(o).await?;
        if change.changed.is_empty() {
            return Ok((before, false));
        }
        let eff = self.effective();
        let restart = !change.applied.restarted.is_empty();
        self.events.publish(NewEvent::write(
            EventKind::TftpSettingsChanged,
            "settings",
            "tftp",
            "update",
            if restart {
                "TFTP settings changed (service restart)"
            } else {
                "TFTP settings changed (applied live)"
            },
            Some(&before),
            Some(&eff),
        ));
        Ok((eff, restart))
    }
}

/// The TFTP settings layer over `store`: `base` (`[tftp]`) with the stored overrides;
/// `default_enabled` as for [`TftpControl::open`]. `bootlane config show` reads the sources
/// from it.
///
/// # Errors
/// Store errors.
pub fn settings_layer(
    store: &Store,
    base: &TftpConfig,
    default_enabled: bool,
) -> Result<Layer<TftpSettings>, ServiceError> {
    let of = |c: &TftpConfig| TftpSettings {
        timeout_ms: c.timeout_ms,
        retries: c.retries,
        enabled: c.enabled.unwrap_or(default_enabled),
        port: c.port,
        listen: c.listen,
        root: c.root.clone(),
        max_transfers: c.max_transfers,
    };
    Layer::open(store, of(&TftpConfig::default()), of(base))
}

/// `[tftp]` with the settings in effect, the root resolved to the boot root when unset.
fn resolve(base: &TftpConfig, s: &TftpSettings, default_root: &bootlane_boot::boot::netboot::Netboot) -> TftpConfig {
    TftpConfig {
        enabled: Some(s.enabled),
        port: s.port,
        listen: s.listen,
        root: Some(s.root.clone().unwrap_or_else(|| default_root.borrow().root())),
        timeout_ms: s.timeout_ms,
        retries: s.retries,
        max_transfers: s.max_transfers,
        ..base.clone()
    }
}
