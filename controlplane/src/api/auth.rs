//! Authentication (spec "Authentication"; issue 2): users with argon2id password hashes,
//! sessions kept in the store (they survive restarts) behind the `bootlane_session`
//! cookie, login throttling per client address, and the middleware that guards every
//! protected route. The first start creates `admin` with `BOOTLANE_ADMIN_PASSWORD` or a
//! generated password written to `<data_dir>/initial-admin-password` (mode 0600).
//! In-memory state: the failed-login counters (deliberately not persisted).

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use argon2::{password_hash::SaltString, Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use axum::{
    extract::{ConnectInfo, Request, State},
    http::{header, HeaderMap, HeaderValue},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rand::{distributions::Alphanumeric, Rng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, Envelope},
    AppState,
};
use crate::{
    events::{EventBus, NewEvent},
    store::{Kv, Store},
};

/// Session cookie name.
pub const COOKIE: &str = "bootlane_session";
/// Store key-value table holding the [`User`]s, keyed by user name.
pub const USERS_KV: &str = "users";
/// Store key-value table holding the [`Session`]s, keyed by the SHA-256 of the token.
pub const SESSIONS_KV: &str = "sessions";
/// Failed logins from one address allowed per window before 429.
pub const MAX_FAILURES: u32 = 5;
/// Throttle window.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(300);

/// A stored user.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    /// Login name.
    pub username: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// Creation time.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A stored session (keyed by the SHA-256 of its token, so a stolen database holds no
/// usable token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// Owner.
    pub username: String,
    /// Expiry.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// `POST /auth/login` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// User name (not empty).
    #[schema(min_length = 1)]
    pub username: String,
    /// Password (not empty).
    #[schema(min_length = 1)]
    pub password: String,
}

/// `POST /auth/login` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginResponse {
    /// User name.
    pub username: String,
    /// Session expiry, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: OffsetDateTime,
}

/// `GET /auth/session` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionInfo {
    /// True when the request carries a valid session.
    pub authenticated: bool,
    /// The session's user.
    pub username: Option<String>,
    /// Expiry, RFC 3339.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
}

/// Users, sessions and throttling.
pub struct Auth {
    users: Kv,
    sessions: Kv,
    ttl_secs: std::sync::atomic::AtomicU64,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
    events: Arc<EventBus>,
}

fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Hashes a password with argon2id and a random salt.
///
/// # Errors
/// Only if argon2 rejects its parameters.
pub fn hash_password(pw: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(pw.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
}

impl Auth {
    /// Opens the user and session trees; creates `admin` on first start.
    ///
    /// # Errors
    /// Store errors, or failing to write the initial password file.
    /// `admin_password` (from `BOOTLANE_ADMIN_PASSWORD`) is used only when no user exists.
    pub async fn open(
        store: &Store,
        data_dir: &std::path::Path,
        ttl: Duration,
        admin_password: Option<String>,
        events: Arc<EventBus>,
    ) -> anyhow::Result<Self> {
        let auth = Self {
            users: store.kv(USERS_KV)?,
            sessions: store.kv(SESSIONS_KV)?,
            ttl_secs: std::sync::atomic::AtomicU64::new(ttl.as_secs()),
            failures: Mutex::new(HashMap::new()),
            events,
        };
        if auth.users.iter::<User>()?.is_empty() {
            let (pw, generated) = match admin_password {
                Some(p) if !p.is_empty() => (p, false),
                _ => (
                    rand::thread_rng()
                        .sample_iter(&Alphanumeric)
                        .take(20)
                        .map(char::from)
                        .collect::<String>(),
                    true,
                ),
            };
            let user = User {
                username: "admin".into(),
                password_hash: hash_password(&pw)?,
                created_at: OffsetDateTime::now_utc(),
            };
            auth.users.put("admin", &user).await?;
            if generated {
                use std::{io::Write, os::unix::fs::OpenOptionsExt};
                let path = data_dir.join("initial-admin-password");
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&path)?;
                writeln!(f, "{pw}")?;
                tracing::warn!(path = %path.display(), "created user 'admin' with a generated password (also written to that file): {pw}");
            } else {
                tracing::info!("created user 'admin' with the password from BOOTLANE_ADMIN_PASSWORD");
            }
        }
        Ok(auth)
    }

    fn throttled(&self, ip: IpAddr) -> Option<u64> {
        let mut f = self.failures.lock().expect("failures lock");
        match f.get(&ip) {
            Some((n, since)) if since.elapsed() < FAILURE_WINDOW && *n >= MAX_FAILURES => {
                Some((FAILURE_WINDOW - since.elapsed()).as_secs().max(1))
            }
            Some((_, since)) if since.elapsed() >= FAILURE_WINDOW => {
                f.remove(&ip);
                None
            }
            _ => None,
        }
    }

    fn record_failure(&self, ip: IpAddr) {
        let mut f = self.failures.lock().expect("failures lock");
        let e = f.entry(ip).or_insert((0, Instant::now()));
        e.0 += 1;
    }

    /// Session lifetime for new sessions.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Changes the lifetime of sessions created from now on (`/settings/general`).
    pub fn set_ttl(&self, ttl: Duration) {
        self.ttl_secs.store(ttl.as_secs(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Checks the password and creates a session; returns `(token, session)`.
    ///
    /// # Errors
    /// 429 when throttled, 401 on a wrong user or password.
    pub async fn login(&self, ip: IpAddr, username: &str, password: &str) -> Result<(String, Session)> {
        if let Some(secs) = self.throttled(ip) {
            return Err(ApiError::TooManyRequests(
                format!("too many failed logins from {ip}; try again in {secs} s"),
                secs,
            ));
        }
        let user = self.users.get::<User>(username)?;
        let ok = user.as_ref().is_some_and(|u| {
            PasswordHash::new(&u.password_hash)
                .is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
        });
        if !ok {
            self.record_failure(ip);
            self.events.publish(
                NewEvent::new("auth.login_failed", format!("failed login for {username:?} from {ip}"))
                    .resource("user", username)
                    .remote(ip),
            );
            return Err(ApiError::Unauthorized("wrong user name or password".into()));
        }
        self.failures.lock().expect("failures lock").remove(&ip);
        let token: String = rand::thread_rng()
            .sample_iter(&Alphanumeric)
            .take(43)
            .map(char::from)
            .collect();
        let session = Session {
            username: username.into(),
            expires_at: OffsetDateTime::now_utc() + self.ttl(),
        };
        self.sessions.put(&hash_token(&token), &session).await?;
        crate::events::with_actor(
            crate::events::Actor {
                user: username.into(),
                remote_addr: Some(ip.to_string()),
            },
            async {
                self.events.publish(
                    NewEvent::new("auth.login", format!("{username} logged in from {ip}")).resource("user", username),
                );
            },
        )
        .await;
        Ok((token, session))
    }

    /// The live session for `token`; expired sessions are removed.
    pub async fn session(&self, token: &str) -> Option<Session> {
        let key = hash_token(token);
        let s = self.sessions.get::<Session>(&key).ok().flatten()?;
        if s.expires_at <= OffsetDateTime::now_utc() {
            let _ = self.sessions.remove(&key).await;
            return None;
        }
        Some(s)
    }

    /// Ends a session.
    ///
    /// # Errors
    /// Store errors.
    pub async fn logout(&self, token: &str) -> Result<()> {
        let key = hash_token(token);
        if let Some(s) = self.sessions.get::<Session>(&key)? {
            self.events.publish(
                NewEvent::new("auth.logout", format!("{} logged out", s.username)).resource("user", &s.username),
            );
        }
        self.sessions.remove(&key).await?;
        Ok(())
    }
}

/// The session token from the `bootlane_session` cookie, or an `Authorization: Bearer`
/// header (for scripts that keep the cookie value).
pub fn token_from(headers: &HeaderMap) -> Option<String> {
    for v in headers.get_all(header::COOKIE) {
        for part in v.to_str().ok()?.split(';') {
            if let Some((k, val)) = part.trim().split_once('=') {
                if k == COOKIE && !val.is_empty() {
                    return Some(val.to_string());
                }
            }
        }
    }
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(|t| t.trim().to_string())
}

/// Middleware for protected routes: 401 with the envelope unless the request carries a
/// live session.
pub async fn require_session(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let addr = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    let session = match token_from(req.headers()) {
        Some(t) => state.auth.session(&t).await,
        None => None,
    };
    if let Some(s) = session {
        let actor = crate::events::Actor {
            user: s.username,
            remote_addr: addr,
        };
        return crate::events::with_actor(actor, next.run(req)).await;
    }
    match token_from(req.headers()) {
        Some(_) => ApiError::Unauthorized("the session has expired or was logged out; log in again with POST /api/v1/auth/login".into()).into_response(),
        None => ApiError::Unauthorized("authentication required: log in with POST /api/v1/auth/login {\"username\", \"password\"} and send the bootlane_session cookie".into()).into_response(),
    }
}

/// Log in.
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, description = "Logged in; sets the bootlane_session cookie", body = LoginResponse),
              (status = 401, description = "Wrong user name or password"), (status = 429, description = "Too many failed attempts")))]
pub async fn login(
    State(auth): State<Arc<Auth>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ApiJson(req): ApiJson<LoginRequest>,
) -> Result<Response> {
    if req.username.is_empty() || req.password.is_empty() {
        return Err(ApiError::BadRequest(
            "'username' and 'password' must not be empty".into(),
        ));
    }
    let (token, session) = auth.login(peer.ip(), &req.username, &req.password).await?;
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        auth.ttl().as_secs()
    );
    let mut resp = Envelope::ok(LoginResponse {
        username: session.username,
        expires_at: session.expires_at,
    })
    .into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| ApiError::Internal(e.into()))?,
    );
    Ok(resp)
}

/// Log out (ends the session and clears the cookie). Always succeeds.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "auth", responses((status = 200, description = "Logged out")))]
pub async fn logout(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Result<Response> {
    if let Some(t) = token_from(&headers) {
        auth.logout(&t).await?;
    }
    let mut resp = Envelope::ok(serde_json::json!({ "logged_out": true })).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("bootlane_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    Ok(resp)
}

/// Check the session.
#[utoipa::path(get, path = "/api/v1/auth/session", tag = "auth", responses((status = 200, body = SessionInfo)))]
pub async fn session(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Envelope<SessionInfo> {
    let s = match token_from(&headers) {
        Some(t) => auth.session(&t).await,
        None => None,
    };
    Envelope::ok(SessionInfo {
        authenticated: s.is_some(),
        username: s.as_ref().map(|s| s.username.clone()),
        expires_at: s.map(|s| s.expires_at),
    })
}

/// Routes that need no session, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(session))
}
