//! User accounts (`bootlane user ...` works on the data directory with the server
//! stopped, or through the API while it runs). This module owns the store-level
//! operations both paths use ([`list_users`], [`add_user`], [`set_password`],
//! [`delete_user`]: argon2id hashes in the `users` tree, a password change or a deletion
//! ends that user's sessions, the last user cannot be deleted) and the routes over them:
//! `GET /users`, `POST /users`, `PUT /users/{username}/password`,
//! `DELETE /users/{username}` (not in the spec's table; added so a running server's users
//! can be managed without stopping it). Writes publish `user.created`,
//! `user.password_changed` and `user.deleted` (audited; never a password or hash).

use std::sync::Arc;

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    auth::{hash_password, password_policy, Session, User, SESSIONS_KV, USERS_KV},
    error::Result,
    extract::{ApiJson, ApiPath, Envelope},
    roles::Role,
    AppState,
};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    service_error::ServiceError,
    store::Store,
};

/// A user as the API shows it (never the password hash).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct UserView {
    /// Login name.
    pub username: String,
    /// When the user was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The user's role.
    pub role: Role,
    /// Whether the user's second factor (TOTP) is on; only in `GET /users`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp_enabled: Option<bool>,
}

impl UserView {
    fn of(u: &User) -> Self {
        Self {
            username: u.username.clone(),
            created_at: u.created_at,
            role: u.role,
            totp_enabled: None,
        }
    }
}

/// The number of admins among the stored users.
fn admins(store: &Store) -> Result<usize, ServiceError> {
    Ok(store
        .kv(USERS_KV)?
        .iter::<User>()?
        .iter()
        .filter(|(_, u)| u.role == Role::Admin)
        .count())
}

fn check_username(name: &str) -> Result<(), ServiceError> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
    {
        return Err(ServiceError::Invalid(format!(
            "'username' {name:?} must be 1 to 64 letters, digits, '.', '_', '-' or '@'"
        )));
    }
    Ok(())
}

fn check_password(username: &str, pw: &str) -> Result<(), ServiceError> {
    password_policy(username, pw).map_err(ServiceError::Invalid)
}

async fn hash(pw: &str) -> Result<String, ServiceError> {
    hash_password(pw)
        .await
        .map_err(|e| ServiceError::Invalid(format!("'password' cannot be hashed: {e}")))
}

/// Every user, in name order.
///
/// # Errors
/// Store errors.
pub fn list_users(store: &Store) -> Result<Vec<UserView>, ServiceError> {
    let totp = store.kv(super::totp::TOTP_KV)?;
    let mut out = Vec::new();
    for (name, u) in store.kv(USERS_KV)?.iter::<User>()? {
        let on = totp.get::<super::totp::TotpRecord>(&name)?.is_some_and(|r| r.enabled);
        out.push(UserView {
            totp_enabled: Some(on),
            username: name,
            ..UserView::of(&u)
        });
    }
    Ok(out)
}

/// Creates `username` with `password` (argon2id, as login expects) and `role`.
///
/// # Errors
/// [`ServiceError::Invalid`] for a bad name or a password the policy refuses
/// ([`password_policy`], the message names the rule),
/// [`ServiceError::Conflict`] for a taken name; store errors.
pub async fn add_user(store: &Store, username: &str, password: &str, role: Role) -> Result<UserView, ServiceError> {
    check_username(username)?;
    check_password(username, password)?;
    let users = store.kv(USERS_KV)?;
    if users.get::<User>(username)?.is_some() {
        return Err(ServiceError::Conflict(format!(
            "user {username:?} already exists; change its password instead"
        )));
    }
    let user = User {
        username: username.into(),
        password_hash: hash(password).await?,
        created_at: OffsetDateTime::now_utc(),
        role,
    };
    users.put(username, &user).await?;
    Ok(UserView::of(&user))
}

/// Replaces the password of `username` and ends their sessions; answers how many ended.
///
/// # Errors
/// [`ServiceError::NotFound`] for an unknown user, [`ServiceError::Invalid`] for a
/// password the policy refuses ([`password_policy`]); store errors.
pub async fn set_password(store: &Store, username: &str, password: &str) -> Result<usize, ServiceError> {
    let users = store.kv(USERS_KV)?;
    let Some(mut user) = users.get::<User>(username)? else {
        return Err(ServiceError::NotFound(format!("no user {username:?}")));
    };
    check_password(username, password)?;
    user.password_hash = hash(password).await?;
    users.put(username, &user).await?;
    end_sessions(store, username).await
}

/// Changes the role of `username`; answers the user as it now is.
///
/// # Errors
/// [`ServiceError::NotFound`] for an unknown user, [`ServiceError::Conflict`] when that
/// would leave no admin; store errors.
pub async fn set_role(store: &Store, username: &str, role: Role) -> Result<UserView, ServiceError> {
    let users = store.kv(USERS_KV)?;
    let Some(mut user) = users.get::<User>(username)? else {
        return Err(ServiceError::NotFound(format!("no user {username:?}")));
    };
    if user.role == Role::Admin && role != Role::Admin && admins(store)? <= 1 {
        return Err(ServiceError::Conflict(format!(
            "refusing to make {username:?}, the last admin, a {role}: make another user admin first"
        )));
    }
    user.role = role;
    users.put(username, &user).await?;
    Ok(UserView::of(&user))
}

/// Deletes `username`, ends their sessions and removes their API tokens.
///
/// # Errors
/// [`ServiceError::NotFound`] for an unknown user, [`ServiceError::Conflict`] for the last
/// user or the last admin (nobody could log in, or manage users, any more); store errors.
pub async fn delete_user(store: &Store, username: &str) -> Result<UserView, ServiceError> {
    let users = store.kv(USERS_KV)?;
    let Some(user) = users.get::<User>(username)? else {
        return Err(ServiceError::NotFound(format!("no user {username:?}")));
    };
    if users.iter::<User>()?.len() <= 1 {
        return Err(ServiceError::Conflict(format!(
            "refusing to delete {username:?}, the last user: add another user first"
        )));
    }
    if user.role == Role::Admin && admins(store)? <= 1 {
        return Err(ServiceError::Conflict(format!(
            "refusing to delete {username:?}, the last admin: make another user admin first"
        )));
    }
    users.remove(username).await?;
    store.kv(super::totp::TOTP_KV)?.remove(username).await?;
    end_sessions(store, username).await?;
    super::tokens::remove_owned(store, username).await?;
    Ok(UserView::of(&user))
}

async fn end_sessions(store: &Store, username: &str) -> Result<usize, ServiceError> {
    let sessions = store.kv(SESSIONS_KV)?;
    let mut n = 0;
    for (key, s) in sessions.iter::<Session>()? {
        if s.username == username {
            sessions.remove(&key).await?;
            n += 1;
        }
    }
    Ok(n)
}

/// Serialises user writes of the running server (the check-then-write of a name).
pub struct Users {
    store: Store,
    events: Arc<EventBus>,
    write: tokio::sync::Mutex<()>,
}

impl Users {
    /// Users over `store`, publishing on `events`.
    pub fn new(store: Store, events: Arc<EventBus>) -> Arc<Self> {
        Arc::new(Self {
            store,
            events,
            write: tokio::sync::Mutex::new(()),
        })
    }
}

/// `GET /users` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserList {
    /// Every user, in name order.
    pub users: Vec<UserView>,
}

/// Body of `POST /users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Login name: 1 to 64 letters, digits, '.', '_', '-' or '@'.
    #[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9._@-]{1,64}$")]
    pub username: String,
    /// Password: 12 characters to 1024 bytes, not the user name (nor reversed), and not
    /// easy to guess (zxcvbn score 3 or more); stored as an argon2id hash.
    #[schema(min_length = 12, max_length = 1024)]
    pub password: String,
    /// The role: `viewer` (the default), `operator` or `admin`.
    #[serde(default)]
    pub role: Role,
}

/// Body of `PUT /users/{username}/role`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRole {
    /// `viewer`, `operator` or `admin`.
    pub role: Role,
}

/// Body of `PUT /users/{username}/password`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    /// The new password, under the rules of [`NewUser::password`].
    #[schema(min_length = 12, max_length = 1024)]
    pub password: String,
}

/// `PUT /users/{username}/password` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasswordChanged {
    /// The user.
    pub username: String,
    /// How many of that user's sessions were ended (the caller's own included).
    pub sessions_ended: usize,
}

/// The users, in name order.
#[utoipa::path(get, path = "/api/v1/users", extensions(("x-bootlane-role" = json!("admin"))), tag = "users", responses((status = 200, body = UserList), (status = 401)))]
pub async fn list(State(users): State<Arc<Users>>) -> Result<Envelope<UserList>> {
    Ok(Envelope::ok(UserList {
        users: list_users(&users.store)?,
    }))
}

/// Create a user.
#[utoipa::path(post, path = "/api/v1/users", extensions(("x-bootlane-role" = json!("admin"))), tag = "users", request_body = NewUser,
    responses((status = 201, body = UserView), (status = 400, description = "Bad name or password (named)"),
        (status = 409, description = "The name is taken"), (status = 401)))]
pub async fn create(
    State(users): State<Arc<Users>>,
    ApiJson(req): ApiJson<NewUser>,
) -> Result<(StatusCode, Envelope<UserView>)> {
    let _w = users.write.lock().await;
    let u = add_user(&users.store, &req.username, &req.password, req.role).await?;
    users.events.publish(NewEvent::write(
        EventKind::UserCreated,
        "user",
        &u.username,
        "create",
        format!("user {} created", u.username),
        None::<&UserView>,
        Some(&u),
    ));
    Ok((StatusCode::CREATED, Envelope::ok(u)))
}

/// Set a user's password; ends that user's sessions (log in again afterwards when it is
/// your own).
#[utoipa::path(put, path = "/api/v1/users/{username}/password", extensions(("x-bootlane-role" = json!("admin"))), tag = "users",
    params(("username" = String, Path, description = "Login name")), request_body = NewPassword,
    responses((status = 200, body = PasswordChanged), (status = 400, description = "A password the policy refuses (the rule is named)"),
        (status = 404, description = "No such user"), (status = 401)))]
pub async fn password(
    State(users): State<Arc<Users>>,
    ApiPath(username): ApiPath<String>,
    ApiJson(req): ApiJson<NewPassword>,
) -> Result<Envelope<PasswordChanged>> {
    let _w = users.write.lock().await;
    let n = set_password(&users.store, &username, &req.password).await?;
    users.events.publish(NewEvent::write(
        EventKind::UserPasswordChanged,
        "user",
        &username,
        "update",
        format!("password of {username} changed; {n} session(s) ended"),
        None::<&UserView>,
        None::<&UserView>,
    ));
    Ok(Envelope::ok(PasswordChanged {
        username,
        sessions_ended: n,
    }))
}

/// Delete a user and end their sessions; the last user cannot be deleted (409).
#[utoipa::path(delete, path = "/api/v1/users/{username}", extensions(("x-bootlane-role" = json!("admin"))), tag = "users",
    params(("username" = String, Path, description = "Login name")),
    responses((status = 200, body = UserView), (status = 404, description = "No such user"),
        (status = 409, description = "The last user"), (status = 401)))]
pub async fn delete(State(users): State<Arc<Users>>, ApiPath(username): ApiPath<String>) -> Result<Envelope<UserView>> {
    let _w = users.write.lock().await;
    let u = delete_user(&users.store, &username).await?;
    users.events.publish(NewEvent::write(
        EventKind::UserDeleted,
        "user",
        &u.username,
        "delete",
        format!("user {} deleted", u.username),
        Some(&u),
        None::<&UserView>,
    ));
    Ok(Envelope::ok(u))
}

/// Change a user's role; applies to that user's open sessions at once. The last admin
/// cannot be made anything else (409).
#[utoipa::path(put, path = "/api/v1/users/{username}/role", extensions(("x-bootlane-role" = json!("admin"))), tag = "users",
    params(("username" = String, Path, description = "Login name")), request_body = NewRole,
    responses((status = 200, body = UserView), (status = 400, description = "Not a role"),
        (status = 404, description = "No such user"), (status = 409, description = "The last admin"), (status = 401), (status = 403)))]
pub async fn role(
    State(users): State<Arc<Users>>,
    ApiPath(username): ApiPath<String>,
    ApiJson(req): ApiJson<NewRole>,
) -> Result<Envelope<UserView>> {
    let _w = users.write.lock().await;
    let before = list_users(&users.store)?
        .into_iter()
        .find(|u| u.username == username)
        .map(|u| UserView {
            totp_enabled: None,
            ..u
        });
    let u = set_role(&users.store, &username, req.role).await?;
    users.events.publish(NewEvent::write(
        EventKind::UserRoleChanged,
        "user",
        &u.username,
        "update",
        format!("role of {} set to {}", u.username, u.role),
        before.as_ref(),
        Some(&u),
    ));
    Ok(Envelope::ok(u))
}

/// The user routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(password))
        .routes(routes!(role))
        .routes(routes!(delete))
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use super::super::test_support::{setup, ADMIN_PASSWORD};

    #[tokio::test]
    async fn users_through_the_api() {
        let mut t = setup().await;
        t.expect(Method::GET, "/api/v1/users", None, StatusCode::UNAUTHORIZED, "")
            .await;
        t.login().await;
        let v = t.expect(Method::GET, "/api/v1/users", None, StatusCode::OK, "").await;
        assert_eq!(v["data"]["users"][0]["username"], "admin");
        assert!(!v.to_string().contains("argon2"), "no hash in answers: {v}");
        t.expect(
            Method::POST,
            "/api/v1/users",
            Some(json!({"username": "ops", "password": "ops-Kx7#pL4w-first"})),
            StatusCode::CREATED,
            "",
        )
        .await;
        t.expect(
            Method::POST,
            "/api/v1/users",
            Some(json!({"username": "ops", "password": "another-Zq5!xW8e"})),
            StatusCode::CONFLICT,
            "already exists",
        )
        .await;
        t.expect(
            Method::POST,
            "/api/v1/users",
            Some(json!({"username": "bad name", "password": "x"})),
            StatusCode::BAD_REQUEST,
            "'username'",
        )
        .await;
        t.expect(
            Method::POST,
            "/api/v1/users",
            Some(json!({"username": "carol", "password": ""})),
            StatusCode::BAD_REQUEST,
            "'password'",
        )
        .await;
        // The policy, each rule named in the envelope.
        for (pw, rule) in [
            ("short-pw", "at least 12 characters"),
            ("CAROL-OPERATOR", "user name"),
            ("rotarepo-lorac", "user name"),
            ("password1234", "too easy to guess"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": "carol-operator", "password": pw})),
                StatusCode::BAD_REQUEST,
                rule,
            )
            .await;
        }
        // The new user logs in; a password change ends that session.
        let (s, _, _) = t
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "ops", "password": "ops-Kx7#pL4w-first"})),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
        let v = t
            .expect(
                Method::PUT,
                "/api/v1/users/ops/password",
                Some(json!({"password": "ops-Vt9!rQ2m-second"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["sessions_ended"], 1);
        let (s, _, _) = t
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "ops", "password": "ops-Kx7#pL4w-first"})),
            )
            .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "the old password no longer works");
        t.expect(
            Method::PUT,
            "/api/v1/users/ops/password",
            Some(json!({"password": "letmein12345"})),
            StatusCode::BAD_REQUEST,
            "too easy to guess",
        )
        .await;
        t.expect(
            Method::PUT,
            "/api/v1/users/nobody/password",
            Some(json!({"password": "x"})),
            StatusCode::NOT_FOUND,
            "no user",
        )
        .await;
        t.expect(Method::DELETE, "/api/v1/users/ops", None, StatusCode::OK, "")
            .await;
        t.expect(
            Method::DELETE,
            "/api/v1/users/admin",
            None,
            StatusCode::CONFLICT,
            "last user",
        )
        .await;
        // Audited, without secrets.
        let v = t
            .expect(Method::GET, "/api/v1/audit-logs", None, StatusCode::OK, "")
            .await;
        let text = v.to_string();
        assert!(text.contains("user.created") && text.contains("user.deleted"), "{text}");
        assert!(
            !text.contains("ops-Kx7#pL4w-first") && !text.contains(ADMIN_PASSWORD),
            "{text}"
        );
    }
}
