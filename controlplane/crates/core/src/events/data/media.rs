//! The `data` of OS image events (inspection, extraction, upload and extraction progress)
//! and of NFS exports changed or not applied. Image uploads, changes and deletions are
//! [`Write`](super::Write)s; mounting and unmounting carry no data.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::EventData;
use crate::events::EventKind;

/// `os_image.ready|failed`: the outcome of an image's inspection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsImageInspected {
    /// The image's state afterwards: `ready` or `failed`.
    pub state: String,
    /// Why it failed, else `null`.
    pub reason: Option<String>,
    /// What the image is (`ready` only; else `null`).
    pub detection: Option<ImageDetection>,
}

impl EventData for OsImageInspected {
    const KINDS: &'static [EventKind] = &[EventKind::OsImageFailed, EventKind::OsImageReady];
}

/// What inspection found in an image ([`OsImageInspected::detection`]). Paths are relative to
/// the image's root, without a leading `/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageDetection {
    /// Distribution family: `debian`, `ubuntu`, `rhel`, `fedora`, `rocky`, `alma`, `centos`,
    /// `opensuse`, `sles`, `arch`, `alpine`, `windows` or `unknown`.
    pub family: String,
    /// Product name as the image states it, else `null`.
    pub product: Option<String>,
    /// Version, e.g. `12.5.0`, else `null`.
    pub version: Option<String>,
    /// Architecture in Linux spelling (`x86_64`, `aarch64`, ...), else `null`.
    pub arch: Option<String>,
    /// How the image boots: `linux` or `wimboot`.
    pub boot_method: String,
    /// Kernel path, else `null` (wimboot, or nothing found).
    pub kernel: Option<String>,
    /// Initrd paths in load order (for wimboot, the files wimboot is given).
    pub initrds: Vec<String>,
    /// Default kernel arguments, else `null`.
    pub cmdline: Option<String>,
    /// True when the layout was not recognised and kernel and initrds come from a generic
    /// scan.
    pub generic: bool,
    /// The generic scan's kernels with their initrds (only when `generic`).
    pub candidates: Vec<ImageKernel>,
    /// Remarks for the operator.
    pub notes: Vec<String>,
}

/// A kernel the generic scan found, with the initrds next to it ([`ImageDetection::candidates`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageKernel {
    /// Kernel path inside the image.
    pub kernel: String,
    /// Initrd paths in the same directory (possibly none).
    pub initrds: Vec<String>,
}

/// `os_image.extracted|extract.failed`: the image's extraction as stored afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsImageExtraction {
    /// The extracted tree (this extraction's, or the earlier one's after a failure); `null`
    /// when there is none.
    pub extracted: Option<ExtractedTree>,
    /// Why the extraction failed, else `null`.
    pub extract_error: Option<String>,
}

impl EventData for OsImageExtraction {
    const KINDS: &'static [EventKind] = &[EventKind::OsImageExtractFailed, EventKind::OsImageExtracted];
}

/// An image's extracted tree ([`OsImageExtraction::extracted`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractedTree {
    /// Directory relative to the boot root: `images/<id>`.
    pub path: String,
    /// Files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// When it finished, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// `os_image.upload.progress|extract.progress`: bytes done so far, every 5 % of the total
/// (every 64 MiB of an upload of unannounced length).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageProgress {
    /// Bytes received (upload) or written (extraction) so far.
    pub bytes: u64,
    /// The total in bytes; `null` for an upload that announced no length.
    pub total: Option<u64>,
    /// `bytes` in percent of `total` (0-100, rounded down); `null` when `total` is.
    pub percent: Option<u64>,
}

impl EventData for ImageProgress {
    const KINDS: &'static [EventKind] = &[EventKind::OsImageExtractProgress, EventKind::OsImageUploadProgress];
}

/// `nfs.apply.failed`: NFS exports that could not be applied (nothing was stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NfsApplyFailed {
    /// Why (writing the exports file, or `exportfs` failing).
    pub error: String,
    /// The settings that were to be applied.
    pub wanted: NfsExports,
}

impl EventData for NfsApplyFailed {
    const KINDS: &'static [EventKind] = &[EventKind::NfsApplyFailed];
}

/// `nfs.updated`: the NFS settings changed. Shaped as a write (`action`, `before`, `after`),
/// so it goes into the audit log, with whether the exports were applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NfsUpdated {
    /// Always `update`.
    pub action: String,
    /// The settings before.
    pub before: NfsExports,
    /// The settings after.
    pub after: NfsExports,
    /// True when the exports were applied (`exportfs` ran); false when only stored because
    /// `exportfs` is missing.
    pub applied: bool,
}

impl EventData for NfsUpdated {
    const KINDS: &'static [EventKind] = &[EventKind::NfsUpdated];
}

/// NFS settings ([`NfsApplyFailed::wanted`], [`NfsUpdated`]), as `GET /nfs` shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NfsExports {
    /// Whether Bootlane's exports file exists (and so its exports are loaded).
    pub enabled: bool,
    /// The exports.
    pub exports: Vec<NfsExport>,
}

/// One exported directory ([`NfsExports::exports`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NfsExport {
    /// The directory relative to the boot root (`""` is the root itself).
    pub path: String,
    /// Who may mount it: networks (`10.0.0.0/24`) or single addresses.
    pub clients: Vec<String>,
    /// exportfs options applied to every client, e.g. `ro`, `no_subtree_check`.
    pub options: Vec<String>,
    /// Free text written above the export in the file.
    pub comment: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    fn at() -> OffsetDateTime {
        OffsetDateTime::parse("2026-11-28T10:34:11.5Z", &time::format_description::well_known::Rfc3339).unwrap()
    }

    #[test]
    fn inspection_shapes_write_what_the_image_service_wrote() {
        // images.rs: json!({"state": i.state, "reason": i.reason, "detection": i.detection}),
        // `detection` the serialised Detection.
        let detection = json!({
            "family": "ubuntu", "product": "Ubuntu-Server 24.04 LTS", "version": "24.04", "arch": "x86_64",
            "boot_method": "linux", "kernel": "casper/vmlinuz", "initrds": ["casper/initrd"],
            "cmdline": "ip=dhcp", "generic": false,
            "candidates": [{"kernel": "casper/vmlinuz", "initrds": ["casper/initrd"]}], "notes": [],
        });
        let ready = OsImageInspected {
            state: "ready".into(),
            reason: None,
            detection: Some(ImageDetection {
                family: "ubuntu".into(),
                product: Some("Ubuntu-Server 24.04 LTS".into()),
                version: Some("24.04".into()),
                arch: Some("x86_64".into()),
                boot_method: "linux".into(),
                kernel: Some("casper/vmlinuz".into()),
                initrds: vec!["casper/initrd".into()],
                cmdline: Some("ip=dhcp".into()),
                generic: false,
                candidates: vec![ImageKernel {
                    kernel: "casper/vmlinuz".into(),
                    initrds: vec!["casper/initrd".into()],
                }],
                notes: vec![],
            }),
        };
        same_json(
            &ready,
            json!({"state": "ready", "reason": None::<String>, "detection": detection}),
        );
        let failed = OsImageInspected {
            state: "failed".into(),
            reason: Some("not an ISO 9660 or UDF image".into()),
            detection: None,
        };
        same_json(
            &failed,
            json!({"state": "failed", "reason": "not an ISO 9660 or UDF image", "detection": null}),
        );
    }

    #[test]
    fn extraction_and_progress_shapes_write_what_the_image_service_wrote() {
        // json!({"extracted": after.extracted, "extract_error": after.extract_error}).
        let extracted = json!({"path": "images/3", "files": 812usize, "bytes": 3_000_000u64,
            "at": "2026-11-28T10:34:11.5Z"});
        same_json(
            &OsImageExtraction {
                extracted: Some(ExtractedTree {
                    path: "images/3".into(),
                    files: 812,
                    bytes: 3_000_000,
                    at: at(),
                }),
                extract_error: None,
            },
            json!({"extracted": extracted, "extract_error": None::<String>}),
        );
        same_json(
            &OsImageExtraction {
                extracted: None,
                extract_error: Some("no space left".into()),
            },
            json!({"extracted": null, "extract_error": "no space left"}),
        );
        // Extraction: json!({"bytes": done, "total": total, "percent": pct}), all u64.
        let (done, total, pct) = (500u64, 1000u64, 50u64);
        same_json(
            &ImageProgress {
                bytes: done,
                total: Some(total),
                percent: Some(pct),
            },
            json!({"bytes": done, "total": total, "percent": pct}),
        );
        // Upload: json!({"bytes": written, "total": self.total, "percent": percent}).
        let (written, total, percent) = (64u64 << 20, None::<u64>, None::<u64>);
        same_json(
            &ImageProgress {
                bytes: written,
                total,
                percent,
            },
            json!({"bytes": written, "total": total, "percent": percent}),
        );
    }

    #[test]
    fn an_nfs_failure_writes_what_the_nfs_service_wrote() {
        // json!({ "error": e.to_string(), "wanted": &new }), `new` the serialised NfsSettings.
        let wanted = json!({"enabled": true, "exports": [{"path": "images/3", "clients": ["10.0.0.0/24"],
            "options": ["ro", "no_subtree_check"], "comment": ""}]});
        same_json(
            &NfsApplyFailed {
                error: "exportfs -ra failed".into(),
                wanted: NfsExports {
                    enabled: true,
                    exports: vec![NfsExport {
                        path: "images/3".into(),
                        clients: vec!["10.0.0.0/24".into()],
                        options: vec!["ro".into(), "no_subtree_check".into()],
                        comment: String::new(),
                    }],
                },
            },
            json!({ "error": "exportfs -ra failed", "wanted": &wanted }),
        );
        same_json(
            &NfsApplyFailed {
                error: "e".into(),
                wanted: NfsExports::default(),
            },
            json!({"error": "e", "wanted": {"enabled": false, "exports": []}}),
        );
    }

    #[test]
    fn an_nfs_change_writes_what_the_nfs_service_wrote() {
        // NewEvent::write(NfsUpdated, .., "update", .., Some(&before), Some(&new)), then
        // `applied` added to its data.
        let before = json!({"enabled": false, "exports": []});
        let after = json!({"enabled": true, "exports": [{"path": "", "clients": ["10.0.0.7"],
            "options": ["ro"], "comment": "lab"}]});
        let mut old = json!({"action": "update", "before": before, "after": after});
        if let serde_json::Value::Object(m) = &mut old {
            m.insert("applied".into(), true.into());
        }
        same_json(
            &NfsUpdated {
                action: "update".into(),
                before: NfsExports::default(),
                after: NfsExports {
                    enabled: true,
                    exports: vec![NfsExport {
                        path: String::new(),
                        clients: vec!["10.0.0.7".into()],
                        options: vec!["ro".into()],
                        comment: "lab".into(),
                    }],
                },
                applied: true,
            },
            old,
        );
    }
}
