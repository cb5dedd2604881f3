//! Router tests of the install task routes: the admin routes that need a login, the
//! public ones without it (the one refusal in the envelope, by-mac saying only the
//! action, reports with an unknown kind), and the answer served through the real
//! template service for a machine whose lease is held by the requesting address.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::test_support::{setup, T};

const MAC: &str = "52:54:00:ab:cd:01";

async fn lab() -> (T, u64, u64) {
    let mut t = setup().await;
    t.login().await;
    t.host = Some("10.9.0.1:8080");
    let p = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(json!({"name": "di", "entries": [{"label": "d-i", "type": "linux", "kernel": "d-i/linux", "initrds": ["d-i/initrd.gz"]}]})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let tpl = t
        .expect(
            Method::POST,
            "/api/v1/netboot/answer-templates",
            Some(json!({"name": "deb", "preset": "debian"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    (
        t,
        p["data"]["id"].as_u64().unwrap(),
        tpl["data"]["id"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn admin_routes_need_a_session_and_name_bad_fields() {
    let (mut t, profile, tpl) = lab().await;
    let body = json!({"mac": MAC, "source": {"type": "profile", "profile_id": profile}, "template_id": tpl});
    for (bad, field) in [
        (
            json!({"mac": MAC, "source": {"type": "profile", "profile_id": profile}, "template_id": 999}),
            "'template_id'",
        ),
        (
            json!({"mac": "nope", "source": {"type": "profile", "profile_id": profile}, "template_id": tpl}),
            "'mac'",
        ),
        (
            json!({"mac": MAC, "source": {"type": "disk"}, "template_id": tpl}),
            "source",
        ),
        (json!({"mac": MAC, "template_id": tpl, "colour": 1}), "colour"),
    ] {
        t.expect(
            Method::POST,
            "/api/v1/netboot/tasks",
            Some(bad),
            StatusCode::BAD_REQUEST,
            field,
        )
        .await;
    }
    let v = t
        .expect(
            Method::POST,
            "/api/v1/netboot/tasks",
            Some(body.clone()),
            StatusCode::CREATED,
            "",
        )
        .await;
    let id = v["data"]["id"].as_u64().unwrap();
    assert_eq!(v["data"]["state"], "pending");
    assert!(v["data"].get("token").is_none(), "{v}");
    t.expect(
        Method::POST,
        "/api/v1/netboot/tasks",
        Some(body),
        StatusCode::CONFLICT,
        "already has install task",
    )
    .await;
    let v = t
        .expect(
            Method::GET,
            "/api/v1/netboot/tasks?state=pending",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["total"], 1);
    let v = t
        .expect(
            Method::GET,
            "/api/v1/netboot/tasks?state=done",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["total"], 0);
    t.expect(
        Method::GET,
        "/api/v1/netboot/tasks?state=sleeping",
        None,
        StatusCode::BAD_REQUEST,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/netboot/answer-templates/{tpl}"),
        None,
        StatusCode::CONFLICT,
        "used by install task",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/netboot/tasks/{id}/retry"),
        None,
        StatusCode::CONFLICT,
        "cannot become",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            &format!("/api/v1/netboot/tasks/{id}/cancel"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["state"], "cancelled");
    t.cookie = None;
    t.expect(Method::GET, "/api/v1/netboot/tasks", None, StatusCode::UNAUTHORIZED, "")
        .await;
}

#[tokio::test]
async fn the_public_routes_refuse_alike_and_serve_the_lease_holder() {
    let (mut t, profile, tpl) = lab().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/netboot/tasks",
            Some(json!({"mac": MAC, "source": {"type": "profile", "profile_id": profile}, "template_id": tpl})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let id = v["data"]["id"].as_u64().unwrap();
    t.cookie = None;
    // by-mac: only the action.
    let v = t
        .expect(
            Method::GET,
            &format!("/api/v1/netboot/task/by-mac/{MAC}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"], json!({"action": "install", "state": "pending"}));
    t.expect(
        Method::GET,
        "/api/v1/netboot/task/by-mac/xyz",
        None,
        StatusCode::BAD_REQUEST,
        "",
    )
    .await;
    // The same 403 envelope for a wrong token and an unknown task.
    let zero = "0".repeat(64);
    let (s1, _, a) = t
        .call(Method::GET, &format!("/api/v1/netboot/answer/{id}?token={zero}"), None)
        .await;
    let (s2, _, b) = t
        .call(Method::GET, &format!("/api/v1/netboot/answer/99999?token={zero}"), None)
        .await;
    assert_eq!((s1, s2), (StatusCode::FORBIDDEN, StatusCode::FORBIDDEN));
    assert_eq!(a, b);
    assert_eq!(a["success"], false);
    t.expect(
        Method::POST,
        &format!("/api/v1/netboot/report/{id}/{zero}/progress"),
        None,
        StatusCode::FORBIDDEN,
        "refused",
    )
    .await;
    t.expect(
        Method::GET,
        &format!("/api/v1/netboot/report/{id}/{zero}/explode"),
        None,
        StatusCode::BAD_REQUEST,
        "unknown report kind",
    )
    .await;
    // The real token (from the store), but the test client (10.9.9.9) holds no lease.
    let table: bootlane_core::store::Table<bootlane_install::install::InstallTask> = t.state.store.table().unwrap();
    let token = table.get(id).unwrap().unwrap().token;
    let url = format!("/api/v1/netboot/answer/{id}?token={token}");
    t.expect(Method::GET, &url, None, StatusCode::FORBIDDEN, "refused")
        .await;
    // Once 10.9.9.9 holds the MAC's lease, the preseed is served, rendered for the task.
    {
        let leases = t.state.dhcp.leases();
        let mut db = leases.lock().await;
        db.bind(
            bootlane_dhcp::dhcp::leases::Lease {
                id: 0,
                mac: MAC.into(),
                ip: "10.9.9.9".parse().unwrap(),
                subnet: "10.9.9.0/24".into(),
                hostname: None,
                arch: None,
                expires_at: bootlane_dhcp::dhcp::leases::now_secs() + 600,
                declined: false,
            },
            bootlane_core::net::types::normalise_mac(MAC).unwrap(),
        )
        .await
        .unwrap();
    }
    let (s, h, body) = t.call(Method::GET, &url, None).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = body.as_str().unwrap();
    assert!(
        text.contains(&format!(
            "http://10.9.0.1:8080/api/v1/netboot/report/{id}/{token}/progress?stage=early_command"
        )),
        "{text}"
    );
    assert!(text.contains("d-i partman-auto/choose_recipe select atomic"));
    // The early command's GET report, then the state.
    let v: Value = t
        .expect(
            Method::GET,
            &format!("/api/v1/netboot/report/{id}/{token}/progress?stage=early_command"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"], json!({"state": "installing", "ignored": false}));
}
