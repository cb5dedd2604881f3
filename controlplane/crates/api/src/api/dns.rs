//! `/dns/records` (spec "DNS records") and `/services/dns` (spec "Service settings"):
//! thin handlers over [`DnsService`], which validates,
//! stores and projects every change before the handler answers.
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
use bootlane_dns::{
    dataplane::XdpStatus,
    dns::{
        handler::DnsMetricsSnapshot,
        records::{DnsRecord, RecordInput, RecordKind},
        service::{DnsService, DnsSettings, DnsSettingsPatch},
    },
};

/// Field filters of `GET /dns/records` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordFilter {
    /// Only this type (`A`, `AAAA`, `CNAME`, `TXT`, `MX`).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only this name (as stored, or the FQDN; case-insensitive).
    pub name: Option<String>,
}

/// `GET /dns/records` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordList {
    /// Records of this page, in id order.
    pub records: Vec<DnsRecord>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
    /// The local domain relative names belong to.
    pub local_domain: String,
}

/// `GET /services/dns` answer: the settings plus live state.
#[derive(Debug, Serialize, ToSchema)]
pub struct DnsServiceView {
    /// Stored settings.
    #[serde(flatten)]
    pub settings: DnsSettings,
    /// True when sockets are bound.
    pub running: bool,
    /// Bound addresses (`ip:port`).
    pub bound: Vec<String>,
    /// The XDP fast path.
    pub xdp: XdpStatus,
    /// Userspace counters.
    pub metrics: DnsMetricsSnapshot,
    /// Response rate limiting in effect (`[dns.rrl]`, read-only); its counters are
    /// `metrics.rrl_*` (userspace) and `xdp.counters.rrl_*` (fast path).
    pub rrl: bootlane_dns::dns::rrl::RrlConfig,
}

/// List DNS records, in id order. `q` searches name, FQDN and value.
#[utoipa::path(get, path = "/api/v1/dns/records", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dns", params(ListQuery, RecordFilter),
    responses((status = 200, body = RecordList), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn list(
    State(dns): State<Arc<DnsService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<RecordFilter>,
) -> Result<Envelope<RecordList>> {
    let kind = match &f.kind {
        Some(k) => Some(
            RecordKind::parse(k)
                .ok_or_else(|| ApiError::BadRequest(format!("'type' {k:?} is not one of A, AAAA, CNAME, TXT, MX")))?,
        ),
        None => None,
    };
    let name = f.name.map(|n| n.trim().trim_end_matches('.').to_ascii_lowercase());
    let q = lq.needle();
    let page = lq.paginate(
        dns.list()?
            .into_iter()
            .filter(|r| kind.is_none_or(|k| r.kind == k))
            .filter(|r| {
                name.as_ref()
                    .is_none_or(|n| r.name == *n || r.fqdn.trim_end_matches('.') == n)
            })
            .filter(|r| matches(q.as_deref(), [r.name.as_str(), &r.fqdn, &r.value])),
        |r| r.id,
    )?;
    Ok(Envelope::ok(RecordList {
        records: page.items,
        paging: page.info,
        local_domain: dns.settings().local_domain,
    }))
}

/// Create a DNS record.
#[utoipa::path(post, path = "/api/v1/dns/records", extensions(("x-bootlane-role" = json!("operator"))), tag = "dns", request_body = RecordInput,
    responses((status = 201, body = DnsRecord), (status = 400, description = "Invalid record"), (status = 409, description = "Identical record exists"), (status = 401)))]
pub async fn create(
    State(dns): State<Arc<DnsService>>,
    ApiJson(input): ApiJson<RecordInput>,
) -> Result<Envelope<DnsRecord>> {
    let r = dns.create(input).await?;
    Ok(Envelope::created(r))
}

/// Get one DNS record.
#[utoipa::path(get, path = "/api/v1/dns/records/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dns", params(("id" = u64, Path, description = "Record id")),
    responses((status = 200, body = DnsRecord), (status = 404), (status = 401)))]
pub async fn get_one(State(dns): State<Arc<DnsService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<DnsRecord>> {
    Ok(Envelope::ok(dns.get(id)?))
}

/// Update a DNS record (omitted fields keep their values).
#[utoipa::path(put, path = "/api/v1/dns/records/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dns", params(("id" = u64, Path, description = "Record id")), request_body = RecordInput,
    responses((status = 200, body = DnsRecord), (status = 400), (status = 404), (status = 409), (status = 401)))]
pub async fn update(
    State(dns): State<Arc<DnsService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<RecordInput>,
) -> Result<Envelope<DnsRecord>> {
    let r = dns.update(id, input).await?;
    Ok(Envelope::ok(r))
}

/// Delete a DNS record; answers with the deleted record.
#[utoipa::path(delete, path = "/api/v1/dns/records/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "dns", params(("id" = u64, Path, description = "Record id")),
    responses((status = 200, body = DnsRecord), (status = 400, description = "Auto-record"), (status = 404), (status = 401)))]
pub async fn delete(State(dns): State<Arc<DnsService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<DnsRecord>> {
    let r = dns.delete(id).await?;
    Ok(Envelope::ok(r))
}

fn view(dns: &DnsService) -> DnsServiceView {
    let bound: Vec<String> = dns.bound().iter().map(ToString::to_string).collect();
    DnsServiceView {
        settings: dns.settings(),
        running: !bound.is_empty(),
        bound,
        xdp: dns.dataplane().status(),
        metrics: dns.handler().shared.metrics.snapshot(),
        rrl: dns.rrl().clone(),
    }
}

/// DNS settings and live state (sockets, XDP fast path, counters).
#[utoipa::path(get, path = "/api/v1/services/dns", extensions(("x-bootlane-role" = json!("viewer"))), tag = "dns", responses((status = 200, body = DnsServiceView), (status = 401)))]
pub async fn get_settings(State(dns): State<Arc<DnsService>>) -> Envelope<DnsServiceView> {
    Envelope::ok(view(&dns))
}

/// Change DNS settings (any subset); applied live, no restart.
#[utoipa::path(put, path = "/api/v1/services/dns", extensions(("x-bootlane-role" = json!("admin"))), tag = "dns", request_body = DnsSettingsPatch,
    responses((status = 200, body = DnsServiceView), (status = 400, description = "Invalid value or the new port cannot be bound"), (status = 401)))]
pub async fn put_settings(
    State(dns): State<Arc<DnsService>>,
    ApiJson(patch): ApiJson<DnsSettingsPatch>,
) -> Result<Envelope<DnsServiceView>> {
    dns.apply_settings(patch).await?;
    Ok(Envelope::ok(view(&dns)))
}

/// Protected DNS routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(get_settings, put_settings))
}
