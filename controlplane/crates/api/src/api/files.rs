//! The file API: `GET /files?path=` (list a directory of the boot root),
//! `GET /files/root` (its path and space), `POST /files/upload` (multipart,
//! streamed to disk chunk by chunk) and `DELETE /files?path=`. The work is done by
//! [`FileService`] (taken as sub-state); paths are checked by
//! [`bootlane_media::media::paths::resolve`]. All routes need a session.
//!
//! The upload route is the one route without the JSON body limit (`[api] max_body_bytes`)
//! and the request timeout ([`UNLIMITED_ROUTES`], applied in [`super::router`]): its size
//! is bounded by `[files] max_upload_bytes` and the free space instead.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    extract::{
        multipart::{Field, MultipartError, MultipartRejection},
        DefaultBodyLimit, FromRef, Multipart, State,
    },
    http::{header, HeaderMap, StatusCode},
};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiQuery, Envelope},
    AppState,
};
use bootlane_media::media::files::{BootRootInfo, DeletedFile, FileListing, FileService, UploadedFile};

/// The upload route's path.
pub const UPLOAD_PATH: &str = "/api/v1/files/upload";
/// Routes exempt from `[api] max_body_bytes` and `[api] request_timeout_secs` (matched
/// route templates): streamed uploads, bounded by their own limits.
pub const UNLIMITED_ROUTES: &[&str] = &[UPLOAD_PATH, super::os_images::UPLOAD_PATH];
/// Multipart framing allowed for in the announced `Content-Length` before the file's
/// size is judged from it (boundaries, part headers, the `dir` and `overwrite` parts).
pub const MULTIPART_SLACK: u64 = 64 << 10;
/// Longest `dir` or `overwrite` part accepted, in bytes.
const MAX_TEXT_PART: usize = 8 << 10;
/// Most of a refused upload's remaining body read and discarded so that the client
/// receives the refusal (bytes); see `drain_refused`.
pub const DRAIN_MAX_BYTES: u64 = 64 << 20;
/// Longest time spent discarding a refused upload's remaining body.
pub const DRAIN_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(10);

impl FromRef<AppState> for Arc<FileService> {
    fn from_ref(s: &AppState) -> Self {
        s.files.clone()
    }
}

/// Query of `GET /files`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Directory relative to the boot root (default: the root). Decoded once; `..`, a
    /// leading `/`, `\`, NUL and `%2e`/`%2f`/`%5c`/`%00` are refused.
    #[serde(default)]
    pub path: String,
    /// Also compute each regular file's SHA-256 (reads every file; default false).
    #[serde(default)]
    pub sha256: bool,
}

/// Query of `DELETE /files`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// File, symlink or directory relative to the boot root (never the root itself).
    pub path: String,
    /// Delete a non-empty directory with its content (default false: 409).
    #[serde(default)]
    pub recursive: bool,
}

/// List a directory of the boot root, sorted by name.
#[utoipa::path(get, path = "/api/v1/files", extensions(("x-bootlane-role" = json!("viewer"))), tag = "files", params(ListQuery),
    responses((status = 200, body = FileListing), (status = 400, description = "A refused path, or not a directory"),
        (status = 401), (status = 404, description = "No such directory")))]
pub async fn list(
    State(files): State<Arc<FileService>>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Envelope<FileListing>> {
    Ok(Envelope::ok(files.list(&q.path, q.sha256).await?))
}

/// The boot root's path and the total and free space of its volume.
#[utoipa::path(get, path = "/api/v1/files/root", extensions(("x-bootlane-role" = json!("viewer"))), tag = "files",
    responses((status = 200, body = BootRootInfo), (status = 401)))]
pub async fn root(State(files): State<Arc<FileService>>) -> Result<Envelope<BootRootInfo>> {
    Ok(Envelope::ok(files.root_info()?))
}

/// Delete a file, a symlink (not its target), an empty directory, or a non-empty one with
/// `recursive=true`. Publishes `file.deleted`.
#[utoipa::path(delete, path = "/api/v1/files", extensions(("x-bootlane-role" = json!("operator"))), tag = "files", params(DeleteQuery),
    responses((status = 200, body = DeletedFile), (status = 400, description = "A refused path, or the root"),
        (status = 401), (status = 404, description = "No such file or directory"),
        (status = 409, description = "A non-empty directory without recursive=true")))]
pub async fn delete(
    State(files): State<Arc<FileService>>,
    ApiQuery(q): ApiQuery<DeleteQuery>,
) -> Result<Envelope<DeletedFile>> {
    Ok(Envelope::ok(files.delete(&q.path, q.recursive).await?))
}

/// The multipart form of `POST /files/upload`, parts in this order.
#[derive(Debug, ToSchema)]
#[allow(
    dead_code,
    reason = "documents the multipart form; the handler reads the parts as a stream"
)]
pub struct UploadForm {
    /// Target directory relative to the boot root (default: the root); must exist.
    pub dir: Option<String>,
    /// Replace an existing file (`true`/`false`, default false: 409).
    pub overwrite: Option<bool>,
    /// The file, last; its file name (a plain name, no `/`) is the name in `dir`.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// A multipart read error as an API error (413 when too large, else 400); shared with
/// the OS image upload.
pub(crate) fn multipart_error(e: MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::PayloadTooLarge(format!("the upload is too large: {}", e.body_text()))
    } else {
        ApiError::BadRequest(format!(
            "the multipart body is malformed or was cut off: {}",
            e.body_text()
        ))
    }
}

/// The `multipart/form-data` extractor's result as an API error: 415 without a
/// boundary (`hint` shows the curl form to use), else 400 with axum's reason.
pub(crate) fn multipart_or_error(
    multipart: std::result::Result<Multipart, MultipartRejection>,
    hint: &str,
) -> Result<Multipart> {
    multipart.map_err(|e| match e {
        MultipartRejection::InvalidBoundary(_) => ApiError::UnsupportedMediaType(format!(
            "send the upload as multipart/form-data with a boundary ({hint})"
        )),
        other => ApiError::BadRequest(other.body_text()),
    })
}

/// The announced `Content-Length` of an upload less [`MULTIPART_SLACK`]: the most the
/// file part can hold, judged before a byte is written. `None` when absent (chunked).
pub(crate) fn announced_file_len(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|n| n.saturating_sub(MULTIPART_SLACK))
}

/// Passes `received` through; when it is a refusal, first reads and discards what is
/// left of the upload (a bad `dir`, a name clash, no space), at most [`DRAIN_MAX_BYTES`]
/// within [`DRAIN_MAX_TIME`].
///
/// HTTP/1.1 servers that answer before reading the body and then close the connection
/// make the client's kernel see unread data and reset the connection: the client
/// (curl: "Send failure: Broken pipe") loses the 4xx and its message. Reading the rest
/// lets the refusal arrive on every ordinary upload; only a body announced larger than
/// the bound is cut off at once (the connection then closes, RFC 9112 section 9.6).
pub(crate) async fn drain_refused<T>(mp: &mut Multipart, announced: Option<u64>, received: Result<T>) -> Result<T> {
    if received.is_err() && announced.is_none_or(|n| n <= DRAIN_MAX_BYTES) {
        drain(mp).await;
    }
    received
}

/// Reads and discards the rest of `mp`, within [`DRAIN_MAX_BYTES`] and [`DRAIN_MAX_TIME`].
async fn drain(mp: &mut Multipart) {
    let drain = async {
        let mut total = 0u64;
        while let Ok(Some(mut field)) = mp.next_field().await {
            while let Ok(Some(chunk)) = field.chunk().await {
                total += chunk.len() as u64;
                if total > DRAIN_MAX_BYTES {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_MAX_TIME, drain).await;
}

/// A small text part (at most 8 KiB of UTF-8); shared with the OS image upload.
/// Checks that no part follows the file part (a part after it would be ignored
/// silently); `order` names the expected parts for the 400.
///
/// # Errors
/// 400 when another part follows.
pub(crate) async fn ensure_last_part(mp: &mut Multipart, order: &str) -> Result<()> {
    if mp.next_field().await.map_err(multipart_error)?.is_some() {
        return Err(ApiError::BadRequest(format!(
            "the 'file' part must be the last part; {order}"
        )));
    }
    Ok(())
}

pub(crate) async fn small_text(mut field: Field<'_>, name: &str) -> Result<String> {
    let mut buf = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        buf.extend_from_slice(&chunk);
        if buf.len() > MAX_TEXT_PART {
            return Err(ApiError::BadRequest(format!(
                "the '{name}' part is longer than {MAX_TEXT_PART} bytes"
            )));
        }
    }
    String::from_utf8(buf).map_err(|_| ApiError::BadRequest(format!("the '{name}' part is not valid UTF-8")))
}

/// Upload a file into the boot root: `multipart/form-data` with the parts `dir`
/// (optional), `overwrite` (optional) and then `file`, streamed to a temporary file in
/// `dir` and renamed into place when complete (a cut-off upload leaves nothing). Bounded
/// by `[files] max_upload_bytes` (413) and the free space, checked before and while
/// writing (507, the partial file removed). Publishes `file.uploaded`.
#[utoipa::path(post, path = "/api/v1/files/upload", extensions(("x-bootlane-role" = json!("operator"))), tag = "files",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, body = UploadedFile), (status = 400, description = "A refused path, a missing or malformed part"),
        (status = 401), (status = 404, description = "No such directory"),
        (status = 409, description = "The file exists and overwrite is false, or a directory is in the way"),
        (status = 413, description = "Larger than [files] max_upload_bytes"),
        (status = 415, description = "Not sent as multipart/form-data"),
        (status = 507, description = "Not enough free space on the boot root's volume")))]
pub async fn upload(
    State(files): State<Arc<FileService>>,
    headers: HeaderMap,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<Envelope<UploadedFile>> {
    let mut mp = multipart_or_error(multipart, "curl -F dir=... -F file=@...")?;
    let announced = announced_file_len(&headers);
    let received = receive(&files, &mut mp, announced).await;
    Ok(Envelope::created(drain_refused(&mut mp, announced, received).await?))
}

/// The parts of `POST /files/upload` in order, the file streamed to disk; the handler
/// drains the body when this refuses it.
async fn receive(files: &Arc<FileService>, mp: &mut Multipart, announced: Option<u64>) -> Result<UploadedFile> {
    let mut dir = String::new();
    let mut overwrite = false;
    loop {
        let Some(field) = mp.next_field().await.map_err(multipart_error)? else {
            return Err(ApiError::BadRequest(
                "the multipart body has no 'file' part; send dir, overwrite, then file".into(),
            ));
        };
        match field.name().unwrap_or_default() {
            "dir" => dir = small_text(field, "dir").await?,
            "overwrite" => {
                overwrite = match small_text(field, "overwrite").await?.trim() {
                    "true" | "1" | "on" => true,
                    "false" | "0" | "off" | "" => false,
                    other => {
                        return Err(ApiError::BadRequest(format!(
                            "'overwrite' must be true or false, not {other:?}"
                        )))
                    }
                }
            }
            "file" => {
                let name = field.file_name().map(str::to_owned).ok_or_else(|| {
                    ApiError::BadRequest("the 'file' part has no file name (Content-Disposition filename=...)".into())
                })?;
                let mut up = files.begin_upload(&dir, &name, overwrite, announced).await?;
                let mut field = field;
                while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                    up.write(chunk).await?;
                }
                drop(field);
                ensure_last_part(mp, "send dir, overwrite, then file").await?;
                return Ok(up.finish().await?);
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown part {other:?}; send dir, overwrite, then file"
                )))
            }
        }
    }
}

/// The file routes; the upload route without axum's default body limit (the outer
/// `[api] max_body_bytes` limit skips it too, see [`UNLIMITED_ROUTES`]).
pub fn router() -> OpenApiRouter<AppState> {
    let upload = OpenApiRouter::new()
        .routes(routes!(upload))
        .layer(DefaultBodyLimit::disable());
    OpenApiRouter::new()
        .routes(routes!(list, delete))
        .routes(routes!(root))
        .merge(upload)
}
