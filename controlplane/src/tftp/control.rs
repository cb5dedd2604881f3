//! Live TFTP settings for `GET/PUT /services/tftp`: the retransmission timeout and the
//! retry count are stored as overrides over `[tftp]` and written into the running
//! server's limits (new transfers use them). Port, listen address, root, `enabled` and
//! `max_transfers` are read at start; the API refuses changing them with a 400.
//! State: the stored overrides (cached) and the running server's limits once started.

use std::sync::{Arc, OnceLock, RwLock};

use serde::{Deserialize, Serialize};

use super::{server::TftpLimits, TftpConfig};
use crate::store::{Kv, Store, StoreError};

/// Errors of TFTP settings changes.
#[derive(Debug, thiserror::Error)]
pub enum TftpAdminError {
    /// An invalid value (400).
    #[error("{0}")]
    Invalid(String),
    /// The store failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stored overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TftpOverrides {
    /// First retransmission timeout, milliseconds.
    pub timeout_ms: Option<u64>,
    /// Retransmissions before a transfer is abandoned.
    pub retries: Option<u32>,
}

const KEY: &str = "overrides";

/// Live TFTP settings. Shared by the API and `run()`.
pub struct TftpControl {
    base: TftpConfig,
    kv: Kv,
    overrides: RwLock<TftpOverrides>,
    live: OnceLock<Arc<RwLock<TftpLimits>>>,
    write: tokio::sync::Mutex<()>,
}

impl TftpControl {
    /// Opens the stored overrides.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(store: &Store, base: &TftpConfig) -> Result<Arc<Self>, StoreError> {
        let kv = store.kv("tftp_settings")?;
        let overrides = kv.get(KEY)?.unwrap_or_default();
        Ok(Arc::new(Self {
            base: base.clone(),
            kv,
            overrides: RwLock::new(overrides),
            live: OnceLock::new(),
            write: tokio::sync::Mutex::new(()),
        }))
    }

    /// `[tftp]` with the stored overrides applied.
    pub fn effective(&self) -> TftpConfig {
        let o = self.overrides.read().map(|g| *g).unwrap_or_default();
        let mut c = self.base.clone();
        c.timeout_ms = o.timeout_ms.unwrap_or(c.timeout_ms);
        c.retries = o.retries.unwrap_or(c.retries);
        c
    }

    /// Connects the running server's limits.
    pub fn attach(&self, limits: Arc<RwLock<TftpLimits>>) {
        let _ = self.live.set(limits);
    }

    /// True when the TFTP server runs.
    pub fn running(&self) -> bool {
        self.live.get().is_some()
    }

    /// Changes the timeout (10-60000 ms) and/or retries (0-100), stores them and applies
    /// them to new transfers.
    ///
    /// # Errors
    /// [`TftpAdminError::Invalid`] for a value out of range, store errors.
    pub async fn set(&self, timeout_ms: Option<u64>, retries: Option<u32>) -> Result<TftpConfig, TftpAdminError> {
        if timeout_ms.is_some_and(|t| !(10..=60_000).contains(&t)) {
            return Err(TftpAdminError::Invalid("'timeout_ms' must be 10-60000".into()));
        }
        if retries.is_some_and(|r| r > 100) {
            return Err(TftpAdminError::Invalid("'retries' must be 0-100".into()));
        }
        let _w = self.write.lock().await;
        let mut o = self.overrides.read().map(|g| *g).unwrap_or_default();
        o.timeout_ms = timeout_ms.or(o.timeout_ms);
        o.retries = retries.or(o.retries);
        self.kv.put(KEY, &o).await?;
        if let Ok(mut g) = self.overrides.write() {
            *g = o;
        }
        let eff = self.effective();
        if let Some(l) = self.live.get() {
            if let Ok(mut l) = l.write() {
                l.timeout = std::time::Duration::from_millis(eff.timeout_ms.max(10));
                l.retries = eff.retries;
            }
        }
        Ok(eff)
    }
}
