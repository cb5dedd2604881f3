//! `[dns]`, the DNS service's own configuration section (each service owns its section and
//! its checks; `config.rs` only aggregates). No state.

use std::net::IpAddr;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::dataplane::config::XdpConfig;

/// `[dns]`: the built-in DNS server (spec "Built-in DNS server"). These values are the
/// base of the DNS settings; `PUT /api/v1/services/dns` changes them live and stores the
/// keys it changed, which override the file key by key (see
/// [`bootlane_core::settings`] and the book's DNS chapter).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DnsConfig {
    /// Whether the DNS service runs.
    pub enabled: bool,
    /// UDP and TCP port.
    pub port: u16,
    /// Listen addresses.
    pub listen: Vec<IpAddr>,
    /// The local zone. Names relative to it move with it.
    ///
    /// Default: `"<server.name>.local"`.
    pub local_domain: Option<String>,
    /// Upstream servers, `host:port` entries separated by commas or whitespace; empty: no
    /// forwarding (names outside the local domain get REFUSED).
    pub upstream: String,
    /// Who may recurse: CIDRs, addresses, or `dhcp` (the served DHCP subnets), `localnets`
    /// (this server's interface subnets), `localhost` (127.0.0.0/8, ::1); `[]` refuses
    /// recursion to everyone. Local names are answered to all.
    pub allow_recursion: Vec<String>,
    /// `[dns.rrl]`: response rate limiting of UDP answers per client prefix, in userspace
    /// and in the XDP fast path. See [`crate::dns::rrl::RrlConfig`].
    pub rrl: super::rrl::RrlConfig,
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
            allow_recursion: super::acl::default_allow_recursion(),
            rrl: super::rrl::RrlConfig::default(),
            xdp: XdpConfig::default(),
        }
    }
}

impl DnsConfig {
    /// Checks the section: port 1-65535, `local_domain` (when set) a valid domain name,
    /// every upstream and `allow_recursion` entry parses. The default local domain (`<server.name>.local`) is
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
        if let Err(e) = super::acl::parse(&self.allow_recursion) {
            bail!("[dns] allow_recursion: {e}");
        }
        if let Err(e) = self.rrl.validate() {
            bail!("{e}");
        }
        Ok(())
    }
}
