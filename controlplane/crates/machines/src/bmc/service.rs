//! The BMC service: the single write path of BMC configs (create, update, delete, CSV
//! import: lock, validate, check the name and the host link, seal the password, store,
//! publish `bmc.config.*`) and the single path of every BMC action (probe, refresh, power,
//! boot device, batches, `POST /hosts/{id}/power`).
//!
//! A power action: resolve the target (a config, or a host's own `bmc_addr`/`bmc_user`/
//! `bmc_password` when no config links the host), check the address against
//! `[bmc] allowed_networks`, publish `bmc.power.requested`, read the power state, set the
//! boot override first for "power on into PXE" (`bmc.boot_device.set`), send the reset
//! that gets from the state read to the one asked for (nothing when it is already there;
//! a restart of a machine that is off is a power-on; PXE on a machine that is on is a
//! power cycle, as MAAS does), poll the power state until it is the expected one or
//! `[bmc] settle_secs` pass, record the last status on the config and publish
//! `bmc.power.changed` (or `bmc.power.failed` with the reason).
//!
//! State: the `bmc_configs` table, the password key, the protocol client behind a lock
//! (tests swap in a fake), and one async mutex that serialises config writes.

use std::{net::IpAddr, sync::Arc, time::Duration};

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    client::{BmcClient, BmcError, BootDevice, BootReport, BootRequest, Reset, SystemBmc, Target},
    model::{parse_address, BmcConfig, BmcInput, BmcView, Identity, LastStatus, PowerState, Protocol},
    secret::SecretBox,
    BmcSection,
};
use bootlane_boot::inventory::{model::Host, service::HostService};
use bootlane_core::{
    events::{
        wire_name, BmcBootDeviceSet, BmcBootReport, BmcConfigImported, BmcPowerChanged, BmcPowerFailed,
        BmcPowerRequested, EventBus, EventKind, NewEvent,
    },
    net::outbound::OutboundConfig,
    service_error::ServiceError,
    store::{Store, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// Most ids in one batch.
pub const MAX_BATCH: usize = 256;
/// Most data rows in one CSV import.
pub const MAX_IMPORT_ROWS: usize = 5000;
/// The CSV import's columns (`name`, `address`, `protocol` and `user` are required).
pub const CSV_COLUMNS: [&str; 10] = [
    "name",
    "address",
    "port",
    "protocol",
    "user",
    "password",
    "cipher_suite",
    "system_id",
    "verify_tls",
    "host_id",
];
const MAX_ERROR_LEN: usize = 1000;

/// A power action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PowerAction {
    /// Power on (into PXE with `pxe`).
    PowerOn,
    /// Power off.
    PowerOff,
    /// Restart (a machine that is off is powered on).
    Restart,
    /// Only read the power state.
    Status,
}

impl PowerAction {
    /// `power-on`, `power-off`, `restart`, `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PowerOn => "power-on",
            Self::PowerOff => "power-off",
            Self::Restart => "restart",
            Self::Status => "status",
        }
    }
}

/// How to do a power action.
#[derive(Debug, Clone, Default)]
pub struct PowerOptions {
    /// Power on into PXE: boot override PXE for the next boot first (`power-on` only).
    pub pxe: bool,
    /// With `pxe`: UEFI (true) or legacy (false) network boot; `None`: leave the mode.
    pub uefi: Option<bool>,
    /// Graceful off / restart (the OS is asked) instead of a hard one.
    pub graceful: bool,
    /// A Redfish `ResetType` to send instead of the one the action implies.
    pub reset_type: Option<String>,
    /// Poll the power state until it changes (up to `[bmc] settle_secs`).
    pub wait: bool,
}

/// What a power action did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PowerOutcome {
    /// The BMC config used; `null` when the host's own `bmc_*` fields were used.
    pub bmc_id: Option<u64>,
    /// The host, when known (linked config or `POST /hosts/{id}/power`).
    pub host_id: Option<u64>,
    /// `power-on`, `power-off`, `restart` or `status`.
    pub action: PowerAction,
    /// The reset sent (Redfish `ResetType` name: `On`, `ForceOff`, `ForceRestart`, ...);
    /// `null` when nothing had to be sent.
    pub sent: Option<String>,
    /// Power state read before the action.
    pub power_state_before: PowerState,
    /// Power state read last.
    pub power_state: PowerState,
    /// True when `power_state` is the one the action leads to (false: the deadline
    /// `[bmc] settle_secs` passed first, or `wait` was off; the BMC may still apply it).
    pub settled: bool,
    /// The boot override read back after "power on into PXE".
    pub boot: Option<BootReport>,
    /// What happened, in words.
    pub message: String,
}

/// `POST /bmc/{id}/boot-device` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BootOutcome {
    /// The BMC config.
    pub bmc_id: u64,
    /// Device asked for.
    pub device: BootDevice,
    /// Every boot (true) or the next one only, as asked.
    pub persistent: bool,
    /// UEFI flag as asked (`null`: left alone).
    pub uefi: Option<bool>,
    /// What the BMC reports after the change.
    pub kept: BootReport,
    /// True when the BMC kept the device, the persistence and (when asked) the mode.
    pub matches: bool,
    /// What differs, in words (empty when everything was kept).
    pub message: String,
}

/// One id's outcome in a batch.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = BmcBatchItem)]
pub struct BatchItem {
    /// The BMC config id asked for.
    pub id: u64,
    /// True when the action went through.
    pub ok: bool,
    /// What it did.
    pub result: Option<PowerOutcome>,
    /// Why it failed.
    pub error: Option<String>,
}

/// Body of `POST /bmc/probe`: a BMC that need not be stored.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeInput {
    /// IP or host name (Redfish: optionally `http://`/`https://` first).
    pub address: String,
    /// Port; absent: the protocol's default, or every candidate while detecting.
    #[schema(minimum = 1, maximum = 65535)]
    pub port: Option<u16>,
    /// `ipmi` or `redfish`; absent: detected (Redfish service root first, then IPMI).
    pub protocol: Option<Protocol>,
    /// User name.
    pub user: String,
    /// Password (never stored or logged).
    pub password: Option<String>,
    /// IPMI cipher suite, 0-17 (default 3).
    #[schema(minimum = 0, maximum = 17)]
    pub cipher_suite: Option<u8>,
    /// Redfish system id (default: the first member).
    pub system_id: Option<String>,
    /// Verify the Redfish TLS certificate (default true).
    pub verify_tls: Option<bool>,
}

/// `POST /bmc/probe` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProbeResult {
    /// Protocol found (or given).
    pub protocol: Protocol,
    /// Host probed.
    pub address: String,
    /// Port it answered on.
    pub port: u16,
    /// Whether the protocol was detected (true) or given.
    pub detected: bool,
    /// Current power state.
    pub power_state: PowerState,
    /// Manufacturer, model, serial.
    pub identity: Identity,
}

/// One row of a CSV import answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImportRow {
    /// Line number in the file (the header is line 1).
    pub row: u64,
    /// True when the row was imported.
    pub ok: bool,
    /// The new config's id.
    pub id: Option<u64>,
    /// The row's name, when it had one.
    pub name: Option<String>,
    /// What was wrong (the column is named).
    pub error: Option<String>,
}

/// `POST /bmc/configs/import` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImportReport {
    /// Rows imported.
    pub imported: usize,
    /// Rows refused (nothing of them was stored).
    pub failed: usize,
    /// Every data row, in file order.
    pub rows: Vec<ImportRow>,
}

fn clip(mut e: String) -> String {
    if e.len() > MAX_ERROR_LEN {
        let mut cut = MAX_ERROR_LEN;
        while !e.is_char_boundary(cut) {
            cut -= 1;
        }
        e.truncate(cut);
        e.push('…');
    }
    e
}

/// The BMC service. Share it as `Arc<BmcService>`.
pub struct BmcService {
    section: BmcSection,
    outbound: OutboundConfig,
    table: Table<BmcConfig>,
    hosts: Arc<HostService>,
    events: Arc<EventBus>,
    secrets: SecretBox,
    client: bootlane_core::swap::Swap<dyn BmcClient>,
    write: tokio::sync::Mutex<()>,
}

impl BmcService {
    /// Opens the table and the password key in `data_dir` (created 0600 when absent),
    /// with the real protocol client; Redfish calls follow the `[outbound]` rules of
    /// `outbound`.
    ///
    /// # Errors
    /// Store errors; the key file cannot be read or created.
    pub fn open(
        section: &BmcSection,
        outbound: &OutboundConfig,
        store: &Store,
        data_dir: &std::path::Path,
        hosts: Arc<HostService>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            section: section.clone(),
            outbound: *outbound,
            table: store.table()?,
            hosts,
            events,
            secrets: SecretBox::open(data_dir)?,
            client: bootlane_core::swap::Swap::new(SystemBmc::new(section.ipmitool.clone())),
            write: tokio::sync::Mutex::new(()),
        }))
    }

    /// Replaces the protocol client (tests put a fake here so nothing leaves the process).
    pub fn set_client(&self, client: Arc<dyn BmcClient>) {
        self.client.set(client);
    }

    fn client(&self) -> Arc<dyn BmcClient> {
        self.client.get()
    }

    /// The `[bmc]` section in force.
    pub fn section(&self) -> &BmcSection {
        &self.section
    }

    // ---- configs ----

    /// Every config, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self) -> Result<Vec<BmcConfig>> {
        Ok(self.table.list()?)
    }

    /// One config.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub fn get(&self, id: u64) -> Result<BmcConfig> {
        self.table
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no BMC config with id {id}")))
    }

    /// Name unique (case-insensitive), host linked to no other config, and, when the link
    /// is new (`old_host` differs), the host exists: a config whose host was deleted since
    /// can still be edited.
    fn check(&self, c: &BmcConfig, old_host: Option<u64>) -> Result<()> {
        let all = self.table.list()?;
        if all.iter().any(|o| o.id != c.id && o.name.eq_ignore_ascii_case(&c.name)) {
            return Err(ServiceError::Conflict(format!(
                "a BMC config named {:?} already exists",
                c.name
            )));
        }
        if let Some(h) = c.host_id {
            if c.host_id != old_host && self.hosts.get(h).is_err() {
                return Err(ServiceError::Invalid(format!("'host_id': no host with id {h}")));
            }
            if let Some(o) = all.iter().find(|o| o.id != c.id && o.host_id == Some(h)) {
                return Err(ServiceError::Conflict(format!(
                    "host {h} is already linked to BMC config {} ({:?}); one BMC per host",
                    o.id, o.name
                )));
            }
        }
        Ok(())
    }

    async fn create_locked(&self, input: BmcInput) -> Result<BmcConfig> {
        let mut c = BmcConfig::blank(OffsetDateTime::now_utc());
        c.apply(input, true, &|p| self.secrets.seal(p))?;
        self.check(&c, None)?;
        Ok(self.table.insert(c).await?)
    }

    /// Creates a config.
    ///
    /// # Errors
    /// Invalid (naming the field), Conflict (name taken, host already linked), store errors.
    pub async fn create(&self, input: BmcInput) -> Result<BmcConfig> {
        let _w = self.write.lock().await;
        let c = self.create_locked(input).await?;
        let v = BmcView::from(&c);
        self.events.publish(NewEvent::write(
            EventKind::BmcConfigCreated,
            "bmc_config",
            c.id,
            "create",
            format!("BMC config {} ({} {}) created", c.name, c.protocol.as_str(), c.address),
            None::<&BmcView>,
            Some(&v),
        ));
        Ok(c)
    }

    /// Updates a config: omitted fields keep their values, `null` clears an optional one.
    ///
    /// # Errors
    /// As [`BmcService::create`], plus NotFound.
    pub async fn update(&self, id: u64, input: BmcInput) -> Result<BmcConfig> {
        let _w = self.write.lock().await;
        let old = self.get(id)?;
        let mut c = old.clone();
        c.apply(input, false, &|p| self.secrets.seal(p))?;
        c.updated_at = OffsetDateTime::now_utc();
        self.check(&c, old.host_id)?;
        self.table.put(&c).await?;
        self.events.publish(NewEvent::write(
            EventKind::BmcConfigUpdated,
            "bmc_config",
            c.id,
            "update",
            format!("BMC config {} updated", c.name),
            Some(&BmcView::from(&old)),
            Some(&BmcView::from(&c)),
        ));
        Ok(c)
    }

    /// Deletes a config, answering it.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete(&self, id: u64) -> Result<BmcConfig> {
        let _w = self.write.lock().await;
        let c = self
            .table
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no BMC config with id {id}")))?;
        self.events.publish(NewEvent::write(
            EventKind::BmcConfigDeleted,
            "bmc_config",
            c.id,
            "delete",
            format!("BMC config {} deleted", c.name),
            Some(&BmcView::from(&c)),
            None::<&BmcView>,
        ));
        Ok(c)
    }

    /// Imports configs from CSV: a header row naming columns of [`CSV_COLUMNS`] (any order;
    /// `name`, `address`, `protocol`, `user` required), one config per row, an empty cell
    /// meaning the default. Each row is validated like a create and stored on its own: a bad
    /// row stores nothing and is reported with its line number and what was wrong; good
    /// rows are imported. Publishes one `bmc.config.imported`.
    ///
    /// # Errors
    /// Invalid when the CSV has no usable header row (an unknown or missing column), more
    /// than [`MAX_IMPORT_ROWS`] rows or is not UTF-8; store errors.
    pub async fn import_csv(&self, data: &[u8]) -> Result<ImportReport> {
        let mut rdr = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .flexible(true)
            .from_reader(data);
        let headers = rdr
            .headers()
            .map_err(|e| ServiceError::Invalid(format!("the CSV header row cannot be read: {e}")))?
            .clone();
        let cols: Vec<String> = headers.iter().map(|h| h.trim().to_ascii_lowercase()).collect();
        if cols.iter().all(String::is_empty) {
            return Err(ServiceError::Invalid(format!(
                "the CSV needs a header row naming its columns, from: {}",
                CSV_COLUMNS.join(",")
            )));
        }
        for (i, c) in cols.iter().enumerate() {
            if !CSV_COLUMNS.contains(&c.as_str()) {
                return Err(ServiceError::Invalid(format!(
                    "CSV column {} {c:?} is unknown; columns are {}",
                    i + 1,
                    CSV_COLUMNS.join(",")
                )));
            }
            if cols[..i].contains(c) {
                return Err(ServiceError::Invalid(format!("CSV column {c:?} appears twice")));
            }
        }
        for need in ["name", "address", "protocol", "user"] {
            if !cols.iter().any(|c| c == need) {
                return Err(ServiceError::Invalid(format!(
                    "the CSV header lacks the required column {need:?}"
                )));
            }
        }
        let _w = self.write.lock().await;
        let mut rows = Vec::new();
        for rec in rdr.records() {
            if rows.len() >= MAX_IMPORT_ROWS {
                return Err(ServiceError::Invalid(format!(
                    "at most {MAX_IMPORT_ROWS} rows per import; split the file"
                )));
            }
            let rec = match rec {
                Ok(r) => r,
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line());
                    rows.push(ImportRow {
                        row: line,
                        ok: false,
                        id: None,
                        name: None,
                        error: Some(format!("not valid CSV: {e}")),
                    });
                    continue;
                }
            };
            let line = rec.position().map_or(0, |p| p.line());
            if rec.iter().all(str::is_empty) {
                continue;
            }
            let cell = |name: &str| {
                cols.iter()
                    .position(|c| c == name)
                    .and_then(|i| rec.get(i))
                    .filter(|v| !v.is_empty())
            };
            let name = cell("name").map(String::from);
            let outcome = if rec.len() != cols.len() {
                Err(ServiceError::Invalid(format!(
                    "{} fields where the header has {}",
                    rec.len(),
                    cols.len()
                )))
            } else {
                match csv_input(&cell) {
                    Ok(input) => self.create_locked(input).await,
                    Err(e) => Err(e),
                }
            };
            rows.push(match outcome {
                Ok(c) => ImportRow {
                    row: line,
                    ok: true,
                    id: Some(c.id),
                    name: Some(c.name),
                    error: None,
                },
                Err(ServiceError::Store(e)) => return Err(e.into()),
                Err(e) => ImportRow {
                    row: line,
                    ok: false,
                    id: None,
                    name,
                    error: Some(e.to_string()),
                },
            });
        }
        let imported = rows.iter().filter(|r| r.ok).count();
        let report = ImportReport {
            imported,
            failed: rows.len() - imported,
            rows,
        };
        self.events.publish(
            NewEvent::new(
                EventKind::BmcConfigImported,
                format!(
                    "BMC configs imported from CSV: {} imported, {} refused",
                    report.imported, report.failed
                ),
            )
            .resource("bmc_config", "")
            .with(&BmcConfigImported {
                imported: report.imported as u64,
                failed: report.failed as u64,
                ids: report.rows.iter().filter_map(|r| r.id).collect(),
            }),
        );
        Ok(report)
    }

    // ---- reaching a BMC ----

    /// The connection details of config `c` (the password unsealed).
    fn target_of(&self, c: &BmcConfig) -> Result<Target> {
        let (tls, host) = parse_address("address", &c.address, c.protocol)?;
        let password = if c.password.is_empty() {
            String::new()
        } else {
            self.secrets.open_sealed(&c.password)?
        };
        Ok(Target {
            protocol: c.protocol,
            host,
            port: c.effective_port(),
            tls,
            user: c.user.clone(),
            password,
            cipher_suite: c.cipher_suite,
            system_id: c.system_id.clone(),
            verify_tls: c.verify_tls,
            timeout: Duration::from_secs(self.section.command_timeout_secs),
            outbound: self.outbound,
        })
    }

    /// The connection details from a host's own fields. `bmc_addr` forms: `host`,
    /// `host:port` or `ipmi://host[:port]` (IPMI, cipher suite 3); `redfish://host[:port]`
    /// or `https://host[:port]` (Redfish over HTTPS, certificate verified) and
    /// `http://host[:port]` (Redfish over HTTP). IPv6 with a port: `[addr]:port`.
    fn target_of_host(&self, h: &Host) -> Result<Target> {
        let raw = h.bmc_addr.as_deref().unwrap_or("").trim();
        let (protocol, tls, rest) = if let Some(r) = raw.strip_prefix("ipmi://") {
            (Protocol::Ipmi, false, r)
        } else if let Some(r) = raw.strip_prefix("redfish://") {
            (Protocol::Redfish, true, r)
        } else if let Some(r) = raw.strip_prefix("https://") {
            (Protocol::Redfish, true, r)
        } else if let Some(r) = raw.strip_prefix("http://") {
            (Protocol::Redfish, false, r)
        } else {
            (Protocol::Ipmi, false, raw)
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            match r.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => (r, None),
            }
        } else if rest.matches(':').count() == 1 {
            let (h, p) = rest.split_once(':').unwrap_or((rest, ""));
            (h, Some(p))
        } else {
            (rest, None)
        };
        let bad = || {
            ServiceError::Invalid(format!(
                "host {}'s bmc_addr {raw:?} is not an address: use host, host:port, ipmi://host, https://host or http://host[:port]",
                h.id
            ))
        };
        let port = match port {
            Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?,
            None => match (protocol, tls) {
                (Protocol::Ipmi, _) => 623,
                (Protocol::Redfish, true) => 443,
                (Protocol::Redfish, false) => 80,
            },
        };
        let (_, host) = parse_address("bmc_addr", host, Protocol::Ipmi).map_err(|_| bad())?;
        Ok(Target {
            protocol,
            host,
            port,
            tls,
            user: h.bmc_user.clone().unwrap_or_default(),
            // Sealed by the host service; a plain one is from before sealing existed.
            password: match h.bmc_password.as_deref() {
                Some(p) if bootlane_boot::inventory::service::PasswordSealer::is_sealed(&self.secrets, p) => {
                    self.secrets.open_sealed(p)?
                }
                Some(p) => p.to_string(),
                None => String::new(),
            },
            cipher_suite: 3,
            system_id: None,
            verify_tls: true,
            timeout: Duration::from_secs(self.section.command_timeout_secs),
            outbound: self.outbound,
        })
    }

    /// Refuses addresses outside `[bmc] allowed_networks` (a host name must resolve, within
    /// the command timeout, only into them).
    async fn allowed(&self, t: &Target) -> Result<()> {
        let nets = &self.section.allowed_networks;
        if nets.is_empty() {
            return Ok(());
        }
        let ips: Vec<IpAddr> = match t.host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => {
                let look = tokio::net::lookup_host((t.host.as_str(), t.port));
                match tokio::time::timeout(t.timeout, look).await {
                    Ok(Ok(addrs)) => addrs.map(|a| a.ip()).collect(),
                    _ => Vec::new(),
                }
            }
        };
        if ips.is_empty() || ips.iter().any(|ip| !nets.iter().any(|n| n.contains(ip))) {
            let nets: Vec<String> = nets.iter().map(ToString::to_string).collect();
            return Err(ServiceError::Invalid(format!(
                "'address': {} is outside [bmc] allowed_networks ({}); Bootlane does not contact it",
                t.host,
                nets.join(", ")
            )));
        }
        Ok(())
    }

    /// Stores the outcome of a contact on config `id` (power state or error, now);
    /// answers the previous power state.
    async fn record(
        &self,
        id: u64,
        state: std::result::Result<PowerState, &str>,
        identity: Option<Identity>,
    ) -> Result<Option<PowerState>> {
        let _w = self.write.lock().await;
        let Some(mut c) = self.table.get(id)? else {
            return Ok(None);
        };
        let before = c.status.power_state;
        c.status.last_checked = Some(OffsetDateTime::now_utc());
        match state {
            Ok(s) => {
                c.status.power_state = Some(s);
                c.status.last_error = None;
            }
            Err(e) => c.status.last_error = Some(clip(e.to_string())),
        }
        if let Some(i) = identity {
            c.identity = i;
        }
        self.table.put(&c).await?;
        Ok(before)
    }

    /// Probes a BMC that need not be stored: detects the protocol when none is given,
    /// reads identity and power state. Stores nothing.
    ///
    /// # Errors
    /// Invalid (a bad field, an address outside `[bmc] allowed_networks`), Upstream (the
    /// BMC did not answer, refused the credentials, or answered an error: the message
    /// says which).
    pub async fn probe(&self, p: ProbeInput) -> Result<ProbeResult> {
        let mut c = BmcConfig::blank(OffsetDateTime::now_utc());
        let guess = p.protocol.unwrap_or(if p.address.trim().starts_with("http") {
            Protocol::Redfish
        } else {
            Protocol::Ipmi
        });
        let plain = p.password.clone().unwrap_or_default();
        c.apply(
            BmcInput {
                name: Some("probe".into()),
                host_id: None,
                address: Some(p.address.clone()),
                port: Some(p.port),
                protocol: Some(guess),
                user: Some(p.user.clone()),
                password: p.password.clone(),
                cipher_suite: p.cipher_suite,
                system_id: p.system_id.clone().map(Some),
                verify_tls: p.verify_tls,
            },
            true,
            &|_| "unused".into(),
        )?;
        let (tls, host) = parse_address("address", &c.address, c.protocol)?;
        let mut t = Target {
            protocol: c.protocol,
            host,
            port: c.effective_port(),
            tls,
            user: c.user.clone(),
            password: plain,
            cipher_suite: c.cipher_suite,
            system_id: c.system_id.clone(),
            verify_tls: c.verify_tls,
            timeout: Duration::from_secs(self.section.command_timeout_secs),
            outbound: self.outbound,
        };
        self.allowed(&t).await?;
        let client = self.client();
        let detected = p.protocol.is_none();
        if detected {
            let d = client.detect(&t, p.port).await?;
            t.protocol = d.protocol;
            t.port = d.port;
            t.tls = d.tls;
        }
        let identity = client.identity(&t).await?;
        let power_state = client.power_state(&t).await?;
        Ok(ProbeResult {
            protocol: t.protocol,
            address: t.host,
            port: t.port,
            detected,
            power_state,
            identity,
        })
    }

    /// Reads identity and power state of config `id` and records them (or the error).
    ///
    /// # Errors
    /// NotFound, Invalid (address not allowed), Upstream (the BMC failed: recorded as
    /// `last_error` too), store errors.
    pub async fn refresh(&self, id: u64) -> Result<BmcConfig> {
        let c = self.get(id)?;
        let t = self.target_of(&c)?;
        self.allowed(&t).await?;
        let client = self.client();
        let read = async {
            let identity = client.identity(&t).await?;
            let state = client.power_state(&t).await?;
            Ok::<_, BmcError>((identity, state))
        };
        match read.await {
            Ok((identity, state)) => {
                let before = self.record(id, Ok(state), Some(identity)).await?;
                if before.is_some_and(|b| b != state) {
                    self.publish_changed(Some(&c), None, before.unwrap_or(PowerState::Unknown), state);
                }
                self.get(id)
            }
            Err(e) => {
                self.record(id, Err(&e.to_string()), None).await?;
                Err(e.into())
            }
        }
    }

    /// The last recorded status of config `id` (no BMC contact).
    ///
    /// # Errors
    /// NotFound, store errors.
    pub fn status(&self, id: u64) -> Result<LastStatus> {
        Ok(self.get(id)?.status)
    }

    fn publish_changed(&self, c: Option<&BmcConfig>, host_id: Option<u64>, before: PowerState, after: PowerState) {
        let (res, rid, name) = resource(c, host_id);
        self.events.publish(
            NewEvent::new(
                EventKind::BmcPowerChanged,
                format!("{name}: power {} -> {}", state_word(before), state_word(after)),
            )
            .resource(res, rid)
            .with(&BmcPowerChanged {
                before: wire_name(&before),
                after: wire_name(&after),
                host_id: host_id.or(c.and_then(|c| c.host_id)),
            }),
        );
    }

    /// Runs a power action on config `id` (see the module docs).
    ///
    /// # Errors
    /// NotFound, Invalid (a bad option, an address not allowed, a reset type the BMC does
    /// not list), Upstream (the BMC failed; recorded and published as
    /// `bmc.power.failed`), store errors.
    pub async fn power(&self, id: u64, action: PowerAction, opts: &PowerOptions) -> Result<PowerOutcome> {
        let c = self.get(id)?;
        let t = self.target_of(&c)?;
        self.drive(Some(&c), c.host_id, &t, action, opts).await
    }

    /// `POST /hosts/{id}/power`: the config linked to the host (`host_id`), else the host's
    /// own `bmc_addr`/`bmc_user`/`bmc_password` (see [`BmcService`] docs on
    /// `target_of_host` forms: bare addresses are IPMI).
    ///
    /// # Errors
    /// NotFound (no such host), Conflict (the host has no BMC), as [`BmcService::power`].
    pub async fn host_power(&self, host_id: u64, action: PowerAction, opts: &PowerOptions) -> Result<PowerOutcome> {
        let h = self.hosts.get(host_id)?;
        if let Some(c) = self.table.list()?.into_iter().find(|c| c.host_id == Some(host_id)) {
            return self.power(c.id, action, opts).await;
        }
        if h.bmc_addr.as_deref().is_none_or(|a| a.trim().is_empty()) {
            return Err(ServiceError::Conflict(format!(
                "host {host_id} ({}) has no BMC: create a BMC config with \"host_id\": {host_id} (POST /api/v1/bmc/configs) or set the host's bmc_addr",
                h.name
            )));
        }
        let t = self.target_of_host(&h)?;
        self.drive(None, Some(host_id), &t, action, opts).await
    }

    async fn drive(
        &self,
        c: Option<&BmcConfig>,
        host_id: Option<u64>,
        t: &Target,
        action: PowerAction,
        opts: &PowerOptions,
    ) -> Result<PowerOutcome> {
        if opts.pxe && action != PowerAction::PowerOn {
            return Err(ServiceError::Invalid("'pxe' goes with power-on only".into()));
        }
        if let Some(rt) = &opts.reset_type {
            if t.protocol != Protocol::Redfish {
                return Err(ServiceError::Invalid(
                    "'reset_type' is a Redfish ResetType; this BMC speaks IPMI".into(),
                ));
            }
            if rt.is_empty() || rt.len() > 64 || !rt.chars().all(|ch| ch.is_ascii_alphanumeric()) {
                return Err(ServiceError::Invalid(
                    "'reset_type' must be a Redfish ResetType name such as ForceRestart (letters and digits)".into(),
                ));
            }
            if action == PowerAction::Status {
                return Err(ServiceError::Invalid("'reset_type' does not go with status".into()));
            }
        }
        self.allowed(t).await?;
        let (res, rid, name) = resource(c, host_id);
        if action != PowerAction::Status {
            self.events.publish(
                NewEvent::new(
                    EventKind::BmcPowerRequested,
                    format!(
                        "{name}: {}{} requested",
                        action.as_str(),
                        if opts.pxe { " into PXE" } else { "" }
                    ),
                )
                .resource(res.clone(), rid.clone())
                .with(&BmcPowerRequested {
                    action: wire_name(&action),
                    pxe: opts.pxe,
                    host_id,
                }),
            );
        }
        let r = self.run(c, t, action, opts).await;
        match r {
            Ok(mut out) => {
                out.bmc_id = c.map(|c| c.id);
                out.host_id = host_id;
                let stored_before = match c {
                    Some(c) => self.record(c.id, Ok(out.power_state), None).await?,
                    None => Some(out.power_state_before),
                };
                let before = stored_before.unwrap_or(out.power_state_before);
                if before != out.power_state || out.power_state_before != out.power_state {
                    self.publish_changed(c, host_id, out.power_state_before, out.power_state);
                }
                Ok(out)
            }
            Err(e) => {
                let msg = e.to_string();
                if let Some(c) = c {
                    self.record(c.id, Err(&msg), None).await?;
                }
                self.events.publish(
                    NewEvent::new(
                        EventKind::BmcPowerFailed,
                        format!("{name}: {} failed: {msg}", action.as_str()),
                    )
                    .resource(res, rid)
                    .with(&BmcPowerFailed {
                        action: wire_name(&action),
                        pxe: opts.pxe,
                        error: msg,
                        host_id,
                    }),
                );
                Err(e)
            }
        }
    }

    async fn run(
        &self,
        c: Option<&BmcConfig>,
        t: &Target,
        action: PowerAction,
        opts: &PowerOptions,
    ) -> Result<PowerOutcome> {
        let client = self.client();
        let before = client.power_state(t).await?;
        let mut boot = None;
        if opts.pxe {
            let req = BootRequest {
                device: BootDevice::Pxe,
                persistent: false,
                uefi: opts.uefi,
            };
            client.set_boot(t, req).await?;
            let kept = client.boot(t).await?;
            self.publish_boot(c, t, req, &kept);
            boot = Some(kept);
        }
        use PowerState::{Off, On};
        let (reset, want) = match action {
            PowerAction::Status => (None, before),
            PowerAction::PowerOn if before == On && opts.pxe => (Some(Reset::ForceRestart), On),
            PowerAction::PowerOn if before == On => (None, On),
            PowerAction::PowerOn => (Some(Reset::On), On),
            PowerAction::PowerOff if before == Off => (None, Off),
            PowerAction::PowerOff if opts.graceful => (Some(Reset::GracefulOff), Off),
            PowerAction::PowerOff => (Some(Reset::ForceOff), Off),
            PowerAction::Restart if before == Off => (Some(Reset::On), On),
            PowerAction::Restart if opts.graceful => (Some(Reset::GracefulRestart), On),
            PowerAction::Restart => (Some(Reset::ForceRestart), On),
        };
        let reset = match (&opts.reset_type, reset) {
            (Some(rt), _) => Some(Reset::Redfish(rt.clone())),
            (None, r) => r,
        };
        let Some(reset) = reset else {
            let message = match action {
                PowerAction::Status => format!("power is {}", state_word(before)),
                _ => format!("already {}; nothing sent", state_word(before)),
            };
            return Ok(PowerOutcome {
                bmc_id: None,
                host_id: None,
                action,
                sent: None,
                power_state_before: before,
                power_state: before,
                settled: true,
                boot,
                message,
            });
        };
        client.reset(t, &reset).await?;
        // Poll to the deadline: real BMCs apply a change seconds later. A cycle may show
        // the old state (or off) first, so only the expected state ends the wait.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(self.section.settle_secs);
        let mut state = client.power_state(t).await?;
        while opts.wait && state != want && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(self.section.poll_interval_ms)).await;
            state = client.power_state(t).await?;
        }
        let settled = state == want;
        let message = if settled {
            format!("{} sent; power is {}", reset.redfish(), state_word(state))
        } else if opts.wait {
            format!(
                "{} sent; power is still {} after {} s ([bmc] settle_secs); the BMC may apply it later: POST /api/v1/bmc/{{id}}/refresh",
                reset.redfish(),
                state_word(state),
                self.section.settle_secs
            )
        } else {
            format!(
                "{} sent; power is {} (not waited for)",
                reset.redfish(),
                state_word(state)
            )
        };
        Ok(PowerOutcome {
            bmc_id: None,
            host_id: None,
            action,
            sent: Some(reset.redfish().to_string()),
            power_state_before: before,
            power_state: state,
            settled,
            boot,
            message,
        })
    }

    fn publish_boot(&self, c: Option<&BmcConfig>, t: &Target, req: BootRequest, kept: &BootReport) {
        let (res, rid, name) = resource(c, None);
        let _ = t;
        self.events.publish(
            NewEvent::new(
                EventKind::BmcBootDeviceSet,
                format!(
                    "{name}: boot device {} ({}) set; BMC reports {}",
                    req.device.ipmi(),
                    if req.persistent { "persistent" } else { "next boot" },
                    kept.target
                ),
            )
            .resource(res, rid)
            .with(&boot_device_set(req, kept)),
        );
    }

    /// Sets the boot device of config `id` and reads back what the BMC kept.
    ///
    /// # Errors
    /// NotFound, Invalid (address not allowed, a device the BMC does not offer), Upstream,
    /// store errors.
    pub async fn boot_device(&self, id: u64, req: BootRequest) -> Result<BootOutcome> {
        let c = self.get(id)?;
        let t = self.target_of(&c)?;
        self.allowed(&t).await?;
        let client = self.client();
        let r = async {
            client.set_boot(&t, req).await?;
            client.boot(&t).await
        }
        .await;
        let kept = match r {
            Ok(k) => k,
            Err(e) => {
                self.record(id, Err(&e.to_string()), None).await?;
                return Err(e.into());
            }
        };
        self.publish_boot(Some(&c), &t, req, &kept);
        let mut diffs = Vec::new();
        if kept.device != Some(req.device) {
            diffs.push(format!("the device is {:?}, not {}", kept.target, req.device.ipmi()));
        }
        if kept.persistent.is_some_and(|p| p != req.persistent) {
            diffs.push(format!(
                "it applies to {}",
                if req.persistent {
                    "the next boot only"
                } else {
                    "every boot"
                }
            ));
        }
        if let (Some(want), Some(got)) = (req.uefi, kept.uefi) {
            if want != got {
                diffs.push(format!("the boot mode is {}", if got { "UEFI" } else { "legacy" }));
            }
        }
        let matches = diffs.is_empty();
        Ok(BootOutcome {
            bmc_id: id,
            device: req.device,
            persistent: req.persistent,
            uefi: req.uefi,
            kept,
            matches,
            message: if matches {
                String::new()
            } else {
                format!("the BMC did not keep everything asked: {}", diffs.join("; "))
            },
        })
    }

    /// Runs `action` on every id, `[bmc] concurrency` at a time; one result per id in the
    /// order asked (an unknown id or a failing BMC is a failed item, not an error).
    ///
    /// # Errors
    /// Invalid (no ids, repeats, more than [`MAX_BATCH`]).
    pub async fn batch(&self, ids: &[u64], action: PowerAction, opts: &PowerOptions) -> Result<Vec<BatchItem>> {
        if ids.is_empty() || ids.len() > MAX_BATCH {
            return Err(ServiceError::Invalid(format!(
                "'ids' must hold 1-{MAX_BATCH} BMC config ids"
            )));
        }
        let mut seen = std::collections::HashSet::new();
        if !ids.iter().all(|i| seen.insert(*i)) {
            return Err(ServiceError::Invalid("'ids' holds the same id twice".into()));
        }
        let items = futures::stream::iter(ids.iter().copied())
            .map(|id| async move {
                match self.power(id, action, opts).await {
                    Ok(o) => BatchItem {
                        id,
                        ok: true,
                        result: Some(o),
                        error: None,
                    },
                    Err(e) => BatchItem {
                        id,
                        ok: false,
                        result: None,
                        error: Some(e.to_string()),
                    },
                }
            })
            .buffered(self.section.concurrency)
            .collect()
            .await;
        Ok(items)
    }
}

/// `(resource kind, id, name for summaries)` of an action's subject.
fn resource(c: Option<&BmcConfig>, host_id: Option<u64>) -> (String, String, String) {
    match (c, host_id) {
        (Some(c), _) => ("bmc_config".into(), c.id.to_string(), format!("BMC {}", c.name)),
        (None, Some(h)) => ("host".into(), h.to_string(), format!("host {h}'s BMC")),
        (None, None) => ("bmc_config".into(), String::new(), "BMC".into()),
    }
}

/// The `data` of `bmc.boot_device.set`: `req` asked, `kept` read back.
fn boot_device_set(req: BootRequest, kept: &BootReport) -> BmcBootDeviceSet {
    BmcBootDeviceSet {
        device: wire_name(&req.device),
        persistent: req.persistent,
        uefi: req.uefi,
        kept: BmcBootReport {
            device: kept.device.map(|d| wire_name(&d)),
            target: kept.target.clone(),
            persistent: kept.persistent,
            uefi: kept.uefi,
            enabled: kept.enabled,
        },
    }
}

fn state_word(s: PowerState) -> &'static str {
    match s {
        PowerState::On => "on",
        PowerState::Off => "off",
        PowerState::Unknown => "unknown",
    }
}

/// A CSV row as a create input; `cell(column)` is the trimmed non-empty cell.
fn csv_input<'a>(cell: &dyn Fn(&str) -> Option<&'a str>) -> Result<BmcInput> {
    let num = |col: &str| -> Result<Option<u64>> {
        cell(col)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| ServiceError::Invalid(format!("'{col}': {v:?} is not a number")))
            })
            .transpose()
    };
    let protocol = match cell("protocol") {
        Some(p) => Some(
            Protocol::parse(p)
                .ok_or_else(|| ServiceError::Invalid(format!("'protocol': {p:?} is neither ipmi nor redfish")))?,
        ),
        None => None,
    };
    let port = match num("port")? {
        Some(p) if (1..=65535).contains(&p) => Some(Some(p as u16)),
        Some(_) => return Err(ServiceError::Invalid("'port' must be 1-65535".into())),
        None => None,
    };
    let cipher_suite = match num("cipher_suite")? {
        Some(c) if c <= 17 => Some(c as u8),
        Some(_) => return Err(ServiceError::Invalid("'cipher_suite' must be 0-17".into())),
        None => None,
    };
    let verify_tls = match cell("verify_tls").map(str::to_ascii_lowercase).as_deref() {
        None => None,
        Some("true" | "yes" | "1") => Some(true),
        Some("false" | "no" | "0") => Some(false),
        Some(v) => {
            return Err(ServiceError::Invalid(format!(
                "'verify_tls': {v:?} is not true or false"
            )))
        }
    };
    Ok(BmcInput {
        name: cell("name").map(String::from),
        host_id: num("host_id")?.map(Some),
        address: cell("address").map(String::from),
        port,
        protocol,
        user: cell("user").map(String::from),
        password: cell("password").map(String::from),
        cipher_suite,
        system_id: cell("system_id").map(|s| Some(s.to_string())),
        verify_tls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmc::client::fake::FakeBmc;
    use bootlane_boot::inventory::model::HostInput;

    struct Lab {
        bmc: Arc<BmcService>,
        fake: Arc<FakeBmc>,
        hosts: Arc<HostService>,
        events: Arc<EventBus>,
        _dir: tempfile::TempDir,
    }

    fn quick() -> BmcSection {
        BmcSection {
            settle_secs: 2,
            poll_interval_ms: 100,
            command_timeout_secs: 1,
            ..BmcSection::default()
        }
    }

    fn lab_with(section: BmcSection) -> Lab {
        let store = Store::temporary();
        let events = EventBus::in_memory();
        let hosts = HostService::open(&store, Arc::new(|_| Ok(false)), events.clone()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let bmc = BmcService::open(
            &section,
            &OutboundConfig::default(),
            &store,
            dir.path(),
            hosts.clone(),
            events.clone(),
        )
        .unwrap();
        let fake = FakeBmc::new();
        bmc.set_client(fake.clone());
        Lab {
            bmc,
            fake,
            hosts,
            events,
            _dir: dir,
        }
    }

    fn input(v: serde_json::Value) -> BmcInput {
        serde_json::from_value(v).unwrap()
    }

    fn ipmi(name: &str, addr: &str) -> BmcInput {
        input(
            serde_json::json!({"name": name, "address": addr, "protocol": "ipmi", "user": "admin", "password": "secret"}),
        )
    }

    fn kinds(l: &Lab, sub: &mut bootlane_core::events::Subscription) -> Vec<String> {
        let _ = l;
        std::iter::from_fn(|| sub.rx.try_recv().ok())
            .map(|e| e.kind.clone())
            .collect()
    }

    #[tokio::test]
    async fn crud_seals_the_password_and_checks_names_and_host_links() {
        let l = lab_with(quick());
        let mut sub = l.events.subscribe();
        let c = l.bmc.create(ipmi("r1", "10.0.0.5")).await.unwrap();
        assert!(c.password.starts_with("v1:") && !c.password.contains("secret"));
        assert_eq!(l.bmc.target_of(&c).unwrap().password, "secret");
        assert!(matches!(
            l.bmc.create(ipmi("R1", "10.0.0.6")).await,
            Err(ServiceError::Conflict(_))
        ));
        let h = l
            .hosts
            .create(HostInput {
                name: Some("node1".into()),
                mac: Some("52:54:00:00:00:01".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let c = l
            .bmc
            .update(c.id, input(serde_json::json!({"host_id": h.id})))
            .await
            .unwrap();
        assert_eq!(c.host_id, Some(h.id));
        // The host goes away: the config can still be edited (the stale link is kept).
        l.hosts.delete(h.id).await.unwrap();
        l.bmc
            .update(c.id, input(serde_json::json!({"name": "r1b"})))
            .await
            .unwrap();
        let h = l
            .hosts
            .create(HostInput {
                name: Some("node2".into()),
                mac: Some("52:54:00:00:00:02".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let c = l
            .bmc
            .update(c.id, input(serde_json::json!({"host_id": h.id})))
            .await
            .unwrap();
        let mut second = ipmi("r2", "10.0.0.6");
        second.host_id = Some(Some(h.id));
        assert!(matches!(l.bmc.create(second).await, Err(ServiceError::Conflict(m)) if m.contains("one BMC per host")));
        let mut ghost = ipmi("r3", "10.0.0.7");
        ghost.host_id = Some(Some(999));
        assert!(matches!(l.bmc.create(ghost).await, Err(ServiceError::Invalid(m)) if m.contains("'host_id'")));
        l.bmc.delete(c.id).await.unwrap();
        assert!(matches!(l.bmc.get(c.id), Err(ServiceError::NotFound(_))));
        let k: Vec<String> = kinds(&l, &mut sub)
            .into_iter()
            .filter(|k| k.starts_with("bmc."))
            .collect();
        assert_eq!(
            k,
            [
                "bmc.config.created",
                "bmc.config.updated",
                "bmc.config.updated",
                "bmc.config.updated",
                "bmc.config.deleted"
            ]
        );
        // No event or stored value carries the password.
        let all = serde_json::to_string(&l.events.after(0, 100).unwrap()).unwrap();
        assert!(!all.contains("secret"), "{all}");
    }

    #[tokio::test]
    async fn power_on_into_pxe_cycles_a_running_machine_and_polls_until_it_settles() {
        let l = lab_with(quick());
        let c = l.bmc.create(ipmi("r1", "10.0.0.5")).await.unwrap();
        let mut sub = l.events.subscribe();
        let wait = PowerOptions {
            wait: true,
            ..Default::default()
        };
        // Off -> on, the BMC showing it two polls later.
        *l.fake.lag.lock().unwrap() = 2;
        let o = l.bmc.power(c.id, PowerAction::PowerOn, &wait).await.unwrap();
        assert_eq!(
            (o.sent.as_deref(), o.power_state_before, o.power_state, o.settled),
            (Some("On"), PowerState::Off, PowerState::On, true)
        );
        assert_eq!(l.bmc.status(c.id).unwrap().power_state, Some(PowerState::On));
        // Already on: nothing sent.
        *l.fake.lag.lock().unwrap() = 0;
        let o = l.bmc.power(c.id, PowerAction::PowerOn, &wait).await.unwrap();
        assert_eq!(o.sent, None);
        assert!(o.message.contains("already on"));
        // On + PXE: boot override once, then a power cycle.
        let pxe = PowerOptions {
            pxe: true,
            ..wait.clone()
        };
        let o = l.bmc.power(c.id, PowerAction::PowerOn, &pxe).await.unwrap();
        assert_eq!(o.sent.as_deref(), Some("ForceRestart"));
        assert_eq!(o.boot.as_ref().unwrap().device, Some(BootDevice::Pxe));
        let calls: Vec<String> = l.fake.calls().into_iter().map(|c| c.1).collect();
        let set = calls
            .iter()
            .position(|c| c.starts_with("set_boot pxe persistent=false"))
            .unwrap();
        let cycle = calls.iter().rposition(|c| c == "reset ForceRestart").unwrap();
        assert!(set < cycle, "boot device first: {calls:?}");
        // Restart of a machine that is off powers it on; off gracefully.
        l.bmc
            .power(
                c.id,
                PowerAction::PowerOff,
                &PowerOptions {
                    graceful: true,
                    ..wait.clone()
                },
            )
            .await
            .unwrap();
        let o = l.bmc.power(c.id, PowerAction::Restart, &wait).await.unwrap();
        assert_eq!(o.sent.as_deref(), Some("On"));
        let k = kinds(&l, &mut sub);
        assert!(k.contains(&"bmc.power.requested".to_string()) && k.contains(&"bmc.power.changed".to_string()));
        assert!(k.contains(&"bmc.boot_device.set".to_string()), "{k:?}");
        // A BMC that never applies it: settled false after the deadline.
        *l.fake.lag.lock().unwrap() = 1000;
        let t0 = std::time::Instant::now();
        let o = l.bmc.power(c.id, PowerAction::PowerOff, &wait).await.unwrap();
        assert!(!o.settled && o.message.contains("settle_secs"), "{o:?}");
        assert!(t0.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn failures_are_recorded_published_and_named() {
        let l = lab_with(quick());
        let c = l.bmc.create(ipmi("r1", "10.0.0.5")).await.unwrap();
        *l.fake.password.lock().unwrap() = Some("other".into());
        let mut sub = l.events.subscribe();
        match l.bmc.power(c.id, PowerAction::PowerOn, &PowerOptions::default()).await {
            Err(ServiceError::Upstream(m)) => assert!(m.contains("wrong password"), "{m}"),
            other => panic!("{other:?}"),
        }
        let st = l.bmc.status(c.id).unwrap();
        assert!(st.last_error.unwrap().contains("wrong password") && st.last_checked.is_some());
        assert!(kinds(&l, &mut sub).contains(&"bmc.power.failed".to_string()));
        // reset_type is Redfish only; pxe goes with power-on only.
        let rt = PowerOptions {
            reset_type: Some("Nmi".into()),
            ..Default::default()
        };
        assert!(
            matches!(l.bmc.power(c.id, PowerAction::Restart, &rt).await, Err(ServiceError::Invalid(m)) if m.contains("'reset_type'"))
        );
        let pxe = PowerOptions {
            pxe: true,
            ..Default::default()
        };
        assert!(
            matches!(l.bmc.power(c.id, PowerAction::PowerOff, &pxe).await, Err(ServiceError::Invalid(m)) if m.contains("'pxe'"))
        );
    }

    #[tokio::test]
    async fn allowed_networks_keep_calls_on_the_management_network() {
        let l = lab_with(BmcSection {
            allowed_networks: vec!["127.0.0.0/8".parse().unwrap()],
            ..quick()
        });
        let c = l.bmc.create(ipmi("far", "192.0.2.9")).await.unwrap();
        match l.bmc.refresh(c.id).await {
            Err(ServiceError::Invalid(m)) => assert!(m.contains("allowed_networks"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(l.fake.calls().is_empty(), "nothing was contacted");
        let near = l.bmc.create(ipmi("near", "127.0.0.9")).await.unwrap();
        let r = l.bmc.refresh(near.id).await.unwrap();
        assert_eq!(r.identity.manufacturer.as_deref(), Some("Fake"));
        assert_eq!(r.status.power_state, Some(PowerState::Off));
    }

    #[tokio::test]
    async fn host_power_uses_the_linked_config_else_the_host_fields() {
        let l = lab_with(quick());
        let h = l
            .hosts
            .create(HostInput {
                name: Some("n1".into()),
                mac: Some("52:54:00:00:00:02".into()),
                bmc_addr: Some(Some("https://10.1.1.1:8443".into())),
                bmc_user: Some(Some("root".into())),
                bmc_password: Some(Some("pw".into())),
                ..Default::default()
            })
            .await
            .unwrap();
        let o = l
            .bmc
            .host_power(h.id, PowerAction::PowerOn, &PowerOptions::default())
            .await
            .unwrap();
        assert_eq!((o.bmc_id, o.host_id), (None, Some(h.id)));
        assert_eq!(l.fake.calls()[0].0, "10.1.1.1:8443");
        let t = l.bmc.target_of_host(&l.hosts.get(h.id).unwrap()).unwrap();
        assert_eq!(
            (t.protocol, t.tls, t.password.as_str()),
            (Protocol::Redfish, true, "pw")
        );
        let mut c = ipmi("linked", "10.0.0.8");
        c.host_id = Some(Some(h.id));
        let c = l.bmc.create(c).await.unwrap();
        let o = l
            .bmc
            .host_power(h.id, PowerAction::Status, &PowerOptions::default())
            .await
            .unwrap();
        assert_eq!(o.bmc_id, Some(c.id));
        assert_eq!(l.fake.calls().last().unwrap().0, "10.0.0.8:623");
        let bare = l
            .hosts
            .create(HostInput {
                name: Some("n2".into()),
                mac: Some("52:54:00:00:00:03".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            matches!(l.bmc.host_power(bare.id, PowerAction::Status, &PowerOptions::default()).await, Err(ServiceError::Conflict(m)) if m.contains("no BMC"))
        );
        assert!(matches!(
            l.bmc
                .host_power(999, PowerAction::Status, &PowerOptions::default())
                .await,
            Err(ServiceError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn csv_import_reports_bad_rows_and_keeps_good_ones() {
        let l = lab_with(quick());
        let csv = "name,address,protocol,user,password,port\n\
                   a,10.0.0.1,ipmi,admin,pw,\n\
                   b,not a host!,ipmi,admin,pw,\n\
                   \"c\",https://10.0.0.3,redfish,root,pw,8443\n\
                   a,10.0.0.4,ipmi,admin,pw,\n";
        let r = l.bmc.import_csv(csv.as_bytes()).await.unwrap();
        assert_eq!((r.imported, r.failed), (2, 2));
        let rows: Vec<(u64, bool)> = r.rows.iter().map(|r| (r.row, r.ok)).collect();
        assert_eq!(rows, [(2, true), (3, false), (4, true), (5, false)]);
        assert!(r.rows[1].error.as_deref().unwrap().contains("'address'"));
        assert!(r.rows[3].error.as_deref().unwrap().contains("already exists"));
        let names: Vec<String> = l.bmc.list().unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["a", "c"]);
        assert_eq!(l.bmc.list().unwrap()[1].effective_port(), 8443);
        for (bad, why) in [
            ("", "header"),
            ("name,address,colour\n", "unknown"),
            ("name,address,user\n", "protocol"),
            ("name,name,address,protocol,user\n", "twice"),
        ] {
            match l.bmc.import_csv(bad.as_bytes()).await {
                Err(ServiceError::Invalid(m)) => assert!(m.contains(why), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let r = l
            .bmc
            .import_csv(b"name,address,protocol,user,port\nx,10.0.0.9,ipmi,u,99999\ny,10.0.0.9,ipmi\n")
            .await
            .unwrap();
        assert_eq!(r.failed, 2);
        assert!(r.rows[0].error.as_deref().unwrap().contains("'port'"));
        assert!(r.rows[1].error.as_deref().unwrap().contains("fields"));
    }

    #[tokio::test]
    async fn probe_detects_and_batch_keeps_order_with_per_id_results() {
        let l = lab_with(quick());
        *l.fake.detect_as.lock().unwrap() = Some(Protocol::Redfish);
        let p = l
            .bmc
            .probe(ProbeInput {
                address: "10.0.0.20".into(),
                user: "root".into(),
                password: Some("pw".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!((p.protocol, p.port, p.detected), (Protocol::Redfish, 443, true));
        assert_eq!(p.identity.model.as_deref(), Some("redfish-model"));
        let a = l.bmc.create(ipmi("a", "10.0.0.1")).await.unwrap();
        let b = l.bmc.create(ipmi("b", "10.0.0.2")).await.unwrap();
        l.fake.failing.lock().unwrap().insert(
            "10.0.0.2:623".into(),
            BmcError::Unreachable("BMC 10.0.0.2:623 (ipmi): no answer".into()),
        );
        let r = l
            .bmc
            .batch(&[b.id, 77, a.id], PowerAction::PowerOn, &PowerOptions::default())
            .await
            .unwrap();
        assert_eq!(
            r.iter().map(|i| (i.id, i.ok)).collect::<Vec<_>>(),
            [(b.id, false), (77, false), (a.id, true)]
        );
        assert!(r[0].error.as_deref().unwrap().contains("no answer"));
        assert!(r[1].error.as_deref().unwrap().contains("no BMC config"));
        assert!(matches!(
            l.bmc.batch(&[], PowerAction::Status, &PowerOptions::default()).await,
            Err(ServiceError::Invalid(_))
        ));
        assert!(matches!(
            l.bmc
                .batch(&[1, 1], PowerAction::Status, &PowerOptions::default())
                .await,
            Err(ServiceError::Invalid(_))
        ));
    }

    #[test]
    fn event_data_is_what_the_service_wrote_before_it_had_a_type() {
        for device in [BootDevice::Pxe, BootDevice::Disk, BootDevice::Cdrom, BootDevice::Bios] {
            let req = BootRequest {
                device,
                persistent: true,
                uefi: None,
            };
            for kept in [
                BootReport::default(),
                BootReport {
                    device: Some(device),
                    target: "Force PXE".into(),
                    persistent: Some(false),
                    uefi: Some(true),
                    enabled: Some(true),
                },
            ] {
                let old = serde_json::json!({
                    "device": req.device,
                    "persistent": req.persistent,
                    "uefi": req.uefi,
                    "kept": kept,
                });
                assert_eq!(serde_json::to_value(boot_device_set(req, &kept)).unwrap(), old);
            }
        }
        for (before, after) in [(PowerState::Off, PowerState::On), (PowerState::On, PowerState::Unknown)] {
            let host_id = Some(3u64);
            let new = BmcPowerChanged {
                before: wire_name(&before),
                after: wire_name(&after),
                host_id,
            };
            assert_eq!(
                serde_json::to_value(new).unwrap(),
                serde_json::json!({ "before": before, "after": after, "host_id": host_id })
            );
        }
        for action in [
            PowerAction::PowerOn,
            PowerAction::PowerOff,
            PowerAction::Restart,
            PowerAction::Status,
        ] {
            let new = BmcPowerFailed {
                action: wire_name(&action),
                pxe: false,
                error: "e".into(),
                host_id: None,
            };
            assert_eq!(
                serde_json::to_value(new).unwrap(),
                serde_json::json!({ "action": action, "pxe": false, "error": "e", "host_id": None::<u64> })
            );
        }
    }
}
