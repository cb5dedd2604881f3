//! `[dns]`, the DNS service's own configuration section (issue 7 §1: each service owns its
//! section and its checks; `config.rs` only aggregates). No state.

use std::net::IpAddr;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::dataplane::config::XdpConfig;

/// `[dns]`: the built-in DNS server (spec "Built-in DNS server"). These values seed the
/// stored DNS settings on the first start; afterwards `PUT /api/v1/services/dns` changes
/// them live and the store is authoritative (see the README).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DnsConfig {
    /// Run the DNS server. Default true.
    pub enabled: bool,
    /// UDP and TCP port. Default 53.
    pub port: u16,
    /// Addresses to listen on. Default `["0.0.0.0", "::"]`.
    pub listen: Vec<IpAddr>,
    /// Local domain. Default `<server.name>.local`.
    pub local_domain: Option<String>,
    /// Upstream servers: `host:port` entries separated by commas or whitespace; empty means
    /// no forwarding. Default empty.
    pub upstream: String,
    /// `[dns.xdp]`: the XDP fast path.
    pub xdp: XdpConfig,
}

impl Default for DnsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            port: 53,
            listen: vec![IpAddr::from([0, 0, 0, 0]), IpAddr::from([0u16; 8])],
            local_domain: None,
            upstream: String::new(),
            xdp: XdpConfig::default(),
        }
    }
}

impl DnsConfig {
    /// Checks the section: port 1-65535, `local_domain` (when set) a valid domain name,
    /// every upstream entry parses. The default local domain (`<server.name>.local`) is
    /// checked by the aggregate, which knows the server name.
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.port == 0 {
            bail!("[dns] port must be 1-65535");
        }
        if let Some(d) = &self.local_domain {
            super::names::parse_domain(d)
                .with_context(|| format!("[dns] local_domain = {d:?} is not a valid domain name"))?;
        }
        super::upstream::parse_upstreams(&self.upstream).context("[dns] upstream")?;
        Ok(())
    }
}
