//! The REST API (spec "Endpoints"): everything under `/api/v1`, every answer in the JSON
//! envelope (including 401, 404 for unknown paths, 405, 408, 413, malformed JSON and
//! panics), one router per resource, one [`AppState`], one error type ([`error::ApiError`]).
//! Public routes (login/session, `/status`, the OpenAPI document and the PXE runtime
//! routes under `/boot`, see [`boot`]) sit outside the session layer; everything else is
//! inside it.
//!
//! **Adding a resource** (issue 7 section 1): its API module has
//! `pub fn router() -> OpenApiRouter<AppState>` built with utoipa-axum
//! (`OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get_one, update))`),
//! each handler keeps its `#[utoipa::path]` (full `/api/v1/...` path, `{name}` parameters
//! declared in `params`, payload types only: the envelope, error answers and security are
//! added by [`openapi::finalize`]); then add one `.merge(x::router())` line in
//! [`resources`], to the public or the protected group. The route and its OpenAPI path
//! cannot drift: both come from the annotation.

pub mod auth;
pub mod boot;
pub mod dhcp;
pub mod dns;
pub mod error;
pub mod extract;
pub mod hosts;
pub mod openapi;
pub mod profiles;
pub mod system;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_boot;
#[cfg(test)]
mod tests_contract;

use std::{sync::Arc, time::Instant};

use axum::{
    extract::{MatchedPath, Request},
    http::StatusCode,
    middleware,
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tower_http::{
    catch_panic::CatchPanicLayer, limit::RequestBodyLimitLayer, timeout::TimeoutLayer, trace::TraceLayer,
};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;

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

/// The OpenAPI document's header; paths and schemas come from the resource routers
/// ([`resources`]), finished by [`openapi::finalize`]. Use [`openapi_doc`] for the whole document.
#[derive(OpenApi)]
#[openapi(info(
    title = "Bootlane API",
    version = "1",
    description = "Network boot (PXE) server with a built-in DNS server. Every answer is {success, data} or {success: false, error}."
))]
pub struct ApiDoc;

async fn fallback(req: Request) -> ApiError {
    ApiError::NotFound(format!(
        "no endpoint {} {}; see GET /api/v1/openapi.json for the list",
        req.method(),
        req.uri().path()
    ))
}

/// Rewrites the bare answers of axum (405) and of the outer layers (413 from the body
/// limit, 408 from the timeout) into the error envelope.
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

/// Every `/api/v1` resource router with its OpenAPI paths: `(public, protected)`.
/// A new resource adds one `.merge(x::router())` line here (see the module docs).
pub fn resources() -> (OpenApiRouter<AppState>, OpenApiRouter<AppState>) {
    let public = OpenApiRouter::new()
        .merge(auth::router())
        .merge(system::public_router());
    let protected = OpenApiRouter::new()
        .merge(dns::router())
        .merge(dhcp::router())
        .merge(hosts::router())
        .merge(profiles::router())
        .merge(system::router());
    (public, protected)
}

/// Merges the resource routers (the protected ones behind `session_layer`), splits once
/// into the axum router and the finished OpenAPI document ([`openapi::finalize`]).
fn split(
    session_layer: impl FnOnce(OpenApiRouter<AppState>) -> OpenApiRouter<AppState>,
) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (public, mut protected) = resources();
    openapi::protect(protected.get_openapi_mut());
    let (api, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(public)
        .merge(session_layer(protected))
        .split_for_parts();
    openapi::finalize(&mut doc);
    (api, doc)
}

/// The OpenAPI document `GET /api/v1/openapi.json` serves.
pub fn openapi_doc() -> utoipa::openapi::OpenApi {
    split(|r| r).1
}

/// The whole application: `/api/v1/...` plus the envelope-producing fallbacks and layers.
pub fn router(state: AppState) -> Router {
    let session = middleware::from_fn_with_state(state.clone(), auth::require_session);
    let (api, doc) = split(|protected| protected.route_layer(session));
    let doc = Arc::new(doc);
    let api = api.route(
        "/api/v1/openapi.json",
        get(move || async move { axum::Json(doc.as_ref().clone()) }),
    );
    let timeout = std::time::Duration::from_secs(state.config.api.request_timeout_secs);
    let max_body = state.config.api.max_body_bytes;
    let boot = boot::router(boot::BootState {
        root: state.config.boot_root(),
        catalog: state.catalog.clone(),
    });
    // Layer order matters: the envelope rewrite sits outside the body limit and the
    // timeout, whose own answers (413 `length limit exceeded`, bare 408) it rewrites.
    Router::new()
        .merge(api)
        .merge(boot)
        .fallback(fallback)
        .with_state(state)
        .layer(RequestBodyLimitLayer::new(max_body))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .layer(CatchPanicLayer::custom(panic_envelope))
        .layer(middleware::from_fn(envelope_405))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let path = req
                .extensions()
                .get::<MatchedPath>()
                .map(MatchedPath::as_str)
                .unwrap_or("-");
            tracing::debug_span!("http", method = %req.method(), path)
        }))
}
