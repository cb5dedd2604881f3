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
pub mod events_api;
pub mod extract;
pub mod hosts;
pub mod logs;
pub mod profiles;
pub mod services;
pub mod settings_api;
pub mod system;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_boot;
#[cfg(test)]
mod tests_logs;

use std::{sync::Arc, time::Instant};

use axum::extract::FromRef;
use axum::{
    extract::{MatchedPath, Request},
    http::StatusCode,
    middleware,
    response::{IntoResponse, Response},
    Router,
};
use tower_http::{
    catch_panic::CatchPanicLayer, limit::RequestBodyLimitLayer, timeout::TimeoutLayer, trace::TraceLayer,
};
use utoipa::OpenApi;

use self::error::ApiError;
use crate::{
    boot::catalog::BootCatalog, config::Config, dhcp::control::DhcpControl, dns::service::DnsService, events::EventBus,
    store::Store, supervisor::Supervisor, tftp::control::TftpControl,
};

/// Shared state of every handler: one `Arc` per service, built in one place
/// ([`crate::app::build`]). Handlers of newer modules take only the service they need
/// through sub-state ([`axum::extract::FromRef`] impls below). Cheap to clone.
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
    /// Profiles, script versions and the iPXE script template.
    pub catalog: Arc<BootCatalog>,
    /// Hosts (inventory).
    pub hosts: Arc<crate::inventory::service::HostService>,
    /// Live DHCP administration: leases, reservations, settings, arch map.
    pub dhcp: Arc<DhcpControl>,
    /// Live TFTP settings.
    pub tftp: Arc<TftpControl>,
    /// The event bus (events, SSE, audit log).
    pub events: Arc<EventBus>,
    /// Service lifecycle.
    pub supervisor: Arc<Supervisor>,
    /// Layered settings groups (general, interfaces, netboot).
    pub settings: Arc<crate::settings::Settings>,
    /// Whether the `http-boot` routes serve (shared with the supervisor's unit).
    pub boot_serving: Arc<std::sync::atomic::AtomicBool>,
    /// Process start.
    pub started: Instant,
    /// Logging: level, files, the log-line stream (handlers take it as sub-state).
    pub logs: Arc<crate::logging::LogControl>,
}

impl FromRef<AppState> for Arc<EventBus> {
    fn from_ref(s: &AppState) -> Self {
        s.events.clone()
    }
}

impl FromRef<AppState> for Arc<Supervisor> {
    fn from_ref(s: &AppState) -> Self {
        s.supervisor.clone()
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
        events_api::list,
        events_api::stream,
        events_api::audit_logs,
        services::list,
        services::act,
        services::batch,
        services::auto_start,
        settings_api::get_all,
        settings_api::put_all,
        settings_api::get_general,
        settings_api::put_general,
        settings_api::get_interfaces,
        settings_api::put_interfaces,
        settings_api::get_netboot,
        settings_api::put_netboot,
        settings_api::list_interfaces,
        settings_api::list_network_interfaces,
        logs::list_files,
        logs::disk_usage,
        logs::cleanup,
        logs::stream,
        logs::get_settings,
        logs::put_settings,
    ),
    components(schemas(
        crate::dns::records::DnsRecord,
        crate::dns::records::RecordInput,
        crate::dns::records::RecordKind,
        crate::dns::service::DnsSettings,
        crate::dns::service::DnsSettingsPatch,
        dns::RecordList,
        dns::DnsServiceView,
        crate::inventory::model::HostView,
        crate::inventory::model::HostInput,
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
        crate::events::Event,
        crate::events::AuditEntry,
        events_api::EventList,
        events_api::AuditList,
        crate::supervisor::ServiceStatus,
        crate::supervisor::ServiceState,
        services::ServiceList,
        services::BatchRequest,
        services::BatchResult,
        services::BatchItem,
        services::AutoStart,
        crate::settings::GeneralSettings,
        crate::settings::InterfaceSettings,
        crate::settings::NetbootSettings,
        crate::settings::SettingsTree,
        crate::settings::Applied,
        crate::net::InterfaceInfo,
        crate::net::InterfaceAddr,
        crate::logging::LoggingSettings,
        crate::logging::LoggingSettingsPatch,
        crate::logging::Rotation,
        crate::logging::LogFile,
        crate::logging::LogLine,
        crate::logging::LogLevel,
        logs::LogFileList,
        logs::DiskUsage,
        logs::FileUsage,
        logs::CleanupRequest,
        logs::CleanupResult,
        logs::LoggingSettingsView,
        logs::LoggingApplied,
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
        .merge(events_api::router())
        .merge(services::router())
        .merge(settings_api::router())
        .merge(logs::router())
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::require_session));
    let public = Router::new()
        .merge(auth::router())
        .merge(system::public_router())
        .merge(system::metrics_router(state.clone()));
    let api = Router::new().merge(public).merge(protected).fallback(fallback);
    let timeout = std::time::Duration::from_secs(state.config.api.request_timeout_secs);
    let max_body = state.config.api.max_body_bytes;
    let boot = boot::router(boot::BootState {
        root: state.settings.boot_root_cell(),
        catalog: state.catalog.clone(),
        events: state.events.clone(),
        serving: state.boot_serving.clone(),
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
