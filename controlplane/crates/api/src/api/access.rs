//! Access-control routes (spec "Access control") over [`AccessService`]: the blacklist and
//! the whitelist (`GET`/`POST /access/blacklist`, `DELETE /access/blacklist/{id}`, the
//! same for `/access/whitelist`), the unauthorized devices (`GET /access/unauthorized`,
//! `DELETE /access/unauthorized/{id}`,
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
use bootlane_boot::access::{
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
#[utoipa::path(get, path = "/api/v1/access/blacklist", extensions(("x-bootlane-role" = json!("viewer"))), tag = "access", params(ListQuery),
    responses((status = 200, body = EntryList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<EntryList>> {
    Ok(Envelope::ok(entry_page(&access, ListKind::Blacklist, &lq)?))
}

/// Add a MAC or a MAC prefix (OUI) to the blacklist; applies to the next packet.
#[utoipa::path(post, path = "/api/v1/access/blacklist", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", request_body = EntryInput,
    responses((status = 201, body = AccessEntry), (status = 400, description = "Not a MAC or prefix, or a bad note (named)"),
        (status = 409, description = "Already on the blacklist, or the list is full"), (status = 401)))]
pub async fn add_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiJson(input): ApiJson<EntryInput>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::created(access.add_entry(ListKind::Blacklist, input).await?))
}

/// Delete a blacklist entry; answers it.
#[utoipa::path(delete, path = "/api/v1/access/blacklist/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", params(("id" = u64, Path, description = "Entry id")),
    responses((status = 200, body = AccessEntry), (status = 400), (status = 404), (status = 401)))]
pub async fn delete_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::ok(access.delete_entry(ListKind::Blacklist, id).await?))
}

/// The whitelist (the only machines served in `whitelist` mode), in id order. `q`
/// searches MAC and note.
#[utoipa::path(get, path = "/api/v1/access/whitelist", extensions(("x-bootlane-role" = json!("viewer"))), tag = "access", params(ListQuery),
    responses((status = 200, body = EntryList), (status = 400, description = "Bad paging"), (status = 401)))]
pub async fn list_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<EntryList>> {
    Ok(Envelope::ok(entry_page(&access, ListKind::Whitelist, &lq)?))
}

/// Add a MAC or a MAC prefix (OUI) to the whitelist; applies to the next packet.
#[utoipa::path(post, path = "/api/v1/access/whitelist", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", request_body = EntryInput,
    responses((status = 201, body = AccessEntry), (status = 400, description = "Not a MAC or prefix, or a bad note (named)"),
        (status = 409, description = "Already on the whitelist, or the list is full"), (status = 401)))]
pub async fn add_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiJson(input): ApiJson<EntryInput>,
) -> Result<Envelope<AccessEntry>> {
    Ok(Envelope::created(access.add_entry(ListKind::Whitelist, input).await?))
}

/// Delete a whitelist entry; answers it.
#[utoipa::path(delete, path = "/api/v1/access/whitelist/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", params(("id" = u64, Path, description = "Entry id")),
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
#[utoipa::path(get, path = "/api/v1/access/unauthorized", extensions(("x-bootlane-role" = json!("viewer"))), tag = "access", params(ListQuery),
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
#[utoipa::path(delete, path = "/api/v1/access/unauthorized/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", params(("id" = u64, Path, description = "Device id")),
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
    /// Note of the new entries (at most 256 bytes, no control characters). Default: where
    /// they came from.
    #[schema(max_length = 256)]
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
#[utoipa::path(post, path = "/api/v1/access/unauthorized/add-to-whitelist", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", request_body = MoveRequest,
    responses((status = 200, body = MoveAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn add_to_whitelist(
    State(access): State<Arc<AccessService>>,
    ApiJson(req): ApiJson<MoveRequest>,
) -> Result<Envelope<MoveAnswer>> {
    move_to(&access, req, ListKind::Whitelist).await
}

/// Move unauthorized devices to the blacklist (each becomes a blacklist entry for its MAC
/// and leaves the unauthorized list).
#[utoipa::path(post, path = "/api/v1/access/unauthorized/add-to-blacklist", extensions(("x-bootlane-role" = json!("operator"))), tag = "access", request_body = MoveRequest,
    responses((status = 200, body = MoveAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn add_to_blacklist(
    State(access): State<Arc<AccessService>>,
    ApiJson(req): ApiJson<MoveRequest>,
) -> Result<Envelope<MoveAnswer>> {
    move_to(&access, req, ListKind::Blacklist).await
}

/// The access mode in force, the configuration file's default and whether a mode was
/// stored through the API.
#[utoipa::path(get, path = "/api/v1/access/mode", extensions(("x-bootlane-role" = json!("viewer"))), tag = "access",
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
#[utoipa::path(put, path = "/api/v1/access/mode", extensions(("x-bootlane-role" = json!("admin"))), tag = "access", request_body = ModeInput,
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::http::{Method, StatusCode};
    use serde_json::{json, Value};

    use super::super::test_support::{setup, T};

    async fn client() -> T {
        let mut t = setup().await;
        t.login().await;
        t.host = Some("10.77.0.1:8080");
        t
    }

    async fn script(t: &T, mac: &str) -> String {
        let (s, _, v) = t.call(Method::GET, &format!("/boot/ipxe?mac={mac}"), None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v.as_str().unwrap().to_string()
    }

    /// Polls `GET /access/unauthorized` until `pred` holds (the recorder runs off the
    /// request path), 5 s at most.
    async fn unauthorized_until(t: &T, pred: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..250 {
            let v = t
                .expect(Method::GET, "/api/v1/access/unauthorized", None, StatusCode::OK, "")
                .await;
            if pred(&v["data"]) {
                return v["data"].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("unauthorized list never matched");
    }

    #[tokio::test]
    async fn lists_add_validate_refuse_duplicates_and_delete() {
        let t = client().await;
        for list in ["blacklist", "whitelist"] {
            let path = format!("/api/v1/access/{list}");
            let v = t
                .expect(
                    Method::POST,
                    &path,
                    Some(json!({"mac": "52-54-00", "note": "QEMU"})),
                    StatusCode::CREATED,
                    "",
                )
                .await;
            let d = &v["data"];
            assert_eq!(
                (d["mac"].as_str(), d["prefix"].as_bool(), d["list"].as_str()),
                (Some("52:54:00"), Some(true), Some(list))
            );
            let id = d["id"].as_u64().unwrap();
            t.expect(
                Method::POST,
                &path,
                Some(json!({"mac": "AABBCCDDEEFF"})),
                StatusCode::CREATED,
                "",
            )
            .await;
            t.expect(
                Method::POST,
                &path,
                Some(json!({"mac": "525400"})),
                StatusCode::CONFLICT,
                "already on the",
            )
            .await;
            for (body, needle) in [
                (json!({"mac": "52:54"}), "'mac'"),
                (json!({"mac": "52:54:00:77:00:42:01"}), "OUI 52:54:00"),
                (json!({"mac": "zz:zz:zz"}), "'mac'"),
                (json!({"mac": "02:00:00:00:00:01", "note": "x".repeat(300)}), "'note'"),
                (json!({"mac": "02:00:00:00:00:01", "bogus": 1}), "bogus"),
                (json!({"note": "no mac"}), "mac"),
            ] {
                t.expect(Method::POST, &path, Some(body), StatusCode::BAD_REQUEST, needle)
                    .await;
            }
            let v = t
                .expect(Method::GET, &format!("{path}?q=qemu"), None, StatusCode::OK, "")
                .await;
            assert_eq!(v["data"]["total"], 1, "{v}");
            assert_eq!(v["data"]["entries"][0]["note"], "QEMU");
            let v = t.expect(Method::GET, &path, None, StatusCode::OK, "").await;
            assert_eq!(v["data"]["total"], 2);
            assert_eq!(v["data"]["entries"][1]["mac"], "aa:bb:cc:dd:ee:ff");
            t.expect(Method::DELETE, &format!("{path}/{id}"), None, StatusCode::OK, "")
                .await;
            t.expect(
                Method::DELETE,
                &format!("{path}/{id}"),
                None,
                StatusCode::NOT_FOUND,
                "no ",
            )
            .await;
            t.expect(
                Method::DELETE,
                &format!("{path}/abc"),
                None,
                StatusCode::BAD_REQUEST,
                "",
            )
            .await;
        }
        // An id of one list is not found on the other.
        let v = t
            .expect(Method::GET, "/api/v1/access/blacklist", None, StatusCode::OK, "")
            .await;
        let black = v["data"]["entries"][0]["id"].as_u64().unwrap();
        t.expect(
            Method::DELETE,
            &format!("/api/v1/access/whitelist/{black}"),
            None,
            StatusCode::NOT_FOUND,
            "no whitelist entry",
        )
        .await;
    }

    #[tokio::test]
    async fn mode_get_put_and_events() {
        let t = client().await;
        let v = t
            .expect(Method::GET, "/api/v1/access/mode", None, StatusCode::OK, "")
            .await;
        assert_eq!(
            v["data"],
            json!({"mode": "off", "file_default": "off", "stored": false})
        );
        let v = t
            .expect(
                Method::PUT,
                "/api/v1/access/mode",
                Some(json!({"mode": "whitelist"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            v["data"],
            json!({"mode": "whitelist", "file_default": "off", "stored": true})
        );
        for body in [
            json!({"mode": "deny"}),
            json!({"mode": "off", "x": 1}),
            json!({}),
            json!("off"),
        ] {
            t.expect(
                Method::PUT,
                "/api/v1/access/mode",
                Some(body),
                StatusCode::BAD_REQUEST,
                "",
            )
            .await;
        }
        t.state.events.settle().await;
        let v = t
            .expect(
                Method::GET,
                "/api/v1/events?kind=access.mode.changed",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert!(
            v.to_string().contains("access mode changed from off to whitelist"),
            "{v}"
        );
    }

    /// The iPXE script and boot files under each mode, the unauthorized record of a
    /// refused machine, and its move to the whitelist, after which it boots.
    #[tokio::test]
    async fn boot_routes_obey_the_mode_and_a_moved_device_boots() {
        let t = client().await;
        let root = t.state.settings.boot_root();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("k.bin"), b"kernel").unwrap();
        let m = "52:54:00:77:00:42";
        assert!(script(&t, m).await.contains(&format!("echo Bootlane: booting {m}")));
        t.expect(
            Method::POST,
            "/api/v1/access/blacklist",
            Some(json!({"mac": "52:54:00"})),
            StatusCode::CREATED,
            "",
        )
        .await;
        assert!(
            script(&t, m).await.contains("booting"),
            "mode off: lists are not enforced"
        );
        t.expect(
            Method::PUT,
            "/api/v1/access/mode",
            Some(json!({"mode": "blacklist"})),
            StatusCode::OK,
            "",
        )
        .await;
        let s = script(&t, m).await;
        assert!(
            s.starts_with("#!ipxe\n") && s.contains("not authorised") && s.trim_end().ends_with("exit"),
            "{s}"
        );
        assert!(script(&t, "02:00:00:00:00:01").await.contains("booting"), "not listed");
        // Files are judged by the client's address: the allowed script request just taught
        // the gate that 10.9.9.9 is 02:00:00:00:00:01, which is not blacklisted...
        let (s, _, v) = t.call(Method::GET, "/boot/k.bin", None).await;
        assert_eq!((s, v.as_str()), (StatusCode::OK, Some("kernel")));
        // ...nor whitelisted: refused in whitelist mode.
        t.expect(
            Method::PUT,
            "/api/v1/access/mode",
            Some(json!({"mode": "whitelist"})),
            StatusCode::OK,
            "",
        )
        .await;
        let (s, _, _) = t.call(Method::GET, "/boot/k.bin", None).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        assert!(script(&t, m).await.contains("not authorised"));
        script(&t, m).await;
        let d = unauthorized_until(&t, |d| d["devices"][0]["count"] == 2).await;
        let dev = &d["devices"][0];
        assert_eq!(
            (dev["mac"].as_str(), dev["last_protocol"].as_str()),
            (Some(m), Some("ipxe"))
        );
        assert_eq!(dev["last_ip"], "10.9.9.9");
        let id = dev["id"].as_u64().unwrap();
        let v = t
            .expect(
                Method::POST,
                "/api/v1/access/unauthorized/add-to-whitelist",
                Some(json!({"ids": [id, 4242]})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["moved"].as_u64(), v["data"]["failed"].as_u64()),
            (Some(1), Some(1)),
            "{v}"
        );
        assert_eq!(v["data"]["results"][0]["entry"]["mac"], m);
        assert!(
            script(&t, m).await.contains(&format!("echo Bootlane: booting {m}")),
            "whitelisted: boots"
        );
        // The script taught the gate who 10.9.9.9 is: its files are served now.
        let (s, _, _) = t.call(Method::GET, "/boot/k.bin", None).await;
        assert_eq!(s, StatusCode::OK);
        let v = t
            .expect(Method::GET, "/api/v1/access/unauthorized", None, StatusCode::OK, "")
            .await;
        // Left: the machine whose file request was refused (known by its address).
        assert_eq!(v["data"]["total"], 1, "{v}");
        let other = &v["data"]["devices"][0];
        assert_eq!(
            (other["mac"].as_str(), other["last_protocol"].as_str()),
            (Some("02:00:00:00:00:01"), Some("http"))
        );
        t.state.events.settle().await;
        let v = t
            .expect(Method::GET, "/api/v1/events?size=1000", None, StatusCode::OK, "")
            .await;
        let kinds: Vec<&str> = v["data"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .filter(|k| k.starts_with("access."))
            .collect();
        for want in [
            "access.entry.created",
            "access.mode.changed",
            "access.refused",
            "access.unauthorized.deleted",
        ] {
            assert!(kinds.contains(&want), "{want} missing: {kinds:?}");
        }
        // One refused event per device per minute (three refusals of the same MAC).
        assert_eq!(
            kinds.iter().filter(|k| **k == "access.refused").count(),
            2,
            "one per device (02:00:00:00:00:01 once, {m} once for its three refusals): {kinds:?}"
        );
    }

    #[tokio::test]
    async fn unauthorized_delete_and_move_validation() {
        let t = client().await;
        t.expect(
            Method::PUT,
            "/api/v1/access/mode",
            Some(json!({"mode": "whitelist"})),
            StatusCode::OK,
            "",
        )
        .await;
        script(&t, "02:00:00:00:00:07").await;
        let d = unauthorized_until(&t, |d| d["total"] == 1).await;
        let id = d["devices"][0]["id"].as_u64().unwrap();
        for (body, needle) in [
            (json!({"ids": []}), "'ids'"),
            (json!({"ids": [id, id]}), "'ids'"),
            (json!({"ids": [9_223_372_036_854_775_808u64]}), "'ids'"),
            (json!({"ids": [id], "note": "x".repeat(300)}), "'note'"),
            (json!({"ids": "1"}), "ids"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/access/unauthorized/add-to-blacklist",
                Some(body),
                StatusCode::BAD_REQUEST,
                needle,
            )
            .await;
        }
        let v = t
            .expect(
                Method::GET,
                "/api/v1/access/unauthorized?q=ipxe",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["total"], 1);
        t.expect(
            Method::DELETE,
            &format!("/api/v1/access/unauthorized/{id}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
        t.expect(
            Method::DELETE,
            &format!("/api/v1/access/unauthorized/{id}"),
            None,
            StatusCode::NOT_FOUND,
            "no unauthorized device",
        )
        .await;
        // Moved to the blacklist: the device is an entry there now.
        script(&t, "02:00:00:00:00:08").await;
        let d = unauthorized_until(&t, |d| d["total"] == 1).await;
        let id = d["devices"][0]["id"].as_u64().unwrap();
        let v = t
            .expect(
                Method::POST,
                "/api/v1/access/unauthorized/add-to-blacklist",
                Some(json!({"ids": [id], "note": "lab"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["results"][0]["entry"]["note"], "lab");
        let v = t
            .expect(Method::GET, "/api/v1/access/blacklist", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["entries"][0]["mac"], "02:00:00:00:00:08");
    }

    #[tokio::test]
    async fn routes_need_a_session() {
        let t = setup().await;
        for (m, p) in [
            (Method::GET, "/api/v1/access/mode"),
            (Method::PUT, "/api/v1/access/mode"),
            (Method::GET, "/api/v1/access/blacklist"),
            (Method::POST, "/api/v1/access/whitelist"),
            (Method::DELETE, "/api/v1/access/whitelist/1"),
            (Method::GET, "/api/v1/access/unauthorized"),
            (Method::DELETE, "/api/v1/access/unauthorized/1"),
            (Method::POST, "/api/v1/access/unauthorized/add-to-whitelist"),
        ] {
            t.expect(m, p, None, StatusCode::UNAUTHORIZED, "").await;
        }
    }
}
