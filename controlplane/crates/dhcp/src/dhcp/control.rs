//! Live DHCP administration: the one place the API changes what the running DHCP
//! handler uses, without a restart.
//!
//! - Reservations stored in the store (`/dhcp/reservations`) are added to the
//!   configuration file's reservations of their subnet.
//! - Per-subnet settings changed by `PUT /services/dhcp` (pool range, router, DNS servers,
//!   lease time, Secure Boot; mode, interface and server address, which need new sockets:
//!   the caller restarts the service) go through the settings layer as overrides over the
//!   file, per subnet and per setting ([`super::settings`]).
//! - The architecture map (`PUT /services/archmap`) goes through the settings layer as one
//!   value replacing `[dhcp.arch_map]` over the built-in defaults.
//! - Leases are deleted through the lease database the handler allocates from, so a
//!   deleted address is free at once.
//!
//! After every change the effective settings ([`DhcpEffective`]: subnets with their
//! reservations, IPv6 subnets, the architecture map) are published on a `watch` channel;
//! the running handlers subscribe ([`DhcpControl::subscribe`]) and rebuild their subnets
//! (keeping the server addresses resolved at start) at their next read. The running
//! service reports the server addresses it serves with ([`DhcpControl::set_running`]) for
//! the views. State: the settings layers, the shared lease database, the published
//! settings, the running servers, and a mutex serialising writes.

use std::{
    collections::{BTreeMap, HashSet},
    net::Ipv4Addr,
    sync::Arc,
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    config::{DhcpConfig, Reservation, SubnetConfig, SubnetMode},
    leases::{now_secs, Lease, LeaseDb},
    settings::{check_boot_file, ArchMapSettings, DhcpLayers, SubnetSettings, Subnets4},
    v6::leases::Lease6,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    net::types::{normalise_mac, validate_host_label},
    settings::{Group, Layer, Source},
    store::{Entity, Store, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

use bootlane_core::service_error::{double_option, ServiceError};

/// A reservation made through the API (`/dhcp/reservations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoredReservation {
    /// Id.
    pub id: u64,
    /// MAC, lower-case colon form.
    pub mac: String,
    /// The reserved address (a host address of `subnet`).
    #[schema(value_type = String)]
    pub ip: Ipv4Addr,
    /// Host name sent as option 12.
    pub hostname: Option<String>,
    /// Free text.
    pub description: String,
    /// The configured subnet (CIDR) containing `ip`.
    pub subnet: String,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(StoredReservation, "dhcp_reservations");

/// Body of `POST /dhcp/reservations` (`mac` and `ip` required) and
/// `PUT /dhcp/reservations/{id}` (any subset; omitted fields keep their values).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReservationInput {
    /// MAC, any of `:`, `-`, `.` or no separators.
    pub mac: Option<String>,
    /// IPv4 address inside a configured subnet.
    pub ip: Option<String>,
    /// Host name (a DNS label); `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub hostname: Option<Option<String>>,
    /// Free text.
    pub description: Option<String>,
    /// Optional: the subnet (CIDR) `ip` must lie in; derived from `ip` when omitted.
    pub subnet: Option<String>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub source: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

/// One subnet in `PUT /services/dhcp`: `cidr` names a subnet of the configuration file;
/// the other fields change it live. `mode`, `interface` and `server_address` may be sent
/// back unchanged (a GET answer PUT back), but changing them needs a restart: 400.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubnetPatch {
    /// The subnet, as in the configuration file (e.g. `10.77.0.0/24`).
    pub cidr: String,
    /// First pool address (server mode).
    #[schema(value_type = Option<String>)]
    pub range_start: Option<Ipv4Addr>,
    /// Last pool address (server mode).
    #[schema(value_type = Option<String>)]
    pub range_end: Option<Ipv4Addr>,
    /// Default gateway (option 3).
    #[schema(value_type = Option<String>)]
    pub router: Option<Ipv4Addr>,
    /// DNS servers (option 6).
    #[schema(value_type = Option<Vec<String>>)]
    pub dns: Option<Vec<Ipv4Addr>>,
    /// Lease time in seconds, at least 60.
    pub lease_time_secs: Option<u32>,
    /// Restart-only: `server`, `proxy` or `off`.
    pub mode: Option<SubnetMode>,
    /// Restart-only: the interface.
    pub interface: Option<String>,
    /// Restart-only: Bootlane's address on the subnet.
    #[schema(value_type = Option<String>)]
    pub server_address: Option<Ipv4Addr>,
    /// Hand x86-64 UEFI clients the signed shim (Secure Boot) instead of iPXE (live).
    pub secure_boot: Option<bool>,
    /// Read-only fields of the GET answer, accepted and ignored.
    pub reservations: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub server: Option<serde_json::Value>,
}

/// Body of `PUT /services/dhcp`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DhcpSettingsPatch {
    /// Subnets to change (others keep their settings).
    #[serde(default)]
    pub subnets: Vec<SubnetPatch>,
    /// IPv6 subnets to change (others keep their settings).
    #[serde(default)]
    pub subnets6: Vec<super::v6::control::Subnet6Patch>,
    /// Read-only, ignored.
    pub running: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub applied: Option<serde_json::Value>,
}

/// A subnet as `GET /services/dhcp` shows it: the effective settings.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubnetView {
    /// `server`, `proxy` or `off`.
    pub mode: SubnetMode,
    /// Interface.
    pub interface: String,
    /// The subnet.
    pub cidr: String,
    /// First pool address.
    #[schema(value_type = Option<String>)]
    pub range_start: Option<Ipv4Addr>,
    /// Last pool address.
    #[schema(value_type = Option<String>)]
    pub range_end: Option<Ipv4Addr>,
    /// Default gateway.
    #[schema(value_type = Option<String>)]
    pub router: Option<Ipv4Addr>,
    /// DNS servers handed out (`null`: Bootlane's own address).
    #[schema(value_type = Option<Vec<String>>)]
    pub dns: Option<Vec<Ipv4Addr>>,
    /// Lease time in seconds.
    pub lease_time_secs: u32,
    /// Configured server address (`null`: from the interface).
    #[schema(value_type = Option<String>)]
    pub server_address: Option<Ipv4Addr>,
    /// The server address in use (when DHCP runs).
    #[schema(value_type = Option<String>)]
    pub server: Option<Ipv4Addr>,
    /// Number of reservations (file and API).
    pub reservations: usize,
    /// x86-64 UEFI clients get the signed shim (Secure Boot) instead of iPXE.
    pub secure_boot: bool,
}

/// `GET /services/dhcp` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DhcpSettingsView {
    /// After a PUT: `live`, `restart` (the service was restarted to apply it) or that it
    /// applies at the next start; empty on GET.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub applied: String,
    /// True when the DHCP sockets are bound.
    pub running: bool,
    /// Every configured subnet.
    pub subnets: Vec<SubnetView>,
    /// Every configured IPv6 subnet (`[[dhcp.subnets6]]`, DHCPv6).
    pub subnets6: Vec<super::v6::control::Subnet6View>,
}

/// One architecture map entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchEntry {
    /// RFC 4578 §2.1 / IANA client architecture code, 0-65535.
    pub arch_code: u32,
    /// Boot file relative to the boot directory, or an `http(s)://` URL (`{server}` and
    /// `{http_port}` are replaced per client).
    pub boot_file: String,
    /// Name of the architecture (answers only; accepted and ignored on input, so a GET
    /// body can be PUT back; `skip_deserializing` would make it an unknown field).
    #[serde(default)]
    pub arch_name: String,
}

/// `GET /services/archmap` answer and `PUT` body.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchMap {
    /// Entries sorted by code; an architecture without entry gets no boot file.
    pub entries: Vec<ArchEntry>,
}

/// Name of an architecture code (IANA "Processor Architecture Types").
pub fn arch_name(code: u16) -> &'static str {
    match code {
        0 => "x86 BIOS",
        1 => "NEC/PC98",
        2 => "EFI Itanium",
        6 => "x86 UEFI (IA32)",
        7 => "x64 UEFI",
        9 => "x64 UEFI (EFI BC)",
        10 => "ARM 32-bit UEFI",
        11 => "ARM 64-bit UEFI",
        15 => "x86 UEFI HTTP",
        16 => "x64 UEFI HTTP",
        18 => "ARM 32-bit UEFI HTTP",
        19 => "ARM 64-bit UEFI HTTP",
        25 => "RISC-V 64-bit UEFI",
        _ => "",
    }
}

/// Converts a map to its API form.
pub fn arch_view(map: &BTreeMap<u16, String>) -> ArchMap {
    ArchMap {
        entries: map
            .iter()
            .map(|(k, v)| ArchEntry {
                arch_code: u32::from(*k),
                boot_file: v.clone(),
                arch_name: arch_name(*k).to_string(),
            })
            .collect(),
    }
}

/// `GET /leases/stats` entry (IPv4 and IPv6 subnets; an IPv6 pool's size saturates at
/// 2^64 - 1).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubnetStats {
    /// The subnet.
    pub subnet: String,
    /// `server` or `proxy`.
    pub mode: SubnetMode,
    /// Addresses in the pool (0 in proxy mode).
    pub size: u64,
    /// Pool addresses with an active lease or decline.
    pub used: u64,
    /// Reservations in the subnet (file and API; they may lie outside the pool).
    pub reserved: u64,
    /// Pool addresses neither used nor reserved.
    pub free: u64,
}

/// The tree of the DHCP settings (subnets and interfaces served, the DHCPv6 server DUID):
/// each machine's own.
pub(crate) const SETTINGS_TREE: &str = "dhcp_settings";
bootlane_core::store::node_tree!(SETTINGS_TREE, identity = [super::v6::DUID_KEY]);

/// The effective DHCP settings the running handlers follow: the file's subnets with the
/// stored overrides and reservations, the IPv6 subnets, the architecture map.
#[derive(Debug, Clone, Default)]
pub struct DhcpEffective {
    /// IPv4 subnets, mode `off` included.
    pub subnets: Vec<SubnetConfig>,
    /// IPv6 subnets, mode `off` included.
    pub subnets6: Vec<super::config::Subnet6Config>,
    /// Client architecture (option 93) → boot file.
    pub arch_map: BTreeMap<u16, String>,
}

/// The server address each subnet is served with by the running DHCP service, by subnet
/// key (the network in CIDR form), as resolved at its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunningServers {
    /// IPv4 subnets.
    pub v4: BTreeMap<String, Ipv4Addr>,
    /// IPv6 subnets.
    pub v6: BTreeMap<String, std::net::Ipv6Addr>,
}

/// The live DHCP administration. Shared by the API and the DHCP service.
pub struct DhcpControl {
    base: DhcpConfig,
    reservations: Table<StoredReservation>,
    leases: Arc<tokio::sync::Mutex<LeaseDb>>,
    effective: tokio::sync::watch::Sender<Arc<DhcpEffective>>,
    running: tokio::sync::watch::Sender<Option<RunningServers>>,
    subnets: Layer<Subnets4>,
    arch: Layer<ArchMapSettings>,
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
    v6: super::v6::control::Dhcp6Control,
    relays: super::relays::RelayLog,
    tracer: std::sync::OnceLock<super::trace::Tracer>,
}

use super::settings::key4 as key_of;

fn hostname(h: &str) -> Result<String> {
    let h = h.trim().to_ascii_lowercase();
    match validate_host_label(&h) {
        Ok(()) => Ok(h),
        Err(e) => Err(ServiceError::Invalid(format!(
            "'hostname' must be a single DNS label valid as a host name: {e}"
        ))),
    }
}

/// A trimmed interface name from a settings patch (1-15 bytes, no `/`, space or NUL);
/// `at` names the subnet in the 400.
pub(crate) fn interface_name<'a>(name: &'a str, at: &str) -> Result<&'a str> {
    let i = name.trim();
    if i.is_empty() || i.len() > 15 || i.contains(['/', ' ', '\0']) {
        return Err(ServiceError::Invalid(format!(
            "{at}: 'interface' {i:?} is not an interface name (1-15 bytes, no '/' or spaces)"
        )));
    }
    Ok(i)
}

impl DhcpControl {
    /// Opens the stored overrides and reservations and loads the leases.
    ///
    /// # Errors
    /// Store errors.
    pub async fn open(store: &Store, base: &DhcpConfig, events: Arc<EventBus>) -> Result<Arc<Self>> {
        let DhcpLayers {
            subnets,
            subnets6,
            arch_map,
        } = DhcpLayers::open(store, base)?;
        let mut leases = LeaseDb::load(store).await?;
        if store.watch_link().is_some() {
            // Several nodes may serve one pool: each searches it from its own point.
            leases.set_spread(&events.node());
        }
        let control = Arc::new(Self {
            base: base.clone(),
            reservations: store.table()?,
            leases: Arc::new(tokio::sync::Mutex::new(leases)),
            effective: tokio::sync::watch::Sender::new(Arc::default()),
            running: tokio::sync::watch::Sender::new(None),
            subnets,
            arch: arch_map,
            write: tokio::sync::Mutex::new(()),
            events,
            v6: super::v6::control::Dhcp6Control::open(store, &base.subnets6, subnets6).await?,
            relays: super::relays::RelayLog::default(),
            tracer: std::sync::OnceLock::new(),
        });
        control.apply()?;
        Ok(control)
    }

    /// Sets where the DHCP server offers what it saw (the boot sessions' recorder); the
    /// first call wins and applies from the next start of the service.
    pub fn set_tracer(&self, tracer: super::trace::Tracer) {
        let _ = self.tracer.set(tracer);
    }

    /// The tracer given to [`DhcpControl::set_tracer`], if any.
    pub fn tracer(&self) -> Option<super::trace::Tracer> {
        self.tracer.get().cloned()
    }

    /// The relay agents the running server has seen (kept across restarts of the service).
    pub fn relays(&self) -> &super::relays::RelayLog {
        &self.relays
    }

    /// The `[dhcp]` section this control was opened with (the file's subnets and their
    /// reservations, before stored overrides).
    pub fn file_config(&self) -> &DhcpConfig {
        &self.base
    }

    /// The IPv6 half: DHCPv6 subnets, leases and the running DHCPv6 handler.
    pub fn v6(&self) -> &super::v6::control::Dhcp6Control {
        &self.v6
    }

    /// The lease database (shared with the handler).
    pub fn leases(&self) -> Arc<tokio::sync::Mutex<LeaseDb>> {
        self.leases.clone()
    }

    /// A receiver of the effective settings: the running handlers follow it
    /// ([`super::handler::BootHandler::following`],
    /// [`super::v6::handler::Dhcp6Handler::following`]).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<DhcpEffective>> {
        self.effective.subscribe()
    }

    /// The DHCP service reports the server addresses it serves with (`Some`, at start) or
    /// that it stopped (`None`); the views and [`DhcpControl::running`] read it.
    pub fn set_running(&self, servers: Option<RunningServers>) {
        self.running.send_replace(servers);
    }

    /// The event bus (the DHCP service publishes lease events on it).
    pub fn events(&self) -> &Arc<EventBus> {
        &self.events
    }

    /// True when DHCP runs.
    pub fn running(&self) -> bool {
        self.running.borrow().is_some()
    }

    /// True when any effective subnet (IPv4 or IPv6) is in `server` or `proxy` mode.
    ///
    /// # Errors
    /// Store errors.
    pub fn any_active(&self) -> Result<bool> {
        Ok(self.effective_subnets()?.iter().any(|s| s.mode != SubnetMode::Off) || self.v6.any_active())
    }

    fn effective_with(&self, settings: &Subnets4) -> Result<Vec<SubnetConfig>> {
        let stored = self.reservations.list()?;
        Ok(self
            .base
            .subnets
            .iter()
            .map(|s| {
                let mut c = s.clone();
                let key = key_of(&c);
                if let Some(o) = settings.0.get(&key) {
                    o.apply_to(&mut c);
                }
                c.reservations
                    .extend(stored.iter().filter(|r| r.subnet == key).map(|r| Reservation {
                        mac: r.mac.clone(),
                        ip: r.ip,
                        hostname: r.hostname.clone(),
                    }));
                c
            })
            .collect())
    }

    /// The effective subnets: the file's, with stored overrides and reservations.
    ///
    /// # Errors
    /// Store errors.
    pub fn effective_subnets(&self) -> Result<Vec<SubnetConfig>> {
        self.effective_with(&self.subnets.get())
    }

    /// The effective architecture map: the stored one, else `[dhcp.arch_map]` over the
    /// defaults.
    pub fn arch_map(&self) -> BTreeMap<u16, String> {
        self.arch.get().arch_map
    }

    /// Where each DHCP setting's value came from (`<subnet>.<setting>` keys of the IPv4
    /// and IPv6 subnets, and `arch_map`): the file, a default or the API.
    pub fn sources(&self) -> BTreeMap<String, Source> {
        let mut all = self.subnets.sources();
        all.extend(self.v6.sources());
        all.extend(self.arch.sources());
        all
    }

    /// Pushes the stored reservations and settings into the running handler: called
    /// when another node changed them (see `bootlane::cluster`).
    ///
    /// # Errors
    /// Store errors.
    pub fn resync(&self) -> Result<()> {
        self.apply()
    }

    /// Applies other nodes' lease writes: the leases with these ids, or all of them when
    /// `ids` is `None` (the announcements overflowed).
    ///
    /// # Errors
    /// Store errors reading the mirror.
    pub async fn follow_leases(&self, ids: Option<Vec<u64>>) -> Result<()> {
        let mut db = self.leases.lock().await;
        match ids {
            Some(ids) => db.follow(ids)?,
            None => db.reload()?,
        }
        Ok(())
    }

    /// The trees whose change [`DhcpControl::resync`] takes in.
    const RESYNC_TREES: &'static [&'static str] = &[StoredReservation::TREE, SETTINGS_TREE];

    /// Publishes the effective settings to the running handlers.
    fn apply(&self) -> Result<()> {
        self.effective.send_replace(Arc::new(DhcpEffective {
            subnets: self.effective_subnets()?,
            subnets6: self.v6.effective(),
            arch_map: self.arch_map(),
        }));
        Ok(())
    }

    // ---- settings ----

    /// `GET /services/dhcp`.
    ///
    /// # Errors
    /// Store errors.
    pub fn settings(&self) -> Result<DhcpSettingsView> {
        let running = self.running.borrow().clone();
        let subnets = self
            .effective_subnets()?
            .into_iter()
            .map(|c| {
                let key = key_of(&c);
                SubnetView {
                    mode: c.mode,
                    interface: c.interface.clone(),
                    cidr: c.cidr.to_string(),
                    range_start: c.range_start,
                    range_end: c.range_end,
                    router: c.router,
                    dns: c.dns.clone(),
                    lease_time_secs: c.lease_time_secs,
                    server_address: c.server_address,
                    server: running.as_ref().and_then(|r| r.v4.get(&key).copied()),
                    reservations: c.reservations.len(),
                    secure_boot: c.secure_boot,
                }
            })
            .collect();
        Ok(DhcpSettingsView {
            applied: String::new(),
            running: running.is_some(),
            subnets,
            subnets6: self.v6.views(running.as_ref().map(|r| &r.v6)),
        })
    }

    /// `PUT /services/dhcp`: validates like the configuration file, stores, applies live.
    /// Returns the new view and whether the change needs new sockets (`mode`,
    /// `interface` or `server_address` changed): the caller then restarts the DHCP
    /// service through the supervisor.
    ///
    /// # Errors
    /// Invalid (unknown subnet, a value the file would refuse), store.
    pub async fn update_settings(&self, patch: DhcpSettingsPatch) -> Result<(DhcpSettingsView, bool)> {
        let _w = self.write.lock().await;
        let before = self.settings()?;
        let mut next = self.subnets.get();
        for p in patch.subnets {
            let Some(base) = self
                .base
                .subnets
                .iter()
                .find(|s| key_of(s) == p.cidr.trim() || s.cidr.to_string() == p.cidr.trim())
            else {
                return Err(ServiceError::Invalid(format!(
                    "subnet {:?} is not in the configuration file; adding or removing subnets needs a \
                     [[dhcp.subnets]] entry and a restart",
                    p.cidr
                )));
            };
            let o = next.0.entry(key_of(base)).or_insert_with(|| SubnetSettings::of(base));
            if let Some(m) = p.mode {
                o.mode = m;
            }
            if let Some(i) = &p.interface {
                o.interface = interface_name(i, &format!("subnet {}", base.cidr))?.to_string();
            }
            if p.server_address.is_some() {
                o.server_address = p.server_address;
            }
            o.range_start = p.range_start.or(o.range_start);
            o.range_end = p.range_end.or(o.range_end);
            o.router = p.router.or(o.router);
            if p.dns.is_some() {
                o.dns = p.dns;
            }
            o.lease_time_secs = p.lease_time_secs.unwrap_or(o.lease_time_secs);
            o.secure_boot = p.secure_boot.unwrap_or(o.secure_boot);
        }
        let next6 = self.v6.patched(patch.subnets6)?;
        // Both halves are checked before either is stored.
        let problems: Vec<String> = next
            .validate()
            .into_iter()
            .chain(next6.validate())
            .map(|p| p.message)
            .collect();
        if let Some(first) = problems.first() {
            return Err(ServiceError::Invalid(first.clone()));
        }
        let change4 = self.subnets.set(next).await?;
        let change6 = self.v6.set(next6).await?;
        let restart = !change4.applied.restarted.is_empty() || !change6.applied.restarted.is_empty();
        self.apply()?;
        let after = self.settings()?;
        if !change4.changed.is_empty() || !change6.changed.is_empty() {
            self.events.publish(NewEvent::write(
                EventKind::DhcpSettingsChanged,
                "settings",
                "dhcp",
                "update",
                if restart {
                    "DHCP settings changed (sockets change: service restart)"
                } else {
                    "DHCP settings changed (applied live)"
                },
                Some(&before),
                Some(&after),
            ));
        }
        Ok((after, restart))
    }

    // ---- arch map ----

    /// `PUT /services/archmap`: replaces the whole map after validation; applies live.
    ///
    /// # Errors
    /// Invalid (code above 65535, duplicate code, bad file name or URL), store.
    pub async fn set_arch_map(&self, map: ArchMap) -> Result<BTreeMap<u16, String>> {
        let _w = self.write.lock().await;
        let mut out = BTreeMap::new();
        for e in map.entries {
            let code = u16::try_from(e.arch_code).map_err(|_| {
                ServiceError::Invalid(format!("arch_code {} must be 0-65535 (RFC 4578 §2.1)", e.arch_code))
            })?;
            check_boot_file(e.arch_code, e.boot_file.trim()).map_err(ServiceError::Invalid)?;
            if out.insert(code, e.boot_file.trim().to_string()).is_some() {
                return Err(ServiceError::Invalid(format!("arch_code {code} appears twice")));
            }
        }
        let before = arch_view(&self.arch_map());
        self.arch.set(ArchMapSettings { arch_map: out.clone() }).await?;
        self.apply()?;
        self.events.publish(NewEvent::write(
            EventKind::DhcpArchmapChanged,
            "settings",
            "archmap",
            "update",
            format!("architecture map replaced ({} entries)", out.len()),
            Some(&before),
            Some(&arch_view(&out)),
        ));
        Ok(out)
    }

    // ---- reservations ----

    /// Reservations: the configuration file's (`id` 0) and the stored ones.
    ///
    /// # Errors
    /// Store errors.
    pub fn reservations(&self) -> Result<Vec<StoredReservation>> {
        Ok(self.reservations.list()?)
    }

    /// The file's reservations as `(subnet, mac, ip)`.
    fn file_reservations(&self) -> Vec<(String, String, Ipv4Addr)> {
        self.base
            .subnets
            .iter()
            .flat_map(|s| {
                s.reservations.iter().map(move |r| {
                    (
                        key_of(s),
                        normalise_mac(&r.mac).map(|m| m.to_string()).unwrap_or_default(),
                        r.ip,
                    )
                })
            })
            .collect()
    }

    /// One stored reservation.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub fn reservation(&self, id: u64) -> Result<StoredReservation> {
        self.reservations
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no reservation with id {id}")))
    }

    fn apply_reservation(&self, r: &mut StoredReservation, input: ReservationInput) -> Result<()> {
        if let Some(m) = input.mac {
            r.mac = normalise_mac(&m)
                .map_err(|_| ServiceError::Invalid(format!("mac {m:?} is not a MAC address")))?
                .to_string();
        }
        if let Some(ip) = input.ip {
            r.ip = ip
                .trim()
                .parse()
                .map_err(|_| ServiceError::Invalid(format!("ip {ip:?} is not an IPv4 address")))?;
        }
        if let Some(h) = input.hostname {
            r.hostname = h.map(|h| hostname(&h)).transpose()?;
        }
        if let Some(d) = input.description {
            if d.len() > 1024 || d.chars().any(char::is_control) {
                return Err(ServiceError::Invalid(
                    "'description' must be at most 1024 bytes without control characters".into(),
                ));
            }
            r.description = d;
        }
        let containing = self.base.subnets.iter().find(|s| {
            let net = s.cidr.trunc();
            net.contains(&r.ip) && r.ip != net.network() && r.ip != net.broadcast()
        });
        let Some(sub) = containing else {
            let known: Vec<String> = self.base.subnets.iter().map(|s| s.cidr.trunc().to_string()).collect();
            return Err(ServiceError::Invalid(format!(
                "ip {} is not a host address of a configured subnet ({})",
                r.ip,
                if known.is_empty() {
                    "none configured".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        let key = key_of(sub);
        if let Some(want) = input.subnet {
            let ok = want
                .trim()
                .parse::<ipnet::Ipv4Net>()
                .is_ok_and(|n| n.trunc().to_string() == key);
            if !ok {
                return Err(ServiceError::Invalid(format!(
                    "ip {} lies in subnet {key}, not {want:?}",
                    r.ip
                )));
            }
        }
        r.subnet = key;
        Ok(())
    }

    fn check_reservation(&self, r: &StoredReservation) -> Result<()> {
        for (subnet, mac, ip) in self.file_reservations() {
            if ip == r.ip {
                return Err(ServiceError::Conflict(format!(
                    "{ip} is already reserved for {mac} in the configuration file"
                )));
            }
            if subnet == r.subnet && mac == r.mac {
                return Err(ServiceError::Conflict(format!(
                    "{mac} already has a reservation ({ip}) in subnet {subnet} in the configuration file"
                )));
            }
        }
        for o in self.reservations.list()? {
            if o.id == r.id {
                continue;
            }
            if o.ip == r.ip {
                return Err(ServiceError::Conflict(format!(
                    "{} is already reserved for {} (reservation {})",
                    r.ip, o.mac, o.id
                )));
            }
            if o.subnet == r.subnet && o.mac == r.mac {
                return Err(ServiceError::Conflict(format!(
                    "{} already has a reservation in subnet {} ({}, reservation {})",
                    r.mac, r.subnet, o.ip, o.id
                )));
            }
        }
        Ok(())
    }

    /// Creates a reservation (`mac`, `ip` required); applies live.
    ///
    /// # Errors
    /// Invalid (400), Conflict (409: address or MAC already reserved), store errors.
    pub async fn create_reservation(&self, input: ReservationInput) -> Result<StoredReservation> {
        if input.mac.is_none() || input.ip.is_none() {
            return Err(ServiceError::Invalid("'mac' and 'ip' are required".into()));
        }
        let _w = self.write.lock().await;
        let now = OffsetDateTime::now_utc();
        let mut r = StoredReservation {
            id: 0,
            mac: String::new(),
            ip: Ipv4Addr::UNSPECIFIED,
            hostname: None,
            description: String::new(),
            subnet: String::new(),
            created_at: now,
            updated_at: now,
        };
        self.apply_reservation(&mut r, input)?;
        self.check_reservation(&r)?;
        let r = self.reservations.insert(r).await?;
        self.apply()?;
        self.reservation_event(EventKind::DhcpReservationCreated, "create", None, Some(&r));
        Ok(r)
    }

    /// Merges `input` into reservation `id`; applies live.
    ///
    /// # Errors
    /// NotFound, Invalid, Conflict, store errors.
    pub async fn update_reservation(&self, id: u64, input: ReservationInput) -> Result<StoredReservation> {
        let _w = self.write.lock().await;
        let mut r = self.reservation(id)?;
        let before = r.clone();
        self.apply_reservation(&mut r, input)?;
        self.check_reservation(&r)?;
        r.updated_at = OffsetDateTime::now_utc();
        self.reservations.put(&r).await?;
        self.apply()?;
        self.reservation_event(EventKind::DhcpReservationUpdated, "update", Some(&before), Some(&r));
        Ok(r)
    }

    /// Deletes reservation `id`; applies live.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete_reservation(&self, id: u64) -> Result<StoredReservation> {
        let _w = self.write.lock().await;
        let r = self
            .reservations
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no reservation with id {id}")))?;
        self.apply()?;
        self.reservation_event(EventKind::DhcpReservationDeleted, "delete", Some(&r), None);
        Ok(r)
    }

    fn reservation_event(
        &self,
        kind: EventKind,
        action: &str,
        before: Option<&StoredReservation>,
        after: Option<&StoredReservation>,
    ) {
        let Some(r) = after.or(before) else { return };
        let verb = kind.verb();
        self.events.publish(NewEvent::write(
            kind,
            "dhcp_reservation",
            r.id,
            action,
            format!("DHCP reservation {} -> {} {verb}", r.mac, r.ip),
            before,
            after,
        ));
    }

    // ---- leases ----

    /// Every lease.
    pub async fn all_leases(&self) -> Vec<Lease> {
        let mut v: Vec<Lease> = self.leases.lock().await.all().cloned().collect();
        v.sort_by_key(|l| l.id);
        v
    }

    /// Deletes every lease of `mac` (any subnet). Returns them (empty: none).
    ///
    /// # Errors
    /// Invalid MAC, store errors.
    pub async fn delete_leases(&self, mac: &str) -> Result<Vec<Lease>> {
        let m = normalise_mac(mac).map_err(|_| ServiceError::Invalid(format!("{mac:?} is not a MAC address")))?;
        let gone = self.leases.lock().await.remove_mac(m).await?;
        for l in &gone {
            self.events.publish(NewEvent::write(
                EventKind::DhcpLeaseDeleted,
                "lease",
                &l.mac,
                "delete",
                format!("lease {} for {} deleted", l.ip, l.mac),
                Some(l),
                None::<&Lease>,
            ));
        }
        Ok(gone)
    }

    /// Deletes every DHCPv6 lease of the client `duid` (hex). Returns them.
    ///
    /// # Errors
    /// Invalid DUID, store errors.
    pub async fn delete_leases6(&self, duid: &str) -> Result<Vec<Lease6>> {
        let gone = self.v6.delete_leases(duid).await?;
        for l in &gone {
            self.events.publish(NewEvent::write(
                EventKind::Dhcp6LeaseDeleted,
                "lease6",
                &l.duid,
                "delete",
                format!("DHCPv6 lease {} for DUID {} deleted", l.ip, l.duid),
                Some(l),
                None::<&Lease6>,
            ));
        }
        Ok(gone)
    }

    /// Deletes expired leases and declines (IPv4 and IPv6). Returns how many.
    ///
    /// # Errors
    /// Store errors.
    pub async fn prune(&self) -> Result<usize> {
        let n = self.leases.lock().await.prune(now_secs()).await? + self.v6.prune().await?;
        if n > 0 {
            self.events.publish(NewEvent::write(
                EventKind::DhcpLeasesPruned,
                "lease",
                "",
                "delete",
                format!("{n} expired leases pruned"),
                None::<&()>,
                Some(&serde_json::json!({ "removed": n })),
            ));
        }
        Ok(n)
    }

    /// Sets the per-subnet lease gauges ([`bootlane_core::metrics::DHCP_LEASES_ACTIVE`],
    /// [`bootlane_core::metrics::DHCP_LEASES_FREE`]) from [`Self::stats`]; called at scrape
    /// time, so the values are as fresh as the lease table.
    ///
    /// # Errors
    /// Store errors from [`Self::stats`].
    pub async fn export_metrics(&self) -> Result<()> {
        for st in self.stats().await? {
            metrics::gauge!(bootlane_core::metrics::DHCP_LEASES_ACTIVE, "subnet" => st.subnet.clone())
                .set(st.used as f64);
            metrics::gauge!(bootlane_core::metrics::DHCP_LEASES_FREE, "subnet" => st.subnet).set(st.free as f64);
        }
        Ok(())
    }

    /// Per active subnet: pool size, used, reserved, free.
    ///
    /// # Errors
    /// Store errors.
    pub async fn stats(&self) -> Result<Vec<SubnetStats>> {
        let cfgs = self.effective_subnets()?;
        let now = now_secs();
        let leases = self.all_leases().await;
        let v6 = self
            .v6
            .stats()
            .await
            .into_iter()
            .map(|(subnet, mode, size, used)| SubnetStats {
                subnet,
                mode,
                size,
                used,
                reserved: 0,
                free: size.saturating_sub(used),
            });
        Ok(cfgs
            .iter()
            .filter(|c| c.mode != SubnetMode::Off)
            .map(|c| {
                let key = key_of(c);
                let (lo, hi) = match (c.range_start, c.range_end) {
                    (Some(a), Some(b)) if c.mode == SubnetMode::Server => (u32::from(a), u32::from(b)),
                    _ => (1, 0),
                };
                let in_pool = |ip: Ipv4Addr| (lo..=hi).contains(&u32::from(ip));
                let size = if hi >= lo { u64::from(hi - lo) + 1 } else { 0 };
                let used: HashSet<Ipv4Addr> = leases
                    .iter()
                    .filter(|l| l.subnet == key && l.active(now) && in_pool(l.ip))
                    .map(|l| l.ip)
                    .collect();
                let reserved_in_pool: HashSet<Ipv4Addr> =
                    c.reservations.iter().map(|r| r.ip).filter(|ip| in_pool(*ip)).collect();
                let taken = used.union(&reserved_in_pool).count() as u64;
                SubnetStats {
                    subnet: key,
                    mode: c.mode,
                    size,
                    used: used.len() as u64,
                    reserved: c.reservations.len() as u64,
                    free: size.saturating_sub(taken),
                }
            })
            .chain(v6)
            .collect())
    }
}

/// Another node's changes: its lease writes are followed key by key (DHCPv4 and DHCPv6
/// lease indexes, [`DhcpControl::follow_leases`]), its reservations and DHCP settings
/// rebuild the handler ([`DhcpControl::resync`]).
impl bootlane_core::store::follow::Follower for DhcpControl {
    fn name(&self) -> &'static str {
        "dhcp"
    }

    fn trees(&self) -> &'static [&'static str] {
        &[Lease::TREE, Lease6::TREE, StoredReservation::TREE, SETTINGS_TREE]
    }

    fn follow<'a>(
        &'a self,
        burst: &'a bootlane_core::store::follow::Burst,
    ) -> bootlane_core::store::follow::BoxFuture<'a, Result<(), bootlane_core::store::follow::FollowError>> {
        Box::pin(async move {
            if let Some(ids) = burst.ids(Lease::TREE) {
                if let Err(e) = self.follow_leases(ids).await {
                    tracing::error!("following another node's leases failed: {e}");
                }
            }
            if let Some(ids) = burst.ids(Lease6::TREE) {
                if let Err(e) = self.v6().follow_leases(ids).await {
                    tracing::error!("following another node's DHCPv6 leases failed: {e}");
                }
            }
            if burst.touches(Self::RESYNC_TREES) {
                self.resync()?;
            }
            Ok(())
        })
    }
}
