//! OS image routes (issue 9 "OS images") over [`OsImageService`]: `GET /os-images` (the
//! list contract), `POST /os-images/upload` (multipart, streamed to disk, answered at once
//! with the image `uploaded` while inspection runs in the background), and
//! `GET/PUT/DELETE /os-images/{id}`. The upload route is in
//! [`super::files::UNLIMITED_ROUTES`] (no JSON body limit, no request timeout): it is
//! bounded by `[files] max_upload_bytes` and the free space. All routes need a session.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    extract::{multipart::MultipartRejection, DefaultBodyLimit, FromRef, Multipart, State},
    http::{header, HeaderMap},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    files::{ensure_last_part, multipart_error, small_text, MULTIPART_SLACK},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use crate::media::images::{ImagePatch, OsImage, OsImageService};

/// The upload route's path.
pub const UPLOAD_PATH: &str = "/api/v1/os-images/upload";

impl FromRef<AppState> for Arc<OsImageService> {
    fn from_ref(s: &AppState) -> Self {
        s.os_images.clone()
    }
}

/// `GET /os-images` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct OsImageList {
    /// Images of this page, in id order.
    pub images: Vec<OsImage>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List OS images, in id order. `q` searches name, description, file name, state, and the
/// detected family, product and version.
#[utoipa::path(get, path = "/api/v1/os-images", tag = "os-images", params(ListQuery),
    responses((status = 200, body = OsImageList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list(
    State(images): State<Arc<OsImageService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<OsImageList>> {
    let q = lq.needle();
    let page = lq.paginate(
        images.list()?.into_iter().filter(|i| {
            let d = i.detection.as_ref();
            let family = d
                .map(|d| serde_json::to_string(&d.family).unwrap_or_default())
                .unwrap_or_default();
            let state = serde_json::to_string(&i.state).unwrap_or_default();
            matches(
                q.as_deref(),
                [
                    i.name.as_str(),
                    &i.description,
                    &i.file_name,
                    &state,
                    &family,
                    d.and_then(|d| d.product.as_deref()).unwrap_or(""),
                    d.and_then(|d| d.version.as_deref()).unwrap_or(""),
                ],
            )
        }),
        |i| i.id,
    )?;
    Ok(Envelope::ok(OsImageList {
        images: page.items,
        paging: page.info,
    }))
}

/// Get one OS image with its state, reason and detection.
#[utoipa::path(get, path = "/api/v1/os-images/{id}", tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404), (status = 401)))]
pub async fn get_one(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.get(id)?))
}

/// Change an OS image's name or description (absent fields are kept).
#[utoipa::path(put, path = "/api/v1/os-images/{id}", tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    request_body = ImagePatch,
    responses((status = 200, body = OsImage), (status = 400, description = "Invalid field (named)"), (status = 404), (status = 401)))]
pub async fn update(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(patch): ApiJson<ImagePatch>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.update(id, patch).await?))
}

/// Delete an OS image and its ISO file; answers the image as it was.
#[utoipa::path(delete, path = "/api/v1/os-images/{id}", tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "The image is still uploading"), (status = 401)))]
pub async fn delete(State(images): State<Arc<OsImageService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.delete(id).await?))
}

/// Download the ISO file (with `Range`, `Content-Disposition: attachment`).
#[utoipa::path(get, path = "/api/v1/os-images/{id}/file", tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, content_type = "application/octet-stream", body = Vec<u8>, description = "The ISO"),
        (status = 206, description = "The range asked for"), (status = 400), (status = 404),
        (status = 409, description = "Still uploading"), (status = 401)))]
pub async fn download(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
    req: axum::extract::Request,
) -> Result<axum::response::Response> {
    use axum::response::IntoResponse;
    use tower::ServiceExt;
    let (img, path) = images.file(id)?;
    let mut resp = tower_http::services::ServeFile::new(path)
        .oneshot(req)
        .await
        .map_err(|e| super::error::ApiError::Internal(anyhow::anyhow!("serving the ISO: {e}")))?
        .into_response();
    let name: String = img
        .file_name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        resp.headers_mut().insert(axum::http::header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

/// Body of `POST /os-images/import`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// The ISO's path relative to `[files] import_dir`.
    pub path: String,
    /// Display name (default: the file name).
    pub name: Option<String>,
    /// `copy` (default: the original stays) or `move` (it is deleted once imported).
    pub mode: Option<ImportMode>,
}

/// How `POST /os-images/import` treats the original.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ImportMode {
    /// Keep the original.
    Copy,
    /// Delete the original once imported.
    Move,
}

/// Import an ISO already on the server (under `[files] import_dir`): copied into the boot
/// root like an upload (progress events, SHA-256, then inspection in the background).
#[utoipa::path(post, path = "/api/v1/os-images/import", tag = "os-images", request_body = ImportRequest,
    responses((status = 201, body = OsImage), (status = 400, description = "Import off, or a bad path (named)"),
        (status = 404, description = "No such file"), (status = 413), (status = 507), (status = 401)))]
pub async fn import(
    State(images): State<Arc<OsImageService>>,
    ApiJson(req): ApiJson<ImportRequest>,
) -> Result<Envelope<OsImage>> {
    let mv = req.mode == Some(ImportMode::Move);
    Ok(Envelope::created(
        images.import(&req.path, req.name.as_deref(), mv).await?,
    ))
}

/// Inspect the image again: answers it `inspecting`; it becomes `ready` or `failed` in
/// the background (`os_image.ready` / `os_image.failed`).
#[utoipa::path(post, path = "/api/v1/os-images/{id}/reprocess", tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "Uploading or already inspecting"), (status = 401)))]
pub async fn reprocess(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.reprocess(id).await?))
}

/// The multipart form of `POST /os-images/upload`, parts in this order.
#[derive(Debug, ToSchema)]
#[allow(
    dead_code,
    reason = "documents the multipart form; the handler reads the parts as a stream"
)]
pub struct ImageUploadForm {
    /// Display name (default: the file's name).
    pub name: Option<String>,
    /// The ISO, last; its file name is kept as `file_name`.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Upload an ISO: `multipart/form-data` with an optional `name` part, then `file`,
/// streamed to `<boot root>/images/<id>.iso` (temporary file, renamed when complete;
/// sha256 computed while writing; `os_image.upload.progress` events every 5 %). Answers
/// at once with the image `uploaded`; inspection runs in the background (`inspecting`,
/// then `ready` with the detection or `failed` with a reason: poll
/// `GET /os-images/{id}` or watch the events). Bounded by `[files] max_upload_bytes`
/// (413) and the free space (507).
#[utoipa::path(post, path = "/api/v1/os-images/upload", tag = "os-images",
    request_body(content = ImageUploadForm, content_type = "multipart/form-data"),
    responses((status = 201, body = OsImage), (status = 400, description = "A missing or malformed part"),
        (status = 401), (status = 413, description = "Larger than [files] max_upload_bytes"),
        (status = 415, description = "Not sent as multipart/form-data"),
        (status = 507, description = "Not enough free space on the boot root's volume")))]
pub async fn upload(
    State(images): State<Arc<OsImageService>>,
    headers: HeaderMap,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<Envelope<OsImage>> {
    let mut mp = multipart.map_err(|e| match e {
        MultipartRejection::InvalidBoundary(_) => ApiError::UnsupportedMediaType(
            "send the upload as multipart/form-data with a boundary (curl -F file=@image.iso)".into(),
        ),
        other => ApiError::BadRequest(other.body_text()),
    })?;
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|n| n.saturating_sub(MULTIPART_SLACK));
    let mut name = None;
    loop {
        let Some(field) = mp.next_field().await.map_err(multipart_error)? else {
            return Err(ApiError::BadRequest(
                "the multipart body has no 'file' part; send name (optional), then file".into(),
            ));
        };
        match field.name().unwrap_or_default() {
            "name" => name = Some(small_text(field, "name").await?),
            "file" => {
                let file_name = field.file_name().map(str::to_owned).ok_or_else(|| {
                    ApiError::BadRequest("the 'file' part has no file name (Content-Disposition filename=...)".into())
                })?;
                // The announced length is the body's; the progress is judged against it.
                let mut up = images.begin_upload(&file_name, name.as_deref(), announced).await?;
                let mut field = field;
                while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                    up.write(&chunk).await?;
                }
                drop(field);
                ensure_last_part(&mut mp, "send name, then file").await?;
                return Ok(Envelope::created(up.finish().await?));
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown part {other:?}; send name (optional), then file"
                )))
            }
        }
    }
}

/// The OS image routes; the upload without axum's default body limit (the outer
/// `[api] max_body_bytes` skips it too, see [`super::files::UNLIMITED_ROUTES`]).
pub fn router() -> OpenApiRouter<AppState> {
    let upload = OpenApiRouter::new()
        .routes(routes!(upload))
        .layer(DefaultBodyLimit::disable());
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(download))
        .routes(routes!(reprocess))
        .routes(routes!(import))
        .merge(upload)
}
