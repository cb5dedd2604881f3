//! Version check and download: `POST /version/check` asks the configured update source,
//! `POST /version/download` starts a verified background download (202, followed with
//! `GET /version/download` or the `update.download.*` events), `GET /version/downloads`
//! lists what is stored. The HTTP face of [`bootlane_updates::updates::service::UpdateService`].

use std::sync::Arc;

use axum::{
    body::Bytes,
    extract::{FromRef, State},
    http::StatusCode,
};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::Envelope,
    AppState,
};
use bootlane_updates::updates::service::{DownloadJob, StoredUpdate, UpdateCheck, UpdateService};

impl FromRef<AppState> for Arc<UpdateService> {
    fn from_ref(s: &AppState) -> Self {
        s.updates.clone()
    }
}

/// Check for updates: the running version, the newest one the update source lists,
/// whether it is newer, its notes and its artifact for this platform. Without
/// `[updates] manifest_url`: says so, contacting nothing.
#[utoipa::path(post, path = "/api/v1/version/check", extensions(("x-bootlane-role" = json!("admin"))), tag = "system",
    responses((status = 200, body = UpdateCheck),
              (status = 502, description = "The update source failed (URL and reason named)")))]
pub async fn version_check(State(u): State<Arc<UpdateService>>) -> Result<Envelope<UpdateCheck>> {
    Ok(Envelope::ok(u.check().await?))
}

/// `POST /version/download` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DownloadRequest {
    /// Version to download (default: the newest listed).
    #[serde(default)]
    pub version: Option<String>,
}

/// Download a version's artifact for this platform in the background (202 with the job):
/// progress as `update.download.progress` events, then `update.download.completed` once its
/// SHA-256 and minisign signature are verified and it is stored under
/// `<data_dir>/updates/<version>/`, or `update.download.failed` naming why (nothing kept).
/// Never replaces the running binary (`bootlane update install` does, see the book's updates chapter).
#[utoipa::path(post, path = "/api/v1/version/download", extensions(("x-bootlane-role" = json!("admin"))), tag = "system",
    request_body(content = Option<DownloadRequest>, description = "Optional; `{}` or no body = the newest"),
    responses((status = 202, body = DownloadJob),
              (status = 404, description = "Version not listed, or no artifact for this platform"),
              (status = 409, description = "A download is already running"),
              (status = 502, description = "The update source failed")))]
pub async fn version_download(State(u): State<Arc<UpdateService>>, body: Bytes) -> Result<Envelope<DownloadJob>> {
    // The body is optional: none (or whitespace) means the newest version.
    let req: DownloadRequest = if body.iter().all(u8::is_ascii_whitespace) {
        DownloadRequest::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("the body must be {{\"version\": \"x.y.z\"}} or empty: {e}")))?
    };
    let job = u.download(req.version.as_deref()).await?;
    Ok(Envelope(StatusCode::ACCEPTED, job))
}

/// The current or last download job (`null` when none ran since the server started).
#[utoipa::path(get, path = "/api/v1/version/download", extensions(("x-bootlane-role" = json!("viewer"))), tag = "system",
    responses((status = 200, body = Option<DownloadJob>)))]
pub async fn version_download_state(State(u): State<Arc<UpdateService>>) -> Envelope<Option<DownloadJob>> {
    Envelope::ok(u.job())
}

/// The verified downloads stored under `<data_dir>/updates/`, newest version first.
#[utoipa::path(get, path = "/api/v1/version/downloads", extensions(("x-bootlane-role" = json!("viewer"))), tag = "system",
    responses((status = 200, body = Vec<StoredUpdate>)))]
pub async fn version_downloads(State(u): State<Arc<UpdateService>>) -> Envelope<Vec<StoredUpdate>> {
    Envelope::ok(u.stored())
}

/// The update routes (protected), each with its OpenAPI path.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(version_check))
        .routes(routes!(version_download, version_download_state))
        .routes(routes!(version_downloads))
}
