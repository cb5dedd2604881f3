//! BMC routes (spec "BMC") over [`BmcService`]: `/bmc/configs` CRUD and
//! `POST /bmc/configs/import` (CSV), `POST /bmc/probe`, `POST /bmc/{id}/refresh`,
//! `GET /bmc/{id}/status`, `POST /bmc/{id}/power-on|power-off|restart`,
//! `POST /bmc/{id}/boot-device`, `POST /bmc/batch/power-on|power-off|restart|status`, and
//! `POST /hosts/{id}/power`, which drives the host's BMC: the BMC config linked to it
//! (`host_id`), else the host's own `bmc_addr`/`bmc_user`/`bmc_password` (a bare address
//! is IPMI on port 623; `https://`, `redfish://` or `http://` make it Redfish). A BMC
//! that fails, refuses the credentials or does not answer is a 502 whose message names
//! the BMC and the cause; passwords are write-only (`has_password`).
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::{body::Bytes, extract::State};
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
use bootlane_machines::bmc::{
    client::{BootDevice, BootRequest},
    model::{BmcInput, BmcView, LastStatus, Protocol},
    service::{
        BatchItem, BmcService, BootOutcome, ImportReport, PowerAction, PowerOptions, PowerOutcome, ProbeInput,
        ProbeResult,
    },
};

/// `GET /bmc/configs` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BmcList {
    /// Configs of this page, in id order.
    pub configs: Vec<BmcView>,
    /// Total, page and size.
    #[serde(flatten)]
    pub paging: PageInfo,
}

/// Field filters of `GET /bmc/configs` (paging and `q`: [`ListQuery`]).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BmcFilter {
    /// Only this protocol.
    pub protocol: Option<Protocol>,
    /// Only the config linked to this host id.
    pub host_id: Option<u64>,
}

/// List BMC configs, in id order. `q` searches name, address, user, manufacturer, model
/// and serial.
#[utoipa::path(get, path = "/api/v1/bmc/configs", extensions(("x-bootlane-role" = json!("viewer"))), tag = "bmc", params(ListQuery, BmcFilter),
    responses((status = 200, body = BmcList), (status = 400, description = "Bad paging or filter"), (status = 401)))]
pub async fn list(
    State(bmc): State<Arc<BmcService>>,
    ApiQuery(lq): ApiQuery<ListQuery>,
    ApiQuery(f): ApiQuery<BmcFilter>,
) -> Result<Envelope<BmcList>> {
    // Ids are int64 in the OpenAPI document; larger numbers are not ids.
    if f.host_id.is_some_and(|h| h > i64::MAX as u64) {
        return Err(ApiError::BadRequest("'host_id' is not a host id".into()));
    }
    let q = lq.needle();
    let page = lq.paginate(
        bmc.list()?.into_iter().filter(|c| {
            f.protocol.is_none_or(|p| c.protocol == p)
                && f.host_id.is_none_or(|h| c.host_id == Some(h))
                && matches(
                    q.as_deref(),
                    [
                        c.name.as_str(),
                        &c.address,
                        &c.user,
                        c.identity.manufacturer.as_deref().unwrap_or(""),
                        c.identity.model.as_deref().unwrap_or(""),
                        c.identity.serial.as_deref().unwrap_or(""),
                    ],
                )
        }),
        |c| c.id,
    )?;
    let page = page.map(|c| BmcView::from(&c));
    Ok(Envelope::ok(BmcList {
        configs: page.items,
        paging: page.info,
    }))
}

/// Create a BMC config (`name`, `address`, `protocol`, `user` required). Nothing is sent
/// to the BMC; `POST /bmc/{id}/refresh` reads it.
#[utoipa::path(post, path = "/api/v1/bmc/configs", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = BmcInput,
    responses((status = 201, body = BmcView), (status = 400, description = "Invalid field (named)"),
        (status = 409, description = "Name taken, or the host already has a BMC"), (status = 401)))]
pub async fn create(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(input): ApiJson<BmcInput>,
) -> Result<Envelope<BmcView>> {
    Ok(Envelope::created(BmcView::from(&bmc.create(input).await?)))
}

/// Get one BMC config.
#[utoipa::path(get, path = "/api/v1/bmc/configs/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    responses((status = 200, body = BmcView), (status = 400), (status = 404), (status = 401)))]
pub async fn get_one(State(bmc): State<Arc<BmcService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<BmcView>> {
    Ok(Envelope::ok(BmcView::from(&bmc.get(id)?)))
}

/// Update a BMC config: omitted fields keep their values, `null` clears an optional one;
/// a `password` replaces the stored one.
#[utoipa::path(put, path = "/api/v1/bmc/configs/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    request_body = BmcInput,
    responses((status = 200, body = BmcView), (status = 400), (status = 404), (status = 409), (status = 401)))]
pub async fn update(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(input): ApiJson<BmcInput>,
) -> Result<Envelope<BmcView>> {
    Ok(Envelope::ok(BmcView::from(&bmc.update(id, input).await?)))
}

/// Delete a BMC config; answers it.
#[utoipa::path(delete, path = "/api/v1/bmc/configs/{id}", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    responses((status = 200, body = BmcView), (status = 400), (status = 404), (status = 401)))]
pub async fn delete(State(bmc): State<Arc<BmcService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<BmcView>> {
    Ok(Envelope::ok(BmcView::from(&bmc.delete(id).await?)))
}

/// Import BMC configs from CSV (the body, `text/csv`): a header row naming the columns
/// (`name,address,protocol,user` required; `port,password,cipher_suite,system_id,
/// verify_tls,host_id` optional; any order), one config per row, empty cells for defaults.
/// Each row is checked like a create: a bad row imports nothing of itself and is reported
/// with its line number and what was wrong; good rows are imported. At most 5000 rows.
#[utoipa::path(post, path = "/api/v1/bmc/configs/import", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc",
    request_body(content = String, content_type = "text/csv", description = "CSV with a header row"),
    responses((status = 200, body = ImportReport), (status = 400, description = "No usable header row, not UTF-8, too many rows"), (status = 401)))]
pub async fn import(State(bmc): State<Arc<BmcService>>, body: Bytes) -> Result<Envelope<ImportReport>> {
    if std::str::from_utf8(&body).is_err() {
        return Err(ApiError::BadRequest("the CSV must be UTF-8 text".into()));
    }
    Ok(Envelope::ok(bmc.import_csv(&body).await?))
}

/// Probe a BMC without storing it: detect the protocol when none is given (Redfish
/// service root first, then an IPMI session), read identity and power state. 502 when
/// the BMC does not answer or refuses the credentials (the message says which).
#[utoipa::path(post, path = "/api/v1/bmc/probe", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = ProbeInput,
    responses((status = 200, body = ProbeResult), (status = 400, description = "Invalid field (named), or an address outside [bmc] allowed_networks"),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn probe(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(p): ApiJson<ProbeInput>,
) -> Result<Envelope<ProbeResult>> {
    Ok(Envelope::ok(bmc.probe(p).await?))
}

/// Contact the BMC now: read identity and power state and record them (or the error, as
/// `last_error`); answers the config.
#[utoipa::path(post, path = "/api/v1/bmc/{id}/refresh", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    responses((status = 200, body = BmcView), (status = 400), (status = 404),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn refresh(State(bmc): State<Arc<BmcService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<BmcView>> {
    Ok(Envelope::ok(BmcView::from(&bmc.refresh(id).await?)))
}

/// `GET /bmc/{id}/status` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusView {
    /// The BMC config.
    pub id: u64,
    /// Power state, last checked, last error.
    #[serde(flatten)]
    pub status: LastStatus,
}

/// The last recorded status (power state, last checked, last error); does not contact
/// the BMC (`POST /bmc/{id}/refresh` does).
#[utoipa::path(get, path = "/api/v1/bmc/{id}/status", extensions(("x-bootlane-role" = json!("viewer"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    responses((status = 200, body = StatusView), (status = 400), (status = 404), (status = 401)))]
pub async fn status(State(bmc): State<Arc<BmcService>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<StatusView>> {
    Ok(Envelope::ok(StatusView {
        id,
        status: bmc.status(id)?,
    }))
}

/// Body of the power routes (optional: no body is a plain action that waits).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PowerRequest {
    /// `power-on` only: power on into PXE (boot override PXE for the next boot, then power
    /// on, or power cycle when already on).
    #[serde(default)]
    pub pxe: bool,
    /// With `pxe`: UEFI (true) or legacy (false) network boot; absent: the BMC's mode.
    pub uefi: Option<bool>,
    /// `power-off` / `restart`: ask the OS (IPMI soft off; Redfish GracefulShutdown /
    /// GracefulRestart) instead of a hard one.
    #[serde(default)]
    pub graceful: bool,
    /// Redfish only: the `ResetType` to send (e.g. `PowerCycle`, `Nmi`), checked against
    /// the BMC's list when it has one.
    pub reset_type: Option<String>,
    /// Poll until the power state changes, up to `[bmc] settle_secs` (default true).
    pub wait: Option<bool>,
}

impl PowerRequest {
    fn options(self, default_wait: bool) -> PowerOptions {
        PowerOptions {
            pxe: self.pxe,
            uefi: self.uefi,
            graceful: self.graceful,
            reset_type: self.reset_type,
            wait: self.wait.unwrap_or(default_wait),
        }
    }
}

/// Power on (body `pxe: true`: into PXE). Answers the state before and after; `settled`
/// says whether the change showed within `[bmc] settle_secs`.
#[utoipa::path(post, path = "/api/v1/bmc/{id}/power-on", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    request_body(content = Option<PowerRequest>, description = "Optional"),
    responses((status = 200, body = PowerOutcome), (status = 400), (status = 404),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn power_on(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    OptionalJson(req): OptionalJson<PowerRequest>,
) -> Result<Envelope<PowerOutcome>> {
    Ok(Envelope::ok(
        bmc.power(id, PowerAction::PowerOn, &req.options(true)).await?,
    ))
}

/// Power off (hard, or `graceful: true`).
#[utoipa::path(post, path = "/api/v1/bmc/{id}/power-off", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    request_body(content = Option<PowerRequest>, description = "Optional"),
    responses((status = 200, body = PowerOutcome), (status = 400), (status = 404),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn power_off(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    OptionalJson(req): OptionalJson<PowerRequest>,
) -> Result<Envelope<PowerOutcome>> {
    Ok(Envelope::ok(
        bmc.power(id, PowerAction::PowerOff, &req.options(true)).await?,
    ))
}

/// Restart (hard power cycle, or `graceful: true`); a machine that is off is powered on.
#[utoipa::path(post, path = "/api/v1/bmc/{id}/restart", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    request_body(content = Option<PowerRequest>, description = "Optional"),
    responses((status = 200, body = PowerOutcome), (status = 400), (status = 404),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn restart(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    OptionalJson(req): OptionalJson<PowerRequest>,
) -> Result<Envelope<PowerOutcome>> {
    Ok(Envelope::ok(
        bmc.power(id, PowerAction::Restart, &req.options(true)).await?,
    ))
}

/// Body of `POST /bmc/{id}/boot-device`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BootDeviceRequest {
    /// `pxe`, `disk`, `cdrom` or `bios`.
    pub device: BootDevice,
    /// Every boot (true) or the next one only (false, the default).
    #[serde(default)]
    pub persistent: bool,
    /// UEFI (true) or legacy (false) boot; absent: leave the BMC's mode alone.
    pub uefi: Option<bool>,
}

/// Set the boot device, then read back and report what the BMC actually kept (`matches`
/// false and a `message` when it kept something else, e.g. a BMC that ignores the UEFI
/// flag).
#[utoipa::path(post, path = "/api/v1/bmc/{id}/boot-device", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "BMC config id")),
    request_body = BootDeviceRequest,
    responses((status = 200, body = BootOutcome), (status = 400), (status = 404),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn boot_device(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(req): ApiJson<BootDeviceRequest>,
) -> Result<Envelope<BootOutcome>> {
    let r = BootRequest {
        device: req.device,
        persistent: req.persistent,
        uefi: req.uefi,
    };
    Ok(Envelope::ok(bmc.boot_device(id, r).await?))
}

/// Body of the batch routes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = BmcBatchRequest)]
pub struct BatchRequest {
    /// BMC config ids (1-256, no repeats); results come back in this order.
    #[schema(min_items = 1, max_items = 256)]
    pub ids: Vec<u64>,
    /// `power-on` only: into PXE.
    #[serde(default)]
    pub pxe: bool,
    /// `power-off` / `restart`: graceful.
    #[serde(default)]
    pub graceful: bool,
    /// Poll each BMC until its state changes (default false: send and read once, so a
    /// large batch fits in the request timeout).
    pub wait: Option<bool>,
}

/// Batch answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchAnswer {
    /// One result per id, in the order asked.
    pub results: Vec<BatchItem>,
    /// How many went through.
    pub ok: usize,
    /// How many failed (unknown id, BMC error).
    pub failed: usize,
}

async fn batch(bmc: &BmcService, req: BatchRequest, action: PowerAction) -> Result<Envelope<BatchAnswer>> {
    if req.ids.iter().any(|&i| i > i64::MAX as u64) {
        return Err(ApiError::BadRequest("'ids' holds a number that is not an id".into()));
    }
    let opts = PowerOptions {
        pxe: req.pxe,
        uefi: None,
        graceful: req.graceful,
        reset_type: None,
        wait: req.wait.unwrap_or(false),
    };
    let results = bmc.batch(&req.ids, action, &opts).await?;
    let ok = results.iter().filter(|r| r.ok).count();
    Ok(Envelope::ok(BatchAnswer {
        failed: results.len() - ok,
        ok,
        results,
    }))
}

/// Power on several BMCs, `[bmc] concurrency` at a time; one result per id.
#[utoipa::path(post, path = "/api/v1/bmc/batch/power-on", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = BatchRequest,
    responses((status = 200, body = BatchAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn batch_power_on(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Envelope<BatchAnswer>> {
    batch(&bmc, req, PowerAction::PowerOn).await
}

/// Power off several BMCs, `[bmc] concurrency` at a time; one result per id.
#[utoipa::path(post, path = "/api/v1/bmc/batch/power-off", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = BatchRequest,
    responses((status = 200, body = BatchAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn batch_power_off(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Envelope<BatchAnswer>> {
    batch(&bmc, req, PowerAction::PowerOff).await
}

/// Restart several BMCs, `[bmc] concurrency` at a time; one result per id.
#[utoipa::path(post, path = "/api/v1/bmc/batch/restart", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = BatchRequest,
    responses((status = 200, body = BatchAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn batch_restart(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Envelope<BatchAnswer>> {
    batch(&bmc, req, PowerAction::Restart).await
}

/// Read the power state of several BMCs (recorded as their last status); one result per id.
#[utoipa::path(post, path = "/api/v1/bmc/batch/status", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", request_body = BatchRequest,
    responses((status = 200, body = BatchAnswer), (status = 400, description = "Invalid field (named)"), (status = 401)))]
pub async fn batch_status(
    State(bmc): State<Arc<BmcService>>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Envelope<BatchAnswer>> {
    if req.pxe || req.graceful {
        return Err(ApiError::BadRequest(
            "'pxe' and 'graceful' do not go with status".into(),
        ));
    }
    batch(&bmc, req, PowerAction::Status).await
}

/// What `POST /hosts/{id}/power` does.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HostPowerAction {
    /// Power on.
    On,
    /// Power off.
    Off,
    /// Restart.
    Restart,
    /// Read the power state.
    Status,
    /// Power on into PXE (boot override PXE once, then on, or cycle when on).
    Pxe,
}

/// Body of `POST /hosts/{id}/power`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostPowerRequest {
    /// `on`, `off`, `restart`, `status` or `pxe`.
    pub action: HostPowerAction,
    /// `off` / `restart`: graceful.
    #[serde(default)]
    pub graceful: bool,
    /// `pxe`: UEFI (true) or legacy (false); absent: the BMC's mode.
    pub uefi: Option<bool>,
    /// Poll until the state changes (default true).
    pub wait: Option<bool>,
}

/// Drive the host's BMC: the BMC config linked to this host (`host_id`), else the host's
/// own `bmc_addr`/`bmc_user`/`bmc_password` (bare address or `ipmi://`: IPMI, port 623,
/// cipher suite 3; `https://` or `redfish://`: Redfish over HTTPS; `http://`: Redfish over
/// HTTP; `:port` optional). 409 when the host has neither.
#[utoipa::path(post, path = "/api/v1/hosts/{id}/power", extensions(("x-bootlane-role" = json!("operator"))), tag = "bmc", params(("id" = u64, Path, description = "Host id")),
    request_body = HostPowerRequest,
    responses((status = 200, body = PowerOutcome), (status = 400), (status = 404, description = "No such host"),
        (status = 409, description = "The host has no BMC"),
        (status = 502, description = "The BMC failed, refused the credentials or did not answer"), (status = 401)))]
pub async fn host_power(
    State(bmc): State<Arc<BmcService>>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(req): ApiJson<HostPowerRequest>,
) -> Result<Envelope<PowerOutcome>> {
    let (action, pxe) = match req.action {
        HostPowerAction::On => (PowerAction::PowerOn, false),
        HostPowerAction::Off => (PowerAction::PowerOff, false),
        HostPowerAction::Restart => (PowerAction::Restart, false),
        HostPowerAction::Status => (PowerAction::Status, false),
        HostPowerAction::Pxe => (PowerAction::PowerOn, true),
    };
    let opts = PowerOptions {
        pxe,
        uefi: req.uefi,
        graceful: req.graceful,
        reset_type: None,
        wait: req.wait.unwrap_or(true),
    };
    Ok(Envelope::ok(bmc.host_power(id, action, &opts).await?))
}

/// Protected BMC routes, each with its OpenAPI path (utoipa-axum `routes!`).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(import))
        .routes(routes!(probe))
        .routes(routes!(refresh))
        .routes(routes!(status))
        .routes(routes!(power_on))
        .routes(routes!(power_off))
        .routes(routes!(restart))
        .routes(routes!(boot_device))
        .routes(routes!(batch_power_on))
        .routes(routes!(batch_power_off))
        .routes(routes!(batch_restart))
        .routes(routes!(batch_status))
        .routes(routes!(host_power))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::{
        body::Body,
        http::{header, Method, Request, StatusCode},
    };
    use serde_json::json;

    use super::super::test_support::{setup, T};
    use bootlane_machines::bmc::{client::fake::FakeBmc, model::PowerState};

    /// A logged-in client whose BMC service talks to a recording fake.
    async fn client() -> (T, Arc<FakeBmc>) {
        let mut t = setup().await;
        t.login().await;
        let fake = FakeBmc::new();
        t.state.bmc.set_client(fake.clone());
        (t, fake)
    }

    async fn create(t: &T, name: &str, addr: &str) -> u64 {
        let v = t
            .expect(
                Method::POST,
                "/api/v1/bmc/configs",
                Some(json!({"name": name, "address": addr, "protocol": "ipmi", "user": "admin", "password": "secret"})),
                StatusCode::CREATED,
                "",
            )
            .await;
        v["data"]["id"].as_u64().unwrap()
    }

    #[tokio::test]
    async fn crud_hides_the_password_and_names_bad_fields() {
        let (t, _) = client().await;
        let id = create(&t, "r1", "10.0.0.5").await;
        let v = t
            .expect(
                Method::GET,
                &format!("/api/v1/bmc/configs/{id}"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        let d = &v["data"];
        assert_eq!(
            (
                d["has_password"].as_bool(),
                d["port"].as_u64(),
                d["cipher_suite"].as_u64()
            ),
            (Some(true), Some(623), Some(3))
        );
        assert!(d.get("password").is_none() && !v.to_string().contains("secret"), "{v}");
        let v = t
            .expect(
                Method::PUT,
                &format!("/api/v1/bmc/configs/{id}"),
                Some(json!({"port": 9623, "cipher_suite": 17})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["port"].as_u64(), v["data"]["cipher_suite"].as_u64()),
            (Some(9623), Some(17))
        );
        let v = t
            .expect(
                Method::GET,
                "/api/v1/bmc/configs?q=r1&protocol=ipmi",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["total"].as_u64(), v["data"]["configs"][0]["id"].as_u64()),
            (Some(1), Some(id))
        );
        let v = t
            .expect(
                Method::GET,
                "/api/v1/bmc/configs?protocol=redfish",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["total"], 0);
        for (body, status, field) in [
            (
                json!({"name": "x", "address": "10.0.0.9", "protocol": "ipmi"}),
                StatusCode::BAD_REQUEST,
                "'user'",
            ),
            (
                json!({"name": "x", "address": "10.0.0.9", "protocol": "snmp", "user": "u"}),
                StatusCode::BAD_REQUEST,
                "protocol",
            ),
            (
                json!({"name": "r1", "address": "10.0.0.9", "protocol": "ipmi", "user": "u"}),
                StatusCode::CONFLICT,
                "already exists",
            ),
            (
                json!({"name": "x", "address": "10.0.0.9", "protocol": "ipmi", "user": "u", "nope": 1}),
                StatusCode::BAD_REQUEST,
                "nope",
            ),
        ] {
            t.expect(Method::POST, "/api/v1/bmc/configs", Some(body), status, field)
                .await;
        }
        t.expect(
            Method::DELETE,
            &format!("/api/v1/bmc/configs/{id}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
        t.expect(
            Method::GET,
            &format!("/api/v1/bmc/configs/{id}"),
            None,
            StatusCode::NOT_FOUND,
            "no BMC config",
        )
        .await;
    }

    #[tokio::test]
    async fn power_boot_device_status_and_errors_through_the_router() {
        let (t, fake) = client().await;
        let id = create(&t, "r1", "10.0.0.5").await;
        let v = t
            .expect(
                Method::POST,
                &format!("/api/v1/bmc/{id}/power-on"),
                Some(json!({"pxe": true})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["sent"].as_str(), v["data"]["power_state"].as_str()),
            (Some("On"), Some("on"))
        );
        assert_eq!(v["data"]["boot"]["device"], "pxe");
        let v = t
            .expect(
                Method::GET,
                &format!("/api/v1/bmc/{id}/status"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["power_state"].as_str(), v["data"]["last_error"].is_null()),
            (Some("on"), true)
        );
        // No body at all: a plain action.
        let v = t
            .expect(
                Method::POST,
                &format!("/api/v1/bmc/{id}/power-off"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["power_state"], "off");
        let v = t
            .expect(
                Method::POST,
                &format!("/api/v1/bmc/{id}/boot-device"),
                Some(json!({"device": "disk", "persistent": true, "uefi": true})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["kept"]["device"].as_str(), v["data"]["matches"].as_bool()),
            (Some("disk"), Some(false))
        );
        assert!(v["data"]["message"].as_str().unwrap().contains("legacy"), "{v}");
        t.expect(
            Method::POST,
            &format!("/api/v1/bmc/{id}/boot-device"),
            Some(json!({"device": "floppy"})),
            StatusCode::BAD_REQUEST,
            "device",
        )
        .await;
        // A refused password is a 502 naming the cause, and is the last error.
        *fake.password.lock().unwrap() = Some("other".into());
        t.expect(
            Method::POST,
            &format!("/api/v1/bmc/{id}/restart"),
            None,
            StatusCode::BAD_GATEWAY,
            "wrong password",
        )
        .await;
        let v = t
            .expect(
                Method::GET,
                &format!("/api/v1/bmc/{id}/status"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert!(v["data"]["last_error"].as_str().unwrap().contains("wrong password"));
        t.expect(
            Method::POST,
            &format!("/api/v1/bmc/{id}/refresh"),
            None,
            StatusCode::BAD_GATEWAY,
            "wrong password",
        )
        .await;
        *fake.password.lock().unwrap() = None;
        let v = t
            .expect(
                Method::POST,
                &format!("/api/v1/bmc/{id}/refresh"),
                None,
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["identity"]["manufacturer"], "Fake");
        t.expect(
            Method::POST,
            "/api/v1/bmc/999/power-on",
            None,
            StatusCode::NOT_FOUND,
            "no BMC config",
        )
        .await;
        t.expect(
            Method::POST,
            &format!("/api/v1/bmc/{id}/power-on"),
            Some(json!({"pxe": "yes"})),
            StatusCode::BAD_REQUEST,
            "pxe",
        )
        .await;
    }

    #[tokio::test]
    async fn batch_probe_import_and_host_power() {
        let (t, fake) = client().await;
        let a = create(&t, "a", "10.0.0.1").await;
        let b = create(&t, "b", "10.0.0.2").await;
        fake.set_power("10.0.0.2:623", PowerState::On);
        let v = t
            .expect(
                Method::POST,
                "/api/v1/bmc/batch/status",
                Some(json!({"ids": [b, 404, a]})),
                StatusCode::OK,
                "",
            )
            .await;
        let r = &v["data"]["results"];
        assert_eq!(
            (v["data"]["ok"].as_u64(), v["data"]["failed"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(
            (r[0]["result"]["power_state"].as_str(), r[1]["ok"].as_bool()),
            (Some("on"), Some(false))
        );
        t.expect(
            Method::POST,
            "/api/v1/bmc/batch/power-on",
            Some(json!({"ids": []})),
            StatusCode::BAD_REQUEST,
            "'ids'",
        )
        .await;
        let v = t
            .expect(
                Method::POST,
                "/api/v1/bmc/batch/power-off",
                Some(json!({"ids": [b]})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["results"][0]["result"]["sent"], "ForceOff");

        *fake.detect_as.lock().unwrap() = Some(bootlane_machines::bmc::model::Protocol::Ipmi);
        let v = t
            .expect(
                Method::POST,
                "/api/v1/bmc/probe",
                Some(json!({"address": "10.0.0.7", "user": "admin", "password": "pw"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["protocol"].as_str(), v["data"]["port"].as_u64()),
            (Some("ipmi"), Some(623))
        );
        t.expect(
            Method::POST,
            "/api/v1/bmc/probe",
            Some(json!({"user": "admin"})),
            StatusCode::BAD_REQUEST,
            "address",
        )
        .await;

        let csv = "name,address,protocol,user,password\nc,10.0.0.3,ipmi,admin,pw\nd,10.0.0.4,telnet,admin,pw\ne,10.0.0.5,redfish,root,pw\n";
        let req = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/bmc/configs/import")
            .header(header::COOKIE, t.cookie.clone().unwrap())
            .header(header::CONTENT_TYPE, "text/csv")
            .body(Body::from(csv))
            .unwrap();
        let (s, _, v) = t.raw(req).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (v["data"]["imported"].as_u64(), v["data"]["failed"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(v["data"]["rows"][1]["row"], 3);
        assert!(v["data"]["rows"][1]["error"].as_str().unwrap().contains("'protocol'"));

        // Host power: a host without a BMC is a 409; with bmc_addr it is driven directly.
        let h = t
            .expect(
                Method::POST,
                "/api/v1/hosts",
                Some(json!({"name": "n1", "mac": "52:54:00:00:00:01", "bmc_addr": "10.0.0.50", "bmc_user": "admin", "bmc_password": "pw"})),
                StatusCode::CREATED,
                "",
            )
            .await["data"]["id"]
            .as_u64()
            .unwrap();
        let v = t
            .expect(
                Method::POST,
                &format!("/api/v1/hosts/{h}/power"),
                Some(json!({"action": "pxe"})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(
            (v["data"]["bmc_id"].is_null(), v["data"]["host_id"].as_u64()),
            (true, Some(h))
        );
        assert!(fake
            .calls()
            .iter()
            .any(|c| c.0 == "10.0.0.50:623" && c.1.starts_with("set_boot pxe")));
        // The host's own password is stored sealed (and opened for the call above).
        let stored = t.state.hosts.get(h).unwrap().bmc_password.unwrap();
        assert!(stored.starts_with("v1:") && !stored.contains("pw"), "{stored}");
        let h2 = t
            .expect(
                Method::POST,
                "/api/v1/hosts",
                Some(json!({"name": "n2", "mac": "52:54:00:00:00:02"})),
                StatusCode::CREATED,
                "",
            )
            .await["data"]["id"]
            .as_u64()
            .unwrap();
        t.expect(
            Method::POST,
            &format!("/api/v1/hosts/{h2}/power"),
            Some(json!({"action": "on"})),
            StatusCode::CONFLICT,
            "no BMC",
        )
        .await;
        t.expect(
            Method::POST,
            &format!("/api/v1/hosts/{h2}/power"),
            Some(json!({"action": "dance"})),
            StatusCode::BAD_REQUEST,
            "action",
        )
        .await;
    }
}
