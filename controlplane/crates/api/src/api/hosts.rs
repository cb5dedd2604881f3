//! `/hosts`: CRUD over [`HostService`] hosts and `GET /hosts/{id}/boot-config`, the iPXE
//! script the host would get now (the same code path as `GET /boot/ipxe?mac=`), or with
//! `?format=pxelinux` its PXELINUX configuration. The BMC password is write-only.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    extract::State,
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_boot::{
    boot::catalog::BootCatalog,
    inventory::{
        model::{HostInput, HostView},
        service::HostService,
    },
};
use bootlane_core::net::types::normalise_mac;

/// `GET /hosts` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostList {
    /// Hosts of this page, in id order.
    pub hosts: Vec<HostView>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// List hosts, in id order. `q` searches name, MAC (any separator, partial MACs too)
/// and IP.
#[utoipa::path(get, path = "/api/v1/hosts", extensions(("x-bootlane-role" = json!("viewer"))), tag = "hosts", params(ListQuery),
    responses((status = 200, body = HostList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list(
    State(hosts): State<Arc<HostService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<HostList>> {
    let q = lq.needle();
    // A (partial) MAC typed with `-` separators, or a whole one in any form, still matches.
    let q_mac = q.as_deref().map(|q| match normalise_mac(q) {
        Ok(m) => m.to_string(),
        Err(_) => q.replace('-', ":"),
    });
    let page = lq.paginate(
        hosts.list()?.into_iter().filter(|h| {
            let ip = h.ip.map(|ip| ip.to_string()).unwrap_or_default();
            matches(q.as_deref(), [h.name.as_str(), &h.mac, &ip])
                || q_mac.as_ref().is_some_and(|m| h.mac.contains(m.as_str()))
        }),
        |h| h.id,
    )?;
    let page = page.map(|h| HostView::from(&h));
    Ok(Envelope::ok(HostList {
        hosts: page.items,
        paging: page.info,
    }))
}

/// Register a host.
#[utoipa::path(post, path = "/api/v1/hosts", extensions(("x-bootlane-role" = json!("operator"))), tag = "hosts", request_body = HostInput,
    responses((status = 201, body = HostView), (status = 400, description = "Invalid field or unknown profile_id"),
        (status = 409, description = "Name or MAC already registered"), (status = 401)))]
pub async fn create(
    State(hosts): State<Arc<HostService>>,
    ApiJson(input): ApiJson<HostInput>,
) -> Result<Envelope<HostView>> {
    let h = hosts.create(input).await?;
    Ok(Envelope::created(HostView::from(&h)))
}

/// Get one host.
#[utoipa::path(get, path = "/api/v1/hosts/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "hosts", params(("id" = u64, Path, description = "Host id")),
    responses((status = 200, body = HostView), (status = 404), (status = 401)))]
pub async fn get_one(State(hosts): State<Arc<HostService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<HostView>> {
    Ok(Envelope::ok(HostView::from(&hosts.get(id)?)))
}

/// Update a host: omitted fields keep their values, `null` clears an optional one.
#[utoipa::path(put, path = "/api/v1/hosts/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "hosts", params(("id" = u64, Path, description = "Host id")),
    request_body = HostInput,
    responses((status = 200, body = HostView), (status = 400), (status = 404), (status = 409), (status = 401)))]
pub async fn update(
    State(hosts): State<Arc<HostService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<HostInput>,
) -> Result<Envelope<HostView>> {
    let h = hosts.update(id, input).await?;
    Ok(Envelope::ok(HostView::from(&h)))
}

/// Delete a host; answers with the deleted host.
#[utoipa::path(delete, path = "/api/v1/hosts/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "hosts", params(("id" = u64, Path, description = "Host id")),
    responses((status = 200, body = HostView), (status = 404), (status = 401)))]
pub async fn delete(State(hosts): State<Arc<HostService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<HostView>> {
    let h = hosts.delete(id).await?;
    Ok(Envelope::ok(HostView::from(&h)))
}

/// `GET /hosts/{id}/boot-config` query.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BootConfigQuery {
    /// `ipxe` (default): the iPXE script; `pxelinux`: the PXELINUX configuration
    /// (`pxelinux.cfg/01-<mac>`); `grub`: the GRUB configuration (`grub/grub.cfg-<mac>`).
    #[param(inline)]
    pub format: Option<BootConfigFormat>,
}

/// A boot configuration format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BootConfigFormat {
    /// The iPXE script (`GET /boot/ipxe?mac=`).
    Ipxe,
    /// The PXELINUX configuration (`pxelinux.cfg/01-<mac>` over TFTP or `/boot/`).
    Pxelinux,
    /// The GRUB configuration (`grub/grub.cfg-<mac>`, which the generated `grub/grub.cfg`
    /// loads; Secure Boot clients boot shim, then signed GRUB).
    Grub,
}

/// The boot configuration this host would get now (`text/plain`), in `format`:
/// `ipxe` (default) built exactly as `GET /boot/ipxe?mac=<its MAC>`, `pxelinux` exactly as
/// its `pxelinux.cfg/01-<mac>`, `grub` exactly as its `grub/grub.cfg-<mac>`, with the
/// request's `Host` (or the netboot `http_base_url`) as server address.
#[utoipa::path(get, path = "/api/v1/hosts/{id}/boot-config", extensions(("x-bootlane-role" = json!("viewer"))), tag = "hosts",
    params(("id" = u64, Path, description = "Host id"), BootConfigQuery),
    responses((status = 200, description = "The iPXE script, PXELINUX or GRUB configuration", content_type = "text/plain", body = String),
        (status = 400, description = "No usable Host header, the template fails, or an unknown format"),
        (status = 404), (status = 401)))]
pub async fn boot_config(
    State(hosts): State<Arc<HostService>>,
    State(catalog): State<Arc<BootCatalog>>,
    State(settings): State<Arc<bootlane_media::settings::Settings>>,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<BootConfigQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let h = hosts.get(id)?;
    let server = super::boot::safe_host(&headers)
        .ok_or_else(|| ApiError::BadRequest("a valid Host header is required to build the URLs".into()))?;
    let mac = normalise_mac(&h.mac).map_err(|e| ApiError::Internal(e.into()))?;
    let text = match q.format.unwrap_or(BootConfigFormat::Ipxe) {
        BootConfigFormat::Ipxe => catalog.script_for(Some(mac), &server)?,
        f @ (BootConfigFormat::Pxelinux | BootConfigFormat::Grub) => {
            let base = settings.http_base_url().unwrap_or_else(|| format!("http://{server}"));
            let (profile, host) = catalog.profile_and_host_for(Some(mac))?;
            let name = host.as_ref().map(|h| h.name.as_str());
            if f == BootConfigFormat::Grub {
                bootlane_boot::boot::grub::render(&profile, Some(mac), name, &base)
            } else {
                bootlane_boot::boot::pxelinux::render(&profile, Some(mac), name, &base)
            }
        }
    };
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response())
}

/// Protected host routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(boot_config))
}
