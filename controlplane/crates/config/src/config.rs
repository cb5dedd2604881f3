//! The configuration file ([`Config`]) and the command-line overrides of `bootlane serve`
//! ([`ServeArgs`]); the command line itself is the binary's `cli::Cli`.
//!
//! The TOML file is optional: every key has a default (documented in the book's configuration reference and on
//! each field). [`Config::load`] reads the file, applies command-line overrides and
//! validates everything (addresses, ports, the upstream list) before any service
//! starts, so a bad config is a clear error at start-up, never a half-running server.
//! Holds no global state.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The data directory: the database (`db/`), the event and audit journals (`journal/`),
    /// `initial-admin-password`, `store-format`, keys (`bmc.key`, `audit.key`, `tls/`),
    /// verified updates (`updates/`), and by default `logs/` and `boot/`.
    pub data_dir: PathBuf,
    /// `[server]` section.
    pub server: ServerConfig,
    /// `[api]` section.
    pub api: ApiConfig,
    /// `[auth]` section: directory and single sign-on, second factors.
    pub auth: crate::auth::AuthConfig,
    /// `[dns]` section.
    pub dns: bootlane_dns::dns::config::DnsConfig,
    /// `[dhcp]` section: DHCP / proxyDHCP per subnet. Default: no subnets (off).
    pub dhcp: bootlane_dhcp::dhcp::config::DhcpConfig,
    /// `[tftp]` section.
    pub tftp: bootlane_tftp::tftp::TftpConfig,
    /// `[boot]` section: the boot directory and the iPXE script.
    pub boot: bootlane_boot::boot::BootConfig,
    /// `[events]` section: event and audit-log retention.
    pub events: bootlane_core::events::EventsConfig,
    /// `[audit]` section: the audit log's syslog copy.
    pub audit: bootlane_core::audit::AuditConfig,
    /// `[logging]` section: level, log files, rotation, retention.
    pub logging: bootlane_core::logging::LoggingConfig,
    /// Older spelling of `[logging] level`; when present it wins over it.
    pub log: Option<String>,
    /// `[metrics]` section: who may scrape `/api/v1/metrics`.
    pub metrics: bootlane_core::metrics::MetricsConfig,
    /// `[files]` section: limits of the file API.
    pub files: bootlane_media::media::FilesConfig,
    /// `[wol]` section: Wake-on-LAN ports, repeat, stagger, allowed interfaces.
    pub wol: bootlane_machines::wol::WolConfig,
    /// `[diagnostics]` section: which targets ping and traceroute may probe.
    pub diagnostics: bootlane_machines::netdiag::DiagnosticsConfig,
    /// `[netboot]` section: the netboot catalog's cache.
    pub netboot: bootlane_install::netboot::NetbootConfig,
    /// `[access]` section: the access-control mode.
    pub access: bootlane_boot::access::AccessConfig,
    /// `[bmc]` section: BMC call timeouts, settle time, batch concurrency, allowed networks.
    pub bmc: bootlane_machines::bmc::BmcSection,
    /// `[nfs]` section: the exports file and `exportfs`.
    pub nfs: bootlane_media::nfs::NfsConfig,
    /// `[install_tasks]` section: deadlines, token lifetime, the answer's source check.
    pub install_tasks: bootlane_install::install::InstallTasksConfig,
    /// `[answers]` section: site install defaults, render fuel, answer-file validators.
    pub answers: bootlane_install::answers::config::AnswersConfig,
    /// `[community]` section: the store's catalog sources.
    pub community: bootlane_install::community::CommunityConfig,
    /// `[boot_sessions]` section: recording of boot sessions, when one ends, retention.
    pub boot_sessions: bootlane_sessions::config::SessionsConfig,
    /// `[updates]` section: the update source, its signing key, platform and limits.
    pub updates: bootlane_updates::updates::UpdatesConfig,
    /// `[store]` section: the embedded database's page cache.
    pub store: bootlane_core::store::StoreConfig,
    /// `[outbound]` section: which loopback and link-local targets outbound fetches (netboot
    /// cache, community sources, updates, Redfish) may reach; default none.
    pub outbound: bootlane_core::net::outbound::OutboundConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("/var/lib/bootlane"),
            server: ServerConfig::default(),
            api: ApiConfig::default(),
            auth: Default::default(),
            dns: bootlane_dns::dns::config::DnsConfig::default(),
            dhcp: Default::default(),
            tftp: Default::default(),
            boot: Default::default(),
            events: Default::default(),
            audit: Default::default(),
            logging: Default::default(),
            log: None,
            metrics: Default::default(),
            files: Default::default(),
            wol: Default::default(),
            diagnostics: Default::default(),
            netboot: Default::default(),
            access: Default::default(),
            bmc: Default::default(),
            nfs: Default::default(),
            install_tasks: Default::default(),
            answers: Default::default(),
            community: Default::default(),
            boot_sessions: Default::default(),
            updates: Default::default(),
            store: Default::default(),
            outbound: Default::default(),
        }
    }
}

/// `[server]`: identity of this server.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The service name, a DNS label. The default local domain is `<name>.local`, and the
    /// server's own A/AAAA auto-record is `<name>.<local domain>`.
    pub name: String,
    /// This node's name when several nodes share a site ([Several nodes](cluster.md)): every
    /// event carries it (`node`), `GET /events?node=` filters by it, `/status` reports it. A
    /// host name (letters, digits, `-`, dots between labels, at most 253 bytes).
    ///
    /// Default: the machine's host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

impl ServerConfig {
    /// This node's name: `node_name` when set, else [`default_node_name`].
    pub fn node_name(&self) -> String {
        self.node_name.clone().unwrap_or_else(default_node_name)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            name: "bootlane".into(),
            node_name: None,
        }
    }
}

pub use bootlane_core::net::types::default_node_name;

/// `[api]`: the REST API and web UI.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// The REST API, the web UI and (without `boot_listen`) HTTP boot. `0.0.0.0:<port>` also
    /// listens on `[::]:<port>`.
    pub listen: SocketAddr,
    /// Sessions expire after this many seconds (12 h).
    pub session_ttl_secs: u64,
    /// Larger request bodies are refused (413). File uploads have their own limit (`[files]`).
    pub max_body_bytes: usize,
    /// Slower requests are answered 408.
    pub request_timeout_secs: u64,
    /// HTTP connections open at once over every listener (1-65536); more are closed at accept.
    /// The unit's `LimitNOFILE` is sized for the default.
    pub max_connections: usize,
    /// HTTP connections open at once from one client address (1 up to `max_connections`); lower
    /// it only if no NAT gateway puts many machines behind one address.
    pub max_connections_per_client: usize,
    /// Seconds to send a whole request header (1-3600); also the keep-alive idle timeout and
    /// the TLS handshake's bound.
    pub header_read_timeout_secs: u64,
    /// Seconds one write may wait for a client that stopped reading (1-3600); then its
    /// connection is closed. A client that keeps reading is served however long the answer
    /// takes.
    pub write_timeout_secs: u64,
    /// The boot listener (plain HTTP): `/boot/...` and the machine routes move there, `listen`
    /// keeps the API and the UI. Unset: one listener serves everything. See [Split
    /// listeners](https.md#split-listeners).
    pub boot_listen: Option<SocketAddr>,
    /// HTTPS on `listen`: `off`, `self-signed` (made at first start in `<data_dir>/tls/`),
    /// `files` (`tls_cert_file` and `tls_key_file`) or `acme`. See [HTTPS](https.md#https).
    pub tls: TlsMode,
    /// `tls = "files"`: the PEM certificate chain, leaf first. Reloaded on SIGHUP and when the
    /// file changes.
    pub tls_cert_file: Option<PathBuf>,
    /// `tls = "files"`: its PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub tls_key_file: Option<PathBuf>,
    /// Names the certificate is for (self-signed SANs, ACME identifiers); empty: the node name
    /// (host name) and `localhost`. `acme` needs at least one DNS name.
    pub tls_names: Vec<String>,
    /// `Strict-Transport-Security: max-age` on every TLS answer (RFC 6797); 0 sends none.
    pub hsts_max_age_secs: u64,
    /// `tls = "acme"`: the ACME server's directory URL (RFC 8555 §7.1.1), e.g.
    /// `https://acme-v02.api.letsencrypt.org/directory`. Needs `boot_listen`, where HTTP-01 is
    /// answered.
    pub acme_directory_url: Option<String>,
    /// `tls = "acme"`: account contact URIs, e.g. `["mailto:ops@example.org"]`.
    pub acme_contact: Vec<String>,
    /// `tls = "acme"`: a PEM root to trust for the ACME server's own HTTPS (a private CA);
    /// default the public roots.
    pub acme_ca_file: Option<PathBuf>,
}

/// `[api] tls`: whether and how `[api] listen` speaks HTTPS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// Plain HTTP (the default: a lab on one port).
    #[default]
    Off,
    /// A self-signed certificate made at first start and kept in `<data_dir>/tls/`.
    SelfSigned,
    /// `tls_cert_file` and `tls_key_file`.
    Files,
    /// A certificate from an ACME server (RFC 8555).
    Acme,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            listen: "0.0.0.0:8080".parse().expect("static address"),
            session_ttl_secs: 12 * 3600,
            max_body_bytes: 1 << 20,
            request_timeout_secs: 30,
            max_connections: 1024,
            max_connections_per_client: 64,
            header_read_timeout_secs: 10,
            write_timeout_secs: 60,
            boot_listen: None,
            tls: TlsMode::Off,
            tls_cert_file: None,
            tls_key_file: None,
            tls_names: Vec::new(),
            hsts_max_age_secs: 365 * 24 * 3600,
            acme_directory_url: None,
            acme_contact: Vec::new(),
            acme_ca_file: None,
        }
    }
}

impl ApiConfig {
    /// The address boot clients are sent to (DHCP boot file URLs, iPXE scripts, boot
    /// menus): `boot_listen`, else `listen`.
    pub fn boot_addr(&self) -> SocketAddr {
        self.boot_listen.unwrap_or(self.listen)
    }

    /// Checks the connection limits and timeouts.
    ///
    /// # Errors
    /// The first key out of range, named with its allowed range.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=65_536).contains(&self.max_connections) {
            anyhow::bail!("[api] max_connections must be 1-65536, not {}", self.max_connections);
        }
        if !(1..=self.max_connections).contains(&self.max_connections_per_client) {
            anyhow::bail!(
                "[api] max_connections_per_client must be 1 up to max_connections ({}), not {}",
                self.max_connections,
                self.max_connections_per_client
            );
        }
        if !(1..=3600).contains(&self.header_read_timeout_secs) {
            anyhow::bail!(
                "[api] header_read_timeout_secs must be 1-3600, not {}",
                self.header_read_timeout_secs
            );
        }
        if !(1..=3600).contains(&self.write_timeout_secs) {
            anyhow::bail!(
                "[api] write_timeout_secs must be 1-3600, not {}",
                self.write_timeout_secs
            );
        }
        if let Some(b) = self.boot_listen {
            if b.port() == 0 {
                anyhow::bail!("[api] boot_listen needs a port 1-65535");
            }
            if b.port() == self.listen.port()
                && (b.ip() == self.listen.ip() || b.ip().is_unspecified() || self.listen.ip().is_unspecified())
            {
                anyhow::bail!(
                    "[api] boot_listen ({b}) overlaps listen ({}): use another port, or leave boot_listen unset for one listener",
                    self.listen
                );
            }
        }
        if self.tls == TlsMode::Files && (self.tls_cert_file.is_none() || self.tls_key_file.is_none()) {
            anyhow::bail!("[api] tls = \"files\" needs tls_cert_file and tls_key_file");
        }
        if self.tls == TlsMode::Acme && !self.tls_names.iter().any(|n| n.parse::<std::net::IpAddr>().is_err()) {
            anyhow::bail!("[api] tls = \"acme\" needs at least one DNS name in tls_names");
        }
        if self.tls == TlsMode::Acme && (self.acme_directory_url.is_none() || self.boot_listen.is_none()) {
            anyhow::bail!(
                "[api] tls = \"acme\" needs acme_directory_url and boot_listen (where the http-01 challenges are answered)"
            );
        }
        Ok(())
    }
}

impl Config {
    /// The names a self-signed or ACME certificate is for: `[api] tls_names`, or when
    /// empty this node's name (`[server] node_name`, else the host name) and `localhost`.
    pub fn tls_names(&self) -> Vec<String> {
        if self.api.tls_names.is_empty() {
            let node = self.server.node_name();
            let mut v = vec![node];
            if v[0] != "localhost" {
                v.push("localhost".into());
            }
            v
        } else {
            self.api.tls_names.clone()
        }
    }

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

    /// Checks every section through its own `validate`, plus the rules that span
    /// sections (the server name, the default local domain derived from it) and the API's.
    /// Returns the first problem of [`Config::problems`].
    fn validate(&self) -> anyhow::Result<()> {
        match self.problems().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every validation problem, one per failing rule or section (a section's own
    /// `validate` stops at its first problem); empty when the
    /// configuration is valid. Each message names the key (`[section] key`).
    /// Used by `bootlane config check`.
    pub fn problems(&self) -> Vec<anyhow::Error> {
        let mut out = Vec::new();
        if let Err(e) = bootlane_core::net::types::validate_host_label(&self.server.name) {
            out.push(anyhow::Error::new(e).context(format!(
                "[server] name = {:?} must be a single DNS label valid as a host name",
                self.server.name
            )));
        }
        if let Some(Err(e)) = self
            .server
            .node_name
            .as_deref()
            .map(bootlane_core::net::types::validate_hostname)
        {
            out.push(anyhow::Error::new(e).context(format!(
                "[server] node_name = {:?} must be a host name (letters, digits and '-', dots between labels)",
                self.server.node_name.as_deref().unwrap_or_default()
            )));
        }
        if let Err(e) = bootlane_dns::dns::names::parse_domain(&self.local_domain()) {
            out.push(anyhow::Error::new(e).context(format!(
                "[dns] local_domain = {:?} is not a valid domain name",
                self.local_domain()
            )));
        }
        if self.bmc.settle_secs >= self.api.request_timeout_secs {
            out.push(anyhow::anyhow!(
                "[bmc] settle_secs ({}) must be below [api] request_timeout_secs ({}), or power actions are cut off before they settle",
                self.bmc.settle_secs,
                self.api.request_timeout_secs
            ));
        }
        if self.api.session_ttl_secs == 0 {
            out.push(anyhow::anyhow!("[api] session_ttl_secs must be > 0"));
        }
        if let Err(e) = self.api.validate() {
            out.push(e);
        }
        for r in [
            self.dns.validate(),
            self.dhcp.validate(),
            self.boot.validate(),
            self.events.validate(),
            self.tftp.validate(),
            self.logging.validate(),
            self.metrics.validate(),
            self.files.validate(),
            self.wol.validate(),
            self.diagnostics.validate(),
            self.boot_sessions.validate(),
            self.netboot.validate(),
            self.access.validate(),
            self.bmc.validate(),
            self.nfs.validate(),
            self.install_tasks.validate(),
            self.answers.validate(),
            self.community.validate(),
            self.updates.validate(),
            self.store.validate(),
            self.outbound.validate(),
            self.auth.validate(),
        ] {
            if let Err(e) = r {
                out.push(e);
            }
        }
        out
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

#[cfg(test)]
mod tests {
    //! Tests of the aggregate: sections parsed together and the rules that span them
    //! (moved here from `dhcp/config.rs` and `logging/mod.rs` so no lower module
    //! imports `Config`, not even in tests).
    use std::path::Path;

    use super::{Config, ServeArgs};
    use bootlane_core::logging::Rotation;

    fn parse(toml_text: &str) -> anyhow::Result<Config> {
        let c: Config = toml::from_str(toml_text)?;
        c.dhcp.validate()?;
        Ok(c)
    }

    const GOOD: &str = r#"
        [[dhcp.subnets]]
        mode = "server"
        interface = "br0"
        cidr = "10.77.0.0/24"
        range_start = "10.77.0.100"
        range_end = "10.77.0.150"
        router = "10.77.0.1"
        [[dhcp.subnets.reservations]]
        mac = "52-54-00-77-00-99"
        ip = "10.77.0.50"
        hostname = "fixed"

        [[dhcp.subnets]]
        mode = "proxy"
        interface = "eth1"
        cidr = "192.168.5.0/24"

        [dhcp.arch_map]
        7 = "snponly.efi"
        10 = ""
    "#;

    #[test]
    fn defaults_are_off() {
        let c = Config::default();
        assert!(c.dhcp.subnets.is_empty());
        assert!(!c.dhcp.any_active());
        assert!(!c.tftp_enabled());
        assert_eq!(c.boot_root(), c.data_dir.join("boot"));
        // A subnet without mode is off.
        let c = parse("[[dhcp.subnets]]\ninterface = \"x\"\ncidr = \"10.0.0.0/24\"\n").unwrap();
        assert!(!c.dhcp.any_active());
    }

    #[test]
    fn full_example() {
        let c = parse(GOOD).unwrap();
        assert!(c.dhcp.any_active());
        assert!(c.tftp_enabled(), "TFTP follows DHCP when not set");
        assert_eq!(c.dhcp.subnets[0].lease_time_secs, 3600);
        let map = c.dhcp.arch_map().unwrap();
        assert_eq!(map[&7], "snponly.efi");
        assert_eq!(map[&0], "undionly.kpxe");
        assert!(!map.contains_key(&10));
        let c: Config = toml::from_str(&format!("{GOOD}\n[tftp]\nenabled = false\n")).unwrap();
        assert!(!c.tftp_enabled());
    }

    #[test]
    fn invalid_configs_are_refused() {
        let base = "[[dhcp.subnets]]\nmode = \"server\"\ninterface = \"br0\"\ncidr = \"10.77.0.0/24\"\n";
        for (extra, why) in [
            ("", "server without a pool"),
            ("range_start = \"10.77.0.10\"\n", "half a pool"),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.1.10\"\n",
                "pool outside",
            ),
            (
                "range_start = \"10.77.0.20\"\nrange_end = \"10.77.0.10\"\n",
                "reversed pool",
            ),
            (
                "range_start = \"10.77.0.0\"\nrange_end = \"10.77.0.10\"\n",
                "network address in pool",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\nrouter = \"10.1.1.1\"\n",
                "router outside",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\nlease_time_secs = 5\n",
                "short lease",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\nbogus = 1\n",
                "unknown key",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\n[[dhcp.subnets.reservations]]\nmac = \"zz\"\nip = \"10.77.0.5\"\n",
                "bad MAC",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\n[[dhcp.subnets.reservations]]\nmac = \"52:54:00:00:00:01\"\nip = \"10.78.0.5\"\n",
                "reservation outside",
            ),
            (
                "range_start = \"10.77.0.10\"\nrange_end = \"10.77.0.20\"\n[[dhcp.subnets.reservations]]\nmac = \"52:54:00:00:00:01\"\nip = \"10.77.0.5\"\n[[dhcp.subnets.reservations]]\nmac = \"52-54-00-00-00-01\"\nip = \"10.77.0.6\"\n",
                "MAC reserved twice",
            ),
        ] {
            assert!(parse(&format!("{base}{extra}")).is_err(), "{why}");
        }
        assert!(parse("[dhcp.arch_map]\nx86 = \"a\"\n").is_err());
        assert!(parse("[dhcp]\nmode = \"server\"\n").is_err());
    }

    #[test]
    fn config_section_defaults_and_the_old_log_key() {
        let c: Config = toml::from_str("").unwrap();
        let l = &c.logging;
        assert_eq!(
            (
                l.level.as_str(),
                l.rotation,
                l.max_file_bytes,
                l.keep_files,
                l.retention_days
            ),
            ("info", Rotation::Daily, 64 << 20, 14, 30)
        );
        assert_eq!(l.dir_in(Path::new("/data")), Path::new("/data/logs"));
        let c: Config = toml::from_str("[logging]\nrotation = \"hourly\"\ndir = \"/x\"\nkeep_files = 3").unwrap();
        assert_eq!((c.logging.rotation, c.logging.keep_files), (Rotation::Hourly, 3));
        assert_eq!(c.logging.dir_in(Path::new("/data")), Path::new("/x"));
        assert!(toml::from_str::<Config>("[logging]\nrotation = \"weekly\"").is_err());
        assert!(toml::from_str::<Config>("[logging]\nlevels = \"info\"").is_err());
        // The old top-level key still parses; Config::load copies it into [logging] level.
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "log = \"debug\"\n").unwrap();
        let args = ServeArgs {
            config: Some(file.path().to_path_buf()),
            log: Some("warn".into()),
            ..Default::default()
        };
        let c = Config::load(&args).unwrap();
        assert_eq!(c.logging.level, "debug");
        assert_eq!(c.logging.level_override.as_deref(), Some("warn"));
        std::fs::write(file.path(), "[logging]\nkeep_files = 0\n").unwrap();
        let e = Config::load(&args).unwrap_err().to_string();
        assert!(e.contains("[logging] keep_files"), "{e}");
        let bad = ServeArgs {
            log: Some("bootlane=[".into()),
            ..Default::default()
        };
        let e = format!("{:#}", Config::load(&bad).unwrap_err());
        assert!(e.contains("--log"), "{e}");
    }

    /// `[store] cache_mb` bounds sled's page cache; 64 MiB by default, below 8 refused
    /// with the key named.
    #[test]
    fn store_cache_mb_default_and_bound() {
        let c: Config = toml::from_str("").unwrap();
        assert_eq!(c.store.cache_mb, 64);
        let c: Config = toml::from_str("[store]\ncache_mb = 256\n").unwrap();
        assert_eq!(c.store.cache_mb, 256);
        let c: Config = toml::from_str("[store]\ncache_mb = 4\n").unwrap();
        let e = c.store.validate().unwrap_err().to_string();
        assert!(e.contains("[store] cache_mb"), "{e}");
        assert!(toml::from_str::<Config>("[store]\ncache = 4\n").is_err());
    }

    #[test]
    fn bmc_settle_time_fits_in_the_request_timeout() {
        let mut c = Config::default();
        assert!(c.problems().is_empty());
        c.bmc.settle_secs = 30;
        let p = c.problems();
        assert!(p.iter().any(|e| e.to_string().contains("[bmc] settle_secs")), "{p:?}");
    }

    #[test]
    fn api_boot_listen_and_tls_keys_are_checked() {
        let ok: Config =
            toml::from_str("[api]\nlisten = \"0.0.0.0:8443\"\nboot_listen = \"0.0.0.0:8080\"\ntls = \"self-signed\"\n")
                .expect("parses");
        assert!(ok.problems().is_empty(), "{:?}", ok.problems());
        assert_eq!(ok.api.boot_addr().port(), 8080);
        for (text, want) in [
            (
                "listen = \"0.0.0.0:8080\"\nboot_listen = \"127.0.0.1:8080\"",
                "overlaps",
            ),
            ("tls = \"files\"", "tls_cert_file"),
            ("tls = \"acme\"\ntls_names = [\"10.0.0.1\"]", "DNS name"),
            ("max_connections_per_client = 2000", "max_connections_per_client"),
            ("header_read_timeout_secs = 0", "header_read_timeout_secs"),
            ("write_timeout_secs = 0", "write_timeout_secs"),
        ] {
            let c: Config = toml::from_str(&format!("[api]\n{text}\n")).expect("parses");
            let p = c
                .problems()
                .iter()
                .map(|e| format!("{e:#}"))
                .collect::<Vec<_>>()
                .join("; ");
            assert!(p.contains(want), "{text}: {p}");
        }
    }
}
