//! API tests through the router (house style level b): no sockets, no root; a temporary
//! store and a fake data plane that records the last projection.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    body::Body,
    extract::ConnectInfo,
    http::{header, Method, Request, StatusCode},
    Router,
};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{router, AppState};
use crate::{config::Config, dataplane::FakeTable, dns::service::DnsService, store::Store};

pub(super) struct T {
    pub(super) app: Router,
    fake: Arc<FakeTable>,
    pub(super) cookie: Option<String>,
}

pub(super) async fn setup() -> T {
    let store = Store::temporary();
    let mut config = Config {
        data_dir: std::env::temp_dir().join(format!("bootlane-api-{}", rand::random::<u64>())),
        ..Default::default()
    };
    config.dns.enabled = false;
    config.dns.local_domain = Some("lab.test".into());
    let fake = Arc::new(FakeTable::default());
    let dns = DnsService::start(
        &config,
        &store,
        fake.clone(),
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    let state = AppState::new(Arc::new(config), store, dns, Some("pw-admin".into()))
        .await
        .unwrap();
    T {
        app: router(state),
        fake,
        cookie: None,
    }
}

impl T {
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, axum::http::HeaderMap, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c);
        }
        let body = match body {
            Some(b) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        self.raw(req.body(body).unwrap()).await
    }

    pub(super) async fn raw(&self, mut req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Value) {
        req.extensions_mut()
            .insert(ConnectInfo("10.9.9.9:1234".parse::<SocketAddr>().unwrap()));
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, headers, v)
    }

    pub(super) async fn login(&mut self) {
        let (s, h, v) = self
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "admin", "password": "pw-admin"})),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let c = h.get(header::SET_COOKIE).unwrap().to_str().unwrap();
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.contains("Path=/"));
        self.cookie = Some(c.split(';').next().unwrap().to_string());
    }
}

pub(super) fn is_error_envelope(v: &Value) -> bool {
    v["success"] == false && v["error"].as_str().is_some_and(|e| !e.is_empty())
}

#[tokio::test]
async fn protected_routes_need_a_session() {
    let mut t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(is_error_envelope(&v));
    let (s, _, v) = t.call(Method::GET, "/api/v1/status", None).await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)));
    let (_, _, v) = t.call(Method::GET, "/api/v1/auth/session", None).await;
    assert_eq!(v["data"]["authenticated"], false);
    t.login().await;
    let (_, _, v) = t.call(Method::GET, "/api/v1/auth/session", None).await;
    assert_eq!(
        (&v["data"]["authenticated"], &v["data"]["username"]),
        (&json!(true), &json!("admin"))
    );
    let (s, _, _) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = t.call(Method::POST, "/api/v1/auth/logout", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
}

#[tokio::test]
async fn failed_logins_are_throttled() {
    let t = setup().await;
    for _ in 0..5 {
        let (s, _, v) = t
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "admin", "password": "nope"})),
            )
            .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(is_error_envelope(&v));
    }
    let (s, h, v) = t
        .call(
            Method::POST,
            "/api/v1/auth/login",
            Some(json!({"username": "admin", "password": "pw-admin"})),
        )
        .await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS);
    assert!(h.get(header::RETRY_AFTER).is_some() && is_error_envelope(&v));
}

#[tokio::test]
async fn record_crud_validation_and_projection() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "Host1", "type": "A", "value": "10.0.0.11"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["data"]["id"].as_u64().unwrap();
    assert_eq!(
        (&v["data"]["fqdn"], &v["data"]["ttl"], &v["data"]["auto"]),
        (&json!("host1.lab.test."), &json!(300), &json!(false))
    );
    // The projection reached the data plane before the API answered.
    let has = t.fake.last.lock().unwrap().entries.iter().any(|(k, a)| {
        k.qname[..k.qname_len as usize] == *b"\x05host1\x03lab\x04test\x00" && a.addrs[0][..4] == [10, 0, 0, 11]
    });
    assert!(has);
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "host1", "type": "A", "value": "10.0.0.11"})),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(is_error_envelope(&v));
    for (body, needle) in [
        (json!({"name": "h", "type": "A", "value": "fd00::1"}), "IPv4"),
        (json!({"name": "h", "type": "AAAA", "value": "10.0.0.1"}), "IPv6"),
        (
            json!({"name": "h", "type": "SRV", "value": "x"}),
            "A, AAAA, CNAME, TXT, MX",
        ),
        (json!({"name": "a..b", "type": "A", "value": "10.0.0.1"}), "empty label"),
        (
            json!({"name": "host1", "type": "CNAME", "value": "other"}),
            "CNAME cannot coexist",
        ),
        (json!({"type": "A", "value": "10.0.0.1"}), "'name' is required"),
        (
            json!({"name": "h", "type": "A", "value": "10.0.0.1", "subnet": "nope"}),
            "subnet",
        ),
        (
            json!({"name": "h", "type": "A", "value": "10.0.0.1", "bogus": 1}),
            "unknown field",
        ),
    ] {
        let (s, _, v) = t.call(Method::POST, "/api/v1/dns/records", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{body} -> {v}");
    }
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "@", "type": "MX", "value": "20 mail.example.com"})),
        )
        .await;
    assert_eq!((s, &v["data"]["priority"]), (StatusCode::CREATED, &json!(20)));
    let (s, _, v) = t
        .call(
            Method::PUT,
            &format!("/api/v1/dns/records/{id}"),
            Some(json!({"value": "10.0.0.12", "ttl": 60})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["value"], &v["data"]["ttl"], &v["data"]["name"]),
        (&json!("10.0.0.12"), &json!(60), &json!("host1"))
    );
    let (_, _, v) = t
        .call(Method::GET, "/api/v1/dns/records?type=A&q=host&size=1&page=1", None)
        .await;
    assert_eq!(
        (
            v["data"]["total"].as_u64(),
            v["data"]["records"].as_array().unwrap().len()
        ),
        (Some(1), 1)
    );
    assert_eq!(v["data"]["local_domain"], "lab.test");
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records?type=SRV", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v));
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records/abc", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v));
    let (s, _, _) = t.call(Method::DELETE, &format!("/api/v1/dns/records/{id}"), None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, v) = t.call(Method::GET, &format!("/api/v1/dns/records/{id}"), None).await;
    assert!(s == StatusCode::NOT_FOUND && is_error_envelope(&v));
    // Auto-records are listed and protected.
    let (_, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    let auto: Vec<&Value> = v["data"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["auto"] == true)
        .collect();
    assert!(
        auto.iter().any(|r| r["name"] == "@") && auto.iter().any(|r| r["name"] == "bootlane"),
        "{v}"
    );
    let (s, _, _) = t
        .call(Method::DELETE, &format!("/api/v1/dns/records/{}", auto[0]["id"]), None)
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, _, v) = t
        .call(Method::GET, "/api/v1/audit-logs?resource=dns_record", None)
        .await;
    assert!(v["data"]["entries"].as_array().unwrap().len() >= 3);
}

#[tokio::test]
async fn settings_validate_and_apply_live() {
    let mut t = setup().await;
    t.login().await;
    for (body, needle) in [
        (json!({"port": 0}), "port"),
        (json!({"port": 70000}), "port"),
        (json!({"upstream": "1.1.1.1, bad_host!"}), "bad_host!"),
        (json!({"upstream": "no-such-host.invalid"}), "does not resolve"),
        (json!({"local_domain": "bad domain"}), "local_domain"),
        (json!({"listen": ["nope"]}), "nope"),
    ] {
        let (s, _, v) = t.call(Method::PUT, "/api/v1/services/dns", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{body} -> {v}");
    }
    t.call(
        Method::POST,
        "/api/v1/dns/records",
        Some(json!({"name": "host1", "type": "A", "value": "10.0.0.11"})),
    )
    .await;
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/services/dns",
            Some(json!({"local_domain": "Other.Lab", "upstream": "127.0.0.1:5300 [::1]"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["local_domain"], &v["data"]["upstream"]),
        (&json!("other.lab"), &json!("127.0.0.1:5300 [::1]"))
    );
    let (_, _, v) = t.call(Method::GET, "/api/v1/dns/records?name=host1", None).await;
    assert_eq!(v["data"]["records"][0]["fqdn"], "host1.other.lab.");
    let (_, _, v) = t.call(Method::GET, "/api/v1/services/dns", None).await;
    assert_eq!(
        (&v["data"]["enabled"], &v["data"]["running"]),
        (&json!(false), &json!(false))
    );
    assert!(v["data"]["xdp"].is_object());
}

#[tokio::test]
async fn every_failure_uses_the_envelope() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/no/such/thing", None).await;
    assert!(s == StatusCode::NOT_FOUND && is_error_envelope(&v));
    let (s, _, v) = t.call(Method::PATCH, "/api/v1/dns/records", None).await;
    assert!(s == StatusCode::METHOD_NOT_ALLOWED && is_error_envelope(&v), "{s} {v}");
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from("{not json"))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v), "{s} {v}");
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from("{}"))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(
        s == StatusCode::UNSUPPORTED_MEDIA_TYPE && is_error_envelope(&v),
        "{s} {v}"
    );
    let big = format!("{{\"name\":\"{}\"}}", "a".repeat(2 << 20));
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from(big))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(s == StatusCode::PAYLOAD_TOO_LARGE && is_error_envelope(&v), "{s} {v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/openapi.json", None).await;
    assert_eq!(s, StatusCode::OK);
    for p in [
        "/api/v1/dns/records",
        "/api/v1/dns/records/{id}",
        "/api/v1/services/dns",
        "/api/v1/auth/login",
        "/api/v1/version",
    ] {
        assert!(v["paths"][p].is_object(), "openapi lacks {p}");
    }
    let (_, _, v) = t.call(Method::GET, "/api/v1/version", None).await;
    assert!(
        v["data"]["version"].is_string() && v["data"]["git_commit"].is_string() && v["data"]["build_date"].is_string()
    );
    let (s, h, v) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h
        .get(header::CONTENT_TYPE)
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(v.as_str().unwrap().contains("bootlane_dns_xdp_answered_total"));
}
