//! The DNS service: owns the DNS settings and the record table, keeps the zone snapshot,
//! the sockets and the XDP projection in step with them. This is the single write path
//! of DNS records: API handler → store (flushed) → zone rebuild → BPF map update, all
//! before the API answers, serialised by one async mutex so concurrent writes cannot
//! interleave their projections. Global state: the running sockets' cancellation token.

use std::{
    net::{IpAddr, SocketAddr},
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use bootlane_common::dns::{DnsConfig as XdpDnsConfig, CFG_FLAG_RA};
use hickory_proto::rr::Name;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::{
    handler::{DnsHandler, EDNS_UDP_SIZE},
    names,
    records::{self, DnsRecord, RecordInput, RecordKind},
    server,
    upstream::{parse_upstreams, resolve_upstreams},
    zone::{Zone, ZoneInput},
};
use crate::dataplane::{DnsTable, Projection};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    net::{interface_addrs, IfAddr},
    service_error::ServiceError,
    settings::{Effect, Group, Layer, Problem, Source},
    store::{Entity, Store, StoreError, Table},
};

/// Stored DNS settings (spec "DNS settings").
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct DnsSettings {
    /// Whether the DNS server runs.
    pub enabled: bool,
    /// UDP and TCP port, 1-65535.
    pub port: u16,
    /// Listen addresses.
    #[schema(value_type = Vec<String>)]
    pub listen: Vec<IpAddr>,
    /// Local domain (without trailing dot).
    pub local_domain: String,
    /// Upstream servers, `host:port` entries separated by commas or whitespace; empty: no forwarding.
    pub upstream: String,
    /// Clients that may recurse (`[dns] allow_recursion`: CIDRs, addresses, `dhcp`,
    /// `localnets`, `localhost`); settings stored before the key existed get the default.
    #[serde(default = "super::acl::default_allow_recursion")]
    pub allow_recursion: Vec<String>,
}

/// The DNS group of the settings layer: `[dns]` is the base, `PUT /services/dns` stores
/// overrides in `settings/dns`; every key applies live ([`DnsService::apply_settings`]).
impl Group for DnsSettings {
    const TREE: &'static str = "settings";
    const KEY: &'static str = SETTINGS_KEY;
    const SERVICE: &'static str = "dns";
    const WHOLE_DOCUMENT: bool = true;

    fn validate(&self) -> Vec<Problem> {
        let mut p = Vec::new();
        if self.port == 0 {
            p.push(Problem::new("port", "'port' 0 is out of range: use 1-65535"));
        }
        if self.listen.is_empty() {
            p.push(Problem::new(
                "listen",
                "'listen' must hold at least one address, e.g. [\"0.0.0.0\", \"::\"]",
            ));
        }
        if let Err(e) = names::parse_domain(&self.local_domain) {
            p.push(Problem::new(
                "local_domain",
                format!("'local_domain' {:?} is not a valid domain name: {e}", self.local_domain),
            ));
        }
        if let Err(e) = parse_upstreams(&self.upstream) {
            p.push(Problem::new("upstream", format!("'upstream': {e}")));
        }
        if let Err(e) = super::acl::parse(&self.allow_recursion) {
            p.push(Problem::new("allow_recursion", format!("'allow_recursion': {e}")));
        }
        p
    }

    fn effect(_: &str) -> Effect {
        Effect::Live
    }

    /// Older versions stored the whole document (seeded from the file on the first start);
    /// one stored before `allow_recursion` existed meant the default for it, not the file's.
    fn stored_overrides(
        mut doc: serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        let whole = ["enabled", "port", "listen", "local_domain", "upstream"]
            .iter()
            .all(|k| doc.contains_key(*k));
        if whole && !doc.contains_key("allow_recursion") {
            doc.insert(
                "allow_recursion".into(),
                serde_json::json!(super::acl::default_allow_recursion()),
            );
        }
        doc
    }
}

/// Body of `PUT /services/dns`: any subset of the settings.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DnsSettingsPatch {
    /// Run the DNS server.
    pub enabled: Option<bool>,
    /// Port 1-65535.
    pub port: Option<u32>,
    /// Listen addresses (IPv4/IPv6 literals).
    pub listen: Option<Vec<String>>,
    /// Local domain.
    pub local_domain: Option<String>,
    /// Upstream list.
    pub upstream: Option<String>,
    /// Clients that may recurse: CIDRs, addresses, `dhcp`, `localnets`, `localhost`.
    pub allow_recursion: Option<Vec<String>>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub xdp: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub running: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub bound: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub metrics: Option<serde_json::Value>,
    /// Read-only (`[dns.rrl]` in the configuration file), ignored.
    pub rrl: Option<serde_json::Value>,
}

/// What the DNS service needs from the configuration (a service never sees the whole
/// `Config`): `[dns]`, the server's name and the effective local domain.
#[derive(Debug, Clone)]
pub struct DnsServiceConfig {
    /// `[dns]`.
    pub dns: super::config::DnsConfig,
    /// `[server] name` (the server's own auto-record).
    pub server_name: String,
    /// `[dns] local_domain` or `<server name>.local`.
    pub local_domain: String,
}

impl DnsServiceConfig {
    /// The DNS settings with no configuration file (`[dns]`'s defaults, the local domain
    /// `<server name>.local`), for [`Layer::sources`].
    pub fn default_settings(&self) -> DnsSettings {
        let d = super::config::DnsConfig::default();
        DnsSettings {
            enabled: d.enabled,
            port: d.port,
            listen: d.listen,
            local_domain: format!("{}.local", self.server_name),
            upstream: d.upstream,
            allow_recursion: d.allow_recursion,
        }
    }

    /// The DNS settings the configuration file gives (the base the stored ones override).
    pub fn file_settings(&self) -> DnsSettings {
        DnsSettings {
            enabled: self.dns.enabled,
            port: self.dns.port,
            listen: self.dns.listen.clone(),
            local_domain: self.local_domain.clone(),
            upstream: self.dns.upstream.clone(),
            allow_recursion: self.dns.allow_recursion.clone(),
        }
    }

    /// The DNS settings layer over `store`: the file's values with the stored overrides.
    ///
    /// # Errors
    /// Store errors.
    pub fn settings_layer(&self, store: &Store) -> Result<Layer<DnsSettings>, ServiceError> {
        Layer::open(store, self.default_settings(), self.file_settings())
    }
}

/// The DNS service under the [`Supervisor`](bootlane_core::supervisor::Supervisor): start binds
/// the sockets, stop closes them and the fast path.
pub struct DnsUnit(pub Arc<DnsService>);

impl bootlane_core::supervisor::Service for DnsUnit {
    fn name(&self) -> &'static str {
        "dns"
    }
    fn start(&self) -> futures::future::BoxFuture<'_, anyhow::Result<Vec<String>>> {
        Box::pin(async move { Ok(self.0.serve()?.iter().map(ToString::to_string).collect()) })
    }
    fn stop(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move { self.0.halt() })
    }
    fn default_auto_start(&self) -> bool {
        self.0.settings().enabled
    }
    fn serving(&self) -> Option<Vec<String>> {
        let b = self.0.bound();
        (!b.is_empty()).then(|| b.iter().map(ToString::to_string).collect())
    }
}

const SETTINGS_KEY: &str = "dns";

/// The DNS service.
pub struct DnsService {
    records: RecordSet,
    handler: DnsHandler,
    dataplane: Arc<dyn DnsTable>,
    server_label: String,
    settings: Layer<DnsSettings>,
    running: Mutex<Option<(CancellationToken, Vec<SocketAddr>)>>,
    write_lock: tokio::sync::Mutex<()>,
    ifaddrs: Mutex<Vec<IfAddr>>,
    serial: AtomicU32,
    root: CancellationToken,
    workers: usize,
    events: Arc<EventBus>,
    served_subnets: Mutex<Option<ServedSubnets>>,
    rrl: super::rrl::RrlConfig,
    /// Key of the XDP program's RRL bucket hash (`DnsConfig::rrl_seed`), random per process.
    rrl_seed: u32,
}

/// Where `allow_recursion`'s `dhcp` keyword gets the served subnets from (the DHCP
/// control, set once it is open; asked again every [`ACL_REFRESH`]).
pub type ServedSubnets = Arc<dyn Fn() -> Vec<ipnet::IpNet> + Send + Sync>;

/// How often the recursion ACL is re-resolved (DHCP subnets, interface addresses).
pub const ACL_REFRESH: Duration = Duration::from_secs(10);

impl DnsService {
    /// [`DnsService::open`], then binds the sockets when the settings say `enabled`
    /// (in the server the supervisor does that step; tests use this).
    ///
    /// # Errors
    /// Store errors, or a bind error (e.g. port in use).
    pub async fn start(
        config: &DnsServiceConfig,
        store: &Store,
        dataplane: Arc<dyn DnsTable>,
        events: Arc<EventBus>,
        root: CancellationToken,
    ) -> anyhow::Result<Arc<Self>> {
        let svc = Self::open(config, store, dataplane, events, root).await?;
        if svc.settings().enabled {
            svc.serve()?;
        }
        Ok(svc)
    }

    /// Loads the settings (the file's with the stored overrides), creates the auto-records, builds the
    /// zone and projects it into `dataplane`. Binds nothing: see [`DnsService::serve`].
    ///
    /// # Errors
    /// Store errors.
    pub async fn open(
        config: &DnsServiceConfig,
        store: &Store,
        dataplane: Arc<dyn DnsTable>,
        events: Arc<EventBus>,
        root: CancellationToken,
    ) -> anyhow::Result<Arc<Self>> {
        let layer = config.settings_layer(store)?;
        let settings = layer.get();
        let svc = Arc::new(Self {
            records: RecordSet::load(store.table()?)?,
            handler: DnsHandler::default(),
            dataplane,
            server_label: config.server_name.to_ascii_lowercase(),
            settings: layer,
            running: Mutex::new(None),
            write_lock: tokio::sync::Mutex::new(()),
            ifaddrs: Mutex::new(interface_addrs()),
            serial: AtomicU32::new(OffsetDateTime::now_utc().unix_timestamp() as u32),
            root,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()).min(8),
            events,
            served_subnets: Mutex::new(None),
            rrl: config.dns.rrl.clone(),
            rrl_seed: rand::random(),
        });
        svc.handler
            .set_rrl(config.dns.rrl.enabled.then(|| super::rrl::Rrl::new(&config.dns.rrl)));
        svc.refresh_acl();
        match resolve_upstreams(&parse_upstreams(&settings.upstream).unwrap_or_default()).await {
            Ok(ups) => svc.handler.set_upstreams(ups),
            Err(e) => tracing::error!("no upstream forwarding until the setting is fixed: {e}"),
        }
        {
            let _g = svc.write_lock.lock().await;
            svc.ensure_auto_records().await?;
            svc.rebuild()?;
        }
        tokio::spawn(svc.clone().watch_interfaces());
        Ok(svc)
    }

    /// Binds the sockets with the settings in effect (an explicit start: whatever
    /// `enabled` says) and opens the XDP fast path's port; answers the bound addresses.
    /// A no-op when already serving.
    ///
    /// # Errors
    /// Bind errors (port in use, missing privileges) with the address.
    pub fn serve(&self) -> anyhow::Result<Vec<SocketAddr>> {
        if !self.bound().is_empty() {
            return Ok(self.bound());
        }
        let mut s = self.settings();
        s.enabled = true;
        self.rebind(&s)?;
        if let Err(e) = self.rebuild() {
            tracing::error!("projecting DNS data after start failed: {e}");
        }
        self.sync_xdp(&self.settings().listen);
        Ok(self.bound())
    }

    /// Stops answering: closes the sockets and closes the fast path (the XDP program
    /// passes every packet once its configured port is 0).
    pub fn halt(&self) {
        let mut s = self.settings();
        s.enabled = false;
        if let Err(e) = self.rebind(&s) {
            tracing::error!("stopping the DNS sockets failed: {e:#}");
        }
        if let Err(e) = self.rebuild() {
            tracing::error!("projecting DNS data after stop failed: {e}");
        }
        self.sync_xdp(&self.settings().listen);
    }

    /// Makes the XDP attachments follow the service: attached where it listens while it
    /// serves (new interfaces attached, old ones detached), detached when it is stopped.
    /// Publishes `dataplane.xdp.attached`, `dataplane.xdp.detached` or
    /// `dataplane.xdp.failed` when the set of interfaces changes or an attach fails.
    fn sync_xdp(&self, listen: &[IpAddr]) {
        let before = self.dataplane.status();
        if before.mode == "off" {
            return;
        }
        let serving = !self.bound().is_empty();
        let result = if serving {
            self.dataplane.attach(listen).map(|_| ())
        } else {
            self.dataplane.detach();
            Ok(())
        };
        let after = self.dataplane.status();
        let names = |s: &crate::dataplane::XdpStatus| s.interfaces.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        let (was, now) = (names(&before), names(&after));
        let event = match result {
            Err(reason) if before.reason.as_deref() != Some(reason.as_str()) || !was.is_empty() => Some((
                EventKind::DataplaneXdpFailed,
                format!("XDP fast path not attached: {reason}"),
            )),
            Ok(()) if now != was && now.is_empty() => Some((
                EventKind::DataplaneXdpDetached,
                format!("XDP fast path detached from {}", was.join(", ")),
            )),
            Ok(()) if now != was => Some((
                EventKind::DataplaneXdpAttached,
                format!("XDP fast path attached to {}", now.join(", ")),
            )),
            _ => None,
        };
        if let Some((kind, summary)) = event {
            self.events.publish(
                NewEvent::new(kind, summary)
                    .resource("dataplane", "xdp")
                    .with(&after.event_data()),
            );
        }
    }

    /// Tells the service where the served DHCP subnets come from (`allow_recursion`'s
    /// `dhcp` keyword) and re-resolves the ACL; until then `dhcp` stands for no subnet.
    pub fn set_served_subnets(&self, source: ServedSubnets) {
        *self.served_subnets.lock().expect("served subnets lock") = Some(source);
        self.refresh_acl();
    }

    /// Re-resolves `allow_recursion` (DHCP subnets and interface addresses change) and
    /// hands the prefixes to the handler; a no-op for the handler when nothing changed.
    fn refresh_acl(&self) {
        let entries = match super::acl::parse(&self.settings().allow_recursion) {
            Ok(e) => e,
            Err(e) => {
                // Stored settings are validated before they are stored: only a hand-edited
                // store gets here. Refusing recursion to everyone is the safe reading.
                tracing::error!("[dns] allow_recursion: {e}; recursion refused to every client");
                Vec::new()
            }
        };
        let source = self.served_subnets.lock().expect("served subnets lock").clone();
        let dhcp = source.map(|f| f()).unwrap_or_default();
        let ifaddrs = self.ifaddrs.lock().expect("ifaddrs lock").clone();
        self.handler
            .set_recursion_acl(Some(super::acl::resolve(&entries, &dhcp, &ifaddrs)));
    }

    /// The DNS settings in effect for `config` and `store` (the file's with the stored
    /// overrides) without opening the service: where the XDP program attaches at start.
    ///
    /// # Errors
    /// Store errors.
    pub fn effective_settings(config: &DnsServiceConfig, store: &Store) -> Result<DnsSettings, ServiceError> {
        Ok(config.settings_layer(store)?.get())
    }

    /// Where each DNS setting's value came from (`default`, `file`, `api`).
    pub fn settings_sources(&self) -> std::collections::BTreeMap<String, Source> {
        self.settings.sources()
    }

    /// The request handler (for tests and the XDP differential test).
    pub fn handler(&self) -> &DnsHandler {
        &self.handler
    }

    /// `[dns.rrl]` in effect (userspace and the XDP fast path).
    pub fn rrl(&self) -> &super::rrl::RrlConfig {
        &self.rrl
    }

    /// The data plane handle.
    pub fn dataplane(&self) -> &Arc<dyn DnsTable> {
        &self.dataplane
    }

    /// Current settings.
    pub fn settings(&self) -> DnsSettings {
        self.settings.get()
    }

    /// A receiver of the settings in effect (sees every change).
    pub fn subscribe_settings(&self) -> tokio::sync::watch::Receiver<DnsSettings> {
        self.settings.subscribe()
    }

    /// Addresses the server is listening on now (empty when stopped).
    pub fn bound(&self) -> Vec<SocketAddr> {
        self.running
            .lock()
            .expect("running lock")
            .as_ref()
            .map(|(_, a)| a.clone())
            .unwrap_or_default()
    }

    /// The local domain as a [`Name`].
    pub fn origin(&self) -> Name {
        names::parse_domain(&self.settings().local_domain).unwrap_or_else(|_| Name::root())
    }

    fn rebind(&self, s: &DnsSettings) -> anyhow::Result<()> {
        let mut running = self.running.lock().expect("running lock");
        let new = if s.enabled {
            let bound = server::bind(&s.listen, s.port, self.workers)?;
            let addrs = bound.addrs.clone();
            let token = self.root.child_token();
            server::spawn(bound, self.handler.clone(), token.clone())?;
            tracing::info!(addrs = ?addrs, "DNS server listening (UDP and TCP)");
            Some((token, addrs))
        } else {
            tracing::info!("DNS server stopped (disabled in settings)");
            None
        };
        if let Some((old, _)) = std::mem::replace(&mut *running, new) {
            old.cancel();
        }
        Ok(())
    }

    /// Rebuilds the zone and the XDP map from the stored records: called when another
    /// node changed them (see `bootlane::cluster`).
    ///
    /// # Errors
    /// A stored local domain that no longer parses; store errors.
    pub fn resync(&self) -> Result<(), ServiceError> {
        self.records.reload()?;
        self.rebuild()
    }
}

/// Another node's record changes rebuild the zone and the XDP map ([`DnsService::resync`]).
impl bootlane_core::store::follow::Follower for DnsService {
    fn name(&self) -> &'static str {
        "dns"
    }

    fn trees(&self) -> &'static [&'static str] {
        &[DnsRecord::TREE]
    }

    fn follow<'a>(
        &'a self,
        _: &'a bootlane_core::store::follow::Burst,
    ) -> bootlane_core::store::follow::BoxFuture<'a, Result<(), bootlane_core::store::follow::FollowError>> {
        Box::pin(async move { Ok(self.resync()?) })
    }
}

impl DnsService {
    /// Rebuilds the zone from the store and projects it into the data plane.
    fn rebuild(&self) -> Result<(), ServiceError> {
        let s = self.settings();
        let origin = names::parse_domain(&s.local_domain).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        let records = self.records.list()?;
        let ifaddrs = self.ifaddrs.lock().expect("ifaddrs lock").clone();
        let serial = self.serial.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let zone = Arc::new(Zone::build(ZoneInput {
            origin,
            server_label: &self.server_label,
            records: &records,
            ifaddrs: ifaddrs.clone(),
            serial,
            recursion_available: !s.upstream.trim().is_empty(),
        }));
        let projection = Projection {
            entries: zone.projection(),
            scopes: zone.scopes().collect(),
            server_addrs: server_addrs(&s, &ifaddrs),
            config: XdpDnsConfig {
                port: if self.running.lock().expect("running lock").is_some() {
                    s.port
                } else {
                    0
                },
                edns_udp_size: EDNS_UDP_SIZE,
                flags: if zone.recursion_available() { CFG_FLAG_RA } else { 0 },
                rrl_interval_ns: self.rrl.interval_ns(),
                rrl_slip: self.rrl.slip,
                rrl_seed: self.rrl_seed,
                rrl_mask_v4: self.rrl.mask_words().0,
                rrl_mask_v6: self.rrl.mask_words().1,
                ..Default::default()
            },
        };
        self.handler.set_zone(zone);
        if let Err(e) = self.dataplane.apply(&projection) {
            tracing::error!("XDP map update failed, the fast path may answer stale data until the next change: {e}");
        }
        Ok(())
    }

    /// Creates, updates or removes the auto-records (`@` and the server's name, A and —
    /// when the server has a global IPv6 address — AAAA; spec "Built-in DNS server" item 4).
    /// Each has a fixed id ([`auto_record_id`]), so nodes sharing one store write the same
    /// four rows rather than one set each; the value is the writing node's address, for
    /// display: every node answers them with its own address per scope.
    async fn ensure_auto_records(&self) -> Result<(), ServiceError> {
        let ifaddrs = self.ifaddrs.lock().expect("ifaddrs lock").clone();
        let primary = |v4: bool| {
            ifaddrs
                .iter()
                .filter(|a| !a.is_local_only())
                .find(|a| a.addr.is_ipv4() == v4)
                .map(|a| a.addr)
                .or_else(|| ifaddrs.iter().find(|a| a.addr.is_ipv4() == v4).map(|a| a.addr))
        };
        let now = OffsetDateTime::now_utc();
        let existing: Vec<DnsRecord> = self.records.list()?.into_iter().filter(|r| r.auto).collect();
        let mut wanted = Vec::new();
        for name in ["@".to_string(), self.server_label.clone()] {
            for (kind, addr) in [
                (RecordKind::A, primary(true)),
                (
                    RecordKind::AAAA,
                    primary(false).filter(|_| ifaddrs.iter().any(|a| a.addr.is_ipv6() && !a.is_local_only())),
                ),
            ] {
                let Some(addr) = addr else { continue };
                wanted.push((name.clone(), kind, addr.to_string()));
            }
        }
        // Auto-records stored under sequence ids (before fixed ids, or a duplicate two nodes
        // made at once) go; their fixed-id replacements are written below.
        for r in existing
            .iter()
            .filter(|r| auto_record_id(&r.name == "@", r.kind) != Some(r.id))
        {
            self.records.remove(r.id).await?;
        }
        let existing: Vec<&DnsRecord> = existing
            .iter()
            .filter(|r| auto_record_id(&r.name == "@", r.kind) == Some(r.id))
            .collect();
        for (name, kind, value) in &wanted {
            let Some(id) = auto_record_id(name == "@", *kind) else {
                continue;
            };
            match existing.iter().find(|r| &r.name == name && r.kind == *kind) {
                Some(r) if &r.value == value => {}
                Some(r) => {
                    let mut r = (*r).clone();
                    r.value = value.clone();
                    r.updated_at = now;
                    self.records.put(&r).await?;
                }
                None => {
                    let r = DnsRecord {
                        id,
                        name: name.clone(),
                        fqdn: String::new(),
                        kind: *kind,
                        value: value.clone(),
                        ttl: records::DEFAULT_TTL,
                        priority: None,
                        subnet: None,
                        enabled: true,
                        auto: true,
                        created_at: now,
                        updated_at: now,
                    };
                    self.records.put(&r).await?;
                }
            }
        }
        for r in existing.into_iter().filter(|r| {
            !wanted
                .iter()
                .any(|(n, k, _)| auto_record_id(n == "@", *k) == Some(r.id))
        }) {
            self.records.remove(r.id).await?;
        }
        Ok(())
    }

    async fn watch_interfaces(self: Arc<Self>) {
        let mut tick = tokio::time::interval(ACL_REFRESH);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = self.root.cancelled() => return,
                _ = tick.tick() => {}
            }
            let now = interface_addrs();
            if *self.ifaddrs.lock().expect("ifaddrs lock") == now {
                // DHCP subnets may have changed through the API.
                self.refresh_acl();
            }
            if *self.ifaddrs.lock().expect("ifaddrs lock") == now {
                continue;
            }
            tracing::info!("interface addresses changed; rebuilding DNS data");
            *self.ifaddrs.lock().expect("ifaddrs lock") = now;
            self.refresh_acl();
            let _g = self.write_lock.lock().await;
            if let Err(e) = self.ensure_auto_records().await.and_then(|_| self.rebuild()) {
                tracing::error!("rebuilding DNS data after an interface change failed: {e}");
            }
            // A new interface carrying a listened address gets the fast path too.
            self.sync_xdp(&self.settings().listen);
        }
    }

    /// Applies a settings patch live: validates it, binds new sockets first when the port,
    /// listen list or `enabled` changed (the old ones keep serving if that fails), stores
    /// it, and rebuilds the zone (a new local domain moves every relative name, the
    /// auto-records included).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the bad field, or a bind failure; store errors.
    pub async fn apply_settings(&self, patch: DnsSettingsPatch) -> Result<DnsSettings, ServiceError> {
        let _g = self.write_lock.lock().await;
        let old = self.settings();
        let mut new = old.clone();
        if let Some(e) = patch.enabled {
            new.enabled = e;
        }
        if let Some(p) = patch.port {
            new.port = u16::try_from(p)
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| ServiceError::Invalid(format!("'port' {p} is out of range: use 1-65535")))?;
        }
        if let Some(l) = patch.listen {
            if l.is_empty() {
                return Err(ServiceError::Invalid(
                    "'listen' must hold at least one address, e.g. [\"0.0.0.0\", \"::\"]".into(),
                ));
            }
            new.listen = l
                .iter()
                .map(|a| {
                    a.trim().parse::<IpAddr>().map_err(|_| {
                        ServiceError::Invalid(format!(
                            "'listen' entry {a:?} is not an IP address such as 0.0.0.0 or ::"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(d) = patch.local_domain {
            let name = names::parse_domain(d.trim())
                .map_err(|e| ServiceError::Invalid(format!("'local_domain' {d:?} is not a valid domain name: {e}")))?;
            new.local_domain = names::display(&name).trim_end_matches('.').to_string();
        }
        let mut upstreams = None;
        if let Some(u) = patch.upstream {
            let specs = parse_upstreams(&u).map_err(|e| ServiceError::Invalid(format!("'upstream': {e}")))?;
            upstreams = Some(
                resolve_upstreams(&specs)
                    .await
                    .map_err(|e| ServiceError::Invalid(format!("'upstream': {e}")))?,
            );
            new.upstream = u.trim().to_string();
        }
        if let Some(a) = patch.allow_recursion {
            super::acl::parse(&a).map_err(|e| ServiceError::Invalid(format!("'allow_recursion': {e}")))?;
            new.allow_recursion = a.iter().map(|e| e.trim().to_string()).collect();
        }
        if new == old {
            return Ok(new);
        }
        if let Some(p) = new.validate().into_iter().next() {
            return Err(ServiceError::Invalid(p.message));
        }
        let serving = !self.bound().is_empty();
        // `enabled` starts or stops the server; port and listen changes rebind it when it runs.
        let mut target = new.clone();
        target.enabled = if new.enabled != old.enabled {
            new.enabled
        } else {
            serving
        };
        if target.enabled != serving || (serving && (new.port, &new.listen) != (old.port, &old.listen)) {
            self.rebind(&target)
                .map_err(|e| ServiceError::Invalid(format!("the new DNS listen settings cannot be applied: {e:#}")))?;
            self.sync_xdp(&new.listen);
        }
        self.settings.set(new.clone()).await?;
        if let Some(ups) = upstreams {
            self.handler.set_upstreams(ups);
        }
        self.refresh_acl();
        self.rebuild()?;
        self.events.publish(NewEvent::write(
            EventKind::DnsSettingsChanged,
            "settings",
            "dns",
            "update",
            "DNS settings changed",
            Some(&old),
            Some(&new),
        ));
        Ok(new)
    }

    /// Every record (with `fqdn` filled), in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self) -> Result<Vec<DnsRecord>, ServiceError> {
        let origin = self.origin();
        Ok(self.records.list()?.into_iter().map(|r| r.with_fqdn(&origin)).collect())
    }

    /// One record.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], store errors.
    pub fn get(&self, id: u64) -> Result<DnsRecord, ServiceError> {
        self.records
            .get(id)?
            .map(|r| r.with_fqdn(&self.origin()))
            .ok_or(not_found(id))
    }

    fn check_conflicts(&self, rec: &DnsRecord, origin: &Name) -> Result<(), ServiceError> {
        let all = self.records.list()?;
        let owner = rec.owner(origin);
        // Cheap pre-filter before parsing names: two names can only be the same owner when
        // the other's first label is the owner's first label (or it is the apex `@`).
        let first = owner
            .as_ref()
            .and_then(|o| o.iter().next())
            .map(|l| String::from_utf8_lossy(l).to_ascii_lowercase())
            .unwrap_or_default();
        let maybe_same = |o: &DnsRecord| o.name == "@" || o.name.split('.').next() == Some(first.as_str());
        for other in all.iter().filter(|o| o.id != rec.id && maybe_same(o)) {
            if rec.same_data(other, origin) {
                return Err(ServiceError::Conflict(format!(
                    "an identical {} record for {} already exists (id {}); update that one instead",
                    rec.kind.as_str(),
                    rec.fqdn,
                    other.id
                )));
            }
            if other.owner(origin) == owner && (rec.kind == RecordKind::CNAME) != (other.kind == RecordKind::CNAME) {
                return Err(ServiceError::Invalid(format!(
                    "{} already has a {} record (id {}); a CNAME cannot coexist with other data at the same name (RFC 1034 §3.6.2)",
                    rec.fqdn,
                    other.kind.as_str(),
                    other.id
                )));
            }
            if other.owner(origin) == owner
                && rec.kind == RecordKind::CNAME
                && other.kind == RecordKind::CNAME
                && other.subnet == rec.subnet
            {
                return Err(ServiceError::Invalid(format!(
                    "{} already has a CNAME (id {}); a name can have only one",
                    rec.fqdn, other.id
                )));
            }
        }
        Ok(())
    }

    /// Validates and stores a new record, then updates the zone and the fast path.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] (400), [`ServiceError::Conflict`] (409), store errors.
    pub async fn create(&self, input: RecordInput) -> Result<DnsRecord, ServiceError> {
        let _g = self.write_lock.lock().await;
        let origin = self.origin();
        let rec = records::validate(&input, None, &origin, OffsetDateTime::now_utc())
            .map_err(|e| ServiceError::Invalid(e.0))?;
        self.check_conflicts(&rec, &origin)?;
        let rec = self.records.insert(rec).await?;
        self.rebuild()?;
        let rec = rec.with_fqdn(&origin);
        self.events
            .publish(record_event(EventKind::DnsRecordCreated, "create", None, Some(&rec)));
        Ok(rec)
    }

    /// Validates and stores a changed record (omitted fields keep their values).
    /// Auto-records accept only `ttl` and `enabled` changes.
    ///
    /// # Errors
    /// As [`DnsService::create`], plus [`ServiceError::NotFound`].
    pub async fn update(&self, id: u64, input: RecordInput) -> Result<DnsRecord, ServiceError> {
        let _g = self.write_lock.lock().await;
        let origin = self.origin();
        let base = self.records.get(id)?.ok_or(not_found(id))?;
        if base.auto {
            let changes_data = input.name.as_ref().is_some_and(|n| !n.eq_ignore_ascii_case(&base.name))
                || input
                    .kind
                    .as_ref()
                    .is_some_and(|k| !k.eq_ignore_ascii_case(base.kind.as_str()))
                || input.value.as_ref().is_some_and(|v| v != &base.value)
                || input.subnet.as_ref().is_some_and(|s| !s.is_empty());
            if changes_data {
                return Err(ServiceError::Invalid(format!(
                    "record {id} is an auto-record managed by the server: only 'ttl' and 'enabled' can be changed"
                )));
            }
        }
        let rec = records::validate(&input, Some(&base), &origin, OffsetDateTime::now_utc())
            .map_err(|e| ServiceError::Invalid(e.0))?;
        self.check_conflicts(&rec, &origin)?;
        self.records.put(&rec).await?;
        self.rebuild()?;
        let rec = rec.with_fqdn(&origin);
        let before = base.with_fqdn(&origin);
        self.events.publish(record_event(
            EventKind::DnsRecordUpdated,
            "update",
            Some(&before),
            Some(&rec),
        ));
        Ok(rec)
    }

    /// Deletes a record. Auto-records cannot be deleted (disable them instead).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Invalid`] for auto-records, store errors.
    pub async fn delete(&self, id: u64) -> Result<DnsRecord, ServiceError> {
        let _g = self.write_lock.lock().await;
        let rec = self.records.get(id)?.ok_or(not_found(id))?;
        if rec.auto {
            return Err(ServiceError::Invalid(format!(
                "record {id} is an auto-record managed by the server and comes back on start; set \"enabled\": false instead"
            )));
        }
        self.records.remove(id).await?;
        self.rebuild()?;
        let rec = rec.with_fqdn(&self.origin());
        self.events
            .publish(record_event(EventKind::DnsRecordDeleted, "delete", Some(&rec), None));
        Ok(rec)
    }
}

/// The record table with a write-through in-memory copy, so a change does not re-read
/// and decode every stored record (at 100k records that decode dominated the rebuild).
struct RecordSet {
    table: Table<DnsRecord>,
    cache: Mutex<std::collections::BTreeMap<u64, DnsRecord>>,
}

impl RecordSet {
    fn load(table: Table<DnsRecord>) -> Result<Self, StoreError> {
        let cache = table.list()?.into_iter().map(|r| (r.id, r)).collect();
        Ok(Self {
            table,
            cache: Mutex::new(cache),
        })
    }

    /// Re-reads the table (another node changed it).
    fn reload(&self) -> Result<(), StoreError> {
        let fresh = self.table.list()?.into_iter().map(|r| (r.id, r)).collect();
        *self.cache.lock().expect("record cache lock") = fresh;
        Ok(())
    }

    fn list(&self) -> Result<Vec<DnsRecord>, StoreError> {
        Ok(self
            .cache
            .lock()
            .expect("record cache lock")
            .values()
            .cloned()
            .collect())
    }

    fn get(&self, id: u64) -> Result<Option<DnsRecord>, StoreError> {
        Ok(self.cache.lock().expect("record cache lock").get(&id).cloned())
    }

    async fn insert(&self, r: DnsRecord) -> Result<DnsRecord, StoreError> {
        let r = self.table.insert(r).await?;
        self.cache.lock().expect("record cache lock").insert(r.id, r.clone());
        Ok(r)
    }

    async fn put(&self, r: &DnsRecord) -> Result<(), StoreError> {
        self.table.put(r).await?;
        self.cache.lock().expect("record cache lock").insert(r.id, r.clone());
        Ok(())
    }

    async fn remove(&self, id: u64) -> Result<(), StoreError> {
        self.table.remove(id).await?;
        self.cache.lock().expect("record cache lock").remove(&id);
        Ok(())
    }
}

/// `dns.record.*` for a record write (`before`/`after` as the API shows them).
fn record_event(kind: EventKind, action: &str, before: Option<&DnsRecord>, after: Option<&DnsRecord>) -> NewEvent {
    let r = after.or(before).expect("a record write has a before or an after");
    let verb = kind.verb();
    NewEvent::write(
        kind,
        "dns_record",
        r.id,
        action,
        format!("DNS record {} {} {} {verb}", r.fqdn, r.kind.as_str(), r.value),
        before,
        after,
    )
}

fn not_found(id: u64) -> ServiceError {
    ServiceError::NotFound(format!("DNS record {id} does not exist"))
}

/// The addresses the fast path answers on: the listen addresses, with unspecified ones
/// (`0.0.0.0`, `::`) expanded to every interface address of that family.
fn server_addrs(s: &DnsSettings, ifaddrs: &[IfAddr]) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for l in &s.listen {
        if l.is_unspecified() {
            out.extend(
                ifaddrs
                    .iter()
                    .filter(|a| a.addr.is_ipv4() == l.is_ipv4())
                    .map(|a| a.addr),
            );
        } else {
            out.push(*l);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Below 2^53, so JavaScript clients read the ids exactly; far above any id the store's
/// sequence will reach.
const AUTO_ID_BASE: u64 = (1 << 53) - 16;

/// The fixed id of an auto-record (one row per record whichever node writes it): `@` A,
/// `@` AAAA, the server's name A, its AAAA. `None` for other types.
pub fn auto_record_id(apex: bool, kind: RecordKind) -> Option<u64> {
    let k = match kind {
        RecordKind::A => 0,
        RecordKind::AAAA => 1,
        _ => return None,
    };
    Some(AUTO_ID_BASE + if apex { k } else { 2 + k })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(port: u16, upstream: &str) -> DnsServiceConfig {
        DnsServiceConfig {
            dns: super::super::config::DnsConfig {
                port,
                upstream: upstream.into(),
                ..Default::default()
            },
            server_name: "pxe".into(),
            local_domain: "pxe.local".into(),
        }
    }

    #[tokio::test]
    async fn a_whole_document_seeded_by_an_older_version_keeps_its_values() {
        let store = Store::temporary();
        // Seeded from the file (port 53) on the first start, before `allow_recursion`
        // existed, then the upstream changed through the API.
        let legacy = json!({"enabled": true, "port": 53, "listen": ["0.0.0.0", "::"],
            "local_domain": "pxe.local", "upstream": "9.9.9.9:53"});
        store.kv("settings").unwrap().put("dns", &legacy).await.unwrap();
        // Today's file says port 5353 and upstream 1.1.1.1: the stored copy still wins
        // everywhere it differs, as it did.
        let layer = config(5353, "1.1.1.1:53").settings_layer(&store).unwrap();
        let s = layer.get();
        assert_eq!((s.port, s.upstream.as_str()), (53, "9.9.9.9:53"));
        assert_eq!(s.allow_recursion, super::super::acl::default_allow_recursion());
        assert_eq!(layer.sources()["port"], Source::Api);
        assert_eq!(layer.sources()["listen"], Source::Default);
        // The file unchanged since the seed: nothing differs, the file's values serve, and
        // keys equal to the file's are not overrides.
        let layer = config(53, "9.9.9.9:53").settings_layer(&store).unwrap();
        assert_eq!(layer.get().port, 53);
        assert_eq!(layer.sources()["port"], Source::Default);
        assert_eq!(layer.sources()["upstream"], Source::File);
    }

    #[tokio::test]
    async fn the_file_is_the_base_and_a_stored_key_overrides_it() {
        let store = Store::temporary();
        store
            .kv("settings")
            .unwrap()
            .put("dns", &json!({"port": 5300}))
            .await
            .unwrap();
        let layer = config(5353, "1.1.1.1:53").settings_layer(&store).unwrap();
        assert_eq!(layer.get().port, 5300, "stored override");
        assert_eq!(layer.get().upstream, "1.1.1.1:53", "the file's");
        let bad = DnsSettings {
            port: 0,
            local_domain: "bad..name".into(),
            ..layer.get()
        };
        let p: Vec<String> = bad.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(p, vec!["port", "local_domain"]);
    }
}
