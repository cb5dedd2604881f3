//! Router tests of API tokens: creation within the creator's role, the secret shown once
//! and never listed, Bearer use with the token named in events, the owner's current role
//! capping the token, revocation and expiry taking effect at once, bad input, and a
//! deleted user's tokens going with them.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::{
    test_support::T,
    tests_roles::{sign_in, with_users},
    tokens::{StoredToken, TOKENS_KV},
};

/// Creates a token as the signed-in user; returns `(id, secret)`.
async fn create(t: &T, name: &str, role: &str) -> (String, String) {
    let v = t
        .expect(
            Method::POST,
            "/api/v1/tokens",
            Some(json!({"name": name, "role": role, "expires_in_days": 30})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let secret = v["data"]["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("blt_"), "{v}");
    assert_eq!(v["data"]["token"]["role"], role);
    (v["data"]["token"]["id"].as_str().unwrap().to_string(), secret)
}

/// `t` switched to the token `secret` (no cookie).
fn with_token(t: &mut T, secret: &str) {
    t.cookie = None;
    t.bearer = Some(secret.to_string());
}

fn host(n: u8) -> Value {
    json!({"mac": format!("52:54:00:bb:00:{n:02x}"), "name": format!("tok-{n}")})
}

#[tokio::test]
async fn a_token_acts_with_its_role_and_is_named_in_events() {
    let mut t = with_users().await;
    let admin = t.cookie.clone();
    let (id, secret) = create(&t, "ci deploy", "operator").await;
    // Listed without the secret or its hash.
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"][0]["name"], "ci deploy");
    assert_eq!(v["data"]["tokens"][0]["last_used_at"], Value::Null);
    let text = v.to_string();
    assert!(!text.contains(&secret[15..]) && !text.contains("hash"), "{v}");
    // Used as a Bearer token: an operator's write works, an admin route is refused.
    with_token(&mut t, &secret);
    t.expect(Method::POST, "/api/v1/hosts", Some(host(1)), StatusCode::CREATED, "")
        .await;
    t.expect(
        Method::GET,
        "/api/v1/users",
        None,
        StatusCode::FORBIDDEN,
        "admin's token \"ci deploy\" has operator",
    )
    .await;
    let v = t
        .expect(Method::GET, "/api/v1/auth/session", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["username"], "admin");
    assert_eq!(v["data"]["role"], "operator");
    assert_eq!(v["data"]["token"], "ci deploy");
    // The event (and so the audit entry) names the token and the user.
    t.state.events.settle().await;
    let ev = t
        .state
        .events
        .after(0, 10_000)
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "host.created")
        .expect("host.created");
    assert_eq!(ev.token.as_deref(), Some("ci deploy"));
    assert_eq!(ev.actor, "admin", "{ev:?}");
    // A token cannot make tokens.
    t.expect(
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "more", "role": "viewer", "expires_in_days": 1})),
        StatusCode::FORBIDDEN,
        "cannot create tokens",
    )
    .await;
    // Last use is recorded with the address.
    t.bearer = None;
    t.cookie = admin;
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"][0]["last_used_from"], "10.9.9.9", "{v}");
    assert!(v["data"]["tokens"][0]["last_used_at"].is_string(), "{v}");
    // Revoked: refused at once.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/tokens/{id}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    with_token(&mut t, &secret);
    t.expect(
        Method::GET,
        "/api/v1/hosts",
        None,
        StatusCode::UNAUTHORIZED,
        "unknown, revoked or expired",
    )
    .await;
    t.state.events.settle().await;
    let kinds: Vec<String> = t
        .state
        .events
        .after(0, 10_000)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(kinds.iter().any(|k| k == "token.created") && kinds.iter().any(|k| k == "token.revoked"));
}

#[tokio::test]
async fn a_token_is_capped_by_its_creator_and_their_current_role() {
    let mut t = with_users().await;
    let admin = t.cookie.clone();
    sign_in(&mut t, "vera").await;
    t.expect(
        Method::POST,
        "/api/v1/tokens",
        Some(json!({"name": "x", "role": "admin", "expires_in_days": 1})),
        StatusCode::FORBIDDEN,
        "cannot be above its creator's: vera has viewer",
    )
    .await;
    let (vera_id, vera_secret) = create(&t, "reader", "viewer").await;
    sign_in(&mut t, "otto").await;
    let (_, otto_secret) = create(&t, "ops", "operator").await;
    // Someone else's token is not found for a non-admin.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/tokens/{vera_id}"),
        None,
        StatusCode::NOT_FOUND,
        "no token",
    )
    .await;
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"].as_array().unwrap().len(), 1, "only otto's: {v}");
    with_token(&mut t, &vera_secret);
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(host(2)),
        StatusCode::FORBIDDEN,
        "needs the operator role",
    )
    .await;
    with_token(&mut t, &otto_secret);
    t.expect(Method::POST, "/api/v1/hosts", Some(host(3)), StatusCode::CREATED, "")
        .await;
    // otto demoted: his operator token acts as a viewer from the next request.
    t.bearer = None;
    t.cookie = admin.clone();
    t.expect(
        Method::PUT,
        "/api/v1/users/otto/role",
        Some(json!({"role": "viewer"})),
        StatusCode::OK,
        "",
    )
    .await;
    with_token(&mut t, &otto_secret);
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(host(4)),
        StatusCode::FORBIDDEN,
        "has viewer",
    )
    .await;
    // The admin lists everyone's; deleting vera removes her token.
    t.bearer = None;
    t.cookie = admin;
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"].as_array().unwrap().len(), 2, "{v}");
    t.expect(Method::DELETE, "/api/v1/users/vera", None, StatusCode::OK, "")
        .await;
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"][0]["owner"], "otto", "{v}");
    assert_eq!(v["data"]["tokens"].as_array().unwrap().len(), 1, "{v}");
    with_token(&mut t, &vera_secret);
    t.expect(Method::GET, "/api/v1/hosts", None, StatusCode::UNAUTHORIZED, "")
        .await;
}

#[tokio::test]
async fn expired_wrong_and_bad_tokens_are_refused() {
    let mut t = with_users().await;
    let admin = t.cookie.clone();
    let (id, secret) = create(&t, "short", "viewer").await;
    for (body, status, needle) in [
        (
            json!({"name": "a", "role": "viewer", "expires_in_days": 0}),
            StatusCode::BAD_REQUEST,
            "'expires_in_days'",
        ),
        (
            json!({"name": "a", "role": "viewer", "expires_in_days": 366}),
            StatusCode::BAD_REQUEST,
            "'expires_in_days'",
        ),
        (
            json!({"name": "a", "role": "viewer"}),
            StatusCode::BAD_REQUEST,
            "expires_in_days",
        ),
        (
            json!({"name": "<b>", "role": "viewer", "expires_in_days": 1}),
            StatusCode::BAD_REQUEST,
            "'name'",
        ),
        (
            json!({"name": "a", "role": "root", "expires_in_days": 1}),
            StatusCode::BAD_REQUEST,
            "role",
        ),
        (
            json!({"name": "short", "role": "viewer", "expires_in_days": 1}),
            StatusCode::CONFLICT,
            "already has a token named",
        ),
    ] {
        t.expect(Method::POST, "/api/v1/tokens", Some(body), status, needle)
            .await;
    }
    // The right id with a wrong secret, and a malformed one: 401 alike.
    let wrong = format!(
        "{}{}",
        &secret[..secret.len() - 1],
        if secret.ends_with('A') { 'B' } else { 'A' }
    );
    for bad in [wrong.as_str(), "blt_nope", "blt_../../etc/passwd"] {
        with_token(&mut t, bad);
        t.expect(
            Method::GET,
            "/api/v1/hosts",
            None,
            StatusCode::UNAUTHORIZED,
            "unknown, revoked or expired",
        )
        .await;
    }
    with_token(&mut t, &secret);
    t.expect(Method::GET, "/api/v1/hosts", None, StatusCode::OK, "").await;
    // Past its expiry: refused, and listed as expired.
    let kv = t.state.store.kv(TOKENS_KV).unwrap();
    let mut st: StoredToken = kv.get(&id).unwrap().unwrap();
    st.expires_at = time::OffsetDateTime::now_utc() - time::Duration::seconds(1);
    kv.put(&id, &st).await.unwrap();
    t.expect(
        Method::GET,
        "/api/v1/hosts",
        None,
        StatusCode::UNAUTHORIZED,
        "unknown, revoked or expired",
    )
    .await;
    t.bearer = None;
    t.cookie = admin;
    let v = t.expect(Method::GET, "/api/v1/tokens", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["tokens"][0]["expired"], true, "{v}");
    t.expect(
        Method::DELETE,
        "/api/v1/tokens/nope",
        None,
        StatusCode::NOT_FOUND,
        "no token",
    )
    .await;
}
