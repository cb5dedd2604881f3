//! API tests (house style level b) for hosts, profiles, script versions, the per-MAC
//! iPXE script and the DHCP APIs: through the router, a temporary store, no sockets.

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

struct T {
    app: Router,
    state: AppState,
    cookie: Option<String>,
}

async fn setup_with(mut config: Config) -> T {
    let store = Store::temporary();
    config.data_dir = std::env::temp_dir().join(format!("bootlane-api-{}", rand::random::<u64>()));
    config.dns.enabled = false;
    config.dns.local_domain = Some("lab.test".into());
    let dns = DnsService::start(
        &config,
        &store,
        Arc::new(FakeTable::default()),
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    let state = AppState::new(Arc::new(config), store, dns, Some("pw-admin".into()))
        .await
        .unwrap();
    let mut t = T {
        app: router(state.clone()),
        state,
        cookie: None,
    };
    t.login().await;
    t
}

async fn setup() -> T {
    setup_with(Config::default()).await
}

impl T {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, "10.77.0.1:8080");
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
        let mut req = req.body(body).unwrap();
        req.extensions_mut()
            .insert(ConnectInfo("10.9.9.9:1234".parse::<SocketAddr>().unwrap()));
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, v)
    }

    async fn login(&mut self) {
        let req = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/auth/login")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(
                json!({"username": "admin", "password": "pw-admin"}).to_string(),
            ))
            .unwrap();
        let mut req = req;
        req.extensions_mut()
            .insert(ConnectInfo("10.9.9.9:1234".parse::<SocketAddr>().unwrap()));
        let resp = self.app.clone().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let c = resp.headers()[header::SET_COOKIE].to_str().unwrap();
        self.cookie = Some(c.split(';').next().unwrap().to_string());
    }

    /// Asserts the status and, for errors, that the message contains `needle`.
    async fn expect(&self, method: Method, path: &str, body: Option<Value>, status: StatusCode, needle: &str) -> Value {
        let (s, v) = self.call(method, path, body).await;
        assert_eq!(s, status, "{path}: {v}");
        if !status.is_success() {
            let e = v["error"].as_str().unwrap_or_default();
            assert!(e.contains(needle), "{path}: {e:?} should contain {needle:?}");
        }
        v
    }
}

fn linux_profile(name: &str) -> Value {
    json!({
        "name": name,
        "timeout_secs": 10,
        "entries": [
            {"label": "Install Debian", "type": "linux", "kernel": "debian/linux",
             "initrds": ["debian/initrd.gz"], "cmdline": "auto=true priority=critical", "is_default": true},
            {"label": "Local disk", "type": "local"}
        ]
    })
}

#[tokio::test]
async fn boot_routes_need_a_session() {
    let mut t = setup().await;
    t.cookie = None;
    for p in ["/api/v1/hosts", "/api/v1/profiles", "/api/v1/services/ipxe-script", "/api/v1/leases"] {
        let (s, _) = t.call(Method::GET, p, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{p}");
    }
    // The boot route itself is public.
    let (s, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:00:00:01", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn default_profile_is_seeded_and_protected() {
    let t = setup().await;
    let v = t.expect(Method::GET, "/api/v1/profiles", None, StatusCode::OK, "").await;
    let list = v["data"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    let def = &list[0];
    assert_eq!((&def["name"], &def["is_default"]), (&json!("Default"), &json!(true)));
    assert_eq!(def["entries"][0]["type"], "local");
    assert_eq!(def["entries"][0]["label"], "Boot from local disk");
    let def_id = def["id"].as_u64().unwrap();

    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{def_id}"),
        None,
        StatusCode::CONFLICT,
        "default profile",
    )
    .await;
    t.expect(
        Method::PUT,
        &format!("/api/v1/profiles/{def_id}"),
        Some(json!({"is_default": false})),
        StatusCode::BAD_REQUEST,
        "another profile",
    )
    .await;

    // Making another profile default moves the flag.
    let mut body = linux_profile("Debian");
    body["is_default"] = json!(true);
    let v = t
        .expect(Method::POST, "/api/v1/profiles", Some(body), StatusCode::CREATED, "")
        .await;
    let deb = v["data"]["id"].as_u64().unwrap();
    let v = t.expect(Method::GET, "/api/v1/profiles", None, StatusCode::OK, "").await;
    let defaults: Vec<u64> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["is_default"] == true)
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(defaults, vec![deb]);
    // The old default can now be deleted; the new one cannot.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{def_id}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{deb}"),
        None,
        StatusCode::CONFLICT,
        "default",
    )
    .await;
}

#[tokio::test]
async fn profile_validation() {
    let t = setup().await;
    for (body, needle) in [
        (json!({"name": "x"}), "required"),
        (json!({"name": "x", "entries": []}), "1-50"),
        (json!({"name": "x", "entries": [{"label": "k", "type": "linux"}]}), "needs 'kernel'"),
        (
            json!({"name": "x", "entries": [{"label": "c", "type": "chain", "url": "ftp://a/b"}]}),
            "http/https/tftp",
        ),
        (json!({"name": "x", "entries": [{"label": "c", "type": "chain"}]}), "needs 'url'"),
        (json!({"name": "x", "entries": [{"label": "c", "type": "custom"}]}), "'script'"),
        (
            json!({"name": "x", "entries": [{"label": "l", "type": "local", "url": "http://a"}]}),
            "does not apply",
        ),
        (
            json!({"name": "x", "entries": [{"label": "a\nb", "type": "local"}]}),
            "label",
        ),
        (
            json!({"name": "x", "entries": [{"label": "k", "type": "linux", "kernel": "k", "cmdline": "a\nshell"}]}),
            "cmdline",
        ),
        (json!({"name": "x", "entries": [{"label": "l", "type": "floppy"}]}), "expected shape"),
        (
            json!({"name": "x", "timeout_secs": 99999, "entries": [{"label": "l", "type": "local"}]}),
            "timeout_secs",
        ),
        (
            json!({"name": "x", "entries": [{"label": "a", "type": "local", "is_default": true}, {"label": "b", "type": "local", "is_default": true}]}),
            "at most one",
        ),
    ] {
        t.expect(Method::POST, "/api/v1/profiles", Some(body), StatusCode::BAD_REQUEST, needle)
            .await;
    }
    t.expect(
        Method::POST,
        "/api/v1/profiles",
        Some(linux_profile("Debian")),
        StatusCode::CREATED,
        "",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/profiles",
        Some(linux_profile("debian")),
        StatusCode::CONFLICT,
        "already used",
    )
    .await;
    t.expect(Method::GET, "/api/v1/profiles/999", None, StatusCode::NOT_FOUND, "no profile").await;
}

#[tokio::test]
async fn host_crud_and_conflicts() {
    let t = setup().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(linux_profile("Debian")),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "Node1", "mac": "52-54-00-AA-00-01", "ip": "10.77.0.21",
                "profile_id": pid, "bmc_user": "root", "bmc_password": "secret"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let h = &v["data"];
    let id = h["id"].as_u64().unwrap();
    assert_eq!(
        (&h["name"], &h["mac"], &h["ip"], &h["has_bmc_password"]),
        (&json!("node1"), &json!("52:54:00:aa:00:01"), &json!("10.77.0.21"), &json!(true))
    );
    assert!(h.get("bmc_password").is_none(), "the password is write-only: {h}");

    for (body, status, needle) in [
        (json!({"name": "node1", "mac": "52:54:00:aa:00:02"}), StatusCode::CONFLICT, "node1"),
        (json!({"name": "node2", "mac": "5254.00aa.0001"}), StatusCode::CONFLICT, "52:54:00:aa:00:01"),
        (json!({"name": "node2", "mac": "zz"}), StatusCode::BAD_REQUEST, "not a MAC"),
        (json!({"name": "-bad", "mac": "52:54:00:aa:00:02"}), StatusCode::BAD_REQUEST, "DNS label"),
        (json!({"name": "node2"}), StatusCode::BAD_REQUEST, "required"),
        (
            json!({"name": "node2", "mac": "52:54:00:aa:00:02", "profile_id": 4242}),
            StatusCode::BAD_REQUEST,
            "no such profile",
        ),
        (
            json!({"name": "node2", "mac": "52:54:00:aa:00:02", "ip": "10.1"}),
            StatusCode::BAD_REQUEST,
            "not an IPv4",
        ),
    ] {
        t.expect(Method::POST, "/api/v1/hosts", Some(body), status, needle).await;
    }

    // PUT merges: omitted fields keep their values; null clears.
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/hosts/{id}"),
            Some(json!({"description": "rack 3", "ip": null})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["name"], &v["data"]["profile_id"], &v["data"]["ip"], &v["data"]["description"]),
        (&json!("node1"), &json!(pid), &Value::Null, &json!("rack 3"))
    );
    assert_eq!(v["data"]["has_bmc_password"], true);

    // The profile in use cannot be deleted.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{pid}"),
        None,
        StatusCode::CONFLICT,
        "node1",
    )
    .await;

    // Search and paging.
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(json!({"name": "node2", "mac": "525400aa0002"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    let v = t.expect(Method::GET, "/api/v1/hosts?q=AA-00-02", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["total"], 1);
    assert_eq!(v["data"]["hosts"][0]["name"], "node2");
    let v = t.expect(Method::GET, "/api/v1/hosts?size=1&page=2", None, StatusCode::OK, "").await;
    assert_eq!((&v["data"]["total"], v["data"]["hosts"].as_array().unwrap().len()), (&json!(2), 1));
    t.expect(Method::GET, "/api/v1/hosts?size=0", None, StatusCode::BAD_REQUEST, "size").await;

    t.expect(Method::GET, "/api/v1/hosts/999", None, StatusCode::NOT_FOUND, "no host").await;
    t.expect(Method::PUT, "/api/v1/hosts/999", Some(json!({})), StatusCode::NOT_FOUND, "no host").await;
    t.expect(Method::GET, "/api/v1/hosts/abc", None, StatusCode::BAD_REQUEST, "path").await;
    t.expect(Method::DELETE, &format!("/api/v1/hosts/{id}"), None, StatusCode::OK, "").await;
    t.expect(Method::DELETE, &format!("/api/v1/hosts/{id}"), None, StatusCode::NOT_FOUND, "").await;
    let audit = t.state.audit.list().unwrap();
    assert!(audit.iter().any(|a| a.resource == "host" && a.action == "DELETE"));
}

#[tokio::test]
async fn script_per_mac() {
    let t = setup().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(linux_profile("Debian")),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "node1", "mac": "52:54:00:aa:00:01", "profile_id": pid})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let hid = v["data"]["id"].as_u64().unwrap();

    let (s, v) = t.call(Method::GET, "/boot/ipxe?mac=52-54-00-AA-00-01", None).await;
    assert_eq!(s, StatusCode::OK);
    let script = v.as_str().unwrap();
    assert!(script.starts_with("#!ipxe\necho Bootlane: booting 52:54:00:aa:00:01\n"), "{script}");
    assert!(script.contains("kernel http://10.77.0.1:8080/boot/debian/linux auto=true priority=critical\n"), "{script}");
    assert!(script.contains("initrd http://10.77.0.1:8080/boot/debian/initrd.gz\n"), "{script}");
    assert!(script.contains("choose --timeout 10000 --default e1 target"), "{script}");
    assert!(script.contains("(node1)"), "{script}");

    // boot-config is the same script.
    let (s, v) = t.call(Method::GET, &format!("/api/v1/hosts/{hid}/boot-config"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v.as_str().unwrap(), script);
    t.expect(Method::GET, "/api/v1/hosts/999/boot-config", None, StatusCode::NOT_FOUND, "").await;

    // An unknown MAC gets the default profile.
    let (_, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:09", None).await;
    let other = v.as_str().unwrap();
    assert!(other.contains("echo Bootlane: booting 52:54:00:aa:00:09\n"), "{other}");
    assert!(other.contains("item e1 Boot from local disk") && !other.contains("kernel"), "{other}");

    // A host without profile also gets the default.
    t.expect(
        Method::PUT,
        &format!("/api/v1/hosts/{hid}"),
        Some(json!({"profile_id": null})),
        StatusCode::OK,
        "",
    )
    .await;
    let (_, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:01", None).await;
    assert!(v.as_str().unwrap().contains("Boot from local disk"));
}

#[tokio::test]
async fn ipxe_template_edit() {
    let t = setup().await;
    let v = t
        .expect(Method::GET, "/api/v1/services/ipxe-script", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["source"], "builtin");
    assert_eq!(v["data"]["template"], v["data"]["builtin_template"]);
    t.expect(
        Method::PUT,
        "/api/v1/services/ipxe-script",
        Some(json!({"template": "#!ipxe\n{% for i in items %}"})),
        StatusCode::BAD_REQUEST,
        "does not compile",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/services/ipxe-script",
        Some(json!({"template": "echo hi"})),
        StatusCode::BAD_REQUEST,
        "#!ipxe",
    )
    .await;
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/ipxe-script",
            Some(json!({"template": "#!ipxe\necho Bootlane: booting {{ mac }}\nchain {{ base_url }}/custom/{{ profile }}\n"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["source"], "stored");
    let (_, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:09", None).await;
    assert_eq!(
        v.as_str().unwrap(),
        "#!ipxe\necho Bootlane: booting 52:54:00:aa:00:09\nchain http://10.77.0.1:8080/custom/Default\n"
    );
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/ipxe-script",
            Some(json!({"template": null})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["source"], "builtin");
}

#[tokio::test]
async fn script_versions_diff_and_rollback() {
    let t = setup().await;
    let body = json!({"name": "Tools", "entries": [
        {"label": "Shell", "type": "custom", "script": "echo one\nshell"}
    ]});
    let v = t.expect(Method::POST, "/api/v1/profiles", Some(body), StatusCode::CREATED, "").await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let base = format!("/api/v1/profiles/{pid}");
    let v = t.expect(Method::GET, &format!("{base}/script-versions"), None, StatusCode::OK, "").await;
    let first = v["data"][0].clone();
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert!(first["content"].as_str().unwrap().contains("echo one\nshell"));
    assert_eq!(first["checksum"].as_str().unwrap().len(), 64);
    let v1 = first["id"].as_u64().unwrap();

    // A change of the script stores a version; a change that leaves it alone does not.
    t.expect(
        Method::PUT,
        &base,
        Some(json!({"entries": [{"label": "Shell", "type": "custom", "script": "echo two\nshell"}], "comment": "two"})),
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(Method::PUT, &base, Some(json!({"description": "no script change"})), StatusCode::OK, "")
        .await;
    let v = t.expect(Method::GET, &format!("{base}/script-versions"), None, StatusCode::OK, "").await;
    assert_eq!(v["data"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["data"][0]["comment"], "two");

    let v = t.expect(Method::GET, &format!("{base}/script-diff/{v1}"), None, StatusCode::OK, "").await;
    let diff = v["data"]["diff"].as_str().unwrap();
    assert_eq!(v["data"]["identical"], false);
    assert!(diff.contains("--- version") && diff.contains("+++ current"), "{diff}");
    assert!(diff.contains("\n-echo one\n") && diff.contains("\n+echo two\n"), "{diff}");

    let v = t
        .expect(Method::POST, &format!("{base}/script-rollback/{v1}"), None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["entries"][0]["script"], "echo one\nshell");
    let v = t.expect(Method::GET, &format!("{base}/script-versions"), None, StatusCode::OK, "").await;
    assert_eq!(v["data"].as_array().unwrap().len(), 3);
    assert!(v["data"][0]["comment"].as_str().unwrap().contains("rollback"));
    let v = t.expect(Method::GET, &format!("{base}/script-diff/{v1}"), None, StatusCode::OK, "").await;
    assert_eq!((&v["data"]["identical"], &v["data"]["diff"]), (&json!(true), &json!("")));

    t.expect(
        Method::GET,
        &format!("{base}/script-versions/{v1}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(Method::GET, &format!("{base}/script-versions/9999"), None, StatusCode::NOT_FOUND, "")
        .await;
    t.expect(Method::GET, "/api/v1/profiles/9999/script-versions", None, StatusCode::NOT_FOUND, "")
        .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/profiles/9999/script-rollback/{v1}"),
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
}
