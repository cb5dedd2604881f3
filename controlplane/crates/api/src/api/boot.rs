//! HTTP boot, mounted outside `/api/v1` and outside the session layer because booting
//! machines have no login:
//!
//! - `GET /boot/ipxe?mac=<mac>`: the iPXE script for that machine (`text/plain`, starts
//!   with `#!ipxe`): the menu of the registered host's profile, else of the default
//!   profile ([`BootCatalog::script_for`], also behind `GET /api/v1/hosts/{id}/boot-config`).
//!   URLs in it use the `Host` the client used, so they work through whatever address the
//!   client reached. A missing `mac` renders as `unknown`; a malformed one is a 400.
//! - `GET /boot/{*path}` (and HEAD): a file from the boot directory, with Range support
//!   (`tower_http::services::ServeFile`), resolved by the same rule as TFTP
//!   ([`bootlane_boot::boot::resolve_in_root`]): 404 when missing, 403 when the path leaves the
//!   root. `pxelinux.cfg/01-<mac>`, `pxelinux.cfg/default`, `grub/grub.cfg` and
//!   `grub/grub.cfg-<mac>` missing from the root are the PXELINUX and GRUB configurations
//!   generated from the profiles ([`bootlane_boot::boot::generated`]), as TFTP serves them.
//!
//! Access control ([`bootlane_boot::access`]): while the mode is not `off`, the script route
//! judges the client by its `mac` (else by its address's DHCP lease) and answers a
//! refused machine, still `200 text/plain` so that iPXE runs it, a short script that says
//! it is not authorised and `exit`s to the firmware (which goes on to the local disk);
//! a file route judges the client by its address's lease and answers a refused one 403.
//!
//! These answers are plain text or files, not the JSON envelope: their clients are iPXE
//! and firmware. Nothing else is exposed here. Holds no state besides [`BootState`].

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use axum::{
    extract::{Path, Query, Request, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use tower::ServiceExt;
use tower_http::services::ServeFile;

use bootlane_boot::boot::file_body::FileBody;

use bootlane_boot::{
    access::{
        gate::{AccessGate, Decision, Reason, Seen},
        model::Protocol,
    },
    boot::{catalog::BootCatalog, resolve_in_root, PathError},
};
use bootlane_core::{
    events::{BootFileServed, EventBus, EventKind, IpxeServed, NewEvent},
    net::types::normalise_mac,
};

/// State of the boot routes.
#[derive(Clone)]
pub struct BootState {
    /// The netboot settings: the boot directory and the `http_base_url` (kernel and
    /// initrd URLs in scripts), changed live by `/settings/netboot`.
    pub settings: bootlane_boot::boot::netboot::Netboot,
    /// Hosts, profiles and the script template (the per-MAC script choice).
    pub catalog: Arc<BootCatalog>,
    /// Where `boot.ipxe.served` and `boot.file.served` go.
    pub events: Arc<EventBus>,
    /// False while the `http-boot` service is stopped: every boot route answers 503.
    pub serving: Arc<AtomicBool>,
    /// Per-client-address rate limit of every boot route (`None`: unlimited); see
    /// [`rate_limiter`].
    pub limiter: Option<Arc<ClientLimiter>>,
    /// Access control: who may fetch scripts and files.
    pub access: Arc<AccessGate>,
    /// The netboot catalog's cache behind `/boot/netboot/...`; `None`: those paths are
    /// plain files of the boot root.
    pub netboot: Option<Arc<bootlane_install::netboot::NetbootService>>,
    /// OS images: `/boot/images/<id>/<path>` of a mounted image is read from inside its
    /// ISO; `None`, or an image not mounted: plain files of the boot root (the extracted
    /// tree).
    pub images: Option<Arc<bootlane_media::media::images::OsImageService>>,
    /// Install tasks: a machine with a task gets the task's script (the loop guard);
    /// `None`: profiles only.
    pub tasks: Option<Arc<bootlane_install::install::service::TaskService>>,
    /// Boot sessions: told of files asked for and not found (a 404); `None`: not told.
    pub sessions: Option<Arc<bootlane_sessions::recorder::Sessions>>,
}

/// A token bucket per client address (governor's keyed GCRA limiter).
pub type ClientLimiter = governor::DefaultKeyedRateLimiter<std::net::IpAddr>;

/// The limiter for `[boot] rate_per_client` and `rate_burst` (`None` when the rate is 0).
pub fn rate_limiter(per_sec: u32, burst: u32) -> Option<Arc<ClientLimiter>> {
    let rate = std::num::NonZeroU32::new(per_sec)?;
    let burst = std::num::NonZeroU32::new(burst.max(per_sec)).unwrap_or(rate);
    Some(Arc::new(governor::RateLimiter::keyed(
        governor::Quota::per_second(rate).allow_burst(burst),
    )))
}

/// Answers `429 Too Many Requests` (plain text, `Retry-After` in whole seconds) to a
/// client over its rate; requests without a peer address (tests) pass. Forgets idle
/// clients now and then so the table stays small.
async fn limit(State(st): State<BootState>, req: Request, next: axum::middleware::Next) -> Response {
    let (Some(limiter), Some(peer)) = (
        st.limiter.as_ref(),
        req.extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip()),
    ) else {
        return next.run(req).await;
    };
    if let Err(not_until) = limiter.check_key(&peer) {
        let wait = not_until.wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
        let mut resp = text(
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many boot requests from {peer}; retry later\n"),
        );
        if let Ok(v) = header::HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        count("limited", &resp, false);
        return resp;
    }
    if limiter.len() > 10_000 {
        limiter.retain_recent();
    }
    next.run(req).await
}

/// The `http-boot` service under the [`Supervisor`](bootlane_core::supervisor::Supervisor): the
/// boot routes share the API's listener, so start and stop open and close them (503
/// while stopped) rather than a socket.
pub struct HttpBootUnit {
    /// Shared with [`BootState::serving`].
    pub serving: Arc<AtomicBool>,
    /// The API listen addresses the routes are served on (`0.0.0.0:port` and its IPv6
    /// twin `[::]:port`).
    pub listen: Vec<String>,
}

impl bootlane_core::supervisor::Service for HttpBootUnit {
    fn name(&self) -> &'static str {
        "http-boot"
    }
    fn start(&self) -> futures::future::BoxFuture<'_, anyhow::Result<Vec<String>>> {
        self.serving.store(true, Ordering::SeqCst);
        Box::pin(async move { Ok(self.listen.clone()) })
    }
    fn stop(&self) -> futures::future::BoxFuture<'_, ()> {
        self.serving.store(false, Ordering::SeqCst);
        Box::pin(async {})
    }
    fn default_auto_start(&self) -> bool {
        true
    }
    fn serving(&self) -> Option<Vec<String>> {
        self.serving.load(Ordering::SeqCst).then(|| self.listen.clone())
    }
}

fn stopped() -> Response {
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "HTTP boot is stopped (POST /api/v1/services/http-boot/start)\n".into(),
    )
}

/// The access-control verdict for a boot request from `peer` (tests have none) naming
/// `mac` (the script's query), or `None` when it may be served. Nothing is looked up
/// while the mode is `off`.
async fn refusal(
    st: &BootState,
    protocol: Protocol,
    peer: Option<std::net::IpAddr>,
    mac: Option<bootlane_core::net::types::MacAddr>,
) -> Option<Reason> {
    if !st.access.enforcing() {
        return None;
    }
    let d = match peer {
        Some(ip) => st.access.check_addr(protocol, ip, mac).await,
        None => st.access.check(&Seen {
            mac,
            ..Seen::new(protocol)
        }),
    };
    match d {
        Decision::Refuse(r) => Some(r),
        Decision::Allow => {
            // Remember who uses this address, for the files the script fetches next
            // (a proxyDHCP client's address is not in Bootlane's leases).
            if let (Some(std::net::IpAddr::V4(ip)), Some(m)) = (peer, mac) {
                st.access.learn(ip, m);
            }
            None
        }
    }
}

/// The script a refused machine gets: it says why and exits to the firmware, which goes
/// on with its next boot device (the local disk).
pub fn refused_script(mac: Option<bootlane_core::net::types::MacAddr>) -> String {
    let who = mac.map_or_else(|| "this machine".to_string(), |m| format!("this machine ({m})"));
    format!(
        "#!ipxe\necho Bootlane: {who} is not authorised to boot from the network here.\n\
         echo Bootlane: ask an administrator to allow it. Booting from the local disk.\nsleep 5\nexit\n"
    )
}

/// The boot routes, ready to merge into any router. Every answer goes through
/// [`harmless`].
pub fn router<S: Clone + Send + Sync + 'static>(state: BootState) -> Router<S> {
    Router::new()
        .route("/boot/ipxe", get(ipxe_script))
        .route("/boot/{*path}", get(boot_file))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), limit))
        .route_layer(axum::middleware::map_response(harmless))
        .with_state(state)
}

/// Makes a boot-route answer harmless to a browser on the UI's origin: every answer
/// carries `X-Content-Type-Options: nosniff` (no guessing a boot file is a page), and an
/// answer a browser would render as a document with script (HTML, SVG, XML, XHTML: any
/// `text/html`, `*/xml` or `*+xml` type) is sent as a download
/// (`Content-Disposition: attachment`) under `Content-Security-Policy: sandbox`, so a file
/// uploaded to or extracted into the boot root cannot run script as the UI. Firmware and
/// installers ignore both headers.
pub async fn harmless(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    let essence = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .unwrap_or_default();
    if essence == "text/html" || essence.ends_with("/xml") || essence.ends_with("+xml") {
        h.insert(
            header::CONTENT_DISPOSITION,
            header::HeaderValue::from_static("attachment"),
        );
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static("sandbox"),
        );
    }
    r
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// A `Host` header value safe to paste into a script (host name or IP, optional port).
pub(crate) fn safe_host(headers: &HeaderMap) -> Option<String> {
    let h = headers.get(header::HOST)?.to_str().ok()?;
    let ok = !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    ok.then(|| h.to_string())
}

/// Counts one `/boot/...` answer: [`bootlane_core::metrics::HTTP_BOOT_REQUESTS`] and, for file
/// bodies actually sent (not HEAD), [`bootlane_core::metrics::HTTP_BOOT_BYTES`] by the
/// announced `Content-Length` (a client that hangs up early is still counted in full).
fn count(kind: &'static str, resp: &Response, body_sent: bool) {
    use bootlane_core::metrics::{HTTP_BOOT_BYTES, HTTP_BOOT_REQUESTS};
    let status = resp.status().as_u16().to_string();
    metrics::counter!(HTTP_BOOT_REQUESTS, "kind" => kind, "status" => status.clone()).increment(1);
    let len = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let (true, Some(len)) = (body_sent, len) {
        metrics::counter!(HTTP_BOOT_BYTES, "status" => status).increment(len);
    }
}

async fn ipxe_script(
    State(st): State<BootState>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    extensions: axum::http::Extensions,
) -> Response {
    let peer = extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .copied();
    if !st.serving.load(Ordering::SeqCst) {
        return stopped();
    }
    let resp = build_script(st, q, headers, peer).await;
    count("script", &resp, false);
    resp
}

async fn build_script(
    st: BootState,
    q: HashMap<String, String>,
    headers: HeaderMap,
    peer: Option<axum::extract::ConnectInfo<std::net::SocketAddr>>,
) -> Response {
    let mac = match q.get("mac").map(|m| m.trim()).filter(|m| !m.is_empty()) {
        None => None,
        Some(m) => match normalise_mac(m) {
            Ok(m) => Some(m),
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        },
    };
    if let Some(reason) = refusal(&st, Protocol::Ipxe, peer.map(|p| p.0.ip().to_canonical()), mac).await {
        tracing::info!(mac = ?mac, peer = ?peer.map(|p| p.0), "iPXE script refused: {}", reason.describe());
        return text(StatusCode::OK, refused_script(mac));
    }
    let Some(server) = safe_host(&headers) else {
        return text(StatusCode::BAD_REQUEST, "a valid Host header is required\n".into());
    };
    let base = st.settings.borrow().http_base_url.clone();
    if let (Some(tasks), Some(m)) = (&st.tasks, mac) {
        let url = base.clone().unwrap_or_else(|| format!("http://{server}"));
        match tasks.boot_script(m, peer.map(|p| p.0.ip().to_canonical()), &url).await {
            Ok(Some(script)) => {
                tracing::info!(mac = %m, "serving the install task's iPXE script");
                let mut e = NewEvent::new(
                    EventKind::BootIpxeServed,
                    format!("iPXE script of the install task served to {m}"),
                )
                .resource("host", m.to_string())
                .with(&IpxeServed::InstallTask {
                    mac: m.to_string(),
                    install_task: true,
                    action: tasks.by_mac(&m.to_string()).ok().map(|t| t.action.to_string()),
                });
                if let Some(p) = peer {
                    e = e.remote(p.0.ip());
                }
                st.events.publish(e);
                metrics::counter!(bootlane_core::metrics::IPXE_SCRIPTS).increment(1);
                return text(StatusCode::OK, script);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(mac = %m, error = %e, "the install task's script failed; serving the profile"),
        }
    }
    let catalog = st.catalog.clone();
    let script = tokio::task::spawn_blocking(move || catalog.script_and_profile(mac, &server, base.as_deref())).await;
    match script {
        Ok(Ok((s, profile, host))) => {
            let mac = mac.map_or_else(|| "unknown".to_string(), |m| m.to_string());
            tracing::info!(%mac, %profile, "serving the iPXE script");
            let mut e = NewEvent::new(
                EventKind::BootIpxeServed,
                format!("iPXE script of profile {profile} served to {mac}"),
            )
            .resource("host", &mac)
            .with(&IpxeServed::Profile {
                mac: mac.clone(),
                profile: profile.clone(),
                host,
            });
            if let Some(p) = peer {
                e = e.remote(p.0.ip());
            }
            st.events.publish(e);
            metrics::counter!(bootlane_core::metrics::IPXE_SCRIPTS).increment(1);
            text(StatusCode::OK, s)
        }
        Ok(Err(e)) => {
            tracing::error!("building the iPXE script failed: {e}");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "#!ipxe\necho Bootlane: the boot script could not be built; see the server log\nexit\n".into(),
            )
        }
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n".into()),
    }
}

async fn boot_file(State(st): State<BootState>, Path(path): Path<String>, req: Request) -> Response {
    if !st.serving.load(Ordering::SeqCst) {
        return stopped();
    }
    let body_sent = req.method() != axum::http::Method::HEAD;
    // `/boot/netboot/<distro>/<version>/<arch>/<file>`: the catalog's cached copy, fetched
    // from upstream on a miss.
    // A machine access control refuses fetches nothing upstream: `serve_file` answers its 403.
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_canonical());
    let refused = st.netboot.is_some()
        && path.starts_with("netboot/")
        && refusal(&st, Protocol::Http, peer, None).await.is_some();
    let path = match (&st.netboot, path.strip_prefix("netboot/")) {
        (Some(nb), Some(rest)) if !refused => match nb.ensure(rest).await {
            Ok(cached) => cached,
            Err(e) => {
                let status = match e {
                    bootlane_core::service_error::ServiceError::NotFound(_) => StatusCode::NOT_FOUND,
                    bootlane_core::service_error::ServiceError::Upstream(_) => StatusCode::BAD_GATEWAY,
                    _ => StatusCode::INTERNAL_SERVER_ERROR,
                };
                let resp = text(status, format!("{e}\n"));
                count("file", &resp, false);
                return resp;
            }
        },
        _ => path,
    };
    let range = req
        .headers()
        .get(header::RANGE)
        .map(|v| v.to_str().unwrap_or("").to_string());
    if let Some(resp) = mounted_image_file(&st, &path, peer, range, req.method().clone()).await {
        count("file", &resp, body_sent);
        return resp;
    }
    let resp = serve_file(st, path, req).await;
    count("file", &resp, body_sent);
    resp
}

/// `images/<id>/<path>` of a mounted image: the file's extent read from the ISO, with a
/// single `Range` honoured (206, or 416 when unsatisfiable). `None` when the path is not
/// under a mounted image (the boot root serves it).
async fn mounted_image_file(
    st: &BootState,
    path: &str,
    peer: Option<std::net::IpAddr>,
    range: Option<String>,
    method: axum::http::Method,
) -> Option<Response> {
    let images = st.images.as_ref()?;
    let (id, inner) = path.strip_prefix("images/")?.split_once('/')?;
    let id: u64 = id.parse().ok()?;
    let file = match images.mounted_file(id, inner).await {
        Ok(Some(f)) => f,
        Ok(None) => return None,
        Err(bootlane_core::service_error::ServiceError::NotFound(m)) => {
            if let Some(s) = &st.sessions {
                s.http_missing(peer, path);
            }
            return Some(text(StatusCode::NOT_FOUND, format!("{m}\n")));
        }
        Err(e) => {
            tracing::warn!(id, file = inner, error = %e, "serving a mounted image's file failed");
            return Some(text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")));
        }
    };
    if let Some(reason) = refusal(st, Protocol::Http, peer, None).await {
        tracing::info!(?peer, file = %path, "HTTP boot file refused: {}", reason.describe());
        return Some(text(
            StatusCode::FORBIDDEN,
            "this machine is not authorised to boot from this server\n".into(),
        ));
    }
    let range = match range {
        None => None,
        Some(h) => match http_range_header::parse_range_header(&h).and_then(|r| r.validate(file.len)) {
            Ok(r) if r.len() == 1 => Some(r[0].clone()),
            Ok(_) => None,
            Err(_) => {
                let mut resp = text(StatusCode::RANGE_NOT_SATISFIABLE, "range not satisfiable\n".into());
                if let Ok(v) = header::HeaderValue::from_str(&format!("bytes */{}", file.len)) {
                    resp.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                return Some(resp);
            }
        },
    };
    let (start, len) = match &range {
        Some(r) => (*r.start(), r.end() - r.start() + 1),
        None => (0, file.len),
    };
    let body = if method == axum::http::Method::HEAD {
        axum::body::Body::empty()
    } else {
        match tokio::fs::File::open(&file.iso).await {
            Ok(f) => FileBody::new(f.into_std().await, file.offset + start, len).into_body(),
            Err(e) => {
                return Some(text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("opening the image: {e}\n"),
                ))
            }
        }
    };
    let mut b = Response::builder()
        .status(if range.is_some() {
            StatusCode::PARTIAL_CONTENT
        } else {
            StatusCode::OK
        })
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CONTENT_LENGTH, len)
        .header(header::ACCEPT_RANGES, "bytes");
    if range.is_some() {
        b = b.header(
            header::CONTENT_RANGE,
            format!("bytes {start}-{}/{}", start + len - 1, file.len),
        );
    }
    if method == axum::http::Method::GET {
        let mut e = NewEvent::new(
            EventKind::BootFileServed,
            format!("HTTP boot file {path} served from mounted OS image {id} ({len} bytes)"),
        )
        .resource("file", path)
        .with(&BootFileServed {
            file: path.to_string(),
            bytes: len,
            image: Some(id),
            status: if range.is_some() { 206 } else { 200 },
        });
        if let Some(p) = peer {
            e = e.remote(p);
        }
        st.events.publish(e);
    }
    Some(
        b.body(body)
            .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n".into())),
    )
}

/// The `(offset, length)` a successful file response sends: from `Content-Range` for a
/// 206 (`bytes a-b/total`), from `Content-Length` for a 200; `None` otherwise.
fn served_range(r: &Response) -> Option<(u64, u64)> {
    let h = |name| {
        r.headers()
            .get(name)
            .and_then(|v: &header::HeaderValue| v.to_str().ok())
    };
    match r.status() {
        StatusCode::OK => Some((0, h(header::CONTENT_LENGTH)?.parse().ok()?)),
        StatusCode::PARTIAL_CONTENT => {
            let (a, b) = h(header::CONTENT_RANGE)?
                .strip_prefix("bytes ")?
                .split_once('/')?
                .0
                .split_once('-')?;
            let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            (b >= a).then_some((a, b - a + 1))
        }
        _ => None,
    }
}

async fn serve_file(st: BootState, path: String, req: Request) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let is_get = req.method() == axum::http::Method::GET;
    if let Some(reason) = refusal(&st, Protocol::Http, peer.map(|p| p.to_canonical()), None).await {
        tracing::info!(?peer, file = %path, "HTTP boot file refused: {}", reason.describe());
        return text(
            StatusCode::FORBIDDEN,
            "this machine is not authorised to boot from this server\n".into(),
        );
    }
    let root = st.settings.borrow().root();
    let name = path.clone();
    let resolved = tokio::task::spawn_blocking(move || resolve_in_root(&root, &path)).await;
    match resolved {
        Ok(Ok(file)) => match ServeFile::new(&file).oneshot(req).await {
            Ok(r) => {
                let mut r = r.into_response();
                if is_get {
                    if let Some((start, len)) = served_range(&r) {
                        // ServeFile's headers stand; its body (read through a copy)
                        // gives way to the page-cache reads of FileBody.
                        if let Ok(f) = tokio::fs::File::open(&file).await {
                            *r.body_mut() = FileBody::new(f.into_std().await, start, len).into_body();
                        }
                    }
                }
                if let Some(t) = uefi_content_type(&file) {
                    r.headers_mut()
                        .insert(header::CONTENT_TYPE, axum::http::HeaderValue::from_static(t));
                }
                if is_get && r.status().is_success() {
                    let bytes = r
                        .headers()
                        .get(header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0);
                    let mut e = NewEvent::new(
                        EventKind::BootFileServed,
                        format!("HTTP boot file {name} served ({bytes} bytes)"),
                    )
                    .resource("file", &name)
                    .with(&BootFileServed {
                        file: name.clone(),
                        bytes,
                        image: None,
                        status: r.status().as_u16(),
                    });
                    if let Some(p) = peer {
                        e = e.remote(p);
                    }
                    st.events.publish(e);
                }
                r
            }
            Err(never) => match never {},
        },
        Ok(Err(PathError::NotFound(p))) => match generated_cfg(&st, &name, req.headers(), peer).await {
            Some(resp) => resp,
            None => {
                if let Some(s) = &st.sessions {
                    s.http_missing(peer, &name);
                }
                text(StatusCode::NOT_FOUND, format!("no such file {p:?}\n"))
            }
        },
        Ok(Err(e)) => text(StatusCode::FORBIDDEN, format!("{e}\n")),
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n".into()),
    }
}

/// The media type UEFI HTTP boot expects for a boot file, by extension (UEFI 2.10
/// §24.7.3.2 "HTTP Boot", the `Content-Type` of the response): `application/efi` for an EFI
/// application, `application/vnd.efi-iso` and `application/vnd.efi-img` for images the
/// firmware mounts as a RAM disk; `None` for anything else (the guessed type stands).
pub fn uefi_content_type(file: &std::path::Path) -> Option<&'static str> {
    let ext = file.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "efi" => Some("application/efi"),
        "iso" => Some("application/vnd.efi-iso"),
        "img" => Some("application/vnd.efi-img"),
        _ => None,
    }
}

/// `pxelinux.cfg/01-<mac>`, `pxelinux.cfg/default`, `grub/grub.cfg` or
/// `grub/grub.cfg-<mac>` missing from the boot root: the configuration generated from the
/// profiles ([`bootlane_boot::boot::generated`]), as TFTP serves it; `None` when no file of that
/// name is generated (a 404).
async fn generated_cfg(
    st: &BootState,
    path: &str,
    headers: &HeaderMap,
    peer: Option<std::net::IpAddr>,
) -> Option<Response> {
    use bootlane_boot::boot::generated;
    if !generated::is_config_path(path) {
        return None;
    }
    let base = st.settings.borrow().http_base_url.clone();
    let base = base.or_else(|| safe_host(headers).map(|h| format!("http://{h}")))?;
    let (catalog, file) = (st.catalog.clone(), path.to_string());
    let made = tokio::task::spawn_blocking(move || generated::generate(&catalog, &file, &base)).await;
    match made {
        Ok(Ok(Some(g))) => {
            generated::served_event(&st.events, path, &g, "http", peer);
            Some(text(StatusCode::OK, g.text))
        }
        Ok(Ok(None)) => None,
        Ok(Err(e)) => {
            tracing::error!(file = %path, error = %e, "generating a boot-loader configuration failed");
            Some(text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")))
        }
        Err(_) => Some(text(StatusCode::INTERNAL_SERVER_ERROR, "internal error\n".into())),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use axum::body::Body;
    use http_body_util::BodyExt;

    use super::*;

    async fn app(root: PathBuf) -> Router {
        let catalog = BootCatalog::temporary().await;
        router(BootState {
            settings: bootlane_boot::boot::netboot::NetbootSettings::with_root(&root).fixed(),
            catalog,
            events: EventBus::in_memory(),
            serving: Arc::new(AtomicBool::new(true)),
            limiter: None,
            access: AccessGate::open_to_all(),
            netboot: None,
            images: None,
            tasks: None,
            sessions: None,
        })
    }

    async fn get(app: &Router, uri: &str, range: Option<&str>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut b = Request::builder().uri(uri).header("host", "10.77.0.1:8080");
        if let Some(r) = range {
            b = b.header("range", r);
        }
        let resp = app.clone().oneshot(b.body(Body::empty()).unwrap()).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (parts.status, parts.headers, bytes)
    }

    /// One client over its rate gets a 429 with `Retry-After`; another address is not
    /// affected (public routes publish an event per request).
    #[tokio::test]
    async fn boot_routes_are_rate_limited_per_client() {
        let catalog = BootCatalog::temporary().await;
        let app = router(BootState {
            settings: bootlane_boot::boot::netboot::NetbootSettings::with_root(&std::env::temp_dir()).fixed(),
            catalog,
            events: EventBus::in_memory(),
            serving: Arc::new(AtomicBool::new(true)),
            limiter: rate_limiter(1, 3),
            access: AccessGate::open_to_all(),
            netboot: None,
            images: None,
            tasks: None,
            sessions: None,
        });
        let from = |ip: &str| {
            let mut r = Request::builder()
                .uri("/boot/ipxe?mac=52:54:00:00:00:01")
                .header("host", "10.77.0.1:8080")
                .body(Body::empty())
                .unwrap();
            r.extensions_mut().insert(axum::extract::ConnectInfo(
                format!("{ip}:68").parse::<std::net::SocketAddr>().unwrap(),
            ));
            r
        };
        for _ in 0..3 {
            let resp = app.clone().oneshot(from("10.77.0.50")).await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
        }
        let resp = app.clone().oneshot(from("10.77.0.50")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(resp.headers().get(header::RETRY_AFTER).is_some());
        let resp = app.clone().oneshot(from("10.77.0.51")).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "another client is not limited");
        assert!(rate_limiter(0, 10).is_none(), "0 is no limit");
    }

    #[tokio::test]
    async fn script_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("boot");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("ipxe.efi"), b"0123456789").unwrap();
        std::fs::write(tmp.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), root.join("leak")).unwrap();
        let app = app(root).await;

        let (s, h, b) = get(&app, "/boot/ipxe?mac=52-54-00-77-00-42", None).await;
        assert_eq!(s, StatusCode::OK);
        assert!(h[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/plain"));
        let b = String::from_utf8(b).unwrap();
        assert!(b.starts_with("#!ipxe\n"), "{b}");
        assert!(b.contains("echo Bootlane: booting 52:54:00:77:00:42"));

        let (s, _, b) = get(&app, "/boot/ipxe", None).await;
        assert_eq!(s, StatusCode::OK);
        assert!(String::from_utf8(b).unwrap().contains("booting unknown"));
        let (s, _, _) = get(&app, "/boot/ipxe?mac=zz", None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);

        let (s, h, b) = get(&app, "/boot/ipxe.efi", None).await;
        assert_eq!((s, b.as_slice()), (StatusCode::OK, &b"0123456789"[..]));
        // UEFI HTTP boot's media type for an EFI application (UEFI 2.10 §24.7.3.2).
        assert_eq!(h[header::CONTENT_TYPE], "application/efi");
        let (s, h, b) = get(&app, "/boot/ipxe.efi", Some("bytes=2-4")).await;
        assert_eq!(s, StatusCode::PARTIAL_CONTENT);
        assert_eq!(h[header::CONTENT_TYPE], "application/efi");
        assert_eq!(b, b"234");
        assert_eq!(h[header::CONTENT_RANGE], "bytes 2-4/10");

        let (s, _, _) = get(&app, "/boot/missing", None).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, _, _) = get(&app, "/boot/leak", None).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        let (s, _, _) = get(&app, "/boot/..%2Fsecret", None).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
    }

    /// Scripts and files are counted by kind and status, file bytes by status. The
    /// recorder is shared by every test in the binary: before/after values.
    #[tokio::test]
    async fn requests_and_bytes_are_counted() {
        use bootlane_core::metrics::{install, render, test_support::value};
        install();
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("m.efi"), vec![7u8; 1000]).unwrap();
        let app = app(tmp.path().to_path_buf()).await;
        let series = [
            (r#"bootlane_http_boot_requests_total{kind="script",status="200"}"#, 1.0),
            (r#"bootlane_http_boot_requests_total{kind="script",status="400"}"#, 1.0),
            (r#"bootlane_http_boot_requests_total{kind="file",status="200"}"#, 1.0),
            (r#"bootlane_http_boot_requests_total{kind="file",status="404"}"#, 1.0),
            (r#"bootlane_http_boot_bytes_total{status="200"}"#, 1000.0),
            ("bootlane_ipxe_scripts_served_total", 1.0),
        ];
        let text = render();
        let before: Vec<f64> = series.iter().map(|(s, _)| value(&text, s)).collect();
        assert_eq!(
            get(&app, "/boot/ipxe?mac=52:54:00:77:00:42", None).await.0,
            StatusCode::OK
        );
        assert_eq!(get(&app, "/boot/ipxe?mac=zz", None).await.0, StatusCode::BAD_REQUEST);
        assert_eq!(get(&app, "/boot/m.efi", None).await.0, StatusCode::OK);
        assert_eq!(get(&app, "/boot/nothing.efi", None).await.0, StatusCode::NOT_FOUND);
        let text = render();
        for ((s, grew), b) in series.iter().zip(before) {
            assert!(value(&text, s) >= b + grew, "{s} did not grow by {grew}:\n{text}");
        }
    }
}
