//! `[dns.xdp]`, the data plane's own configuration section (each service owns its section;
//! `config.rs` only aggregates). Lives with the data plane, below DNS, so the data plane
//! imports nothing from the layers above it. No state.

use serde::{Deserialize, Serialize};

/// `[dns.xdp]`: the XDP fast path for local A/AAAA answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct XdpConfig {
    /// `auto` (native, then generic, then userspace only), `native`, `generic` or `off`.
    pub mode: XdpMode,
    /// Interfaces to attach to; empty means every interface that carries an address the
    /// DNS server listens on.
    pub interfaces: Vec<String>,
    /// Capacity of the answer map in entries (one entry per name, type and scope).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
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
