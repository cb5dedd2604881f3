//! Access-control routes (issue 11 "Access control", spec "Access control") over
//! [`AccessService`]: the blacklist and the whitelist (`GET`/`POST /access/blacklist`,
//! `DELETE /access/blacklist/{id}`, the same for `/access/whitelist`), the unauthorized
//! devices (`GET /access/unauthorized`, `DELETE /access/unauthorized/{id}`,
//! `POST /access/unauthorized/add-to-whitelist|add-to-blacklist`), and the mode
//! (`GET`/`PUT /access/mode`: `off`, `blacklist` or `whitelist`; the mode is a resource of
//! its own rather than a key of `/settings` because it belongs to this module and is
//! changed next to the lists it enforces). Lists follow the list contract
//! ([`super::list`]).
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
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use crate::access::{
    model::{AccessEntry, ListKind, UnauthorizedDevice},
    service::{AccessService, EntryInput, ModeView, MoveResult},
    Mode,
};

/// `GET /access/blacklist` and `GET /access/whitelist` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct EntryList {
    /// Entries of this page, in id order.
    pub entries: Vec<AccessEntry>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

fn entry_page(access: &AccessService, list: ListKind, lq: &ListQuery) -> Result<EntryList> {
    let q = lq.needle();
    let page = lq.paginate(
        access
            .entries(list)?
            .into_iter()
            .filter(|e| matches(q.as_deref(), [e.mac.as_str(), e.note.as_str()])),
        |e| e.id,
    )?;
    Ok(EntryList {
        entries: page.items,
        paging: page.info,
    })
}

/// The blacklist (refused in `blacklist` mode), in id order. `q` searches MAC and note.
#[utoipa::path(get, path = "/api/v1/access/blacklist", tag = "access", params(ListQuery),
    responses((status = 200, body = EntryList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<EntryList>> {
    Ok(Envelope::ok(entry_page(&access, ListKind::Blacklist, &lq)?))
}

/// Add a MAC or a MAC prefix (OUI) to the blacklist; applies to the next packet.
#[utoipa::path(post, path = "/api/v1/access/blacklist", tag = "access", request_body = EntryInput,
    responses((status = 201, body = AccessEntry), (status = 400, description = "Not a MAC or prefix, or a bad note (named)"),
        (status = 409, description = "Already on the blacklist, or the list is full"), (status = 401)))]
pub async fn add_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiJson(input): ApiJson<EntryInput>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::created(access.add_entry(ListKind::Blacklist, input).await?))
}

/// Delete a blacklist entry; answers it.
#[utoipa::path(delete, path = "/api/v1/access/blacklist/{id}", tag = "access", params(("id" = u64, Path, description = "Entry id")),
    responses((status = 200, body = AccessEntry), (status = 400), (status = 404), (status = 401)))]
pub async fn delete_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::ok(access.delete_entry(ListKind::Blacklist, id).await?))
}

/// The whitelist (the only machines served in `whitelist` mode), in id order. `q`
/// searches MAC and note.
#[utoipa::path(get, path = "/api/v1/access/whitelist", tag = "access", params(ListQuery),
    responses((status = 200, body = EntryList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<EntryList>> {
    Ok(Envelope::ok(entry_page(&access, ListKind::Whitelist, &lq)?))
}

/// Add a MAC or a MAC prefix (OUI) to the whitelist; applies to the next packet.
#[utoipa::path(post, path = "/api/v1/access/whitelist", tag = "access", request_body = EntryInput,
    responses((status = 201, body = AccessEntry), (status = 400, description = "Not a MAC or prefix, or a bad note (named)"),
        (status = 409, description = "Already on the whitelist, or the list is full"), (status = 401)))]
pub async fn add_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiJson(input): ApiJson<EntryInput>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::created(access.add_entry(ListKind::Whitelist, input).await?))
}

/// Delete a whitelist entry; answers it.
#[utoipa::path(delete, path = "/api/v1/access/whitelist/{id}", tag = "access", params(("id" = u64, Path, description = "Entry id")),
    responses((status = 200, body = AccessEntry), (status = 400), (status = 404), (status = 401)))]
pub async fn delete_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::ok(access.delete_entry(ListKind::Whitelist, id).await?))
}

/// `GET /access/unauthorized` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    /// Devices of this page, most recently seen first.
    pub devices: Vec<UnauthorizedDevice>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// Machines refused in `whitelist` mode, most recently seen first, with first and last
/// seen, request count, last IP, architecture (option 93), vendor class (option 60) and
/// the protocol of the last refusal. `q` searches MAC, last IP, vendor class and protocol.
#[utoipa::path(get, path = "/api/v1/access/unauthorized", tag = "access", params(ListQuery),
    responses((status = 200, body = DeviceList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_unauthorized(
    State(access): State<Arc<AccessService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<DeviceList>> {
    let q = lq.needle();
    let page = lq.paginate(
        access.unauthorized()?.into_iter().filter(|d| {
            matches(
                q.as_deref(),
                [
                    d.mac.as_str(),
                    d.last_ip.as_deref().unwrap_or(""),
                    d.vendor_class.as_deref().unwrap_or(""),
                    d.last_protocol.as_str(),
                ],
            )
        }),
        |d| (std::cmp::Reverse(d.last_seen), d.id),
    )?;
    Ok(Envelope::ok(DeviceList {
        devices: page.items,
        paging: page.info,
    }))
}

/// Delete an unauthorized device record; answers it (the device is recorded again at its
/// next refused request).
#[utoipa::path(delete, path = "/api/v1/access/unauthorized/{id}", tag = "access", params(("id" = u64, Path, description = "Device id")),
    responses((status = 200, body = UnauthorizedDevice), (status = 400), (status = 404), (status = 401)))]
pub async fn delete_unauthorized(
    State(access): State<Arc<AccessService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<UnauthorizedDevice>> {
    Ok(Envelope::ok(access.delete_unauthorized(id).await?))
}

/// Body of `POST /access/unauthorized/add-to-whitelist|add-to-blacklist`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveRequest {
    /// Unauthorized device ids (1-1000, no repeats).
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Vec<u64>,
    /// Note of the new entries (at most 256 bytes). Default: where they came from.
    pub note: Option<String>,
}

/// `POST /access/unauthorized/add-to-whitelist|add-to-blacklist` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MoveAnswer {
    /// One result per id, in the order asked.
    pub results: Vec<MoveResult>,
    /// How many were moved.
    pub moved: usize,
    /// How many failed (no such device, already on the list, ...).
    pub failed: usize,
}

async fn move_to(access: &AccessService, req: MoveRequest, list: ListKind) -> Result<Envelope<MoveAnswer>> {
    // Ids are int64 in the OpenAPI document; larger numbers are not ids.
    if req.ids.iter().any(|&i| i > i64::MAX as u64) {
        return Err(ApiError::BadRequest(
            "'ids' holds a number that is not a device id".into(),
        ));
    }
    let results = access.move_unauthorized(&req.ids, list, req.note.as_deref()).await?;
    let moved = results.iter().filter(|r| r.ok).count();
    Ok(Envelope::ok(MoveAnswer {
        failed: results.len() - moved,
        moved,
        results,
    }))
}

/// Move unauthorized devices to the whitelist: each becomes a whitelist entry for its MAC
/// and leaves the unauthorized list (one transaction each); served from the next packet.
#[utoipa::path(post, path = "/api/v1/access/unauthorized/add-to-whitelist", tag = "access", request_body = MoveRequest,
    responses((status = 200, body = MoveAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn add_to_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiJson(req): ApiJson<MoveRequest>,
) -> Result<Envelope<MoveAnswer>> {
    move_to(&access, req, ListKind::Whitelist).await
}

/// Move unauthorized devices to the blacklist (each becomes a blacklist entry for its MAC
/// and leaves the unauthorized list).
#[utoipa::path(post, path = "/api/v1/access/unauthorized/add-to-blacklist", tag = "access", request_body = MoveRequest,
    responses((status = 200, body = MoveAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn add_to_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiJson(req): ApiJson<MoveRequest>,
) -> Result<Envelope<MoveAnswer>> {
    move_to(&access, req, ListKind::Blacklist).await
}

/// The access mode in force, the configuration file's default and whether a mode was
/// stored through the API.
#[utoipa::path(get, path = "/api/v1/access/mode", tag = "access",
    responses((status = 200, body = ModeView), (status = 401)))]
pub async fn get_mode(State(access): State<Arc<AccessService>>) -> Result<Envelope<ModeView>> {
    Ok(Envelope::ok(access.mode()?))
}

/// Body of `PUT /access/mode`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModeInput {
    /// `off` (serve everyone), `blacklist` (refuse listed machines) or `whitelist` (serve
    /// only listed machines; record the others as unauthorized).
    pub mode: Mode,
}

/// Set the access mode; it is stored (wins over `[access] mode`) and applies to the next
/// DHCP, TFTP or HTTP boot request.
#[utoipa::path(put, path = "/api/v1/access/mode", tag = "access", request_body = ModeInput,
    responses((status = 200, body = ModeView), (status = 400, description = "Not a mode"), (status = 401)))]
pub async fn put_mode(
    State(access): State<Arc<AccessService>>,
    ApiJson(input): ApiJson<ModeInput>,
) -> Result<Envelope<ModeView>> {
    Ok(Envelope::ok(access.set_mode(input.mode).await?))
}

/// Protected access-control routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_mode, put_mode))
        .routes(routes!(list_blacklist, add_blacklist))
        .routes(routes!(delete_blacklist))
        .routes(routes!(list_whitelist, add_whitelist))
        .routes(routes!(delete_whitelist))
        .routes(routes!(list_unauthorized))
        .routes(routes!(delete_unauthorized))
        .routes(routes!(add_to_whitelist))
        .routes(routes!(add_to_blacklist))
}
