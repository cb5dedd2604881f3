//! Install task routes over [`TaskService`]. For logged-in users (behind [`super::auth::require_session`]):
//! `GET/POST /netboot/tasks`, `GET/PUT/DELETE /netboot/tasks/{id}`,
//! `POST /netboot/tasks/{id}/cancel` and `/retry`. Public (booting machines, no login,
//! rate-limited per address, tokens checked by the service): `GET
//! /netboot/task/by-mac/{mac}`, `GET /netboot/answer/{task_id}?token=` (the rendered
//! answer file as text with its format's content type) and `POST
//! /netboot/report/{task_id}/{token}/{kind}` (`progress`, `done`, `failed`, `booted`;
//! the body is the message or log).
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    extract::{ConnectInfo, FromRef, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{ListQuery, PageInfo},
    AppState,
};
use bootlane_install::install::{
    service::{MacTask, ReportOutcome, TaskService},
    ReportKind, TaskInput, TaskState, TaskView,
};

impl FromRef<AppState> for Arc<TaskService> {
    fn from_ref(s: &AppState) -> Self {
        s.tasks.clone()
    }
}

/// `GET /netboot/tasks` query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TaskQuery {
    /// Page number, from 1. Default 1.
    #[param(minimum = 1)]
    pub page: Option<usize>,
    /// Page size, 1-1000. Default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub size: Option<usize>,
    /// Only this state.
    pub state: Option<TaskState>,
    /// Only this host's tasks.
    pub host_id: Option<u64>,
    /// Only this MAC's tasks.
    pub mac: Option<String>,
}

/// `GET /netboot/tasks` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskList {
    /// Tasks of this page, newest first.
    pub tasks: Vec<TaskView>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List install tasks, newest first, filtered by state, host or MAC.
#[utoipa::path(get, path = "/api/v1/netboot/tasks", extensions(("x-bootlane-role" = json!("viewer"))), tag = "install-tasks", params(TaskQuery),
    responses((status = 200, body = TaskList), (status = 400, description = "A bad filter or paging (named)"), (status = 401)))]
pub async fn list(
    State(tasks): State<Arc<TaskService>>,
    ApiQuery(q): ApiQuery<TaskQuery>,
) -> Result<Envelope<TaskList>> {
    if q.host_id.is_some_and(|h| h > i64::MAX as u64) {
        return Err(ApiError::BadRequest(
            "'host_id' must be at most 9223372036854775807".into(),
        ));
    }
    let all = tasks.list(q.state, q.host_id, q.mac.as_deref())?;
    let lq = ListQuery {
        page: q.page,
        size: q.size,
        q: None,
    };
    let page = lq.paginate(all, |t| std::cmp::Reverse(t.id))?;
    Ok(Envelope::ok(TaskList {
        tasks: page.items,
        paging: page.info,
    }))
}

/// Create an install task (`pending`): the machine (`host_id` or `mac`), what it boots
/// (`source`), the answer template and options. Its next iPXE boot runs the installer
/// with the answer URL.
#[utoipa::path(post, path = "/api/v1/netboot/tasks", extensions(("x-bootlane-role" = json!("operator"))), tag = "install-tasks", request_body = TaskInput,
    responses((status = 201, body = TaskView), (status = 400, description = "A bad or missing field (named)"),
        (status = 409, description = "The machine already has a pending or installing task"), (status = 401)))]
pub async fn create(
    State(tasks): State<Arc<TaskService>>,
    ApiJson(input): ApiJson<TaskInput>,
) -> Result<Envelope<TaskView>> {
    Ok(Envelope::created(tasks.create(input).await?))
}

/// Get one install task with its reports.
#[utoipa::path(get, path = "/api/v1/netboot/tasks/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "install-tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, body = TaskView), (status = 400), (status = 404), (status = 401)))]
pub async fn get_one(State(tasks): State<Arc<TaskService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<TaskView>> {
    Ok(Envelope::ok(tasks.get(id)?))
}

/// Change a pending or failed task (absent fields are kept).
#[utoipa::path(put, path = "/api/v1/netboot/tasks/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "install-tasks", params(("id" = u64, Path, description = "Task id")),
    request_body = TaskInput,
    responses((status = 200, body = TaskView), (status = 400, description = "A bad field (named)"), (status = 404),
        (status = 409, description = "Installing or ended"), (status = 401)))]
pub async fn update(
    State(tasks): State<Arc<TaskService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<TaskInput>,
) -> Result<Envelope<TaskView>> {
    Ok(Envelope::ok(tasks.update(id, input).await?))
}

/// Delete a task that is not installing.
#[utoipa::path(delete, path = "/api/v1/netboot/tasks/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "install-tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, body = TaskView), (status = 400), (status = 404), (status = 409, description = "Installing: cancel it first"), (status = 401)))]
pub async fn delete(State(tasks): State<Arc<TaskService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<TaskView>> {
    Ok(Envelope::ok(tasks.delete(id).await?))
}

/// Cancel a task that has not ended: its token is revoked, the machine boots its profile.
#[utoipa::path(post, path = "/api/v1/netboot/tasks/{id}/cancel", extensions(("x-bootlane-role" = json!("operator"))), tag = "install-tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, body = TaskView), (status = 400), (status = 404), (status = 409, description = "Already ended"), (status = 401)))]
pub async fn cancel(State(tasks): State<Arc<TaskService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<TaskView>> {
    Ok(Envelope::ok(tasks.cancel(id).await?))
}

/// Retry a failed task: `pending` again with a new token.
#[utoipa::path(post, path = "/api/v1/netboot/tasks/{id}/retry", extensions(("x-bootlane-role" = json!("operator"))), tag = "install-tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, body = TaskView), (status = 400), (status = 404),
        (status = 409, description = "Not failed, or the machine has another active task"), (status = 401)))]
pub async fn retry(State(tasks): State<Arc<TaskService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<TaskView>> {
    Ok(Envelope::ok(tasks.retry(id).await?))
}

fn peer(ext: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    ext.get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_canonical())
}

fn limited(tasks: &TaskService, ip: Option<std::net::IpAddr>) -> Result<()> {
    if tasks.allow(ip) {
        Ok(())
    } else {
        Err(ApiError::TooManyRequests(
            "too many requests from this address; slow down".into(),
            1,
        ))
    }
}

/// What a booting machine will do: `install`, `local`, `hold` (failed, waiting for a
/// retry) or `none`. Public; says nothing else about the task.
#[utoipa::path(get, path = "/api/v1/netboot/task/by-mac/{mac}", extensions(("x-bootlane-role" = json!("public"))), tag = "install-tasks", params(("mac" = String, Path, description = "MAC address")),
    responses((status = 200, body = MacTask), (status = 400, description = "Not a MAC"), (status = 429)))]
pub async fn by_mac(
    State(tasks): State<Arc<TaskService>>,
    ext: axum::http::Extensions,
    ApiPath(mac): ApiPath<String>,
) -> Result<Envelope<MacTask>> {
    limited(&tasks, peer(&ext))?;
    Ok(Envelope::ok(tasks.by_mac(&mac)?))
}

/// `GET /netboot/answer/{task_id}` query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TokenQuery {
    /// The task's token (from the answer URL).
    pub token: Option<String>,
}

/// The rendered answer file of a task, for its installer (public; the token from the
/// answer URL; only to the address holding the MAC's DHCP lease unless
/// `[install_tasks] answer_lease_check = false`). The first fetch makes the task
/// `installing`. Every refusal is the same 403.
#[utoipa::path(get, path = "/api/v1/netboot/answer/{task_id}", extensions(("x-bootlane-role" = json!("public"))), tag = "install-tasks",
    params(("task_id" = u64, Path, description = "Task id"), TokenQuery),
    responses((status = 200, content_type = "text/plain", body = String, description = "The answer file"),
        (status = 400, description = "A template that does not render, or a bad id"),
        (status = 403, description = "Refused (wrong, expired or revoked token, or another address)"), (status = 429)))]
pub async fn answer(
    State(tasks): State<Arc<TaskService>>,
    State(settings): State<Arc<bootlane_media::settings::Settings>>,
    ext: axum::http::Extensions,
    headers: HeaderMap,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<TokenQuery>,
) -> Result<Response> {
    let ip = peer(&ext);
    limited(&tasks, ip)?;
    let address = super::boot::safe_host(&headers)
        .ok_or_else(|| ApiError::BadRequest("a valid Host header is required".into()))?;
    let base = settings.http_base_url().unwrap_or_else(|| format!("http://{address}"));
    let a = tasks
        .answer(id, q.token.as_deref().unwrap_or(""), ip, &address, &base)
        .await?;
    Ok(([(header::CONTENT_TYPE, a.format.content_type())], a.body).into_response())
}

/// An installer's report (public; the token is part of the report URL): `progress` (the
/// body is the message; extends the deadline), `done` (the disk is written:
/// `installed`), `failed` (the body is the installer's log; its last 64 KiB are kept),
/// `booted` (the installed system's first boot: `done`). A report for a task that has
/// ended is answered with `ignored: true`.
#[utoipa::path(post, path = "/api/v1/netboot/report/{task_id}/{token}/{kind}", extensions(("x-bootlane-role" = json!("public"))), tag = "install-tasks",
    params(("task_id" = u64, Path, description = "Task id"), ("token" = String, Path, description = "The task's token"),
        ("kind" = String, Path, description = "progress, done, failed or booted")),
    request_body(content = String, content_type = "text/plain", description = "The message or log"),
    responses((status = 200, body = ReportOutcome), (status = 400, description = "Unknown kind or bad id"),
        (status = 403, description = "Refused"), (status = 409, description = "booted before done"), (status = 429)))]
pub async fn report(
    State(tasks): State<Arc<TaskService>>,
    ext: axum::http::Extensions,
    ApiPath((id, token, kind)): ApiPath<(u64, String, String)>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Envelope<ReportOutcome>)> {
    let ip = peer(&ext);
    limited(&tasks, ip)?;
    let kind = ReportKind::parse(&kind).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "unknown report kind {kind:?}: use progress, done, failed or booted"
        ))
    })?;
    let text = String::from_utf8_lossy(&body);
    Ok((
        StatusCode::OK,
        Envelope::ok(tasks.report(id, &token, kind, &text, ip).await?),
    ))
}

/// `GET /netboot/report/...` query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// The message (at most 64 KiB are kept).
    pub msg: Option<String>,
    /// The installer's stage (e.g. `early_command`), kept as the message when there is
    /// no `msg`.
    pub stage: Option<String>,
}

/// The same report as a GET with the message in `msg`, for installers whose only HTTP
/// client cannot POST (the Debian installer's busybox `wget`).
#[utoipa::path(get, path = "/api/v1/netboot/report/{task_id}/{token}/{kind}", extensions(("x-bootlane-role" = json!("public"))), tag = "install-tasks",
    params(("task_id" = u64, Path, description = "Task id"), ("token" = String, Path, description = "The task's token"),
        ("kind" = String, Path, description = "progress, done, failed or booted"), ReportQuery),
    responses((status = 200, body = ReportOutcome), (status = 400, description = "Unknown kind or bad id"),
        (status = 403, description = "Refused"), (status = 409, description = "booted before done"), (status = 429)))]
pub async fn report_get(
    State(tasks): State<Arc<TaskService>>,
    ext: axum::http::Extensions,
    ApiPath((id, token, kind)): ApiPath<(u64, String, String)>,
    ApiQuery(q): ApiQuery<ReportQuery>,
) -> Result<(StatusCode, Envelope<ReportOutcome>)> {
    let text = match (q.msg, q.stage) {
        (Some(m), Some(s)) => format!("{s}: {m}"),
        (Some(m), None) => m,
        (None, Some(s)) => s,
        (None, None) => String::new(),
    };
    take_report(&tasks, peer(&ext), id, &token, &kind, &text).await
}

async fn take_report(
    tasks: &TaskService,
    ip: Option<std::net::IpAddr>,
    id: u64,
    token: &str,
    kind: &str,
    text: &str,
) -> Result<(StatusCode, Envelope<ReportOutcome>)> {
    limited(tasks, ip)?;
    let kind = ReportKind::parse(kind).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "unknown report kind {kind:?}: use progress, done, failed or booted"
        ))
    })?;
    Ok((
        StatusCode::OK,
        Envelope::ok(tasks.report(id, token, kind, text, ip).await?),
    ))
}

/// The routes for logged-in users (behind the login check).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(cancel))
        .routes(routes!(retry))
}

/// The public routes for booting machines and installers.
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(by_mac))
        .routes(routes!(answer))
        .routes(routes!(report, report_get))
}
