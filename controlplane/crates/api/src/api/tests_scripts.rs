//! Router tests of `/scripts`, `/baselines` and the machines' pull and report routes:
//! CRUD with named 400s and 409s, the session requirement, assignment through hosts and
//! profiles, and the public side: one refusal for a wrong token and an unknown task that
//! says nothing, the JSON and the bundles for the right token, reports in the host's list
//! and as events.

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};
use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::test_support::{setup, T};

const MAC: &str = "52:54:00:13:13:01";

async fn created(t: &T, path: &str, body: Value) -> u64 {
    t.expect(Method::POST, path, Some(body), StatusCode::CREATED, "").await["data"]["id"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn crud_names_bad_fields_and_guards_what_is_used() {
    let mut t = setup().await;
    t.expect(Method::GET, "/api/v1/scripts", None, StatusCode::UNAUTHORIZED, "")
        .await;
    t.login().await;
    for (bad, needle) in [
        (json!({"name": "x", "content": "echo"}), "'type'"),
        (json!({"name": "x", "type": "perl", "content": "echo"}), "type"),
        (
            json!({"name": "x", "type": "sh", "content": "echo {% if %}"}),
            "not a valid template",
        ),
        (
            json!({"name": "x", "type": "sh", "content": "echo", "colour": 1}),
            "colour",
        ),
        (json!({"name": "", "type": "sh", "content": "echo"}), "'name'"),
    ] {
        t.expect(
            Method::POST,
            "/api/v1/scripts",
            Some(bad),
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    let s = created(
        &t,
        "/api/v1/scripts",
        json!({"name": "hello", "type": "sh", "content": "echo hi\n"}),
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/scripts",
        Some(json!({"name": "HELLO", "type": "bash", "content": "echo"})),
        StatusCode::CONFLICT,
        "exists already",
    )
    .await;
    // A change stores version 2; the diff and the rollback work through the API.
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/scripts/{s}"),
            Some(json!({"content": "echo bye\n"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["version"], 2);
    let d = t
        .expect(
            Method::GET,
            &format!("/api/v1/scripts/{s}/diff/1"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert!(d["data"]["diff"].as_str().unwrap().contains("+echo bye"), "{d}");
    let v = t
        .expect(
            Method::GET,
            &format!("/api/v1/scripts/{s}/versions"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    t.expect(
        Method::GET,
        &format!("/api/v1/scripts/{s}/versions/7"),
        None,
        StatusCode::NOT_FOUND,
        "no version 7",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            &format!("/api/v1/scripts/{s}/rollback/1"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (v["data"]["version"].as_u64(), v["data"]["content"].as_str()),
        (Some(3), Some("echo hi\n"))
    );

    t.expect(
        Method::POST,
        "/api/v1/baselines",
        Some(json!({"name": "b", "script_ids": [s, s]})),
        StatusCode::BAD_REQUEST,
        "twice",
    )
    .await;
    let b = created(&t, "/api/v1/baselines", json!({"name": "web", "script_ids": [s]})).await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/scripts/{s}"),
        None,
        StatusCode::CONFLICT,
        "baseline \"web\"",
    )
    .await;
    t.expect(
        Method::PUT,
        &format!("/api/v1/baselines/{b}/scripts"),
        Some(json!({"script_ids": [12345]})),
        StatusCode::BAD_REQUEST,
        "12345",
    )
    .await;
    let p = created(
        &t,
        "/api/v1/profiles",
        json!({"name": "p", "baseline_id": b, "entries": [{"label": "local", "type": "local"}]}),
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/baselines/{b}"),
        None,
        StatusCode::CONFLICT,
        "profile \"p\"",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(json!({"name": "h1", "mac": MAC, "baseline_id": 777})),
        StatusCode::BAD_REQUEST,
        "baseline_id 777",
    )
    .await;
    t.expect(
        Method::PUT,
        &format!("/api/v1/profiles/{p}"),
        Some(json!({"baseline_id": null})),
        StatusCode::OK,
        "",
    )
    .await;
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/baselines/{b}/scripts"),
            Some(json!({"script_ids": []})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"], json!([]));
    t.expect(
        Method::DELETE,
        &format!("/api/v1/baselines/{b}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/scripts/{s}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/baselines/assigned?mac=nope",
        None,
        StatusCode::BAD_REQUEST,
        "'mac'",
    )
    .await;
}

async fn text(t: &T, path: &str) -> (StatusCode, String) {
    let resp = t.send(t.request(Method::GET, path, None)).await;
    let s = resp.status();
    let b = resp.into_body().collect().await.unwrap().to_bytes();
    (s, String::from_utf8_lossy(&b).into_owned())
}

#[tokio::test]
async fn machines_pull_with_their_token_and_report_back() {
    let mut t = setup().await;
    t.login().await;
    t.host = Some("10.9.0.1:8080");
    let s1 = created(
        &t,
        "/api/v1/scripts",
        json!({"name": "motd", "type": "sh", "content": "echo {{ greeting }} {{ host.name }} > /etc/motd\n",
               "variables": [{"name": "greeting", "default": "welcome to"}]}),
    )
    .await;
    let s2 = created(
        &t,
        "/api/v1/scripts",
        json!({"name": "winrm", "type": "powershell", "content": "Enable-PSRemoting -Force\n"}),
    )
    .await;
    let b = created(
        &t,
        "/api/v1/baselines",
        json!({"name": "site", "script_ids": [s1, s2], "is_default": true}),
    )
    .await;
    let h = created(&t, "/api/v1/hosts", json!({"name": "web1", "mac": MAC})).await;
    let a = t
        .expect(
            Method::GET,
            &format!("/api/v1/baselines/assigned?mac={MAC}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(a["data"]["baselines"][0]["via"], "default");
    assert_eq!(a["data"]["scripts"][0]["content"], "echo welcome to web1 > /etc/motd\n");
    let p = created(
        &t,
        "/api/v1/profiles",
        json!({"name": "di", "entries": [{"label": "d-i", "type": "linux", "kernel": "d-i/linux"}]}),
    )
    .await;
    let tpl = created(
        &t,
        "/api/v1/netboot/answer-templates",
        json!({"name": "deb", "preset": "debian"}),
    )
    .await;
    let task = created(
        &t,
        "/api/v1/netboot/tasks",
        json!({"mac": MAC, "source": {"type": "profile", "profile_id": p}, "template_id": tpl}),
    )
    .await;
    let table: bootlane_core::store::Table<bootlane_install::install::InstallTask> = t.state.store.table().unwrap();
    let token = table.get(task).unwrap().unwrap().token;

    // No lease here (proxyDHCP): the machine's first iPXE script fetch binds the token to
    // its address; another address is refused like a wrong token.
    let (st, script) = text(&t, &format!("/boot/ipxe?mac={MAC}")).await;
    assert_eq!(st, StatusCode::OK);
    assert!(script.contains(&token), "{script}");
    let mut other = t.request(
        Method::GET,
        &format!("/api/v1/netboot/baseline/{task}?token={token}"),
        None,
    );
    other
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(std::net::SocketAddr::from((
            [10, 9, 9, 10],
            1234,
        ))));
    let (st, _, _) = t.raw(other).await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // No session needed; a wrong token and an unknown task get the same refusal.
    t.cookie = None;
    let zero = "0".repeat(64);
    let (s_a, wrong) = text(&t, &format!("/api/v1/netboot/baseline/{task}?token={zero}")).await;
    let (s_b, unknown) = text(&t, &format!("/api/v1/netboot/baseline/987654?token={zero}")).await;
    assert_eq!((s_a, s_b), (StatusCode::FORBIDDEN, StatusCode::FORBIDDEN));
    assert_eq!(wrong, unknown);
    assert!(!wrong.contains("web1") && !wrong.contains(MAC), "{wrong}");
    let (s, _) = text(&t, &format!("/api/v1/netboot/baseline/{task}/bundle.sh")).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    let v = t
        .expect(
            Method::GET,
            &format!("/api/v1/netboot/baseline/{task}?token={token}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["scripts"].as_array().unwrap().len(), 2);
    let resp = t
        .send(t.request(
            Method::GET,
            &format!("/api/v1/netboot/baseline/{task}/bundle.sh?token={token}"),
            None,
        ))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/x-shellscript"));
    let sh = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(
        sh.starts_with("#!/bin/sh") && sh.contains("echo welcome to web1 > /etc/motd"),
        "{sh}"
    );
    assert!(sh.contains(&format!(
        "'http://10.9.0.1:8080/api/v1/netboot/baseline/{task}/report?token={token}'"
    )));
    assert!(!sh.contains("Enable-PSRemoting"));
    let (s, ps1) = text(&t, &format!("/api/v1/netboot/baseline/{task}/bundle.ps1?token={token}")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        ps1.contains("Invoke-BlScript") && ps1.contains("'winrm'") && !ps1.contains("'motd'"),
        "{ps1}"
    );

    // A report: the output as the body.
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!(
            "/api/v1/netboot/baseline/{task}/report?token={token}&script={s1}&exit_code=3&duration_ms=42"
        ))
        .header(header::HOST, "10.9.0.1:8080")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("disk full\n"))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    t.expect(
        Method::GET,
        &format!("/api/v1/netboot/baseline/{task}/report?token={token}&script=999&exit_code=0"),
        None,
        StatusCode::BAD_REQUEST,
        "not one of this machine's scripts",
    )
    .await;
    t.expect(
        Method::GET,
        &format!("/api/v1/netboot/baseline/{task}/report?token={token}&exit_code=0"),
        None,
        StatusCode::BAD_REQUEST,
        "'script'",
    )
    .await;
    t.expect(
        Method::GET,
        &format!("/api/v1/netboot/baseline/{task}/report?token={zero}&script={s1}&exit_code=0"),
        None,
        StatusCode::FORBIDDEN,
        "refused",
    )
    .await;
    t.login().await;
    let r = t
        .expect(
            Method::GET,
            &format!("/api/v1/hosts/{h}/script-reports"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(r["data"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["data"][0]["exit_code"], 3);
    assert_eq!(r["data"][0]["output"], "disk full\n");
    assert_eq!(r["data"][0]["script"], "motd");
    let e = t
        .expect(
            Method::GET,
            "/api/v1/events?kind=script.run.failed",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(e["data"]["total"], 1, "{e}");
    // The baseline and host still stand.
    t.expect(Method::GET, &format!("/api/v1/baselines/{b}"), None, StatusCode::OK, "")
        .await;
}
