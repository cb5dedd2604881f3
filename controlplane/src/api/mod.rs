//! The REST API (spec "Endpoints"): everything under `/api/v1`, every answer in the JSON
//! envelope (including 401, 404 for unknown paths, 405, 413, malformed JSON and panics),
//! one router per resource, one [`AppState`], one error type ([`error::ApiError`]).
//! Public routes (login/session, `/status`, the OpenAPI document and the PXE runtime
//! routes under `/boot`, see [`boot`]) sit outside the session layer; everything else is
//! inside it.

pub mod auth;
pub mod boot;
pub mod dhcp;
pub mod dns;
pub mod error;
pub mod extract;
pub mod hosts;
pub mod profiles;
pub mod system;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_boot;

use std::{sync::Arc, time::Instant};

use axum::{
    extract::{MatchedPath, Request},
    http::StatusCode,
    middleware,
    response::{IntoResponse, Response},
    Router,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tower_http::{
    catch_panic::CatchPanicLayer, limit::RequestBodyLimitLayer, timeout::TimeoutLayer, trace::TraceLayer,
};
use utoipa::{OpenApi, ToSchema};

use self::error::ApiError;
use crate::{
    boot::catalog::BootCatalog,
    config::Config,
    dhcp::control::DhcpControl,
    dns::service::DnsService,
    store::{Store, Table},
    tftp::control::TftpControl,
};

/// An audit-log entry: who changed what.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// Id (increasing).
    pub id: u64,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub action: String,
    /// Resource kind, e.g. `dns_record`.
    pub resource: String,
    /// Resource id (0 for singletons such as settings).
    pub resource_id: u64,
    /// Short description of the change.
    pub detail: String,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: OffsetDateTime,
}

crate::store::entity!(AuditEntry, "audit_log");

/// Shared state of every handler. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Validated configuration.
    pub config: Arc<Config>,
    /// The store.
    pub store: Store,
    /// The DNS service.
    pub dns: Arc<DnsService>,
    /// Users and sessions.
    pub auth: Arc<auth::Auth>,
    /// Audit log table.
    pub audit: Table<AuditEntry>,
    /// Hosts, profiles, script versions and the iPXE script template.
    pub catalog: Arc<BootCatalog>,
    /// Live DHCP administration: leases, reservations, settings, arch map.
    pub dhcp: Arc<DhcpControl>,
    /// Live TFTP settings (timeout, retries).
    pub tftp: Arc<TftpControl>,
    /// Process start.
    pub started: Instant,
}

impl AppState {
    /// Builds the state; creates the initial admin user and the default boot profile on
    /// first start.
    ///
    /// # Errors
    /// Store errors. `admin_password` seeds the `admin` user on first start
    /// (`BOOTLANE_ADMIN_PASSWORD`).
    pub async fn new(
        config: Arc<Config>,
        store: Store,
        dns: Arc<DnsService>,
        admin_password: Option<String>,
    ) -> anyhow::Result<Self> {
        let ttl = std::time::Duration::from_secs(config.api.session_ttl_secs);
        let auth = auth::Auth::open(&store, &config.data_dir, ttl, admin_password).await?;
        let catalog = BootCatalog::open(&store, config.boot.ipxe_script.clone()).await?;
        let dhcp = DhcpControl::open(&store, &config.dhcp).await?;
        let tftp = TftpControl::open(&store, &config.tftp)?;
        Ok(Self {
            tftp,
            dhcp,
            catalog,
            audit: store.table()?,
            config,
            store,
            dns,
            auth: Arc::new(auth),
            started: Instant::now(),
        })
    }

    /// Appends an audit entry; failures are logged, never fatal.
    pub async fn audit(&self, action: &str, resource: &str, resource_id: u64, detail: &str) {
        let e = AuditEntry {
            id: 0,
            action: action.into(),
            resource: resource.into(),
            resource_id,
            detail: detail.into(),
            timestamp: OffsetDateTime::now_utc(),
        };
        if let Err(e) = self.audit.insert(e).await {
            tracing::error!("writing the audit log failed: {e}");
        }
    }
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bootlane API",
        version = "1",
        description = "Network boot (PXE) server with a built-in DNS server. Every answer is {success, data} or {success: false, error}."
    ),
    paths(
        auth::login,
        auth::logout,
        auth::session,
        dns::list,
        dns::create,
        dns::get_one,
        dns::update,
        dns::delete,
        dns::get_settings,
        dns::put_settings,
        dhcp::list_leases,
        dhcp::lease_stats,
        dhcp::delete_lease,
        dhcp::batch_delete,
        dhcp::prune,
        dhcp::list_reservations,
        dhcp::create_reservation,
        dhcp::get_reservation,
        dhcp::update_reservation,
        dhcp::delete_reservation,
        dhcp::get_archmap,
        dhcp::put_archmap,
        dhcp::archmap_defaults,
        dhcp::get_dhcp,
        dhcp::put_dhcp,
        dhcp::get_tftp,
        dhcp::put_tftp,
        hosts::list,
        hosts::create,
        hosts::get_one,
        hosts::update,
        hosts::delete,
        hosts::boot_config,
        profiles::list,
        profiles::create,
        profiles::get_one,
        profiles::update,
        profiles::delete,
        profiles::versions,
        profiles::version,
        profiles::diff,
        profiles::rollback,
        profiles::get_script,
        profiles::put_script,
        system::version,
        system::version_check,
        system::status,
        system::metrics,
        system::audit_logs,
    ),
    components(schemas(
        crate::dns::records::DnsRecord,
        crate::dns::records::RecordInput,
        crate::dns::records::RecordKind,
        crate::dns::service::DnsSettings,
        crate::dns::service::DnsSettingsPatch,
        dns::RecordList,
        dns::DnsServiceView,
        crate::boot::catalog::HostView,
        crate::boot::catalog::HostInput,
        crate::boot::catalog::Profile,
        crate::boot::catalog::ProfileInput,
        crate::boot::catalog::ProfileMenu,
        crate::boot::catalog::MenuEntry,
        crate::boot::catalog::EntryType,
        crate::boot::catalog::ScriptVersion,
        crate::boot::catalog::ScriptDiff,
        crate::boot::catalog::TemplateSource,
        hosts::HostList,
        crate::dhcp::leases::Lease,
        crate::dhcp::control::StoredReservation,
        crate::dhcp::control::ReservationInput,
        crate::dhcp::control::SubnetPatch,
        crate::dhcp::control::DhcpSettingsPatch,
        crate::dhcp::control::SubnetView,
        crate::dhcp::control::DhcpSettingsView,
        crate::dhcp::control::ArchEntry,
        crate::dhcp::control::ArchMap,
        crate::dhcp::control::SubnetStats,
        crate::dhcp::config::SubnetMode,
        dhcp::LeaseView,
        dhcp::LeaseList,
        dhcp::BatchDelete,
        dhcp::BatchDeleteResult,
        dhcp::PruneResult,
        dhcp::ReservationView,
        dhcp::TftpView,
        dhcp::TftpPatch,
        profiles::IpxeScriptView,
        profiles::IpxeScriptInput,
        crate::dataplane::XdpStatus,
        crate::dataplane::XdpInterface,
        crate::dataplane::XdpCounters,
        crate::dns::handler::DnsMetricsSnapshot,
        auth::LoginRequest,
        auth::LoginResponse,
        auth::SessionInfo,
        system::VersionInfo,
        system::UpdateCheck,
        system::Status,
        AuditEntry,
    ))
)]
pub struct ApiDoc;

async fn fallback(req: Request) -> ApiError {
    ApiError::NotFound(format!(
        "no endpoint {} {}; see GET /api/v1/openapi.json for the list",
        req.method(),
        req.uri().path()
    ))
}

/// Rewrites axum's bare 405 into the envelope.
async fn envelope_405(req: Request, next: middleware::Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    if resp.status() == StatusCode::METHOD_NOT_ALLOWED && resp.headers().get(axum::http::header::CONTENT_TYPE).is_none()
    {
        let allow = resp.headers().get(axum::http::header::ALLOW).cloned();
        let mut r = ApiError::MethodNotAllowed(format!(
            "{method} is not allowed on {path}; allowed: {}",
            allow.as_ref().and_then(|a| a.to_str().ok()).unwrap_or("-")
        ))
        .into_response();
        if let Some(a) = allow {
            r.headers_mut().insert(axum::http::header::ALLOW, a);
        }
        return r;
    }
    if resp.status() == StatusCode::PAYLOAD_TOO_LARGE
        && resp
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_none_or(|c| c != "application/json")
    {
        return ApiError::PayloadTooLarge("the request body is larger than [api] max_body_bytes".into())
            .into_response();
    }
    if resp.status() == StatusCode::REQUEST_TIMEOUT && resp.headers().get(axum::http::header::CONTENT_TYPE).is_none() {
        return (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({"success": false, "error": "the request took too long and was cancelled"})),
        )
            .into_response();
    }
    resp
}

fn panic_envelope(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
}

/// The whole application: `/api/v1/...` plus the envelope-producing fallbacks and layers.
pub fn router(state: AppState) -> Router {
    crate::metrics::install();
    let protected = Router::new()
        .merge(dns::router())
        .merge(dhcp::router())
        .merge(hosts::router())
        .merge(profiles::router())
        .merge(system::router())
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_session));
    let public = Router::new()
        .merge(auth::router())
        .merge(system::public_router())
        .merge(system::metrics_router(state.clone()));
    let api = Router::new().merge(public).merge(protected).fallback(fallback);
    let timeout = std::time::Duration::from_secs(state.config.api.request_timeout_secs);
    let max_body = state.config.api.max_body_bytes;
    let boot = boot::router(boot::BootState {
        root: state.config.boot_root(),
        catalog: state.catalog.clone(),
    });
    Router::new()
        .nest("/api/v1", api)
        .merge(boot)
        .fallback(fallback)
        .with_state(state)
        .layer(middleware::from_fn(envelope_405))
        .layer(RequestBodyLimitLayer::new(max_body))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .layer(CatchPanicLayer::custom(panic_envelope))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let path = req
                .extensions()
                .get::<MatchedPath>()
                .map(MatchedPath::as_str)
                .unwrap_or("-");
            tracing::debug_span!("http", method = %req.method(), path)
        }))
        .layer(middleware::from_fn(track_metrics))
}

/// Counts every request in [`crate::metrics::API_REQUESTS`] by method, matched route
/// template (`unmatched` for unknown paths, so raw paths never become labels) and final
/// status, and records its latency in [`crate::metrics::API_DURATION`]. Outermost
/// layer, so the status is the one the client gets (405/408/413 rewrites, panics).
async fn track_metrics(req: Request, next: middleware::Next) -> Response {
    use axum::http::Method;
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let m = req.method();
    // Extension methods would let a client mint label values; fold them into `other`.
    let method = if [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ]
    .contains(m)
    {
        m.as_str().to_owned()
    } else {
        "other".to_owned()
    };
    let t0 = Instant::now();
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    metrics::counter!(crate::metrics::API_REQUESTS, "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!(crate::metrics::API_DURATION, "method" => method, "route" => route)
        .record(t0.elapsed().as_secs_f64());
    resp
}
