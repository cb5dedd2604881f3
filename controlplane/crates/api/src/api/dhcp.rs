//! DHCP and TFTP administration: `/leases`, `/leases6` (DHCPv6), `/dhcp/reservations`,
//! `/services/dhcp`, `/services/archmap` and `/services/tftp`. Thin handlers over
//! [`DhcpControl`], which applies every change to the running DHCP handler before
//! answering.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_core::net::types::normalise_mac;
use bootlane_core::supervisor::Supervisor;
use bootlane_dhcp::dhcp::{
    config::default_arch_map,
    control::{
        arch_view, ArchMap, DhcpControl, DhcpSettingsPatch, DhcpSettingsView, ReservationInput, StoredReservation,
        SubnetStats,
    },
    leases::{now_secs, Lease},
    v6::leases::Lease6,
};
use bootlane_tftp::tftp::control::{TftpChange, TftpControl};

// ---- leases ----

/// Field filters of `GET /leases` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeaseFilter {
    /// Only this subnet (CIDR, e.g. `10.77.0.0/24`).
    pub subnet: Option<String>,
    /// Only this MAC (any separator).
    pub mac: Option<String>,
    /// `active` or `expired` (declines count as active until they expire).
    pub state: Option<String>,
}

/// A lease with its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseView {
    /// The stored lease (`expires_at` in seconds since the Unix epoch).
    #[serde(flatten)]
    pub lease: Lease,
    /// `active`, `expired` or `declined` (an address a client reported in use).
    pub state: String,
}

/// `GET /leases` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaseList {
    /// Leases of this page, in id order.
    pub leases: Vec<LeaseView>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// The `subnet` filter: a CIDR, truncated to its network (`10.77.0.9/24` is
/// `10.77.0.0/24`); blank is no filter.
fn subnet_filter(subnet: Option<&str>) -> Result<Option<String>> {
    match subnet.map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => Ok(Some(
            n.parse::<ipnet::Ipv4Net>()
                .map_err(|_| ApiError::BadRequest(format!("'subnet' {n:?} is not an IPv4 CIDR")))?
                .trunc()
                .to_string(),
        )),
        None => Ok(None),
    }
}

/// The `state` filter of the lease lists: `active` → `Some(true)`, `expired` →
/// `Some(false)`, absent or blank → `None`; anything else is a 400.
fn state_filter(state: Option<&str>) -> Result<Option<bool>> {
    match state {
        None | Some("") => Ok(None),
        Some("active") => Ok(Some(true)),
        Some("expired") => Ok(Some(false)),
        Some(o) => Err(ApiError::BadRequest(format!("'state' {o:?} must be active or expired"))),
    }
}

/// A lease's `state` in the lists: `expired`, `declined` (in force) or `active`.
fn lease_state(active: bool, declined: bool) -> &'static str {
    match (active, declined) {
        (false, _) => "expired",
        (true, true) => "declined",
        (true, false) => "active",
    }
}

/// List leases, in id order. `q` searches MAC, IP and host name.
#[utoipa::path(get, path = "/api/v1/leases", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp", params(ListQuery, LeaseFilter),
    responses((status = 200, body = LeaseList), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn list_leases(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<LeaseFilter>,
) -> Result<Envelope<LeaseList>> {
    let mac = match f.mac.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => Some(
            normalise_mac(m)
                .map_err(|_| ApiError::BadRequest(format!("'mac' {m:?} is not a MAC address")))?
                .to_string(),
        ),
        None => None,
    };
    let subnet = subnet_filter(f.subnet.as_deref())?;
    let want_active = state_filter(f.state.as_deref())?;
    let q = lq.needle();
    let now = now_secs();
    let page = lq.paginate(
        dhcp.all_leases()
            .await
            .into_iter()
            .filter(|l| mac.as_ref().is_none_or(|m| &l.mac == m))
            .filter(|l| subnet.as_ref().is_none_or(|n| &l.subnet == n))
            .filter(|l| want_active.is_none_or(|a| l.active(now) == a))
            .filter(|l| {
                let ip = l.ip.to_string();
                matches(q.as_deref(), [l.mac.as_str(), &ip, l.hostname.as_deref().unwrap_or("")])
            }),
        |l| l.id,
    )?;
    let page = page.map(|l| LeaseView {
        state: lease_state(l.active(now), l.declined).into(),
        lease: l,
    });
    Ok(Envelope::ok(LeaseList {
        leases: page.items,
        paging: page.info,
    }))
}

/// Field filters of `GET /leases6` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Lease6Filter {
    /// Only this prefix (e.g. `fd00:77::/64`).
    pub subnet: Option<String>,
    /// `active` or `expired` (declines count as active until they expire).
    pub state: Option<String>,
}

/// A DHCPv6 lease with its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lease6View {
    /// The stored lease (`expires_at` in seconds since the Unix epoch).
    #[serde(flatten)]
    pub lease: Lease6,
    /// `active`, `expired` or `declined`.
    pub state: String,
}

/// `GET /leases6` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lease6List {
    /// Leases of this page, in id order.
    pub leases: Vec<Lease6View>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List DHCPv6 leases, in id order. `q` searches DUID, address and MAC.
#[utoipa::path(get, path = "/api/v1/leases6", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp", params(ListQuery, Lease6Filter),
    responses((status = 200, body = Lease6List), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn list_leases6(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<Lease6Filter>,
) -> Result<Envelope<Lease6List>> {
    let subnet = match f.subnet.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
        Some(n) => Some(
            n.parse::<ipnet::Ipv6Net>()
                .map_err(|_| {
                    ApiError::BadRequest(format!("'subnet' {n:?} is not an IPv6 prefix such as fd00:77::/64"))
                })?
                .trunc()
                .to_string(),
        ),
        None => None,
    };
    let want_active = state_filter(f.state.as_deref())?;
    let q = lq.needle();
    let now = now_secs();
    let page = lq.paginate(
        dhcp.v6()
            .all_leases()
            .await
            .into_iter()
            .filter(|l| subnet.as_ref().is_none_or(|n| &l.subnet == n))
            .filter(|l| want_active.is_none_or(|a| l.active(now) == a))
            .filter(|l| {
                let ip = l.ip.to_string();
                matches(q.as_deref(), [l.duid.as_str(), &ip, l.mac.as_deref().unwrap_or("")])
            }),
        |l| l.id,
    )?;
    let page = page.map(|l| Lease6View {
        state: lease_state(l.active(now), l.declined).into(),
        lease: l,
    });
    Ok(Envelope::ok(Lease6List {
        leases: page.items,
        paging: page.info,
    }))
}

/// Delete every DHCPv6 lease of a client DUID (all IAs and subnets); the addresses are
/// free at once. Answers the deleted leases.
#[utoipa::path(delete, path = "/api/v1/leases6/{duid}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", params(("duid" = String, Path, description = "The client's DUID in hex (':' or '-' separators allowed)")),
    responses((status = 200, body = Vec<Lease6>), (status = 400, description = "Not a DUID"), (status = 404, description = "No lease"), (status = 401)))]
pub async fn delete_lease6(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiPath(duid): ApiPath<String>,
) -> Result<Envelope<Vec<Lease6>>> {
    let gone = dhcp.delete_leases6(&duid).await?;
    if gone.is_empty() {
        return Err(ApiError::NotFound(format!("no DHCPv6 lease for DUID {duid}")));
    }
    Ok(Envelope::ok(gone))
}

/// Per-subnet pool usage (subnets in `server` or `proxy` mode).
#[utoipa::path(get, path = "/api/v1/leases/stats", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp",
    responses((status = 200, body = Vec<SubnetStats>), (status = 401)))]
pub async fn lease_stats(State(dhcp): State<Arc<DhcpControl>>) -> Result<Envelope<Vec<SubnetStats>>> {
    Ok(Envelope::ok(dhcp.stats().await?))
}

/// Delete every lease of a MAC (all subnets); the addresses are free at once. Answers
/// the deleted leases.
#[utoipa::path(delete, path = "/api/v1/leases/{mac}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", params(("mac" = String, Path, description = "MAC, any separator")),
    responses((status = 200, body = Vec<Lease>), (status = 400, description = "Not a MAC"), (status = 404, description = "No lease"), (status = 401)))]
pub async fn delete_lease(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiPath(mac): ApiPath<String>,
) -> Result<Envelope<Vec<Lease>>> {
    let gone = dhcp.delete_leases(&mac).await?;
    if gone.is_empty() {
        return Err(ApiError::NotFound(format!("no lease for {mac}")));
    }
    Ok(Envelope::ok(gone))
}

/// Body of `POST /leases/batch-delete`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchDelete {
    /// MACs whose leases are deleted (1-1000).
    pub macs: Vec<String>,
}

/// `POST /leases/batch-delete` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchDeleteResult {
    /// Number of leases deleted.
    pub deleted: usize,
    /// MACs (normalised) that had leases.
    pub deleted_macs: Vec<String>,
    /// MACs without any lease.
    pub not_found: Vec<String>,
    /// Entries that are not MACs.
    pub invalid: Vec<String>,
}

/// Delete the leases of several MACs.
#[utoipa::path(post, path = "/api/v1/leases/batch-delete", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", request_body = BatchDelete,
    responses((status = 200, body = BatchDeleteResult), (status = 400, description = "Empty or too long list"), (status = 401)))]
pub async fn batch_delete(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiJson(b): ApiJson<BatchDelete>,
) -> Result<Envelope<BatchDeleteResult>> {
    if b.macs.is_empty() || b.macs.len() > 1000 {
        return Err(ApiError::BadRequest("'macs' must hold 1-1000 MAC addresses".into()));
    }
    let mut r = BatchDeleteResult {
        deleted: 0,
        deleted_macs: Vec::new(),
        not_found: Vec::new(),
        invalid: Vec::new(),
    };
    for m in b.macs {
        let Ok(mac) = normalise_mac(&m) else {
            r.invalid.push(m);
            continue;
        };
        let gone = dhcp.delete_leases(&mac.to_string()).await?;
        if gone.is_empty() {
            r.not_found.push(mac.to_string());
        } else {
            r.deleted += gone.len();
            r.deleted_macs.push(mac.to_string());
        }
    }
    Ok(Envelope::ok(r))
}

/// `POST /leases/prune` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct PruneResult {
    /// Expired leases and declines deleted.
    pub removed: usize,
}

/// Delete every expired lease (and expired decline).
#[utoipa::path(post, path = "/api/v1/leases/prune", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp",
    responses((status = 200, body = PruneResult), (status = 401)))]
pub async fn prune(State(dhcp): State<Arc<DhcpControl>>) -> Result<Envelope<PruneResult>> {
    let removed = dhcp.prune().await?;
    Ok(Envelope::ok(PruneResult { removed }))
}

// ---- reservations ----

/// A reservation with its origin.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReservationView {
    /// The reservation (`id` 0 for the configuration file's).
    #[serde(flatten)]
    pub reservation: StoredReservation,
    /// `api` (stored; editable) or `config` (`[[dhcp.subnets.reservations]]`; read-only).
    pub source: String,
}

/// Field filters of `GET /dhcp/reservations` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReservationFilter {
    /// Only this subnet (CIDR).
    pub subnet: Option<String>,
}

/// `GET /dhcp/reservations` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReservationList {
    /// Reservations of this page: the configuration file's first (in file order), then
    /// the stored ones in id order.
    pub reservations: Vec<ReservationView>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List reservations: the configuration file's (`source: config`, id 0, in file order)
/// first, then the stored ones (`source: api`) in id order. `q` searches MAC, IP, host
/// name and description.
#[utoipa::path(get, path = "/api/v1/dhcp/reservations", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp", params(ListQuery, ReservationFilter),
    responses((status = 200, body = ReservationList), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn list_reservations(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<ReservationFilter>,
) -> Result<Envelope<ReservationList>> {
    let want = subnet_filter(f.subnet.as_deref())?;
    let epoch = time::OffsetDateTime::UNIX_EPOCH;
    let mut out: Vec<ReservationView> = Vec::new();
    for sub in &dhcp.file_config().subnets {
        for r in &sub.reservations {
            out.push(ReservationView {
                reservation: StoredReservation {
                    id: 0,
                    mac: normalise_mac(&r.mac)
                        .map(|m| m.to_string())
                        .unwrap_or_else(|_| r.mac.clone()),
                    ip: r.ip,
                    hostname: r.hostname.clone(),
                    description: String::new(),
                    subnet: sub.cidr.trunc().to_string(),
                    created_at: epoch,
                    updated_at: epoch,
                },
                source: "config".into(),
            });
        }
    }
    out.extend(dhcp.reservations()?.into_iter().map(|r| ReservationView {
        reservation: r,
        source: "api".into(),
    }));
    let q = lq.needle();
    // Stable: file entries (id 0) keep their file order ahead of the stored ones.
    let page = lq.paginate(
        out.into_iter()
            .filter(|r| want.as_ref().is_none_or(|w| &r.reservation.subnet == w))
            .filter(|v| {
                let r = &v.reservation;
                let ip = r.ip.to_string();
                matches(
                    q.as_deref(),
                    [r.mac.as_str(), &ip, r.hostname.as_deref().unwrap_or(""), &r.description],
                )
            }),
        |v| v.reservation.id,
    )?;
    Ok(Envelope::ok(ReservationList {
        reservations: page.items,
        paging: page.info,
    }))
}

/// Create a reservation; the DHCP server uses it at once.
#[utoipa::path(post, path = "/api/v1/dhcp/reservations", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", request_body = ReservationInput,
    responses((status = 201, body = StoredReservation), (status = 400, description = "Invalid, or the address is outside every configured subnet"),
        (status = 409, description = "Address or MAC already reserved"), (status = 401)))]
pub async fn create_reservation(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiJson(input): ApiJson<ReservationInput>,
) -> Result<Envelope<StoredReservation>> {
    let r = dhcp.create_reservation(input).await?;
    Ok(Envelope::created(r))
}

/// Get one stored reservation.
#[utoipa::path(get, path = "/api/v1/dhcp/reservations/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp", params(("id" = u64, Path, description = "Reservation id")),
    responses((status = 200, body = StoredReservation), (status = 404), (status = 401)))]
pub async fn get_reservation(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<StoredReservation>> {
    Ok(Envelope::ok(dhcp.reservation(id)?))
}

/// Update a stored reservation (omitted fields keep their values); applies at once.
#[utoipa::path(put, path = "/api/v1/dhcp/reservations/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", params(("id" = u64, Path, description = "Reservation id")),
    request_body = ReservationInput,
    responses((status = 200, body = StoredReservation), (status = 400), (status = 404), (status = 409), (status = 401)))]
pub async fn update_reservation(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<ReservationInput>,
) -> Result<Envelope<StoredReservation>> {
    let r = dhcp.update_reservation(id, input).await?;
    Ok(Envelope::ok(r))
}

/// Delete a stored reservation; answers with it.
#[utoipa::path(delete, path = "/api/v1/dhcp/reservations/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dhcp", params(("id" = u64, Path, description = "Reservation id")),
    responses((status = 200, body = StoredReservation), (status = 404), (status = 401)))]
pub async fn delete_reservation(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<StoredReservation>> {
    let r = dhcp.delete_reservation(id).await?;
    Ok(Envelope::ok(r))
}

// ---- settings ----

/// The effective architecture map (RFC 4578 client architecture → boot file).
#[utoipa::path(get, path = "/api/v1/services/archmap", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp",
    responses((status = 200, body = ArchMap), (status = 401)))]
pub async fn get_archmap(State(dhcp): State<Arc<DhcpControl>>) -> Envelope<ArchMap> {
    Envelope::ok(arch_view(&dhcp.arch_map()))
}

/// Replace the architecture map (the whole map); applies to the next DHCP request.
#[utoipa::path(put, path = "/api/v1/services/archmap", extensions(("x-bootlane-role" = json!("admin"))), tag = "dhcp", request_body = ArchMap,
    responses((status = 200, body = ArchMap), (status = 400, description = "Code above 65535, duplicate code, bad file name or URL"), (status = 401)))]
pub async fn put_archmap(
    State(dhcp): State<Arc<DhcpControl>>,
    ApiJson(m): ApiJson<ArchMap>,
) -> Result<Envelope<ArchMap>> {
    let map = dhcp.set_arch_map(m).await?;
    Ok(Envelope::ok(arch_view(&map)))
}

/// The built-in architecture map.
#[utoipa::path(get, path = "/api/v1/services/archmap/defaults", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp",
    responses((status = 200, body = ArchMap), (status = 401)))]
pub async fn archmap_defaults() -> Envelope<ArchMap> {
    Envelope::ok(arch_view(&default_arch_map()))
}

/// How a stored settings change of `service` took effect (the `applied` field): `live`;
/// `restart` when it needs new sockets and the service was running (restarted now);
/// otherwise it applies when the service next starts.
async fn applied(supervisor: &Supervisor, service: &str, needs_restart: bool) -> Result<String> {
    if !needs_restart {
        return Ok("live".into());
    }
    Ok(if supervisor.restart_if_running(service).await? {
        "restart".into()
    } else {
        format!("stored; applies when the {service} service starts")
    })
}

/// The effective DHCP settings per subnet.
#[utoipa::path(get, path = "/api/v1/services/dhcp", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp",
    responses((status = 200, body = DhcpSettingsView), (status = 401)))]
pub async fn get_dhcp(State(dhcp): State<Arc<DhcpControl>>) -> Result<Envelope<DhcpSettingsView>> {
    Ok(Envelope::ok(dhcp.settings()?))
}

/// Change pool range, router, DNS servers or lease time of configured subnets; applied
/// live. Changing `mode`, `interface` or `server_address`, or adding subnets, needs the
/// configuration file and a restart (400 saying so).
#[utoipa::path(put, path = "/api/v1/services/dhcp", extensions(("x-bootlane-role" = json!("admin"))), tag = "dhcp", request_body = DhcpSettingsPatch,
    responses((status = 200, body = DhcpSettingsView), (status = 400, description = "Invalid value or a restart-only change"), (status = 401)))]
pub async fn put_dhcp(
    State(dhcp): State<Arc<DhcpControl>>,
    State(supervisor): State<Arc<Supervisor>>,
    ApiJson(p): ApiJson<DhcpSettingsPatch>,
) -> Result<Envelope<DhcpSettingsView>> {
    let (mut v, restart) = dhcp.update_settings(p).await?;
    v.applied = applied(&supervisor, "dhcp", restart).await?;
    v.running = dhcp.running();
    Ok(Envelope::ok(v))
}

/// `GET /services/tftp` answer: the `[tftp]` settings in effect.
#[derive(Debug, Serialize, ToSchema)]
pub struct TftpView {
    /// Whether TFTP is configured to run (explicit `enabled`, or on when a DHCP subnet is
    /// active).
    pub enabled: bool,
    /// True when the TFTP socket is bound.
    pub running: bool,
    /// After a PUT: `live`, `restart` (the service was restarted to apply it) or that it
    /// applies at the next start; empty on GET.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub applied: String,
    /// UDP port (restart-only).
    pub port: u16,
    /// Listen address (restart-only).
    pub listen: String,
    /// Directory served (restart-only).
    pub root: String,
    /// First retransmission timeout, milliseconds (live).
    pub timeout_ms: u64,
    /// Retransmissions before a transfer is abandoned (live).
    pub retries: u32,
    /// Most concurrent transfers (restart-only).
    pub max_transfers: usize,
}

/// Body of `PUT /services/tftp`: `timeout_ms` (10-60000) and `retries` (0-100) apply
/// live to new transfers; the other fields may be sent back unchanged, and changing
/// them is a 400 naming them (edit `[tftp]` and restart).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TftpPatch {
    /// Restart-only.
    pub enabled: Option<bool>,
    /// Read-only, ignored.
    pub running: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub applied: Option<serde_json::Value>,
    /// Restart-only.
    pub port: Option<u16>,
    /// Restart-only.
    pub listen: Option<String>,
    /// Restart-only.
    pub root: Option<String>,
    /// Live: first retransmission timeout, ms.
    pub timeout_ms: Option<u64>,
    /// Live: retries.
    pub retries: Option<u32>,
    /// Restart-only.
    pub max_transfers: Option<usize>,
}

fn tftp_view(tftp: &TftpControl) -> TftpView {
    let c = tftp.effective();
    TftpView {
        enabled: tftp.enabled(),
        running: tftp.running(),
        applied: String::new(),
        port: c.port,
        listen: c.listen.to_string(),
        root: c.root.clone().unwrap_or_default().display().to_string(),
        timeout_ms: c.timeout_ms,
        retries: c.retries,
        max_transfers: c.max_transfers,
    }
}

/// The TFTP settings in effect.
#[utoipa::path(get, path = "/api/v1/services/tftp", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dhcp",
    responses((status = 200, body = TftpView), (status = 401)))]
pub async fn get_tftp(State(tftp): State<Arc<TftpControl>>) -> Envelope<TftpView> {
    Envelope::ok(tftp_view(&tftp))
}

/// Change the TFTP timeout and retries (live); other changed fields are a 400.
#[utoipa::path(put, path = "/api/v1/services/tftp", extensions(("x-bootlane-role" = json!("admin"))), tag = "dhcp", request_body = TftpPatch,
    responses((status = 200, body = TftpView), (status = 400, description = "Invalid value, or a change that needs the configuration file and a restart"), (status = 401)))]
pub async fn put_tftp(
    State(tftp): State<Arc<TftpControl>>,
    State(supervisor): State<Arc<Supervisor>>,
    ApiJson(p): ApiJson<TftpPatch>,
) -> Result<Envelope<TftpView>> {
    let listen = match &p.listen {
        Some(l) => Some(
            l.trim()
                .parse::<std::net::IpAddr>()
                .map_err(|_| ApiError::BadRequest(format!("'listen' {l:?} is not an IP address such as 0.0.0.0")))?,
        ),
        None => None,
    };
    let change = TftpChange {
        timeout_ms: p.timeout_ms,
        retries: p.retries,
        enabled: p.enabled,
        port: p.port,
        listen,
        root: p.root.as_ref().map(std::path::PathBuf::from),
        max_transfers: p.max_transfers,
    };
    let (_, restart) = tftp.set(change).await?;
    let mut view = tftp_view(&tftp);
    view.applied = applied(&supervisor, "tftp", restart).await?;
    view.running = tftp.running();
    Ok(Envelope::ok(view))
}

/// Protected DHCP/TFTP routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_leases))
        .routes(routes!(list_leases6))
        .routes(routes!(delete_lease6))
        .routes(routes!(lease_stats))
        .routes(routes!(batch_delete))
        .routes(routes!(prune))
        .routes(routes!(delete_lease))
        .routes(routes!(list_reservations, create_reservation))
        .routes(routes!(get_reservation, update_reservation, delete_reservation))
        .routes(routes!(get_archmap, put_archmap))
        .routes(routes!(archmap_defaults))
        .routes(routes!(get_dhcp, put_dhcp))
        .routes(routes!(get_tftp, put_tftp))
}
