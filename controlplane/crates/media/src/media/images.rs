//! OS images: ISOs uploaded into `<boot root>/images/<id>.iso`, kept as [`OsImage`]
//! records in the store (tree `os_images`), and inspected in the background
//! ([`super::iso::read_image`], then [`super::detect::detect`]).
//!
//! Upload: [`OsImageService::begin_upload`] creates the record (`uploading`) and streams
//! through the file service's [`super::files::Upload`] (temporary file + rename, size
//! limit and free-space checks, sha256 while writing); [`ImageUpload`] publishes
//! `os_image.upload.progress` every [`PROGRESS_STEP_PERCENT`] % of the announced length
//! (every [`PROGRESS_STEP_BYTES`] when unknown). A finished upload becomes `uploaded` and
//! is inspected in a spawned task (`inspecting` → `ready` | `failed` with a `reason`);
//! one cut off becomes `failed`. The state machine is [`ImageState::can_become`].
//! At start-up [`OsImageService::recover`] leaves no image in a running state: an
//! interrupted upload becomes `failed` (its temporary file removed), an interrupted
//! inspection is run again. Events: `os_image.uploaded`, `os_image.upload.progress`,
//! `os_image.ready`, `os_image.failed`, `os_image.updated`, `os_image.deleted`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    detect::{detect, BootMethod, Detection, IMAGE_URL, ISO_URL},
    files::{FileService, Upload},
    iso::{extract_tree, index_image, read_image, IsoIndex, IsoLimits},
};
use bootlane_core::{
    events::{
        wire_name, EventBus, EventKind, ExtractedTree, ImageDetection, ImageKernel, ImageProgress, NewEvent,
        OsImageExtraction, OsImageInspected,
    },
    service_error::{short_text, ServiceError},
    store::{Store, Table},
};

/// Directory of the images under the boot root.
pub const IMAGES_DIR: &str = "images";
/// Prefix of an extraction's temporary directory under `images/` (`.extract-<id>`).
pub const EXTRACT_PREFIX: &str = ".extract-";
/// Progress events while uploading, in percent of the announced length.
pub const PROGRESS_STEP_PERCENT: u64 = 5;
/// Progress events while uploading when the length is unknown, in bytes.
pub const PROGRESS_STEP_BYTES: u64 = 64 << 20;
/// Longest `name` and `file_name`, in bytes.
pub const MAX_NAME: usize = 255;
/// Longest `description`, in bytes.
pub const MAX_DESCRIPTION: usize = 4096;

/// State of an image (`uploading` → `uploaded` → `inspecting` → `ready` | `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageState {
    /// Bytes are arriving.
    Uploading,
    /// Complete on disk, waiting for inspection.
    Uploaded,
    /// Being read.
    Inspecting,
    /// Inspected; see `detection`.
    Ready,
    /// Upload or inspection failed; see `reason`.
    Failed,
    /// Its tree is being written under `images/<id>/` (from `ready` or `mounted`, and
    /// back to it; a mounted image stays served meanwhile).
    Extracting,
    /// Served from inside the ISO at `/boot/images/<id>/...` (from `ready`; `unmount`
    /// returns it to `ready`).
    Mounted,
}

impl ImageState {
    /// Whether work on the image is under way (nothing else may change its state).
    pub fn running(self) -> bool {
        matches!(
            self,
            Self::Uploading | Self::Uploaded | Self::Inspecting | Self::Extracting
        )
    }

    /// The state's name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uploading => "uploading",
            Self::Uploaded => "uploaded",
            Self::Inspecting => "inspecting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Extracting => "extracting",
            Self::Mounted => "mounted",
        }
    }

    /// The transitions allowed: an upload ends `uploaded` or `failed`, an inspection
    /// starts from `uploaded` (or again from `ready`/`failed`) and ends `ready` or
    /// `failed`; extraction and mounting start from `ready` and return to it.
    pub fn can_become(self, to: Self) -> bool {
        use ImageState::*;
        matches!(
            (self, to),
            (Uploading, Uploaded | Failed)
                | (Uploaded, Inspecting | Failed)
                | (Inspecting, Ready | Failed)
                | (Ready | Failed, Inspecting)
                | (Ready | Mounted, Extracting)
                | (Ready, Mounted)
                | (Extracting | Mounted, Ready)
                | (Extracting, Mounted)
        )
    }
}

/// An OS image (`GET /os-images/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct OsImage {
    /// Id.
    pub id: u64,
    /// Display name (default: the uploaded file's name).
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// The file name it was uploaded as.
    pub file_name: String,
    /// Path of the ISO relative to the boot root (`images/<id>.iso`).
    pub path: String,
    /// Size in bytes (bytes received so far while uploading).
    pub size: u64,
    /// Lower-case hex SHA-256 of the ISO, computed while it was written.
    pub sha256: Option<String>,
    /// State.
    pub state: ImageState,
    /// Why it is `failed`.
    pub reason: Option<String>,
    /// File trees read: `iso9660`, `udf` or both.
    #[serde(default)]
    pub trees: Vec<String>,
    /// Files found in the image.
    #[serde(default)]
    pub file_count: usize,
    /// What the image is (once `ready`).
    pub detection: Option<Detection>,
    /// Its extracted tree under the boot root, once `extract` has finished.
    #[serde(default)]
    pub extracted: Option<Extraction>,
    /// Why the last extraction failed (the image itself stays usable).
    #[serde(default)]
    pub extract_error: Option<String>,
    /// Served from inside the ISO at `/boot/images/<id>/` (state `mounted`, or
    /// `extracting` from a mounted image).
    #[serde(default)]
    pub mounted: bool,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(OsImage, "os_images");

impl OsImage {
    /// Where its tree is served over HTTP, relative to `/boot/`: `images/<id>` (from the
    /// extracted copy, or from inside the ISO while mounted).
    pub fn tree_path(&self) -> String {
        format!("{IMAGES_DIR}/{}", self.id)
    }

    /// What a `linux` boot entry needs to boot this image: the kernel and initrds as boot
    /// root paths (`images/<id>/...`; `wimboot` from the boot root for Windows) and the
    /// detected arguments with the image's URLs as `{base_url}/boot/images/<id>[.iso]`.
    ///
    /// # Errors
    /// A message for a 409: not inspected (or failed), or no kernel detected.
    pub fn boot_files(&self) -> Result<ImageBoot, String> {
        let det = self
            .detection
            .as_ref()
            .filter(|_| {
                matches!(
                    self.state,
                    ImageState::Ready | ImageState::Mounted | ImageState::Extracting
                )
            })
            .ok_or_else(|| {
                format!(
                    "OS image {} is {}; it can be booted once it is ready",
                    self.id,
                    self.state.as_str()
                )
            })?;
        let tree = self.tree_path();
        let kernel = match (det.boot_method, &det.kernel) {
            (BootMethod::Wimboot, _) => "wimboot".to_string(),
            (BootMethod::Linux, Some(k)) => format!("{tree}/{k}"),
            (BootMethod::Linux, None) => return Err(format!("no kernel was found in OS image {}", self.id)),
        };
        let base = bootlane_boot::boot::catalog::BASE_URL_VAR;
        let cmdline = det
            .cmdline
            .clone()
            .unwrap_or_default()
            .replace(IMAGE_URL, &format!("{base}/boot/{tree}"))
            .replace(ISO_URL, &format!("{base}/boot/{}", self.path));
        Ok(ImageBoot {
            kernel,
            initrds: det.initrds.iter().map(|i| format!("{tree}/{i}")).collect(),
            cmdline,
            wimboot: det.boot_method == BootMethod::Wimboot,
        })
    }
}

/// [`OsImage::boot_files`]: what a boot entry for the image holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBoot {
    /// Kernel path under the boot root.
    pub kernel: String,
    /// Initrd paths under the boot root, in load order.
    pub initrds: Vec<String>,
    /// Detected arguments (may be empty; may hold `{base_url}`).
    pub cmdline: String,
    /// Booted through wimboot (a Windows image).
    pub wimboot: bool,
}

/// An extracted tree (`OsImage::extracted`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Extraction {
    /// Directory relative to the boot root: `images/<id>`.
    pub path: String,
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
    /// When it finished, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
}

/// One entry of `GET /fs/browse?image=` (a file or directory inside an image).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImageEntry {
    /// Last path component.
    pub name: String,
    /// Path inside the image (no leading `/`).
    pub path: String,
    /// `file` or `dir`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

/// A file of a mounted image, for `GET /boot/images/<id>/<path>`
/// ([`OsImageService::mounted_file`]).
#[derive(Debug, Clone)]
pub struct MountedFile {
    /// The ISO.
    pub iso: std::path::PathBuf,
    /// Byte offset of the file's data in the ISO.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Its path inside the image.
    pub path: String,
}

/// Indexes kept for browsing images that are not mounted (mounted ones are always kept).
pub const BROWSE_CACHE: usize = 8;

/// `PUT /os-images/{id}` body: absent fields are kept.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImagePatch {
    /// New display name (1-255 bytes, no control characters).
    pub name: Option<String>,
    /// New description (at most 4096 bytes, no control characters).
    pub description: Option<String>,
}

/// The OS image service: records, uploads, inspection.
pub struct OsImageService {
    table: Table<OsImage>,
    files: Arc<FileService>,
    events: Arc<EventBus>,
    limits: IsoLimits,
    // Serialises read-modify-write of records (uploads, inspections, API edits).
    lock: tokio::sync::Mutex<()>,
    // Image trees read for mounting and browsing, by id.
    indexes: std::sync::Mutex<std::collections::HashMap<u64, Arc<IsoIndex>>>,
}

fn not_found(id: u64) -> ServiceError {
    ServiceError::NotFound(format!("no OS image with id {id}; GET /api/v1/os-images lists them"))
}

impl OsImageService {
    /// The service over `store`'s `os_images` table, writing through `files`.
    ///
    /// # Errors
    /// The store.
    pub fn open(store: &Store, files: Arc<FileService>, events: Arc<EventBus>) -> Result<Arc<Self>, ServiceError> {
        Self::with_limits(store, files, events, IsoLimits::default())
    }

    /// [`OsImageService::open`] with other inspection limits (tests).
    ///
    /// # Errors
    /// The store.
    pub fn with_limits(
        store: &Store,
        files: Arc<FileService>,
        events: Arc<EventBus>,
        limits: IsoLimits,
    ) -> Result<Arc<Self>, ServiceError> {
        Ok(Arc::new(Self {
            table: store.table()?,
            files,
            events,
            limits,
            lock: tokio::sync::Mutex::new(()),
            indexes: std::sync::Mutex::new(std::collections::HashMap::new()),
        }))
    }

    /// Every image, in id order.
    ///
    /// # Errors
    /// The store.
    pub fn list(&self) -> Result<Vec<OsImage>, ServiceError> {
        Ok(self.table.list()?)
    }

    /// One image.
    ///
    /// # Errors
    /// 404, the store.
    pub fn get(&self, id: u64) -> Result<OsImage, ServiceError> {
        self.table.get(id)?.ok_or_else(|| not_found(id))
    }

    /// Applies `f` to image `id` under the lock and stores it; `None` when it is gone.
    async fn modify(&self, id: u64, f: impl FnOnce(&mut OsImage)) -> Result<Option<OsImage>, ServiceError> {
        let _g = self.lock.lock().await;
        let Some(mut img) = self.table.get(id)? else {
            return Ok(None);
        };
        f(&mut img);
        img.updated_at = OffsetDateTime::now_utc();
        self.table.put(&img).await?;
        Ok(Some(img))
    }

    /// Moves image `id` to `to` if [`ImageState::can_become`] allows it (else leaves it).
    async fn set_state(
        &self,
        id: u64,
        to: ImageState,
        reason: Option<String>,
    ) -> Result<Option<OsImage>, ServiceError> {
        self.modify(id, |img| {
            if img.state.can_become(to) {
                img.state = to;
                img.reason = reason;
            }
        })
        .await
    }

    /// Changes name and description; publishes `os_image.updated`.
    ///
    /// # Errors
    /// A bad field (400 naming it), 404, the store.
    pub async fn update(&self, id: u64, patch: ImagePatch) -> Result<OsImage, ServiceError> {
        let name = patch
            .name
            .as_deref()
            .map(|n| short_text("name", n, MAX_NAME))
            .transpose()?;
        if name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(ServiceError::Invalid("'name' must not be empty".into()));
        }
        let description = patch
            .description
            .as_deref()
            .map(|d| short_text("description", d, MAX_DESCRIPTION))
            .transpose()?;
        let before = self.get(id)?;
        let after = self
            .modify(id, |img| {
                if let Some(n) = name {
                    img.name = n;
                }
                if let Some(d) = description {
                    img.description = d;
                }
            })
            .await?
            .ok_or_else(|| not_found(id))?;
        self.events.publish(NewEvent::write(
            EventKind::OsImageUpdated,
            "os_image",
            id,
            "update",
            format!("OS image {} updated", after.name),
            Some(&before),
            Some(&after),
        ));
        Ok(after)
    }

    /// Deletes image `id`, its ISO and its extracted tree (a mounted image is unmounted);
    /// publishes `os_image.deleted`. Whether a profile still boots from it is the caller's
    /// check (`DELETE /os-images/{id}` answers 409 naming the profile).
    ///
    /// # Errors
    /// 404, an upload or extraction in progress (409), the store, I/O.
    pub async fn delete(&self, id: u64) -> Result<OsImage, ServiceError> {
        let img = {
            let _g = self.lock.lock().await;
            let img = self.table.get(id)?.ok_or_else(|| not_found(id))?;
            if matches!(img.state, ImageState::Uploading | ImageState::Extracting) {
                return Err(ServiceError::Conflict(format!(
                    "OS image {id} is still {}; wait for it to end",
                    img.state.as_str()
                )));
            }
            self.table.remove(id).await?;
            img
        };
        self.forget_index(id);
        let root = self.files.root()?;
        match tokio::fs::remove_file(root.join(&img.path)).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ServiceError::io(format!("deleting {}", img.path), e)),
        }
        match tokio::fs::remove_dir_all(root.join(img.tree_path())).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ServiceError::io(format!("deleting {}/", img.tree_path()), e)),
        }
        self.events.publish(NewEvent::write(
            EventKind::OsImageDeleted,
            "os_image",
            id,
            "delete",
            format!("OS image {} deleted", img.name),
            Some(&img),
            None::<&()>,
        ));
        Ok(img)
    }

    /// Starts an upload of `file_name` (a plain name) of `length` bytes when announced,
    /// shown as `name` (default: `file_name`): creates the record (`uploading`) and the
    /// temporary file under `<boot root>/images/`.
    ///
    /// # Errors
    /// A bad name (400), the file service's limits (413, 507), the store, I/O.
    pub async fn begin_upload(
        self: &Arc<Self>,
        file_name: &str,
        name: Option<&str>,
        length: Option<u64>,
    ) -> Result<ImageUpload, ServiceError> {
        let file_name = short_text("file_name", file_name, MAX_NAME)?;
        let name = match name.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) => short_text("name", n, MAX_NAME)?,
            None => file_name.clone(),
        };
        if file_name.is_empty() || file_name.contains('/') {
            return Err(ServiceError::Invalid(format!(
                "the file part's file name {file_name:?} must be a plain name without '/'"
            )));
        }
        let dir = self.files.root()?.join(IMAGES_DIR);
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| ServiceError::io(format!("creating {IMAGES_DIR}/ under the boot root"), e))?;
        let now = OffsetDateTime::now_utc();
        let img = self
            .table
            .insert(OsImage {
                id: 0,
                name,
                description: String::new(),
                file_name,
                path: String::new(),
                size: 0,
                sha256: None,
                state: ImageState::Uploading,
                reason: None,
                trees: Vec::new(),
                file_count: 0,
                detection: None,
                extracted: None,
                extract_error: None,
                mounted: false,
                created_at: now,
                updated_at: now,
            })
            .await?;
        let id = img.id;
        let upload = match self
            .files
            .begin_upload(IMAGES_DIR, &format!("{id}.iso"), true, length)
            .await
        {
            Ok(u) => u,
            Err(e) => {
                let _ = self.table.remove(id).await;
                return Err(e);
            }
        };
        let img = self
            .modify(id, |i| i.path = format!("{IMAGES_DIR}/{id}.iso"))
            .await?
            .ok_or_else(|| not_found(id))?;
        Ok(ImageUpload {
            service: self.clone(),
            image: img,
            upload: Some(upload),
            total: length.filter(|&n| n > 0),
            next_progress: 0,
        })
    }

    /// Inspects image `id` now: `inspecting`, then `ready` with its detection or
    /// `failed` with the reason. Publishes `os_image.ready` or `os_image.failed`.
    ///
    /// # Errors
    /// The store (inspection failures are the image's `reason`, not errors).
    pub async fn inspect(&self, id: u64) -> Result<Option<OsImage>, ServiceError> {
        let Some(img) = self.set_state(id, ImageState::Inspecting, None).await? else {
            return Ok(None);
        };
        if img.state != ImageState::Inspecting {
            return Ok(Some(img));
        }
        let path = self.files.root()?.join(&img.path);
        let limits = self.limits;
        let read = tokio::task::spawn_blocking(move || read_image(&path, limits))
            .await
            .unwrap_or_else(|e| Err(format!("the inspection task failed: {e}")));
        let out = match read {
            Ok(listing) => {
                let detection = detect(&listing.input);
                self.modify(id, |i| {
                    if i.state.can_become(ImageState::Ready) {
                        i.state = ImageState::Ready;
                        i.reason = None;
                        i.trees = listing.trees;
                        i.file_count = listing.input.paths.len();
                        i.detection = Some(detection);
                    }
                })
                .await?
            }
            Err(reason) => self.set_state(id, ImageState::Failed, Some(reason)).await?,
        };
        if let Some(i) = &out {
            let (kind, summary) = match i.state {
                ImageState::Ready => (EventKind::OsImageReady, format!("OS image {} is ready", i.name)),
                _ => (
                    EventKind::OsImageFailed,
                    format!(
                        "OS image {} failed inspection: {}",
                        i.name,
                        i.reason.as_deref().unwrap_or("-")
                    ),
                ),
            };
            self.events.publish(
                NewEvent::new(kind, summary)
                    .resource("os_image", id)
                    .with(&inspected_data(i)),
            );
        }
        Ok(out)
    }

    /// Imports an ISO already on the server: `path` relative to `[files] import_dir`
    /// (the same path rules as the file API; it cannot leave that directory), copied into
    /// the boot root as an upload would be (size and free-space checks, SHA-256, progress
    /// events, then inspection); with `remove_source` the original is deleted afterwards
    /// (a move). Answers the image in `uploaded`.
    ///
    /// # Errors
    /// No import directory configured or a bad path (400), no such file (404), the
    /// upload's errors.
    pub async fn import(
        self: &Arc<Self>,
        path: &str,
        name: Option<&str>,
        remove_source: bool,
    ) -> Result<OsImage, ServiceError> {
        use tokio::io::AsyncReadExt;
        let Some(dir) = self.files.config().import_dir.clone() else {
            return Err(ServiceError::Invalid(
                "import is off: set [files] import_dir to the directory holding the ISOs to import".into(),
            ));
        };
        let src = {
            let path = path.to_string();
            tokio::task::spawn_blocking(move || {
                crate::media::paths::resolve(&dir, &path, crate::media::paths::Follow::All)
            })
            .await
            .map_err(|e| ServiceError::Invalid(format!("resolving the path failed: {e}")))??
        };
        let meta = tokio::fs::metadata(&src)
            .await
            .map_err(|e| ServiceError::io(format!("reading {path}"), e))?;
        if !meta.is_file() {
            return Err(ServiceError::Invalid(format!("'path' {path:?} is not a file")));
        }
        let file_name = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut up = self.begin_upload(&file_name, name, Some(meta.len())).await?;
        let mut f = tokio::fs::File::open(&src)
            .await
            .map_err(|e| ServiceError::io(format!("opening {path}"), e))?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f
                .read(&mut buf)
                .await
                .map_err(|e| ServiceError::io(format!("reading {path}"), e))?;
            if n == 0 {
                break;
            }
            up.write(bytes::Bytes::copy_from_slice(&buf[..n])).await?;
        }
        let img = up.finish().await?;
        if remove_source {
            if let Err(e) = tokio::fs::remove_file(&src).await {
                tracing::warn!(path = %src.display(), error = %e, "imported OS image: the source could not be removed");
            }
        }
        Ok(img)
    }

    /// The image and its ISO file's path, for a download.
    ///
    /// # Errors
    /// 404; [`ServiceError::Conflict`] while it is still uploading (no whole file yet);
    /// the store.
    pub fn file(&self, id: u64) -> Result<(OsImage, std::path::PathBuf), ServiceError> {
        let img = self.get(id)?;
        if img.state == ImageState::Uploading {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} is still uploading; download it once it is uploaded"
            )));
        }
        let path = self.files.root()?.join(&img.path);
        Ok((img, path))
    }

    /// Inspects image `id` again (after an upgrade of the detection, say): it becomes
    /// `inspecting` now and `ready` or `failed` in the background.
    ///
    /// # Errors
    /// 404; [`ServiceError::Conflict`] while it is uploading or already inspecting; the store.
    pub async fn reprocess(self: &Arc<Self>, id: u64) -> Result<OsImage, ServiceError> {
        let before = self.get(id)?;
        if before.state == ImageState::Mounted {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} is mounted; unmount it (POST /api/v1/os-images/{id}/unmount), then reprocess"
            )));
        }
        if before.state.running() {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} is {}; reprocess it once that ends",
                serde_json::to_value(before.state)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            )));
        }
        let img = self
            .set_state(id, ImageState::Inspecting, None)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no OS image with id {id}")))?;
        if img.state != ImageState::Inspecting {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} cannot be inspected again now"
            )));
        }
        self.spawn_inspect(id);
        Ok(img)
    }

    /// Inspects image `id` in a spawned task.
    pub fn spawn_inspect(self: &Arc<Self>, id: u64) {
        let s = self.clone();
        tokio::spawn(async move {
            if let Err(e) = s.inspect(id).await {
                tracing::warn!(id, error = %e, "OS image inspection could not record its result");
            }
        });
    }

    /// Drops the cached tree of image `id`.
    fn forget_index(&self, id: u64) {
        if let Ok(mut m) = self.indexes.lock() {
            m.remove(&id);
        }
    }

    /// The tree of image `id` (read once, then cached; at most [`BROWSE_CACHE`] trees of
    /// images that are not mounted are kept).
    ///
    /// # Errors
    /// 404; 409 while the image is not readable yet (uploading, inspecting, failed); the
    /// image cannot be read (500 with the reason).
    pub async fn index(&self, id: u64) -> Result<(OsImage, Arc<IsoIndex>), ServiceError> {
        let img = self.get(id)?;
        if !matches!(
            img.state,
            ImageState::Ready | ImageState::Mounted | ImageState::Extracting
        ) {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} is {}; its files can be read once it is ready",
                img.state.as_str()
            )));
        }
        if let Some(i) = self.indexes.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Ok((img, i));
        }
        let path = self.files.root()?.join(&img.path);
        let limits = self.limits;
        let idx = tokio::task::spawn_blocking(move || index_image(&path, limits))
            .await
            .unwrap_or_else(|e| Err(format!("the reading task failed: {e}")))
            .map(Arc::new)
            .map_err(|reason| ServiceError::io(format!("reading OS image {id}"), std::io::Error::other(reason)))?;
        if let Ok(mut m) = self.indexes.lock() {
            if m.len() >= BROWSE_CACHE + self.mounted_count() {
                let mounted: std::collections::HashSet<u64> = self
                    .list()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|i| i.state == ImageState::Mounted)
                    .map(|i| i.id)
                    .collect();
                m.retain(|k, _| mounted.contains(k));
            }
            m.insert(id, idx.clone());
        }
        Ok((img, idx))
    }

    fn mounted_count(&self) -> usize {
        self.list()
            .map(|l| l.iter().filter(|i| i.state == ImageState::Mounted).count())
            .unwrap_or(0)
    }

    /// The entries of directory `path` inside image `id`, directories first, then by name.
    ///
    /// # Errors
    /// As [`OsImageService::index`]; 404 when `path` is not a directory of the image.
    pub async fn browse(&self, id: u64, path: &str) -> Result<Vec<ImageEntry>, ServiceError> {
        let (_, idx) = self.index(id).await?;
        let mut out: Vec<ImageEntry> = idx
            .children(path)
            .ok_or_else(|| ServiceError::NotFound(format!("OS image {id} has no directory {path:?}")))?
            .into_iter()
            .map(|e| ImageEntry {
                name: e.path.rsplit('/').next().unwrap_or_default().to_string(),
                kind: if e.is_dir { "dir" } else { "file" },
                size: e.size,
                path: e.path,
            })
            .collect();
        out.sort_by(|a, b| b.kind.cmp(a.kind).then_with(|| a.name.cmp(&b.name)));
        Ok(out)
    }

    /// Moves `id` from `from` to `to` under the lock, or explains why not (409).
    async fn transition(&self, id: u64, to: ImageState, what: &str) -> Result<OsImage, ServiceError> {
        let img = self.get(id)?;
        if !img.state.can_become(to) {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} is {}; it cannot be {what} now{}",
                img.state.as_str(),
                if img.state == ImageState::Mounted {
                    " (unmount it first: POST /api/v1/os-images/{id}/unmount)"
                } else {
                    " (wait until it is ready)"
                }
            )));
        }
        let after = self
            .modify(id, |i| {
                if i.state.can_become(to) {
                    i.state = to;
                    match to {
                        ImageState::Mounted => i.mounted = true,
                        ImageState::Ready => i.mounted = false,
                        _ => {}
                    }
                }
            })
            .await?
            .ok_or_else(|| not_found(id))?;
        if after.state != to {
            return Err(ServiceError::Conflict(format!(
                "OS image {id} changed state meanwhile; try again"
            )));
        }
        Ok(after)
    }

    /// Mounts image `id`: its files are served from inside the ISO at
    /// `/boot/images/<id>/<path>` (Range requests included) without extracting it. Reads
    /// its tree first; publishes `os_image.mounted`.
    ///
    /// # Errors
    /// 404; 409 unless `ready`; the image cannot be read.
    pub async fn mount(&self, id: u64) -> Result<OsImage, ServiceError> {
        self.index(id).await?;
        let img = self.transition(id, ImageState::Mounted, "mounted").await?;
        self.events.publish(
            NewEvent::new(
                EventKind::OsImageMounted,
                format!("OS image {} mounted at /boot/{}/", img.name, img.tree_path()),
            )
            .resource("os_image", id),
        );
        Ok(img)
    }

    /// Unmounts image `id` (back to `ready`); publishes `os_image.unmounted`.
    ///
    /// # Errors
    /// 404; 409 unless mounted.
    pub async fn unmount(&self, id: u64) -> Result<OsImage, ServiceError> {
        match self.get(id)?.state {
            ImageState::Mounted => {}
            ImageState::Extracting => {
                return Err(ServiceError::Conflict(format!(
                    "OS image {id} is extracting; unmount it once the extraction ends"
                )))
            }
            _ => return Err(ServiceError::Conflict(format!("OS image {id} is not mounted"))),
        }
        let img = self.transition(id, ImageState::Ready, "unmounted").await?;
        self.events.publish(
            NewEvent::new(EventKind::OsImageUnmounted, format!("OS image {} unmounted", img.name))
                .resource("os_image", id),
        );
        Ok(img)
    }

    /// The file at `path` inside image `id` when that image is mounted; `Ok(None)` when
    /// it is not mounted (the caller serves the boot root's `images/<id>/...`, the
    /// extracted tree, instead).
    ///
    /// # Errors
    /// 404 for a path the mounted image does not hold (or a directory); 500 when the
    /// file's data is not one extent or the image cannot be read.
    pub async fn mounted_file(&self, id: u64, path: &str) -> Result<Option<MountedFile>, ServiceError> {
        match self.table.get(id)? {
            Some(i) if i.mounted && matches!(i.state, ImageState::Mounted | ImageState::Extracting) => {}
            _ => return Ok(None),
        }
        let (img, idx) = self.index(id).await?;
        let e = idx
            .get(path)
            .filter(|e| !e.is_dir)
            .ok_or_else(|| ServiceError::NotFound(format!("OS image {id} holds no file {path:?}")))?;
        let offset = e.offset.ok_or_else(|| {
            ServiceError::io(
                format!("serving {path} from OS image {id}"),
                std::io::Error::other("the file is not stored as one extent; extract the image instead"),
            )
        })?;
        Ok(Some(MountedFile {
            iso: self.files.root()?.join(&img.path),
            offset,
            len: e.size,
            path: e.path,
        }))
    }

    /// Extracts image `id` into `<boot root>/images/<id>/` in the background: it becomes
    /// `extracting` now (answered at once), its files are written into a temporary
    /// directory (`images/.extract-<id>`, progress events `os_image.extract.progress`
    /// every [`PROGRESS_STEP_PERCENT`] %), which then replaces any earlier tree; then back
    /// to `ready` (or `mounted`) with `extracted` set (`os_image.extracted`), or with
    /// `extract_error` (`os_image.extract.failed`). The free space is checked first.
    ///
    /// # Errors
    /// 404; 409 unless `ready` or `mounted`; 507 when the files do not fit; the image
    /// cannot be read.
    pub async fn extract(self: &Arc<Self>, id: u64) -> Result<OsImage, ServiceError> {
        let (_, idx) = self.index(id).await?;
        let (files, bytes) = idx.file_totals();
        let root = self.files.root()?;
        let free = self.files.free_bytes(&root);
        if let Some(free) = free.filter(|&f| f < bytes) {
            return Err(ServiceError::NoSpace(format!(
                "extracting OS image {id} needs {bytes} bytes ({files} files); the boot root's volume has {free} free"
            )));
        }
        let img = self.transition(id, ImageState::Extracting, "extracted").await?;
        self.modify(id, |i| i.extract_error = None).await?;
        let s = self.clone();
        tokio::spawn(async move {
            if let Err(e) = s.run_extract(id, idx, root).await {
                tracing::warn!(id, error = %e, "OS image extraction could not record its result");
            }
        });
        Ok(img)
    }

    async fn run_extract(&self, id: u64, idx: Arc<IsoIndex>, root: std::path::PathBuf) -> Result<(), ServiceError> {
        let img = self.get(id)?;
        let iso = root.join(&img.path);
        let tmp = root.join(IMAGES_DIR).join(format!("{EXTRACT_PREFIX}{id}"));
        let dest = root.join(img.tree_path());
        let events = self.events.clone();
        let name = img.name.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _ = std::fs::remove_dir_all(&tmp);
            let mut next = 0u64;
            let r = extract_tree(&iso, &idx, &tmp, |done, total| {
                let pct = (done * 100).checked_div(total).unwrap_or(100);
                if pct >= next {
                    next = pct + PROGRESS_STEP_PERCENT;
                    events.publish(
                        NewEvent::new(
                            EventKind::OsImageExtractProgress,
                            format!("OS image {name}: {pct} % extracted"),
                        )
                        .resource("os_image", id)
                        .with(&ImageProgress {
                            bytes: done,
                            total: Some(total),
                            percent: Some(pct),
                        }),
                    );
                }
            })
            .and_then(|r| {
                match std::fs::remove_dir_all(&dest) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("removing the earlier tree: {e}")),
                }
                std::fs::rename(&tmp, &dest).map_err(|e| format!("moving the tree into place: {e}"))?;
                Ok(r)
            });
            if r.is_err() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            r
        })
        .await
        .unwrap_or_else(|e| Err(format!("the extraction task failed: {e}")));
        let tree = img.tree_path();
        let after = self
            .modify(id, |i| {
                if i.state == ImageState::Extracting {
                    i.state = if i.mounted {
                        ImageState::Mounted
                    } else {
                        ImageState::Ready
                    };
                }
                match &result {
                    Ok((files, bytes)) => {
                        i.extracted = Some(Extraction {
                            path: tree.clone(),
                            files: *files,
                            bytes: *bytes,
                            at: OffsetDateTime::now_utc(),
                        });
                        i.extract_error = None;
                    }
                    Err(reason) => i.extract_error = Some(reason.clone()),
                }
            })
            .await?;
        let Some(after) = after else { return Ok(()) };
        let e = match &result {
            Ok((files, bytes)) => NewEvent::new(
                EventKind::OsImageExtracted,
                format!(
                    "OS image {} extracted to {tree}/ ({files} files, {bytes} bytes)",
                    after.name
                ),
            ),
            Err(reason) => NewEvent::new(
                EventKind::OsImageExtractFailed,
                format!("OS image {} could not be extracted: {reason}", after.name),
            ),
        };
        self.events
            .publish(e.resource("os_image", id).with(&extraction_data(&after)));
        Ok(())
    }

    /// Start-up: an image left `uploading` by a stop becomes `failed` (and the temporary
    /// upload files under `images/` are removed); one left `uploaded` or `inspecting` is
    /// inspected again; one left `extracting` is `ready` again with an `extract_error`
    /// (its partial tree removed); a `mounted` one stays mounted (its tree is read again
    /// at the first request). Returns how many images were touched.
    ///
    /// # Errors
    /// The store.
    pub async fn recover(self: &Arc<Self>) -> Result<usize, ServiceError> {
        let mut touched = 0;
        for img in self.list()? {
            match img.state {
                ImageState::Uploading => {
                    self.set_state(
                        img.id,
                        ImageState::Failed,
                        Some("the server stopped during the upload; delete the image and upload it again".into()),
                    )
                    .await?;
                    touched += 1;
                }
                ImageState::Uploaded | ImageState::Inspecting => {
                    // Back to a state inspection starts from.
                    self.modify(img.id, |i| i.state = ImageState::Uploaded).await?;
                    self.spawn_inspect(img.id);
                    touched += 1;
                }
                ImageState::Extracting => {
                    // The partial tree is removed below; an earlier complete one is kept.
                    self.modify(img.id, |i| {
                        i.state = if i.mounted {
                            ImageState::Mounted
                        } else {
                            ImageState::Ready
                        };
                        i.extract_error = Some("the server stopped during the extraction; extract again".into());
                    })
                    .await?;
                    touched += 1;
                }
                ImageState::Ready | ImageState::Failed | ImageState::Mounted => {}
            }
        }
        if let Ok(root) = self.files.root() {
            if let Ok(rd) = std::fs::read_dir(root.join(IMAGES_DIR)) {
                for e in rd.flatten() {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    if n.starts_with(".upload-") && n.ends_with(".part") {
                        let _ = std::fs::remove_file(e.path());
                    } else if n.starts_with(EXTRACT_PREFIX) {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        Ok(touched)
    }
}

/// An image upload in progress ([`OsImageService::begin_upload`]). Dropped before
/// [`ImageUpload::finish`] (cut off, refused), the temporary file is removed and the
/// image becomes `failed`.
pub struct ImageUpload {
    service: Arc<OsImageService>,
    image: OsImage,
    upload: Option<Upload>,
    total: Option<u64>,
    next_progress: u64,
}

impl ImageUpload {
    /// The image being uploaded (state `uploading`).
    pub fn image(&self) -> &OsImage {
        &self.image
    }

    /// Appends a chunk; publishes `os_image.upload.progress` at every step.
    ///
    /// # Errors
    /// The file service's limits (413, 507), I/O.
    pub async fn write(&mut self, chunk: bytes::Bytes) -> Result<(), ServiceError> {
        let up = self
            .upload
            .as_mut()
            .ok_or_else(|| ServiceError::Invalid("the upload is already finished".into()))?;
        up.write(chunk).await?;
        let written = up.written();
        if written >= self.next_progress {
            let percent = self.total.map(|t| (written.saturating_mul(100) / t).min(100));
            self.next_progress = match self.total {
                Some(t) => {
                    let step = (t * PROGRESS_STEP_PERCENT / 100).max(1);
                    (written / step + 1) * step
                }
                None => written + PROGRESS_STEP_BYTES,
            };
            self.service.events.publish(
                NewEvent::new(
                    EventKind::OsImageUploadProgress,
                    format!(
                        "OS image {} upload: {written} bytes{}",
                        self.image.name,
                        percent.map(|p| format!(" ({p} %)")).unwrap_or_default()
                    ),
                )
                .resource("os_image", self.image.id)
                .with(&ImageProgress {
                    bytes: written,
                    total: self.total,
                    percent,
                }),
            );
        }
        Ok(())
    }

    /// Completes the upload: the file moves into place, the image becomes `uploaded` with
    /// its size and sha256, `os_image.uploaded` is published and the inspection starts in
    /// the background.
    ///
    /// # Errors
    /// The store, I/O.
    pub async fn finish(mut self) -> Result<OsImage, ServiceError> {
        let up = self
            .upload
            .take()
            .ok_or_else(|| ServiceError::Invalid("the upload is already finished".into()))?;
        let done = up.finish().await?;
        let id = self.image.id;
        let s = self.service.clone();
        let img = s
            .modify(id, |i| {
                i.size = done.size;
                i.sha256 = Some(done.sha256.clone());
                if i.state.can_become(ImageState::Uploaded) {
                    i.state = ImageState::Uploaded;
                }
            })
            .await?
            .ok_or_else(|| not_found(id))?;
        s.events.publish(NewEvent::write(
            EventKind::OsImageUploaded,
            "os_image",
            id,
            "create",
            format!("OS image {} uploaded ({} bytes)", img.name, img.size),
            None::<&()>,
            Some(&img),
        ));
        s.spawn_inspect(id);
        Ok(img)
    }
}

impl Drop for ImageUpload {
    fn drop(&mut self) {
        let Some(up) = self.upload.take() else {
            return;
        };
        let written = up.written();
        drop(up);
        let s = self.service.clone();
        let id = self.image.id;
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let reason = format!("the upload was cut off or refused after {written} bytes; upload it again");
                let _ = s
                    .modify(id, |i| {
                        i.size = written;
                        if i.state.can_become(ImageState::Failed) {
                            i.state = ImageState::Failed;
                            i.reason = Some(reason);
                        }
                    })
                    .await;
            });
        }
    }
}

/// The `data` of `os_image.ready` and `os_image.failed` for image `i`.
fn inspected_data(i: &OsImage) -> OsImageInspected {
    OsImageInspected {
        state: wire_name(&i.state),
        reason: i.reason.clone(),
        detection: i.detection.as_ref().map(|d| ImageDetection {
            family: wire_name(&d.family),
            product: d.product.clone(),
            version: d.version.clone(),
            arch: d.arch.clone(),
            boot_method: wire_name(&d.boot_method),
            kernel: d.kernel.clone(),
            initrds: d.initrds.clone(),
            cmdline: d.cmdline.clone(),
            generic: d.generic,
            candidates: d
                .candidates
                .iter()
                .map(|c| ImageKernel {
                    kernel: c.kernel.clone(),
                    initrds: c.initrds.clone(),
                })
                .collect(),
            notes: d.notes.clone(),
        }),
    }
}

/// The `data` of `os_image.extracted` and `os_image.extract.failed` for image `i`.
fn extraction_data(i: &OsImage) -> OsImageExtraction {
    OsImageExtraction {
        extracted: i.extracted.as_ref().map(|x| ExtractedTree {
            path: x.path.clone(),
            files: x.files as u64,
            bytes: x.bytes,
            at: x.at,
        }),
        extract_error: i.extract_error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::media::FilesConfig;

    fn service() -> (tempfile::TempDir, Store, Arc<OsImageService>) {
        let tmp = tempfile::tempdir().unwrap();
        let cell = bootlane_boot::boot::netboot::NetbootSettings::with_root(&tmp.path().join("boot")).fixed();
        let events = EventBus::in_memory();
        let files = FileService::with_free_space(
            cell,
            FilesConfig::default(),
            events.clone(),
            Arc::new(|_: &Path| Ok(u64::MAX)),
        );
        let store = Store::temporary();
        let s = OsImageService::open(&store, files, events).unwrap();
        (tmp, store, s)
    }

    async fn wait_settled(s: &OsImageService, id: u64) -> OsImage {
        for _ in 0..500 {
            let i = s.get(id).unwrap();
            if !i.state.running() {
                return i;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("image {id} still running");
    }

    #[test]
    fn state_machine() {
        use ImageState::*;
        let all = [Uploading, Uploaded, Inspecting, Ready, Failed];
        let allowed: Vec<_> = all
            .iter()
            .flat_map(|&a| all.iter().map(move |&b| (a, b)))
            .filter(|(a, b)| a.can_become(*b))
            .collect();
        assert_eq!(
            allowed,
            [
                (Uploading, Uploaded),
                (Uploading, Failed),
                (Uploaded, Inspecting),
                (Uploaded, Failed),
                (Inspecting, Ready),
                (Inspecting, Failed),
                (Ready, Inspecting),
                (Failed, Inspecting),
            ]
        );
        assert!(!Ready.running() && !Failed.running() && Uploading.running() && Inspecting.running());
    }

    #[tokio::test]
    async fn a_finished_upload_of_a_non_iso_fails_inspection_with_a_reason() {
        let (_t, _st, s) = service();
        let mut up = s.begin_upload("junk.iso", None, Some(8)).await.unwrap();
        assert_eq!(up.image().state, ImageState::Uploading);
        up.write(bytes::Bytes::from_static(b"not an i")).await.unwrap();
        let img = up.finish().await.unwrap();
        assert_eq!(img.state, ImageState::Uploaded);
        assert_eq!(
            img.sha256.as_deref(),
            Some(hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"not an i")).as_str())
        );
        let img = wait_settled(&s, img.id).await;
        assert_eq!(img.state, ImageState::Failed);
        assert!(img.reason.unwrap().contains("not an ISO 9660 or UDF image"));
    }

    #[tokio::test]
    async fn a_cut_off_upload_fails_and_leaves_no_file() {
        let (_t, _st, s) = service();
        let mut up = s.begin_upload("x.iso", None, None).await.unwrap();
        let id = up.image().id;
        up.write(bytes::Bytes::from_static(b"partial")).await.unwrap();
        drop(up);
        let img = wait_settled(&s, id).await;
        assert_eq!((img.state, img.size), (ImageState::Failed, 7));
        let dir: PathBuf = s.files.root().unwrap().join(IMAGES_DIR);
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
        // Deleting a failed image works, then it is gone.
        s.delete(id).await.unwrap();
        assert!(matches!(s.get(id), Err(ServiceError::NotFound(_))));
    }

    #[tokio::test]
    async fn recovery_leaves_nothing_running() {
        let (_t, st, s) = service();
        let up = s.begin_upload("a.iso", None, None).await.unwrap();
        let uploading = up.image().id;
        std::mem::forget(up); // a crash: neither finished nor dropped
        let root = s.files.root().unwrap();
        std::fs::write(root.join("images/9.iso"), b"junk").unwrap();
        let now = OffsetDateTime::now_utc();
        let mut inspecting = s.get(uploading).unwrap();
        inspecting.id = 9;
        inspecting.path = "images/9.iso".into();
        inspecting.state = ImageState::Inspecting;
        inspecting.updated_at = now;
        st.table::<OsImage>().unwrap().put(&inspecting).await.unwrap();
        // A new service over the same store (the restart).
        let s2 = OsImageService::open(&st, s.files.clone(), EventBus::in_memory()).unwrap();
        assert_eq!(s2.recover().await.unwrap(), 2);
        let a = wait_settled(&s2, uploading).await;
        assert_eq!(a.state, ImageState::Failed);
        assert!(a.reason.unwrap().contains("server stopped"));
        let b = wait_settled(&s2, 9).await;
        assert_eq!(b.state, ImageState::Failed, "re-inspected: junk is not an ISO");
        let left: Vec<_> = std::fs::read_dir(root.join("images"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["9.iso"], "the temporary upload file is removed");
    }

    #[tokio::test]
    async fn update_validates_and_keeps_absent_fields() {
        let (_t, _st, s) = service();
        let mut up = s.begin_upload("a.iso", None, None).await.unwrap();
        up.write(bytes::Bytes::from_static(b"x")).await.unwrap();
        let id = up.finish().await.unwrap().id;
        let i = s
            .update(
                id,
                ImagePatch {
                    name: Some("Debian".into()),
                    description: Some("netinst".into()),
                },
            )
            .await
            .unwrap();
        assert_eq!((i.name.as_str(), i.description.as_str()), ("Debian", "netinst"));
        let i = s
            .update(
                id,
                ImagePatch {
                    name: None,
                    description: Some(String::new()),
                },
            )
            .await
            .unwrap();
        assert_eq!((i.name.as_str(), i.description.as_str()), ("Debian", ""));
        assert!(matches!(
            s.update(id, ImagePatch { name: Some(" ".into()), description: None }).await,
            Err(ServiceError::Invalid(m)) if m.contains("'name'")
        ));
        assert!(matches!(
            s.update(999, ImagePatch::default()).await,
            Err(ServiceError::NotFound(_))
        ));
    }

    #[test]
    fn event_data_is_what_the_service_wrote_before_it_had_a_type() {
        use crate::media::detect::{Family, KernelCandidate};
        let now = OffsetDateTime::now_utc();
        let mut i = OsImage {
            id: 3,
            name: "x.iso".into(),
            description: String::new(),
            file_name: "x.iso".into(),
            path: "images/3.iso".into(),
            size: 10,
            sha256: None,
            state: ImageState::Failed,
            reason: Some("not an ISO".into()),
            trees: Vec::new(),
            file_count: 0,
            detection: None,
            extracted: None,
            extract_error: Some("no space".into()),
            mounted: false,
            created_at: now,
            updated_at: now,
        };
        let old_inspected =
            |i: &OsImage| serde_json::json!({"state": i.state, "reason": i.reason, "detection": i.detection});
        let old_extraction =
            |i: &OsImage| serde_json::json!({"extracted": i.extracted, "extract_error": i.extract_error});
        assert_eq!(serde_json::to_value(inspected_data(&i)).unwrap(), old_inspected(&i));
        assert_eq!(serde_json::to_value(extraction_data(&i)).unwrap(), old_extraction(&i));
        for (family, boot_method) in [
            (Family::Unknown, BootMethod::Linux),
            (Family::Windows, BootMethod::Wimboot),
        ] {
            i.state = ImageState::Ready;
            i.reason = None;
            i.detection = Some(Detection {
                family,
                product: Some("P".into()),
                version: None,
                arch: Some("x86_64".into()),
                boot_method,
                kernel: None,
                initrds: vec!["a".into(), "b".into()],
                cmdline: Some("quiet".into()),
                generic: true,
                candidates: vec![KernelCandidate {
                    kernel: "boot/vmlinuz".into(),
                    initrds: vec!["boot/initrd".into()],
                }],
                notes: vec!["check the kernel".into()],
            });
            i.extracted = Some(Extraction {
                path: "images/3".into(),
                files: 812,
                bytes: 1 << 30,
                at: now,
            });
            i.extract_error = None;
            assert_eq!(serde_json::to_value(inspected_data(&i)).unwrap(), old_inspected(&i));
            assert_eq!(serde_json::to_value(extraction_data(&i)).unwrap(), old_extraction(&i));
        }
    }
}
