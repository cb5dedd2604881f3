//! Wake-on-LAN routes over [`WolService`]: `POST /hosts/{id}/wake`,
//! `POST /hosts/batch/wake`, the history (`GET /wol/history`, `GET /wol/history/{key}`
//! by MAC, `DELETE /wol/history/{key}` by id, `DELETE /wol/history`),
//! `GET /wol/interfaces`, and the schedules (`POST /wol/schedule`,
//! `GET /wol/schedules`, `DELETE /wol/schedule/{id}`). The history and schedule paths
//! share `{key}` because the router cannot give one path two parameter names: it is a
//! MAC for GET and a record id for DELETE.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{FromRequest, Request, State},
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiJson, ApiPath, ApiQuery, Envelope},
    list::{matches, ListQuery, PageInfo},
    AppState,
};
use bootlane_config::config::Config;
use bootlane_core::net::types::normalise_mac;
use bootlane_machines::wol::{
    history::WolRecord,
    packet::SecureOn,
    schedules::{ScheduleInput, ScheduleView},
    sender::BroadcastIface,
    service::{WakeOptions, WakeResult, WolService},
    MAX_REPEAT,
};

/// A JSON body that may be absent: an empty body is `T::default()`, anything else goes
/// through [`ApiJson`] (so its rejections are the usual 400/415 envelopes).
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .map_err(|_| ApiError::PayloadTooLarge("the request body is too large".into()))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        let ApiJson(v) = ApiJson::<T>::from_request(Request::from_parts(parts, Body::from(bytes)), state).await?;
        Ok(Self(v))
    }
}

/// Body of `POST /hosts/{id}/wake` (optional: no body wakes with the defaults).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WakeRequest {
    /// Send only out of this interface (one of `GET /wol/interfaces`). Default: the
    /// interfaces whose subnet holds the host's address, else all of them.
    pub interface: Option<String>,
    /// Packets per destination, 1-10. Default `[wol] repeat`.
    #[schema(minimum = 1, maximum = 10)]
    pub repeat: Option<u64>,
    /// SecureOn password: six hex bytes (`01:23:45:67:89:ab`), appended to the packet.
    pub password: Option<String>,
}

/// Body of `POST /hosts/batch/wake`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchWakeRequest {
    /// Host ids, woken in this order (1-1000, no repeats).
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Vec<u64>,
    /// Pause between hosts in milliseconds, 0-60000. Default `[wol] stagger_ms`. The
    /// whole batch must fit in the request timeout (`[api] request_timeout_secs`).
    #[schema(minimum = 0, maximum = 60000)]
    pub stagger_ms: Option<u64>,
    /// As in `POST /hosts/{id}/wake`.
    pub interface: Option<String>,
    /// As in `POST /hosts/{id}/wake`.
    #[schema(minimum = 1, maximum = 10)]
    pub repeat: Option<u64>,
    /// As in `POST /hosts/{id}/wake`.
    pub password: Option<String>,
}

/// `POST /hosts/batch/wake` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchWakeAnswer {
    /// One result per id, in the order asked.
    pub results: Vec<WakeResult>,
    /// How many went out everywhere.
    pub ok: usize,
    /// How many failed (unknown host, nothing sent, ...).
    pub failed: usize,
}

fn options(interface: Option<String>, repeat: Option<u64>, password: Option<&str>) -> Result<WakeOptions> {
    let repeat = match repeat {
        None => None,
        Some(r @ 1..=10) => Some(r as u8),
        Some(_) => return Err(ApiError::BadRequest(format!("'repeat' must be 1-{MAX_REPEAT}"))),
    };
    if interface.as_deref().is_some_and(|i| i.is_empty() || i.len() > 15) {
        return Err(ApiError::BadRequest(
            "'interface' must be an interface name (1-15 bytes); GET /api/v1/wol/interfaces lists them".into(),
        ));
    }
    let password = password
        .map(SecureOn::parse)
        .transpose()
        .map_err(ApiError::BadRequest)?;
    Ok(WakeOptions {
        interface,
        repeat,
        password,
    })
}

/// Send the magic packet for this host now (to each chosen interface's subnet-directed
/// broadcast and to 255.255.255.255, on every `[wol] ports` port). The answer is the
/// history record. 409 when no interface can broadcast or nothing could be sent (the
/// failure is recorded in the history too).
#[utoipa::path(post, path = "/api/v1/hosts/{id}/wake", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol", params(("id" = u64, Path, description = "Host id")),
    request_body(content = Option<WakeRequest>, description = "Optional; no body wakes with the defaults"),
    responses((status = 200, body = WolRecord), (status = 400, description = "Invalid field (named)"), (status = 404, description = "No such host"),
        (status = 409, description = "No interface can broadcast, or nothing could be sent"), (status = 401)))]
pub async fn wake(
    State(wol): State<Arc<WolService>>,
    ApiPath(id): ApiPath<u64>,
    OptionalJson(req): OptionalJson<WakeRequest>,
) -> Result<Envelope<WolRecord>> {
    let opts = options(req.interface, req.repeat, req.password.as_deref())?;
    Ok(Envelope::ok(wol.wake_host(id, &opts, "api").await?))
}

/// Wake several hosts in order, pausing `stagger_ms` between them so a rack does not
/// power up at once; one result per host (an unknown id is a failed result, not a 404).
#[utoipa::path(post, path = "/api/v1/hosts/batch/wake", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol", request_body = BatchWakeRequest,
    responses((status = 200, body = BatchWakeAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn batch_wake(
    State(wol): State<Arc<WolService>>,
    State(config): State<Arc<Config>>,
    ApiJson(req): ApiJson<BatchWakeRequest>,
) -> Result<Envelope<BatchWakeAnswer>> {
    // Ids are int64 in the OpenAPI document; larger numbers are not ids.
    if req.ids.iter().any(|&i| i > i64::MAX as u64) {
        return Err(ApiError::BadRequest(
            "'ids' holds a number that is not a host id".into(),
        ));
    }
    let opts = options(req.interface, req.repeat, req.password.as_deref())?;
    let stagger = req.stagger_ms.unwrap_or(wol.config().stagger_ms);
    let budget_ms = config.api.request_timeout_secs.saturating_mul(1000);
    let pauses = (req.ids.len().saturating_sub(1) as u64).saturating_mul(stagger);
    if stagger <= bootlane_machines::wol::MAX_STAGGER_MS && pauses >= budget_ms {
        return Err(ApiError::BadRequest(format!(
            "'stagger_ms' x (ids - 1) = {pauses} ms does not fit in the request timeout ({budget_ms} ms, \
             [api] request_timeout_secs); use a smaller stagger or fewer ids per request"
        )));
    }
    let results = wol.wake_batch(&req.ids, req.stagger_ms, &opts).await?;
    let ok = results.iter().filter(|r| r.ok).count();
    Ok(Envelope::ok(BatchWakeAnswer {
        failed: results.len() - ok,
        ok,
        results,
    }))
}

/// Field filters of `GET /wol/history` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryFilter {
    /// Only this MAC (any separator).
    pub mac: Option<String>,
    /// Only wakes of this host id.
    pub host_id: Option<u64>,
    /// Only successful (`true`) or failed (`false`) wakes.
    pub ok: Option<bool>,
    /// Only this source: `api`, `batch` or `schedule:<id>`.
    pub source: Option<String>,
}

/// `GET /wol/history` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryList {
    /// Records of this page, newest first.
    pub history: Vec<WolRecord>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

fn page(records: Vec<WolRecord>, lq: &ListQuery, f: &HistoryFilter) -> Result<HistoryList> {
    if f.host_id.is_some_and(|h| h > i64::MAX as u64) {
        return Err(ApiError::BadRequest("'host_id' is not a host id".into()));
    }
    let mac = match &f.mac {
        Some(m) => Some(
            normalise_mac(m)
                .map_err(|e| ApiError::BadRequest(format!("'mac': {e}")))?
                .to_string(),
        ),
        None => None,
    };
    let q = lq.needle();
    let page = lq.paginate(
        records.into_iter().filter(|r| {
            mac.as_ref().is_none_or(|m| &r.mac == m)
                && f.host_id.is_none_or(|h| r.host_id == Some(h))
                && f.ok.is_none_or(|ok| r.ok == ok)
                && f.source.as_ref().is_none_or(|s| &r.source == s)
                && matches(
                    q.as_deref(),
                    [
                        r.mac.as_str(),
                        r.host_name.as_deref().unwrap_or(""),
                        &r.interfaces.join(" "),
                        &r.actor,
                        &r.source,
                        r.error.as_deref().unwrap_or(""),
                    ],
                )
        }),
        |r| std::cmp::Reverse(r.id),
    )?;
    Ok(HistoryList {
        history: page.items,
        paging: page.info,
    })
}

/// The wake history, newest first. `q` searches MAC, host name, interfaces, actor,
/// source and error.
#[utoipa::path(get, path = "/api/v1/wol/history", extensions(("x-bootlane-role" = json!("viewer"))), tag = "wol", params(ListQuery, HistoryFilter),
    responses((status = 200, body = HistoryList), (status = 400, description = "Bad paging or filter"), (status = 401)))]
pub async fn history(
    State(wol): State<Arc<WolService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<HistoryFilter>,
) -> Result<Envelope<HistoryList>> {
    Ok(Envelope::ok(page(wol.history()?, &lq, &f)?))
}

/// `DELETE /wol/history` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cleared {
    /// Records removed.
    pub deleted: usize,
}

/// Delete the whole wake history.
#[utoipa::path(delete, path = "/api/v1/wol/history", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol",
    responses((status = 200, body = Cleared), (status = 401)))]
pub async fn clear_history(State(wol): State<Arc<WolService>>) -> Result<Envelope<Cleared>> {
    Ok(Envelope::ok(Cleared {
        deleted: wol.clear_history().await?,
    }))
}

/// The wake history of one MAC, newest first (paged like `GET /wol/history`).
#[utoipa::path(get, path = "/api/v1/wol/history/{key}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "wol",
    params(("key" = String, Path, description = "MAC address, any separator"), ListQuery),
    responses((status = 200, body = HistoryList), (status = 400, description = "Not a MAC, or bad paging"), (status = 401)))]
pub async fn history_of_mac(
    State(wol): State<Arc<WolService>>,
    ApiPath(key): ApiPath<String>,
    ApiQuery(lq): ApiQuery<ListQuery>,
) -> Result<Envelope<HistoryList>> {
    let f = HistoryFilter {
        mac: Some(key),
        host_id: None,
        ok: None,
        source: None,
    };
    Ok(Envelope::ok(page(wol.history()?, &lq, &f)?))
}

/// Delete one history record; answers it.
#[utoipa::path(delete, path = "/api/v1/wol/history/{key}", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol",
    params(("key" = u64, Path, description = "History record id")),
    responses((status = 200, body = WolRecord), (status = 400, description = "Not an id"), (status = 404), (status = 401)))]
pub async fn delete_record(
    State(wol): State<Arc<WolService>>,
    ApiPath(key): ApiPath<String>,
) -> Result<Envelope<WolRecord>> {
    let id: u64 = key.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "invalid path parameter: {key:?} is not a history record id (a positive integer)"
        ))
    })?;
    Ok(Envelope::ok(wol.delete_record(id).await?))
}

/// `GET /wol/interfaces` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct WolInterfaces {
    /// Interfaces that are up, able to broadcast and allowed by `[wol] interfaces`.
    pub interfaces: Vec<BroadcastIface>,
    /// UDP ports a wake is sent to (`[wol] ports`).
    pub ports: Vec<u16>,
}

/// Interfaces WOL can broadcast on, with their subnet-directed broadcast addresses.
#[utoipa::path(get, path = "/api/v1/wol/interfaces", extensions(("x-bootlane-role" = json!("viewer"))), tag = "wol",
    responses((status = 200, body = WolInterfaces), (status = 401)))]
pub async fn interfaces(State(wol): State<Arc<WolService>>) -> Envelope<WolInterfaces> {
    Envelope::ok(WolInterfaces {
        interfaces: wol.interfaces(),
        ports: wol.config().ports.clone(),
    })
}

/// `GET /wol/schedules` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    /// Every schedule, in id order, with its last run and next run.
    pub schedules: Vec<ScheduleView>,
}

/// Every wake schedule with its last run, last status and error, and next run.
#[utoipa::path(get, path = "/api/v1/wol/schedules", extensions(("x-bootlane-role" = json!("viewer"))), tag = "wol",
    responses((status = 200, body = ScheduleList), (status = 401)))]
pub async fn schedules(State(wol): State<Arc<WolService>>) -> Result<Envelope<ScheduleList>> {
    Ok(Envelope::ok(ScheduleList {
        schedules: wol.schedules()?,
    }))
}

/// Create a wake schedule: a cron expression read in a time zone, and targets. Runs
/// missed while the server was down are reported (`last_status: missed`), never fired late.
#[utoipa::path(post, path = "/api/v1/wol/schedule", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol", request_body = ScheduleInput,
    responses((status = 201, body = ScheduleView), (status = 400, description = "Invalid field (named)"),
        (status = 409, description = "Too many schedules"), (status = 401)))]
pub async fn create_schedule(
    State(wol): State<Arc<WolService>>,
    ApiJson(input): ApiJson<ScheduleInput>,
) -> Result<Envelope<ScheduleView>> {
    Ok(Envelope::created(wol.create_schedule(input).await?))
}

/// Delete a wake schedule; answers it.
#[utoipa::path(delete, path = "/api/v1/wol/schedule/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "wol", params(("id" = u64, Path, description = "Schedule id")),
    responses((status = 200, body = ScheduleView), (status = 400), (status = 404), (status = 401)))]
pub async fn delete_schedule(
    State(wol): State<Arc<WolService>>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Envelope<ScheduleView>> {
    Ok(Envelope::ok(wol.delete_schedule(id).await?))
}

/// Protected WOL routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(wake))
        .routes(routes!(batch_wake))
        .routes(routes!(history, clear_history))
        .routes(routes!(history_of_mac, delete_record))
        .routes(routes!(interfaces))
        .routes(routes!(schedules))
        .routes(routes!(create_schedule))
        .routes(routes!(delete_schedule))
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use super::super::test_support::{setup, T};
    use bootlane_machines::wol::sender::fake::FakeNetwork;

    /// A logged-in client whose WOL service sends into a recording fake.
    async fn client() -> (T, Arc<FakeNetwork>) {
        let mut t = setup().await;
        t.login().await;
        let net = Arc::new(FakeNetwork::new());
        t.state.wol.set_network(net.clone());
        (t, net)
    }

    use std::sync::Arc;

    async fn host(t: &T, name: &str, mac: &str, ip: &str) -> u64 {
        let v = t
            .expect(
                Method::POST,
                "/api/v1/hosts",
                Some(json!({"name": name, "mac": mac, "ip": ip})),
                StatusCode::CREATED,
                "",
            )
            .await;
        v["data"]["id"].as_u64().unwrap()
    }

    #[tokio::test]
    async fn wake_a_host_with_or_without_a_body() {
        let (t, net) = client().await;
        let id = host(&t, "n1", "52:54:00:01:02:03", "192.168.7.20").await;
        let path = format!("/api/v1/hosts/{id}/wake");
        // No body at all: the defaults ([wol] repeat = 3).
        let v = t.expect(Method::POST, &path, None, StatusCode::OK, "").await;
        assert_eq!(v["data"]["interfaces"], json!(["eth1"]));
        assert_eq!(v["data"]["packets_sent"], 6);
        assert_eq!(v["data"]["actor"], "admin");
        assert!(net.sent().iter().all(|s| s.iface == "eth1" && s.dest.port() == 9));
        let v = t
            .expect(
                Method::POST,
                &path,
                Some(json!({"interface": "eth0", "repeat": 1, "password": "01-02-03-04-05-06"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["interfaces"], json!(["eth0"]));
        assert_eq!(v["data"]["secureon"], true);
        assert_eq!(net.sent().last().unwrap().payload.len(), 108);
        for (body, field) in [
            (json!({"repeat": 11}), "'repeat'"),
            (json!({"repeat": 0}), "'repeat'"),
            (json!({"password": "nope"}), "'password'"),
            (json!({"interface": "wlan7"}), "'interface'"),
            (json!({"interface": ""}), "'interface'"),
            (json!({"bogus": 1}), "bogus"),
            (json!([1]), "object"),
        ] {
            t.expect(Method::POST, &path, Some(body), StatusCode::BAD_REQUEST, field)
                .await;
        }
        t.expect(
            Method::POST,
            "/api/v1/hosts/999/wake",
            None,
            StatusCode::NOT_FOUND,
            "no host",
        )
        .await;
        t.expect(
            Method::POST,
            "/api/v1/hosts/x/wake",
            None,
            StatusCode::BAD_REQUEST,
            "path",
        )
        .await;
    }

    #[tokio::test]
    async fn batch_wake_reports_per_host() {
        let (t, _net) = client().await;
        let a = host(&t, "a", "52:54:00:01:00:01", "10.0.0.21").await;
        let b = host(&t, "b", "52:54:00:01:00:02", "10.0.0.22").await;
        let v = t
            .expect(
                Method::POST,
                "/api/v1/hosts/batch/wake",
                Some(json!({"ids": [a, 4040, b], "stagger_ms": 10, "repeat": 1})),
                StatusCode::OK,
                "",
            )
            .await;
        let d = &v["data"];
        assert_eq!((d["ok"].as_u64(), d["failed"].as_u64()), (Some(2), Some(1)));
        assert_eq!(d["results"][1]["id"], 4040);
        assert!(d["results"][1]["error"].as_str().unwrap().contains("no host"));
        assert_eq!(d["results"][2]["record"]["host_name"], "b");
        for (body, field) in [
            (json!({"ids": []}), "'ids'"),
            (json!({"ids": [a, a]}), "'ids'"),
            (json!({"ids": [a], "stagger_ms": 60001}), "'stagger_ms'"),
            (json!({"ids": [9_223_372_036_854_775_808u64]}), "'ids'"),
            // Two 60 s pauses do not fit in the 30 s request timeout.
            (json!({"ids": [a, b, 5], "stagger_ms": 60000}), "'stagger_ms'"),
            (json!({"ids": "1"}), "ids"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/hosts/batch/wake",
                Some(body),
                StatusCode::BAD_REQUEST,
                field,
            )
            .await;
        }
    }

    #[tokio::test]
    async fn history_lists_filters_and_deletes() {
        let (t, _net) = client().await;
        let a = host(&t, "a", "52:54:00:02:00:01", "10.0.0.31").await;
        let b = host(&t, "b", "52:54:00:02:00:02", "10.0.0.32").await;
        for id in [a, b, a] {
            t.expect(
                Method::POST,
                &format!("/api/v1/hosts/{id}/wake"),
                Some(json!({"repeat": 1})),
                StatusCode::OK,
                "",
            )
            .await;
        }
        let v = t
            .expect(Method::GET, "/api/v1/wol/history?size=2", None, StatusCode::OK, "")
            .await;
        assert_eq!(
            (
                v["data"]["total"].as_u64(),
                v["data"]["history"].as_array().unwrap().len()
            ),
            (Some(3), 2)
        );
        let newest = v["data"]["history"][0]["id"].as_u64().unwrap();
        assert!(newest > v["data"]["history"][1]["id"].as_u64().unwrap(), "newest first");
        let v = t
            .expect(
                Method::GET,
                "/api/v1/wol/history/52-54-00-02-00-01",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["total"], 2);
        let v = t
            .expect(
                Method::GET,
                &format!("/api/v1/wol/history?host_id={b}&ok=true"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["total"], 1);
        let v = t
            .expect(
                Method::GET,
                "/api/v1/wol/history?q=eth0&source=api",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["total"], 3);
        t.expect(
            Method::GET,
            "/api/v1/wol/history?mac=zz",
            None,
            StatusCode::BAD_REQUEST,
            "'mac'",
        )
        .await;
        t.expect(
            Method::GET,
            "/api/v1/wol/history/zz",
            None,
            StatusCode::BAD_REQUEST,
            "'mac'",
        )
        .await;
        t.expect(
            Method::GET,
            "/api/v1/wol/history?ok=maybe",
            None,
            StatusCode::BAD_REQUEST,
            "ok",
        )
        .await;
        t.expect(
            Method::GET,
            "/api/v1/wol/history?host_id=9223372036854775808",
            None,
            StatusCode::BAD_REQUEST,
            "'host_id'",
        )
        .await;
        let v = t
            .expect(
                Method::DELETE,
                &format!("/api/v1/wol/history/{newest}"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["id"].as_u64(), Some(newest));
        t.expect(
            Method::DELETE,
            &format!("/api/v1/wol/history/{newest}"),
            None,
            StatusCode::NOT_FOUND,
            "",
        )
        .await;
        t.expect(
            Method::DELETE,
            "/api/v1/wol/history/abc",
            None,
            StatusCode::BAD_REQUEST,
            "history record id",
        )
        .await;
        let v = t
            .expect(Method::DELETE, "/api/v1/wol/history", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["deleted"], 2);
        let v = t
            .expect(Method::GET, "/api/v1/wol/history", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["total"], 0);
    }

    #[tokio::test]
    async fn interfaces_and_schedules() {
        let (t, _net) = client().await;
        let v = t
            .expect(Method::GET, "/api/v1/wol/interfaces", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["interfaces"][0]["name"], "eth0");
        assert_eq!(v["data"]["interfaces"][0]["addresses"][0]["broadcast"], "10.0.0.255");
        assert_eq!(v["data"]["ports"], json!([9]));
        let id = host(&t, "s", "52:54:00:03:00:01", "10.0.0.41").await;
        let v = t
            .expect(
                Method::POST,
                "/api/v1/wol/schedule",
                Some(
                    json!({"name": "weekday mornings", "cron": "30 6 * * MON-FRI", "timezone": "Europe/Berlin",
                    "host_ids": [id], "macs": ["aa-bb-cc-dd-ee-ff"]}),
                ),
                StatusCode::CREATED,
                "",
            )
            .await;
        let sid = v["data"]["id"].as_u64().unwrap();
        assert_eq!(v["data"]["macs"], json!(["aa:bb:cc:dd:ee:ff"]));
        assert!(v["data"]["next_run"].as_str().unwrap().contains("T06:30:00+0"));
        let v = t
            .expect(Method::GET, "/api/v1/wol/schedules", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["schedules"][0]["id"].as_u64(), Some(sid));
        assert_eq!(v["data"]["schedules"][0]["last_status"], json!(null));
        for (body, field) in [
            (
                json!({"name": "x", "cron": "not cron", "macs": ["aa:bb:cc:dd:ee:ff"]}),
                "'cron'",
            ),
            (
                json!({"name": "x", "cron": "* * * * *", "timezone": "Nowhere", "macs": ["aa:bb:cc:dd:ee:ff"]}),
                "'timezone'",
            ),
            (json!({"name": "x", "cron": "* * * * *"}), "'macs'"),
            (
                json!({"name": "x", "cron": "* * * * *", "host_ids": [999]}),
                "'host_ids'",
            ),
            (json!({"cron": "* * * * *", "macs": ["aa:bb:cc:dd:ee:ff"]}), "name"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/wol/schedule",
                Some(body),
                StatusCode::BAD_REQUEST,
                field,
            )
            .await;
        }
        t.expect(
            Method::DELETE,
            &format!("/api/v1/wol/schedule/{sid}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
        t.expect(
            Method::DELETE,
            &format!("/api/v1/wol/schedule/{sid}"),
            None,
            StatusCode::NOT_FOUND,
            "",
        )
        .await;
    }

    #[tokio::test]
    async fn routes_need_a_session() {
        let t = setup().await;
        for (m, p) in [
            (Method::POST, "/api/v1/hosts/1/wake"),
            (Method::POST, "/api/v1/hosts/batch/wake"),
            (Method::GET, "/api/v1/wol/history"),
            (Method::GET, "/api/v1/wol/interfaces"),
            (Method::GET, "/api/v1/wol/schedules"),
        ] {
            t.expect(m, p, None, StatusCode::UNAUTHORIZED, "").await;
        }
    }
}
