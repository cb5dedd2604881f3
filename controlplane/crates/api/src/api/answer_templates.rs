//! `/netboot/answer-templates` (spec "Endpoints") and the site install settings
//! `/netboot/answer-settings`: thin handlers over [`AnswerTemplates`], which keeps the
//! name rule, the versions, rendering and both validation steps. Every route here
//! needs a logged-in user.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    wol::OptionalJson,
    AppState,
};
use bootlane_install::answers::{
    presets::{Preset, PRESETS},
    site::{SitePatch, SiteSettings},
    templates::{AnswerTemplate, AnswerTemplates, Preview, PreviewRequest, TemplateInput, TemplateVersion},
    validate::Validation,
    AnswerFormat,
};

impl FromRef<AppState> for Arc<AnswerTemplates> {
    fn from_ref(s: &AppState) -> Self {
        s.answers.clone()
    }
}

/// Ids are int64 in the OpenAPI document; larger numbers name nothing.
fn id_ok(id: u64) -> Result<u64> {
    if id > i64::MAX as u64 {
        return Err(ApiError::NotFound(format!("no answer template with id {id}")));
    }
    Ok(id)
}

/// `GET /netboot/answer-templates` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateList {
    /// Templates of this page, in id order.
    pub templates: Vec<AnswerTemplate>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// Field filter of `GET /netboot/answer-templates`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplateFilter {
    /// Only templates of this format.
    pub format: Option<AnswerFormat>,
}

/// List answer templates, in id order. `q` searches name, description and format.
#[utoipa::path(get, path = "/api/v1/netboot/answer-templates", extensions(("x-bootlane-role" = json!("viewer"))), tag = "answer-templates", params(ListQuery, TemplateFilter),
    responses((status = 200, body = TemplateList), (status = 400, description = "Bad paging or filter"), (status = 401)))]
pub async fn list(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<TemplateFilter>,
) -> Result<Envelope<TemplateList>> {
    let q = lq.needle();
    let page = lq.paginate(
        svc.list()?.into_iter().filter(|t| {
            let format = serde_json::to_value(t.format)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            f.format.is_none_or(|x| x == t.format) && matches(q.as_deref(), [t.name.as_str(), &t.description, &format])
        }),
        |t| t.id,
    )?;
    Ok(Envelope::ok(TemplateList {
        templates: page.items,
        paging: page.info,
    }))
}

/// Create an answer template (stores its version 1). `content` or a `preset` key is
/// required; the content must compile and render with the sample values.
#[utoipa::path(post, path = "/api/v1/netboot/answer-templates", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates", request_body = TemplateInput,
    responses((status = 201, body = AnswerTemplate), (status = 400, description = "Invalid field (named), or a template error with its line"),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn create(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiJson(input): ApiJson<TemplateInput>,
) -> Result<Envelope<AnswerTemplate>> {
    Ok(Envelope::created(svc.create(input).await?))
}

/// Get one answer template.
#[utoipa::path(get, path = "/api/v1/netboot/answer-templates/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id")),
    responses((status = 200, body = AnswerTemplate), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn get_one(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<AnswerTemplate>> {
    Ok(Envelope::ok(svc.get(id_ok(id)?)?))
}

/// Update an answer template (omitted fields keep their values); a new format or
/// content stores a new version.
#[utoipa::path(put, path = "/api/v1/netboot/answer-templates/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id")), request_body = TemplateInput,
    responses((status = 200, body = AnswerTemplate), (status = 400, description = "Invalid field (named), or a template error with its line"),
        (status = 404), (status = 409, description = "Name taken"), (status = 401)))]
pub async fn update(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<TemplateInput>,
) -> Result<Envelope<AnswerTemplate>> {
    Ok(Envelope::ok(svc.update(id_ok(id)?, input).await?))
}

/// Delete an answer template and its versions; answers with the deleted template. Refused
/// (409, naming them) while an install task that has not ended uses it.
#[utoipa::path(delete, path = "/api/v1/netboot/answer-templates/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id")),
    responses((status = 200, body = AnswerTemplate), (status = 400, description = "Not an id"), (status = 404),
        (status = 409, description = "Install tasks that have not ended use it (named)"), (status = 401)))]
pub async fn delete(
    State(svc): State<Arc<AnswerTemplates>>,
    State(tasks): State<Arc<bootlane_install::install::service::TaskService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<AnswerTemplate>> {
    let id = id_ok(id)?;
    svc.get(id)?;
    let users: Vec<String> = tasks
        .list(None, None, None)?
        .into_iter()
        .filter(|t| t.template_id == id && !t.state.is_final())
        .map(|t| format!("{} ({})", t.id, t.mac))
        .collect();
    if !users.is_empty() {
        return Err(ApiError::Conflict(format!(
            "answer template {id} is used by install task(s) {}; cancel or delete them first",
            users.join(", ")
        )));
    }
    Ok(Envelope::ok(svc.delete(id).await?))
}

/// `GET /netboot/answer-templates/presets` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct PresetList {
    /// Every built-in preset.
    pub presets: Vec<Preset>,
}

/// The built-in presets (Debian preseed, Ubuntu autoinstall, Rocky/RHEL kickstart,
/// openSUSE AutoYaST, Windows autounattend, Fedora CoreOS Ignition, cloud-config), each
/// with its installer's report-back hook. Start a template from one with
/// `POST .../answer-templates {"name": ..., "preset": "<key>"}`.
#[utoipa::path(get, path = "/api/v1/netboot/answer-templates/presets", extensions(("x-bootlane-role" = json!("viewer"))), tag = "answer-templates",
    responses((status = 200, body = PresetList), (status = 401)))]
pub async fn presets() -> Envelope<PresetList> {
    Envelope::ok(PresetList {
        presets: PRESETS.to_vec(),
    })
}

/// Body of `POST /netboot/answer-templates/validate`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    /// Format of the text.
    pub format: AnswerFormat,
    /// Template text.
    pub content: String,
}

/// Validate a template without storing anything: (1) the template (syntax, unknown
/// variables, a render with the sample values and the site settings), (2) the rendered
/// output with its format's validator. Problems carry their line. A missing validator
/// gives `syntax-checked-only`, never `valid`. The answer is 200 whatever the verdict.
#[utoipa::path(post, path = "/api/v1/netboot/answer-templates/validate", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates", request_body = ValidateRequest,
    responses((status = 200, body = Validation), (status = 400, description = "Invalid body (named field)"), (status = 401)))]
pub async fn validate_body(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiJson(req): ApiJson<ValidateRequest>,
) -> Result<Envelope<Validation>> {
    Ok(Envelope::ok(svc.validate(req.format, &req.content, None).await.0))
}

/// Validate a stored template (both steps, with the sample values).
#[utoipa::path(post, path = "/api/v1/netboot/answer-templates/{id}/validate", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id")),
    responses((status = 200, body = Validation), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn validate_one(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<Validation>> {
    let t = svc.get(id_ok(id)?)?;
    Ok(Envelope::ok(svc.validate(t.format, &t.content, None).await.0))
}

/// Render a template as an installer would get it, for a chosen host (`host_id` or
/// `mac`) and task values, or (no body) with the sample values; answers the text, the
/// values used and both validation steps.
#[utoipa::path(post, path = "/api/v1/netboot/answer-templates/{id}/preview", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id")),
    request_body(content = Option<PreviewRequest>, description = "Optional; no body renders with the sample values"),
    responses((status = 200, body = Preview), (status = 400, description = "Invalid field (named)"),
        (status = 404, description = "No such template or host"), (status = 401)))]
pub async fn preview(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath(id): ApiPath<u64>,
    OptionalJson(req): OptionalJson<PreviewRequest>,
) -> Result<Envelope<Preview>> {
    if req.host_id.is_some_and(|h| h > i64::MAX as u64) {
        return Err(ApiError::BadRequest("'host_id' is not a host id".into()));
    }
    Ok(Envelope::ok(svc.preview(id_ok(id)?, &req).await?))
}

/// `GET /netboot/answer-templates/{id}/versions` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateVersionList {
    /// Versions of this page, newest first.
    pub versions: Vec<TemplateVersion>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// A template's versions, newest first. `q` searches the comment.
#[utoipa::path(get, path = "/api/v1/netboot/answer-templates/{id}/versions", extensions(("x-bootlane-role" = json!("viewer"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id"), ListQuery),
    responses((status = 200, body = TemplateVersionList), (status = 400, description = "Not an id, or bad paging"), (status = 404), (status = 401)))]
pub async fn versions(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<TemplateVersionList>> {
    let q = lq.needle();
    let page = lq.paginate(
        svc.versions(id_ok(id)?)?
            .into_iter()
            .filter(|v| matches(q.as_deref(), [v.comment.as_str()])),
        |v| std::cmp::Reverse(v.version),
    )?;
    Ok(Envelope::ok(TemplateVersionList {
        versions: page.items,
        paging: page.info,
    }))
}

/// One version of a template.
#[utoipa::path(get, path = "/api/v1/netboot/answer-templates/{id}/versions/{version}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id"), ("version" = u32, Path, description = "Version number")),
    responses((status = 200, body = TemplateVersion), (status = 400, description = "Not an id or version number"), (status = 404), (status = 401)))]
pub async fn version(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath((id, version)): ApiPath<(u64, u32)>,
) -> Result<Envelope<TemplateVersion>> {
    Ok(Envelope::ok(svc.version(id_ok(id)?, version)?))
}

/// Roll a template back to a version: its format and content become current again, as
/// a new version.
#[utoipa::path(post, path = "/api/v1/netboot/answer-templates/{id}/rollback/{version}", extensions(("x-bootlane-role" = json!("operator"))), tag = "answer-templates",
    params(("id" = u64, Path, description = "Template id"), ("version" = u32, Path, description = "Version number")),
    responses((status = 200, body = AnswerTemplate), (status = 400, description = "Not an id or version number"), (status = 404), (status = 401)))]
pub async fn rollback(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiPath((id, version)): ApiPath<(u64, u32)>,
) -> Result<Envelope<AnswerTemplate>> {
    Ok(Envelope::ok(svc.rollback(id_ok(id)?, version).await?))
}

/// The site install settings every answer template sees as `site` (time zone, locale,
/// keyboard, SSH keys, mirror; the root password only as `has_root_password` and its
/// SHA-512 crypt hash).
#[utoipa::path(get, path = "/api/v1/netboot/answer-settings", extensions(("x-bootlane-role" = json!("admin"))), tag = "answer-templates",
    responses((status = 200, body = SiteSettings), (status = 401)))]
pub async fn get_settings(State(svc): State<Arc<AnswerTemplates>>) -> Envelope<SiteSettings> {
    Envelope::ok(svc.site())
}

/// Change the site install settings (any subset). `root_password` is taken in plain
/// text and stored only as its SHA-512 crypt hash; `""` removes it.
#[utoipa::path(put, path = "/api/v1/netboot/answer-settings", extensions(("x-bootlane-role" = json!("admin"))), tag = "answer-templates", request_body = SitePatch,
    responses((status = 200, body = SiteSettings), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn put_settings(
    State(svc): State<Arc<AnswerTemplates>>,
    ApiJson(patch): ApiJson<SitePatch>,
) -> Result<Envelope<SiteSettings>> {
    Ok(Envelope::ok(svc.update_site(patch).await?))
}

/// The answer-template routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(presets))
        .routes(routes!(validate_body))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(validate_one))
        .routes(routes!(preview))
        .routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(rollback))
        .routes(routes!(get_settings, put_settings))
}
