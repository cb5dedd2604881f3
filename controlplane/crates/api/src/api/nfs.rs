//! NFS routes (spec "Service settings") over [`NfsService`]: `GET/PUT /services/nfs`
//! (the exports and the system side; a PUT is written to the exports file and loaded
//! with `exportfs -ra`), `POST /services/nfs/validate-path` and
//! `GET /services/nfs/browse-path` (choosing a directory of the boot root to export).
//! The static `nfs/...` segments take precedence over `/services/{name}/{action}`.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::State;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiJson, ApiQuery, Envelope},
    AppState,
};
use bootlane_media::nfs::service::{BrowseAnswer, NfsApplied, NfsPatch, NfsService, NfsView, PathCheck};

/// The NFS settings, Bootlane's exports file state and the kernel's export table.
#[utoipa::path(get, path = "/api/v1/services/nfs", extensions(("x-bootlane-role" = json!("viewer"))), tag = "nfs", responses((status = 200, body = NfsView), (status = 401)))]
pub async fn get_nfs(State(nfs): State<Arc<NfsService>>) -> Envelope<NfsView> {
    Envelope::ok(nfs.view().await)
}

/// Change the NFS settings (any subset; `exports` replaces the whole list). Paths must be
/// directories under the boot root; clients are networks or addresses; options come from
/// a whitelist, and `rw` needs `[nfs] allow_rw`. The exports file is rewritten and
/// `exportfs -ra` run; when exportfs is not installed the settings are stored and the
/// answer says `applied: false` with the reason.
#[utoipa::path(put, path = "/api/v1/services/nfs", extensions(("x-bootlane-role" = json!("admin"))), tag = "nfs", request_body = NfsPatch,
    responses((status = 200, body = NfsApplied), (status = 400, description = "Invalid field (named)"),
        (status = 502, description = "exportfs refused the exports (its stderr quoted); the previous exports were restored"),
        (status = 401)))]
pub async fn put_nfs(
    State(nfs): State<Arc<NfsService>>,
    ApiJson(p): ApiJson<NfsPatch>,
) -> Result<Envelope<NfsApplied>> {
    Ok(Envelope::ok(nfs.put(p).await?))
}

/// Body of `POST /services/nfs/validate-path`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidatePathRequest {
    /// Relative to the boot root, or absolute under it.
    pub path: String,
}

/// Whether a path can be exported: a directory under the boot root, its canonical path,
/// whether it looks like an extracted image tree, and the problems. Path problems are in
/// the answer (`ok: false`), not an error.
#[utoipa::path(post, path = "/api/v1/services/nfs/validate-path", extensions(("x-bootlane-role" = json!("admin"))), tag = "nfs", request_body = ValidatePathRequest,
    responses((status = 200, body = PathCheck), (status = 400, description = "Malformed body"), (status = 401)))]
pub async fn validate_path(
    State(nfs): State<Arc<NfsService>>,
    ApiJson(r): ApiJson<ValidatePathRequest>,
) -> Envelope<PathCheck> {
    Envelope::ok(nfs.validate_path(&r.path))
}

/// Query of `GET /services/nfs/browse-path`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BrowseQuery {
    /// Directory relative to the boot root or absolute under it (default: the root).
    #[serde(default)]
    pub path: String,
}

/// The subdirectories of a directory of the boot root, each with its export path, image
/// kind and whether it is exported (symlinks leading out are left out).
#[utoipa::path(get, path = "/api/v1/services/nfs/browse-path", extensions(("x-bootlane-role" = json!("viewer"))), tag = "nfs", params(BrowseQuery),
    responses((status = 200, body = BrowseAnswer), (status = 400, description = "Refused path (the rule named) or not a directory"),
        (status = 404, description = "No such directory"), (status = 401)))]
pub async fn browse_path(
    State(nfs): State<Arc<NfsService>>,
    ApiQuery(q): ApiQuery<BrowseQuery>,
) -> Result<Envelope<BrowseAnswer>> {
    Ok(Envelope::ok(nfs.browse(&q.path)?))
}

/// The NFS routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_nfs, put_nfs))
        .routes(routes!(validate_path))
        .routes(routes!(browse_path))
}
