//! `/profiles` with their script versions, and `/services/ipxe-script`: thin handlers
//! over [`BootCatalog`], which keeps the default-profile rule, validates menus and
//! stores a script version on every change of a profile's generated script.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_boot::boot::{
    catalog::{BootCatalog, Profile, ProfileInput, ScriptDiff, ScriptVersion, TemplateSource},
    DEFAULT_SCRIPT,
};

/// `GET /profiles` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileList {
    /// Profiles of this page, in id order.
    pub profiles: Vec<Profile>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List profiles, in id order. `q` searches name and description.
#[utoipa::path(get, path = "/api/v1/profiles", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles", params(ListQuery),
    responses((status = 200, body = ProfileList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list(
    State(catalog): State<Arc<BootCatalog>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<ProfileList>> {
    let q = lq.needle();
    let page = lq.paginate(
        catalog
            .profiles()?
            .into_iter()
            .filter(|p| matches(q.as_deref(), [p.name.as_str(), &p.description])),
        |p| p.id,
    )?;
    Ok(Envelope::ok(ProfileList {
        profiles: page.items,
        paging: page.info,
    }))
}

/// Create a profile (stores its first script version).
#[utoipa::path(post, path = "/api/v1/profiles", extensions(("x-bootlane-role" = json!("operator"))), tag = "profiles", request_body = ProfileInput,
    responses((status = 201, body = Profile), (status = 400, description = "Invalid menu or name"),
        (status = 409, description = "Name taken"), (status = 401)))]
pub async fn create(
    State(catalog): State<Arc<BootCatalog>>,
    ApiJson(input): ApiJson<ProfileInput>,
) -> Result<Envelope<Profile>> {
    let p = catalog.create_profile(input).await?;
    Ok(Envelope::created(p))
}

/// Get one profile.
#[utoipa::path(get, path = "/api/v1/profiles/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles", params(("id" = u64, Path, description = "Profile id")),
    responses((status = 200, body = Profile), (status = 404), (status = 401)))]
pub async fn get_one(State(catalog): State<Arc<BootCatalog>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<Profile>> {
    Ok(Envelope::ok(catalog.profile(id)?))
}

/// Update a profile (omitted fields keep their values); `is_default: true` moves the
/// default flag here.
#[utoipa::path(put, path = "/api/v1/profiles/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "profiles", params(("id" = u64, Path, description = "Profile id")),
    request_body = ProfileInput,
    responses((status = 200, body = Profile), (status = 400), (status = 404), (status = 409), (status = 401)))]
pub async fn update(
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<ProfileInput>,
) -> Result<Envelope<Profile>> {
    let p = catalog.update_profile(id, input).await?;
    Ok(Envelope::ok(p))
}

/// Delete a profile and its script versions; answers with the deleted profile.
#[utoipa::path(delete, path = "/api/v1/profiles/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "profiles", params(("id" = u64, Path, description = "Profile id")),
    responses((status = 200, body = Profile), (status = 404), (status = 409, description = "Default profile, or used by a host"), (status = 401)))]
pub async fn delete(State(catalog): State<Arc<BootCatalog>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<Profile>> {
    let p = catalog.delete_profile(id).await?;
    Ok(Envelope::ok(p))
}

/// `GET /profiles/{profileId}/script-versions` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionList {
    /// Versions of this page, newest (highest id) first.
    pub versions: Vec<ScriptVersion>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// Script versions of a profile, newest (highest id) first. `q` searches the comment
/// and the checksum.
#[utoipa::path(get, path = "/api/v1/profiles/{profileId}/script-versions", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles",
    params(("profileId" = u64, Path, description = "Profile id"), ListQuery),
    responses((status = 200, body = VersionList), (status = 404), (status = 401)))]
pub async fn versions(
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<VersionList>> {
    catalog.profile(id)?;
    let q = lq.needle();
    let page = lq.paginate(
        catalog
            .versions(id)?
            .into_iter()
            .filter(|v| matches(q.as_deref(), [v.comment.as_str(), &v.checksum])),
        |v| std::cmp::Reverse(v.id),
    )?;
    Ok(Envelope::ok(VersionList {
        versions: page.items,
        paging: page.info,
    }))
}

/// One script version.
#[utoipa::path(get, path = "/api/v1/profiles/{profileId}/script-versions/{verId}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles",
    params(("profileId" = u64, Path, description = "Profile id"), ("verId" = u64, Path, description = "Version id")),
    responses((status = 200, body = ScriptVersion), (status = 404), (status = 401)))]
pub async fn version(
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath((id, ver)): ApiPath<(u64, u64)>,
) -> Result<Envelope<ScriptVersion>> {
    Ok(Envelope::ok(catalog.version(id, ver)?))
}

/// Unified diff from a version to the current script.
#[utoipa::path(get, path = "/api/v1/profiles/{profileId}/script-diff/{verId}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles",
    params(("profileId" = u64, Path, description = "Profile id"), ("verId" = u64, Path, description = "Version id")),
    responses((status = 200, body = ScriptDiff), (status = 404), (status = 401)))]
pub async fn diff(
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath((id, ver)): ApiPath<(u64, u64)>,
) -> Result<Envelope<ScriptDiff>> {
    Ok(Envelope::ok(catalog.diff(id, ver)?))
}

/// Restore a version's menu (timeout and entries); stores a new version. Answers the
/// profile.
#[utoipa::path(post, path = "/api/v1/profiles/{profileId}/script-rollback/{verId}", extensions(("x-bootlane-role" = json!("operator"))), tag = "profiles",
    params(("profileId" = u64, Path, description = "Profile id"), ("verId" = u64, Path, description = "Version id")),
    responses((status = 200, body = Profile), (status = 400, description = "The stored menu no longer validates"), (status = 404), (status = 401)))]
pub async fn rollback(
    State(catalog): State<Arc<BootCatalog>>,
    ApiPath((id, ver)): ApiPath<(u64, u64)>,
) -> Result<Envelope<Profile>> {
    let p = catalog.rollback(id, ver).await?;
    Ok(Envelope::ok(p))
}

/// `GET /services/ipxe-script` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct IpxeScriptView {
    /// The effective template (minijinja; variables documented in the book and on
    /// `bootlane::boot::DEFAULT_SCRIPT`).
    pub template: String,
    /// Where it comes from: `stored` (set by PUT), `config` (`[boot] ipxe_script`) or
    /// `builtin`.
    pub source: TemplateSource,
    /// The built-in template, for reference and for resetting by hand.
    pub builtin_template: String,
    /// Path iPXE clients are sent to (on the API port): `/boot/ipxe?mac=${netX/mac}`.
    pub script_path: String,
}

/// Body of `PUT /services/ipxe-script`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IpxeScriptInput {
    /// The new template (must compile, render for a sample profile and start with
    /// `#!ipxe`); `null` removes the stored template (back to the config file's or the
    /// built-in one).
    pub template: Option<String>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub source: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub builtin_template: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub script_path: Option<serde_json::Value>,
}

fn script_view(catalog: &BootCatalog) -> IpxeScriptView {
    let (template, source) = catalog.template();
    IpxeScriptView {
        template,
        source,
        builtin_template: DEFAULT_SCRIPT.to_string(),
        script_path: bootlane_dhcp::dhcp::handler::IPXE_SCRIPT_PATH.to_string(),
    }
}

/// The iPXE script template.
#[utoipa::path(get, path = "/api/v1/services/ipxe-script", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles",
    responses((status = 200, body = IpxeScriptView), (status = 401)))]
pub async fn get_script(State(catalog): State<Arc<BootCatalog>>) -> Envelope<IpxeScriptView> {
    Envelope::ok(script_view(&catalog))
}

/// Replace the iPXE script template; applies to the next script request.
#[utoipa::path(put, path = "/api/v1/services/ipxe-script", extensions(("x-bootlane-role" = json!("admin"))), tag = "profiles", request_body = IpxeScriptInput,
    responses((status = 200, body = IpxeScriptView), (status = 400, description = "The template does not compile or render (minijinja's message)"), (status = 401)))]
pub async fn put_script(
    State(catalog): State<Arc<BootCatalog>>,
    ApiJson(input): ApiJson<IpxeScriptInput>,
) -> Result<Envelope<IpxeScriptView>> {
    catalog.set_template(input.template).await?;
    Ok(Envelope::ok(script_view(&catalog)))
}

/// `GET /profiles/{id}/preview` query.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// `ipxe` (default), `grub` or `pxelinux`.
    #[param(inline)]
    pub format: Option<super::hosts::BootConfigFormat>,
}

/// `GET /profiles/{id}/preview` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfilePreview {
    /// `ipxe`, `grub` or `pxelinux`.
    pub format: String,
    /// The configuration as an unregistered machine would get it (iPXE: with
    /// `${net0/mac}` for the MAC; GRUB and PXELINUX: their per-MAC file), entries the
    /// loader cannot run left out with a comment saying why.
    pub text: String,
    /// Per entry, whether it can run under Secure Boot (shim, then signed GRUB): kernels
    /// and chain-loaded binaries in the boot directory must carry an Authenticode
    /// signature; iPXE entries never can; URLs cannot be checked.
    pub secure_boot: Vec<bootlane_boot::boot::grub::SecureBootFinding>,
}

/// A profile's boot configuration in one loader's format, and what of it cannot run
/// under Secure Boot. The server address is the request's `Host` (or the netboot
/// `http_base_url`).
#[utoipa::path(get, path = "/api/v1/profiles/{id}/preview", extensions(("x-bootlane-role" = json!("viewer"))), tag = "profiles",
    params(("id" = u64, Path, description = "Profile id"), PreviewQuery),
    responses((status = 200, body = ProfilePreview),
        (status = 400, description = "No usable Host header, an unknown format, or the iPXE template fails"),
        (status = 404), (status = 401)))]
pub async fn preview(
    State(catalog): State<Arc<BootCatalog>>,
    State(settings): State<Arc<bootlane_media::settings::Settings>>,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<PreviewQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Envelope<ProfilePreview>> {
    use super::hosts::BootConfigFormat as F;
    let p = catalog.profile(id)?;
    let server = super::boot::safe_host(&headers).ok_or_else(|| {
        super::error::ApiError::BadRequest("a valid Host header is required to build the URLs".into())
    })?;
    let base = settings.http_base_url().unwrap_or_else(|| format!("http://{server}"));
    let format = q.format.unwrap_or(F::Ipxe);
    let text = match format {
        F::Ipxe => catalog.preview_script(&p, &server, base.clone())?,
        F::Grub => bootlane_boot::boot::grub::render(&p, None, None, &base),
        F::Pxelinux => bootlane_boot::boot::pxelinux::render(&p, None, None, &base),
    };
    let root = settings.boot_root();
    let secure_boot =
        tokio::task::spawn_blocking(move || bootlane_boot::boot::grub::secure_boot_findings(&p, &root, &base))
            .await
            .map_err(|e| super::error::ApiError::Internal(e.into()))?;
    let format = match format {
        F::Ipxe => "ipxe",
        F::Grub => "grub",
        F::Pxelinux => "pxelinux",
    };
    Ok(Envelope::ok(ProfilePreview {
        format: format.into(),
        text,
        secure_boot,
    }))
}

/// Protected profile routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(diff))
        .routes(routes!(rollback))
        .routes(routes!(preview))
        .routes(routes!(get_script, put_script))
}
