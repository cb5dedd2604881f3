//! `[boot_sessions]`: whether boot sessions are recorded, when one ends, and how many are
//! kept.

use serde::{Deserialize, Serialize};

/// `[boot_sessions]`: recording and retention of boot sessions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// Record boot sessions (the DHCP server then hands each message it handled to the
    /// recorder through a bounded queue; off, it does nothing extra).
    pub enabled: bool,
    /// A session with no new step for this many seconds ends with its verdict (1-86400).
    pub quiet_secs: u64,
    /// How long a session whose installer fetched its answer file waits for the
    /// installer's report before it ends, in seconds (1-604800).
    pub installer_wait_secs: u64,
    /// Most ended sessions kept.
    pub retention_count: usize,
    /// Ended sessions older than this many days are removed (1-36500).
    pub retention_days: u32,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            quiet_secs: 900,
            installer_wait_secs: 7200,
            retention_count: 5000,
            retention_days: 30,
        }
    }
}

impl SessionsConfig {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=86_400).contains(&self.quiet_secs) {
            anyhow::bail!("[boot_sessions] quiet_secs must be 1-86400");
        }
        if !(1..=604_800).contains(&self.installer_wait_secs) {
            anyhow::bail!("[boot_sessions] installer_wait_secs must be 1-604800");
        }
        if self.retention_count == 0 {
            anyhow::bail!("[boot_sessions] retention_count must be at least 1");
        }
        if !(1..=36_500).contains(&self.retention_days) {
            anyhow::bail!("[boot_sessions] retention_days must be 1-36500");
        }
        Ok(())
    }
}
