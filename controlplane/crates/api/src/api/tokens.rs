//! API tokens: named, expiring credentials for automation, sent as
//! `Authorization: Bearer blt_<id>_<secret>` instead of a session cookie.
//!
//! A signed-in user creates a token for themself with `POST /api/v1/tokens` (a name, a role
//! no higher than their own, an expiry of 1 to [`MAX_EXPIRY_DAYS`] days); the secret is
//! in that answer and nowhere else: the store keeps its SHA-256 ([`TOKENS_KV`], keyed by
//! the token's id), compared in constant time. `GET /api/v1/tokens` lists the caller's
//! tokens (an admin's list holds everyone's) with when and from where each was last used,
//! `DELETE /api/v1/tokens/{id}` revokes one at once (an admin may revoke anyone's; someone
//! else's token is a 404 to everyone else).
//!
//! A request with a token acts with the token's role, capped by the owner's current role
//! for a local owner (a demoted owner's tokens are demoted with them; a deleted owner's
//! tokens are deleted with the account). A token never creates tokens: that needs a
//! password sign-in. Events and audit entries made with a token name it
//! ([`bootlane_core::events::Actor::token`]). Last use is written at most once per
//! [`LAST_USED_EVERY`] per token (or when the address changes), in its own tree
//! ([`USAGE_KV`]), so a busy script does not write on every call and a revoked token is
//! never written back. At most [`MAX_TOKENS_PER_USER`] tokens per user and [`MAX_TOKENS`]
//! in all; tokens expired for more than [`PRUNE_AFTER_DAYS`] days are removed when a token
//! is created.

use std::{net::IpAddr, sync::Arc, time::Duration};

use axum::{extract::State, http::StatusCode, Extension};
use serde::{Deserialize, Serialize};

use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    auth::{Caller, SignIn},
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, Envelope},
    roles::Role,
    AppState,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    service_error::ServiceError,
    store::{Kv, Store},
};
use bootlane_identity::tokens::{check_name, hash_secret, id_of, new_id, new_secret};
pub use bootlane_identity::tokens::{MAX_NAME_CHARS, PREFIX};

/// Store key-value table of the [`StoredToken`]s, keyed by token id.
pub const TOKENS_KV: &str = "api_tokens";
/// Store key-value table of each token's [`Usage`], keyed by token id.
pub const USAGE_KV: &str = "api_token_usage";
/// Tokens one user may hold (expired ones count until revoked or pruned).
pub const MAX_TOKENS_PER_USER: usize = 50;
/// Tokens the server holds in all.
pub const MAX_TOKENS: usize = 10_000;
/// Longest expiry, in days from creation.
pub const MAX_EXPIRY_DAYS: u32 = 365;
/// Days after its expiry an expired token is still listed (then pruned).
pub const PRUNE_AFTER_DAYS: i64 = 30;
/// Last use is written at most this often per token (unless the address changes).
pub const LAST_USED_EVERY: Duration = Duration::from_secs(60);

/// A stored token (never its secret: `secret_hash` is the SHA-256 of the whole
/// `blt_<id>_<secret>` string, hex).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredToken {
    /// Token id (10 letters and digits), also inside the secret.
    pub id: String,
    /// The name its owner gave it.
    pub name: String,
    /// The most the token may do.
    pub role: Role,
    /// The user who created it.
    pub owner: String,
    /// How the owner had signed in when creating it.
    pub owner_source: SignIn,
    /// SHA-256 of the secret, hex.
    pub secret_hash: String,
    /// Creation time.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Expiry; the token is refused from then on.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// When and from where a token was last used.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Usage {
    /// Time of the last request made with it (to [`LAST_USED_EVERY`]).
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The client address of that request, when known.
    pub from: Option<String>,
}

/// A token as the API shows it (never the secret or its hash).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct TokenView {
    /// Token id (the path parameter of `DELETE /tokens/{id}`).
    pub id: String,
    /// Name.
    pub name: String,
    /// The most the token may do (a local owner's lower current role caps it).
    pub role: Role,
    /// Owner's user name.
    pub owner: String,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Expiry, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: OffsetDateTime,
    /// True once the expiry has passed (the token is refused).
    pub expired: bool,
    /// Last use, RFC 3339 (to the minute); `null` when never used.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<OffsetDateTime>,
    /// The client address of the last use.
    pub last_used_from: Option<String>,
}

impl TokenView {
    fn of(t: &StoredToken, usage: Option<Usage>, now: OffsetDateTime) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            role: t.role,
            owner: t.owner.clone(),
            created_at: t.created_at,
            expires_at: t.expires_at,
            expired: t.expires_at <= now,
            last_used_at: usage.as_ref().map(|u| u.at),
            last_used_from: usage.and_then(|u| u.from),
        }
    }
}

/// Body of `POST /tokens`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// A name, unique among the caller's tokens: 1 to 64 letters, digits, spaces and
    /// `. _ - : @ /`.
    #[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9 ._:@/-]{1,64}$")]
    pub name: String,
    /// `viewer`, `operator` or `admin`, no higher than the caller's own role.
    pub role: Role,
    /// Days until it expires: 1 to 365.
    #[schema(minimum = 1, maximum = 365)]
    pub expires_in_days: u32,
}

/// `POST /tokens` answer: the token and its secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    /// The token.
    pub token: TokenView,
    /// `blt_<id>_<secret>`: send it as `Authorization: Bearer <secret>`. It is not stored
    /// and cannot be shown again.
    pub secret: String,
}

/// `GET /tokens` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenList {
    /// The caller's tokens (every user's for an admin), by owner then name.
    pub tokens: Vec<TokenView>,
}

/// Removes every token of `owner` (with their usage); the count removed. Called when a
/// user is deleted.
///
/// # Errors
/// Store errors.
pub async fn remove_owned(store: &Store, owner: &str) -> Result<usize, ServiceError> {
    let tokens = store.kv(TOKENS_KV)?;
    let usage = store.kv(USAGE_KV)?;
    let mut n = 0;
    for (id, t) in tokens.iter::<StoredToken>()? {
        if t.owner == owner {
            tokens.remove(&id).await?;
            usage.remove(&id).await?;
            n += 1;
        }
    }
    Ok(n)
}

/// The token store of the running server: creation, listing, revocation and the check of
/// a presented secret.
pub struct Tokens {
    tokens: Kv,
    usage: Kv,
    events: Arc<EventBus>,
    /// Serialises creations and revocations (the count and name checks, then the write).
    write: tokio::sync::Mutex<()>,
}

impl Tokens {
    /// Tokens over `store`, publishing `token.*` events on `events`.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(store: &Store, events: Arc<EventBus>) -> anyhow::Result<Self> {
        Ok(Self {
            tokens: store.kv(TOKENS_KV)?,
            usage: store.kv(USAGE_KV)?,
            events,
            write: tokio::sync::Mutex::new(()),
        })
    }

    fn view(&self, t: &StoredToken, now: OffsetDateTime) -> TokenView {
        TokenView::of(t, self.usage.get::<Usage>(&t.id).ok().flatten(), now)
    }

    /// Creates a token for `caller` and returns it with its secret.
    ///
    /// # Errors
    /// 403 when the caller came with a token or asks for a role above their own; 400 for a
    /// bad name or expiry; 409 for a name the caller already uses or when a limit is
    /// reached; store errors.
    pub async fn create(&self, caller: &Caller, req: NewToken) -> Result<CreatedToken> {
        if caller.token.is_some() {
            return Err(ApiError::Forbidden(
                "an API token cannot create tokens: sign in with a password to create one".into(),
            ));
        }
        let own = caller.role.unwrap_or_default();
        if req.role > own || caller.role.is_none() {
            return Err(ApiError::Forbidden(format!(
                "a token's role cannot be above its creator's: {} has {own}, asked for {}",
                caller.username, req.role
            )));
        }
        check_name(&req.name)?;
        if !(1..=MAX_EXPIRY_DAYS).contains(&req.expires_in_days) {
            return Err(ApiError::BadRequest(format!(
                "'expires_in_days' must be 1 to {MAX_EXPIRY_DAYS}, got {}",
                req.expires_in_days
            )));
        }
        let _w = self.write.lock().await;
        let now = OffsetDateTime::now_utc();
        let mut all = self.tokens.iter::<StoredToken>()?;
        for (id, t) in &all {
            if t.expires_at + time::Duration::days(PRUNE_AFTER_DAYS) <= now {
                self.tokens.remove(id).await?;
                self.usage.remove(id).await?;
            }
        }
        all.retain(|(_, t)| t.expires_at + time::Duration::days(PRUNE_AFTER_DAYS) > now);
        let mine: Vec<_> = all.iter().filter(|(_, t)| t.owner == caller.username).collect();
        if mine.iter().any(|(_, t)| t.name == req.name) {
            return Err(ApiError::Conflict(format!(
                "{} already has a token named {:?}: revoke it first or choose another name",
                caller.username, req.name
            )));
        }
        if mine.len() >= MAX_TOKENS_PER_USER {
            return Err(ApiError::Conflict(format!(
                "{} already has {MAX_TOKENS_PER_USER} tokens, the most one user may hold: revoke one first",
                caller.username
            )));
        }
        if all.len() >= MAX_TOKENS {
            return Err(ApiError::Conflict(format!(
                "the server already holds {MAX_TOKENS} tokens, the most it keeps: revoke some first"
            )));
        }
        let id = loop {
            let id = new_id();
            if self.tokens.get::<StoredToken>(&id)?.is_none() {
                break id;
            }
        };
        let secret = new_secret(&id);
        let token = StoredToken {
            id: id.clone(),
            name: req.name,
            role: req.role,
            owner: caller.username.clone(),
            owner_source: caller.source,
            secret_hash: hash_secret(&secret),
            created_at: now,
            expires_at: now + time::Duration::days(i64::from(req.expires_in_days)),
        };
        self.tokens.put(&id, &token).await?;
        let view = self.view(&token, now);
        self.events.publish(NewEvent::write(
            EventKind::TokenCreated,
            "token",
            &id,
            "create",
            format!(
                "token {:?} ({}) created for {}, expires {}",
                view.name,
                view.role,
                view.owner,
                view.expires_at.date()
            ),
            None::<&TokenView>,
            Some(&view),
        ));
        Ok(CreatedToken { token: view, secret })
    }

    /// The tokens `caller` may see: their own, or everyone's for an admin; by owner, name.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self, caller: &Caller) -> Result<Vec<TokenView>> {
        let now = OffsetDateTime::now_utc();
        let admin = caller.role == Some(Role::Admin);
        let mut out: Vec<_> = self
            .tokens
            .iter::<StoredToken>()?
            .into_iter()
            .filter(|(_, t)| admin || t.owner == caller.username)
            .map(|(_, t)| self.view(&t, now))
            .collect();
        out.sort_by(|a, b| (&a.owner, &a.name).cmp(&(&b.owner, &b.name)));
        Ok(out)
    }

    /// Revokes token `id` (the caller's own, or anyone's for an admin) and returns it as it
    /// was.
    ///
    /// # Errors
    /// 404 for an unknown id or someone else's token (for a non-admin); store errors.
    pub async fn revoke(&self, caller: &Caller, id: &str) -> Result<TokenView> {
        let _w = self.write.lock().await;
        let t = self
            .tokens
            .get::<StoredToken>(id)?
            .filter(|t| caller.role == Some(Role::Admin) || t.owner == caller.username)
            .ok_or_else(|| ApiError::NotFound(format!("no token {:?} of yours", super::auth::cut_to_bytes(id, 32))))?;
        let view = self.view(&t, OffsetDateTime::now_utc());
        self.tokens.remove(id).await?;
        self.usage.remove(id).await?;
        self.events.publish(NewEvent::write(
            EventKind::TokenRevoked,
            "token",
            id,
            "delete",
            format!("token {:?} of {} revoked", view.name, view.owner),
            Some(&view),
            None::<&TokenView>,
        ));
        Ok(view)
    }

    /// The live token whose secret is `secret`, recording its use from `from`; `None` for a
    /// malformed, unknown, wrong, revoked or expired secret (all alike to the caller).
    pub async fn authenticate(&self, secret: &str, from: Option<IpAddr>) -> Option<StoredToken> {
        let id = id_of(secret)?;
        let t = self.tokens.get::<StoredToken>(id).ok().flatten()?;
        let presented = hash_secret(secret);
        if !bool::from(presented.as_bytes().ct_eq(t.secret_hash.as_bytes())) {
            return None;
        }
        let now = OffsetDateTime::now_utc();
        if t.expires_at <= now {
            return None;
        }
        let from = from.map(|ip| ip.to_string());
        let last = self.usage.get::<Usage>(id).ok().flatten();
        let stale = last
            .as_ref()
            .is_none_or(|u| u.from != from || now - u.at >= LAST_USED_EVERY);
        if stale {
            if let Err(e) = self.usage.put(id, &Usage { at: now, from }).await {
                tracing::warn!(token = %t.id, "could not record the token's use: {e:#}");
            }
        }
        Some(t)
    }
}

/// Create an API token for yourself; the secret is in this answer only.
#[utoipa::path(post, path = "/api/v1/tokens", extensions(("x-bootlane-role" = json!("viewer"))), tag = "tokens", request_body = NewToken,
    responses((status = 201, body = CreatedToken), (status = 400, description = "Bad name or expiry (named)"),
        (status = 401), (status = 403, description = "A role above the caller's, or the caller came with a token"),
        (status = 409, description = "The name is taken, or a limit is reached")))]
pub async fn create(
    State(auth): State<Arc<super::auth::Auth>>,
    Extension(caller): Extension<Caller>,
    ApiJson(req): ApiJson<NewToken>,
) -> Result<(StatusCode, Envelope<CreatedToken>)> {
    let t = auth.tokens().create(&caller, req).await?;
    Ok((StatusCode::CREATED, Envelope::ok(t)))
}

/// Your API tokens (an admin sees everyone's), never their secrets.
#[utoipa::path(get, path = "/api/v1/tokens", extensions(("x-bootlane-role" = json!("viewer"))), tag = "tokens",
    responses((status = 200, body = TokenList), (status = 401)))]
pub async fn list(
    State(auth): State<Arc<super::auth::Auth>>,
    Extension(caller): Extension<Caller>,
) -> Result<Envelope<TokenList>> {
    Ok(Envelope::ok(TokenList {
        tokens: auth.tokens().list(&caller)?,
    }))
}

/// Revoke an API token at once (your own; an admin may revoke anyone's).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "tokens",
    params(("id" = String, Path, description = "Token id")),
    responses((status = 200, body = TokenView), (status = 401), (status = 404, description = "No such token of yours")))]
pub async fn revoke(
    State(auth): State<Arc<super::auth::Auth>>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> Result<Envelope<TokenView>> {
    Ok(Envelope::ok(auth.tokens().revoke(&caller, &id).await?))
}

/// The token routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(revoke))
}
