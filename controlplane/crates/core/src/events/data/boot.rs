//! The `data` of what the boot path serves and refuses: TFTP transfers, iPXE scripts,
//! PXELINUX and GRUB menus, HTTP boot files, and clients refused by access control.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::EventData;
use crate::events::EventKind;

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
        /// What the script does: `install` (the installer), `local` (the local disk,
        /// the task is over) or `hold` (the task failed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<String>,
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

/// `access.refused`: a client access control turned away (at most one event per device per
/// minute; `suppressed` counts the refusals held back since the last one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessRefused {
    /// The client's MAC, lower-case colon form, when known; else `null`.
    pub mac: Option<String>,
    /// The client's address (or the one it asked for), when known; else `null`.
    pub ip: Option<IpAddr>,
    /// The protocol of the request: `dhcp`, `proxydhcp`, `tftp`, `http` or `ipxe`.
    pub protocol: String,
    /// DHCP option 93 (client architecture), when sent; else `null`.
    pub arch: Option<u16>,
    /// DHCP option 60 (vendor class, lossy UTF-8, at most 255 bytes), when sent; else `null`.
    pub vendor_class: Option<String>,
    /// Refusals of this client held back since the last event.
    pub suppressed: u64,
    /// Why: `blacklisted`, `not_whitelisted` or `unknown_client` (whitelist mode and a MAC
    /// no DHCP lease names).
    pub reason: String,
    /// The id of the matching blacklist entry (`blacklisted` only; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<u64>,
}

impl EventData for AccessRefused {
    const KINDS: &'static [EventKind] = &[EventKind::AccessRefused];
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    #[test]
    fn boot_shapes_write_what_their_publishers_wrote() {
        same_json(
            &TftpTransfer {
                file: "undionly.kpxe".into(),
                client: "127.0.0.1:51115".into(),
                bytes: 1500,
                duration_ms: 3,
                outcome: "Complete".into(),
            },
            json!({"bytes": 1500, "client": "127.0.0.1:51115", "duration_ms": 3, "file": "undionly.kpxe", "outcome": "Complete"}),
        );
        same_json(
            &TftpRefused {
                file: "missing.efi".into(),
                client: "127.0.0.1:41233".into(),
                error: "file not found".into(),
                code: 1,
            },
            json!({"client": "127.0.0.1:41233", "code": 1, "error": "file not found", "file": "missing.efi"}),
        );
        same_json(
            &IpxeServed::Profile {
                mac: "52:54:00:77:00:07".into(),
                profile: "Default".into(),
                host: None,
            },
            json!({"host": null, "mac": "52:54:00:77:00:07", "profile": "Default"}),
        );
        same_json(
            &BootFileServed {
                file: "images/3/casper/vmlinuz".into(),
                bytes: 10,
                image: Some(3),
                status: 206,
            },
            json!({"bytes": 10, "file": "images/3/casper/vmlinuz", "image": 3, "status": 206}),
        );
    }

    #[test]
    fn a_refusal_writes_what_the_access_service_wrote() {
        // service.rs built json!({"mac", "ip", "protocol", "arch", "vendor_class",
        // "suppressed"}) and added the fields of the serialised Reason, a `reason` tag
        // (snake_case) and, for a blacklist entry, its `entry`.
        let ip: IpAddr = "10.0.0.7".parse().unwrap();
        let blacklisted = AccessRefused {
            mac: Some("52:54:00:aa:00:01".into()),
            ip: Some(ip),
            protocol: "proxydhcp".into(),
            arch: Some(7),
            vendor_class: Some("PXEClient:Arch:00007".into()),
            suppressed: 2,
            reason: "blacklisted".into(),
            entry: Some(4),
        };
        same_json(
            &blacklisted,
            json!({
                "mac": Some("52:54:00:aa:00:01"), "ip": Some(ip.to_string()), "protocol": "proxydhcp",
                "arch": Some(7u16), "vendor_class": Some("PXEClient:Arch:00007"), "suppressed": 2u64,
                "reason": "blacklisted", "entry": 4u64,
            }),
        );
        let unknown = AccessRefused {
            mac: None,
            ip: Some(ip),
            protocol: "tftp".into(),
            arch: None,
            vendor_class: None,
            suppressed: 0,
            reason: "unknown_client".into(),
            entry: None,
        };
        same_json(
            &unknown,
            json!({
                "mac": None::<String>, "ip": Some(ip.to_string()), "protocol": "tftp", "arch": None::<u16>,
                "vendor_class": None::<String>, "suppressed": 0u64, "reason": "unknown_client",
            }),
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
            action: None,
        })
        .unwrap();
        assert_eq!(v, install);
        let local = serde_json::json!({"mac": "52:54:00:00:00:01", "install_task": true, "action": "local"});
        assert!(matches!(
            serde_json::from_value::<IpxeServed>(local).unwrap(),
            IpxeServed::InstallTask { action: Some(a), .. } if a == "local"
        ));
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
}
