//! Command line ([`Cli`]) and configuration file ([`Config`]).
//!
//! The TOML file is optional: every key has a default (documented in the README and on
//! each field). [`Config::load`] reads the file, applies command-line overrides and
//! validates everything (addresses, ports, the upstream list) before any service
//! starts, so a bad config is a clear error at start-up, never a half-running server.
//! Holds no global state.

use std::{
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

/// `bootlane` command line.
#[derive(Debug, Parser)]
#[command(
    name = "bootlane",
    version,
    about = "All-in-one network boot (PXE) server with a built-in DNS server"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (DNS, REST API and the other services) until SIGINT/SIGTERM.
    Serve(ServeArgs),
}

/// Arguments of `bootlane serve`.
#[derive(Debug, Args, Default, Clone)]
pub struct ServeArgs {
    /// Path of the TOML configuration file. Optional: without it every setting takes its default.
    #[arg(long, env = "BOOTLANE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Data directory (sled database, initial admin password, boot files). Overrides `data_dir`.
    #[arg(long, env = "BOOTLANE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// API listen address (`ip:port`). Overrides `[api] listen`.
    #[arg(long, env = "BOOTLANE_API_LISTEN")]
    pub api_listen: Option<SocketAddr>,
    /// DNS UDP/TCP port. Overrides `[dns] port` (only used to seed the stored DNS settings).
    #[arg(long, env = "BOOTLANE_DNS_PORT")]
    pub dns_port: Option<u16>,
    /// Log filter (tracing `EnvFilter` syntax), e.g. `info` or `bootlane=debug`. Overrides `RUST_LOG`.
    #[arg(long, env = "BOOTLANE_LOG")]
    pub log: Option<String>,
}

/// The whole configuration file. Unknown keys are an error (typos must not pass silently).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Data directory. Default `/var/lib/bootlane`.
    pub data_dir: PathBuf,
    /// `[server]` section.
    pub server: ServerConfig,
    /// `[api]` section.
    pub api: ApiConfig,
    /// `[dns]` section.
    pub dns: DnsConfig,
    /// `[dhcp]` section: DHCP / proxyDHCP per subnet. Default: no subnets (off).
    pub dhcp: crate::dhcp::config::DhcpConfig,
    /// `[tftp]` section.
    pub tftp: crate::tftp::TftpConfig,
    /// `[boot]` section: the boot directory and the iPXE script.
    pub boot: crate::boot::BootConfig,
    /// `[events]` section: event and audit-log retention.
    pub events: crate::events::EventsConfig,
    /// `[logging]` section: level, log files, rotation, retention.
    pub logging: crate::logging::LoggingConfig,
    /// Older spelling of `[logging] level` (earlier READMEs documented it); when present
    /// it wins over `[logging] level`. Default unset.
    pub log: Option<String>,
    /// `[metrics]` section: who may scrape `/api/v1/metrics`.
    pub metrics: crate::metrics::MetricsConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("/var/lib/bootlane"),
            server: ServerConfig::default(),
            api: ApiConfig::default(),
            dns: DnsConfig::default(),
            dhcp: Default::default(),
            tftp: Default::default(),
            boot: Default::default(),
            events: Default::default(),
            logging: Default::default(),
            log: None,
            metrics: Default::default(),
        }
    }
}

/// `[server]`: identity of this server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The service name (a DNS label). The default local domain is `<name>.local`, and the
    /// server's own A/AAAA auto-record is `<name>.<local domain>`. Default `bootlane`.
    pub name: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "bootlane".into(),
        }
    }
}

/// `[api]`: the REST API and web UI.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Listen address. Default `0.0.0.0:8080` (spec "Limits": API base port 8080).
    pub listen: SocketAddr,
    /// Session lifetime in seconds. Default 43200 (12 h).
    pub session_ttl_secs: u64,
    /// Largest accepted request body in bytes (413 above). Default 1 MiB.
    pub max_body_bytes: usize,
    /// Per-request timeout in seconds (408 above). Default 30.
    pub request_timeout_secs: u64,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            listen: "0.0.0.0:8080".parse().expect("static address"),
            session_ttl_secs: 12 * 3600,
            max_body_bytes: 1 << 20,
            request_timeout_secs: 30,
        }
    }
}

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

impl Config {
    /// Reads the file named by `args.config` (if any), applies the command-line
    /// overrides and validates the result.
    ///
    /// # Errors
    /// An unreadable file, invalid TOML, an unknown key, or a value that fails
    /// validation (the message names the key and says what is expected).
    pub fn load(args: &ServeArgs) -> anyhow::Result<Self> {
        let mut cfg = match &args.config {
            Some(path) => Self::from_file(path)?,
            None => Self::default(),
        };
        if let Some(d) = &args.data_dir {
            cfg.data_dir = d.clone();
        }
        if let Some(l) = args.api_listen {
            cfg.api.listen = l;
        }
        if let Some(p) = args.dns_port {
            cfg.dns.port = p;
        }
        if let Some(l) = &cfg.log {
            cfg.logging.level.clone_from(l);
        }
        if let Some(l) = &args.log {
            cfg.logging.level_override = Some(l.clone());
        } else if let Ok(l) = std::env::var("RUST_LOG") {
            cfg.logging.level_override = Some(l);
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses a TOML file.
    ///
    /// # Errors
    /// I/O errors and TOML errors, with the path in the message.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading config file {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))
    }

    /// The effective local domain: `[dns] local_domain`, or `<server.name>.local`.
    pub fn local_domain(&self) -> String {
        self.dns
            .local_domain
            .clone()
            .unwrap_or_else(|| format!("{}.local", self.server.name))
    }

    fn validate(&self) -> anyhow::Result<()> {
        crate::net::types::validate_host_label(&self.server.name).with_context(|| {
            format!(
                "[server] name = {:?} must be a single DNS label valid as a host name",
                self.server.name
            )
        })?;
        crate::dns::names::parse_domain(&self.local_domain()).with_context(|| {
            format!(
                "[dns] local_domain = {:?} is not a valid domain name",
                self.local_domain()
            )
        })?;
        if self.dns.port == 0 {
            bail!("[dns] port must be 1-65535");
        }
        crate::dns::upstream::parse_upstreams(&self.dns.upstream).context("[dns] upstream")?;
        if self.api.session_ttl_secs == 0 {
            bail!("[api] session_ttl_secs must be > 0");
        }
        self.dhcp.validate()?;
        if let Some(t) = &self.boot.ipxe_script {
            if let Err(e) = crate::boot::catalog::check_template(t) {
                bail!("[boot] ipxe_script is not a valid template: {e}");
            }
        }
        self.events.validate().map_err(anyhow::Error::msg)?;
        if self.tftp.port == 0 {
            bail!("[tftp] port must be 1-65535");
        }
        self.logging.validate()?;
        self.metrics.validate()?;
        Ok(())
    }

    /// The boot directory served by TFTP and `GET /boot/...`: `[boot] root`, or
    /// `<data_dir>/boot`.
    pub fn boot_root(&self) -> PathBuf {
        self.boot.root.clone().unwrap_or_else(|| self.data_dir.join("boot"))
    }

    /// Whether the TFTP server runs: `[tftp] enabled`, or when unset, whenever a DHCP
    /// subnet is in `server` or `proxy` mode (so an unconfigured Bootlane opens no boot
    /// ports).
    pub fn tftp_enabled(&self) -> bool {
        self.tftp.enabled.unwrap_or_else(|| self.dhcp.any_active())
    }
}
