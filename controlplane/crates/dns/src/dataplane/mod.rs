//! The XDP data plane as seen by the rest of the control plane: the narrow [`DnsTable`]
//! trait through which the DNS service projects its zone into the BPF maps, and its
//! status. The aya-backed implementation (loading, attaching, map sync) lives in
//! the `xdp` module when built (not with `AYA_BUILD_SKIP=1`); [`NoDataplane`] is used when XDP is off or
//! cannot attach, and [`FakeTable`] in tests.

use std::{net::IpAddr, sync::Mutex};

use bootlane_common::dns::{DnsAnswer, DnsConfig, DnsKey};
use ipnet::IpNet;
use serde::Serialize;
use utoipa::ToSchema;

/// Everything the XDP program needs, computed from the zone and settings.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// `(scope, qname, qtype)` → RRset entries ([`crate::dns::zone::Zone::projection`]).
    pub entries: Vec<(DnsKey, DnsAnswer)>,
    /// Scope prefixes and ids for the LPM trie.
    pub scopes: Vec<(IpNet, u32)>,
    /// Addresses the fast path answers on (the DNS server's listen addresses, expanded).
    pub server_addrs: Vec<IpAddr>,
    /// Answer-building parameters.
    pub config: DnsConfig,
}

pub mod config;
#[cfg(all(target_os = "linux", not(bootlane_no_xdp)))]
pub mod xdp;

/// Errors from the data plane.
#[derive(Debug, thiserror::Error)]
pub enum DataplaneError {
    /// The eBPF object lacks a program or map it should hold (a build problem); names it.
    #[error("loading the XDP program failed: {0}")]
    Missing(String),
    /// The kernel or aya refused the object or the program (not root, no BPF, verifier
    /// rejection); `what` says which step, `source` is aya's error, kept whole.
    #[error("loading the XDP program failed: {what}: {source}")]
    Load {
        /// The step that failed, e.g. `verifier/kernel refused dns_responder`.
        what: String,
        /// aya's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An aya map error, with the map named in `map`.
    #[error("BPF map {map}: {source}")]
    MapOp {
        /// Map name (`common::dns::DNS_*`).
        map: &'static str,
        /// The aya error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Status of the fast path for `GET /services/dns` and `/metrics`.
#[derive(Debug, Clone, Serialize, ToSchema, Default)]
pub struct XdpStatus {
    /// Configured mode (`auto`, `native`, `generic`, `off`).
    pub mode: String,
    /// True when the program is attached to at least one interface.
    pub active: bool,
    /// Why the fast path is not active (or partly active), if so.
    pub reason: Option<String>,
    /// Interfaces and the mode each one is attached in.
    pub interfaces: Vec<XdpInterface>,
    /// Entries currently in the answer map.
    pub map_entries: usize,
    /// Capacity of the answer map.
    pub map_capacity: u32,
    /// Counters summed over CPUs.
    pub counters: XdpCounters,
}

impl XdpStatus {
    /// Copies the status and the per-CPU-summed counters into the metrics recorder
    /// ([`bootlane_core::metrics::XDP_ANSWERED`], [`bootlane_core::metrics::XDP_PASSED`], [`bootlane_core::metrics::XDP_RRL`],
    /// [`bootlane_core::metrics::XDP_ACTIVE`], [`bootlane_core::metrics::XDP_CONFIGURED`],
    /// [`bootlane_core::metrics::XDP_MAP_ENTRIES`]) at scrape
    /// time; the kernel program keeps the real counters.
    pub fn export(&self) {
        use bootlane_core::metrics::{XDP_ACTIVE, XDP_ANSWERED, XDP_CONFIGURED, XDP_MAP_ENTRIES, XDP_PASSED, XDP_RRL};
        let c = self.counters;
        metrics::counter!(XDP_ANSWERED).absolute(c.answered);
        for (reason, v) in [
            ("not_dns", c.pass_not_dns),
            ("miss", c.pass_miss),
            ("unsupported", c.pass_unsupported),
            ("too_long", c.pass_too_long),
            ("malformed", c.pass_malformed),
        ] {
            metrics::counter!(XDP_PASSED, "reason" => reason).absolute(v);
        }
        for (action, v) in [("dropped", c.rrl_dropped), ("slipped", c.rrl_slipped)] {
            metrics::counter!(XDP_RRL, "action" => action).absolute(v);
        }
        metrics::gauge!(XDP_ACTIVE).set(f64::from(u8::from(self.active)));
        metrics::gauge!(XDP_CONFIGURED).set(f64::from(u8::from(self.mode != "off")));
        metrics::gauge!(XDP_MAP_ENTRIES).set(self.map_entries as f64);
    }

    /// The status as the `data` of the `dataplane.xdp.*` events.
    pub fn event_data(&self) -> bootlane_core::events::DataplaneXdp {
        let c = self.counters;
        bootlane_core::events::DataplaneXdp {
            mode: self.mode.clone(),
            active: self.active,
            reason: self.reason.clone(),
            interfaces: self
                .interfaces
                .iter()
                .map(|i| bootlane_core::events::DataplaneXdpInterface {
                    name: i.name.clone(),
                    attach_mode: i.attach_mode.clone(),
                })
                .collect(),
            map_entries: self.map_entries as u64,
            map_capacity: self.map_capacity,
            counters: bootlane_core::events::DataplaneXdpCounters {
                answered: c.answered,
                pass_not_dns: c.pass_not_dns,
                pass_miss: c.pass_miss,
                pass_unsupported: c.pass_unsupported,
                pass_too_long: c.pass_too_long,
                pass_malformed: c.pass_malformed,
                rrl_dropped: c.rrl_dropped,
                rrl_slipped: c.rrl_slipped,
            },
        }
    }
}

/// One attached interface.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct XdpInterface {
    /// Interface name.
    pub name: String,
    /// `native` or `generic`.
    pub attach_mode: String,
}

/// XDP counters (packets), summed over CPUs.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, Default)]
pub struct XdpCounters {
    /// Answered in the kernel (`XDP_TX`).
    pub answered: u64,
    /// Passed: not a DNS query for us.
    pub pass_not_dns: u64,
    /// Passed: no map entry.
    pub pass_miss: u64,
    /// Passed: query shape not handled by the fast path.
    pub pass_unsupported: u64,
    /// Passed: qname too long.
    pub pass_too_long: u64,
    /// Passed: malformed.
    pub pass_malformed: u64,
    /// Answers dropped by response rate limiting.
    pub rrl_dropped: u64,
    /// Answers over the rate limit sent truncated (TC=1) instead: the slip.
    pub rrl_slipped: u64,
}

/// The control plane's handle on the fast path's maps.
pub trait DnsTable: Send + Sync {
    /// Makes the maps equal to `p`: upserts changed entries, deletes stale ones.
    ///
    /// # Errors
    /// [`DataplaneError`] when a map update fails (the map may then be partly updated;
    /// the next apply repairs it).
    fn apply(&self, p: &Projection) -> Result<(), DataplaneError>;
    /// Current status and counters.
    fn status(&self) -> XdpStatus;
    /// Attaches the fast path where the DNS server listens (`listen`: its addresses,
    /// `0.0.0.0`/`::` meaning every interface of that family) or on the configured
    /// interfaces, detaching from interfaces no longer wanted; answers where it is
    /// attached afterwards. Called when the DNS service starts and when its listen
    /// addresses or the host's interfaces change. The default (no fast path) attaches
    /// nothing and answers an empty list.
    ///
    /// # Errors
    /// Why nothing could be attached (userspace answers everything meanwhile).
    fn attach(&self, listen: &[IpAddr]) -> Result<Vec<XdpInterface>, String> {
        let _ = listen;
        Ok(Vec::new())
    }
    /// Detaches the program from every interface (the DNS service stopped); the maps
    /// stay loaded for the next [`DnsTable::attach`]. The default does nothing.
    fn detach(&self) {}
}

/// No fast path (XDP off or not attachable); `reason` says why.
pub struct NoDataplane {
    /// Configured mode.
    pub mode: String,
    /// Why there is no fast path.
    pub reason: String,
}

impl DnsTable for NoDataplane {
    fn apply(&self, _p: &Projection) -> Result<(), DataplaneError> {
        Ok(())
    }
    fn status(&self) -> XdpStatus {
        XdpStatus {
            mode: self.mode.clone(),
            active: false,
            reason: Some(self.reason.clone()),
            ..Default::default()
        }
    }
}

/// In-memory table for tests: keeps the last projection and where it would be attached.
#[derive(Default)]
pub struct FakeTable {
    /// The last applied projection.
    pub last: Mutex<Projection>,
    /// The listen addresses of the last [`DnsTable::attach`]; `None` after
    /// [`DnsTable::detach`] (and before any attach).
    pub attached: Mutex<Option<Vec<IpAddr>>>,
}

impl DnsTable for FakeTable {
    fn apply(&self, p: &Projection) -> Result<(), DataplaneError> {
        *self.last.lock().expect("fake table lock") = p.clone();
        Ok(())
    }
    fn status(&self) -> XdpStatus {
        let n = self.last.lock().expect("fake table lock").entries.len();
        XdpStatus {
            mode: "fake".into(),
            active: false,
            map_entries: n,
            ..Default::default()
        }
    }
    fn attach(&self, listen: &[IpAddr]) -> Result<Vec<XdpInterface>, String> {
        *self.attached.lock().expect("fake table lock") = Some(listen.to_vec());
        Ok(Vec::new())
    }
    fn detach(&self) {
        *self.attached.lock().expect("fake table lock") = None;
    }
}

/// Loads and attaches the XDP program as `[dns.xdp]` (`cfg`) says, or explains why not;
/// with no interfaces configured it attaches where the DNS server `listen`s.
/// Never fails: without a fast path the DNS server answers everything from userspace,
/// and [`XdpStatus::reason`] (and the log) say why.
pub fn load(cfg: &config::XdpConfig, listen: &[IpAddr]) -> std::sync::Arc<dyn DnsTable> {
    let mode = format!("{:?}", cfg.mode).to_lowercase();
    let reason = if cfg.mode == config::XdpMode::Off {
        "XDP is off ([dns.xdp] mode = \"off\"); answering from userspace".to_string()
    } else {
        #[cfg(all(target_os = "linux", not(bootlane_no_xdp)))]
        match xdp::XdpTable::attach(cfg, listen) {
            Ok(t) => return std::sync::Arc::new(t),
            Err(reason) => reason,
        }
        #[cfg(not(all(target_os = "linux", not(bootlane_no_xdp))))]
        let _ = listen;
        #[cfg(not(all(target_os = "linux", not(bootlane_no_xdp))))]
        "built without XDP (AYA_BUILD_SKIP=1); answering from userspace".to_string()
    };
    tracing::warn!("{reason}");
    std::sync::Arc::new(NoDataplane { mode, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_data_is_the_status_as_it_was_serialised() {
        let mut status = XdpStatus {
            mode: "auto".into(),
            active: false,
            reason: Some("not root".into()),
            ..XdpStatus::default()
        };
        assert_eq!(
            serde_json::to_value(status.event_data()).unwrap(),
            serde_json::to_value(&status).unwrap()
        );
        status.active = true;
        status.reason = None;
        status.interfaces = vec![XdpInterface {
            name: "eth0".into(),
            attach_mode: "native".into(),
        }];
        status.map_entries = 12;
        status.map_capacity = 65536;
        status.counters = XdpCounters {
            answered: 1,
            pass_not_dns: 2,
            pass_miss: 3,
            pass_unsupported: 4,
            pass_too_long: 5,
            pass_malformed: 6,
            rrl_dropped: 7,
            rrl_slipped: 8,
        };
        assert_eq!(
            serde_json::to_value(status.event_data()).unwrap(),
            serde_json::to_value(&status).unwrap()
        );
    }
}
