//! Netboot catalog routes over [`NetbootService`]: `GET /netboot/groups`,
//! `GET /netboot/catalog` (filter by `group`, `arch`, `q`),
//! `GET /netboot/catalog/{distro}` (every version and architecture resolved with the
//! overlay, each file with its `/boot/netboot/...` path, upstream URL and whether the
//! cache holds it), `GET /netboot/check-files`, the overlays (`GET /netboot/overlays`,
//! `GET|PUT|DELETE /netboot/overlays/{distro}`), `POST /profiles/from-netboot` and
//! `GET /netboot/cache-stats`. The files themselves are served on the boot route
//! `GET /boot/netboot/<distro>/<version>/<arch>/<file>` (see [`super::boot`]).
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::{collections::BTreeMap, sync::Arc};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    AppState,
};
use bootlane_boot::boot::catalog::{BootCatalog, EntryType, MenuEntry, Profile, ProfileInput};
use bootlane_install::netboot::{self, CacheStats, Group, NetbootService, Overlay, Resolved};

/// `GET /netboot/groups` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupList {
    /// The groups.
    pub groups: Vec<Group>,
}

/// One version in the catalog listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionItem {
    /// Version.
    pub version: String,
    /// Code name.
    pub codename: Option<String>,
    /// Architectures.
    pub arches: Vec<String>,
}

/// One distribution in the catalog listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogItem {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Group id.
    pub group: String,
    /// Mirror in force (the overlay's, else the catalog's).
    pub mirror: String,
    /// True when an overlay is stored for it.
    pub overlay: bool,
    /// Versions, newest first.
    pub versions: Vec<VersionItem>,
}

/// `GET /netboot/catalog` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogList {
    /// Matching distributions.
    pub distros: Vec<CatalogItem>,
}

/// Filters of `GET /netboot/catalog`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CatalogQuery {
    /// Only this group.
    pub group: Option<String>,
    /// Only distributions with this architecture in some version.
    pub arch: Option<String>,
    /// Case-insensitive search in id and name.
    pub q: Option<String>,
}

/// `GET /netboot/catalog/{distro}` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DistroDetail {
    /// The distribution as listed.
    #[serde(flatten)]
    pub item: CatalogItem,
    /// The stored overlay, if any.
    pub overlay_config: Option<Overlay>,
    /// Every version × architecture, resolved.
    pub entries: Vec<Resolved>,
}

/// One entry of `GET /netboot/check-files`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileCheck {
    /// Distribution.
    pub distro: String,
    /// Version.
    pub version: String,
    /// Architecture.
    pub arch: String,
    /// True when every file is in the cache (a boot needs no upstream).
    pub complete: bool,
    /// Paths not in the cache (fetched from upstream at the first boot).
    pub missing: Vec<String>,
}

/// `GET /netboot/check-files` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckFiles {
    /// Every catalog entry.
    pub entries: Vec<FileCheck>,
    /// Entries whose files are all local.
    pub complete: usize,
    /// Entries missing some.
    pub incomplete: usize,
}

/// `GET /netboot/overlays` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct OverlayList {
    /// Overlays by distribution id.
    pub overlays: BTreeMap<String, Overlay>,
}

/// Body of `POST /profiles/from-netboot`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromNetboot {
    /// Distribution id (`GET /netboot/catalog`).
    pub distro: String,
    /// Version.
    pub version: String,
    /// Architecture (default: the version's first).
    pub arch: Option<String>,
    /// Profile name (default `<distro>-<version>-<arch>`).
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
}

fn item(nb: &NetbootService, d: &netboot::Distro) -> Result<CatalogItem> {
    let overlay = nb.overlay(&d.id)?;
    Ok(CatalogItem {
        id: d.id.clone(),
        name: d.name.clone(),
        group: d.group.clone(),
        mirror: overlay
            .as_ref()
            .and_then(|o| o.mirror.clone())
            .unwrap_or_else(|| d.mirror.clone()),
        overlay: overlay.is_some(),
        versions: d
            .versions
            .iter()
            .map(|v| VersionItem {
                version: v.version.clone(),
                codename: v.codename.clone(),
                arches: v.arches.keys().cloned().collect(),
            })
            .collect(),
    })
}

fn all_entries(nb: &NetbootService, d: &netboot::Distro) -> Result<Vec<Resolved>> {
    let mut out = Vec::new();
    for v in &d.versions {
        for a in v.arches.keys() {
            out.push(nb.resolve(&d.id, &v.version, a)?);
        }
    }
    Ok(out)
}

/// The catalog's groups.
#[utoipa::path(get, path = "/api/v1/netboot/groups", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", responses((status = 200, body = GroupList), (status = 401)))]
pub async fn list_groups() -> Envelope<GroupList> {
    Envelope::ok(GroupList {
        groups: netboot::groups().to_vec(),
    })
}

/// The built-in catalog of netbootable distributions, with the mirror in force.
#[utoipa::path(get, path = "/api/v1/netboot/catalog", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", params(CatalogQuery),
    responses((status = 200, body = CatalogList), (status = 400), (status = 401)))]
pub async fn catalog(
    State(nb): State<Arc<NetbootService>>,
    ApiQuery(q): ApiQuery<CatalogQuery>,
) -> Result<Envelope<CatalogList>> {
    let needle = q.q.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let mut distros = Vec::new();
    for d in netboot::distros() {
        if q.group.as_deref().is_some_and(|g| g != d.group)
            || q.arch
                .as_deref()
                .is_some_and(|a| !d.versions.iter().any(|v| v.arches.contains_key(a)))
            || needle
                .as_deref()
                .is_some_and(|n| !d.id.to_lowercase().contains(n) && !d.name.to_lowercase().contains(n))
        {
            continue;
        }
        distros.push(item(&nb, d)?);
    }
    Ok(Envelope::ok(CatalogList { distros }))
}

/// One distribution: every version and architecture resolved with the overlay.
#[utoipa::path(get, path = "/api/v1/netboot/catalog/{distro}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", params(("distro" = String, Path, description = "Distribution id")),
    responses((status = 200, body = DistroDetail), (status = 404, description = "Not in the catalog"), (status = 401)))]
pub async fn distro(
    State(nb): State<Arc<NetbootService>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Envelope<DistroDetail>> {
    let d = nb.distro(&id)?;
    Ok(Envelope::ok(DistroDetail {
        item: item(&nb, d)?,
        overlay_config: nb.overlay(&id)?,
        entries: all_entries(&nb, d)?,
    }))
}

/// Which catalog entries have all their files in the cache (a boot that needs no upstream).
#[utoipa::path(get, path = "/api/v1/netboot/check-files", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", responses((status = 200, body = CheckFiles), (status = 401)))]
pub async fn check_files(State(nb): State<Arc<NetbootService>>) -> Result<Envelope<CheckFiles>> {
    let mut entries = Vec::new();
    for d in netboot::distros() {
        for r in all_entries(&nb, d)? {
            let missing: Vec<String> = std::iter::once(&r.kernel)
                .chain(&r.initrds)
                .filter(|f| !f.cached)
                .map(|f| f.path.clone())
                .collect();
            entries.push(FileCheck {
                complete: missing.is_empty(),
                distro: r.distro,
                version: r.version,
                arch: r.arch,
                missing,
            });
        }
    }
    let complete = entries.iter().filter(|e| e.complete).count();
    Ok(Envelope::ok(CheckFiles {
        incomplete: entries.len() - complete,
        complete,
        entries,
    }))
}

/// Every stored overlay.
#[utoipa::path(get, path = "/api/v1/netboot/overlays", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", responses((status = 200, body = OverlayList), (status = 401)))]
pub async fn list_overlays(State(nb): State<Arc<NetbootService>>) -> Result<Envelope<OverlayList>> {
    Ok(Envelope::ok(OverlayList {
        overlays: nb.overlays()?,
    }))
}

/// The overlay of a distribution (404 when none is stored).
#[utoipa::path(get, path = "/api/v1/netboot/overlays/{distro}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", params(("distro" = String, Path, description = "Distribution id")),
    responses((status = 200, body = Overlay), (status = 404), (status = 401)))]
pub async fn get_overlay(
    State(nb): State<Arc<NetbootService>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Envelope<Overlay>> {
    nb.distro(&id)?;
    let o = nb
        .overlay(&id)?
        .ok_or_else(|| bootlane_core::service_error::ServiceError::NotFound(format!("no overlay for {id:?}")))?;
    Ok(Envelope::ok(o))
}

/// Store the overlay of a distribution (replaces it whole).
#[utoipa::path(put, path = "/api/v1/netboot/overlays/{distro}", extensions(("x-bootlane-role" = json!("operator"))), tag = "netboot", params(("distro" = String, Path, description = "Distribution id")),
    request_body = Overlay,
    responses((status = 200, body = Overlay), (status = 400, description = "Invalid field (named)"), (status = 404), (status = 401)))]
pub async fn put_overlay(
    State(nb): State<Arc<NetbootService>>,
    ApiPath(id): ApiPath<String>,
    ApiJson(o): ApiJson<Overlay>,
) -> Result<Envelope<Overlay>> {
    Ok(Envelope::ok(nb.put_overlay(&id, o).await?))
}

/// Remove the overlay of a distribution.
#[utoipa::path(delete, path = "/api/v1/netboot/overlays/{distro}", extensions(("x-bootlane-role" = json!("operator"))), tag = "netboot", params(("distro" = String, Path, description = "Distribution id")),
    responses((status = 200, body = Overlay), (status = 404), (status = 401)))]
pub async fn delete_overlay(
    State(nb): State<Arc<NetbootService>>,
    ApiPath(id): ApiPath<String>,
) -> Result<Envelope<Overlay>> {
    Ok(Envelope::ok(nb.delete_overlay(&id).await?))
}

/// Create a boot profile from a catalog entry (with its overlay): one `linux` entry whose
/// kernel and initrds are the `/boot/netboot/...` paths (served from the cache, fetched
/// from upstream at the first boot), then "Boot from local disk".
#[utoipa::path(post, path = "/api/v1/profiles/from-netboot", extensions(("x-bootlane-role" = json!("operator"))), tag = "netboot", request_body = FromNetboot,
    responses((status = 201, body = Profile), (status = 400, description = "Invalid field (named)"),
        (status = 404, description = "Not in the catalog"), (status = 409, description = "The profile name is taken"), (status = 401)))]
pub async fn from_netboot(
    State(nb): State<Arc<NetbootService>>,
    State(catalog): State<Arc<BootCatalog>>,
    ApiJson(req): ApiJson<FromNetboot>,
) -> Result<(StatusCode, Envelope<Profile>)> {
    let d = nb.distro(&req.distro)?;
    let arch = match req.arch {
        Some(a) => a,
        None => d
            .versions
            .iter()
            .find(|v| v.version == req.version)
            .and_then(|v| v.arches.keys().next().cloned())
            .unwrap_or_default(),
    };
    let r = nb.resolve(&req.distro, &req.version, &arch)?;
    let label = format!("Install {} {} ({arch})", d.name, r.version);
    let entries = vec![
        MenuEntry {
            label,
            kind: EntryType::Linux,
            kernel: Some(r.kernel.path.clone()),
            initrds: r.initrds.iter().map(|f| f.path.clone()).collect(),
            cmdline: Some(r.cmdline.clone()),
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
        name: Some(
            req.name
                .unwrap_or_else(|| format!("{}-{}-{arch}", d.id, r.version).replace('.', "-")),
        ),
        description: Some(
            req.description
                .unwrap_or_else(|| format!("{} {} {arch} from the netboot catalog", d.name, r.version)),
        ),
        entries: Some(entries),
        comment: Some(format!("from the netboot catalog: {} {} {arch}", d.id, r.version)),
        ..ProfileInput::default()
    };
    Ok((StatusCode::CREATED, Envelope::ok(catalog.create_profile(input).await?)))
}

/// The netboot cache: files, bytes, cap, hits, misses, evictions, fetch errors.
#[utoipa::path(get, path = "/api/v1/netboot/cache-stats", extensions(("x-bootlane-role" = json!("viewer"))), tag = "netboot", responses((status = 200, body = CacheStats), (status = 401)))]
pub async fn cache_stats(State(nb): State<Arc<NetbootService>>) -> Envelope<CacheStats> {
    Envelope::ok(nb.stats())
}

/// The netboot routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups))
        .routes(routes!(catalog))
        .routes(routes!(distro))
        .routes(routes!(check_files))
        .routes(routes!(list_overlays))
        .routes(routes!(get_overlay, put_overlay, delete_overlay))
        .routes(routes!(from_netboot))
        .routes(routes!(cache_stats))
}

#[cfg(test)]
mod tests {
    use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    };

    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use super::super::test_support::{setup_with, T};

    /// An upstream mirror on loopback: every path answers 600 KiB of its own name, and
    /// requests are counted.
    async fn upstream() -> (String, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let h = h.clone();
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                uri.path()
                    .as_bytes()
                    .iter()
                    .copied()
                    .cycle()
                    .take(600 * 1024)
                    .collect::<Vec<u8>>()
            }
        });
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await });
        (format!("http://{addr}"), hits)
    }

    async fn client() -> T {
        let mut t = setup_with(|c| {
            c.netboot.cache_max_bytes = 1 << 20;
            // The test mirror is on loopback.
            c.outbound.allow_loopback = true;
        })
        .await;
        t.login().await;
        t
    }

    async fn stats(t: &T) -> serde_json::Value {
        t.expect(Method::GET, "/api/v1/netboot/cache-stats", None, StatusCode::OK, "")
            .await["data"]
            .clone()
    }

    #[tokio::test]
    async fn catalog_lists_filters_and_resolves() {
        let t = client().await;
        let v = t
            .expect(Method::GET, "/api/v1/netboot/catalog", None, StatusCode::OK, "")
            .await;
        let ids: Vec<&str> = v["data"]["distros"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap())
            .collect();
        for d in [
            "debian",
            "ubuntu",
            "fedora",
            "rocky",
            "almalinux",
            "opensuse",
            "arch",
            "alpine",
        ] {
            assert!(ids.contains(&d), "{d} in {ids:?}");
        }
        let v = t
            .expect(
                Method::GET,
                "/api/v1/netboot/catalog?group=rhel",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["distros"].as_array().unwrap().len(), 3);
        let v = t
            .expect(Method::GET, "/api/v1/netboot/groups", None, StatusCode::OK, "")
            .await;
        assert!(v["data"]["groups"].as_array().unwrap().len() >= 5);
        let v = t
            .expect(Method::GET, "/api/v1/netboot/catalog/debian", None, StatusCode::OK, "")
            .await;
        let e = v["data"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["version"] == "12" && e["arch"] == "amd64")
            .unwrap()
            .clone();
        assert_eq!(e["kernel"]["path"], "netboot/debian/12/amd64/linux");
        assert!(e["kernel"]["upstream"]
            .as_str()
            .unwrap()
            .starts_with("https://deb.debian.org/debian/dists/bookworm/"));
        assert_eq!(e["kernel"]["cached"], false);
        t.expect(
            Method::GET,
            "/api/v1/netboot/catalog/nope",
            None,
            StatusCode::NOT_FOUND,
            "no distribution",
        )
        .await;
    }

    /// A mirror on loopback is refused by default (502 naming the URL and the setting,
    /// the mirror never asked) and fetched with `[outbound] allow_loopback = true`.
    #[tokio::test]
    async fn a_loopback_mirror_is_refused_unless_outbound_allows_it() {
        let (mirror, hits) = upstream().await;
        for allow in [false, true] {
            let mut t = setup_with(|c| c.outbound.allow_loopback = allow).await;
            t.login().await;
            t.expect(
                Method::PUT,
                "/api/v1/netboot/overlays/debian",
                Some(json!({"mirror": format!("{mirror}/debian")})),
                StatusCode::OK,
                "",
            )
            .await;
            let (s, _, body) = t.call(Method::GET, "/boot/netboot/debian/12/amd64/linux", None).await;
            if allow {
                assert_eq!(s, StatusCode::OK);
                assert_eq!(hits.load(Ordering::SeqCst), 1);
            } else {
                assert_eq!(s, StatusCode::BAD_GATEWAY, "{body}");
                let body = body.to_string();
                assert!(
                    body.contains(&format!("refusing to fetch {mirror}/debian/"))
                        && body.contains("allow_loopback = true"),
                    "{body}"
                );
                assert_eq!(hits.load(Ordering::SeqCst), 0, "the mirror was not contacted");
            }
        }
    }

    #[tokio::test]
    async fn overlay_profile_cache_fill_hit_eviction_and_a_dead_upstream() {
        let t = client().await;
        let (mirror, hits) = upstream().await;
        for (body, status, needle) in [
            (json!({"mirror": "ftp://x"}), StatusCode::BAD_REQUEST, "'mirror'"),
            (
                json!({"extra_initrds": ["relative"]}),
                StatusCode::BAD_REQUEST,
                "'extra_initrds'",
            ),
            (json!({"bogus": 1}), StatusCode::BAD_REQUEST, "bogus"),
        ] {
            t.expect(
                Method::PUT,
                "/api/v1/netboot/overlays/debian",
                Some(body),
                status,
                needle,
            )
            .await;
        }
        t.expect(
            Method::PUT,
            "/api/v1/netboot/overlays/nope",
            Some(json!({})),
            StatusCode::NOT_FOUND,
            "no distribution",
        )
        .await;
        t.expect(
            Method::PUT,
            "/api/v1/netboot/overlays/debian",
            Some(json!({"mirror": format!("{mirror}/debian"), "extra_args": "console=ttyS0"})),
            StatusCode::OK,
            "",
        )
        .await;

        // A profile from the catalog points at the cache paths, the overlay applied.
        let p = t
            .expect(
                Method::POST,
                "/api/v1/profiles/from-netboot",
                Some(json!({"distro": "debian", "version": "12", "arch": "amd64"})),
                StatusCode::CREATED,
                "",
            )
            .await;
        let entry = &p["data"]["entries"][0];
        assert_eq!(entry["kernel"], "netboot/debian/12/amd64/linux");
        assert_eq!(entry["initrds"], json!(["netboot/debian/12/amd64/initrd.gz"]));
        assert!(entry["cmdline"].as_str().unwrap().ends_with("console=ttyS0"), "{entry}");
        t.expect(
            Method::POST,
            "/api/v1/profiles/from-netboot",
            Some(json!({"distro": "debian", "version": "99"})),
            StatusCode::NOT_FOUND,
            "no version",
        )
        .await;

        // First fetch fills the cache from upstream; the second is a hit.
        let (s, _, body) = t.call(Method::GET, "/boot/netboot/debian/12/amd64/linux", None).await;
        assert_eq!(s, StatusCode::OK);
        assert!(
            body.as_str()
                .unwrap()
                .starts_with("/debian/dists/bookworm/main/installer-amd64/"),
            "served the upstream file"
        );
        let (s, _, _) = t.call(Method::GET, "/boot/netboot/debian/12/amd64/linux", None).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(hits.load(Ordering::SeqCst), 1, "the second request came from the cache");
        let st = stats(&t).await;
        assert_eq!(
            (st["hits"].as_u64(), st["misses"].as_u64(), st["entries"].as_u64()),
            (Some(1), Some(1), Some(1)),
            "{st}"
        );

        // The initrd does not fit next to the kernel under the 1 MiB cap: the kernel (least
        // recently used) is evicted.
        let (s, _, _) = t
            .call(Method::GET, "/boot/netboot/debian/12/amd64/initrd.gz", None)
            .await;
        assert_eq!(s, StatusCode::OK);
        let st = stats(&t).await;
        assert_eq!(
            (st["entries"].as_u64(), st["evictions"].as_u64()),
            (Some(1), Some(1)),
            "{st}"
        );
        let v = t
            .expect(Method::GET, "/api/v1/netboot/check-files", None, StatusCode::OK, "")
            .await;
        let e = v["data"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["distro"] == "debian" && e["version"] == "12" && e["arch"] == "amd64")
            .unwrap()
            .clone();
        assert_eq!(e["missing"], json!(["netboot/debian/12/amd64/linux"]), "{e}");

        // A file the entry does not have, and an upstream nobody answers on: clear answers, fast.
        let (s, _, _) = t.call(Method::GET, "/boot/netboot/debian/12/amd64/evil", None).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        t.expect(
            Method::PUT,
            "/api/v1/netboot/overlays/alpine",
            Some(json!({"mirror": "http://127.0.0.1:1/alpine"})),
            StatusCode::OK,
            "",
        )
        .await;
        let t0 = std::time::Instant::now();
        let (s, _, body) = t
            .call(Method::GET, "/boot/netboot/alpine/3.20/x86_64/vmlinuz-lts", None)
            .await;
        assert_eq!(s, StatusCode::BAD_GATEWAY, "{body}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(stats(&t).await["fetch_errors"], 1);
        t.expect(
            Method::DELETE,
            "/api/v1/netboot/overlays/alpine",
            None,
            StatusCode::OK,
            "",
        )
        .await;
        t.expect(
            Method::DELETE,
            "/api/v1/netboot/overlays/alpine",
            None,
            StatusCode::NOT_FOUND,
            "no overlay",
        )
        .await;
    }
}
