//! The `data` of every kind of event, as types: one struct (or enum) per shape, each naming
//! the kinds that carry it ([`EventData::KINDS`]).
//!
//! A publisher builds the shape and hands it to [`NewEvent::with`](super::NewEvent::with),
//! which turns it into the event's JSON `data`. A write's `{action, before, after}` is
//! [`Write`], built by [`NewEvent::write`](super::NewEvent::write); a kind that carries no
//! data is declared by [`NoData`] and published with [`NewEvent::new`](super::NewEvent::new)
//! alone. There is no other way to set `data`, and every [`EventKind`] is carried by at least
//! one shape ([`SHAPES`], checked by a test; the book's table of kinds names them).
//!
//! Each shape serialises to exactly the object the server wrote before the shapes had types:
//! the same keys, `null` where a value was `null` and no key where there was none, numbers as
//! numbers (`data` is a JSON object, so its keys are in sorted order whatever the field
//! order; the tests compare every shape with the JSON it replaces, and journal lines of the
//! earlier server read back through these types byte for byte). The shapes use plain types
//! (strings, numbers, addresses, lists), never the domain types of the crates above this
//! one: an enum's value is its wire name ([`wire_name`]).
//!
//! The shapes are grouped by domain in submodules: services, the store, backups, the XDP
//! fast path and updates (`system`); boot files, menus, TFTP and access control (`boot`);
//! DHCP leases (`dhcp`); BMCs and wake-on-LAN (`machines`); OS images and NFS (`media`);
//! install tasks, scripts, answer files, netboot and the community catalog (`install`).

use serde::{Deserialize, Serialize};

use super::EventKind;

mod boot;
mod dhcp;
mod install;
mod machines;
mod media;
mod system;

pub use boot::{AccessRefused, BootFileServed, IpxeServed, MenuServed, TftpRefused, TftpTransfer};
pub use dhcp::{Dhcp6LeaseChanged, DhcpLeaseBound, DhcpLeaseEnded, DhcpLeaseHeld};
pub use install::{
    AnswerSettingsUpdated, AnswerTemplateChanged, BaselineChanged, ImportedId, ImportedResource, InstallTaskChanged,
    InstallTaskReport, InstallTaskStateChanged, InstallTokenRefused, NetbootCacheFetchFailed, NetbootCacheFilled,
    NetbootOverlay, ScriptChanged, ScriptRunReported, StoreItemImported,
};
pub use machines::{
    BmcBootDeviceSet, BmcBootReport, BmcConfigImported, BmcPowerChanged, BmcPowerFailed, BmcPowerRequested,
    WolHistoryCleared, WolScheduleFired, WolScheduleMissed, WolWake,
};
pub use media::{
    ExtractedTree, ImageDetection, ImageKernel, ImageProgress, NfsApplyFailed, NfsExport, NfsExports, NfsUpdated,
    OsImageExtraction, OsImageInspected,
};
pub use system::{
    BackupCreated, DataplaneXdp, DataplaneXdpCounters, DataplaneXdpInterface, RelayTruncated, ServiceFailed,
    ServiceStarted, StoreDisconnected, UpdateDownloadCompleted, UpdateDownloadFailed, UpdateDownloadProgress,
    UpdateDownloadStarted,
};

/// A `data` shape with the kinds that carry it.
pub trait EventData: Serialize {
    /// The kinds whose `data` has this shape ([`NewEvent::with`](super::NewEvent::with)
    /// checks it in debug builds).
    const KINDS: &'static [EventKind];
}

/// The wire name of an enum value whose serde form is a string (`power-on`, `kickstart`,
/// `proxydhcp`, ...): what the value itself serialises to, so that a shape's string field
/// holds exactly what the domain enum wrote. Empty for a value that is not a string (a
/// mistake, caught in debug builds).
pub fn wire_name<T: Serialize + ?Sized>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => {
            debug_assert!(false, "{} is not a string: {other:?}", std::any::type_name::<T>());
            String::new()
        }
    }
}

/// No `data` (`null`): the kinds whose summary, resource and actor say it all. They are
/// published with [`NewEvent::new`](super::NewEvent::new) alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoData;

impl EventData for NoData {
    const KINDS: &'static [EventKind] = &[
        EventKind::AuthLogin,
        EventKind::AuthLoginFailed,
        EventKind::DoctorFinished,
        EventKind::AuthLogout,
        EventKind::NetbootOverlayDeleted,
        EventKind::OsImageMounted,
        EventKind::OsImageUnmounted,
        EventKind::ServiceStopped,
        EventKind::StoreConnected,
    ];
}

/// A write of a stored resource (`{action, before, after}`), built by
/// [`NewEvent::write`](super::NewEvent::write). An event whose `data` holds a string
/// `action` is copied into the audit log, `before` and `after` included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Write {
    /// What was done: `create`, `update`, `delete`, `rollback`, ... (the audit entry's
    /// `action`).
    pub action: String,
    /// The resource before the write, as the API shows it (never a password or a hash);
    /// `null` for a creation. Free-form: each resource has its own JSON.
    pub before: serde_json::Value,
    /// The resource after the write, as the API shows it; `null` for a deletion.
    /// Free-form like `before`.
    pub after: serde_json::Value,
}

impl EventData for Write {
    const KINDS: &'static [EventKind] = &[
        EventKind::AccessEntryCreated,
        EventKind::AccessEntryDeleted,
        EventKind::AccessModeChanged,
        EventKind::AccessUnauthorizedDeleted,
        EventKind::BmcConfigCreated,
        EventKind::BmcConfigDeleted,
        EventKind::BmcConfigUpdated,
        EventKind::BootIpxeScriptUpdated,
        EventKind::DhcpArchmapChanged,
        EventKind::DhcpLeaseDeleted,
        EventKind::DhcpLeasesPruned,
        EventKind::DhcpReservationCreated,
        EventKind::DhcpReservationDeleted,
        EventKind::DhcpReservationUpdated,
        EventKind::DhcpSettingsChanged,
        EventKind::Dhcp6LeaseDeleted,
        EventKind::DnsRecordCreated,
        EventKind::DnsRecordDeleted,
        EventKind::DnsRecordUpdated,
        EventKind::DnsSettingsChanged,
        EventKind::FileDeleted,
        EventKind::FileUploaded,
        EventKind::HostCreated,
        EventKind::HostDeleted,
        EventKind::HostUpdated,
        EventKind::OsImageDeleted,
        EventKind::OsImageUpdated,
        EventKind::OsImageUploaded,
        EventKind::ProfileCreated,
        EventKind::ProfileDeleted,
        EventKind::ProfileRolledBack,
        EventKind::ProfileUpdated,
        EventKind::ServiceAutoStartChanged,
        EventKind::SettingsChanged,
        EventKind::TftpSettingsChanged,
        EventKind::TokenCreated,
        EventKind::TokenRevoked,
        EventKind::UserCreated,
        EventKind::UserDeleted,
        EventKind::UserRoleChanged,
        EventKind::UserTotpDisabled,
        EventKind::UserTotpEnabled,
        EventKind::UserPasswordChanged,
        EventKind::WolScheduleCreated,
        EventKind::WolScheduleDeleted,
    ];
}

/// Lists the shapes as `(type name, kinds)`.
macro_rules! shapes {
    ($($shape:ident),* $(,)?) => {
        /// Every `data` shape by its type's name, with the kinds that carry it: the registry
        /// the book's table of kinds and the test that every kind has a shape read.
        pub const SHAPES: &[(&str, &[EventKind])] = &[$((stringify!($shape), <$shape as EventData>::KINDS)),*];
    };
}

shapes![
    NoData,
    Write,
    AccessRefused,
    AnswerSettingsUpdated,
    AnswerTemplateChanged,
    BackupCreated,
    BaselineChanged,
    BmcBootDeviceSet,
    BmcConfigImported,
    BmcPowerChanged,
    BmcPowerFailed,
    BmcPowerRequested,
    BootFileServed,
    DataplaneXdp,
    Dhcp6LeaseChanged,
    DhcpLeaseBound,
    DhcpLeaseEnded,
    DhcpLeaseHeld,
    InstallTaskChanged,
    InstallTaskReport,
    InstallTaskStateChanged,
    InstallTokenRefused,
    IpxeServed,
    MenuServed,
    NetbootCacheFetchFailed,
    NetbootCacheFilled,
    NetbootOverlay,
    NfsApplyFailed,
    NfsUpdated,
    OsImageExtraction,
    OsImageInspected,
    ImageProgress,
    ScriptChanged,
    ScriptRunReported,
    ServiceFailed,
    ServiceStarted,
    StoreDisconnected,
    StoreItemImported,
    TftpRefused,
    TftpTransfer,
    UpdateDownloadCompleted,
    UpdateDownloadFailed,
    UpdateDownloadProgress,
    UpdateDownloadStarted,
    WolHistoryCleared,
    WolScheduleFired,
    WolScheduleMissed,
    WolWake,
];

/// The names of the shapes that carry `kind` (from [`SHAPES`]).
pub fn shapes_of(kind: EventKind) -> impl Iterator<Item = &'static str> {
    SHAPES
        .iter()
        .filter(move |(_, kinds)| kinds.contains(&kind))
        .map(|(name, _)| *name)
}

/// `shape` serialises to `old` (the JSON its publisher built before it had a type) and
/// `old` reads back as `shape`.
#[cfg(test)]
fn same_json<D>(shape: &D, old: serde_json::Value)
where
    D: EventData + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let new = serde_json::to_value(shape).unwrap();
    assert_eq!(new, old, "{}", std::any::type_name::<D>());
    assert_eq!(new.to_string(), old.to_string());
    let back: D = serde_json::from_value(old).unwrap();
    assert_eq!(&back, shape);
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
        let mut lines = 0;
        for line in BEFORE_TYPES.lines() {
            let e: Event = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), line, "re-serialised");
            let k = EventKind::from_wire(&e.kind).unwrap_or_else(|| panic!("{} is not an EventKind", e.kind));
            assert_eq!(k.as_str(), e.kind);
            kinds.insert(k);
            lines += 1;
            match k {
                EventKind::ServiceStarted => same_through::<ServiceStarted>(&e, line),
                EventKind::AuthLogin | EventKind::AuthLoginFailed | EventKind::AuthLogout => {
                    same_through::<NoData>(&e, line)
                }
                EventKind::DhcpLeaseGranted => same_through::<DhcpLeaseBound>(&e, line),
                EventKind::DnsRecordCreated
                | EventKind::DnsRecordDeleted
                | EventKind::DhcpReservationCreated
                | EventKind::ProfileCreated
                | EventKind::HostCreated => same_through::<Write>(&e, line),
                EventKind::BootIpxeServed => same_through::<IpxeServed>(&e, line),
                EventKind::BootFileServed => same_through::<BootFileServed>(&e, line),
                EventKind::BootPxelinuxServed | EventKind::BootGrubServed => same_through::<MenuServed>(&e, line),
                EventKind::TftpTransferFailed if e.data.get("code").is_some() => same_through::<TftpRefused>(&e, line),
                EventKind::TftpTransferCompleted | EventKind::TftpTransferAborted | EventKind::TftpTransferFailed => {
                    same_through::<TftpTransfer>(&e, line)
                }
                other => panic!("{other} is in the journal but not read back through its shape"),
            }
        }
        assert_eq!(kinds.len(), 16, "{kinds:?}");
        assert_eq!(lines, 18);
    }

    #[test]
    fn every_kind_has_a_shape() {
        let bare: Vec<EventKind> = EventKind::ALL
            .iter()
            .copied()
            .filter(|&k| shapes_of(k).next().is_none())
            .collect();
        assert!(
            bare.is_empty(),
            "kinds without a data shape (give them a struct implementing EventData, list them in \
             NoData::KINDS or Write::KINDS, and add the struct to SHAPES): {bare:?}"
        );
        let names: BTreeSet<&str> = SHAPES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), SHAPES.len(), "a shape is listed twice");
        for (name, kinds) in SHAPES {
            assert!(!kinds.is_empty(), "{name} is carried by no kind");
        }
        // A kind without data, and a write, carries that and nothing else.
        for &k in NoData::KINDS.iter().chain(Write::KINDS) {
            assert_eq!(shapes_of(k).count(), 1, "{k}: {:?}", shapes_of(k).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_unit_shapes_are_null_and_a_write_is_action_before_after() {
        same_json(&NoData, serde_json::Value::Null);
        // What NewEvent::write built: json!({"action": action, "before": j(..), "after": j(..)}).
        let (action, before, after) = ("update", serde_json::json!({"name": "pc7"}), serde_json::Value::Null);
        same_json(
            &Write {
                action: action.into(),
                before: before.clone(),
                after: after.clone(),
            },
            serde_json::json!({"action": action, "before": before, "after": after}),
        );
        assert_eq!(wire_name(&EventKind::AuthLogin.as_str()), "auth.login");
    }

    #[test]
    #[should_panic(expected = "does not carry")]
    #[cfg(debug_assertions)]
    fn a_shape_on_another_kind_is_caught_in_debug_builds() {
        let _ = crate::events::NewEvent::new(EventKind::AuthLogin, "x").with(&ServiceFailed { reason: "r".into() });
    }

    #[test]
    #[should_panic(expected = "does not carry")]
    #[cfg(debug_assertions)]
    fn a_write_of_a_kind_that_is_no_write_is_caught_in_debug_builds() {
        let _ = crate::events::NewEvent::write(EventKind::WolSent, "host", 1, "create", "x", None::<&()>, Some(&1));
    }
}
