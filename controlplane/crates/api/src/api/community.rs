//! `/store`: thin handlers over [`CommunityService`]: the catalog listing with its
//! sources' status, one item with its content, and the two imports (from a source, and
//! an uploaded bundle). Every route here needs a logged-in user.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::{
    multipart::{Multipart, MultipartRejection},
    FromRef, State,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    files::{drain_refused, multipart_error, multipart_or_error, small_text},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_install::community::{
    format::ItemType,
    service::{CatalogItem, CommunityService, ImportRequest, ImportResult, ItemDetail, SourceStatus},
};

impl FromRef<AppState> for Arc<CommunityService> {
    fn from_ref(s: &AppState) -> Self {
        s.community.clone()
    }
}

/// `GET /store/catalog` answer.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = StoreCatalog)]
pub struct CatalogList {
    /// Items of this page, by type, id, then source order.
    pub items: Vec<CatalogItem>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
    /// How each source answered (a failing one has `ok: false` and `error`).
    pub sources: Vec<SourceStatus>,
}

/// Field filters of `GET /store/catalog`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CatalogFilter {
    /// Only items of this type (`answer-template`, `profile`, `netboot`, `script`, `baseline`).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// Only items with this tag (exact, case-insensitive).
    pub tag: Option<String>,
    /// Only this source (a failing one is then a 502).
    pub source: Option<String>,
}

/// `?source=` of `GET /store/items/{type}/{id}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SourceQuery {
    /// Read the item from this source only (default: the first source listing it).
    pub source: Option<String>,
}

/// List the catalog of every source, by type, id, then source. `q` searches id, name,
/// description, author and tags. A failing source is listed under `sources` with its
/// error; the others still answer.
#[utoipa::path(get, path = "/api/v1/store/catalog", extensions(("x-bootlane-role" = json!("viewer"))), tag = "store", params(ListQuery, CatalogFilter),
    responses((status = 200, body = CatalogList), (status = 400, description = "Bad paging or filter (named)"),
        (status = 404, description = "Unknown source"), (status = 502, description = "The source asked for failed (named)"), (status = 401)))]
pub async fn catalog(
    State(svc): State<Arc<CommunityService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<CatalogFilter>,
) -> Result<Envelope<CatalogList>> {
    let kind =
        match f.kind.as_deref().filter(|k| !k.is_empty()) {
            None => None,
            Some(k) => Some(ItemType::parse(k).ok_or_else(|| {
                ApiError::BadRequest(format!("'type' must be one of {} (got {k:?})", ItemType::names()))
            })?),
        };
    let tag = f.tag.as_deref().map(str::to_lowercase).filter(|t| !t.is_empty());
    let (items, sources) = svc.catalog(f.source.as_deref().filter(|s| !s.is_empty())).await?;
    let order: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let q = lq.needle();
    let page = lq.paginate(
        items.into_iter().filter(|i| {
            let m = &i.meta;
            kind.is_none_or(|k| k == m.kind)
                && tag
                    .as_deref()
                    .is_none_or(|t| m.tags.iter().any(|x| x.to_lowercase() == t))
                && matches(
                    q.as_deref(),
                    [m.id.as_str(), &m.name, &m.description, &m.author]
                        .into_iter()
                        .chain(m.tags.iter().map(String::as_str)),
                )
        }),
        |i| {
            (
                i.meta.kind,
                i.meta.id.clone(),
                order.iter().position(|s| *s == i.source),
            )
        },
    )?;
    Ok(Envelope::ok(CatalogList {
        items: page.items,
        paging: page.info,
        sources,
    }))
}

/// One catalog item with its content, verified (its sha256 is its content's and the
/// index's).
#[utoipa::path(get, path = "/api/v1/store/items/{type}/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "store",
    params(("type" = String, Path, description = "Item type"), ("id" = String, Path, description = "Item id"), SourceQuery),
    responses((status = 200, body = ItemDetail), (status = 404, description = "Unknown type, item or source"),
        (status = 502, description = "The source failed or serves a changed item (named)"), (status = 401)))]
pub async fn item(
    State(svc): State<Arc<CommunityService>>,
    ApiPath((kind, id)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<SourceQuery>,
) -> Result<Envelope<ItemDetail>> {
    Ok(Envelope::ok(svc.item(&kind, &id, q.source.as_deref()).await?))
}

/// Import a catalog item: an answer template, a boot profile, a netboot overlay, a
/// script, or a baseline with its scripts. The item's sha256 is checked before anything
/// is written. A name in use is a 409 naming it unless `rename` or `overwrite` is given.
#[utoipa::path(post, path = "/api/v1/store/import", extensions(("x-bootlane-role" = json!("admin"))), tag = "store", request_body = ImportRequest,
    responses((status = 201, body = ImportResult), (status = 400, description = "Invalid field (named), or refused by the target resource"),
        (status = 404, description = "Unknown type, item or source"),
        (status = 409, description = "Name clash (named), or the item type cannot be installed here"),
        (status = 502, description = "The source failed, or its item does not match its sha256 (nothing written)"), (status = 401)))]
pub async fn import(
    State(svc): State<Arc<CommunityService>>,
    ApiJson(req): ApiJson<ImportRequest>,
) -> Result<Envelope<ImportResult>> {
    Ok(Envelope::created(svc.import(req).await?))
}

/// The multipart form of `POST /store/import-local`.
#[derive(Debug, ToSchema)]
#[allow(dead_code, reason = "documents the multipart form; the handler reads the parts")]
pub struct ImportLocalForm {
    /// Install under this name instead of the item's.
    pub rename: Option<String>,
    /// Replace a resource of the same name (`true`/`false`, default false).
    pub overwrite: Option<bool>,
    /// The bundle: one item file (`{type, id, name, ..., sha256, content}`).
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Import an uploaded bundle: `multipart/form-data` with `file` (an item file in the
/// catalog's format) and optionally `rename` and `overwrite`. Same checks as an import
/// from a source; a bundle whose sha256 is not its content's is refused (400) with
/// nothing written.
#[utoipa::path(post, path = "/api/v1/store/import-local", extensions(("x-bootlane-role" = json!("admin"))), tag = "store",
    request_body(content = ImportLocalForm, content_type = "multipart/form-data"),
    responses((status = 201, body = ImportResult), (status = 400, description = "Not an item, a wrong sha256, a missing part (named)"),
        (status = 409, description = "Name clash (named), or the item type cannot be installed here"),
        (status = 413, description = "Larger than [community] max_bytes"), (status = 415, description = "Not multipart/form-data"), (status = 401)))]
pub async fn import_local(
    State(svc): State<Arc<CommunityService>>,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<Envelope<ImportResult>> {
    let mut mp = multipart_or_error(multipart, "curl -F file=@item.json")?;
    let received = receive_bundle(&svc, &mut mp).await;
    let (file, rename, overwrite) = drain_refused(&mut mp, None, received).await?;
    Ok(Envelope::created(svc.import_local(&file, rename, overwrite).await?))
}

/// The parts of `POST /store/import-local`: the bundle's bytes, `rename` and
/// `overwrite`; the handler drains the body when this refuses it.
async fn receive_bundle(svc: &CommunityService, mp: &mut Multipart) -> Result<(Vec<u8>, Option<String>, bool)> {
    let (mut rename, mut overwrite, mut file) = (None, false, None);
    while let Some(mut field) = mp.next_field().await.map_err(multipart_error)? {
        match field.name().unwrap_or_default() {
            "rename" => rename = Some(small_text(field, "rename").await?).filter(|r| !r.is_empty()),
            "overwrite" => {
                overwrite = match small_text(field, "overwrite").await?.trim() {
                    "true" | "1" | "on" => true,
                    "false" | "0" | "" => false,
                    other => {
                        return Err(ApiError::BadRequest(format!(
                            "'overwrite' must be true or false (got {other:?})"
                        )))
                    }
                }
            }
            "file" => {
                let mut buf = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                    buf.extend_from_slice(&chunk);
                    if buf.len() as u64 > svc.max_bytes() {
                        return Err(ApiError::PayloadTooLarge(format!(
                            "the bundle is larger than [community] max_bytes ({})",
                            svc.max_bytes()
                        )));
                    }
                }
                file = Some(buf);
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "unknown part {other:?}; the parts are file, rename and overwrite"
                )))
            }
        }
    }
    let file = file.ok_or_else(|| ApiError::BadRequest("the multipart body has no 'file' part".into()))?;
    Ok((file, rename, overwrite))
}

/// The `/store` routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(catalog))
        .routes(routes!(item))
        .routes(routes!(import))
        .routes(routes!(import_local))
}
