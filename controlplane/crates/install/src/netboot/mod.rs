//! The netboot catalog: a built-in list of netbootable distributions
//! ([`catalog.json`](self), embedded; versions, architectures, upstream kernel/initrd URLs
//! with a `{mirror}` placeholder, kernel arguments), the site's overlays on it (another
//! mirror, extra kernel arguments, extra initrds; stored in the `netboot_overlays` tree),
//! and the cache that serves catalog files to booting machines:
//! `GET /boot/netboot/<distro>/<version>/<arch>/<file>` answers the cached copy under
//! `<boot root>/netboot-cache/`, fetching it from upstream on a miss (bounded timeouts),
//! and evicts the least recently used files over `[netboot] cache_max_bytes`. Profiles
//! made from the catalog point at those paths, so the first boot fills the cache and later
//! boots never leave the lab. Without internet the catalog still lists, a miss answers 502
//! within the timeout, and `check-files` says what is missing.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

use bootlane_core::{
    events::{EventBus, EventKind, NetbootCacheFetchFailed, NetbootCacheFilled, NetbootOverlay, NewEvent},
    net::outbound::{self, OutboundConfig},
    service_error::{short_text, ServiceError},
    store::{Kv, Store},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// `[netboot]`: the catalog cache.
///
/// ```toml
/// [netboot]
/// cache_max_bytes = 8589934592   # LRU cap of <boot root>/netboot-cache (8 GiB)
/// fetch_timeout_secs = 600       # one upstream download, start to end
/// connect_timeout_secs = 5       # reaching upstream
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NetbootConfig {
    /// The netboot cache (`<boot root>/netboot-cache`): most bytes kept, least recently used
    /// files evicted first (at least 1 MiB; 8 GiB).
    pub cache_max_bytes: u64,
    /// Longest one upstream download may take (1-3600).
    pub fetch_timeout_secs: u64,
    /// Longest connecting to upstream may take (1-60).
    pub connect_timeout_secs: u64,
}

impl Default for NetbootConfig {
    fn default() -> Self {
        Self {
            cache_max_bytes: 8 << 30,
            fetch_timeout_secs: 600,
            connect_timeout_secs: 5,
        }
    }
}

impl NetbootConfig {
    /// Checks the bounds.
    ///
    /// # Errors
    /// The key out of bounds.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.cache_max_bytes < 1 << 20 {
            anyhow::bail!("[netboot] cache_max_bytes must be at least 1048576 (1 MiB)");
        }
        if !(1..=3600).contains(&self.fetch_timeout_secs) {
            anyhow::bail!("[netboot] fetch_timeout_secs must be 1-3600");
        }
        if !(1..=60).contains(&self.connect_timeout_secs) {
            anyhow::bail!("[netboot] connect_timeout_secs must be 1-60");
        }
        Ok(())
    }
}

/// A group of related distributions (`GET /netboot/groups`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Group {
    /// Id, e.g. `rhel`.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// The files of one version on one architecture, as the catalog writes them (URLs with a
/// `{mirror}` placeholder).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ArchFiles {
    /// Kernel URL.
    pub kernel: String,
    /// Initrd URLs, in order.
    pub initrds: Vec<String>,
    /// Kernel arguments.
    pub cmdline: String,
}

/// One version of a distribution.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Version {
    /// Version, e.g. `12`, `24.04`, `latest`.
    pub version: String,
    /// Code name, when it has one.
    #[serde(default)]
    pub codename: Option<String>,
    /// Files per architecture (`amd64`/`x86_64`, `arm64`/`aarch64`, as upstream names them).
    pub arches: BTreeMap<String, ArchFiles>,
}

/// A distribution of the catalog.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Distro {
    /// Id, e.g. `debian`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Group id.
    pub group: String,
    /// Default mirror (replaces `{mirror}`; an overlay may set another).
    pub mirror: String,
    /// Versions, newest first.
    pub versions: Vec<Version>,
}

#[derive(Debug, Deserialize)]
struct CatalogFile {
    groups: Vec<Group>,
    distros: Vec<Distro>,
}

fn builtin() -> &'static CatalogFile {
    static CATALOG: OnceLock<CatalogFile> = OnceLock::new();
    CATALOG.get_or_init(|| {
        // Checked by a unit test; the file is part of the binary.
        serde_json::from_str(include_str!("catalog.json")).expect("the built-in netboot catalog parses")
    })
}

/// The built-in groups.
pub fn groups() -> &'static [Group] {
    &builtin().groups
}

/// The built-in distributions.
pub fn distros() -> &'static [Distro] {
    &builtin().distros
}

/// A site's changes to one distribution (`/netboot/overlays/{distro}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    /// Mirror replacing the catalog's (`http://` or `https://`, no trailing `/` needed),
    /// e.g. a local apt/dnf mirror.
    #[serde(default)]
    pub mirror: Option<String>,
    /// Kernel arguments appended to the catalog's (e.g. `console=ttyS0 preseed/url=...`).
    #[serde(default)]
    pub extra_args: String,
    /// Initrd URLs appended after the catalog's (a driver or preseed overlay).
    #[serde(default)]
    pub extra_initrds: Vec<String>,
}

impl Overlay {
    /// The overlay as the `data` of `netboot.overlay.updated`.
    fn event_data(&self) -> NetbootOverlay {
        NetbootOverlay {
            mirror: self.mirror.clone(),
            extra_args: self.extra_args.clone(),
            extra_initrds: self.extra_initrds.clone(),
        }
    }

    /// Checks the overlay.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if let Some(m) = &self.mirror {
            http_url("mirror", m)?;
        }
        short_text("extra_args", &self.extra_args, 2048)?;
        if self.extra_initrds.len() > 8 {
            return Err(ServiceError::Invalid("'extra_initrds' holds at most 8 URLs".into()));
        }
        for u in &self.extra_initrds {
            http_url("extra_initrds", u)?;
        }
        Ok(())
    }
}

fn http_url(field: &str, u: &str) -> Result<()> {
    let ok = url::Url::parse(u)
        .ok()
        .filter(|p| matches!(p.scheme(), "http" | "https") && p.host_str().is_some())
        .is_some();
    if !ok || u.len() > 2048 || u.chars().any(char::is_whitespace) {
        return Err(ServiceError::Invalid(format!(
            "'{field}' must be an http:// or https:// URL without spaces (got {u:?})"
        )));
    }
    Ok(())
}

/// One file of a resolved entry: its name under `/boot/netboot/...` and where it comes from.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct NetbootFile {
    /// File name (last path segment of the upstream URL).
    pub name: String,
    /// Path under the boot root's HTTP route: `netboot/<distro>/<version>/<arch>/<name>`.
    pub path: String,
    /// Upstream URL (the overlay's mirror applied).
    pub upstream: String,
    /// True when the cache holds it.
    pub cached: bool,
    /// Its size when cached.
    pub bytes: Option<u64>,
}

/// A catalog entry with the overlay applied (`GET /netboot/catalog/{distro}` per
/// version/arch, `POST /profiles/from-netboot`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Resolved {
    /// Distribution id.
    pub distro: String,
    /// Version.
    pub version: String,
    /// Architecture.
    pub arch: String,
    /// The kernel.
    pub kernel: NetbootFile,
    /// The initrds, in order (the overlay's extra ones last).
    pub initrds: Vec<NetbootFile>,
    /// Kernel arguments (the overlay's appended).
    pub cmdline: String,
}

/// Counters of `GET /netboot/cache-stats`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CacheStats {
    /// Files in the cache.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The cap (`[netboot] cache_max_bytes`).
    pub max_bytes: u64,
    /// Requests answered from the cache since start.
    pub hits: u64,
    /// Requests that had to fetch from upstream since start.
    pub misses: u64,
    /// Files evicted (least recently used first) since start.
    pub evictions: u64,
    /// Upstream fetches that failed since start.
    pub fetch_errors: u64,
}

/// The catalog, its overlays and the cache.
pub struct NetbootService {
    config: NetbootConfig,
    overlays: Kv,
    root: bootlane_boot::boot::netboot::Netboot,
    events: Arc<EventBus>,
    client: reqwest::Client,
    outbound: OutboundConfig,
    fill: tokio::sync::Mutex<()>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    fetch_errors: AtomicU64,
}

/// Directory of the cache under the boot root.
pub const CACHE_DIR: &str = "netboot-cache";

impl NetbootService {
    /// Opens the overlays tree; the cache lives under the boot root in `root`. Upstream
    /// fetches follow the `[outbound]` rules of `outbound` (no loopback or link-local
    /// mirror unless allowed).
    ///
    /// # Errors
    /// Store errors; an HTTP client that cannot be built.
    pub fn open(
        config: &NetbootConfig,
        outbound: &OutboundConfig,
        store: &Store,
        root: bootlane_boot::boot::netboot::Netboot,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        let client = outbound::client_builder(outbound)
            .connect_timeout(Duration::from_secs(config.connect_timeout_secs))
            .timeout(Duration::from_secs(config.fetch_timeout_secs))
            .build()
            .map_err(|e| ServiceError::Invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(Arc::new(Self {
            config: config.clone(),
            overlays: store.kv("netboot_overlays")?,
            root,
            events,
            client,
            outbound: *outbound,
            fill: tokio::sync::Mutex::new(()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            fetch_errors: AtomicU64::new(0),
        }))
    }

    fn cache_dir(&self) -> PathBuf {
        self.root.borrow().root().join(CACHE_DIR)
    }

    /// The distribution `id`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] naming the known ids.
    pub fn distro(&self, id: &str) -> Result<&'static Distro> {
        distros().iter().find(|d| d.id == id).ok_or_else(|| {
            let ids: Vec<&str> = distros().iter().map(|d| d.id.as_str()).collect();
            ServiceError::NotFound(format!(
                "no distribution {id:?} in the catalog; it has {}",
                ids.join(", ")
            ))
        })
    }

    /// Every stored overlay by distribution.
    ///
    /// # Errors
    /// Store errors.
    pub fn overlays(&self) -> Result<BTreeMap<String, Overlay>> {
        Ok(self.overlays.iter::<Overlay>()?.into_iter().collect())
    }

    /// The overlay of `distro` (the default, empty one when none is stored).
    ///
    /// # Errors
    /// Store errors.
    pub fn overlay(&self, distro: &str) -> Result<Option<Overlay>> {
        Ok(self.overlays.get(distro)?)
    }

    /// Stores the overlay of `distro`.
    ///
    /// # Errors
    /// An unknown distribution (404), an invalid overlay (400), store errors.
    pub async fn put_overlay(&self, distro: &str, o: Overlay) -> Result<Overlay> {
        self.distro(distro)?;
        o.validate()?;
        self.overlays.put(distro, &o).await?;
        self.events.publish(
            NewEvent::new(
                EventKind::NetbootOverlayUpdated,
                format!("netboot overlay of {distro} stored"),
            )
            .resource("netboot_overlay", distro)
            .with(&o.event_data()),
        );
        Ok(o)
    }

    /// Removes the overlay of `distro`.
    ///
    /// # Errors
    /// No overlay stored (404), store errors.
    pub async fn delete_overlay(&self, distro: &str) -> Result<Overlay> {
        let o = self
            .overlay(distro)?
            .ok_or_else(|| ServiceError::NotFound(format!("no overlay for {distro:?}")))?;
        self.overlays.remove(distro).await?;
        self.events.publish(
            NewEvent::new(
                EventKind::NetbootOverlayDeleted,
                format!("netboot overlay of {distro} removed"),
            )
            .resource("netboot_overlay", distro),
        );
        Ok(o)
    }

    /// The entry `distro`/`version`/`arch` with the overlay applied and the cache checked.
    ///
    /// # Errors
    /// Unknown distribution, version or architecture (404, naming what exists); store errors.
    pub fn resolve(&self, distro: &str, version: &str, arch: &str) -> Result<Resolved> {
        let d = self.distro(distro)?;
        let v = d.versions.iter().find(|v| v.version == version).ok_or_else(|| {
            let vs: Vec<&str> = d.versions.iter().map(|v| v.version.as_str()).collect();
            ServiceError::NotFound(format!("{distro} has no version {version:?}; it has {}", vs.join(", ")))
        })?;
        let files = v.arches.get(arch).ok_or_else(|| {
            let a: Vec<&str> = v.arches.keys().map(String::as_str).collect();
            ServiceError::NotFound(format!(
                "{distro} {version} has no architecture {arch:?}; it has {}",
                a.join(", ")
            ))
        })?;
        let overlay = self.overlay(distro)?.unwrap_or_default();
        let mirror = overlay
            .mirror
            .as_deref()
            .unwrap_or(&d.mirror)
            .trim_end_matches('/')
            .to_string();
        let fill = |s: &str| s.replace("{mirror}", &mirror);
        let file = |url: String| {
            let name = url.rsplit('/').next().unwrap_or("file").to_string();
            let path = format!("netboot/{distro}/{version}/{arch}/{name}");
            let bytes = std::fs::metadata(self.cache_dir().join(&path["netboot/".len()..]))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            NetbootFile {
                name,
                path,
                upstream: url,
                cached: bytes.is_some(),
                bytes,
            }
        };
        let mut initrds: Vec<NetbootFile> = files.initrds.iter().map(|u| file(fill(u))).collect();
        initrds.extend(overlay.extra_initrds.iter().cloned().map(file));
        let mut cmdline = fill(&files.cmdline);
        if !overlay.extra_args.trim().is_empty() {
            cmdline = format!("{cmdline} {}", overlay.extra_args.trim());
        }
        Ok(Resolved {
            distro: distro.into(),
            version: version.into(),
            arch: arch.into(),
            kernel: file(fill(&files.kernel)),
            initrds,
            cmdline,
        })
    }

    /// Makes sure `netboot/<distro>/<version>/<arch>/<name>` (the part after `netboot/`)
    /// is in the cache, fetching it from upstream on a miss; answers the boot-root
    /// relative path to serve (`netboot-cache/...`).
    ///
    /// # Errors
    /// A path that names no catalog file (404), an upstream that fails or times out
    /// ([`ServiceError::Upstream`], 502), I/O errors.
    pub async fn ensure(&self, rest: &str) -> Result<String> {
        let parts: Vec<&str> = rest.split('/').collect();
        let [distro, version, arch, name] = parts.as_slice() else {
            return Err(ServiceError::NotFound(format!(
                "netboot/{rest}: expected netboot/<distro>/<version>/<arch>/<file>"
            )));
        };
        let r = self.resolve(distro, version, arch)?;
        let f = std::iter::once(&r.kernel)
            .chain(&r.initrds)
            .find(|f| f.name == *name)
            .ok_or_else(|| ServiceError::NotFound(format!("{distro} {version} {arch} has no file {name:?}")))?
            .clone();
        let rel = format!("{CACHE_DIR}/{distro}/{version}/{arch}/{name}");
        let path = self.cache_dir().join(format!("{distro}/{version}/{arch}/{name}"));
        if path.is_file() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            touch(&path);
            return Ok(rel);
        }
        // One fill at a time: a rack booting at once fetches each file once.
        let _fill = self.fill.lock().await;
        if path.is_file() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            touch(&path);
            return Ok(rel);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        match self.fetch(&f.upstream, &path).await {
            Ok(bytes) => {
                self.events.publish(
                    NewEvent::new(
                        EventKind::NetbootCacheFilled,
                        format!("{} fetched into the cache ({bytes} bytes)", f.upstream),
                    )
                    .with(&NetbootCacheFilled {
                        path: rel.clone(),
                        upstream: f.upstream.clone(),
                        bytes,
                    }),
                );
                self.evict(&path).await;
                Ok(rel)
            }
            Err(e) => {
                self.fetch_errors.fetch_add(1, Ordering::Relaxed);
                self.events.publish(
                    NewEvent::new(
                        EventKind::NetbootCacheFetchFailed,
                        format!("fetching {} failed: {e}", f.upstream),
                    )
                    .with(&NetbootCacheFetchFailed {
                        path: rel,
                        upstream: f.upstream.clone(),
                        error: e.to_string(),
                    }),
                );
                Err(e)
            }
        }
    }

    async fn fetch(&self, url: &str, path: &Path) -> Result<u64> {
        let upstream = |e: String| ServiceError::Upstream(format!("fetching {url} for the netboot cache failed: {e}"));
        let dir = path.parent().unwrap_or(path);
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| ServiceError::io(format!("creating {}", dir.display()), e))?;
        let checked = outbound::checked(&self.outbound, url).map_err(|e| upstream(e.to_string()))?;
        let mut resp = self
            .client
            .get(checked)
            .send()
            .await
            .map_err(|e| upstream(outbound::describe(&e)))?;
        if !resp.status().is_success() {
            return Err(upstream(format!("it answered {}", resp.status())));
        }
        if resp.content_length().is_some_and(|n| n > self.config.cache_max_bytes) {
            return Err(upstream("the file is larger than [netboot] cache_max_bytes".into()));
        }
        let tmp = path.with_extension("partial");
        let mut out = tokio::fs::File::create(&tmp)
            .await
            .map_err(|e| ServiceError::io(format!("creating {}", tmp.display()), e))?;
        let mut n = 0u64;
        let copied: Result<()> = async {
            while let Some(chunk) = resp.chunk().await.map_err(|e| upstream(outbound::describe(&e)))? {
                n += chunk.len() as u64;
                if n > self.config.cache_max_bytes {
                    return Err(upstream("the file is larger than [netboot] cache_max_bytes".into()));
                }
                out.write_all(&chunk)
                    .await
                    .map_err(|e| ServiceError::io(format!("writing {}", tmp.display()), e))?;
            }
            out.sync_all()
                .await
                .map_err(|e| ServiceError::io(format!("writing {}", tmp.display()), e))
        }
        .await;
        if let Err(e) = copied {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        tokio::fs::rename(&tmp, path)
            .await
            .map_err(|e| ServiceError::io(format!("renaming {}", tmp.display()), e))?;
        Ok(n)
    }

    /// Removes the least recently used files (by modification time, which a hit
    /// refreshes) until the cache fits its cap; `keep` (the file just fetched) stays.
    async fn evict(&self, keep: &Path) {
        let dir = self.cache_dir();
        let max = self.config.cache_max_bytes;
        let keep = keep.to_path_buf();
        let evicted = tokio::task::spawn_blocking(move || {
            let mut files = cache_files(&dir);
            let mut total: u64 = files.iter().map(|f| f.1).sum();
            files.sort_by_key(|f| f.2);
            let mut n = 0;
            for (p, len, _) in files {
                if total <= max {
                    break;
                }
                if p != keep && std::fs::remove_file(&p).is_ok() {
                    total -= len;
                    n += 1;
                }
            }
            n
        })
        .await
        .unwrap_or(0);
        self.evictions.fetch_add(evicted, Ordering::Relaxed);
    }

    /// The cache's counters and size.
    pub fn stats(&self) -> CacheStats {
        let files = cache_files(&self.cache_dir());
        CacheStats {
            entries: files.len() as u64,
            bytes: files.iter().map(|f| f.1).sum(),
            max_bytes: self.config.cache_max_bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            fetch_errors: self.fetch_errors.load(Ordering::Relaxed),
        }
    }
}

/// Marks a cached file as just used (its modification time is the LRU clock).
fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Every complete file under `dir` with its size and modification time.
fn cache_files(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) if m.is_file() && p.extension().is_none_or(|x| x != "partial") => {
                    out.push((p, m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalog_parses_and_every_url_is_http_after_the_mirror_is_filled() {
        assert!(
            distros().len() >= 8,
            "Debian, Ubuntu, Fedora, Rocky, Alma, openSUSE, Arch, Alpine"
        );
        for d in distros() {
            assert!(groups().iter().any(|g| g.id == d.group), "{}: group {}", d.id, d.group);
            http_url("mirror", &d.mirror).unwrap();
            for v in &d.versions {
                assert!(!v.arches.is_empty(), "{} {}", d.id, v.version);
                for f in v.arches.values() {
                    for u in std::iter::once(&f.kernel).chain(&f.initrds) {
                        http_url("url", &u.replace("{mirror}", &d.mirror)).unwrap();
                        assert!(!u.ends_with('/'), "{u}");
                    }
                }
            }
        }
    }

    #[test]
    fn overlays_are_validated() {
        let ok = Overlay {
            mirror: Some("http://mirror.lab/debian".into()),
            extra_args: "console=ttyS0".into(),
            extra_initrds: vec!["http://10.0.0.1/boot/preseed.cpio.gz".into()],
        };
        ok.validate().unwrap();
        for (bad, field) in [
            (
                Overlay {
                    mirror: Some("ftp://x".into()),
                    ..Overlay::default()
                },
                "'mirror'",
            ),
            (
                Overlay {
                    extra_args: "a\nb".into(),
                    ..Overlay::default()
                },
                "'extra_args'",
            ),
            (
                Overlay {
                    extra_initrds: vec!["/local".into()],
                    ..Overlay::default()
                },
                "'extra_initrds'",
            ),
        ] {
            assert!(bad.validate().unwrap_err().to_string().contains(field));
        }
    }

    #[test]
    fn the_overlay_event_data_is_the_overlay_as_it_was_serialised() {
        for o in [
            Overlay::default(),
            Overlay {
                mirror: Some("http://mirror.lab/debian".into()),
                extra_args: "console=ttyS0".into(),
                extra_initrds: vec!["http://lab/extra.gz".into()],
            },
        ] {
            assert_eq!(
                serde_json::to_value(o.event_data()).unwrap(),
                serde_json::to_value(&o).unwrap()
            );
        }
    }
}
