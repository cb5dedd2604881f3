//! Service lifecycle routes (spec "Service lifecycle"): `GET /services`,
//! `POST /services/{name}/{action}` (`start`, `stop`, `restart`),
//! `POST /services/batch/{action}` and `PUT /services/{name}/auto-start`, over the
//! [`Supervisor`] (sub-state). Unknown names and actions are 400s listing the valid ones.

use std::sync::Arc;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, Envelope},
    AppState,
};
use bootlane_core::supervisor::{Action, ServiceStatus, Supervisor};

/// `GET /services` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceList {
    /// Every service, in start order.
    pub services: Vec<ServiceStatus>,
}

/// Every service with its state.
#[utoipa::path(get, path = "/api/v1/services", extensions(("x-bootlane-role" = json!("viewer"))), tag = "services",
    responses((status = 200, body = ServiceList), (status = 401)))]
pub async fn list(State(sup): State<Arc<Supervisor>>) -> Envelope<ServiceList> {
    Envelope::ok(ServiceList { services: sup.list() })
}

/// Start, stop or restart one service; answers its state afterwards (a failed start is
/// state `failed` with the reason, not an error).
#[utoipa::path(post, path = "/api/v1/services/{name}/{action}", extensions(("x-bootlane-role" = json!("admin"))), tag = "services",
    params(("name" = String, Path, description = "dns, dhcp, tftp or http-boot"),
           ("action" = String, Path, description = "start, stop or restart")),
    responses((status = 200, body = ServiceStatus), (status = 400, description = "Unknown service or action"), (status = 401)))]
pub async fn act(
    State(sup): State<Arc<Supervisor>>,
    ApiPath((name, action)): ApiPath<(String, String)>,
) -> Result<Envelope<ServiceStatus>> {
    let action = Action::parse(&action)?;
    Ok(Envelope::ok(sup.act(&name, action).await?))
}

/// Body of `POST /services/batch/{action}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// Service names (each at most once).
    pub names: Vec<String>,
}

/// One name's outcome in a batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchItem {
    /// The name as sent.
    pub name: String,
    /// True when the action ran (a failed start is still `ok` with state `failed`).
    pub ok: bool,
    /// The state afterwards.
    pub status: Option<ServiceStatus>,
    /// Why not, when `ok` is false.
    pub error: Option<String>,
}

/// `POST /services/batch/{action}` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResult {
    /// Per name, in the order sent.
    pub results: Vec<BatchItem>,
}

/// Run one action on several services, in the order given; per-name results.
#[utoipa::path(post, path = "/api/v1/services/batch/{action}", extensions(("x-bootlane-role" = json!("admin"))), tag = "services",
    params(("action" = String, Path, description = "start, stop or restart")), request_body = BatchRequest,
    responses((status = 200, body = BatchResult), (status = 400, description = "Unknown action or empty list"), (status = 401)))]
pub async fn batch(
    State(sup): State<Arc<Supervisor>>,
    ApiPath(action): ApiPath<String>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Envelope<BatchResult>> {
    let action = Action::parse(&action)?;
    if req.names.is_empty() || req.names.len() > 64 {
        return Err(ApiError::BadRequest(format!(
            "'names' must list 1-64 services (known: {})",
            sup.names().join(", ")
        )));
    }
    let mut results = Vec::new();
    for name in req.names {
        match sup.act(&name, action).await {
            Ok(st) => results.push(BatchItem {
                name,
                ok: true,
                status: Some(st),
                error: None,
            }),
            Err(e) => results.push(BatchItem {
                name,
                ok: false,
                status: None,
                error: Some(e.to_string()),
            }),
        }
    }
    Ok(Envelope::ok(BatchResult { results }))
}

/// Body of `PUT /services/{name}/auto-start`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AutoStart {
    /// Start with the server.
    pub auto_start: bool,
}

/// Set whether a service starts with the server (stored; honoured at the next start).
#[utoipa::path(put, path = "/api/v1/services/{name}/auto-start", extensions(("x-bootlane-role" = json!("admin"))), tag = "services",
    params(("name" = String, Path, description = "dns, dhcp, tftp or http-boot")), request_body = AutoStart,
    responses((status = 200, body = ServiceStatus), (status = 400, description = "Unknown service"), (status = 401)))]
pub async fn auto_start(
    State(sup): State<Arc<Supervisor>>,
    ApiPath(name): ApiPath<String>,
    ApiJson(b): ApiJson<AutoStart>,
) -> Result<Envelope<ServiceStatus>> {
    Ok(Envelope::ok(sup.set_auto_start(&name, b.auto_start).await?))
}

/// Protected lifecycle routes. `/services/batch/{action}` is matched before
/// `/services/{name}/{action}` (axum prefers the static segment).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(batch))
        .routes(routes!(auto_start))
        .routes(routes!(act))
}
