//! The `data` of the server's own events: services starting and failing, the shared store's
//! link, backups, the XDP fast path, update downloads, and the stand-in `data` of a relayed
//! event too long to send whole.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::EventData;
use crate::events::EventKind;

/// `service.started`: where the service listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceStarted {
    /// Listen addresses, `ip:port` or `interface:port`.
    pub listen: Vec<String>,
}

impl EventData for ServiceStarted {
    const KINDS: &'static [EventKind] = &[EventKind::ServiceStarted];
}

/// `service.failed`: why the service failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceFailed {
    /// The error, as the service's status shows it.
    pub reason: String,
}

impl EventData for ServiceFailed {
    const KINDS: &'static [EventKind] = &[EventKind::ServiceFailed];
}

/// `store.disconnected`: why the shared PostgreSQL store is unreachable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreDisconnected {
    /// The connection error (empty when none was given).
    pub error: String,
}

impl EventData for StoreDisconnected {
    const KINDS: &'static [EventKind] = &[EventKind::StoreDisconnected];
}

/// `system.backup.created`: a backup was taken and sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupCreated {
    /// The backup file's size in bytes.
    pub bytes: u64,
}

impl EventData for BackupCreated {
    const KINDS: &'static [EventKind] = &[EventKind::SystemBackupCreated];
}

/// `dataplane.xdp.attached|detached|failed`: the XDP fast path's status after the change
/// (what `GET /services/dns` shows as `xdp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataplaneXdp {
    /// Configured mode: `auto`, `native`, `generic` or `off`.
    pub mode: String,
    /// True when the program is attached to at least one interface.
    pub active: bool,
    /// Why the fast path is not active (or only partly), else `null`.
    pub reason: Option<String>,
    /// The interfaces it is attached to.
    pub interfaces: Vec<DataplaneXdpInterface>,
    /// Entries in the answer map.
    pub map_entries: u64,
    /// Capacity of the answer map, in entries.
    pub map_capacity: u32,
    /// Packet counters, summed over CPUs.
    pub counters: DataplaneXdpCounters,
}

impl EventData for DataplaneXdp {
    const KINDS: &'static [EventKind] = &[
        EventKind::DataplaneXdpAttached,
        EventKind::DataplaneXdpDetached,
        EventKind::DataplaneXdpFailed,
    ];
}

/// One interface the XDP program is attached to ([`DataplaneXdp::interfaces`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataplaneXdpInterface {
    /// Interface name, e.g. `eth0`.
    pub name: String,
    /// How it is attached: `native` or `generic`.
    pub attach_mode: String,
}

/// The XDP program's counters, in packets summed over CPUs ([`DataplaneXdp::counters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataplaneXdpCounters {
    /// Answered in the kernel (`XDP_TX`).
    pub answered: u64,
    /// Passed on: not a DNS query for this server.
    pub pass_not_dns: u64,
    /// Passed on: no entry in the answer map.
    pub pass_miss: u64,
    /// Passed on: a query the fast path does not handle.
    pub pass_unsupported: u64,
    /// Passed on: the name is too long.
    pub pass_too_long: u64,
    /// Passed on: malformed.
    pub pass_malformed: u64,
    /// Answers dropped by response rate limiting.
    pub rrl_dropped: u64,
    /// Answers over the rate limit sent truncated (TC=1) instead.
    pub rrl_slipped: u64,
}

/// `update.download.started`: a download of a release began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateDownloadStarted {
    /// The release's version, e.g. `1.4.0`.
    pub version: String,
    /// The artifact's download URL (resolved against the manifest's).
    pub url: String,
    /// The artifact's size in bytes, as the manifest states it.
    pub size: u64,
}

impl EventData for UpdateDownloadStarted {
    const KINDS: &'static [EventKind] = &[EventKind::UpdateDownloadStarted];
}

/// `update.download.progress`: how much of the artifact arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateDownloadProgress {
    /// The release's version.
    pub version: String,
    /// Bytes received so far.
    pub received: u64,
    /// The artifact's size in bytes.
    pub size: u64,
    /// `received` in percent of `size` (0-99, rounded down).
    pub percent: u8,
}

impl EventData for UpdateDownloadProgress {
    const KINDS: &'static [EventKind] = &[EventKind::UpdateDownloadProgress];
}

/// `update.download.completed`: the artifact was verified and kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateDownloadCompleted {
    /// The release's version.
    pub version: String,
    /// The artifact's size in bytes.
    pub size: u64,
    /// Its SHA-256, lower-case hex.
    pub sha256: String,
    /// Where the verified artifact is on the server (absolute path).
    pub path: PathBuf,
}

impl EventData for UpdateDownloadCompleted {
    const KINDS: &'static [EventKind] = &[EventKind::UpdateDownloadCompleted];
}

/// `update.download.failed`: the download was refused and nothing was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateDownloadFailed {
    /// The release's version.
    pub version: String,
    /// The artifact's download URL.
    pub url: String,
    /// Why it was refused (transfer, size, hash or signature).
    pub reason: String,
}

impl EventData for UpdateDownloadFailed {
    const KINDS: &'static [EventKind] = &[EventKind::UpdateDownloadFailed];
}

/// The `data` a relayed event goes to the other nodes with when its own is too long for
/// one notification: `{"truncated": true}`, whatever its kind. Not the shape of any kind
/// (publishers never send it); the receiving node stores and streams it as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayTruncated {
    /// Always `true`.
    pub truncated: bool,
}

impl Default for RelayTruncated {
    fn default() -> Self {
        Self { truncated: true }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    #[test]
    fn service_store_and_backup_shapes_write_what_their_publishers_wrote() {
        same_json(
            &ServiceStarted {
                listen: vec!["0.0.0.0:8080".into()],
            },
            json!({"listen": ["0.0.0.0:8080"]}),
        );
        same_json(
            &ServiceFailed {
                reason: "bind: in use".into(),
            },
            json!({"reason": "bind: in use"}),
        );
        // cluster.rs: json!({"error": why}) with why = err.unwrap_or_default().
        let why = String::new();
        same_json(&StoreDisconnected { error: why.clone() }, json!({ "error": why }));
        // system.rs: json!({ "bytes": bytes.len() }).
        let bytes = [0u8; 42];
        same_json(&BackupCreated { bytes: 42 }, json!({ "bytes": bytes.len() }));
        assert_eq!(
            serde_json::to_value(RelayTruncated::default()).unwrap(),
            json!({"truncated": true})
        );
    }

    #[test]
    fn the_xdp_status_is_the_status_the_dns_service_shows() {
        // serde_json::to_value(&XdpStatus), with its field names and types.
        let old = json!({
            "mode": "auto", "active": true, "reason": null,
            "interfaces": [{"name": "eth0", "attach_mode": "native"}],
            "map_entries": 12usize, "map_capacity": 65536u32,
            "counters": {"answered": 5, "pass_not_dns": 1, "pass_miss": 2, "pass_unsupported": 3,
                "pass_too_long": 4, "pass_malformed": 6, "rrl_dropped": 7, "rrl_slipped": 8},
        });
        same_json(
            &DataplaneXdp {
                mode: "auto".into(),
                active: true,
                reason: None,
                interfaces: vec![DataplaneXdpInterface {
                    name: "eth0".into(),
                    attach_mode: "native".into(),
                }],
                map_entries: 12,
                map_capacity: 65536,
                counters: DataplaneXdpCounters {
                    answered: 5,
                    pass_not_dns: 1,
                    pass_miss: 2,
                    pass_unsupported: 3,
                    pass_too_long: 4,
                    pass_malformed: 6,
                    rrl_dropped: 7,
                    rrl_slipped: 8,
                },
            },
            old,
        );
        let failed = json!({
            "mode": "native", "active": false, "reason": "not root", "interfaces": [],
            "map_entries": 0, "map_capacity": 0, "counters": DataplaneXdpCounters::default(),
        });
        let d: DataplaneXdp = serde_json::from_value(failed.clone()).unwrap();
        assert_eq!(d.reason.as_deref(), Some("not root"));
        same_json(&d, failed);
    }

    #[test]
    fn update_shapes_write_what_their_publishers_wrote() {
        let (v, url, size) = ("1.4.0", "https://updates.example/bootlane-1.4.0", 1000u64);
        same_json(
            &UpdateDownloadStarted {
                version: v.into(),
                url: url.into(),
                size,
            },
            json!({"version": v, "url": url, "size": size}),
        );
        let (received, percent) = (250u64, 25u8);
        same_json(
            &UpdateDownloadProgress {
                version: v.into(),
                received,
                size,
                percent,
            },
            json!({"version": v, "received": received, "size": size, "percent": percent}),
        );
        let dir = PathBuf::from("/var/lib/bootlane/updates");
        let sha = "ab".repeat(32);
        same_json(
            &UpdateDownloadCompleted {
                version: v.into(),
                size,
                sha256: sha.clone(),
                path: dir.join(v).join("bootlane"),
            },
            json!({"version": v, "size": size, "sha256": sha, "path": dir.join(v).join("bootlane")}),
        );
        let why = "sha256 mismatch".to_string();
        same_json(
            &UpdateDownloadFailed {
                version: v.into(),
                url: url.into(),
                reason: why.clone(),
            },
            json!({"version": v, "url": url, "reason": why}),
        );
    }
}
