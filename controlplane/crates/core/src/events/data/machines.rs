//! The `data` of what Bootlane does to machines: BMC power actions, boot overrides and CSV
//! imports, and wake-on-LAN packets, history and schedules. Writes of BMC configurations and
//! schedules are [`Write`](super::Write)s.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::EventData;
use crate::events::EventKind;

/// `bmc.config.imported`: the outcome of a CSV import of BMC configurations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcConfigImported {
    /// Rows imported.
    pub imported: u64,
    /// Rows refused (nothing of them was stored).
    pub failed: u64,
    /// The ids of the configurations created, in file order.
    pub ids: Vec<u64>,
}

impl EventData for BmcConfigImported {
    const KINDS: &'static [EventKind] = &[EventKind::BmcConfigImported];
}

/// `bmc.power.requested`: a power action asked of a BMC (before it is sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcPowerRequested {
    /// The action: `power-on`, `power-off` or `restart`.
    pub action: String,
    /// True for a power-on into PXE (boot override first).
    pub pxe: bool,
    /// The inventory host the BMC powers, when known; else `null`.
    pub host_id: Option<u64>,
}

impl EventData for BmcPowerRequested {
    const KINDS: &'static [EventKind] = &[EventKind::BmcPowerRequested];
}

/// `bmc.power.failed`: a power action the BMC did not carry out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcPowerFailed {
    /// The action: `power-on`, `power-off`, `restart` or `status`.
    pub action: String,
    /// True for a power-on into PXE.
    pub pxe: bool,
    /// What failed, as the API answered it.
    pub error: String,
    /// The inventory host the BMC powers, when known; else `null`.
    pub host_id: Option<u64>,
}

impl EventData for BmcPowerFailed {
    const KINDS: &'static [EventKind] = &[EventKind::BmcPowerFailed];
}

/// `bmc.power.changed`: a machine's power state changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcPowerChanged {
    /// The state before: `on`, `off` or `unknown`.
    pub before: String,
    /// The state after: `on`, `off` or `unknown`.
    pub after: String,
    /// The inventory host the BMC powers, when known; else `null`.
    pub host_id: Option<u64>,
}

impl EventData for BmcPowerChanged {
    const KINDS: &'static [EventKind] = &[EventKind::BmcPowerChanged];
}

/// `bmc.boot_device.set`: a boot override set, with what the BMC reports it kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcBootDeviceSet {
    /// The device asked for: `pxe`, `disk`, `cdrom` or `bios`.
    pub device: String,
    /// Every boot (true) or the next one only (false).
    pub persistent: bool,
    /// UEFI (true) or legacy (false) boot; `null` to leave the BMC's mode alone.
    pub uefi: Option<bool>,
    /// The override as the BMC reports it afterwards.
    pub kept: BmcBootReport,
}

impl EventData for BmcBootDeviceSet {
    const KINDS: &'static [EventKind] = &[EventKind::BmcBootDeviceSet];
}

/// A boot override as a BMC reports it ([`BmcBootDeviceSet::kept`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BmcBootReport {
    /// The device (`pxe`, `disk`, `cdrom`, `bios`) when it is one of those; `null` for no
    /// override or another target.
    pub device: Option<String>,
    /// The BMC's own words for the target (`Pxe`, `Force PXE`, `None`, ...).
    pub target: String,
    /// Every boot (true) or the next one only (false); `null` when not reported.
    pub persistent: Option<bool>,
    /// UEFI (true) or legacy (false); `null` when not reported.
    pub uefi: Option<bool>,
    /// Whether an override is active; `null` when not reported.
    pub enabled: Option<bool>,
}

/// `wol.sent|failed`: one wake of one MAC, as the wake-on-LAN history records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WolWake {
    /// The history record's id.
    pub id: u64,
    /// When, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// The woken MAC, lower-case colon form.
    pub mac: String,
    /// The registered host with that MAC; `null` for a MAC no host has.
    pub host_id: Option<u64>,
    /// That host's name; `null` likewise.
    pub host_name: Option<String>,
    /// Interfaces the packet was sent out of.
    pub interfaces: Vec<String>,
    /// Destinations (`interface:broadcast:port`), per interface in the order of
    /// `interfaces`.
    pub broadcasts: Vec<String>,
    /// Packets sent to each destination.
    pub repeat: u8,
    /// True when a SecureOn password was appended (the password is not recorded).
    pub secureon: bool,
    /// Datagrams that went out (0 for `wol.failed`).
    pub packets_sent: u32,
    /// Who asked: the API user, or `system` for schedules.
    pub actor: String,
    /// `api`, `batch` or `schedule:<id>`.
    pub source: String,
    /// True when at least one datagram went out on every interface.
    pub ok: bool,
    /// What failed (per interface and destination), else `null`.
    pub error: Option<String>,
}

impl EventData for WolWake {
    const KINDS: &'static [EventKind] = &[EventKind::WolFailed, EventKind::WolSent];
}

/// `wol.history.cleared`: the whole wake-on-LAN history was deleted. Shaped as a write
/// (`action` `delete`, no `before` or `after`, and the count), so it goes into the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WolHistoryCleared {
    /// Always `delete`.
    pub action: String,
    /// How many records were deleted.
    pub deleted: u64,
    /// Always `null` (the records are not kept).
    pub before: (),
    /// Always `null`.
    pub after: (),
}

impl WolHistoryCleared {
    /// The clearing of `deleted` records.
    pub fn new(deleted: u64) -> Self {
        Self {
            action: "delete".into(),
            deleted,
            before: (),
            after: (),
        }
    }
}

impl EventData for WolHistoryCleared {
    const KINDS: &'static [EventKind] = &[EventKind::WolHistoryCleared];
}

/// `wol.schedule.missed`: runs of a schedule that fell while the server was down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WolScheduleMissed {
    /// How many runs were missed (at most 10000).
    pub missed: u64,
    /// The last missed run, Unix seconds.
    pub last_slot: i64,
}

impl EventData for WolScheduleMissed {
    const KINDS: &'static [EventKind] = &[EventKind::WolScheduleMissed];
}

/// `wol.schedule.fired`: a schedule ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WolScheduleFired {
    /// The run's slot, Unix seconds.
    pub slot: i64,
    /// How it went: `ok`, `partial` or `failed`.
    pub status: String,
    /// The wakes that failed, else `null`.
    pub error: Option<String>,
}

impl EventData for WolScheduleFired {
    const KINDS: &'static [EventKind] = &[EventKind::WolScheduleFired];
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    #[test]
    fn bmc_shapes_write_what_the_bmc_service_wrote() {
        let (imported, failed, ids) = (2usize, 1usize, vec![4u64, 5]);
        same_json(
            &BmcConfigImported {
                imported: 2,
                failed: 1,
                ids: ids.clone(),
            },
            json!({"imported": imported, "failed": failed, "ids": ids}),
        );
        for host_id in [Some(9u64), None] {
            let (action, pxe) = ("power-on", true);
            same_json(
                &BmcPowerRequested {
                    action: action.into(),
                    pxe,
                    host_id,
                },
                json!({ "action": action, "pxe": pxe, "host_id": host_id }),
            );
            let msg = "BMC 10.0.0.9: connection refused".to_string();
            same_json(
                &BmcPowerFailed {
                    action: "restart".into(),
                    pxe: false,
                    error: msg.clone(),
                    host_id,
                },
                json!({ "action": "restart", "pxe": false, "error": msg, "host_id": host_id }),
            );
            same_json(
                &BmcPowerChanged {
                    before: "off".into(),
                    after: "on".into(),
                    host_id,
                },
                json!({ "before": "off", "after": "on", "host_id": host_id }),
            );
        }
        // kept: the serialised BootReport {device, target, persistent, uefi, enabled}.
        let kept = json!({"device": "pxe", "target": "Pxe", "persistent": false, "uefi": null, "enabled": true});
        same_json(
            &BmcBootDeviceSet {
                device: "pxe".into(),
                persistent: false,
                uefi: None,
                kept: BmcBootReport {
                    device: Some("pxe".into()),
                    target: "Pxe".into(),
                    persistent: Some(false),
                    uefi: None,
                    enabled: Some(true),
                },
            },
            json!({"device": "pxe", "persistent": false, "uefi": null, "kept": kept}),
        );
        same_json(
            &BmcBootDeviceSet {
                device: "disk".into(),
                persistent: true,
                uefi: Some(true),
                kept: BmcBootReport::default(),
            },
            json!({"device": "disk", "persistent": true, "uefi": true, "kept":
                {"device": null, "target": "", "persistent": null, "uefi": null, "enabled": null}}),
        );
    }

    #[test]
    fn wol_shapes_write_what_the_wol_service_wrote() {
        // The history record, serialised (wol.sent and wol.failed carried it whole).
        let old = json!({
            "id": 12, "time": "2026-11-28T09:58:37.883195325Z", "mac": "52:54:00:77:00:07",
            "host_id": 3, "host_name": "pc3", "interfaces": ["eth0"], "broadcasts": ["eth0:10.0.0.255:9"],
            "repeat": 3, "secureon": false, "packets_sent": 3, "actor": "admin", "source": "api",
            "ok": true, "error": null,
        });
        let wake = WolWake {
            id: 12,
            time: OffsetDateTime::parse(
                "2026-11-28T09:58:37.883195325Z",
                &time::format_description::well_known::Rfc3339,
            )
            .unwrap(),
            mac: "52:54:00:77:00:07".into(),
            host_id: Some(3),
            host_name: Some("pc3".into()),
            interfaces: vec!["eth0".into()],
            broadcasts: vec!["eth0:10.0.0.255:9".into()],
            repeat: 3,
            secureon: false,
            packets_sent: 3,
            actor: "admin".into(),
            source: "api".into(),
            ok: true,
            error: None,
        };
        same_json(&wake, old);
        let n = 7usize;
        same_json(
            &WolHistoryCleared::new(7),
            json!({ "action": "delete", "deleted": n, "before": null, "after": null }),
        );
        let (count, last) = (3u64, 1_790_000_000i64);
        same_json(
            &WolScheduleMissed {
                missed: count,
                last_slot: last,
            },
            json!({ "missed": count, "last_slot": last }),
        );
        for error in [None, Some("pc3: no route".to_string())] {
            let (slot, status) = (1_790_000_060i64, "partial");
            same_json(
                &WolScheduleFired {
                    slot,
                    status: status.into(),
                    error: error.clone(),
                },
                json!({ "slot": slot, "status": status, "error": error }),
            );
        }
    }
}
