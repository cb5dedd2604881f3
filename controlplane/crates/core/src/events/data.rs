//! The fixed `data` shapes of the most frequent non-write events, one struct each.
//!
//! A publisher builds the struct and hands it to [`NewEvent::with`](super::NewEvent::with),
//! which turns it into the event's JSON `data`. Each struct serialises to exactly the object
//! the server wrote before the shapes had types (`data` is a JSON object, so its keys are in
//! sorted order whatever the field order; the compatibility test reads journal lines of the
//! earlier server back through these structs). Writes keep their generic
//! `{action, before, after}` built by [`NewEvent::write`](super::NewEvent::write).

use serde::{Deserialize, Serialize};

use super::EventKind;

/// A `data` shape with the kinds that carry it.
pub trait EventData: Serialize {
    /// The kinds whose `data` has this shape ([`NewEvent::with`](super::NewEvent::with)
    /// checks it in debug builds).
    const KINDS: &'static [EventKind];
}

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

/// `tftp.transfer.completed|aborted|failed`: a transfer that ran and ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TftpTransfer {
    /// The file asked for, as the client named it.
    pub file: String,
    /// The client's `ip:port`.
    pub client: String,
    /// The file's size in bytes.
    pub bytes: u64,
    /// How long the transfer ran, in milliseconds.
    pub duration_ms: u64,
    /// How it ended: `Complete`, `ClientError` (the client stopped) or `TimedOut`.
    pub outcome: String,
}

impl EventData for TftpTransfer {
    const KINDS: &'static [EventKind] = &[
        EventKind::TftpTransferCompleted,
        EventKind::TftpTransferAborted,
        EventKind::TftpTransferFailed,
    ];
}

/// `tftp.transfer.failed` for a read request refused before any data went out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TftpRefused {
    /// The file asked for, as the client named it.
    pub file: String,
    /// The client's `ip:port`.
    pub client: String,
    /// The TFTP error message sent to the client.
    pub error: String,
    /// The TFTP error code sent (RFC 1350 §5: 1 not found, 2 access violation, ...).
    pub code: u16,
}

impl EventData for TftpRefused {
    const KINDS: &'static [EventKind] = &[EventKind::TftpTransferFailed];
}

/// `boot.ipxe.served`: the iPXE script a machine was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum IpxeServed {
    /// The script of the machine's boot profile.
    Profile {
        /// The machine's MAC (`aa:bb:..`), or `unknown` when the request named none.
        mac: String,
        /// The profile's name.
        profile: String,
        /// The host's name when the MAC belongs to a host, else `null`.
        host: Option<String>,
    },
    /// The script of the machine's pending install task.
    InstallTask {
        /// The machine's MAC (`aa:bb:..`).
        mac: String,
        /// Always `true`.
        install_task: bool,
    },
}

impl EventData for IpxeServed {
    const KINDS: &'static [EventKind] = &[EventKind::BootIpxeServed];
}

/// `boot.pxelinux.served|grub.served`: a generated boot-loader configuration sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MenuServed {
    /// The configuration's path as the loader asked for it (`pxelinux.cfg/01-..`, `grub/grub.cfg-..`).
    pub file: String,
    /// The MAC of a per-MAC file (`aa:bb:..`), `null` for the default file.
    pub mac: Option<String>,
    /// The boot profile it came from.
    pub profile: String,
    /// The registered host's name for a per-MAC file of a registered machine, else `null`.
    pub host: Option<String>,
    /// How it was sent: `tftp` or `http`.
    pub protocol: String,
}

impl EventData for MenuServed {
    const KINDS: &'static [EventKind] = &[EventKind::BootPxelinuxServed, EventKind::BootGrubServed];
}

/// `boot.file.served`: a boot file sent over HTTP (GET only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootFileServed {
    /// The path under `/boot/`.
    pub file: String,
    /// Bytes sent (the range's length for a 206).
    pub bytes: u64,
    /// The mounted OS image's id, for a file read from an image; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<u64>,
    /// The HTTP status answered (200, 206, ...).
    pub status: u16,
}

impl EventData for BootFileServed {
    const KINDS: &'static [EventKind] = &[EventKind::BootFileServed];
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::de::DeserializeOwned;

    use super::*;
    use crate::events::Event;

    /// Journal lines (`<data_dir>/journal/events/*.jsonl`) written by the server before kinds
    /// and data shapes had types: service, auth, DHCP lease, DNS, reservation, profile and
    /// host writes, iPXE, TFTP, PXELINUX, GRUB and HTTP boot-file events.
    const BEFORE_TYPES: &str = include_str!("testdata/journal-before-typed-kinds.jsonl");

    /// `data` read into `D` and written back gives the same JSON, and the whole event with
    /// that `data` the same bytes.
    fn same_through<D: EventData + DeserializeOwned>(e: &Event, line: &str) {
        let d: D = serde_json::from_value(e.data.clone())
            .unwrap_or_else(|err| panic!("{} does not read as {}: {err}", e.kind, std::any::type_name::<D>()));
        let mut again = e.clone();
        again.data = serde_json::to_value(&d).unwrap();
        assert_eq!(serde_json::to_string(&again).unwrap(), line);
    }

    #[test]
    fn journal_lines_of_the_untyped_server_read_back_byte_for_byte() {
        let mut kinds = BTreeSet::new();
        let mut typed = 0;
        for line in BEFORE_TYPES.lines() {
            let e: Event = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), line, "re-serialised");
            let k = EventKind::from_wire(&e.kind).unwrap_or_else(|| panic!("{} is not an EventKind", e.kind));
            assert_eq!(k.as_str(), e.kind);
            kinds.insert(k);
            typed += 1;
            match k {
                EventKind::ServiceStarted => same_through::<ServiceStarted>(&e, line),
                EventKind::BootIpxeServed => same_through::<IpxeServed>(&e, line),
                EventKind::BootFileServed => same_through::<BootFileServed>(&e, line),
                EventKind::BootPxelinuxServed | EventKind::BootGrubServed => same_through::<MenuServed>(&e, line),
                EventKind::TftpTransferFailed if e.data.get("code").is_some() => same_through::<TftpRefused>(&e, line),
                EventKind::TftpTransferCompleted | EventKind::TftpTransferAborted | EventKind::TftpTransferFailed => {
                    same_through::<TftpTransfer>(&e, line)
                }
                _ => typed -= 1,
            }
        }
        assert_eq!(kinds.len(), 16, "{kinds:?}");
        assert_eq!(
            typed, 8,
            "service.started, boot.ipxe.served, two TFTP lines, three menus, a boot file"
        );
    }

    #[test]
    fn the_shapes_that_share_a_kind_stay_apart() {
        let install = serde_json::json!({"mac": "52:54:00:00:00:01", "install_task": true});
        assert!(matches!(
            serde_json::from_value::<IpxeServed>(install.clone()).unwrap(),
            IpxeServed::InstallTask { .. }
        ));
        let v = serde_json::to_value(IpxeServed::InstallTask {
            mac: "52:54:00:00:00:01".into(),
            install_task: true,
        })
        .unwrap();
        assert_eq!(v, install);
        let plain = BootFileServed {
            file: "ipxe.efi".into(),
            bytes: 3,
            image: None,
            status: 200,
        };
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"file": "ipxe.efi", "bytes": 3, "status": 200})
        );
        let menu = serde_json::json!({
            "file": "pxelinux.cfg/default", "mac": null, "profile": "Default", "host": null, "protocol": "tftp"
        });
        let m: MenuServed = serde_json::from_value(menu.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), menu);
        let refused = serde_json::json!({"file": "f", "client": "c", "error": "e", "code": 1});
        assert!(serde_json::from_value::<TftpTransfer>(refused).is_err());
    }

    #[test]
    #[should_panic(expected = "does not carry")]
    #[cfg(debug_assertions)]
    fn a_shape_on_another_kind_is_caught_in_debug_builds() {
        let _ = crate::events::NewEvent::new(EventKind::AuthLogin, "x").with(&ServiceFailed { reason: "r".into() });
    }
}
