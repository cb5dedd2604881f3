//! Second factor for local accounts: time-based one-time codes (TOTP, RFC 6238, with the
//! `totp-rs` crate) as authenticator apps make them: HMAC-SHA-1, 6 digits, 30-second
//! steps, one step of clock skew accepted either way ([`SKEW_STEPS`]). A signed-in local
//! user enrols (`POST /auth/totp/enrol`: a random 160-bit secret, its `otpauth://` URI and
//! a QR code of it), confirms with a first code (`POST /auth/totp/confirm`: the factor is
//! on and [`RECOVERY_CODES`] recovery codes are shown once), and can turn it off again
//! with a current code (`DELETE /auth/totp`). An admin turns off another user's factor
//! (`DELETE /users/{username}/totp`); `bootlane user totp-reset NAME` does it offline.
//!
//! Storage: one [`TotpRecord`] per user in the [`TOTP_KV`] tree. The secret is sealed
//! with XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`) under a random 32-byte key in
//! `<data_dir>/totp.key` (mode 0600, created on first start), as BMC passwords are with
//! `bmc.key`; a database copy without the key file holds no usable secret. Recovery codes
//! are kept only as SHA-256 hashes (each has 80 random bits, so a hash cannot be reversed
//! by guessing) and each works once. The last accepted time step is kept, so a code is
//! never accepted twice (RFC 6238 section 5.2): neither the same code again nor an older
//! one.
//!
//! Sign-in ([`super::auth::Auth::login`]): for a user with the factor on, a right password
//! without `otp` answers 401 with `"otp_required": true` in the envelope; a wrong or
//! reused code answers 401 and counts as a failed login for the throttling. With
//! `[auth.totp] required_for_admins` on, a local admin without the factor gets a session
//! that can only enrol ([`enrolment_gate`]).
//!
//! Writes publish `user.totp_enabled` and `user.totp_disabled` (audited; never a secret
//! or a code). State: the sealing key, in memory, and a lock that serialises every
//! read-check-write of a record (so two requests cannot both spend one code).

use std::{net::IpAddr, path::Path, sync::Arc};

use axum::{
    extract::State,
    http::{HeaderMap, Method, StatusCode},
    response::{IntoResponse, Response},
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use totp_rs::TOTP;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    auth::{token_from, Auth, Caller, SignIn, User, USERS_KV},
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, Envelope},
    roles::Role,
    AppState,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    store::{Kv, Store},
};
pub use bootlane_identity::totp::{Verdict, DIGITS, ISSUER, MAX_CODE_BYTES, RECOVERY_CODES, SKEW_STEPS, STEP_SECS};
use bootlane_identity::{
    sealed::{KeySpec, Sealer},
    totp::{generator, hash_recovery, is_totp_code, matching_step, new_recovery_code, unix_now},
};

/// Store key-value table holding the [`TotpRecord`]s, keyed by user name.
pub const TOTP_KV: &str = "totp";
/// File name of the sealing key in the data directory.
pub const KEY_FILE: &str = "totp.key";
/// The 403 message of a session restricted by `[auth.totp] required_for_admins`.
pub const ENROL_FIRST: &str = "enrol a second factor first: POST /api/v1/auth/totp/enrol";

const SEAL: KeySpec = KeySpec {
    file: KEY_FILE,
    aad: b"bootlane totp secret v1",
    what: "TOTP key",
    when_lost: "delete it and reset every user's second factor (bootlane user totp-reset)",
};
/// A user's second factor as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TotpRecord {
    /// The secret (raw bytes), sealed (`v1:` + hex(nonce ‖ ciphertext ‖ tag)).
    pub secret: String,
    /// True once the enrolment was confirmed with a code; false while it is pending.
    pub enabled: bool,
    /// The time step (Unix time / 30) of the last accepted code; codes of this step or
    /// earlier are refused.
    #[serde(default)]
    pub last_step: u64,
    /// Hex SHA-256 of each unused recovery code (normalised: lower case, no dashes).
    #[serde(default)]
    pub recovery: Vec<String>,
    /// When the enrolment started or was confirmed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The second factors: the [`TOTP_KV`] tree and the sealing key.
pub struct Totp {
    kv: Kv,
    sealer: Sealer,
    lock: tokio::sync::Mutex<()>,
}

/// [`generator`] with its error as a 500.
fn generator_(secret: Vec<u8>, username: &str) -> Result<TOTP> {
    generator(secret, username).map_err(ApiError::Internal)
}

impl Totp {
    /// Opens the [`TOTP_KV`] tree and the key `<data_dir>/totp.key` (made on first use).
    ///
    /// # Errors
    /// Store errors; the key file unreadable, unwritable or not 32 bytes.
    pub fn open(store: &Store, data_dir: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            kv: store.kv(TOTP_KV)?,
            sealer: Sealer::open(data_dir, SEAL)?,
            lock: tokio::sync::Mutex::new(()),
        })
    }

    fn seal(&self, secret: &[u8]) -> String {
        self.sealer.seal(secret)
    }

    fn unseal(&self, sealed: &str) -> Result<Vec<u8>> {
        self.sealer.open_sealed(sealed).ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!(
                "a stored TOTP secret cannot be decrypted with this data directory's totp.key (reset it with bootlane user totp-reset)"
            ))
        })
    }

    /// The stored record of `username`, if any.
    ///
    /// # Errors
    /// Store errors.
    pub fn record(&self, username: &str) -> Result<Option<TotpRecord>> {
        Ok(self.kv.get::<TotpRecord>(username)?)
    }

    /// True when `username` has a confirmed second factor (false on a store error).
    pub fn is_enabled(&self, username: &str) -> bool {
        self.record(username).ok().flatten().is_some_and(|r| r.enabled)
    }

    /// Starts (or restarts) an enrolment for `username`: a new random 160-bit secret,
    /// stored sealed and not active until [`Totp::confirm`].
    ///
    /// # Errors
    /// 409 when the factor is already on (turn it off first); store errors.
    pub async fn enrol(&self, username: &str) -> Result<Enrolment> {
        let _g = self.lock.lock().await;
        if self.record(username)?.is_some_and(|r| r.enabled) {
            return Err(ApiError::Conflict(
                "a second factor is already on; turn it off first (DELETE /api/v1/auth/totp with a current code)"
                    .into(),
            ));
        }
        let secret: [u8; 20] = rand::rngs::OsRng.gen();
        let totp = generator_(secret.to_vec(), username)?;
        let png = totp
            .get_qr_base64()
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("drawing the QR code: {e}")))?;
        self.kv
            .put(
                username,
                &TotpRecord {
                    secret: self.seal(&secret),
                    enabled: false,
                    last_step: 0,
                    recovery: Vec::new(),
                    updated_at: OffsetDateTime::now_utc(),
                },
            )
            .await?;
        Ok(Enrolment {
            secret: totp.get_secret_base32(),
            otpauth_uri: totp.get_url(),
            qr_png: format!("data:image/png;base64,{png}"),
        })
    }

    /// Confirms the pending enrolment of `username` with a code for `now` (Unix seconds);
    /// the factor is on from then and the [`RECOVERY_CODES`] new recovery codes are
    /// returned (only their hashes are kept).
    ///
    /// # Errors
    /// 400 when there is no pending enrolment or the code is wrong; store errors.
    pub async fn confirm(&self, username: &str, code: &str, now: u64) -> Result<Vec<String>> {
        let _g = self.lock.lock().await;
        let Some(mut rec) = self.record(username)?.filter(|r| !r.enabled) else {
            return Err(ApiError::BadRequest(
                "no enrolment is pending: start one with POST /api/v1/auth/totp/enrol".into(),
            ));
        };
        let totp = generator_(self.unseal(&rec.secret)?, username)?;
        let Some(step) = matching_step(&totp, code.trim(), now, 0) else {
            return Err(ApiError::BadRequest(
                "'code' is not the current code of the enrolled secret (check the device's clock)".into(),
            ));
        };
        let codes: Vec<String> = (0..RECOVERY_CODES).map(|_| new_recovery_code()).collect();
        rec.enabled = true;
        rec.last_step = step;
        rec.recovery = codes.iter().map(|c| hash_recovery(c)).collect();
        rec.updated_at = OffsetDateTime::now_utc();
        self.kv.put(username, &rec).await?;
        Ok(codes)
    }

    /// Checks `code` (a 6-digit code or a recovery code) for `username` at `now` (Unix
    /// seconds): a code is accepted for the steps within [`SKEW_STEPS`] of now that are
    /// after the last accepted one (which it then becomes); a recovery code once.
    ///
    /// # Errors
    /// Store errors, or a secret that cannot be unsealed.
    pub async fn verify(&self, username: &str, code: Option<&str>, now: u64) -> Result<Verdict> {
        let _g = self.lock.lock().await;
        let Some(mut rec) = self.record(username)?.filter(|r| r.enabled) else {
            return Ok(Verdict::NotEnabled);
        };
        let Some(code) = code.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(Verdict::Missing);
        };
        if code.len() > MAX_CODE_BYTES {
            return Ok(Verdict::Refused);
        }
        if is_totp_code(code) {
            let totp = generator_(self.unseal(&rec.secret)?, username)?;
            let Some(step) = matching_step(&totp, code, now, rec.last_step) else {
                return Ok(Verdict::Refused);
            };
            rec.last_step = step;
        } else {
            let h = hash_recovery(code);
            let Some(i) = rec.recovery.iter().position(|r| *r == h) else {
                return Ok(Verdict::Refused);
            };
            rec.recovery.remove(i);
        }
        self.kv.put(username, &rec).await?;
        Ok(Verdict::Accepted)
    }

    /// Removes the second factor (or a pending enrolment) of `username`; true when there
    /// was an active one.
    ///
    /// # Errors
    /// Store errors.
    pub async fn remove(&self, username: &str) -> Result<bool> {
        let _g = self.lock.lock().await;
        let was = self.record(username)?.is_some_and(|r| r.enabled);
        self.kv.remove(username).await?;
        Ok(was)
    }

    /// The state `GET /auth/totp` shows for `username`.
    ///
    /// # Errors
    /// Store errors.
    pub fn state(&self, username: &str) -> Result<TotpState> {
        let rec = self.record(username)?;
        Ok(TotpState {
            enabled: rec.as_ref().is_some_and(|r| r.enabled),
            pending: rec.as_ref().is_some_and(|r| !r.enabled),
            recovery_codes_left: rec.filter(|r| r.enabled).map_or(0, |r| r.recovery.len()),
        })
    }
}

/// Turns off the second factor of `username` on a store the server is not running on
/// (`bootlane user totp-reset`; needs no key); true when one was on.
///
/// # Errors
/// 404-style [`bootlane_core::service_error::ServiceError::NotFound`] when there is no such
/// local user; store errors.
pub async fn reset(store: &Store, username: &str) -> Result<bool, bootlane_core::service_error::ServiceError> {
    use bootlane_core::service_error::ServiceError;
    if store.kv(USERS_KV)?.get::<User>(username)?.is_none() {
        return Err(ServiceError::NotFound(format!("no user {username:?}")));
    }
    let kv = store.kv(TOTP_KV)?;
    let was = kv.get::<TotpRecord>(username)?.is_some_and(|r| r.enabled);
    kv.remove(username).await?;
    Ok(was)
}

/// The message of the 401 that asks for a code (`"otp_required": true` rides along).
pub const OTP_REQUIRED: &str =
    "a one-time code is required: send 'otp' (the 6-digit code of the authenticator app, or a recovery code)";

/// The 401 envelope asking for a code: `{"success": false, "error": OTP_REQUIRED,
/// "otp_required": true}`.
pub fn otp_required_response() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(serde_json::json!({"success": false, "error": OTP_REQUIRED, "otp_required": true})),
    )
        .into_response()
}

impl Auth {
    /// The second-factor step of a local user's login, after the right password: `Ok`
    /// when the user has no factor on or `otp` is accepted; a 401 ([`OTP_REQUIRED`])
    /// when it is missing; a 401 counted as a failed login (throttling and the
    /// `auth.login_failed` event) when it is wrong, reused or a spent recovery code.
    ///
    /// # Errors
    /// As above; store errors.
    pub(super) async fn second_factor(&self, ip: IpAddr, username: &str, otp: Option<&str>) -> Result<()> {
        match self.totp().verify(username, otp, unix_now()).await? {
            Verdict::NotEnabled | Verdict::Accepted => Ok(()),
            Verdict::Missing => Err(ApiError::Unauthorized(OTP_REQUIRED.into())),
            Verdict::Refused => {
                self.record_failure(
                    ip,
                    super::auth::cut_to_bytes(username, super::auth::MAX_LOGGED_USERNAME),
                );
                self.failed_login_event(ip, username);
                Err(ApiError::Unauthorized(
                    "wrong user name, password or one-time code".into(),
                ))
            }
        }
    }
}

/// With `[auth.totp] required_for_admins` on: the 403 for a local admin's session while
/// that admin has no second factor on, on every route but the enrolment ones
/// (`GET /auth/totp`, `POST /auth/totp/enrol`, `POST /auth/totp/confirm`); `None`
/// otherwise. Read per request, so the session is whole once the enrolment is confirmed.
/// The admin's API tokens are held back the same way until then.
pub fn enrolment_gate(state: &AppState, caller: &Caller, method: &Method, route: &str) -> Option<Response> {
    let enrolment_route = matches!(
        (method.as_str(), route),
        ("GET", "/api/v1/auth/totp") | ("POST", "/api/v1/auth/totp/enrol" | "/api/v1/auth/totp/confirm")
    );
    if !state.config.auth.totp.required_for_admins
        || enrolment_route
        || caller.source != SignIn::Local
        || caller.role != Some(Role::Admin)
        || state.auth.totp().is_enabled(&caller.username)
    {
        return None;
    }
    Some(ApiError::Forbidden(ENROL_FIRST.into()).into_response())
}

/// `GET /auth/totp` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpState {
    /// True when the second factor is on.
    pub enabled: bool,
    /// True while an enrolment waits for its confirmation.
    pub pending: bool,
    /// Unused recovery codes (0 when off).
    pub recovery_codes_left: usize,
}

/// `POST /auth/totp/enrol` answer: what the authenticator app needs. Shown once; the
/// factor is off until confirmed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Enrolment {
    /// The secret, base32 (RFC 4648, no padding), for typing into the app.
    pub secret: String,
    /// The `otpauth://totp/Bootlane:<user>?secret=...&issuer=Bootlane` URI (Google
    /// Authenticator key URI format).
    pub otpauth_uri: String,
    /// The URI as a QR code: a `data:image/png;base64,...` URI.
    pub qr_png: String,
}

/// `POST /auth/totp/confirm` and `DELETE /auth/totp` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeRequest {
    /// The current 6-digit code (for `DELETE`, a recovery code works too).
    #[schema(min_length = 1, max_length = 64)]
    pub code: String,
}

/// `POST /auth/totp/confirm` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Confirmed {
    /// True: the second factor is on.
    pub enabled: bool,
    /// The recovery codes, shown only now; each signs in once in place of a code.
    pub recovery_codes: Vec<String>,
}

/// `DELETE /auth/totp` and `DELETE /users/{username}/totp` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Disabled {
    /// The user.
    pub username: String,
    /// True when a second factor was on and is now off.
    pub was_enabled: bool,
}

fn check_code(code: &str) -> Result<&str> {
    let c = code.trim();
    if c.is_empty() || c.len() > MAX_CODE_BYTES {
        return Err(ApiError::BadRequest(format!(
            "'code' must be 1 to {MAX_CODE_BYTES} bytes: the 6-digit code of the authenticator app"
        )));
    }
    Ok(c)
}

/// The signed-in local user of the request (second factors are for local accounts).
async fn local_user(auth: &Auth, headers: &HeaderMap) -> Result<String> {
    let Some(s) = token_from(headers) else {
        return Err(ApiError::Unauthorized("authentication required".into()));
    };
    let Some(s) = auth.session(&s).await else {
        return Err(ApiError::Unauthorized(
            "the session has expired or was logged out".into(),
        ));
    };
    if s.source != SignIn::Local || s.role.is_some() {
        return Err(ApiError::Forbidden(
            "second factors are for local accounts; directory and single-sign-on users use their provider's".into(),
        ));
    }
    Ok(s.username)
}

fn publish(events: &EventBus, kind: EventKind, username: &str, summary: String, before: bool, after: bool) {
    let view = |on: bool| serde_json::json!({"username": username, "totp_enabled": on});
    events.publish(NewEvent::write(
        kind,
        "user",
        username,
        "update",
        summary,
        Some(&view(before)),
        Some(&view(after)),
    ));
}

/// The signed-in user's second factor: on or off, recovery codes left.
#[utoipa::path(get, path = "/api/v1/auth/totp", extensions(("x-bootlane-role" = json!("viewer"))), tag = "auth",
    responses((status = 200, body = TotpState), (status = 401), (status = 403, description = "Not a local account")))]
pub async fn state(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Result<Envelope<TotpState>> {
    let user = local_user(&auth, &headers).await?;
    Ok(Envelope::ok(auth.totp().state(&user)?))
}

/// Start a second-factor enrolment for the signed-in local user: a new secret, its
/// `otpauth://` URI and QR code. Off until confirmed; a new enrolment replaces a pending one.
#[utoipa::path(post, path = "/api/v1/auth/totp/enrol", extensions(("x-bootlane-role" = json!("viewer"))), tag = "auth",
    responses((status = 200, body = Enrolment), (status = 401), (status = 403, description = "Not a local account"),
        (status = 409, description = "Already on")))]
pub async fn enrol(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Result<Envelope<Enrolment>> {
    let user = local_user(&auth, &headers).await?;
    Ok(Envelope::ok(auth.totp().enrol(&user).await?))
}

/// Confirm the pending enrolment with a current code: the second factor is on, and the
/// recovery codes are shown this once.
#[utoipa::path(post, path = "/api/v1/auth/totp/confirm", extensions(("x-bootlane-role" = json!("viewer"))), tag = "auth",
    request_body = CodeRequest,
    responses((status = 200, body = Confirmed), (status = 400, description = "No pending enrolment, or a wrong code"),
        (status = 401), (status = 403, description = "Not a local account")))]
pub async fn confirm(
    State(auth): State<Arc<Auth>>,
    State(events): State<Arc<EventBus>>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<CodeRequest>,
) -> Result<Envelope<Confirmed>> {
    let user = local_user(&auth, &headers).await?;
    let code = check_code(&req.code)?;
    let codes = auth.totp().confirm(&user, code, unix_now()).await?;
    publish(
        &events,
        EventKind::UserTotpEnabled,
        &user,
        format!("second factor of {user} turned on"),
        false,
        true,
    );
    Ok(Envelope::ok(Confirmed {
        enabled: true,
        recovery_codes: codes,
    }))
}

/// Turn off the signed-in user's second factor, proven with a current code or a recovery
/// code. A wrong code counts as a failed login (throttled like them).
#[utoipa::path(delete, path = "/api/v1/auth/totp", extensions(("x-bootlane-role" = json!("viewer"))), tag = "auth",
    request_body = CodeRequest,
    responses((status = 200, body = Disabled), (status = 400, description = "No second factor is on, or a malformed code"),
        (status = 401), (status = 403, description = "A wrong code, or not a local account"),
        (status = 429, description = "Too many failed attempts")))]
pub async fn disable(
    State(auth): State<Arc<Auth>>,
    State(events): State<Arc<EventBus>>,
    headers: HeaderMap,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    ApiJson(req): ApiJson<CodeRequest>,
) -> Result<Envelope<Disabled>> {
    let user = local_user(&auth, &headers).await?;
    let code = check_code(&req.code)?;
    let name = super::auth::cut_to_bytes(&user, super::auth::MAX_LOGGED_USERNAME);
    if let Some(e) = auth.throttled(peer.ip(), name) {
        return Err(e);
    }
    match auth.totp().verify(&user, Some(code), unix_now()).await? {
        Verdict::Accepted => {}
        Verdict::NotEnabled => {
            return Err(ApiError::BadRequest("no second factor is on for this user".into()));
        }
        Verdict::Missing | Verdict::Refused => {
            auth.record_failure(peer.ip(), name);
            return Err(ApiError::Forbidden("wrong one-time code".into()));
        }
    }
    let was = auth.totp().remove(&user).await?;
    publish(
        &events,
        EventKind::UserTotpDisabled,
        &user,
        format!("second factor of {user} turned off by the user"),
        was,
        false,
    );
    Ok(Envelope::ok(Disabled {
        username: user,
        was_enabled: was,
    }))
}

/// Turn off another user's second factor (a lost device); they sign in with the password
/// alone until they enrol again.
#[utoipa::path(delete, path = "/api/v1/users/{username}/totp", extensions(("x-bootlane-role" = json!("admin"))), tag = "users",
    params(("username" = String, Path, description = "Login name")),
    responses((status = 200, body = Disabled), (status = 404, description = "No such user"), (status = 401), (status = 403)))]
pub async fn reset_user(
    State(auth): State<Arc<Auth>>,
    State(events): State<Arc<EventBus>>,
    State(store): State<Store>,
    ApiPath(username): ApiPath<String>,
) -> Result<Envelope<Disabled>> {
    if store.kv(USERS_KV)?.get::<User>(&username)?.is_none() {
        return Err(ApiError::NotFound(format!("no user {username:?}")));
    }
    let was = auth.totp().remove(&username).await?;
    if was {
        publish(
            &events,
            EventKind::UserTotpDisabled,
            &username,
            format!("second factor of {username} turned off by an admin"),
            true,
            false,
        );
    }
    Ok(Envelope::ok(Disabled {
        username,
        was_enabled: was,
    }))
}

/// The second-factor routes (behind the session layer).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(state, disable))
        .routes(routes!(enrol))
        .routes(routes!(confirm))
        .routes(routes!(reset_user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_identity::totp::normalise_recovery;

    fn totp_of(t: &Totp, user: &str) -> TOTP {
        let rec = t.record(user).unwrap().unwrap();
        generator_(t.unseal(&rec.secret).unwrap(), user).unwrap()
    }

    fn open() -> (Totp, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        (Totp::open(&Store::temporary(), dir.path()).unwrap(), dir)
    }

    const T0: u64 = 1_800_000_000;

    #[tokio::test]
    async fn a_code_is_never_accepted_twice_nor_an_older_one() {
        let (t, _d) = open();
        t.enrol("alice").await.unwrap();
        let g = totp_of(&t, "alice");
        t.confirm("alice", &g.generate(T0), T0).await.unwrap();
        // The confirmation spent step T0; the same code is refused, also a step later.
        assert_eq!(
            t.verify("alice", Some(&g.generate(T0)), T0).await.unwrap(),
            Verdict::Refused
        );
        let next = T0 + STEP_SECS;
        assert_eq!(
            t.verify("alice", Some(&g.generate(next)), next).await.unwrap(),
            Verdict::Accepted
        );
        assert_eq!(
            t.verify("alice", Some(&g.generate(next)), next).await.unwrap(),
            Verdict::Refused
        );
        // A code of an earlier step than the last accepted one, though within the skew.
        let later = next + STEP_SECS;
        assert_eq!(
            t.verify("alice", Some(&g.generate(T0)), later).await.unwrap(),
            Verdict::Refused
        );
        assert_eq!(t.verify("alice", None, later).await.unwrap(), Verdict::Missing);
        assert_eq!(
            t.verify("bob", Some("123456"), later).await.unwrap(),
            Verdict::NotEnabled
        );
    }

    #[tokio::test]
    async fn one_step_of_skew_is_accepted_either_way_two_are_not() {
        let (t, _d) = open();
        t.enrol("alice").await.unwrap();
        let g = totp_of(&t, "alice");
        t.confirm("alice", &g.generate(T0), T0).await.unwrap();
        let now = T0 + 100 * STEP_SECS;
        let at = |k: i64| now.checked_add_signed(k * STEP_SECS as i64).unwrap();
        // Two steps away either way: refused (and nothing is spent).
        for k in [-2, 2, -3, 3] {
            assert_eq!(
                t.verify("alice", Some(&g.generate(at(k))), now).await.unwrap(),
                Verdict::Refused,
                "{k} steps"
            );
        }
        // One step behind, then one ahead: both accepted (each after the last).
        assert_eq!(
            t.verify("alice", Some(&g.generate(at(-1))), now).await.unwrap(),
            Verdict::Accepted
        );
        assert_eq!(
            t.verify("alice", Some(&g.generate(at(1))), now).await.unwrap(),
            Verdict::Accepted
        );
        // Confirmation accepts the same window, no more.
        let (t2, _d2) = open();
        t2.enrol("bob").await.unwrap();
        let g2 = totp_of(&t2, "bob");
        assert!(t2.confirm("bob", &g2.generate(T0 + 2 * STEP_SECS), T0).await.is_err());
        assert!(t2.confirm("bob", &g2.generate(T0 + STEP_SECS), T0).await.is_ok());
    }

    #[tokio::test]
    async fn recovery_codes_work_once_each_and_are_stored_hashed() {
        let (t, _d) = open();
        t.enrol("alice").await.unwrap();
        let g = totp_of(&t, "alice");
        let codes = t.confirm("alice", &g.generate(T0), T0).await.unwrap();
        assert_eq!(codes.len(), RECOVERY_CODES);
        let rec = t.record("alice").unwrap().unwrap();
        let stored = serde_json::to_string(&rec).unwrap();
        for c in &codes {
            assert_eq!(c.len(), 19, "{c}");
            assert!(!stored.contains(c.as_str()) && !stored.contains(&normalise_recovery(c)));
        }
        // The secret is sealed: its base32 form is not in the record.
        assert!(!stored.contains(&g.get_secret_base32()));
        // Upper case and without dashes works too; the second use is refused.
        let typed = normalise_recovery(&codes[3]).to_uppercase();
        assert_eq!(t.verify("alice", Some(&typed), T0).await.unwrap(), Verdict::Accepted);
        assert_eq!(t.verify("alice", Some(&codes[3]), T0).await.unwrap(), Verdict::Refused);
        assert_eq!(t.state("alice").unwrap().recovery_codes_left, RECOVERY_CODES - 1);
        assert_eq!(
            t.verify("alice", Some("aaaa-bbbb-cccc-dddd"), T0).await.unwrap(),
            Verdict::Refused
        );
    }

    #[tokio::test]
    async fn a_pending_enrolment_does_not_count_and_an_active_one_is_not_replaced() {
        let (t, _d) = open();
        t.enrol("alice").await.unwrap();
        assert!(!t.is_enabled("alice"));
        assert_eq!(t.verify("alice", None, T0).await.unwrap(), Verdict::NotEnabled);
        let g = totp_of(&t, "alice");
        assert!(t.confirm("alice", "000000", T0).await.is_err() || g.generate(T0) == "000000");
        t.confirm("alice", &g.generate(T0), T0).await.unwrap();
        assert!(matches!(t.enrol("alice").await, Err(ApiError::Conflict(_))));
        assert!(t.remove("alice").await.unwrap());
        assert!(!t.is_enabled("alice"));
    }

    #[tokio::test]
    async fn the_key_file_is_private_and_another_key_cannot_unseal() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::temporary();
        let t = Totp::open(&store, dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        t.enrol("alice").await.unwrap();
        let other = tempfile::tempdir().unwrap();
        let t2 = Totp::open(&store, other.path()).unwrap();
        let rec = t2.record("alice").unwrap().unwrap();
        assert!(t2.unseal(&rec.secret).is_err());
        assert!(t.unseal(&rec.secret).is_ok());
    }

    #[tokio::test]
    async fn the_offline_reset_removes_the_factor_of_a_known_user() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::temporary();
        let t = Totp::open(&store, dir.path()).unwrap();
        store
            .kv(USERS_KV)
            .unwrap()
            .put(
                "alice",
                &User {
                    username: "alice".into(),
                    password_hash: String::new(),
                    created_at: OffsetDateTime::now_utc(),
                    role: Role::Admin,
                },
            )
            .await
            .unwrap();
        t.enrol("alice").await.unwrap();
        let g = totp_of(&t, "alice");
        t.confirm("alice", &g.generate(T0), T0).await.unwrap();
        assert!(reset(&store, "alice").await.unwrap());
        assert!(!t.is_enabled("alice"));
        assert!(!reset(&store, "alice").await.unwrap());
        assert!(reset(&store, "nobody").await.is_err());
    }

    mod api {
        use axum::http::{Method, StatusCode};
        use serde_json::json;

        use super::super::super::test_support::{setup, setup_with, ADMIN_PASSWORD};
        use super::*;

        /// Enrols and confirms `admin` through the API; the generator and recovery codes.
        async fn enrol_admin(t: &super::super::super::test_support::T) -> (TOTP, Vec<String>) {
            let v = t
                .expect(Method::POST, "/api/v1/auth/totp/enrol", None, StatusCode::OK, "")
                .await;
            let d = &v["data"];
            assert!(d["qr_png"].as_str().unwrap().starts_with("data:image/png;base64,iVBOR"));
            let uri = d["otpauth_uri"].as_str().unwrap();
            assert!(uri.starts_with("otpauth://totp/Bootlane:admin?secret="), "{uri}");
            let g = TOTP::from_url(uri).unwrap();
            assert_eq!(g.get_secret_base32(), d["secret"].as_str().unwrap());
            let v = t
                .expect(
                    Method::POST,
                    "/api/v1/auth/totp/confirm",
                    Some(json!({"code": g.generate(unix_now())})),
                    StatusCode::OK,
                    "",
                )
                .await;
            let codes = v["data"]["recovery_codes"].as_array().unwrap();
            (g, codes.iter().map(|c| c.as_str().unwrap().to_string()).collect())
        }

        fn login_body(otp: Option<&str>) -> serde_json::Value {
            json!({"username": "admin", "password": ADMIN_PASSWORD, "otp": otp})
        }

        #[tokio::test]
        async fn sign_in_asks_for_the_code_and_refuses_a_wrong_or_reused_one() {
            let mut t = setup().await;
            t.login().await;
            let (g, codes) = enrol_admin(&t).await;
            let v = t
                .expect(Method::GET, "/api/v1/auth/totp", None, StatusCode::OK, "")
                .await;
            assert_eq!(v["data"]["enabled"], true);
            assert_eq!(v["data"]["recovery_codes_left"], RECOVERY_CODES);
            let v = t.expect(Method::GET, "/api/v1/users", None, StatusCode::OK, "").await;
            assert_eq!(v["data"]["users"][0]["totp_enabled"], true, "{v}");
            // The right password alone: 401 with the hint.
            let (s, _, v) = t.call(Method::POST, "/api/v1/auth/login", Some(login_body(None))).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED);
            assert_eq!(v["otp_required"], true, "{v}");
            assert_eq!(v["success"], false);
            // The code the confirmation spent: refused (replay), no hint.
            let last = t.state.auth.totp().record("admin").unwrap().unwrap().last_step;
            let spent = g.generate(last * STEP_SECS);
            let (s, _, v) = t
                .call(Method::POST, "/api/v1/auth/login", Some(login_body(Some(&spent))))
                .await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
            assert!(v.get("otp_required").is_none());
            // A recovery code signs in once.
            let (s, _, v) = t
                .call(Method::POST, "/api/v1/auth/login", Some(login_body(Some(&codes[0]))))
                .await;
            assert_eq!(s, StatusCode::OK, "{v}");
            let (s, _, _) = t
                .call(Method::POST, "/api/v1/auth/login", Some(login_body(Some(&codes[0]))))
                .await;
            assert_eq!(s, StatusCode::UNAUTHORIZED);
            // A wrong password with a code is the plain refusal.
            t.expect(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "admin", "password": "wrong-password", "otp": "123456"})),
                StatusCode::UNAUTHORIZED,
                "wrong user name or password",
            )
            .await;
            // An over-long code is a 400.
            t.expect(
                Method::POST,
                "/api/v1/auth/login",
                Some(login_body(Some(&"1".repeat(65)))),
                StatusCode::BAD_REQUEST,
                "'otp'",
            )
            .await;
            // Turning it off needs a right code; then the password alone signs in.
            t.expect(
                Method::DELETE,
                "/api/v1/auth/totp",
                Some(json!({"code": "not-a-code"})),
                StatusCode::FORBIDDEN,
                "wrong one-time code",
            )
            .await;
            t.expect(
                Method::DELETE,
                "/api/v1/auth/totp",
                Some(json!({"code": codes[1]})),
                StatusCode::OK,
                "",
            )
            .await;
            let (s, _, v) = t.call(Method::POST, "/api/v1/auth/login", Some(login_body(None))).await;
            assert_eq!(s, StatusCode::OK, "{v}");
            let kinds: Vec<String> = t
                .state
                .events
                .after(0, 10_000)
                .unwrap()
                .into_iter()
                .map(|e| e.kind)
                .collect();
            assert!(kinds.contains(&"user.totp_enabled".to_string()));
            assert!(kinds.contains(&"user.totp_disabled".to_string()));
            let all = serde_json::to_string(&t.state.events.after(0, 10_000).unwrap()).unwrap();
            for c in &codes {
                assert!(!all.contains(c.as_str()), "no recovery code in events");
            }
            assert!(!all.contains(&g.get_secret_base32()), "no secret in events");
        }

        #[tokio::test]
        async fn a_wrong_code_counts_toward_the_login_throttle() {
            let mut t = setup().await;
            t.login().await;
            enrol_admin(&t).await;
            // MAX_FAILURES wrong codes from one address, each with the right password...
            for _ in 0..crate::api::auth::MAX_FAILURES {
                let (s, _, v) = t
                    .call(Method::POST, "/api/v1/auth/login", Some(login_body(Some("000000"))))
                    .await;
                // (000000 might be the current code once in a million runs: then it signs in.)
                assert!(s == StatusCode::UNAUTHORIZED || s == StatusCode::OK, "{v}");
            }
            // ...and the next attempt is throttled before any check.
            let (s, _, v) = t
                .call(Method::POST, "/api/v1/auth/login", Some(login_body(Some("111111"))))
                .await;
            assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{v}");
            // A missing code is no failure: a fresh client is not throttled by asking.
            let mut t = setup().await;
            t.login().await;
            enrol_admin(&t).await;
            for _ in 0..crate::api::auth::MAX_FAILURES + 2 {
                let (_, _, v) = t.call(Method::POST, "/api/v1/auth/login", Some(login_body(None))).await;
                assert_eq!(v["otp_required"], true, "{v}");
            }
        }

        #[tokio::test]
        async fn required_for_admins_leaves_an_admin_without_a_factor_only_enrolment() {
            let mut t = setup_with(|c| c.auth.totp.required_for_admins = true).await;
            t.login().await;
            t.expect(Method::GET, "/api/v1/users", None, StatusCode::FORBIDDEN, ENROL_FIRST)
                .await;
            t.expect(Method::GET, "/api/v1/events", None, StatusCode::FORBIDDEN, ENROL_FIRST)
                .await;
            t.expect(Method::GET, "/api/v1/auth/totp", None, StatusCode::OK, "")
                .await;
            let (g, _) = enrol_admin(&t).await;
            // Confirmed: the same session is whole.
            t.expect(Method::GET, "/api/v1/users", None, StatusCode::OK, "").await;
            // A viewer without a factor is not restricted.
            t.expect(
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": "vera", "password": "vera-Kx7#pL4w-first", "role": "viewer"})),
                StatusCode::CREATED,
                "",
            )
            .await;
            let mut v = setup_with(|c| c.auth.totp.required_for_admins = false).await;
            v.login().await;
            v.expect(Method::GET, "/api/v1/users", None, StatusCode::OK, "").await;
            drop(g);
            // An admin can reset another user's factor; unknown users are 404.
            t.expect(
                Method::DELETE,
                "/api/v1/users/nobody/totp",
                None,
                StatusCode::NOT_FOUND,
                "no user",
            )
            .await;
            let v = t
                .expect(Method::DELETE, "/api/v1/users/admin/totp", None, StatusCode::OK, "")
                .await;
            assert_eq!(v["data"]["was_enabled"], true);
            t.expect(Method::GET, "/api/v1/users", None, StatusCode::FORBIDDEN, ENROL_FIRST)
                .await;
        }
    }
}
