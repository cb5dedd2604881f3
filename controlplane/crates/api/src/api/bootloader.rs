//! The bootloader API: `GET /bootloader/files` (every file the DHCP architecture map can
//! hand out, analysed), `GET /bootloader/check` (every entry points at an existing file
//! of the right kind for its architecture; the wrong ones with the fix) and
//! `POST /bootloader/check-file` (one file under the boot root). The work is done by
//! [`Bootloaders`] (taken as sub-state). All routes need a session; none writes.

use std::sync::Arc;

use axum::extract::{FromRef, State};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiJson, Envelope},
    AppState,
};
use bootlane_media::media::bootloader::{BootFileInfo, Bootloaders, CheckReport, MappedFile};

impl FromRef<AppState> for Arc<Bootloaders> {
    fn from_ref(s: &AppState) -> Self {
        s.bootloaders.clone()
    }
}

/// Every local file the arch map hands out that exists, with size, SHA-256, kind, PE
/// machine type, iPXE version and the architecture codes naming it.
#[utoipa::path(get, path = "/api/v1/bootloader/files", extensions(("x-bootlane-role" = json!("viewer"))), tag = "bootloader",
    responses((status = 200, body = Vec<MappedFile>), (status = 401)))]
pub async fn files(State(b): State<Arc<Bootloaders>>) -> Result<Envelope<Vec<MappedFile>>> {
    Ok(Envelope::ok(b.files().await?))
}

/// Checks every arch-map entry: the file exists and is of the right kind for its
/// architecture code; missing or wrong entries carry the fix.
#[utoipa::path(get, path = "/api/v1/bootloader/check", extensions(("x-bootlane-role" = json!("viewer"))), tag = "bootloader",
    responses((status = 200, body = CheckReport), (status = 401)))]
pub async fn check(State(b): State<Arc<Bootloaders>>) -> Result<Envelope<CheckReport>> {
    Ok(Envelope::ok(b.check().await))
}

/// Body of `POST /bootloader/check-file`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckFile {
    /// File relative to the boot root (same rules as `GET /files?path=`).
    pub path: String,
}

/// The bootloader analysis of one file under the boot root.
#[utoipa::path(post, path = "/api/v1/bootloader/check-file", extensions(("x-bootlane-role" = json!("operator"))), tag = "bootloader", request_body = CheckFile,
    responses((status = 200, body = BootFileInfo), (status = 400, description = "A refused path"), (status = 401),
        (status = 404, description = "No such regular file")))]
pub async fn check_file(
    State(b): State<Arc<Bootloaders>>,
    ApiJson(body): ApiJson<CheckFile>,
) -> Result<Envelope<BootFileInfo>> {
    Ok(Envelope::ok(b.check_file(&body.path).await?))
}

/// The bootloader routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(files))
        .routes(routes!(check))
        .routes(routes!(check_file))
}
