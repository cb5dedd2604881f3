//! Router tests of roles: the walk over the OpenAPI document (every write route but a
//! user's own second factor refuses a viewer, every admin route an operator, each with a 403 envelope; every read a viewer
//! may make is not refused), a role change reaching an open session at once, and the last
//! admin kept.

use axum::http::{header, Method, StatusCode};
use serde_json::json;

use super::{
    roles::{Needs, Role, RouteRoles},
    test_support::{is_error, setup, T},
};

/// The writes a viewer may make: on their own account (their API tokens and second
/// factor), not the server.
const SELF_SERVICE_WRITES: &[&str] = &[
    "/api/v1/tokens",
    "/api/v1/tokens/{id}",
    "/api/v1/auth/totp",
    "/api/v1/auth/totp/enrol",
    "/api/v1/auth/totp/confirm",
];

/// A password the policy accepts, for the test users.
pub(crate) const PW: &str = "role-Tester-Kq7wN2xB";

/// `t` signed in as `user` (the cookie replaced).
pub(crate) async fn sign_in(t: &mut T, user: &str) {
    t.cookie = None;
    let (s, h, v) = t
        .call(
            Method::POST,
            "/api/v1/auth/login",
            Some(json!({"username": user, "password": PW})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["data"]["role"].is_string(), "the login answer names the role: {v}");
    let c = h.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    t.cookie = Some(c.split(';').next().unwrap().to_string());
}

/// A client with `vera` (viewer) and `otto` (operator) added by the admin, signed in as admin.
pub(crate) async fn with_users() -> T {
    let mut t = setup().await;
    t.login().await;
    for (u, r) in [("vera", "viewer"), ("otto", "operator")] {
        let v = t
            .expect(
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": u, "password": PW, "role": r})),
                StatusCode::CREATED,
                "",
            )
            .await;
        assert_eq!(v["data"]["role"], r);
    }
    t
}

/// `path` with every `{param}` filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "1" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every operation of the document with what it declares.
fn operations() -> Vec<(Method, String, Needs)> {
    let doc = super::openapi_doc();
    let roles = RouteRoles::from_doc(&doc);
    assert!(roles.undeclared().is_empty(), "undeclared: {:?}", roles.undeclared());
    let mut out = Vec::new();
    for (path, item) in &doc.paths.paths {
        for (m, op) in [
            (Method::GET, &item.get),
            (Method::PUT, &item.put),
            (Method::POST, &item.post),
            (Method::DELETE, &item.delete),
            (Method::PATCH, &item.patch),
        ] {
            if op.is_some() {
                let n = roles.needs(&m, path).unwrap();
                out.push((m, path.clone(), n));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_role_walk_over_the_openapi_document() {
    let mut t = with_users().await;
    let ops = operations();
    let (mut writes, mut admin_only) = (0, 0);
    for (m, p, n) in &ops {
        if *m != Method::GET && !SELF_SERVICE_WRITES.contains(&p.as_str()) {
            assert_ne!(
                *n,
                Needs::Role(Role::Viewer),
                "{m} {p}: a write route must need more than viewer"
            );
        }
    }
    sign_in(&mut t, "vera").await;
    for (m, p, n) in &ops {
        let Needs::Role(r) = n else { continue };
        if *r == Role::Viewer {
            continue;
        }
        writes += usize::from(*m != Method::GET);
        let (s, _, v) = t.call(m.clone(), &concrete(p), Some(json!({}))).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{m} {p} as a viewer: {v}");
        assert!(is_error(&v, &format!("needs the {r} role")), "{m} {p}: {v}");
    }
    // What a viewer may read is not refused (the endless streams are left out).
    for (m, p, n) in &ops {
        if *n == Needs::Role(Role::Viewer) && !p.ends_with("/stream") {
            let (s, _, v) = t.call(m.clone(), &concrete(p), None).await;
            assert_ne!(s, StatusCode::FORBIDDEN, "{m} {p} as a viewer: {v}");
            assert_ne!(s, StatusCode::UNAUTHORIZED, "{m} {p} as a viewer: {v}");
        }
    }
    sign_in(&mut t, "otto").await;
    for (m, p, n) in &ops {
        if *n != Needs::Role(Role::Admin) {
            continue;
        }
        admin_only += 1;
        let (s, _, v) = t.call(m.clone(), &concrete(p), Some(json!({}))).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{m} {p} as an operator: {v}");
        assert!(is_error(&v, "needs the admin role"), "{m} {p}: {v}");
    }
    // The walk covered the document: the write routes and the admin-only ones.
    assert!(
        writes > 100 && admin_only > 25,
        "{writes} writes, {admin_only} admin-only"
    );
    // An operator does day-to-day work: a host created.
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(json!({"mac": "52:54:00:aa:00:01", "name": "op-made"})),
        StatusCode::CREATED,
        "",
    )
    .await;
}

#[tokio::test]
async fn a_role_change_reaches_an_open_session_and_the_last_admin_stays() {
    let mut t = with_users().await;
    let admin = t.cookie.clone();
    sign_in(&mut t, "vera").await;
    let vera = t.cookie.clone();
    let v = t
        .expect(Method::GET, "/api/v1/auth/session", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["role"], "viewer");
    let host = json!({"mac": "52:54:00:aa:00:02", "name": "vera-made"});
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(host.clone()),
        StatusCode::FORBIDDEN,
        "needs the operator role",
    )
    .await;
    t.cookie = admin.clone();
    t.expect(
        Method::PUT,
        "/api/v1/users/vera/role",
        Some(json!({"role": "operator"})),
        StatusCode::OK,
        "",
    )
    .await;
    t.cookie = vera;
    t.expect(Method::POST, "/api/v1/hosts", Some(host), StatusCode::CREATED, "")
        .await;
    t.cookie = admin;
    t.expect(
        Method::PUT,
        "/api/v1/users/vera/role",
        Some(json!({"role": "root"})),
        StatusCode::BAD_REQUEST,
        "",
    )
    .await;
    // admin is the only admin: not demoted, not deleted.
    t.expect(
        Method::PUT,
        "/api/v1/users/admin/role",
        Some(json!({"role": "viewer"})),
        StatusCode::CONFLICT,
        "last admin",
    )
    .await;
    t.expect(
        Method::DELETE,
        "/api/v1/users/admin",
        None,
        StatusCode::CONFLICT,
        "last admin",
    )
    .await;
    let v = t.expect(Method::GET, "/api/v1/users", None, StatusCode::OK, "").await;
    let roles: Vec<(&str, &str)> = v["data"]["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["username"].as_str().unwrap(), u["role"].as_str().unwrap()))
        .collect();
    assert_eq!(roles, [("admin", "admin"), ("otto", "operator"), ("vera", "operator")]);
}
