//! The update service: asks the configured update source ([`UpdateService::check`]),
//! downloads one artifact at a time in the background ([`UpdateService::download`]) and
//! lists what is stored ([`UpdateService::stored`]).
//!
//! A download streams into a temporary file under `<data_dir>/updates/` while its SHA-256
//! is computed, publishing `update.download.progress` every
//! [`PROGRESS_STEP`] percent. Only when size, SHA-256 and signature all match is the file
//! moved, with a `manifest.json` ([`StoredUpdate`]), into a staging directory renamed to
//! `<data_dir>/updates/<version>/` in one step; on any failure (wrong SHA-256 or signature,
//! too large, a cut-off transfer, shutdown) the temporary file is removed and
//! `update.download.failed` names why. The running binary is never touched. State: the
//! current or last download job, in memory.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::{
    manifest::{self, Artifact, Checked, Release},
    UpdatesConfig,
};
use bootlane_core::{
    events::{
        EventBus, EventKind, NewEvent, UpdateDownloadCompleted, UpdateDownloadFailed, UpdateDownloadProgress,
        UpdateDownloadStarted,
    },
    net::outbound::{self, OutboundConfig},
    service_error::ServiceError,
};

/// Progress events are published every this many percent.
pub const PROGRESS_STEP: u8 = 5;
/// The artifact's file name inside `<data_dir>/updates/<version>/`.
pub const ARTIFACT_FILE: &str = "bootlane";
/// The stored manifest's file name inside `<data_dir>/updates/<version>/`.
pub const MANIFEST_FILE: &str = "manifest.json";

/// What the answer says when no update source is configured.
pub const NOT_CONFIGURED: &str =
    "no update source is configured; Bootlane never contacts the internet on its own (set [updates] manifest_url and public_key to enable checks)";

/// The artifact of a release for this platform, as answers show it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct ArtifactInfo {
    /// The platform key (`[updates] platform`).
    pub platform: String,
    /// Resolved download URL.
    pub url: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 (lowercase hex).
    pub sha256: String,
}

/// `POST /version/check` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateCheck {
    /// The running version.
    pub current: String,
    /// Whether the source lists a version newer than the running one (semver order).
    pub update_available: bool,
    /// One sentence: what was found, or why no check was made.
    pub detail: String,
    /// The manifest URL asked (`null` when none is configured).
    pub source: Option<String>,
    /// The newest version the source lists.
    pub newest: Option<String>,
    /// Its release date, as the publisher wrote it.
    pub released: Option<String>,
    /// Its release notes.
    pub notes: Option<String>,
    /// Its artifact for this platform (`null` when it has none).
    pub artifact: Option<ArtifactInfo>,
}

/// State of a download job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Transferring and hashing.
    Running,
    /// Verified and stored.
    Completed,
    /// Refused or failed; nothing was kept (`error` says why).
    Failed,
}

/// A download job (`POST /version/download`, `GET /version/download`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DownloadJob {
    /// Job number (counts from 1 since the server started).
    pub id: u64,
    /// Version downloaded.
    pub version: String,
    /// Artifact being downloaded.
    pub artifact: ArtifactInfo,
    /// State.
    pub state: JobState,
    /// Bytes received so far.
    pub received: u64,
    /// Percent received (0-100).
    pub percent: u8,
    /// Why it failed.
    pub error: Option<String>,
    /// When it started.
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// When it ended.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    /// What is stored, once completed.
    pub stored: Option<StoredUpdate>,
}

/// `<data_dir>/updates/<version>/manifest.json`: what was downloaded, from where, and the
/// values `bootlane update install` checks again before installing.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct StoredUpdate {
    /// Version.
    pub version: String,
    /// Platform key.
    pub platform: String,
    /// File name of the artifact in the same directory (`bootlane`).
    pub file: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 (lowercase hex).
    pub sha256: String,
    /// The minisign signature file text.
    pub signature: String,
    /// When it was verified and stored.
    #[serde(with = "time::serde::rfc3339")]
    pub downloaded_at: OffsetDateTime,
    /// The manifest URL it was listed in.
    pub source: String,
    /// The artifact URL it was fetched from.
    pub artifact_url: String,
    /// Release notes of the version.
    #[serde(default)]
    pub notes: String,
}

/// The update service. Cheap to share as `Arc<UpdateService>`.
pub struct UpdateService {
    config: UpdatesConfig,
    key: Option<minisign_verify::PublicKey>,
    dir: PathBuf,
    events: Arc<EventBus>,
    client: reqwest::Client,
    outbound: OutboundConfig,
    current: semver::Version,
    job: Mutex<Option<DownloadJob>>,
    token: CancellationToken,
}

/// A reqwest error and its causes, without the URL (the caller names it).
fn why(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s
            .replace(&format!(" for url ({u})"), "")
            .replace(&format!(" ({u})"), "");
    }
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

impl UpdateService {
    /// The service for `config` (validated), storing under `<data_dir>/updates/`; the
    /// running version is this build's. Removes what an interrupted download left.
    /// Downloads stop when `token` is cancelled. The manifest and the artifacts are fetched
    /// under the `[outbound]` rules of `outbound`.
    ///
    /// # Errors
    /// The HTTP client cannot be built (no TLS roots).
    pub fn open(
        config: &UpdatesConfig,
        outbound: &OutboundConfig,
        data_dir: &Path,
        events: Arc<EventBus>,
        token: CancellationToken,
    ) -> anyhow::Result<Arc<Self>> {
        Self::with_version(config, outbound, data_dir, events, token, env!("CARGO_PKG_VERSION"))
    }

    /// [`UpdateService::open`] with another running version (tests).
    ///
    /// # Errors
    /// As [`UpdateService::open`], or `current` is not a semantic version.
    pub fn with_version(
        config: &UpdatesConfig,
        outbound: &OutboundConfig,
        data_dir: &Path,
        events: Arc<EventBus>,
        token: CancellationToken,
        current: &str,
    ) -> anyhow::Result<Arc<Self>> {
        let t = Duration::from_secs(config.timeout_secs);
        let client = outbound::client_builder(outbound)
            .connect_timeout(t)
            .read_timeout(t)
            .build()?;
        let key = if config.public_key.trim().is_empty() {
            None
        } else {
            Some(manifest::public_key(&config.public_key).map_err(anyhow::Error::msg)?)
        };
        let dir = data_dir.join("updates");
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(".download-") {
                    let _ = std::fs::remove_file(e.path());
                } else if name.starts_with(".stage-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        Ok(Arc::new(Self {
            config: config.clone(),
            key,
            dir,
            events,
            client,
            outbound: *outbound,
            current: semver::Version::parse(current)?,
            job: Mutex::new(None),
            token,
        }))
    }

    /// `<data_dir>/updates`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn source(&self) -> Result<url::Url, ServiceError> {
        if !self.config.configured() {
            return Err(ServiceError::Invalid(NOT_CONFIGURED.into()));
        }
        url::Url::parse(self.config.manifest_url.trim())
            .map_err(|e| ServiceError::Invalid(format!("[updates] manifest_url: {e}")))
    }

    /// Fetches and checks the manifest (whole request bounded by `timeout_secs`, body by
    /// [`manifest::MAX_MANIFEST_BYTES`]).
    ///
    /// # Errors
    /// [`ServiceError::Upstream`] naming the URL and the reason (unreachable, timeout,
    /// HTTP status, too large, invalid manifest).
    async fn fetch_manifest(&self, url: &url::Url) -> Result<Checked, ServiceError> {
        let fail = |reason: String| ServiceError::Upstream(format!("update source {url}: {reason}"));
        self.outbound
            .check_url(url)
            .map_err(|e| ServiceError::Upstream(e.to_string()))?;
        let mut resp = self
            .client
            .get(url.clone())
            .timeout(Duration::from_secs(self.config.timeout_secs))
            .send()
            .await
            .map_err(|e| fail(why(&e)))?;
        if !resp.status().is_success() {
            return Err(fail(format!("answered HTTP {}", resp.status())));
        }
        let mut body = Vec::new();
        while let Some(c) = resp.chunk().await.map_err(|e| fail(why(&e)))? {
            if body.len() + c.len() > manifest::MAX_MANIFEST_BYTES {
                return Err(fail(format!(
                    "the manifest is larger than {} bytes",
                    manifest::MAX_MANIFEST_BYTES
                )));
            }
            body.extend_from_slice(&c);
        }
        manifest::parse(&body, resp.url()).map_err(fail)
    }

    fn artifact_info(&self, r: &Release) -> Option<ArtifactInfo> {
        r.artifacts.get(&self.config.platform).map(|a| ArtifactInfo {
            platform: self.config.platform.clone(),
            url: a.url.clone(),
            size: a.size,
            sha256: a.sha256.clone(),
        })
    }

    /// Asks the update source: the running version, the newest listed, whether it is
    /// newer, its notes and artifact. Without a source: says so, contacting nothing.
    ///
    /// # Errors
    /// [`ServiceError::Upstream`] when the source fails (the URL and reason named).
    pub async fn check(&self) -> Result<UpdateCheck, ServiceError> {
        let current = self.current.to_string();
        if !self.config.configured() {
            return Ok(UpdateCheck {
                current,
                update_available: false,
                detail: NOT_CONFIGURED.into(),
                source: None,
                newest: None,
                released: None,
                notes: None,
                artifact: None,
            });
        }
        let url = self.source()?;
        let m = self.fetch_manifest(&url).await?;
        let Some((newest, r)) = m.newest() else {
            return Ok(UpdateCheck {
                current,
                update_available: false,
                detail: format!("the update source {url} lists no version"),
                source: Some(url.to_string()),
                newest: None,
                released: None,
                notes: None,
                artifact: None,
            });
        };
        let newer = newest > &self.current;
        let artifact = self.artifact_info(r);
        let detail = match (newer, &artifact) {
            (false, _) => format!("Bootlane {current} is up to date (the newest listed is {newest})"),
            (true, Some(_)) => format!("Bootlane {newest} is available (running {current})"),
            (true, None) => format!(
                "Bootlane {newest} is available (running {current}) but has no artifact for platform {}",
                self.config.platform
            ),
        };
        Ok(UpdateCheck {
            current,
            update_available: newer,
            detail,
            source: Some(url.to_string()),
            newest: Some(newest.to_string()),
            released: r.released.clone(),
            notes: Some(r.notes.clone()),
            artifact,
        })
    }

    /// The current or last download job.
    pub fn job(&self) -> Option<DownloadJob> {
        self.job.lock().expect("updates job lock").clone()
    }

    /// Starts downloading `version` (default: the newest listed) for this platform in the
    /// background and answers the job at once. A version already stored with the same
    /// SHA-256 answers a completed job without downloading.
    ///
    /// # Errors
    /// 400 without a source or with a bad `version`; 409 while another download runs; 502
    /// when the source fails; 404 when the version is not listed or has no artifact for
    /// this platform.
    pub async fn download(self: &Arc<Self>, version: Option<&str>) -> Result<DownloadJob, ServiceError> {
        let url = self.source()?;
        let wanted = version
            .map(|v| {
                semver::Version::parse(v.trim()).map_err(|e| {
                    ServiceError::Invalid(format!("'version' {v:?} is not a semantic version such as 1.4.0: {e}"))
                })
            })
            .transpose()?;
        if self.job().is_some_and(|j| j.state == JobState::Running) {
            return Err(ServiceError::Conflict(
                "a download is already running; follow it with GET /api/v1/version/download".into(),
            ));
        }
        let m = self.fetch_manifest(&url).await?;
        let (v, r) = match &wanted {
            Some(w) => m.find(w).ok_or_else(|| {
                let listed: Vec<String> = m.releases.iter().map(|(v, _)| v.to_string()).collect();
                ServiceError::NotFound(format!(
                    "version {w} is not in the manifest at {url}; it lists: {}",
                    if listed.is_empty() {
                        "nothing".into()
                    } else {
                        listed.join(", ")
                    }
                ))
            })?,
            None => m
                .newest()
                .ok_or_else(|| ServiceError::NotFound(format!("the manifest at {url} lists no version")))?,
        };
        let Some(info) = self.artifact_info(r) else {
            return Err(ServiceError::NotFound(format!(
                "version {v} has no artifact for platform {} in the manifest at {url}",
                self.config.platform
            )));
        };
        let artifact = r.artifacts[&self.config.platform].clone();
        let (v, notes) = (v.to_string(), r.notes.clone());
        let now = OffsetDateTime::now_utc();
        let mut job = DownloadJob {
            id: self.job().map_or(1, |j| j.id + 1),
            version: v.clone(),
            artifact: info,
            state: JobState::Running,
            received: 0,
            percent: 0,
            error: None,
            started_at: now,
            finished_at: None,
            stored: None,
        };
        if let Some(s) = self.stored_version(&v).filter(|s| s.sha256 == artifact.sha256) {
            job.state = JobState::Completed;
            job.received = s.size;
            job.percent = 100;
            job.finished_at = Some(now);
            job.stored = Some(s);
            *self.job.lock().expect("updates job lock") = Some(job.clone());
            return Ok(job);
        }
        {
            let mut g = self.job.lock().expect("updates job lock");
            if g.as_ref().is_some_and(|j| j.state == JobState::Running) {
                return Err(ServiceError::Conflict("a download is already running".into()));
            }
            *g = Some(job.clone());
        }
        self.events.publish(
            NewEvent::new(
                EventKind::UpdateDownloadStarted,
                format!("downloading Bootlane {v} from {}", artifact.url),
            )
            .resource("update", &v)
            .with(&UpdateDownloadStarted {
                version: v.clone(),
                url: artifact.url.clone(),
                size: artifact.size,
            }),
        );
        let this = self.clone();
        let source = url.to_string();
        tokio::spawn(async move {
            let result = this.fetch_artifact(&v, &artifact, &source, &notes).await;
            this.finish(&v, &artifact, result);
        });
        Ok(job)
    }

    fn update_job(&self, f: impl FnOnce(&mut DownloadJob)) {
        if let Some(j) = self.job.lock().expect("updates job lock").as_mut() {
            f(j);
        }
    }

    fn finish(&self, v: &str, a: &Artifact, result: Result<StoredUpdate, String>) {
        let now = Some(OffsetDateTime::now_utc());
        match result {
            Ok(s) => {
                // The event first: whoever sees the job end finds its event.
                self.events.publish(
                    NewEvent::new(
                        EventKind::UpdateDownloadCompleted,
                        format!(
                            "Bootlane {v} downloaded and verified into {}",
                            self.dir.join(v).display()
                        ),
                    )
                    .resource("update", v)
                    .with(&UpdateDownloadCompleted {
                        version: v.to_string(),
                        size: s.size,
                        sha256: s.sha256.clone(),
                        path: self.dir.join(v).join(ARTIFACT_FILE),
                    }),
                );
                self.update_job(|j| {
                    j.state = JobState::Completed;
                    j.percent = 100;
                    j.received = s.size;
                    j.finished_at = now;
                    j.stored = Some(s.clone());
                });
            }
            Err(why) => {
                tracing::warn!(version = v, "update download failed: {why}");
                self.events.publish(
                    NewEvent::new(
                        EventKind::UpdateDownloadFailed,
                        format!("download of Bootlane {v} refused, nothing kept: {why}"),
                    )
                    .resource("update", v)
                    .with(&UpdateDownloadFailed {
                        version: v.to_string(),
                        url: a.url.clone(),
                        reason: why.clone(),
                    }),
                );
                self.update_job(|j| {
                    j.state = JobState::Failed;
                    j.finished_at = now;
                    j.error = Some(why.clone());
                });
            }
        }
    }

    /// Downloads, verifies and stores one artifact; on `Err` nothing is left behind.
    async fn fetch_artifact(&self, v: &str, a: &Artifact, source: &str, notes: &str) -> Result<StoredUpdate, String> {
        let max = self.config.max_size;
        if a.size > max {
            return Err(format!(
                "too large: the manifest announces {} bytes, [updates] max_size is {max}",
                a.size
            ));
        }
        let key = self.key.as_ref().ok_or("[updates] public_key is not set")?;
        let sig = manifest::signature(&a.signature).map_err(|e| e.to_string())?;
        let url = outbound::checked(&self.outbound, &a.url).map_err(|e| e.to_string())?;
        let file = manifest::file_name(&url)?;
        let label = manifest::Label {
            version: v,
            platform: &self.config.platform,
            file: &file,
        };
        let mut verifier = manifest::Verifier::new(key, &sig, label).map_err(|e| e.to_string())?;
        let io = |what: &str, e: std::io::Error| format!("{what} under {}: {e}", self.dir.display());
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| io("cannot create the updates directory", e))?;
        // Removed on drop: every early return below leaves nothing.
        let temp = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(&self.dir)
            .map_err(|e| io("cannot create a temporary file", e))?;
        let mut file = tokio::fs::File::from_std(
            temp.as_file()
                .try_clone()
                .map_err(|e| io("cannot open the temporary file", e))?,
        );
        let mut resp = tokio::select! {
            r = self.client.get(url).send() => r.map_err(|e| format!("{}: {}", a.url, why(&e)))?,
            () = self.token.cancelled() => return Err("the server is shutting down".into()),
        };
        if !resp.status().is_success() {
            return Err(format!("{} answered HTTP {}", a.url, resp.status()));
        }
        if let Some(n) = resp.content_length().filter(|n| *n > a.size) {
            return Err(format!(
                "too large: {} sends {n} bytes, the manifest announces {}",
                a.url, a.size
            ));
        }
        let mut last = 0u8;
        loop {
            let chunk = tokio::select! {
                c = resp.chunk() => c.map_err(|e| format!(
                    "transfer cut off after {} of {} bytes: {}", verifier.len(), a.size, why(&e)))?,
                () = self.token.cancelled() => return Err("the server is shutting down".into()),
            };
            let Some(chunk) = chunk else { break };
            if verifier.len() + chunk.len() as u64 > a.size {
                return Err(format!(
                    "too large: {} sent more than the {} bytes the manifest announces",
                    a.url, a.size
                ));
            }
            file.write_all(&chunk)
                .await
                .map_err(|e| io("cannot write the download", e))?;
            verifier.update(&chunk);
            let received = verifier.len();
            let percent = (received * 100 / a.size) as u8;
            self.update_job(|j| {
                j.received = received;
                j.percent = percent;
            });
            if percent >= last + PROGRESS_STEP && percent < 100 {
                last = percent - percent % PROGRESS_STEP;
                self.events.publish(
                    NewEvent::new(
                        EventKind::UpdateDownloadProgress,
                        format!("Bootlane {v}: {percent}% ({received} of {} bytes)", a.size),
                    )
                    .resource("update", v)
                    .with(&UpdateDownloadProgress {
                        version: v.to_string(),
                        received,
                        size: a.size,
                        percent,
                    }),
                );
            }
        }
        if verifier.len() < a.size {
            return Err(format!(
                "transfer cut off: received {} of {} bytes",
                verifier.len(),
                a.size
            ));
        }
        let sha256 = verifier.finish(a.size, &a.sha256).map_err(|e| e.to_string())?;
        file.flush().await.map_err(|e| io("cannot write the download", e))?;
        file.sync_all().await.map_err(|e| io("cannot write the download", e))?;
        drop(file);
        let stored = StoredUpdate {
            version: v.to_string(),
            platform: self.config.platform.clone(),
            file: ARTIFACT_FILE.into(),
            size: a.size,
            sha256,
            signature: a.signature.clone(),
            downloaded_at: OffsetDateTime::now_utc(),
            source: source.to_string(),
            artifact_url: a.url.clone(),
            notes: notes.to_string(),
        };
        let dir = self.dir.clone();
        let s = stored.clone();
        tokio::task::spawn_blocking(move || store_verified(&dir, temp, &s))
            .await
            .map_err(|e| format!("storing the download failed: {e}"))?
            .map_err(|e| format!("cannot store the download under {}: {e}", self.dir.display()))?;
        Ok(stored)
    }

    fn stored_version(&self, v: &str) -> Option<StoredUpdate> {
        let text = std::fs::read(self.dir.join(v).join(MANIFEST_FILE)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The verified downloads under `<data_dir>/updates/`, newest version first
    /// (directories without a readable `manifest.json` are skipped).
    pub fn stored(&self) -> Vec<StoredUpdate> {
        stored_in(&self.dir)
    }
}

/// The verified downloads under `dir` (`<data_dir>/updates`), newest version first.
pub fn stored_in(dir: &Path) -> Vec<StoredUpdate> {
    let mut out: Vec<(semver::Version, StoredUpdate)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let s: StoredUpdate = serde_json::from_slice(&std::fs::read(e.path().join(MANIFEST_FILE)).ok()?).ok()?;
            Some((semver::Version::parse(&s.version).ok()?, s))
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0));
    out.into_iter().map(|(_, s)| s).collect()
}

/// Moves the verified `temp` file and its manifest into a staging directory, then renames
/// that to `<dir>/<version>` (replacing an older copy), so the version directory appears
/// whole or not at all.
fn store_verified(dir: &Path, temp: tempfile::NamedTempFile, s: &StoredUpdate) -> std::io::Result<()> {
    let stage = tempfile::Builder::new().prefix(".stage-").tempdir_in(dir)?;
    temp.persist(stage.path().join(ARTIFACT_FILE)).map_err(|e| e.error)?;
    let json = serde_json::to_vec_pretty(s).map_err(std::io::Error::other)?;
    let mf = stage.path().join(MANIFEST_FILE);
    std::fs::write(&mf, json)?;
    std::fs::File::open(&mf)?.sync_all()?;
    let target = dir.join(&s.version);
    if target.exists() {
        std::fs::remove_dir_all(&target)?;
    }
    let stage = stage.keep();
    std::fs::rename(&stage, &target).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&stage);
    })?;
    std::fs::File::open(dir)?.sync_all()
}
