//! Wake-on-LAN: the magic packet ([`packet`]), sending it as a UDP broadcast out of
//! chosen interfaces ([`sender`]), the bounded wake history ([`history`]), cron schedules
//! with a time zone ([`schedules`]) and the service that is the single path for all of it
//! ([`service`]): resolve the host, pick the interfaces, send, record, publish
//! `wol.sent`.
//!
//! This module owns the `[wol]` configuration section ([`WolConfig`], validated here;
//! `config.rs` only aggregates). It holds no global state: the service is built once in
//! `bootlane::app::build` and its scheduler task stops with the server's cancellation token.

pub mod history;
pub mod packet;
pub mod schedules;
pub mod sender;
pub mod service;

use serde::{Deserialize, Serialize};

/// Largest accepted repeat count (packets per destination and wake).
pub const MAX_REPEAT: u8 = 10;
/// Largest accepted stagger between the hosts of a batch wake, in milliseconds.
pub const MAX_STAGGER_MS: u64 = 60_000;

/// `[wol]`: Wake-on-LAN defaults.
///
/// ```toml
/// [wol]
/// ports = [9, 7]        # UDP destination ports; default [9]
/// repeat = 3            # packets per destination and wake, 1-10; default 3
/// stagger_ms = 500      # default pause between hosts of a batch wake, 0-60000; default 500
/// interfaces = []       # interfaces WOL may broadcast on; default [] = every broadcast-capable one
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WolConfig {
    /// UDP destination ports of the magic packet (1-8 ports); `[9, 7]` adds echo.
    pub ports: Vec<u16>,
    /// Packets per destination and wake (1-10).
    pub repeat: u8,
    /// Default pause between hosts of a batch wake or schedule run (0-60000).
    pub stagger_ms: u64,
    /// Interfaces WOL may send on; empty: every interface up and able to broadcast.
    pub interfaces: Vec<String>,
}

impl Default for WolConfig {
    fn default() -> Self {
        Self {
            ports: vec![9],
            repeat: 3,
            stagger_ms: 500,
            interfaces: Vec::new(),
        }
    }
}

impl WolConfig {
    /// Checks the values (see the field docs).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        let mut ports = self.ports.clone();
        ports.sort_unstable();
        ports.dedup();
        if ports.is_empty() || ports.len() > 8 || ports.len() != self.ports.len() || ports.contains(&0) {
            anyhow::bail!("[wol] ports must be 1-8 distinct non-zero UDP ports, e.g. [9] or [9, 7]");
        }
        if !(1..=MAX_REPEAT).contains(&self.repeat) {
            anyhow::bail!("[wol] repeat must be 1-{MAX_REPEAT}");
        }
        if self.stagger_ms > MAX_STAGGER_MS {
            anyhow::bail!("[wol] stagger_ms must be 0-{MAX_STAGGER_MS}");
        }
        if self.interfaces.iter().any(|i| i.is_empty() || i.len() > 15) {
            anyhow::bail!("[wol] interfaces must be interface names (1-15 bytes)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_bounds() {
        let d = WolConfig::default();
        d.validate().unwrap();
        assert_eq!((d.ports.as_slice(), d.repeat, d.stagger_ms), (&[9u16][..], 3, 500));
        let bad = |f: fn(&mut WolConfig)| {
            let mut c = WolConfig::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.ports.clear()).contains("ports"));
        assert!(bad(|c| c.ports = vec![9, 9]).contains("ports"));
        assert!(bad(|c| c.ports = vec![0]).contains("ports"));
        assert!(bad(|c| c.repeat = 0).contains("repeat"));
        assert!(bad(|c| c.repeat = 11).contains("repeat"));
        assert!(bad(|c| c.stagger_ms = 60_001).contains("stagger_ms"));
        assert!(bad(|c| c.interfaces = vec![String::new()]).contains("interfaces"));
        let c: WolConfig = toml::from_str("ports = [9, 7]\nrepeat = 1\nstagger_ms = 0").unwrap();
        c.validate().unwrap();
        assert!(
            toml::from_str::<WolConfig>("port = 9").is_err(),
            "unknown keys are refused"
        );
    }
}
