//! `[dns.xdp]`, the data plane's own configuration section (each service owns its section;
//! `config.rs` only aggregates). Lives with the data plane, below DNS, so the data plane
//! imports nothing from the layers above it. No state.

use serde::{Deserialize, Serialize};

/// `[dns.xdp]`: the XDP fast path for local A/AAAA answers.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct XdpConfig {
    /// `auto` (native, then generic, then userspace only; generic straight away on veth,
    /// bridge, tap and lo), `native`, `generic` or `off`. Needs `CAP_BPF`, `CAP_NET_ADMIN` and
    /// `CAP_PERFMON`.
    pub mode: XdpMode,
    /// Interfaces to attach to; empty: every interface carrying an address DNS listens on.
    pub interfaces: Vec<String>,
    /// Entries of the answer map (one per name, type and client scope).
    pub map_capacity: u32,
}

impl Default for XdpConfig {
    fn default() -> Self {
        Self {
            mode: XdpMode::Auto,
            interfaces: Vec::new(),
            map_capacity: bootlane_common::dns::DNS_MAP_CAPACITY,
        }
    }
}

/// XDP attach mode (`[dns.xdp] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// Try native (driver) mode, then generic (SKB) mode, then run without XDP.
    #[default]
    Auto,
    /// Native mode only; failure to attach leaves the server on userspace alone.
    Native,
    /// Generic (SKB) mode only.
    Generic,
    /// Do not load the XDP program.
    Off,
}
