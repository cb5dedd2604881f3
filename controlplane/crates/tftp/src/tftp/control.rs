//! Live TFTP settings for `GET/PUT /services/tftp`: every `[tftp]` key can be overridden
//! through the API and the overrides are stored. The retransmission timeout and the retry
//! count are written into the running server's limits (new transfers use them); `enabled`,
//! `port`, `listen`, `root` and `max_transfers` need a new socket or server:
//! [`TftpControl::set`] says so and the caller restarts the TFTP service through the
//! supervisor. State: the stored overrides (cached) and the running server's limits while
//! it runs.

use std::{
    net::IpAddr,
    path::PathBuf,
    sync::{Arc, RwLock},
};

use serde::{Deserialize, Serialize};

use super::{server::TftpLimits, TftpConfig};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    service_error::ServiceError,
    store::{Kv, Store, StoreError},
};

/// Stored overrides over `[tftp]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TftpOverrides {
    /// First retransmission timeout, milliseconds (live).
    pub timeout_ms: Option<u64>,
    /// Retransmissions before a transfer is abandoned (live).
    pub retries: Option<u32>,
    /// Run the server (restart).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// UDP port (restart).
    #[serde(default)]
    pub port: Option<u16>,
    /// Listen address (restart).
    #[serde(default)]
    pub listen: Option<IpAddr>,
    /// Directory served (restart).
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Most concurrent transfers (restart).
    #[serde(default)]
    pub max_transfers: Option<usize>,
}

/// A change to the TFTP settings (any subset; `None` keeps the value).
#[derive(Debug, Clone, Default)]
pub struct TftpChange {
    /// See [`TftpOverrides::timeout_ms`] (10-60000).
    pub timeout_ms: Option<u64>,
    /// See [`TftpOverrides::retries`] (0-100).
    pub retries: Option<u32>,
    /// See [`TftpOverrides::enabled`].
    pub enabled: Option<bool>,
    /// See [`TftpOverrides::port`] (1-65535).
    pub port: Option<u16>,
    /// See [`TftpOverrides::listen`].
    pub listen: Option<IpAddr>,
    /// See [`TftpOverrides::root`] (an existing directory).
    pub root: Option<PathBuf>,
    /// See [`TftpOverrides::max_transfers`] (1-65536).
    pub max_transfers: Option<usize>,
}

const KEY: &str = "overrides";
/// The tree of the TFTP settings (the boot root served): each machine's own.
const SETTINGS_TREE: &str = "tftp_settings";
bootlane_core::store::node_tree!(SETTINGS_TREE);

/// Live TFTP settings. Shared by the API and the TFTP service.
pub struct TftpControl {
    base: TftpConfig,
    default_enabled: bool,
    default_root: Arc<RwLock<PathBuf>>,
    kv: Kv,
    overrides: RwLock<TftpOverrides>,
    live: RwLock<Option<Arc<RwLock<TftpLimits>>>>,
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
}

impl TftpControl {
    /// Opens the stored overrides. `default_enabled` is whether TFTP runs when neither
    /// the file nor an override says (on when a DHCP subnet is active); `default_root` is
    /// the boot directory (shared with `/settings/netboot`, so a new boot root reaches TFTP
    /// at its next start).
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        store: &Store,
        base: &TftpConfig,
        default_enabled: bool,
        default_root: Arc<RwLock<PathBuf>>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>, StoreError> {
        let kv = store.kv(SETTINGS_TREE)?;
        let overrides = kv.get(KEY)?.unwrap_or_default();
        Ok(Arc::new(Self {
            base: base.clone(),
            default_enabled,
            default_root,
            kv,
            overrides: RwLock::new(overrides),
            live: RwLock::new(None),
            write: tokio::sync::Mutex::new(()),
            events,
        }))
    }

    /// `[tftp]` with the stored overrides applied (`root` and `enabled` resolved).
    pub fn effective(&self) -> TftpConfig {
        let o = self.overrides.read().map(|g| g.clone()).unwrap_or_default();
        let mut c = self.base.clone();
        c.timeout_ms = o.timeout_ms.unwrap_or(c.timeout_ms);
        c.retries = o.retries.unwrap_or(c.retries);
        c.enabled = Some(o.enabled.or(c.enabled).unwrap_or(self.default_enabled));
        c.port = o.port.unwrap_or(c.port);
        c.listen = o.listen.unwrap_or(c.listen);
        c.root = Some(
            o.root
                .or(c.root)
                .unwrap_or_else(|| self.default_root.read().map(|g| g.clone()).unwrap_or_default()),
        );
        c.max_transfers = o.max_transfers.unwrap_or(c.max_transfers);
        c
    }

    /// Whether TFTP should run (the effective `enabled`).
    pub fn enabled(&self) -> bool {
        self.effective().enabled.unwrap_or(false)
    }

    /// Connects the running server's limits.
    pub fn attach(&self, limits: Arc<RwLock<TftpLimits>>) {
        if let Ok(mut g) = self.live.write() {
            *g = Some(limits);
        }
    }

    /// Disconnects them (the server stopped).
    pub fn detach(&self) {
        if let Ok(mut g) = self.live.write() {
            *g = None;
        }
    }

    /// The event bus (the TFTP server publishes transfer events on it).
    pub fn events(&self) -> &Arc<EventBus> {
        &self.events
    }

    /// True when the TFTP server runs.
    pub fn running(&self) -> bool {
        self.live.read().is_ok_and(|g| g.is_some())
    }

    /// Validates, stores and applies a change. Returns the effective settings and whether
    /// the running server must be restarted for it (socket, root or limits changed).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key for a value out of range, store errors.
    pub async fn set(&self, c: TftpChange) -> Result<(TftpConfig, bool), ServiceError> {
        let bad = |m: &str| Err(ServiceError::Invalid(m.into()));
        if c.timeout_ms.is_some_and(|t| !(10..=60_000).contains(&t)) {
            return bad("'timeout_ms' must be 10-60000");
        }
        if c.retries.is_some_and(|r| r > 100) {
            return bad("'retries' must be 0-100");
        }
        if c.port == Some(0) {
            return bad("'port' must be 1-65535");
        }
        if c.max_transfers.is_some_and(|m| !(1..=65_536).contains(&m)) {
            return bad("'max_transfers' must be 1-65536");
        }
        if let Some(r) = &c.root {
            // The current root sent back unchanged (a GET answer PUT back) is fine.
            if self.effective().root.as_ref() != Some(r) && (!r.is_absolute() || !r.is_dir()) {
                return Err(ServiceError::Invalid(format!(
                    "'root' {} must be an absolute path to an existing directory",
                    r.display()
                )));
            }
        }
        let _w = self.write.lock().await;
        let before = self.effective();
        let old = self.overrides.read().map(|g| g.clone()).unwrap_or_default();
        let mut o = old.clone();
        o.timeout_ms = c.timeout_ms.or(o.timeout_ms);
        o.retries = c.retries.or(o.retries);
        o.enabled = c.enabled.or(o.enabled);
        o.port = c.port.or(o.port);
        o.listen = c.listen.or(o.listen);
        o.root = c.root.or(o.root);
        o.max_transfers = c.max_transfers.or(o.max_transfers);
        if o == old {
            return Ok((before, false));
        }
        self.kv.put(KEY, &o).await?;
        if let Ok(mut g) = self.overrides.write() {
            *g = o;
        }
        let eff = self.effective();
        if let Some(l) = self.live.read().ok().and_then(|g| g.clone()) {
            if let Ok(mut l) = l.write() {
                l.timeout = std::time::Duration::from_millis(eff.timeout_ms.max(10));
                l.retries = eff.retries;
            }
        }
        let restart = (
            before.enabled,
            before.port,
            before.listen,
            &before.root,
            before.max_transfers,
        ) != (eff.enabled, eff.port, eff.listen, &eff.root, eff.max_transfers);
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
