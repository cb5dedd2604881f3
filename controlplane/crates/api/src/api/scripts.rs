//! `/scripts`, `/baselines` and the machines' post-install routes (spec "Baselines",
//! "Scripts"): thin handlers over [`ScriptService`], which keeps the names, versions, use
//! checks and the resolution of a machine's baselines. For logged-in users: script CRUD
//! with `versions`, `diff` and `rollback`; baseline CRUD,
//! `GET/PUT /baselines/{id}/scripts`, `GET /baselines/assigned?mac=`, and
//! `GET /hosts/{id}/script-reports`. Public (machines, no login; the install task's token,
//! checked by [`TaskService::authorize_pull`], every refusal the same 403; rate-limited
//! per address like the answer route): `GET /netboot/baseline/{task_id}` (JSON),
//! `/bundle.sh`, `/bundle.ps1`, and `POST|GET /netboot/baseline/{task_id}/report`.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    extract::{ConnectInfo, FromRequestParts, State},
    http::{header, request::Parts, HeaderMap},
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_core::net::types::normalise_mac;
use bootlane_install::{
    install::service::TaskService,
    scripts::{
        bundle,
        service::{Machine, ScriptDiff, ScriptService},
        Assignment, Baseline, BaselineInput, Script, ScriptInput, ScriptReport, ScriptRevision, ScriptRun, ScriptType,
    },
};
use bootlane_media::settings::Settings;

/// Ids are int64 in the OpenAPI document; larger numbers name nothing.
fn id_ok(id: u64, what: &str) -> Result<u64> {
    if id > i64::MAX as u64 {
        return Err(ApiError::NotFound(format!("no {what} with id {id}")));
    }
    Ok(id)
}

// ----- scripts -------------------------------------------------------------------------

/// `GET /scripts` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScriptList {
    /// Scripts of this page, in id order.
    pub scripts: Vec<Script>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// Field filter of `GET /scripts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScriptFilter {
    /// Only scripts of this type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<ScriptType>,
}

/// List scripts, in id order. `q` searches name and description.
#[utoipa::path(get, path = "/api/v1/scripts", extensions(("x-bootlane-role" = json!("viewer"))), tag = "scripts", params(ListQuery, ScriptFilter),
    responses((status = 200, body = ScriptList), (status = 400, description = "Bad paging or filter"), (status = 401)))]
pub async fn list(
    State(svc): State<Arc<ScriptService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<ScriptFilter>,
) -> Result<Envelope<ScriptList>> {
    let q = lq.needle();
    let page = lq.paginate(
        svc.list()?.into_iter().filter(|s| {
            f.kind.is_none_or(|k| k == s.kind)
                && matches(q.as_deref(), [s.name.as_str(), &s.description, s.kind.as_str()])
        }),
        |s| s.id,
    )?;
    Ok(Envelope::ok(ScriptList {
        scripts: page.items,
        paging: page.info,
    }))
}

/// Create a script (stores its version 1). A rendered script must be a valid template.
#[utoipa::path(post, path = "/api/v1/scripts", extensions(("x-bootlane-role" = json!("operator"))), tag = "scripts", request_body = ScriptInput,
    responses((status = 201, body = Script), (status = 400, description = "Invalid field (named), or a template error with its line"),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn create(
    State(svc): State<Arc<ScriptService>>,
    ApiJson(input): ApiJson<ScriptInput>,
) -> Result<Envelope<Script>> {
    Ok(Envelope::created(svc.create(input).await?))
}

/// Get one script.
#[utoipa::path(get, path = "/api/v1/scripts/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "scripts", params(("id" = u64, Path, description = "Script id")),
    responses((status = 200, body = Script), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn get_one(State(svc): State<Arc<ScriptService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<Script>> {
    Ok(Envelope::ok(svc.get(id_ok(id, "script")?)?))
}

/// Update a script (omitted fields keep their values); a change of type, content,
/// variables or render flag stores a new version.
#[utoipa::path(put, path = "/api/v1/scripts/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "scripts", params(("id" = u64, Path, description = "Script id")),
    request_body = ScriptInput,
    responses((status = 200, body = Script), (status = 400, description = "Invalid field (named)"), (status = 404),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn update(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<ScriptInput>,
) -> Result<Envelope<Script>> {
    Ok(Envelope::ok(svc.update(id_ok(id, "script")?, input).await?))
}

/// Delete a script and its versions (409 naming the baselines that use it).
#[utoipa::path(delete, path = "/api/v1/scripts/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "scripts", params(("id" = u64, Path, description = "Script id")),
    responses((status = 200, body = Script), (status = 400, description = "Not an id"), (status = 404),
        (status = 409, description = "A baseline uses it (named)"), (status = 401)))]
pub async fn delete(State(svc): State<Arc<ScriptService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<Script>> {
    Ok(Envelope::ok(svc.delete(id_ok(id, "script")?).await?))
}

/// A script's versions, newest first.
#[utoipa::path(get, path = "/api/v1/scripts/{id}/versions", extensions(("x-bootlane-role" = json!("viewer"))), tag = "scripts", params(("id" = u64, Path, description = "Script id")),
    responses((status = 200, body = Vec<ScriptRevision>), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn versions(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Vec<ScriptRevision>>> {
    Ok(Envelope::ok(svc.versions(id_ok(id, "script")?)?))
}

/// One version of a script.
#[utoipa::path(get, path = "/api/v1/scripts/{id}/versions/{version}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "scripts",
    params(("id" = u64, Path, description = "Script id"), ("version" = u32, Path, description = "Version number")),
    responses((status = 200, body = ScriptRevision), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn version(
    State(svc): State<Arc<ScriptService>>,
    ApiPath((id, version)): ApiPath<(u64, u32)>,
) -> Result<Envelope<ScriptRevision>> {
    Ok(Envelope::ok(svc.version(id_ok(id, "script")?, version)?))
}

/// The unified diff from a version to the current content.
#[utoipa::path(get, path = "/api/v1/scripts/{id}/diff/{version}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "scripts",
    params(("id" = u64, Path, description = "Script id"), ("version" = u32, Path, description = "Version number")),
    responses((status = 200, body = ScriptDiff), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn diff(
    State(svc): State<Arc<ScriptService>>,
    ApiPath((id, version)): ApiPath<(u64, u32)>,
) -> Result<Envelope<ScriptDiff>> {
    Ok(Envelope::ok(svc.diff(id_ok(id, "script")?, version)?))
}

/// Restore a version (stored as a new version).
#[utoipa::path(post, path = "/api/v1/scripts/{id}/rollback/{version}", extensions(("x-bootlane-role" = json!("operator"))), tag = "scripts",
    params(("id" = u64, Path, description = "Script id"), ("version" = u32, Path, description = "Version number")),
    responses((status = 200, body = Script), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn rollback(
    State(svc): State<Arc<ScriptService>>,
    ApiPath((id, version)): ApiPath<(u64, u32)>,
) -> Result<Envelope<Script>> {
    Ok(Envelope::ok(svc.rollback(id_ok(id, "script")?, version).await?))
}

// ----- baselines -----------------------------------------------------------------------

/// `GET /baselines` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BaselineList {
    /// Baselines of this page, in id order.
    pub baselines: Vec<Baseline>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List baselines, in id order. `q` searches name and description.
#[utoipa::path(get, path = "/api/v1/baselines", extensions(("x-bootlane-role" = json!("viewer"))), tag = "baselines", params(ListQuery),
    responses((status = 200, body = BaselineList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_baselines(
    State(svc): State<Arc<ScriptService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<BaselineList>> {
    let q = lq.needle();
    let page = lq.paginate(
        svc.baselines()?
            .into_iter()
            .filter(|b| matches(q.as_deref(), [b.name.as_str(), &b.description])),
        |b| b.id,
    )?;
    Ok(Envelope::ok(BaselineList {
        baselines: page.items,
        paging: page.info,
    }))
}

/// Create a baseline.
#[utoipa::path(post, path = "/api/v1/baselines", extensions(("x-bootlane-role" = json!("operator"))), tag = "baselines", request_body = BaselineInput,
    responses((status = 201, body = Baseline), (status = 400, description = "Invalid field (named): an unknown or repeated script"),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn create_baseline(
    State(svc): State<Arc<ScriptService>>,
    ApiJson(input): ApiJson<BaselineInput>,
) -> Result<Envelope<Baseline>> {
    Ok(Envelope::created(svc.create_baseline(input).await?))
}

/// Get one baseline.
#[utoipa::path(get, path = "/api/v1/baselines/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "baselines", params(("id" = u64, Path, description = "Baseline id")),
    responses((status = 200, body = Baseline), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn get_baseline(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Baseline>> {
    Ok(Envelope::ok(svc.baseline(id_ok(id, "baseline")?)?))
}

/// Update a baseline (omitted fields keep their values).
#[utoipa::path(put, path = "/api/v1/baselines/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "baselines", params(("id" = u64, Path, description = "Baseline id")),
    request_body = BaselineInput,
    responses((status = 200, body = Baseline), (status = 400, description = "Invalid field (named)"), (status = 404),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn update_baseline(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<BaselineInput>,
) -> Result<Envelope<Baseline>> {
    Ok(Envelope::ok(svc.update_baseline(id_ok(id, "baseline")?, input).await?))
}

/// Delete a baseline (409 naming the hosts and profiles assigned it).
#[utoipa::path(delete, path = "/api/v1/baselines/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "baselines", params(("id" = u64, Path, description = "Baseline id")),
    responses((status = 200, body = Baseline), (status = 400, description = "Not an id"), (status = 404),
        (status = 409, description = "Assigned to hosts or profiles (named)"), (status = 401)))]
pub async fn delete_baseline(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Baseline>> {
    Ok(Envelope::ok(svc.delete_baseline(id_ok(id, "baseline")?).await?))
}

/// A baseline's scripts, in run order.
#[utoipa::path(get, path = "/api/v1/baselines/{id}/scripts", extensions(("x-bootlane-role" = json!("viewer"))), tag = "baselines", params(("id" = u64, Path, description = "Baseline id")),
    responses((status = 200, body = Vec<Script>), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn baseline_scripts(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Vec<Script>>> {
    Ok(Envelope::ok(svc.baseline_scripts(id_ok(id, "baseline")?)?))
}

/// Body of `PUT /baselines/{id}/scripts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptOrder {
    /// Script ids in run order, each once (full replace; `[]` empties the baseline).
    pub script_ids: Vec<u64>,
}

/// Set a baseline's scripts (ordered, full replace, each script once).
#[utoipa::path(put, path = "/api/v1/baselines/{id}/scripts", extensions(("x-bootlane-role" = json!("operator"))), tag = "baselines", params(("id" = u64, Path, description = "Baseline id")),
    request_body = ScriptOrder,
    responses((status = 200, body = Vec<Script>), (status = 400, description = "An unknown or repeated script (named)"),
        (status = 404), (status = 401)))]
pub async fn set_baseline_scripts(
    State(svc): State<Arc<ScriptService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(order): ApiJson<ScriptOrder>,
) -> Result<Envelope<Vec<Script>>> {
    let id = id_ok(id, "baseline")?;
    svc.set_scripts(id, order.script_ids).await?;
    Ok(Envelope::ok(svc.baseline_scripts(id)?))
}

/// `GET /baselines/assigned` query.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AssignedQuery {
    /// The machine's MAC.
    pub mac: String,
    /// Its OS family for the baselines' filters (default: from its install task's image;
    /// none known: filters are not applied).
    pub os_family: Option<String>,
    /// Its OS version (with `os_family`).
    pub os_version: Option<String>,
}

/// The baselines that apply to a machine (its host's, its profile's, the default;
/// deduplicated, in order) and their scripts rendered for it.
#[utoipa::path(get, path = "/api/v1/baselines/assigned", extensions(("x-bootlane-role" = json!("viewer"))), tag = "baselines", params(AssignedQuery),
    responses((status = 200, body = Assignment), (status = 400, description = "Not a MAC, or os_version without os_family"), (status = 401)))]
pub async fn assigned(
    State(svc): State<Arc<ScriptService>>,
    State(tasks): State<Arc<TaskService>>,
    State(settings): State<Arc<Settings>>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AssignedQuery>,
) -> Result<Envelope<Assignment>> {
    let mac = normalise_mac(&q.mac).map_err(|e| ApiError::BadRequest(format!("'mac': {e}")))?;
    let os = match (q.os_family, q.os_version) {
        (Some(f), v) => Some((f, v)),
        (None, Some(_)) => {
            return Err(ApiError::BadRequest("'os_version' needs 'os_family'".into()));
        }
        (None, None) => tasks.os_for_mac(mac)?,
    };
    Ok(Envelope::ok(svc.assignment(&Machine {
        mac: mac.to_string(),
        os,
        base_url: base_url(&settings, &headers)?,
    })?))
}

/// A host's script reports, newest first (the last 100 are kept).
#[utoipa::path(get, path = "/api/v1/hosts/{id}/script-reports", extensions(("x-bootlane-role" = json!("viewer"))), tag = "baselines", params(("id" = u64, Path, description = "Host id")),
    responses((status = 200, body = Vec<ScriptReport>), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn host_reports(
    State(svc): State<Arc<ScriptService>>,
    State(hosts): State<Arc<bootlane_boot::inventory::service::HostService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Vec<ScriptReport>>> {
    let h = hosts.get(id_ok(id, "host")?)?;
    Ok(Envelope::ok(svc.reports_for(&h.mac)?))
}

// ----- public: the machines' pull and report ------------------------------------------

fn peer(ext: &axum::http::Extensions) -> Option<std::net::IpAddr> {
    ext.get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_canonical())
}

fn base_url(settings: &Settings, headers: &HeaderMap) -> Result<String> {
    let address = super::boot::safe_host(headers)
        .ok_or_else(|| ApiError::BadRequest("a valid Host header is required".into()))?;
    Ok(settings.http_base_url().unwrap_or_else(|| format!("http://{address}")))
}

/// What every public route needs: the services, the client's address and the base URL
/// it reached us by.
pub struct Public {
    svc: Arc<ScriptService>,
    tasks: Arc<TaskService>,
    peer: Option<std::net::IpAddr>,
    /// `None` without a valid `Host` header.
    base: Option<String>,
}

impl FromRequestParts<AppState> for Public {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> std::result::Result<Self, ApiError> {
        Ok(Self {
            svc: s.scripts.clone(),
            tasks: s.tasks.clone(),
            peer: peer(&parts.extensions),
            base: base_url(&s.settings, &parts.headers).ok(),
        })
    }
}

impl Public {
    /// The rate limit, the token, then the machine's assignment: the task, the
    /// assignment and the base URL.
    async fn pull(
        &self,
        id: u64,
        token: Option<&str>,
        what: &str,
    ) -> Result<(bootlane_install::install::InstallTask, Assignment, String)> {
        if !self.tasks.allow(self.peer) {
            return Err(ApiError::TooManyRequests(
                "too many requests from this address; slow down".into(),
                1,
            ));
        }
        let t = self
            .tasks
            .authorize_pull(id, token.unwrap_or(""), self.peer, what)
            .await?;
        let base = self
            .base
            .clone()
            .ok_or_else(|| ApiError::BadRequest("a valid Host header is required".into()))?;
        let a = self.svc.assignment(&Machine {
            mac: t.mac.clone(),
            os: self.tasks.os_of(&t),
            base_url: base.clone(),
        })?;
        Ok((t, a, base))
    }

    async fn report(&self, id: u64, q: ScriptReportQuery, output: &str) -> Result<Envelope<ScriptReport>> {
        let (t, a, _) = self.pull(id, q.token.as_deref(), "script report").await?;
        let (Some(script_id), Some(exit_code)) = (q.script, q.exit_code) else {
            return Err(ApiError::BadRequest(
                "'script' (the script id) and 'exit_code' are required query parameters".into(),
            ));
        };
        let run = ScriptRun {
            script_id,
            exit_code,
            duration_ms: q.duration_ms.unwrap_or(0),
            output,
        };
        Ok(Envelope::created(self.svc.report(t.id, &a, run, self.peer).await?))
    }
}

/// The token query of the public routes.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PullQuery {
    /// The install task's token.
    pub token: Option<String>,
}

/// A machine's scripts as JSON (public; the install task's token). Every refusal is the
/// same 403.
#[utoipa::path(get, path = "/api/v1/netboot/baseline/{task_id}", extensions(("x-bootlane-role" = json!("public"))), tag = "baselines",
    params(("task_id" = u64, Path, description = "Install task id"), PullQuery),
    responses((status = 200, body = Assignment), (status = 400, description = "Bad id"), (status = 403, description = "Refused"), (status = 429)))]
pub async fn pull(
    p: Public,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<PullQuery>,
) -> Result<Envelope<Assignment>> {
    let (_, a, _) = p.pull(id, q.token.as_deref(), "baseline").await?;
    Ok(Envelope::ok(a))
}

/// The machine's Unix bundle: one `sh` program that runs its `sh`, `bash` and `python`
/// scripts in order, stops at the first failure and reports each result (public; the
/// install task's token).
#[utoipa::path(get, path = "/api/v1/netboot/baseline/{task_id}/bundle.sh", extensions(("x-bootlane-role" = json!("public"))), tag = "baselines",
    params(("task_id" = u64, Path, description = "Install task id"), PullQuery),
    responses((status = 200, content_type = "text/x-shellscript", body = String, description = "The bundle"),
        (status = 400, description = "Bad id"), (status = 403, description = "Refused"), (status = 429)))]
pub async fn bundle_sh(p: Public, ApiPath(id): ApiPath<u64>, ApiQuery(q): ApiQuery<PullQuery>) -> Result<Response> {
    let (t, a, base) = p.pull(id, q.token.as_deref(), "bundle").await?;
    let body = bundle::shell(&a, &TaskService::baseline_url(&base, &t, "/report"));
    Ok(([(header::CONTENT_TYPE, "text/x-shellscript; charset=utf-8")], body).into_response())
}

/// The machine's Windows bundle: one PowerShell program that runs its `powershell` and
/// `cmd` scripts in order, stops at the first failure and reports each result (public;
/// the install task's token).
#[utoipa::path(get, path = "/api/v1/netboot/baseline/{task_id}/bundle.ps1", extensions(("x-bootlane-role" = json!("public"))), tag = "baselines",
    params(("task_id" = u64, Path, description = "Install task id"), PullQuery),
    responses((status = 200, content_type = "text/plain", body = String, description = "The bundle"),
        (status = 400, description = "Bad id"), (status = 403, description = "Refused"), (status = 429)))]
pub async fn bundle_ps1(p: Public, ApiPath(id): ApiPath<u64>, ApiQuery(q): ApiQuery<PullQuery>) -> Result<Response> {
    let (t, a, base) = p.pull(id, q.token.as_deref(), "bundle").await?;
    let body = bundle::powershell(&a, &TaskService::baseline_url(&base, &t, "/report"));
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response())
}

/// The query of a script report.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ScriptReportQuery {
    /// The install task's token.
    pub token: Option<String>,
    /// The script's id.
    pub script: Option<u64>,
    /// Its exit code (0: success).
    pub exit_code: Option<i32>,
    /// Its run time in milliseconds.
    pub duration_ms: Option<u64>,
}

/// A machine reports one script's result (public; the install task's token): the id,
/// exit code and duration as query parameters, the output (its last 4 KiB are kept) as
/// the `text/plain` body. A failure is a `script.run.failed` event.
#[utoipa::path(post, path = "/api/v1/netboot/baseline/{task_id}/report", extensions(("x-bootlane-role" = json!("public"))), tag = "baselines",
    params(("task_id" = u64, Path, description = "Install task id"), ScriptReportQuery),
    request_body(content = String, content_type = "text/plain", description = "The script's output"),
    responses((status = 201, body = ScriptReport), (status = 400, description = "A missing parameter or a script not assigned to the machine"),
        (status = 403, description = "Refused"), (status = 429)))]
pub async fn report(
    p: Public,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<ScriptReportQuery>,
    body: axum::body::Bytes,
) -> Result<Envelope<ScriptReport>> {
    p.report(id, q, &String::from_utf8_lossy(&body)).await
}

/// The same report as a GET without output, for machines whose only HTTP client cannot
/// POST (busybox `wget`).
#[utoipa::path(get, path = "/api/v1/netboot/baseline/{task_id}/report", extensions(("x-bootlane-role" = json!("public"))), tag = "baselines",
    params(("task_id" = u64, Path, description = "Install task id"), ScriptReportQuery),
    responses((status = 201, body = ScriptReport), (status = 400, description = "A missing parameter or a script not assigned to the machine"),
        (status = 403, description = "Refused"), (status = 429)))]
pub async fn report_get(
    p: Public,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<ScriptReportQuery>,
) -> Result<Envelope<ScriptReport>> {
    p.report(id, q, "").await
}

/// The routes for logged-in users (behind the login check).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(diff))
        .routes(routes!(rollback))
        .routes(routes!(list_baselines, create_baseline))
        .routes(routes!(assigned))
        .routes(routes!(get_baseline, update_baseline, delete_baseline))
        .routes(routes!(baseline_scripts, set_baseline_scripts))
        .routes(routes!(host_reports))
}

/// The public routes for machines.
pub fn public_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(pull))
        .routes(routes!(bundle_sh))
        .routes(routes!(bundle_ps1))
        .routes(routes!(report, report_get))
}
