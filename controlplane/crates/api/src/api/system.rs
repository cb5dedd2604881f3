//! Version, status, metrics and the OpenAPI document.
//! `/metrics` uses the Prometheus text exposition format (version 0.0.4), the form the
//! spec leaves open and the one monitoring systems scrape; it is rendered by
//! [`bootlane_core::metrics`] and guarded by its own check ([`require_scrape_auth`]), not the
//! session layer, so a Prometheus server can scrape it with a static bearer token.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::{sync::Arc, time::Instant};

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{error::ApiError, extract::Envelope, AppState};
use bootlane_core::store::Store;
use bootlane_dhcp::dhcp::control::DhcpControl;
use bootlane_dns::dns::service::DnsService;

/// `GET /version` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionInfo {
    /// Semantic version of this build.
    pub version: String,
    /// Git commit the binary was built from (`unknown` outside a checkout).
    pub git_commit: String,
    /// Build date (UTC, `YYYY-MM-DD`).
    pub build_date: String,
}

/// Current version.
#[utoipa::path(get, path = "/api/v1/version", extensions(("x-bootlane-role" = json!("viewer"))), tag = "system", responses((status = 200, body = VersionInfo)))]
pub async fn version() -> Envelope<VersionInfo> {
    Envelope::ok(VersionInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: option_env!("BOOTLANE_GIT_COMMIT").unwrap_or("unknown").into(),
        build_date: option_env!("BOOTLANE_BUILD_DATE").unwrap_or("unknown").into(),
    })
}

/// `GET /status` answer (public, minimal).
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// Always `ok` when the API answers.
    pub status: String,
    /// Version.
    pub version: String,
    /// Seconds since start.
    pub uptime_secs: u64,
    /// This node's name (`[server] node_name`).
    pub node: String,
    /// The store's backend: `sled` or `postgres` (`[store] backend`).
    pub store_backend: String,
    /// False while a PostgreSQL store's connection is lost (the node answers from its
    /// last state; the reason is in the log). Always
    /// true for sled.
    pub store_connected: bool,
    /// DNS server bound and answering.
    pub dns_running: bool,
    /// XDP fast path attached.
    pub dns_xdp_active: bool,
    /// Why the fast path is not active, if so.
    pub dns_xdp_reason: Option<String>,
    /// The management listener's TLS certificate (`[api] tls`), its SHA-256
    /// fingerprint and validity; `null` when the API is served over plain HTTP.
    pub tls: Option<bootlane_core::web_server::tls::CertInfo>,
}

/// Service status (no authentication).
#[utoipa::path(get, path = "/api/v1/status", extensions(("x-bootlane-role" = json!("public"))), tag = "system", responses((status = 200, body = Status)))]
pub async fn status(
    State(dns): State<Arc<DnsService>>,
    State(started): State<Instant>,
    State(bus): State<Arc<bootlane_core::events::EventBus>>,
    State(store): State<Store>,
    tls: Option<axum::Extension<Arc<bootlane_core::web_server::tls::CertStore>>>,
) -> Envelope<Status> {
    let xdp = dns.dataplane().status();
    Envelope::ok(Status {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_secs: started.elapsed().as_secs(),
        node: bus.node(),
        store_backend: store.backend_name().into(),
        store_connected: store.shared_state().is_none_or(|(up, _)| up),
        dns_running: !dns.bound().is_empty(),
        dns_xdp_active: xdp.active,
        dns_xdp_reason: xdp.reason,
        tls: tls.map(|t| t.info()),
    })
}

/// Prometheus metrics of every service (every series is listed in the book's metrics reference).
/// Scrape-time values (DNS and XDP counters, leases per subnet, store size and link, the
/// TLS certificate's end of validity) are copied
/// into the recorder first, then everything is rendered.
#[utoipa::path(get, path = "/api/v1/metrics", extensions(("x-bootlane-role" = json!("viewer"))), tag = "system",
    responses((status = 200, description = "Prometheus text format (0.0.4)", content_type = "text/plain"),
              (status = 401, description = "No valid session, no matching `[metrics] bearer_token`, and `[metrics] public` is false")))]
pub async fn metrics(
    State(dns): State<Arc<DnsService>>,
    State(dhcp): State<Arc<DhcpControl>>,
    State(store): State<Store>,
    tls: Option<axum::Extension<Arc<bootlane_core::web_server::tls::CertStore>>>,
) -> impl IntoResponse {
    dns.handler().shared.metrics.snapshot().export();
    dns.dataplane().status().export();
    if let Err(e) = dhcp.export_metrics().await {
        tracing::warn!("lease statistics for /metrics failed: {e}");
    }
    match store.size_on_disk() {
        Ok(n) => metrics::gauge!(bootlane_core::metrics::STORE_SIZE).set(n as f64),
        Err(e) => tracing::warn!("store size for /metrics failed: {e}"),
    }
    let up = store.shared_state().is_none_or(|(up, _)| up);
    metrics::gauge!(bootlane_core::metrics::STORE_UP, "backend" => store.backend_name()).set(f64::from(u8::from(up)));
    if let Some(t) = tls {
        let not_after = t.info().not_after.unix_timestamp();
        metrics::gauge!(bootlane_core::metrics::TLS_CERT_EXPIRY).set(not_after as f64);
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        bootlane_core::metrics::render(),
    )
}

/// Guards `/metrics` (a Prometheus server scrapes with a static config): passes when
/// `[metrics] public` is true, when `Authorization: Bearer` carries the configured
/// `[metrics] bearer_token` (compared in constant time), or when the request has a live
/// session (cookie or session bearer); otherwise 401 in the envelope.
pub async fn require_scrape_auth(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let cfg = &s.config.metrics;
    if cfg.public {
        return next.run(req).await;
    }
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if bearer.is_some_and(|t| cfg.token_matches(t)) {
        return next.run(req).await;
    }
    if let Some(t) = super::auth::token_from(req.headers()) {
        if s.auth.session(&t).await.is_some() {
            return next.run(req).await;
        }
    }
    ApiError::Unauthorized(
        "scraping /api/v1/metrics needs a session, or `Authorization: Bearer <token>` with the [metrics] bearer_token of the config file (or [metrics] public = true)".into(),
    )
    .into_response()
}

/// `/metrics` with its own authentication ([`require_scrape_auth`], added by
/// [`super::router`] as a route layer), outside the session layer.
pub fn metrics_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(metrics))
}

/// Uptime reference.
pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

/// Public system routes (`GET /openapi.json` is added by [`super::router`], which holds
/// the finished document).
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(status))
}

/// A consistent backup of the whole store, taken while the server runs (the file format
/// is in the book's "Backup and restore"): JSON Lines, a manifest line with per-tree counts and a
/// SHA-256, then one line per record. Writes wait while it is taken. It holds password
/// hashes and sessions: keep it like the data directory. `bootlane restore` restores it
/// with the server stopped. Publishes `system.backup.created`.
#[utoipa::path(get, path = "/api/v1/system/backup", extensions(("x-bootlane-role" = json!("admin"))), tag = "system",
    responses((status = 200, content_type = "application/x-ndjson", body = String,
        description = "The backup file (Content-Disposition: attachment)"), (status = 401)))]
pub async fn backup(
    State(store): State<Store>,
    State(events): State<Arc<bootlane_core::events::EventBus>>,
) -> Result<Response, ApiError> {
    let bytes = bootlane_backup::backup(&store)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let name = format!("bootlane-backup-{}.jsonl", OffsetDateTime::now_utc().unix_timestamp());
    events.publish(
        bootlane_core::events::NewEvent::new(
            bootlane_core::events::EventKind::SystemBackupCreated,
            format!("backup taken: {} bytes", bytes.len()),
        )
        .with(&bootlane_core::events::BackupCreated {
            bytes: bytes.len() as u64,
        }),
    );
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson".to_string()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        ],
        bytes,
    )
        .into_response())
}

/// Protected system routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(version)).routes(routes!(backup))
}
