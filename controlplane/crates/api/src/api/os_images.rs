//! OS image routes over [`OsImageService`]: `GET /os-images` (the list contract),
//! `POST /os-images/upload` (multipart, streamed to disk, answered at once with the image
//! `uploaded` while inspection runs in the background), and
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
    http::HeaderMap,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    files::{announced_file_len, drain_refused, ensure_last_part, multipart_error, multipart_or_error, small_text},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_boot::boot::catalog::{BootCatalog, EntryType, MenuEntry, Profile, ProfileInput};
use bootlane_media::media::images::{ImagePatch, ImageState, OsImage, OsImageService, IMAGES_DIR};

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
#[utoipa::path(get, path = "/api/v1/os-images", extensions(("x-bootlane-role" = json!("viewer"))), tag = "os-images", params(ListQuery),
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
#[utoipa::path(get, path = "/api/v1/os-images/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404), (status = 401)))]
pub async fn get_one(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.get(id)?))
}

/// Change an OS image's name or description (absent fields are kept).
#[utoipa::path(put, path = "/api/v1/os-images/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    request_body = ImagePatch,
    responses((status = 200, body = OsImage), (status = 400, description = "Invalid field (named)"), (status = 404), (status = 401)))]
pub async fn update(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(patch): ApiJson<ImagePatch>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.update(id, patch).await?))
}

/// Whether `text` (a kernel or initrd path, a URL, a command line) refers to image `id`'s
/// tree or ISO: `images/<id>/...`, `images/<id>.iso`, or `images/<id>` ending a word.
pub fn refers_to_image(text: &str, id: u64) -> bool {
    let needle = format!("{IMAGES_DIR}/{id}");
    text.match_indices(&needle).any(|(at, _)| {
        let before_ok = at == 0 || matches!(text.as_bytes()[at - 1], b'/' | b' ' | b'=');
        let rest = &text[at + needle.len()..];
        before_ok
            && (rest.is_empty()
                || rest.starts_with('/')
                || rest.starts_with(".iso")
                || rest.starts_with(char::is_whitespace))
    })
}

/// Names of the profiles with an entry that boots from image `id` (its tree or its ISO).
///
/// # Errors
/// The store.
pub fn profiles_using(catalog: &BootCatalog, id: u64) -> Result<Vec<String>> {
    Ok(catalog
        .profiles()?
        .into_iter()
        .filter(|p| {
            p.entries.iter().any(|e| {
                e.kernel
                    .iter()
                    .chain(&e.initrds)
                    .chain(&e.cmdline)
                    .chain(&e.url)
                    .any(|t| refers_to_image(t, id))
            })
        })
        .map(|p| p.name)
        .collect())
}

fn in_use(users: &[String], id: u64, what: &str) -> ApiError {
    ApiError::Conflict(format!(
        "OS image {id} is used by profile(s) {}; {what}",
        users.join(", ")
    ))
}

/// Delete an OS image, its ISO file and its extracted tree; answers the image as it was.
/// Refused (409, naming them) while a profile boots from it.
#[utoipa::path(delete, path = "/api/v1/os-images/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "Still uploading or extracting, or a profile boots from it (named)"), (status = 401)))]
pub async fn delete(
    State(images): State<Arc<OsImageService>>,
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    images.get(id)?;
    let users = profiles_using(&catalog, id)?;
    if !users.is_empty() {
        return Err(in_use(&users, id, "change or delete those profiles first"));
    }
    Ok(Envelope::ok(images.delete(id).await?))
}

/// Extract the image's files into `<boot root>/images/<id>/` (served at
/// `/boot/images/<id>/...`). Answers at once with the image `extracting`; it returns to
/// `ready` with `extracted` set (`os_image.extracted`) or with `extract_error`
/// (`os_image.extract.failed`); `os_image.extract.progress` events on the way.
#[utoipa::path(post, path = "/api/v1/os-images/{id}/extract", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "Not ready or mounted (uploading, inspecting, failed, already extracting)"),
        (status = 507, description = "The files do not fit on the boot root's volume"), (status = 401)))]
pub async fn extract(
    State(images): State<Arc<OsImageService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.extract(id).await?))
}

/// Mount the image: its files are served from inside the ISO at
/// `/boot/images/<id>/<path>` (with Range), without extracting it; the same profile works
/// mounted or extracted.
#[utoipa::path(post, path = "/api/v1/os-images/{id}/mount", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "Not ready"), (status = 401)))]
pub async fn mount(State(images): State<Arc<OsImageService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<OsImage>> {
    Ok(Envelope::ok(images.mount(id).await?))
}

/// Unmount the image (back to `ready`). Refused (409, naming them) while a profile boots
/// from it and it is not extracted: those machines would fail to boot.
#[utoipa::path(post, path = "/api/v1/os-images/{id}/unmount", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
    responses((status = 200, body = OsImage), (status = 400), (status = 404),
        (status = 409, description = "Not mounted, or a profile boots from it and it is not extracted"), (status = 401)))]
pub async fn unmount(
    State(images): State<Arc<OsImageService>>,
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<OsImage>> {
    if images.get(id)?.extracted.is_none() {
        let users = profiles_using(&catalog, id)?;
        if !users.is_empty() {
            return Err(in_use(&users, id, "extract the image first, or change those profiles"));
        }
    }
    Ok(Envelope::ok(images.unmount(id).await?))
}

/// `GET /fs/browse` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BrowseQuery {
    /// An OS image id: browse inside that image (ready, mounted or extracting); absent:
    /// browse the boot root.
    pub image: Option<u64>,
    /// Directory to list (`""` or absent: the top).
    pub path: Option<String>,
}

/// One entry of `GET /fs/browse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BrowseEntry {
    /// Last path component.
    pub name: String,
    /// Path relative to the top browsed (the image's root or the boot root).
    pub path: String,
    /// `file`, `dir` (inside images), or also `symlink`, `other` (in the boot root).
    #[serde(rename = "type")]
    pub kind: String,
    /// Size in bytes (0 for directories inside images).
    pub size: u64,
}

/// `GET /fs/browse` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Browse {
    /// The image browsed, or none for the boot root.
    pub image: Option<u64>,
    /// The directory listed.
    pub path: String,
    /// Its parent (`None` at the top).
    pub parent: Option<String>,
    /// Directories first, then files, by name.
    pub entries: Vec<BrowseEntry>,
}

/// File browser: a directory inside an OS image (both its ISO 9660 and UDF trees,
/// case-insensitive paths) or of the boot root (the path rules of `GET /files`).
#[utoipa::path(get, path = "/api/v1/fs/browse", extensions(("x-bootlane-role" = json!("admin"))), tag = "os-images", params(BrowseQuery),
    responses((status = 200, body = Browse), (status = 400, description = "A bad path (named)"),
        (status = 404, description = "No such image or directory"), (status = 409, description = "The image is not ready"), (status = 401)))]
pub async fn browse(
    State(images): State<Arc<OsImageService>>,
    State(files): State<Arc<bootlane_media::media::files::FileService>>,
    ApiQuery(q): ApiQuery<BrowseQuery>,
) -> Result<Envelope<Browse>> {
    let path = q.path.unwrap_or_default().trim_matches('/').to_string();
    let mut entries: Vec<BrowseEntry> = match q.image {
        Some(id) => images
            .browse(id, &path)
            .await?
            .into_iter()
            .map(|e| BrowseEntry {
                name: e.name,
                path: e.path,
                kind: e.kind.to_string(),
                size: e.size,
            })
            .collect(),
        None => files
            .list(&path, false)
            .await?
            .entries
            .into_iter()
            .map(|e| BrowseEntry {
                kind: serde_json::to_value(e.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                name: e.name,
                path: e.path,
                size: e.size,
            })
            .collect(),
    };
    entries.sort_by(|a, b| {
        (a.kind != "dir")
            .cmp(&(b.kind != "dir"))
            .then_with(|| a.name.cmp(&b.name))
    });
    let parent = (!path.is_empty()).then(|| path.rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default());
    Ok(Envelope::ok(Browse {
        image: q.image,
        path,
        parent,
        entries,
    }))
}

/// Body of `POST /profiles/from-image`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromImage {
    /// The OS image (ready, mounted or extracted).
    pub image_id: u64,
    /// Profile name (default: from the detection, e.g. `debian-12-5-0-x86_64`).
    pub name: Option<String>,
    /// Description (default: the image's product and version).
    pub description: Option<String>,
    /// Kernel arguments appended to the detected ones (e.g. `console=ttyS0`).
    pub extra_cmdline: Option<String>,
}

/// Create a boot profile from an OS image in one call: a `linux` entry whose kernel,
/// initrds and command line come from the detection (paths under `images/<id>/`, served
/// from the extracted tree or, while mounted, from inside the ISO; the image's URLs in
/// the command line are `{base_url}/boot/images/<id>`), then "Boot from local disk". An
/// image neither extracted nor mounted is mounted first. Windows images boot through
/// `wimboot`, which must be in the boot root.
#[utoipa::path(post, path = "/api/v1/profiles/from-image", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", request_body = FromImage,
    responses((status = 201, body = Profile), (status = 400, description = "Invalid field (named)"),
        (status = 404, description = "No such image"),
        (status = 409, description = "Not ready, nothing bootable detected, wimboot missing, or the profile name is taken"), (status = 401)))]
pub async fn from_image(
    State(images): State<Arc<OsImageService>>,
    State(catalog): State<Arc<BootCatalog>>,
    State(files): State<Arc<bootlane_media::media::files::FileService>>,
    ApiJson(req): ApiJson<FromImage>,
) -> Result<(axum::http::StatusCode, Envelope<Profile>)> {
    let id = req.image_id;
    let mut img = images.get(id)?;
    let boot = img.boot_files().map_err(ApiError::Conflict)?;
    if boot.wimboot && !files.root()?.join("wimboot").is_file() {
        return Err(ApiError::Conflict(
            "Windows images boot through wimboot, which is not in the boot root: download it from \
             https://ipxe.org/wimboot and upload it as 'wimboot' (POST /api/v1/files/upload)"
                .into(),
        ));
    }
    let Some(det) = img.detection.clone() else {
        return Err(ApiError::Conflict(format!("OS image {id} has no detection yet")));
    };
    let mut cmdline = boot.cmdline;
    if let Some(extra) = req.extra_cmdline.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        if !cmdline.is_empty() {
            cmdline.push(' ');
        }
        cmdline.push_str(extra);
    }
    let family = serde_json::to_value(det.family)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let short = [Some(family.as_str()), det.version.as_deref(), det.arch.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let what = det.product.clone().unwrap_or_else(|| short.clone());
    let name = req.name.unwrap_or_else(|| short.replace(['.', ' '], "-"));
    if img.state == ImageState::Ready && img.extracted.is_none() {
        img = images.mount(id).await?;
    }
    let entries = vec![
        MenuEntry {
            label: format!("Install {short}").chars().take(100).collect(),
            kind: EntryType::Linux,
            kernel: Some(boot.kernel),
            initrds: boot.initrds,
            cmdline: (!cmdline.is_empty()).then_some(cmdline),
            url: None,
            script: None,
            is_default: false,
        },
        MenuEntry {
            label: "Boot from local disk".into(),
            kind: EntryType::Local,
            kernel: None,
            initrds: Vec::new(),
            cmdline: None,
            url: None,
            script: None,
            is_default: false,
        },
    ];
    let input = ProfileInput {
        name: Some(name),
        description: Some(
            req.description
                .unwrap_or_else(|| format!("{what} from OS image {}", img.name)),
        ),
        entries: Some(entries),
        comment: Some(format!("from OS image {id} ({})", img.name)),
        ..ProfileInput::default()
    };
    Ok((
        axum::http::StatusCode::CREATED,
        Envelope::ok(catalog.create_profile(input).await?),
    ))
}

/// Download the ISO file (with `Range`, `Content-Disposition: attachment`).
#[utoipa::path(get, path = "/api/v1/os-images/{id}/file", extensions(("x-bootlane-role" = json!("viewer"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
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
    // ServeFile's own 404 (the ISO gone from the boot root) has no body: answer the
    // envelope like every other error.
    if resp.status() == axum::http::StatusCode::NOT_FOUND {
        return Err(super::error::ApiError::NotFound(format!(
            "the ISO file of OS image {id} ({}) is missing from the boot root",
            img.path
        )));
    }
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
#[utoipa::path(post, path = "/api/v1/os-images/import", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", request_body = ImportRequest,
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
#[utoipa::path(post, path = "/api/v1/os-images/{id}/reprocess", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images", params(("id" = u64, Path, description = "OS image id")),
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
#[utoipa::path(post, path = "/api/v1/os-images/upload", extensions(("x-bootlane-role" = json!("operator"))), tag = "os-images",
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
    let mut mp = multipart_or_error(multipart, "curl -F file=@image.iso")?;
    let announced = announced_file_len(&headers);
    let received = receive(&images, &mut mp, announced).await;
    Ok(Envelope::created(drain_refused(&mut mp, announced, received).await?))
}

/// The parts of `POST /os-images/upload` in order, the image streamed to disk; the
/// handler drains the body when this refuses it.
async fn receive(images: &Arc<OsImageService>, mp: &mut Multipart, announced: Option<u64>) -> Result<OsImage> {
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
                    up.write(chunk).await?;
                }
                drop(field);
                ensure_last_part(mp, "send name, then file").await?;
                return Ok(up.finish().await?);
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
        .routes(routes!(extract))
        .routes(routes!(mount))
        .routes(routes!(unmount))
        .routes(routes!(browse))
        .routes(routes!(from_image))
        .merge(upload)
}
