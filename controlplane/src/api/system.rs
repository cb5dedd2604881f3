//! Version, status, metrics, audit log and the OpenAPI document.
//! `/metrics` uses the Prometheus text exposition format (version 0.0.4), the form the
//! spec leaves open and the one monitoring systems scrape.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use axum::{extract::State, http::header, response::IntoResponse};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiQuery, Envelope},
    AppState, AuditEntry,
};

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

/// `POST /version/check` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpdateCheck {
    /// The running version.
    pub current: String,
    /// Whether a newer version is known; always false: this build has no update source
    /// configured and never contacts the internet.
    pub update_available: bool,
    /// Why no check was made.
    pub detail: String,
}

/// Current version.
#[utoipa::path(get, path = "/api/v1/version", tag = "system", responses((status = 200, body = VersionInfo)))]
pub async fn version() -> Envelope<VersionInfo> {
    Envelope::ok(VersionInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: option_env!("BOOTLANE_GIT_COMMIT").unwrap_or("unknown").into(),
        build_date: option_env!("BOOTLANE_BUILD_DATE").unwrap_or("unknown").into(),
    })
}

/// Check for updates (no update source is configured; answers so, without network access).
#[utoipa::path(post, path = "/api/v1/version/check", tag = "system", responses((status = 200, body = UpdateCheck)))]
pub async fn version_check() -> Envelope<UpdateCheck> {
    Envelope::ok(UpdateCheck {
        current: env!("CARGO_PKG_VERSION").into(),
        update_available: false,
        detail: "no update source is configured; Bootlane never contacts the internet on its own".into(),
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
    /// DNS server bound and answering.
    pub dns_running: bool,
    /// XDP fast path attached.
    pub dns_xdp_active: bool,
    /// Why the fast path is not active, if so.
    pub dns_xdp_reason: Option<String>,
}

/// Service status (no authentication).
#[utoipa::path(get, path = "/api/v1/status", tag = "system", responses((status = 200, body = Status)))]
pub async fn status(State(s): State<AppState>) -> Envelope<Status> {
    let xdp = s.dns.dataplane().status();
    Envelope::ok(Status {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_secs: s.started.elapsed().as_secs(),
        dns_running: !s.dns.bound().is_empty(),
        dns_xdp_active: xdp.active,
        dns_xdp_reason: xdp.reason,
    })
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/api/v1/metrics", tag = "system", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    use std::fmt::Write;
    let m = s.dns.handler().shared.metrics.snapshot();
    let x = s.dns.dataplane().status();
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, samples: &[(&str, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    counter(
        "bootlane_dns_queries_total",
        "DNS queries received by the userspace server.",
        &[
            ("{transport=\"udp\"}", m.queries_udp),
            ("{transport=\"tcp\"}", m.queries_tcp),
        ],
    );
    counter(
        "bootlane_dns_responses_total",
        "DNS outcomes of the userspace server.",
        &[
            ("{outcome=\"local\"}", m.local),
            ("{outcome=\"forwarded\"}", m.forwarded),
            ("{outcome=\"nxdomain\"}", m.nxdomain),
            ("{outcome=\"refused\"}", m.refused),
            ("{outcome=\"servfail\"}", m.servfail),
            ("{outcome=\"error\"}", m.errors),
            ("{outcome=\"dropped\"}", m.dropped),
            ("{outcome=\"truncated\"}", m.truncated),
        ],
    );
    let c = x.counters;
    counter(
        "bootlane_dns_xdp_answered_total",
        "DNS queries answered by the XDP fast path.",
        &[("", c.answered)],
    );
    counter(
        "bootlane_dns_xdp_passed_total",
        "Packets the XDP program passed to the kernel stack, by reason.",
        &[
            ("{reason=\"not_dns\"}", c.pass_not_dns),
            ("{reason=\"miss\"}", c.pass_miss),
            ("{reason=\"unsupported\"}", c.pass_unsupported),
            ("{reason=\"too_long\"}", c.pass_too_long),
            ("{reason=\"malformed\"}", c.pass_malformed),
        ],
    );
    let _ = writeln!(out, "# HELP bootlane_dns_xdp_active Whether the XDP fast path is attached.\n# TYPE bootlane_dns_xdp_active gauge\nbootlane_dns_xdp_active {}", u8::from(x.active));
    let _ = writeln!(out, "# HELP bootlane_dns_xdp_map_entries Entries in the XDP answer map.\n# TYPE bootlane_dns_xdp_map_entries gauge\nbootlane_dns_xdp_map_entries {}", x.map_entries);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}

/// Query parameters of `GET /audit-logs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// Only entries for this resource (e.g. `dns_record`).
    pub resource: Option<String>,
    /// Most entries to return, newest first (1-1000, default 100).
    pub limit: Option<usize>,
}

/// `GET /audit-logs` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLog {
    /// Entries, newest first.
    pub entries: Vec<AuditEntry>,
}

/// Audit log, newest first.
#[utoipa::path(get, path = "/api/v1/audit-logs", tag = "system", params(AuditParams), responses((status = 200, body = AuditLog), (status = 401)))]
pub async fn audit_logs(
    State(s): State<AppState>,
    ApiQuery(p): ApiQuery<AuditParams>,
) -> Result<Envelope<serde_json::Value>> {
    let limit = p.limit.unwrap_or(100).clamp(1, 1000);
    let mut all = s.audit.list()?;
    all.reverse();
    let entries: Vec<AuditEntry> = all
        .into_iter()
        .filter(|e| p.resource.as_ref().is_none_or(|r| &e.resource == r))
        .take(limit)
        .collect();
    Ok(Envelope::ok(serde_json::json!({ "entries": entries })))
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

/// Protected system routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(version))
        .routes(routes!(version_check))
        .routes(routes!(metrics))
        .routes(routes!(audit_logs))
}
