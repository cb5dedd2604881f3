//! Single sign-on routes (`[auth.oidc]`; the client is [`bootlane_identity::oidc`]):
//! `GET /auth/oidc` (whether it is on, for the login page), `GET /auth/oidc/login` (302 to
//! the provider; the pending flow is bound to the browser by the short-lived HttpOnly
//! SameSite=Lax [`FLOW_COOKIE`]) and `GET /auth/oidc/callback` (the provider's answer:
//! a session with the mapped role, [`super::auth::Auth::start_session`]). Every refusal
//! redirects to the login page with a short code the UI explains. Users signed in here are
//! kept apart from local accounts: a provider user whose name is a local account's is
//! refused.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::Arc,
};

use axum::{
    extract::{ConnectInfo, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use bootlane_identity::oidc::{esc, Identity, Refusal, FLOW_COOKIE, MAX_PARAM, PENDING_TTL};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    auth::{Auth, SignIn, COOKIE},
    error::{ApiError, Result},
    extract::{ApiQuery, Envelope},
    AppState,
};

/// Whether single sign-on is on (for the login page).
#[derive(Debug, Serialize, ToSchema)]
pub struct OidcInfo {
    /// True when `[auth.oidc]` is configured.
    pub enabled: bool,
    /// The button's provider name ("Sign in with <display_name>"), when enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// Whether single sign-on is on.
#[utoipa::path(get, path = "/api/v1/auth/oidc", extensions(("x-bootlane-role" = json!("public"))), tag = "auth",
    responses((status = 200, body = OidcInfo)))]
pub async fn info(State(auth): State<Arc<Auth>>) -> Envelope<OidcInfo> {
    let o = auth.oidc();
    Envelope::ok(OidcInfo {
        enabled: o.is_some(),
        display_name: o.map(|o| o.display_name().to_string()),
    })
}

fn redirect(to: &str) -> Response {
    let mut r = StatusCode::FOUND.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn refused(r: &Refusal) -> Response {
    tracing::warn!(reason = %esc(&r.detail()), "single sign-on refused");
    let mut resp = redirect(&format!("/login?sso_error={}", r.code()));
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("bootlane_oidc=; HttpOnly; SameSite=Lax; Path=/api/v1/auth/oidc; Max-Age=0"),
    );
    resp
}

/// Start single sign-on: redirects to the provider.
#[utoipa::path(get, path = "/api/v1/auth/oidc/login", extensions(("x-bootlane-role" = json!("public"))), tag = "auth",
    responses((status = 302, description = "To the provider's authorization endpoint (or to the login page with `sso_error` when the provider is unavailable); sets the short-lived bootlane_oidc cookie"),
              (status = 404, description = "Single sign-on is not configured")))]
pub async fn login(State(auth): State<Arc<Auth>>) -> Result<Response> {
    let Some(o) = auth.oidc() else {
        return Err(ApiError::NotFound(
            "single sign-on ([auth.oidc]) is not configured".into(),
        ));
    };
    match o.begin().await {
        Ok((url, browser)) => {
            let mut r = redirect(url.as_str());
            let c = format!(
                "{FLOW_COOKIE}={browser}; HttpOnly; SameSite=Lax; Path=/api/v1/auth/oidc; Max-Age={}",
                PENDING_TTL.as_secs()
            );
            r.headers_mut().insert(
                header::SET_COOKIE,
                HeaderValue::from_str(&c).map_err(|e| ApiError::Internal(e.into()))?,
            );
            Ok(r)
        }
        Err(e) => Ok(refused(&e)),
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, v)| *k == name && !v.is_empty())
        .map(|(_, v)| v.to_string())
}

/// The provider's redirect back: signs in and goes to the dashboard, or to the login page
/// with `sso_error`.
#[utoipa::path(get, path = "/api/v1/auth/oidc/callback", extensions(("x-bootlane-role" = json!("public"))), tag = "auth",
    params(("code" = Option<String>, Query, description = "The authorization code"),
           ("state" = Option<String>, Query, description = "The state Bootlane sent"),
           ("error" = Option<String>, Query, description = "The provider's error code, when it refused (OpenID Connect Core 1.0 section 3.1.2.6)")),
    responses((status = 302, description = "Signed in (sets the bootlane_session cookie) and to `/`, or refused and to `/login?sso_error=<code>`"),
              (status = 400, description = "A malformed query string"),
              (status = 404, description = "Single sign-on is not configured")))]
pub async fn callback(
    State(auth): State<Arc<Auth>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<HashMap<String, String>>,
) -> Result<Response> {
    let Some(o) = auth.oidc() else {
        return Err(ApiError::NotFound(
            "single sign-on ([auth.oidc]) is not configured".into(),
        ));
    };
    let get = |k: &str| q.get(k).filter(|v| v.len() <= MAX_PARAM).map(String::as_str);
    if let Some(e) = q.get("error") {
        // Drop the pending flow too: its state is spent.
        if let Some(s) = get("state") {
            o.abandon(s);
        }
        return Ok(refused(&Refusal::Provider(e.chars().take(MAX_PARAM).collect())));
    }
    let (Some(state), Some(code)) = (get("state"), get("code")) else {
        return Ok(refused(&Refusal::BadState));
    };
    let browser = cookie(&headers, FLOW_COOKIE);
    let (id, id_token) = match o.finish(state, code, browser.as_deref()).await {
        Ok(v) => v,
        Err(e) => return Ok(refused(&e)),
    };
    start(&auth, peer.ip(), id, id_token).await
}

async fn start(auth: &Auth, ip: IpAddr, id: Identity, id_token: String) -> Result<Response> {
    // Kept apart from local accounts: a provider user named like a local account is refused.
    if auth.role(&id.username).is_some() {
        return Ok(refused(&Refusal::LocalName));
    }
    let (token, _) = auth
        .start_session_with_id_token(ip, &id.username, Some(id.role), SignIn::Oidc, Some(id_token))
        .await?;
    let mut r = redirect("/");
    let c = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        auth.ttl().as_secs()
    );
    r.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_str(&c).map_err(|e| ApiError::Internal(e.into()))?,
    );
    r.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static("bootlane_oidc=; HttpOnly; SameSite=Lax; Path=/api/v1/auth/oidc; Max-Age=0"),
    );
    Ok(r)
}

/// The single sign-on routes (no session needed).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(info))
        .routes(routes!(login))
        .routes(routes!(callback))
}
