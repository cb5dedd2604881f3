//! The REST API (spec "Endpoints"): everything under `/api/v1`, every answer in the JSON
//! envelope (including 401, 404 for unknown paths, 405, 408, 413, malformed JSON and
//! panics), one router per resource, one [`AppState`], one error type ([`error::ApiError`]).
//! Public routes (login/session, `/status`, the OpenAPI document and the PXE runtime
//! routes under `/boot`, see [`boot`]) sit outside the session layer; everything else is
//! inside it.
//!
//! **Adding a resource**: its API module has `pub fn router() -> OpenApiRouter<AppState>`
//! built with utoipa-axum
//! (`OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get_one, update))`),
//! each handler keeps its `#[utoipa::path]` (full `/api/v1/...` path, `{name}` parameters
//! declared in `params`, payload types only: the envelope, error answers and security are
//! added by [`openapi::finalize`]); then add one `.merge(x::router())` line in
//! [`resources`], to the public or the protected group. The route and its OpenAPI path
//! cannot drift: both come from the annotation.

pub mod access;
pub mod answer_templates;
pub mod auth;
pub mod bmc;
pub mod boot;
pub mod boot_sessions;
pub mod bootloader;
pub mod community;
pub mod dhcp;
pub mod dns;
pub mod doctor;
pub mod error;
pub mod events_api;
pub mod extract;
pub mod files;
pub mod hosts;
pub mod install_tasks;
pub mod list;
pub mod logs;
pub mod netboot;
pub mod network;
pub mod nfs;
pub mod oidc;
pub mod openapi;
pub mod os_images;
pub mod profiles;
pub mod roles;
pub mod scripts;
pub mod services;
pub mod settings_api;
pub mod stats;
pub mod system;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_answers;
#[cfg(test)]
mod tests_boot;
#[cfg(test)]
mod tests_cluster;
#[cfg(test)]
mod tests_contract;
#[cfg(test)]
mod tests_install;
#[cfg(test)]
mod tests_install_service;
#[cfg(test)]
mod tests_logs;
#[cfg(test)]
mod tests_media;
#[cfg(test)]
mod tests_nfs;
#[cfg(test)]
mod tests_os_images;
#[cfg(test)]
mod tests_pxelinux;
#[cfg(test)]
mod tests_roles;
#[cfg(test)]
mod tests_scripts;
#[cfg(test)]
mod tests_scripts_service;
#[cfg(test)]
mod tests_sessions;
#[cfg(test)]
mod tests_store;
#[cfg(test)]
mod tests_tokens;
#[cfg(test)]
mod tests_updates;
pub mod tokens;
pub mod totp;
pub mod ui;
pub mod updates;
pub mod users;
pub mod wol;

use std::{sync::Arc, time::Instant};

use axum::extract::FromRef;
use axum::{
    extract::{MatchedPath, Request},
    http::StatusCode,
    middleware,
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use tower_http::{
    catch_panic::CatchPanicLayer, limit::RequestBodyLimitLayer, timeout::TimeoutLayer, trace::TraceLayer,
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use self::error::ApiError;
use bootlane_boot::{boot::catalog::BootCatalog, inventory::service::HostService};
use bootlane_config::config::Config;
use bootlane_core::{events::EventBus, store::Store, supervisor::Supervisor};
use bootlane_dhcp::dhcp::control::DhcpControl;
use bootlane_dns::dns::service::DnsService;
use bootlane_media::settings::Settings;
use bootlane_tftp::tftp::control::TftpControl;

/// Shared state of every handler: one `Arc` per service, built in one place
/// ([`crate::app::build`]). Handlers take only the service they need through sub-state
/// (the [`axum::extract::FromRef`] impls below); middleware may take the whole state.
/// Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// Validated configuration.
    pub config: Arc<Config>,
    /// The store.
    pub store: Store,
    /// The DNS service.
    pub dns: Arc<DnsService>,
    /// Users and sessions.
    pub auth: Arc<auth::Auth>,
    /// Profiles, script versions and the iPXE script template.
    pub catalog: Arc<BootCatalog>,
    /// Hosts (inventory).
    pub hosts: Arc<HostService>,
    /// Live DHCP administration: leases, reservations, settings, arch map.
    pub dhcp: Arc<DhcpControl>,
    /// Live TFTP settings.
    pub tftp: Arc<TftpControl>,
    /// The event bus (events, SSE, audit log).
    pub events: Arc<EventBus>,
    /// Service lifecycle.
    pub supervisor: Arc<Supervisor>,
    /// Layered settings groups (general, interfaces, netboot).
    pub settings: Arc<Settings>,
    /// Whether the `http-boot` routes serve (shared with the supervisor's unit).
    pub boot_serving: Arc<std::sync::atomic::AtomicBool>,
    /// Process start.
    pub started: Instant,
    /// Logging: level, files, the log-line stream (handlers take it as sub-state).
    pub logs: Arc<bootlane_core::logging::LogControl>,
    /// Sampled activity history for the dashboard charts (handlers take it as sub-state).
    pub activity: Arc<bootlane_dns::stats::Activity>,
    /// The boot root's files.
    pub files: Arc<bootlane_media::media::files::FileService>,
    /// Bootloader analysis over the arch map.
    pub bootloaders: Arc<bootlane_media::media::bootloader::Bootloaders>,
    /// Wake-on-LAN: wakes, history, schedules.
    pub wol: Arc<bootlane_machines::wol::service::WolService>,
    /// The boot doctor.
    pub doctor: Arc<bootlane_doctor::doctor::Doctor>,
    /// Boot sessions: the recorder and the stored sessions.
    pub sessions: Arc<bootlane_sessions::recorder::Sessions>,
    /// Ping and traceroute from the server.
    pub netdiag: Arc<bootlane_machines::netdiag::NetDiag>,
    /// Access control: mode, lists, unauthorized devices, and the gate the protocols call.
    pub access: Arc<bootlane_boot::access::service::AccessService>,
    /// BMC configs and power.
    pub bmc: Arc<bootlane_machines::bmc::service::BmcService>,
    /// User accounts.
    pub users: Arc<users::Users>,
    /// The netboot catalog, overlays and cache.
    pub netboot: Arc<bootlane_install::netboot::NetbootService>,
    /// OS images (sub-state impl in `os_images.rs`).
    pub os_images: Arc<bootlane_media::media::images::OsImageService>,
    /// NFS exports of the boot root.
    pub nfs: Arc<bootlane_media::nfs::service::NfsService>,
    /// Install tasks.
    pub tasks: Arc<bootlane_install::install::service::TaskService>,
    /// Answer templates and site install settings (sub-state impl in `answer_templates.rs`).
    pub answers: Arc<bootlane_install::answers::templates::AnswerTemplates>,
    /// Post-install scripts, baselines and their reports.
    pub scripts: Arc<bootlane_install::scripts::service::ScriptService>,
    /// The community catalog (sub-state impl in `community.rs`).
    pub community: Arc<bootlane_install::community::service::CommunityService>,
    /// Update check and verified downloads (sub-state impl in `updates.rs`).
    pub updates: Arc<bootlane_updates::updates::service::UpdateService>,
}

/// `impl FromRef<AppState> for $ty` returning a clone of `$field`, one line per service.
macro_rules! sub_state {
    ($($(#[$doc:meta])* $ty:ty => $field:ident),* $(,)?) => {$(
        $(#[$doc])*
        impl FromRef<AppState> for $ty {
            fn from_ref(s: &AppState) -> Self {
                s.$field.clone()
            }
        }
    )*};
}

// Sub-state (house style item 16): a handler names the one service it uses,
// `State(dns): State<Arc<DnsService>>` (several `State` extractors when it needs two),
// never the whole `AppState`. Middleware that needs several (the session guard) keeps it.
// `Arc<LogControl>` is in `logs.rs`.
sub_state!(
    Arc<Config> => config,
    Store => store,
    Arc<DnsService> => dns,
    Arc<auth::Auth> => auth,
    Arc<BootCatalog> => catalog,
    Arc<HostService> => hosts,
    Arc<DhcpControl> => dhcp,
    Arc<TftpControl> => tftp,
    Arc<EventBus> => events,
    Arc<Supervisor> => supervisor,
    Arc<Settings> => settings,
    /// The process start (uptime).
    Instant => started,
    /// Wake-on-LAN.
    Arc<bootlane_machines::wol::service::WolService> => wol,
    /// Network diagnostics.
    Arc<bootlane_machines::netdiag::NetDiag> => netdiag,
    /// Access control.
    Arc<bootlane_boot::access::service::AccessService> => access,
    /// BMC configs and power.
    Arc<bootlane_machines::bmc::service::BmcService> => bmc,
    /// User accounts.
    Arc<users::Users> => users,
    /// The netboot catalog.
    Arc<bootlane_install::netboot::NetbootService> => netboot,
    /// NFS exports.
    Arc<bootlane_media::nfs::service::NfsService> => nfs,
    /// Scripts and baselines.
    Arc<bootlane_install::scripts::service::ScriptService> => scripts,
);

/// The OpenAPI document's header; paths and schemas come from the resource routers
/// ([`resources`]), finished by [`openapi::finalize`]. Use [`openapi_doc`] for the whole document.
#[derive(OpenApi)]
#[openapi(info(
    title = "Bootlane API",
    version = "1",
    description = "Network boot (PXE) server with a built-in DNS server. Every answer is {success, data} or {success: false, error}."
))]
pub struct ApiDoc;

async fn fallback(req: Request) -> ApiError {
    ApiError::NotFound(format!(
        "no endpoint {} {}; see GET /api/v1/openapi.json for the list",
        req.method(),
        req.uri().path()
    ))
}

/// Rewrites the bare answers of axum (405) and of the outer layers (413 from the body
/// limit, 408 from the timeout) into the error envelope.
async fn envelope_405(req: Request, next: middleware::Next) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let resp = next.run(req).await;
    if resp.status() == StatusCode::METHOD_NOT_ALLOWED && resp.headers().get(axum::http::header::CONTENT_TYPE).is_none()
    {
        let allow = resp.headers().get(axum::http::header::ALLOW).cloned();
        let mut r = ApiError::MethodNotAllowed(format!(
            "{method} is not allowed on {path}; allowed: {}",
            allow.as_ref().and_then(|a| a.to_str().ok()).unwrap_or("-")
        ))
        .into_response();
        if let Some(a) = allow {
            r.headers_mut().insert(axum::http::header::ALLOW, a);
        }
        return r;
    }
    if resp.status() == StatusCode::PAYLOAD_TOO_LARGE
        && resp
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_none_or(|c| c != "application/json")
    {
        return ApiError::PayloadTooLarge("the request body is larger than [api] max_body_bytes".into())
            .into_response();
    }
    if resp.status() == StatusCode::REQUEST_TIMEOUT && resp.headers().get(axum::http::header::CONTENT_TYPE).is_none() {
        return (
            StatusCode::REQUEST_TIMEOUT,
            axum::Json(serde_json::json!({"success": false, "error": "the request took too long and was cancelled"})),
        )
            .into_response();
    }
    resp
}

fn panic_envelope(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response()
}

/// Every `/api/v1` resource router with its OpenAPI paths, by guard.
pub struct Resources {
    /// No authentication (login, session, status).
    pub public: OpenApiRouter<AppState>,
    /// No session: the routes machines call while they install (answer files, progress
    /// reports, baseline bundles and reports), each checking its own token. Served on the
    /// boot listener when the listeners are split (see [`routers`]).
    pub machine: OpenApiRouter<AppState>,
    /// For logged-in users: behind the login check ([`auth::require_session`]).
    pub protected: OpenApiRouter<AppState>,
    /// Behind the scrape guard ([`system::require_scrape_auth`]: session, scrape token
    /// or `[metrics] public`).
    pub scraped: OpenApiRouter<AppState>,
}

/// Every `/api/v1` resource router. A new resource adds one `.merge(x::router())` line
/// here (see the module docs).
pub fn resources() -> Resources {
    Resources {
        public: OpenApiRouter::new()
            .merge(auth::router())
            .merge(oidc::router())
            .merge(system::public_router()),
        machine: OpenApiRouter::new()
            .merge(install_tasks::public_router())
            .merge(scripts::public_router()),
        protected: OpenApiRouter::new()
            .merge(dns::router())
            .merge(dhcp::router())
            .merge(hosts::router())
            .merge(profiles::router())
            .merge(system::router())
            .merge(events_api::router())
            .merge(services::router())
            .merge(settings_api::router())
            .merge(logs::router())
            .merge(stats::router())
            .merge(files::router())
            .merge(bootloader::router())
            .merge(doctor::router())
            .merge(boot_sessions::router())
            .merge(wol::router())
            .merge(network::router())
            .merge(access::router())
            .merge(bmc::router())
            .merge(users::router())
            .merge(tokens::router())
            .merge(totp::router())
            .merge(netboot::router())
            .merge(os_images::router())
            .merge(nfs::router())
            .merge(install_tasks::router())
            .merge(answer_templates::router())
            .merge(scripts::router())
            .merge(community::router())
            .merge(updates::router()),
        scraped: system::metrics_router(),
    }
}

/// Merges the resource routers (with their guards as route layers when `state` is
/// given), splits once into the axum routers (the management routes, the machine
/// routes) and the finished OpenAPI document of both ([`openapi::finalize`]).
fn split(state: Option<&AppState>) -> (Router<AppState>, Router<AppState>, utoipa::openapi::OpenApi) {
    let Resources {
        public,
        machine,
        mut protected,
        mut scraped,
    } = resources();
    openapi::protect(protected.get_openapi_mut());
    openapi::protect(scraped.get_openapi_mut());
    if let Some(state) = state {
        let guard = auth::Guard {
            state: state.clone(),
            roles: Arc::new(roles::RouteRoles::from_doc(protected.get_openapi_mut())),
        };
        protected = protected.route_layer(middleware::from_fn_with_state(guard, auth::require_session));
        scraped = scraped.route_layer(middleware::from_fn_with_state(
            state.clone(),
            system::require_scrape_auth,
        ));
    }
    let (machine, machine_doc) = machine.split_for_parts();
    let (api, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(public)
        .merge(protected)
        .merge(scraped)
        .split_for_parts();
    doc.merge(machine_doc);
    openapi::finalize(&mut doc);
    (api, machine, doc)
}

/// The OpenAPI document `GET /api/v1/openapi.json` serves.
pub fn openapi_doc() -> utoipa::openapi::OpenApi {
    split(None).2
}

/// The application split by listener (`[api] boot_listen`), each with the
/// envelope-producing fallbacks and layers of [`router`].
pub struct Routers {
    /// The management listener: `/api/v1` (but the machine routes), the OpenAPI
    /// document and the web UI. Anything else is the UI's fallback (404 envelope under
    /// `/api/`).
    pub management: Router,
    /// The boot listener: `/boot/...` and the machine routes under `/api/v1` (see
    /// [`Resources::machine`]); anything else is a 404 envelope.
    pub boot: Router,
}

/// The whole application on one listener: `/api/v1/...`, `/boot/...` and the web UI,
/// with the envelope-producing fallbacks and layers.
pub fn router(state: AppState) -> Router {
    let (api, machine, boot) = parts(&state);
    with_layers(
        Router::new()
            .merge(api)
            .merge(machine)
            .merge(boot)
            .fallback(ui::fallback),
        state,
    )
}

/// The application split in two (see [`Routers`]); each refuses the other's routes with 404.
pub fn routers(state: AppState) -> Routers {
    let (api, machine, boot) = parts(&state);
    Routers {
        management: with_layers(Router::new().merge(api).fallback(management_fallback), state.clone()),
        boot: with_layers(Router::new().merge(machine).merge(boot).fallback(fallback), state),
    }
}

/// The management listener's fallback: 404 for the boot listener's paths (`/boot`,
/// `/boot/...`), the web UI (which answers its own paths with the single-page app)
/// for anything else.
async fn management_fallback(req: Request) -> Response {
    let p = req.uri().path();
    if p == "/boot" || p.starts_with("/boot/") {
        return fallback(req).await.into_response();
    }
    ui::fallback(req).await
}

/// The management API (with `/api/v1/openapi.json`), the machine routes and the boot routes.
fn parts(state: &AppState) -> (Router<AppState>, Router<AppState>, Router<AppState>) {
    bootlane_core::metrics::install();
    let (api, machine, doc) = split(Some(state));
    let doc = Arc::new(doc);
    let api = api.route(
        "/api/v1/openapi.json",
        get(move || async move { axum::Json(doc.as_ref().clone()) }),
    );
    let boot = boot::router(boot::BootState {
        settings: state.settings.netboot_watch(),
        catalog: state.catalog.clone(),
        events: state.events.clone(),
        serving: state.boot_serving.clone(),
        limiter: boot::rate_limiter(state.config.boot.rate_per_client, state.config.boot.rate_burst),
        access: state.access.gate(),
        netboot: Some(state.netboot.clone()),
        images: Some(state.os_images.clone()),
        tasks: Some(state.tasks.clone()),
        sessions: state.config.boot_sessions.enabled.then(|| state.sessions.clone()),
    });
    (api, machine, boot)
}

/// The layers every listener's router gets, around `routes` (which carry their fallback).
fn with_layers(routes: Router<AppState>, state: AppState) -> Router {
    let timeout = std::time::Duration::from_secs(state.config.api.request_timeout_secs);
    let max_body = state.config.api.max_body_bytes;
    // Layer order matters: the envelope rewrite sits outside the body limit and the
    // timeout, whose own answers (413 `length limit exceeded`, bare 408) it rewrites.
    routes
        .with_state(state)
        .layer(middleware::from_fn(move |req, next| {
            limits(max_body, timeout, req, next)
        }))
        .layer(CatchPanicLayer::custom(panic_envelope))
        .layer(middleware::from_fn(envelope_405))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let path = req
                .extensions()
                .get::<MatchedPath>()
                .map(MatchedPath::as_str)
                .unwrap_or("-");
            tracing::debug_span!("http", method = %req.method(), path)
        }))
        .layer(middleware::from_fn(track_metrics))
}

/// The body limit (`[api] max_body_bytes`) and the request timeout, for every route but
/// the streamed uploads ([`files::UNLIMITED_ROUTES`], matched by route template), which
/// bound themselves (`[files] max_upload_bytes`, free space). Same layers as before, in
/// the same order (the limit inside the timeout), only skipped for those routes.
async fn limits(max_body: usize, timeout: std::time::Duration, req: Request, next: middleware::Next) -> Response {
    let unlimited = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| files::UNLIMITED_ROUTES.contains(&p.as_str()));
    if unlimited {
        return next.run(req).await;
    }
    use axum::body::Body;
    let svc = tower::ServiceBuilder::new()
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .map_response(|r: Response<_>| r.map(Body::new))
        .layer(RequestBodyLimitLayer::new(max_body))
        .map_request(|r: Request<_>| r.map(Body::new))
        .service(next);
    match tower::ServiceExt::oneshot(svc, req).await {
        Ok(resp) => resp.map(Body::new),
        Err(never) => match never {},
    }
}

/// Counts every request in [`bootlane_core::metrics::API_REQUESTS`] by method, matched route
/// template (`unmatched` for unknown paths, so raw paths never become labels) and final
/// status, and records its latency in [`bootlane_core::metrics::API_DURATION`]. Outermost
/// layer, so the status is the one the client gets (405/408/413 rewrites, panics).
async fn track_metrics(req: Request, next: middleware::Next) -> Response {
    use axum::http::Method;
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let m = req.method();
    // Extension methods would let a client mint label values; fold them into `other`.
    let method = if [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ]
    .contains(m)
    {
        m.as_str().to_owned()
    } else {
        "other".to_owned()
    };
    let t0 = Instant::now();
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    metrics::counter!(bootlane_core::metrics::API_REQUESTS, "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!(bootlane_core::metrics::API_DURATION, "method" => method, "route" => route)
        .record(t0.elapsed().as_secs_f64());
    resp
}
