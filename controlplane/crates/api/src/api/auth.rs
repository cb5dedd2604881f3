//! Authentication (spec "Authentication"): users with argon2id password hashes, sessions
//! kept in the store (they survive restarts) behind the `bootlane_session` cookie, login
//! throttling per client address, and the middleware that guards every protected route.
//! The first start creates `admin` with `BOOTLANE_ADMIN_PASSWORD` or a generated
//! password written to `<data_dir>/initial-admin-password` (mode 0600).
//!
//! A failed login publishes `auth.login_failed` with the user name cut to
//! [`MAX_LOGGED_USERNAME`] bytes, at most [`FAILED_EVENT_BURST`] at once and one per
//! [`FAILED_EVENT_REFILL`] afterwards per source network ([`source_network`]: /24 for
//! IPv4, /64 for IPv6); failures beyond that are counted in
//! [`LOGIN_FAILED_EVENTS_SUPPRESSED`] instead, so a password-guessing run cannot flood
//! the event history and the audit log.
//!
//! Passwords: argon2id (the `argon2` crate's default parameters) hashed and verified on
//! tokio's blocking pool, at most [`ARGON2_CONCURRENCY`] at a time (a login flood waits
//! for a slot without holding a thread, and argon2's memory use stays bounded). A login
//! for an unknown user verifies against a dummy hash made once with the same parameters,
//! so it costs what a wrong password costs. New and changed passwords must pass
//! [`password_policy`]: at least [`MIN_PASSWORD_CHARS`] characters, not the user name
//! (nor reversed, any case), and a zxcvbn strength of at least [`MIN_PASSWORD_SCORE`]
//! (zxcvbn's embedded lists of common passwords, words and names, and its patterns).
//!
//! Throttling: failed logins are counted per client address ([`MAX_FAILURES`]), per
//! source network ([`MAX_NETWORK_FAILURES`]) and per user name ([`MAX_USER_FAILURES`])
//! within [`FAILURE_WINDOW`]; beyond any of them the login answers 429 before any
//! password work. Counting per user name means a guessing run can lock that name out for
//! the window, whatever the address; that is the price of stopping distributed guessing.
//!
//! In-memory state: the failed-login counters and event buckets (deliberately not
//! persisted), each a map of at most [`MAX_TRACKED`] keys, the argon2 semaphore and the
//! dummy hash (process-wide statics: they bound the process, not one [`Auth`]).

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
    roles::{Role, RouteRoles},
    AppState,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
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
/// Failed logins from one source network ([`source_network`]) allowed per window.
pub const MAX_NETWORK_FAILURES: u32 = 20;
/// Failed logins for one user name (from anywhere) allowed per window.
pub const MAX_USER_FAILURES: u32 = 10;
/// Argon2 computations (hash or verify) running at once, process-wide; each uses about
/// 19 MiB (argon2id m = 19456 KiB).
pub const ARGON2_CONCURRENCY: usize = 4;
/// Shortest password accepted for a new or changed password, in characters.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest password accepted, in bytes.
pub const MAX_PASSWORD_BYTES: usize = 1024;
/// Lowest zxcvbn score (0-4; 3 means about 10^10 guesses) accepted for a new password.
pub const MIN_PASSWORD_SCORE: u8 = 3;
/// Throttle window.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(300);
/// Longest user name (bytes, cut on a character boundary) a failed-login event carries.
pub const MAX_LOGGED_USERNAME: usize = 64;
/// `auth.login_failed` events one source network may publish at once.
pub const FAILED_EVENT_BURST: u32 = 5;
/// After the burst, one more `auth.login_failed` event per source network per this long.
pub const FAILED_EVENT_REFILL: Duration = Duration::from_secs(12);
/// Most keys (addresses, networks, user names) any in-memory login map holds.
pub const MAX_TRACKED: usize = 10_000;
pub use bootlane_core::metrics::LOGIN_FAILED_EVENTS_SUPPRESSED;

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn cut_to_bytes(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The network `ip` is throttled and budgeted as: its /24 for IPv4 (IPv4-mapped IPv6
/// addresses count as IPv4), its /64 for IPv6, as the network's first address.
pub fn source_network(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v4) & 0xffff_ff00)),
        IpAddr::V6(v6) => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
    }
}

/// Token buckets per key, at most `capacity` keys: each key holds up to `burst` tokens
/// and gains one every `refill`. A key whose bucket is full again is forgotten (it is
/// the same as a new key); when the table is full of keys that are not, a new key gets
/// no token (the caller counts it) rather than evicting one that is spending.
pub struct TokenBuckets<K> {
    map: HashMap<K, (f64, Instant)>,
    capacity: usize,
    burst: f64,
    refill: Duration,
}

impl<K: std::hash::Hash + Eq + Copy> TokenBuckets<K> {
    /// Empty buckets of `burst` tokens refilled one per `refill`, at most `capacity` keys.
    pub fn new(capacity: usize, burst: u32, refill: Duration) -> Self {
        Self {
            map: HashMap::new(),
            capacity,
            burst: f64::from(burst),
            refill,
        }
    }

    fn level(&self, tokens: f64, since: Instant, now: Instant) -> f64 {
        let gained = now.saturating_duration_since(since).as_secs_f64() / self.refill.as_secs_f64();
        (tokens + gained).min(self.burst)
    }

    /// Takes a token of `key` at `now`; false when it has none (or the table is full).
    pub fn take(&mut self, key: K, now: Instant) -> bool {
        if !self.map.contains_key(&key) && self.map.len() >= self.capacity {
            let burst = self.burst;
            let full: Vec<K> = self
                .map
                .iter()
                .filter(|(_, (t, since))| self.level(*t, *since, now) >= burst)
                .map(|(k, _)| *k)
                .collect();
            for k in full {
                self.map.remove(&k);
            }
            if self.map.len() >= self.capacity {
                return false;
            }
        }
        let (tokens, since) = self.map.get(&key).copied().unwrap_or((self.burst, now));
        let level = self.level(tokens, since, now);
        if level < 1.0 {
            return false;
        }
        self.map.insert(key, (level - 1.0, now));
        true
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no key is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

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
    /// The user's role; a user stored before roles existed reads as `admin` (every user
    /// was one).
    #[serde(default = "legacy_role")]
    pub role: Role,
}

fn legacy_role() -> Role {
    Role::Admin
}

/// A stored session (keyed by the SHA-256 of its token, so a stolen database holds no
/// usable token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// Owner.
    pub username: String,
    /// Expiry: the session's maximum age is fixed when it starts (`[api] session_ttl_secs`).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// The role given at sign-in to a user from a directory or an OpenID provider (their
    /// groups are read again at each sign-in, never later); `None` for a local user, whose
    /// stored role is read at each request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Where the user was authenticated.
    #[serde(default)]
    pub source: SignIn,
    /// The ID token of a single-sign-on session (the `id_token_hint` of the provider's
    /// logout URL); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

/// Where a session's user was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SignIn {
    /// A local account (the `users` tree), by password.
    #[default]
    Local,
    /// An LDAP directory (`[auth.ldap]`), by a bind with the user's password.
    Ldap,
    /// An OpenID Connect provider (`[auth.oidc]`), by the authorization code flow.
    Oidc,
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
    /// For a user with a second factor on: the current 6-digit code or a recovery code
    /// ([`super::totp`]); without it such a login answers 401 with `"otp_required": true`.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub otp: Option<String>,
}

/// `POST /auth/login` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginResponse {
    /// User name.
    pub username: String,
    /// The user's role.
    pub role: Role,
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
    /// That user's role (what the UI offers; the API enforces it).
    pub role: Option<Role>,
    /// Expiry (of the session, or of the API token the request came with), RFC 3339.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// The API token's name when the request came with one instead of a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Users, sessions and throttling.
pub struct Auth {
    users: Kv,
    sessions: Kv,
    ttl_secs: std::sync::atomic::AtomicU64,
    failures: Mutex<Failures>,
    /// Argon2 verifications run by [`Auth::login`] (the equal-cost proof in tests).
    verifications: Arc<std::sync::atomic::AtomicU64>,
    /// `auth.login_failed` budget per source network.
    failed_events: Mutex<TokenBuckets<IpAddr>>,
    /// Failed logins whose event was suppressed since start.
    suppressed: std::sync::atomic::AtomicU64,
    events: Arc<EventBus>,
    tokens: super::tokens::Tokens,
    /// `[auth.ldap]`: the directory asked for a name that is not a local user.
    directory: Option<Arc<bootlane_identity::ldap::Directory>>,
    /// Second factors of local users.
    totp: super::totp::Totp,
    /// The OpenID Connect provider (`[auth.oidc]`), when configured.
    oidc: Option<Arc<bootlane_identity::oidc::Oidc>>,
}

/// Who is making a request, as [`require_session`] found it: put in the request's
/// extensions for the handlers that act on the caller's own things (tokens).
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user (a token's owner for a token).
    pub username: String,
    /// The role the request acts with (`None`: a session whose local user was deleted).
    pub role: Option<Role>,
    /// How the user signed in (a token's owner: how they had signed in to create it).
    pub source: SignIn,
    /// The API token's name when the request came with one.
    pub token: Option<String>,
    /// The session's or the token's expiry.
    pub expires_at: OffsetDateTime,
}

fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Hashes a password with argon2id and a random salt, on the calling thread (blocking:
/// tens of milliseconds).
///
/// # Errors
/// Only if argon2 rejects its parameters.
pub fn hash_password_blocking(pw: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(pw.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
}

/// A random 24-character alphanumeric password (about 143 bits), as the first start gives
/// `admin` when `BOOTLANE_ADMIN_PASSWORD` is not set; it passes [`password_policy`].
pub fn generated_password() -> String {
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(24)
        .map(char::from)
        .collect()
}

/// Bounds argon2 work process-wide (see [`ARGON2_CONCURRENCY`]).
static ARGON2_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(ARGON2_CONCURRENCY);

/// Runs `f` (argon2 work) on the blocking pool once one of the [`ARGON2_CONCURRENCY`]
/// slots is free; waiting holds no thread.
async fn off_workers<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> anyhow::Result<R> {
    let _slot = ARGON2_SLOTS.acquire().await?;
    Ok(tokio::task::spawn_blocking(move || {
        let _running = Running::enter();
        f()
    })
    .await?)
}

/// Argon2 computations running now, and the most that ever ran at once (the bound the
/// semaphore keeps, observable in tests).
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static RUNNING_PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one computation in [`RUNNING`] while it lives.
struct Running;

impl Running {
    fn enter() -> Self {
        let now = RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        RUNNING_PEAK.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
        Self
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Hashes a password with argon2id and a random salt on the blocking pool (bounded, see
/// [`ARGON2_CONCURRENCY`]).
///
/// # Errors
/// Only if argon2 rejects its parameters or the blocking task panics.
pub async fn hash_password(pw: &str) -> anyhow::Result<String> {
    let pw = pw.to_owned();
    off_workers(move || hash_password_blocking(&pw)).await?
}

/// The hash an unknown user's login is verified against: a random password hashed once
/// per process with the parameters real hashes get.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let pw: String = rand::thread_rng()
            .sample_iter(&Alphanumeric)
            .take(32)
            .map(char::from)
            .collect();
        hash_password_blocking(&pw).expect("argon2 default parameters are valid")
    });
    &DUMMY
}

/// One argon2 verification of `password` against `stored` (a user's PHC string), or
/// against [`dummy_hash`] when there is no user or the stored string does not parse, so
/// every outcome costs one verification; true only for a real hash that matches.
/// Blocking. Counts the verification in `counter`.
fn verify_blocking(stored: Option<&str>, password: &str, counter: &std::sync::atomic::AtomicU64) -> bool {
    let real = stored.and_then(|h| PasswordHash::new(h).ok());
    let is_real = real.is_some();
    let hash = match real {
        Some(h) => h,
        None => PasswordHash::new(dummy_hash()).expect("the dummy hash is a PHC string"),
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ok = Argon2::default().verify_password(password.as_bytes(), &hash).is_ok();
    ok && is_real
}

/// Checks a new password for `username` against the policy: at most
/// [`MAX_PASSWORD_BYTES`] bytes, at least [`MIN_PASSWORD_CHARS`] characters, not the user
/// name or the user name reversed (any case), and a zxcvbn score of at least
/// [`MIN_PASSWORD_SCORE`] (zxcvbn judges the first 100 characters against its lists of
/// common passwords, words and names, keyboard patterns, sequences, dates and the user
/// name).
///
/// # Errors
/// A message naming the rule the password breaks (for a 400).
pub fn password_policy(username: &str, password: &str) -> Result<(), String> {
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!("'password' must be at most {MAX_PASSWORD_BYTES} bytes"));
    }
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(format!(
            "'password' must be at least {MIN_PASSWORD_CHARS} characters (this one has {chars})"
        ));
    }
    let pw = password.to_lowercase();
    let name = username.to_lowercase();
    if pw == name || pw == name.chars().rev().collect::<String>() {
        return Err("'password' must not be the user name or the user name reversed".into());
    }
    let estimate = zxcvbn::zxcvbn(password, &[username, "bootlane"]);
    let score = u8::from(estimate.score());
    if score < MIN_PASSWORD_SCORE {
        let why = estimate
            .feedback()
            .and_then(|f| f.warning())
            .map_or_else(String::new, |w| format!(": {w}"));
        return Err(format!(
            "'password' is too easy to guess (strength {score} of 4, at least {MIN_PASSWORD_SCORE} needed; \
             common passwords, words, names and keyboard patterns score low){why}"
        ));
    }
    Ok(())
}

/// Failed-login counts `(failures, window start)` per key, at most [`MAX_TRACKED`] keys:
/// expired windows are dropped first, then the oldest window.
struct Counts<K> {
    map: HashMap<K, (u32, Instant)>,
}

impl<K> Default for Counts<K> {
    fn default() -> Self {
        Self { map: HashMap::new() }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Counts<K> {
    /// Seconds left in the window of `key` when it has `max` failures or more.
    fn blocked(&mut self, key: &K, max: u32) -> Option<u64> {
        match self.map.get(key) {
            Some((_, since)) if since.elapsed() >= FAILURE_WINDOW => {
                self.map.remove(key);
                None
            }
            Some((n, since)) if *n >= max => Some((FAILURE_WINDOW - since.elapsed()).as_secs().max(1)),
            _ => None,
        }
    }

    fn record(&mut self, key: K) {
        if !self.map.contains_key(&key) && self.map.len() >= MAX_TRACKED {
            self.map.retain(|_, (_, since)| since.elapsed() < FAILURE_WINDOW);
            if self.map.len() >= MAX_TRACKED {
                let oldest = self
                    .map
                    .iter()
                    .min_by_key(|(_, (_, since))| *since)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    self.map.remove(&k);
                }
            }
        }
        let e = self.map.entry(key).or_insert((0, Instant::now()));
        e.0 += 1;
    }
}

/// The three failed-login counters.
#[derive(Default)]
struct Failures {
    by_addr: Counts<IpAddr>,
    by_net: Counts<IpAddr>,
    by_user: Counts<String>,
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
            failures: Mutex::new(Failures::default()),
            verifications: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            failed_events: Mutex::new(TokenBuckets::new(MAX_TRACKED, FAILED_EVENT_BURST, FAILED_EVENT_REFILL)),
            suppressed: std::sync::atomic::AtomicU64::new(0),
            tokens: super::tokens::Tokens::open(store, events.clone())?,
            events,
            directory: None,
            totp: super::totp::Totp::open(store, data_dir)?,
            oidc: None,
        };
        // Made now, so the first unknown-user login costs no more than later ones.
        off_workers(|| dummy_hash().len()).await?;
        if auth.users.iter::<User>()?.is_empty() {
            let (pw, generated) = match admin_password {
                Some(p) if !p.is_empty() => (p, false),
                _ => (generated_password(), true),
            };
            if let Err(why) = password_policy("admin", &pw) {
                anyhow::bail!("BOOTLANE_ADMIN_PASSWORD is refused: {why}");
            }
            let user = User {
                username: "admin".into(),
                password_hash: hash_password(&pw).await?,
                created_at: OffsetDateTime::now_utc(),
                role: Role::Admin,
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

    /// The 429 for a login from `ip` as `name` (already cut), if any counter is over.
    pub(super) fn throttled(&self, ip: IpAddr, name: &str) -> Option<ApiError> {
        let mut f = self.failures.lock().expect("failures lock");
        let net = source_network(ip);
        let prefix = if net.is_ipv4() { 24 } else { 64 };
        let (secs, who) = if let Some(s) = f.by_addr.blocked(&ip, MAX_FAILURES) {
            (s, format!("from {ip}"))
        } else if let Some(s) = f.by_net.blocked(&net, MAX_NETWORK_FAILURES) {
            (s, format!("from {net}/{prefix}"))
        } else if let Some(s) = f.by_user.blocked(&name.to_string(), MAX_USER_FAILURES) {
            (s, format!("for user name {name:?}"))
        } else {
            return None;
        };
        Some(ApiError::TooManyRequests(
            format!("too many failed logins {who}; try again in {secs} s"),
            secs,
        ))
    }

    pub(super) fn record_failure(&self, ip: IpAddr, name: &str) {
        let mut f = self.failures.lock().expect("failures lock");
        f.by_addr.record(ip);
        f.by_net.record(source_network(ip));
        f.by_user.record(name.to_string());
    }

    /// Argon2 verifications [`Auth::login`] has run since start.
    pub fn verifications(&self) -> u64 {
        self.verifications.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes `auth.login_failed` for `username` from `ip` (the name cut to
    /// [`MAX_LOGGED_USERNAME`] bytes) when the source network has budget left, else
    /// counts it in [`LOGIN_FAILED_EVENTS_SUPPRESSED`].
    pub(super) fn failed_login_event(&self, ip: IpAddr, username: &str) {
        let allowed = self
            .failed_events
            .lock()
            .expect("failed-event buckets lock")
            .take(source_network(ip), Instant::now());
        if !allowed {
            self.suppressed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            metrics::counter!(LOGIN_FAILED_EVENTS_SUPPRESSED).increment(1);
            return;
        }
        let name = cut_to_bytes(username, MAX_LOGGED_USERNAME);
        self.events.publish(
            NewEvent::new(
                EventKind::AuthLoginFailed,
                format!("failed login for {name:?} from {ip}"),
            )
            .resource("user", name)
            .remote(ip),
        );
    }

    /// Failed logins whose `auth.login_failed` event was suppressed since start.
    pub fn suppressed_failed_events(&self) -> u64 {
        self.suppressed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Session lifetime for new sessions.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Changes the lifetime of sessions created from now on (`/settings/general`).
    pub fn set_ttl(&self, ttl: Duration) {
        self.ttl_secs.store(ttl.as_secs(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Checks the password (one argon2 verification off the async workers, also for an
    /// unknown user), then for a local user with a second factor on the one-time code
    /// `otp` ([`super::totp`]), and creates a session; returns `(token, session)`. A name
    /// that is not a local user is checked against the directory when `[auth.ldap]` is set
    /// ([`bootlane_identity::ldap::Directory::authenticate`]); a local user is always checked locally.
    ///
    /// # Errors
    /// 429 when the address, its network or the user name is throttled (before any
    /// password work), 401 on a wrong user or password, a missing code
    /// ([`super::totp::OTP_REQUIRED`]) or a wrong or reused one; for a directory user also
    /// 403 (no group maps to a role) and 503 (the directory is unavailable).
    pub async fn login(
        &self,
        ip: IpAddr,
        username: &str,
        password: &str,
        otp: Option<&str>,
    ) -> Result<(String, Session)> {
        let name = cut_to_bytes(username, MAX_LOGGED_USERNAME);
        if let Some(e) = self.throttled(ip, name) {
            return Err(e);
        }
        let stored = self.users.get::<User>(username)?.map(|u| u.password_hash);
        if let (None, Some(dir)) = (&stored, &self.directory) {
            return self.directory_login(dir, ip, username, password).await;
        }
        let (pw, counter) = (password.to_owned(), self.verifications.clone());
        let ok = off_workers(move || verify_blocking(stored.as_deref(), &pw, &counter))
            .await
            .map_err(ApiError::Internal)?;
        if !ok {
            self.record_failure(ip, name);
            self.failed_login_event(ip, username);
            return Err(ApiError::Unauthorized("wrong user name or password".into()));
        }
        self.second_factor(ip, username, otp).await?;
        {
            let mut f = self.failures.lock().expect("failures lock");
            f.by_addr.map.remove(&ip);
            f.by_user.map.remove(name);
        }
        self.start_session(ip, username, None, SignIn::Local).await
    }

    /// Uses `directory` (`[auth.ldap]`) for the names that are not local users.
    pub fn with_directory(mut self, directory: bootlane_identity::ldap::Directory) -> Self {
        self.directory = Some(Arc::new(directory));
        self
    }

    /// Turns on single sign-on through an OpenID Connect provider ([`bootlane_identity::oidc`]).
    pub fn with_oidc(mut self, oidc: bootlane_identity::oidc::Oidc) -> Self {
        self.oidc = Some(Arc::new(oidc));
        self
    }

    /// The OpenID Connect provider, when configured.
    pub fn oidc(&self) -> Option<&bootlane_identity::oidc::Oidc> {
        self.oidc.as_deref()
    }

    /// Signs `username` (not a local user) in with the directory: on success a session
    /// with the role the user's groups map to ([`SignIn::Ldap`]); a refusal counts as a
    /// failed login like a wrong local password.
    ///
    /// # Errors
    /// 401 "wrong user name or password" (unknown user, wrong or empty password), 403
    /// when no group of the user maps to a role, 503 when the directory is unavailable
    /// (the cause is logged), store errors.
    async fn directory_login(
        &self,
        directory: &bootlane_identity::ldap::Directory,
        ip: IpAddr,
        username: &str,
        password: &str,
    ) -> Result<(String, Session)> {
        use bootlane_identity::ldap::DirectoryError;
        let name = cut_to_bytes(username, MAX_LOGGED_USERNAME);
        match directory.authenticate(username, password).await {
            Ok(role) => {
                {
                    let mut f = self.failures.lock().expect("failures lock");
                    f.by_addr.map.remove(&ip);
                    f.by_user.map.remove(name);
                }
                tracing::info!(user = ?name, %ip, role = role.as_str(), "directory sign-in");
                self.start_session(ip, username, Some(role), SignIn::Ldap).await
            }
            Err(DirectoryError::Refused) => {
                self.record_failure(ip, name);
                self.failed_login_event(ip, username);
                Err(ApiError::Unauthorized("wrong user name or password".into()))
            }
            Err(DirectoryError::NoRole) => {
                tracing::warn!(user = ?name, %ip, "directory sign-in refused: no group maps to a role");
                Err(ApiError::Forbidden(format!(
                    "{name:?} is in no directory group that maps to a Bootlane role; ask an administrator to map one of the user's groups in [auth.ldap] group_roles"
                )))
            }
            Err(DirectoryError::Unavailable(why)) => {
                tracing::warn!(user = ?name, %ip, url = directory.url(), "directory sign-in failed: {why}");
                Err(ApiError::ServiceUnavailable(
                    "the directory ([auth.ldap]) is unavailable; local accounts can still sign in; the server log has the cause".into(),
                ))
            }
        }
    }

    /// Creates a session for `username` authenticated by `source` from `ip` and publishes
    /// `auth.login`; returns `(token, session)`. `role` is `None` for a local user (the
    /// stored role applies at each request) and the mapped role for a directory or
    /// single-sign-on user.
    ///
    /// # Errors
    /// Store errors.
    pub async fn start_session(
        &self,
        ip: IpAddr,
        username: &str,
        role: Option<Role>,
        source: SignIn,
    ) -> Result<(String, Session)> {
        self.start_session_with_id_token(ip, username, role, source, None).await
    }

    /// [`Auth::start_session`] keeping the provider's `id_token` in the session (for
    /// the provider's logout).
    ///
    /// # Errors
    /// Store errors.
    pub async fn start_session_with_id_token(
        &self,
        ip: IpAddr,
        username: &str,
        role: Option<Role>,
        source: SignIn,
        id_token: Option<String>,
    ) -> Result<(String, Session)> {
        let token: String = rand::thread_rng()
            .sample_iter(&Alphanumeric)
            .take(43)
            .map(char::from)
            .collect();
        let session = Session {
            username: username.into(),
            expires_at: OffsetDateTime::now_utc() + self.ttl(),
            role,
            source,
            id_token,
        };
        self.sessions.put(&hash_token(&token), &session).await?;
        bootlane_core::events::with_actor(
            bootlane_core::events::Actor {
                user: username.into(),
                remote_addr: Some(ip.to_string()),
                token: None,
            },
            async {
                self.events.publish(
                    NewEvent::new(EventKind::AuthLogin, format!("{username} logged in from {ip}"))
                        .resource("user", username),
                );
            },
        )
        .await;
        Ok((token, session))
    }

    /// Second factors of local users ([`super::totp`]).
    pub fn totp(&self) -> &super::totp::Totp {
        &self.totp
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

    /// The role of the local user `username` now; `None` for a user that no longer exists.
    pub fn role(&self, username: &str) -> Option<Role> {
        self.users.get::<User>(username).ok().flatten().map(|u| u.role)
    }

    /// The role a session acts with: the one given at sign-in for a directory or
    /// single-sign-on user, else the local user's stored role now (`None` once deleted).
    pub fn session_role(&self, session: &Session) -> Option<Role> {
        match session.role {
            Some(r) => Some(r),
            None => self.role(&session.username),
        }
    }

    /// The API tokens.
    pub fn tokens(&self) -> &super::tokens::Tokens {
        &self.tokens
    }

    /// Who presents `credential` (a session token, or an API token `blt_...` used from
    /// `from`); `None` when it is neither a live session nor a live token. A token acts
    /// with its role capped by its local owner's current role; a token whose local owner no
    /// longer exists is refused.
    pub async fn caller(&self, credential: &str, from: Option<IpAddr>) -> Option<Caller> {
        if credential.starts_with(super::tokens::PREFIX) {
            let t = self.tokens.authenticate(credential, from).await?;
            let role = match t.owner_source {
                SignIn::Local => t.role.min(self.role(&t.owner)?),
                SignIn::Ldap | SignIn::Oidc => t.role,
            };
            return Some(Caller {
                username: t.owner,
                role: Some(role),
                source: t.owner_source,
                token: Some(t.name),
                expires_at: t.expires_at,
            });
        }
        let s = self.session(credential).await?;
        Some(Caller {
            role: self.session_role(&s),
            username: s.username,
            source: s.source,
            token: None,
            expires_at: s.expires_at,
        })
    }

    /// Ends a session.
    ///
    /// # Errors
    /// Store errors.
    pub async fn logout(&self, token: &str) -> Result<()> {
        let key = hash_token(token);
        if let Some(s) = self.sessions.get::<Session>(&key)? {
            self.events.publish(
                NewEvent::new(EventKind::AuthLogout, format!("{} logged out", s.username))
                    .resource("user", &s.username),
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

/// What [`require_session`] checks against: the server's state and the role each route
/// declares.
#[derive(Clone)]
pub struct Guard {
    /// The server's state (its sessions and users).
    pub state: AppState,
    /// The declared role of every route ([`RouteRoles::from_doc`]).
    pub roles: Arc<RouteRoles>,
}

/// Middleware for protected routes: 401 with the envelope unless the request carries a
/// live session, 403 with the envelope when the session's user has a role below the one
/// the route declares ([`super::roles`]). The role is read per request, so a changed
/// role applies to open sessions at once.
pub async fn require_session(State(guard): State<Guard>, mut req: Request, next: Next) -> Response {
    let state = &guard.state;
    let ip = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    let credential = token_from(req.headers());
    let caller = match &credential {
        Some(t) => state.auth.caller(t, ip).await,
        None => None,
    };
    if let Some(c) = caller {
        let route = req
            .extensions()
            .get::<axum::extract::MatchedPath>()
            .map(|m| m.as_str().to_owned())
            .unwrap_or_default();
        if !c.role.is_some_and(|r| guard.roles.allows(r, req.method(), &route)) {
            let needs = match guard.roles.needs(req.method(), &route) {
                Some(super::roles::Needs::Role(r)) => r.as_str(),
                _ => "admin",
            };
            let who = match &c.token {
                Some(t) => format!("{}'s token {t:?}", c.username),
                None => c.username.clone(),
            };
            return ApiError::Forbidden(format!(
                "{} {route} needs the {needs} role; {who} has {}",
                req.method(),
                c.role.map_or("no role", Role::as_str)
            ))
            .into_response();
        }
        if let Some(refusal) = super::totp::enrolment_gate(state, &c, req.method(), &route) {
            return refusal;
        }
        let actor = bootlane_core::events::Actor {
            user: c.username.clone(),
            remote_addr: ip.map(|ip| ip.to_string()),
            token: c.token.clone(),
        };
        req.extensions_mut().insert(c);
        return bootlane_core::events::with_actor(actor, next.run(req)).await;
    }
    match credential {
        Some(t) if t.starts_with(super::tokens::PREFIX) => ApiError::Unauthorized("the API token is unknown, revoked or expired; create a new one with POST /api/v1/tokens".into()).into_response(),
        Some(_) => ApiError::Unauthorized("the session has expired or was logged out; log in again with POST /api/v1/auth/login".into()).into_response(),
        None => ApiError::Unauthorized("authentication required: log in with POST /api/v1/auth/login {\"username\", \"password\"} and send the bootlane_session cookie, or send an API token as Authorization: Bearer".into()).into_response(),
    }
}

/// Log in.
#[utoipa::path(post, path = "/api/v1/auth/login", extensions(("x-bootlane-role" = json!("public"))), tag = "auth", request_body = LoginRequest,
    responses((status = 200, description = "Logged in; sets the bootlane_session cookie", body = LoginResponse),
              (status = 401, description = "Wrong user name, password or one-time code; `\"otp_required\": true` when a code is needed"),
              (status = 403, description = "A directory user in no group that maps to a role"),
              (status = 429, description = "Too many failed attempts"),
              (status = 503, description = "The directory ([auth.ldap]) is unavailable")))]
pub async fn login(
    State(auth): State<Arc<Auth>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ApiJson(req): ApiJson<LoginRequest>,
) -> Result<Response> {
    // An empty password is refused as a wrong one (401, counted) by `Auth::login`.
    if req.username.is_empty() {
        return Err(ApiError::BadRequest("'username' must not be empty".into()));
    }
    if req.otp.as_ref().is_some_and(|o| o.len() > super::totp::MAX_CODE_BYTES) {
        return Err(ApiError::BadRequest(format!(
            "'otp' must be at most {} bytes",
            super::totp::MAX_CODE_BYTES
        )));
    }
    let (token, session) = match auth
        .login(peer.ip(), &req.username, &req.password, req.otp.as_deref())
        .await
    {
        Err(ApiError::Unauthorized(m)) if m == super::totp::OTP_REQUIRED => {
            return Ok(super::totp::otp_required_response())
        }
        r => r?,
    };
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        auth.ttl().as_secs()
    );
    let role = auth.session_role(&session).unwrap_or_default();
    let mut resp = Envelope::ok(LoginResponse {
        role,
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
/// A single-sign-on session's answer carries `logout_url`, the provider's logout page
/// (RP-initiated logout), when the provider offers one: the UI goes there next.
#[utoipa::path(post, path = "/api/v1/auth/logout", extensions(("x-bootlane-role" = json!("public"))), tag = "auth", responses((status = 200, description = "Logged out; `logout_url` when the provider's logout page should be visited")))]
pub async fn logout(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Result<Response> {
    let mut logout_url = None;
    if let Some(t) = token_from(&headers) {
        if let (Some(o), Some(s)) = (auth.oidc(), auth.session(&t).await) {
            if let (SignIn::Oidc, Some(id)) = (s.source, s.id_token.as_deref()) {
                logout_url = o.logout_url(id).await.map(|u| u.to_string());
            }
        }
        auth.logout(&t).await?;
    }
    let body = match logout_url {
        Some(u) => serde_json::json!({ "logged_out": true, "logout_url": u }),
        None => serde_json::json!({ "logged_out": true }),
    };
    let mut resp = Envelope::ok(body).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("bootlane_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    Ok(resp)
}

/// Check the session.
#[utoipa::path(get, path = "/api/v1/auth/session", extensions(("x-bootlane-role" = json!("public"))), tag = "auth", responses((status = 200, body = SessionInfo)))]
pub async fn session(
    State(auth): State<Arc<Auth>>,
    headers: HeaderMap,
    ext: axum::http::Extensions,
) -> Envelope<SessionInfo> {
    let ip = ext.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    let c = match token_from(&headers) {
        Some(t) => auth.caller(&t, ip).await,
        None => None,
    };
    Envelope::ok(SessionInfo {
        authenticated: c.is_some(),
        role: c.as_ref().and_then(|c| c.role),
        username: c.as_ref().map(|c| c.username.clone()),
        expires_at: c.as_ref().map(|c| c.expires_at),
        token: c.and_then(|c| c.token),
    })
}

/// Routes that need no session, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(session))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn auth() -> (Auth, Arc<EventBus>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::in_memory();
        let a = Auth::open(
            &Store::temporary(),
            dir.path(),
            Duration::from_secs(3600),
            Some(TEST_PASSWORD.into()),
            bus.clone(),
        )
        .await
        .unwrap();
        (a, bus, dir)
    }

    const TEST_PASSWORD: &str = "unit-Tq8vWz3nLp-admin";

    fn failed_events(bus: &EventBus) -> Vec<Event> {
        bus.after(0, 10_000)
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == "auth.login_failed")
            .collect()
    }

    use bootlane_core::events::Event;

    #[tokio::test]
    async fn a_failed_login_event_keeps_at_most_64_bytes_of_the_user_name() {
        let (a, bus, _dir) = auth().await;
        // 1 + 2n bytes: byte 64 falls inside a two-byte character.
        let long = format!("a{}", "\u{e9}".repeat(50_000));
        assert!(a.login("192.0.2.1".parse().unwrap(), &long, "x", None).await.is_err());
        let ev = failed_events(&bus);
        assert_eq!(ev.len(), 1);
        let id = ev[0].resource_id.as_deref().unwrap();
        assert_eq!(id.len(), 63, "cut on the character boundary below 64");
        assert!(long.starts_with(id));
        assert!(ev[0].summary.len() < 200, "{}", ev[0].summary);
        assert_eq!(cut_to_bytes("abc", 64), "abc");
        assert_eq!(cut_to_bytes("", 64), "");
    }

    #[tokio::test]
    async fn failed_login_events_are_rate_limited_per_source_network() {
        let (a, bus, _dir) = auth().await;
        // One failure from each of 8 addresses of one /24 (none reaches the per-address
        // throttle): the first FAILED_EVENT_BURST are published, the rest counted.
        for i in 1..=8u8 {
            let ip: IpAddr = format!("198.51.100.{i}").parse().unwrap();
            assert!(a.login(ip, &format!("guess{i}"), "x", None).await.is_err());
        }
        assert_eq!(failed_events(&bus).len(), FAILED_EVENT_BURST as usize);
        assert_eq!(a.suppressed_failed_events(), 8 - u64::from(FAILED_EVENT_BURST));
        // Another network has its own budget; an IPv6 /64 is one source.
        assert!(a.login("203.0.113.7".parse().unwrap(), "x", "x", None).await.is_err());
        assert_eq!(failed_events(&bus).len(), FAILED_EVENT_BURST as usize + 1);
        assert_eq!(
            source_network("2001:db8:1:2:3:4:5:6".parse().unwrap()),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            source_network("::ffff:192.0.2.200".parse().unwrap()),
            "192.0.2.0".parse::<IpAddr>().unwrap()
        );
    }

    #[tokio::test]
    async fn an_unknown_user_costs_one_verification_with_the_same_parameters() {
        let (a, _bus, _dir) = auth().await;
        let ip: IpAddr = "192.0.2.10".parse().unwrap();
        let n0 = a.verifications();
        assert!(a.login(ip, "admin", "wrong-password", None).await.is_err());
        assert_eq!(a.verifications(), n0 + 1, "a wrong password: one verification");
        assert!(a.login(ip, "nobody-here", "wrong-password", None).await.is_err());
        assert_eq!(a.verifications(), n0 + 2, "an unknown user: one verification too");
        assert!(a.login(ip, "admin", TEST_PASSWORD, None).await.is_ok());
        assert_eq!(a.verifications(), n0 + 3);
        // The dummy carries the parameters a real hash gets, so the work is the same.
        let real: User = a.users.get("admin").unwrap().unwrap();
        let params = |phc: &str| {
            let h = PasswordHash::new(phc).unwrap();
            (h.algorithm.to_string(), h.version, h.params.to_string())
        };
        assert_eq!(params(dummy_hash()), params(&real.password_hash));
    }

    #[tokio::test]
    async fn failures_are_throttled_per_address_network_and_user_name() {
        let (a, _bus, _dir) = auth().await;
        let too_many = |r: Result<(String, Session)>| match r {
            Err(ApiError::TooManyRequests(m, _)) => m,
            other => panic!("expected 429, got {:?}", other.map(|_| ())),
        };
        // Per user name: 10 failures for "admin" from 10 networks; then even the right
        // password from a new address is refused for the window.
        for i in 0..MAX_USER_FAILURES {
            let ip: IpAddr = format!("10.{i}.0.1").parse().unwrap();
            assert!(matches!(
                a.login(ip, "admin", "wrong", None).await,
                Err(ApiError::Unauthorized(_))
            ));
        }
        let m = too_many(
            a.login("10.200.0.1".parse().unwrap(), "admin", TEST_PASSWORD, None)
                .await,
        );
        assert!(m.contains("user name \"admin\""), "{m}");
        // Per network: 20 failures from 20 addresses of one /64, then a 21st address.
        for i in 1..=MAX_NETWORK_FAILURES {
            let ip: IpAddr = format!("2001:db8::{i:x}").parse().unwrap();
            assert!(matches!(
                a.login(ip, &format!("u{i}"), "wrong", None).await,
                Err(ApiError::Unauthorized(_))
            ));
        }
        let m = too_many(a.login("2001:db8::ffff".parse().unwrap(), "other", "wrong", None).await);
        assert!(m.contains("2001:db8::/64"), "{m}");
        // Per address: 5 failures from one address.
        let ip: IpAddr = "172.16.5.5".parse().unwrap();
        for i in 0..MAX_FAILURES {
            let _ = a.login(ip, &format!("v{i}"), "wrong", None).await;
        }
        let m = too_many(a.login(ip, "w", "wrong", None).await);
        assert!(m.contains("from 172.16.5.5"), "{m}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn argon2_runs_off_the_async_worker_at_most_four_at_a_time() {
        // One worker thread: if hashing ran on it, the other task could not run before
        // the hash was done.
        let ran = std::sync::atomic::AtomicBool::new(false);
        let (seen, ()) = tokio::join!(
            async {
                hash_password("off-the-worker-Tq8vWz3n").await.unwrap();
                ran.load(std::sync::atomic::Ordering::SeqCst)
            },
            async { ran.store(true, std::sync::atomic::Ordering::SeqCst) }
        );
        assert!(seen, "the runtime's only worker was free while argon2 ran");
        // A flood of 16 at once never has more than ARGON2_CONCURRENCY running.
        let all: Vec<_> = (0..16)
            .map(|i| hash_password_owned(format!("flood-{i}-Tq8vWz3nLp")))
            .collect();
        for r in futures::future::join_all(all).await {
            r.unwrap();
        }
        let peak = RUNNING_PEAK.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=ARGON2_CONCURRENCY).contains(&peak), "peak {peak}");
    }

    async fn hash_password_owned(pw: String) -> anyhow::Result<String> {
        hash_password(&pw).await
    }

    #[test]
    fn failure_counts_hold_at_most_max_tracked_keys() {
        let mut c: Counts<u32> = Counts::default();
        for k in 0..(MAX_TRACKED as u32 + 50) {
            c.record(k);
        }
        assert_eq!(c.map.len(), MAX_TRACKED);
        assert!(!c.map.contains_key(&0), "the oldest window went first");
    }

    #[test]
    fn the_password_policy_names_the_rule() {
        let p = |u: &str, pw: &str| password_policy(u, pw).err().unwrap_or_default();
        assert!(p("admin", "short-pw").contains("at least 12 characters"));
        assert!(p("operator-alice", "Operator-Alice").contains("user name"));
        assert!(p("operator-alice", "ECILA-ROTAREPO").contains("user name"));
        assert!(p("admin", "password1234").contains("too easy to guess"));
        assert!(p("admin", "qwertyuiop123").contains("too easy to guess"));
        assert!(p("admin", &"x".repeat(1025)).contains("1024 bytes"));
        assert_eq!(p("admin", TEST_PASSWORD), "");
        assert_eq!(p("admin", "correct horse battery staple"), "");
        for _ in 0..20 {
            assert_eq!(p("admin", &generated_password()), "", "generated passwords pass");
        }
    }

    #[tokio::test]
    async fn a_weak_initial_admin_password_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = Auth::open(
            &Store::temporary(),
            dir.path(),
            Duration::from_secs(60),
            Some("admin123".into()),
            EventBus::in_memory(),
        )
        .await
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("BOOTLANE_ADMIN_PASSWORD") && err.contains("12 characters"),
            "{err}"
        );
    }

    #[test]
    fn token_buckets_refill_and_hold_at_most_capacity_keys() {
        let t0 = Instant::now();
        let mut b = TokenBuckets::new(2, 2, Duration::from_secs(10));
        assert!(b.take(1, t0) && b.take(1, t0));
        assert!(!b.take(1, t0), "burst spent");
        assert!(
            b.take(1, t0 + Duration::from_secs(10)),
            "one token back after the refill time"
        );
        assert!(b.take(2, t0) && b.take(2, t0));
        // Full of spending keys: a third key gets nothing and nothing is evicted.
        assert!(!b.take(3, t0 + Duration::from_secs(10)));
        assert_eq!(b.len(), 2);
        // Once key 2's bucket is full again it is forgotten, making room.
        assert!(b.take(3, t0 + Duration::from_secs(25)));
        assert!(b.len() <= 2);
    }

    /// `Auth` with the directory at `url` (and the local user `admin`).
    async fn auth_with(url: &str) -> (Auth, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let a = Auth::open(
            &Store::temporary(),
            dir.path(),
            Duration::from_secs(3600),
            Some(TEST_PASSWORD.into()),
            EventBus::in_memory(),
        )
        .await
        .unwrap()
        .with_directory(
            bootlane_identity::ldap::Directory::new(&bootlane_identity::ldap::test_support::lab_config(url)).unwrap(),
        );
        (a, dir)
    }

    #[tokio::test]
    async fn local_users_never_reach_the_directory_and_others_get_503_when_it_is_down() {
        use ApiError;
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let (url, accepted) = bootlane_identity::ldap::test_support::silent_server().await;
        let (auth, _d) = auth_with(&url).await;
        // The local admin: checked locally, wrong and right password alike.
        let e = auth.login(ip, "admin", "not-the-password", None).await.unwrap_err();
        assert!(matches!(e, ApiError::Unauthorized(_)), "{e:?}");
        let (_, s) = auth.login(ip, "admin", TEST_PASSWORD, None).await.unwrap();
        assert_eq!((s.source, s.role), (SignIn::Local, None));
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
        // Anyone else asks the directory, which does not answer: 503, not counted.
        let e = auth.login(ip, "alice", "secret", None).await.unwrap_err();
        assert!(matches!(e, ApiError::ServiceUnavailable(_)), "{e:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
        // An empty password: 401 without asking it.
        let e = auth.login(ip, "alice", "", None).await.unwrap_err();
        assert!(
            matches!(&e, ApiError::Unauthorized(m) if m == "wrong user name or password"),
            "{e:?}"
        );
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
