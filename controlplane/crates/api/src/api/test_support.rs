//! Shared set-up and client for router tests (house style level b), used by every
//! `api/tests*.rs`: a temporary store, a fake data plane recording the last projection,
//! DNS sockets off, and every service built by [`crate::app::build`] exactly as in the
//! server ([`state`]); [`T`] drives the whole router with `oneshot`. Nothing is bound.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    body::Body,
    extract::ConnectInfo,
    http::{header, HeaderMap, Method, Request, StatusCode},
    response::Response,
    Router,
};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::AppState;
use bootlane_config::config::Config;
use bootlane_core::store::Store;
use bootlane_dns::dataplane::FakeTable;

/// The admin password of test states.
pub(crate) const ADMIN_PASSWORD: &str = "pw-admin-Tq8vWz3nLp";

/// A state for `config` (its data dir is replaced by a fresh temporary one; DNS is not
/// bound; the local domain is `lab.test` unless set), plus the fake data plane.
pub(crate) async fn state(config: Config) -> (AppState, Arc<FakeTable>) {
    state_on(config, test_store().await).await
}

/// The store a test runs on: a temporary sled store, or with `BOOTLANE_TEST_STORE=postgres`
/// (the API tests run against both backends: `cargo xtask test` runs them both ways) a new
/// database on one throwaway PostgreSQL cluster shared by the test process, stopped and
/// removed when the process exits.
pub(crate) async fn test_store() -> Store {
    if std::env::var("BOOTLANE_TEST_STORE").as_deref() != Ok("postgres") {
        return Store::temporary();
    }
    static CLUSTER: std::sync::OnceLock<bootlane_core::store::pg::throwaway::Cluster> = std::sync::OnceLock::new();
    extern "C" fn stop_cluster() {
        if let Some(c) = CLUSTER.get() {
            let _ = c.stop();
            let _ = std::fs::remove_dir_all(c.dir());
        }
    }
    let cluster = CLUSTER.get_or_init(|| {
        let c = bootlane_core::store::pg::throwaway::Cluster::start().expect("a throwaway PostgreSQL cluster");
        // SAFETY: registers a plain function with no arguments to run at process exit.
        unsafe { libc::atexit(stop_cluster) };
        c
    });
    let db = format!("api_{}", rand::random::<u64>());
    let url = cluster.create_database(&db).await.expect("a test database");
    bootlane_core::store::test_support::pg_node(cluster, &url).await
}

/// The directory under which [`state_on`] makes data directories: one per test process,
/// removed when the process exits (the states it serves have no owner to drop them).
fn scratch_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove_scratch_dir() {
        if let Some(d) = DIR.get() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    DIR.get_or_init(|| {
        // SAFETY: registers a plain function with no arguments to run at process exit.
        unsafe { libc::atexit(remove_scratch_dir) };
        std::env::temp_dir().join(format!("bootlane-api-{}", std::process::id()))
    })
}

/// [`state`] over a given store (a node of a shared PostgreSQL store, say).
pub(crate) async fn state_on(mut config: Config, store: Store) -> (AppState, Arc<FakeTable>) {
    let store = store.for_node(&config.server.node_name()).await.unwrap();
    if config.data_dir == Config::default().data_dir {
        config.data_dir = scratch_dir().join(rand::random::<u64>().to_string());
    }
    std::fs::create_dir_all(&config.data_dir).unwrap();
    let logs = bootlane_core::logging::LogControl::for_tests(&config.data_dir.join("logs"));
    logs.attach(&store, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    config.dns.enabled = false;
    if config.dns.local_domain.is_none() {
        config.dns.local_domain = Some("lab.test".into());
    }
    let fake = Arc::new(FakeTable::default());
    let state = crate::app::build(
        Arc::new(config),
        store,
        fake.clone(),
        Some(ADMIN_PASSWORD.into()),
        logs,
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    // HTTP boot answers in router tests as in a running server.
    state
        .supervisor
        .act("http-boot", bootlane_core::supervisor::Action::Start)
        .await
        .unwrap();
    (state, fake)
}

/// The router-test client (house style level b; one test-support module for router tests):
/// the whole application as the server builds it, driven with `oneshot` (no sockets), with
/// the session cookie of [`T::login`] and an optional `Host`.
pub(crate) struct T {
    /// The application ([`super::router`]).
    pub(crate) app: Router,
    /// Its state, for reaching services directly (lease tables, the log control...).
    pub(crate) state: AppState,
    /// The fake data plane (the last DNS projection).
    pub(crate) fake: Arc<FakeTable>,
    /// `bootlane_session=...` after [`T::login`]; sent with every request.
    pub(crate) cookie: Option<String>,
    /// `Authorization: Bearer` credential sent with every request (an API token).
    pub(crate) bearer: Option<String>,
    /// `Host` header sent with every request (the boot tests build URLs from it).
    pub(crate) host: Option<&'static str>,
    /// The data directory when the client made it (removed on drop).
    _dir: Option<tempfile::TempDir>,
}

/// A client over the default configuration, not logged in.
pub(crate) async fn setup() -> T {
    app(Config::default()).await
}

/// [`setup`] with the configuration changed by `f` first.
pub(crate) async fn setup_with(f: impl FnOnce(&mut Config)) -> T {
    let mut config = Config::default();
    f(&mut config);
    app(config).await
}

/// A client over `config`, not logged in. A default data directory is replaced by a
/// fresh temporary one that lives as long as the client.
pub(crate) async fn app(config: Config) -> T {
    app_on(config, test_store().await).await
}

/// [`app`] over a given store.
pub(crate) async fn app_on(mut config: Config, store: Store) -> T {
    let mut dir = None;
    if config.data_dir == Config::default().data_dir {
        let d = tempfile::tempdir().unwrap();
        config.data_dir = d.path().to_path_buf();
        dir = Some(d);
    }
    let (state, fake) = state_on(config, store).await;
    T {
        app: super::router(state.clone()),
        state,
        fake,
        cookie: None,
        bearer: None,
        host: None,
        _dir: dir,
    }
}

impl T {
    /// A request from `10.9.9.9:1234` with the cookie, the `Host` and, for a body, JSON.
    pub(crate) fn request(&self, method: Method, path: &str, body: Option<Value>) -> Request<Body> {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        if let Some(b) = &self.bearer {
            req = req.header(header::AUTHORIZATION, format!("Bearer {b}"));
        }
        if let Some(h) = self.host {
            req = req.header(header::HOST, h);
        }
        let body = match body {
            Some(b) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).unwrap();
        req.extensions_mut().insert(ConnectInfo(peer()));
        req
    }

    /// Sends `req` (from `10.9.9.9:1234` unless it says otherwise) and returns the
    /// response unread (SSE streams).
    pub(crate) async fn send(&self, mut req: Request<Body>) -> Response {
        if req.extensions().get::<ConnectInfo<SocketAddr>>().is_none() {
            req.extensions_mut().insert(ConnectInfo(peer()));
        }
        self.app.clone().oneshot(req).await.unwrap()
    }

    /// Sends `req` and reads the whole answer: status, headers, and the body as JSON (a
    /// JSON string holding the text when it is not JSON).
    pub(crate) async fn raw(&self, req: Request<Body>) -> (StatusCode, HeaderMap, Value) {
        let resp = self.send(req).await;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, headers, v)
    }

    /// [`T::request`] then [`T::raw`].
    pub(crate) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, HeaderMap, Value) {
        self.raw(self.request(method, path, body)).await
    }

    /// Calls and asserts the status and, for errors, that the message contains
    /// `needle`; returns the answer.
    pub(crate) async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        status: StatusCode,
        needle: &str,
    ) -> Value {
        let (s, _, v) = self.call(method, path, body).await;
        assert_eq!(s, status, "{path}: {v}");
        if !status.is_success() {
            assert!(
                is_error(&v, needle),
                "{path}: {v} should be an error containing {needle:?}"
            );
        }
        v
    }

    /// Logs in as `admin` and keeps the cookie (checking its flags).
    pub(crate) async fn login(&mut self) {
        let (s, h, v) = self
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "admin", "password": ADMIN_PASSWORD})),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let c = h.get(header::SET_COOKIE).unwrap().to_str().unwrap();
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Path=/"));
        self.cookie = Some(c.split(';').next().unwrap().to_string());
    }
}

/// The client address of test requests.
fn peer() -> SocketAddr {
    "10.9.9.9:1234".parse().unwrap()
}

/// True for the error envelope with a non-empty message.
pub(crate) fn is_error_envelope(v: &Value) -> bool {
    is_error(v, "")
}

/// True for the error envelope whose message contains `needle` (and is not empty).
pub(crate) fn is_error(v: &Value, needle: &str) -> bool {
    v["success"] == false && v["error"].as_str().is_some_and(|e| !e.is_empty() && e.contains(needle))
}

/// Reads an SSE body until it holds `events` whole events (blank-line terminated);
/// 5 s per frame at most.
pub(crate) async fn sse_events(body: &mut Body, events: usize) -> String {
    let mut buf = String::new();
    while buf.matches("\n\n").count() < events {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("an SSE event within 5 s")
            .expect("the stream is open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
    buf
}

#[tokio::test]
async fn the_test_store_is_the_backend_asked_for() {
    let t = app(Config::default()).await;
    let want = match std::env::var("BOOTLANE_TEST_STORE").as_deref() {
        Ok("postgres") => "postgres",
        _ => "sled",
    };
    assert_eq!(t.state.store.backend_name(), want);
}

/// The followers the server registers for `state` ([`crate::app::followers`]).
pub(crate) fn followers(state: &AppState) -> bootlane_cluster::Followers {
    crate::app::followers(state)
}
