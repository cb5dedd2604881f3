//! BMC power: BMC configs ([`model`]) with their passwords sealed at rest ([`secret`]),
//! the protocol clients behind one trait ([`client`]: IPMI through Debian's `ipmitool` in
//! [`ipmi`], Redfish over HTTPS in [`redfish`]), and the service that is the single write
//! path for configs and the single path for every power and boot-device action
//! ([`service`]): resolve the config (or a host's own `bmc_*` fields), check the address
//! against `[bmc] allowed_networks`, drive the BMC, poll the power state to a deadline,
//! record the last status, publish `bmc.*` events.
//!
//! This module owns the `[bmc]` configuration section ([`BmcSection`], validated here;
//! `config.rs` only aggregates). It holds no global state: the service is built once in
//! `bootlane::app::build`.

pub mod client;
pub mod ipmi;
pub mod model;
pub mod redfish;
pub mod secret;
pub mod service;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// `[bmc]`: timeouts and limits of BMC calls.
///
/// ```toml
/// [bmc]
/// command_timeout_secs = 10   # one ipmitool run or one Redfish request, 1-120
/// settle_secs = 20            # how long a power action polls for the new state, 0-120
/// poll_interval_ms = 1000     # pause between those polls, 100-10000
/// concurrency = 8             # BMCs driven at once by a batch, 1-64
/// allowed_networks = []       # BMC addresses allowed (CIDRs); [] = any
/// ipmitool = "ipmitool"       # the ipmitool binary (a name on PATH or a path)
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BmcSection {
    /// Longest one `ipmitool` run (killed past it) or one Redfish request (1-120).
    pub command_timeout_secs: u64,
    /// How long a power action polls for the new state (0-120; below `[api]
    /// request_timeout_secs`).
    pub settle_secs: u64,
    /// Pause between those polls (100-10000).
    pub poll_interval_ms: u64,
    /// BMCs a batch drives at once (1-64).
    pub concurrency: usize,
    /// CIDRs BMC addresses must be in; empty: any.
    #[schemars(with = "Vec<String>")]
    pub allowed_networks: Vec<IpNet>,
    /// The `ipmitool` binary (Debian package `ipmitool`).
    pub ipmitool: String,
}

impl Default for BmcSection {
    fn default() -> Self {
        Self {
            command_timeout_secs: 10,
            settle_secs: 20,
            poll_interval_ms: 1000,
            concurrency: 8,
            allowed_networks: Vec::new(),
            ipmitool: "ipmitool".into(),
        }
    }
}

impl BmcSection {
    /// Checks the values (see the field docs).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=120).contains(&self.command_timeout_secs) {
            anyhow::bail!("[bmc] command_timeout_secs must be 1-120");
        }
        if self.settle_secs > 120 {
            anyhow::bail!("[bmc] settle_secs must be 0-120");
        }
        if !(100..=10_000).contains(&self.poll_interval_ms) {
            anyhow::bail!("[bmc] poll_interval_ms must be 100-10000");
        }
        if !(1..=64).contains(&self.concurrency) {
            anyhow::bail!("[bmc] concurrency must be 1-64");
        }
        if self.ipmitool.trim().is_empty() {
            anyhow::bail!("[bmc] ipmitool must name the ipmitool binary");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_bounds() {
        let d = BmcSection::default();
        d.validate().unwrap();
        assert_eq!((d.command_timeout_secs, d.settle_secs, d.concurrency), (10, 20, 8));
        let bad = |f: fn(&mut BmcSection)| {
            let mut c = BmcSection::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.command_timeout_secs = 0).contains("command_timeout_secs"));
        assert!(bad(|c| c.settle_secs = 121).contains("settle_secs"));
        assert!(bad(|c| c.poll_interval_ms = 50).contains("poll_interval_ms"));
        assert!(bad(|c| c.concurrency = 0).contains("concurrency"));
        assert!(bad(|c| c.ipmitool = " ".into()).contains("ipmitool"));
        let c: BmcSection = toml::from_str("allowed_networks = [\"127.0.0.0/8\"]\nsettle_secs = 0").unwrap();
        c.validate().unwrap();
        assert_eq!(c.allowed_networks, ["127.0.0.0/8".parse::<IpNet>().unwrap()]);
        assert!(
            toml::from_str::<BmcSection>("timeout = 1").is_err(),
            "unknown keys are refused"
        );
    }
}
