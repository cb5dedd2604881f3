//! The `data` of unattended installs and what they draw on: install tasks and their tokens,
//! post-install scripts, baselines and their runs, answer templates and the site install
//! settings, netboot overlays and the netboot cache, and items imported from the community
//! catalog.

use serde::{Deserialize, Serialize};

use super::EventData;
use crate::events::EventKind;

/// `install.task.created|updated|deleted`: an install task after (or, deleted, before) the
/// change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTaskChanged {
    /// The task's id.
    pub id: u64,
    /// The machine's MAC, lower-case colon form.
    pub mac: String,
    /// The task's state: `pending`, `installing`, `installed`, `done`, `failed` or
    /// `cancelled`.
    pub state: String,
    /// Why it failed or was cancelled, else `null`.
    pub reason: Option<String>,
}

impl EventData for InstallTaskChanged {
    const KINDS: &'static [EventKind] = &[
        EventKind::InstallTaskCreated,
        EventKind::InstallTaskDeleted,
        EventKind::InstallTaskUpdated,
    ];
}

/// `install.task.state`: an install task moved from one state to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTaskStateChanged {
    /// The task's id.
    pub id: u64,
    /// The machine's MAC, lower-case colon form.
    pub mac: String,
    /// The state before (see [`InstallTaskChanged::state`] for the names).
    pub from: String,
    /// The state after.
    pub state: String,
    /// Why it failed or was cancelled, else `null`.
    pub reason: Option<String>,
}

impl EventData for InstallTaskStateChanged {
    const KINDS: &'static [EventKind] = &[EventKind::InstallTaskState];
}

/// `install.task.report`: what an installer reported on its task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTaskReport {
    /// The task's id.
    pub id: u64,
    /// The machine's MAC, lower-case colon form.
    pub mac: String,
    /// The report's kind: `progress`, `done`, `failed` or `booted`.
    pub kind: String,
    /// The last line of the report's body, at most 200 characters.
    pub message: String,
}

impl EventData for InstallTaskReport {
    const KINDS: &'static [EventKind] = &[EventKind::InstallTaskReport];
}

/// `install.token.refused`: a request with a bad install token (never saying whether the
/// task exists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTokenRefused {
    /// What was asked: `answer`, `report`, or what a pull names (`bundle`, ...).
    pub what: String,
    /// The task id the request named.
    pub task_id: u64,
}

impl EventData for InstallTokenRefused {
    const KINDS: &'static [EventKind] = &[EventKind::InstallTokenRefused];
}

/// `script.created|updated|deleted|rolled_back`: a post-install script after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptChanged {
    /// The script's name.
    pub name: String,
    /// Its interpreter: `sh`, `bash`, `python`, `powershell` or `cmd`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its version (1 on creation, +1 on every change).
    pub version: u32,
}

impl EventData for ScriptChanged {
    const KINDS: &'static [EventKind] = &[
        EventKind::ScriptCreated,
        EventKind::ScriptDeleted,
        EventKind::ScriptRolledBack,
        EventKind::ScriptUpdated,
    ];
}

/// `baseline.created|updated|deleted`: a script baseline after the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineChanged {
    /// The baseline's name.
    pub name: String,
    /// Its scripts' ids, in run order.
    pub script_ids: Vec<u64>,
    /// True for the baseline of machines that name none.
    pub is_default: bool,
}

impl EventData for BaselineChanged {
    const KINDS: &'static [EventKind] = &[
        EventKind::BaselineCreated,
        EventKind::BaselineDeleted,
        EventKind::BaselineUpdated,
    ];
}

/// `script.run.succeeded|failed`: a machine reported running a script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRunReported {
    /// The machine's MAC, lower-case colon form.
    pub mac: String,
    /// The registered host with that MAC, else `null`.
    pub host_id: Option<u64>,
    /// The install task the report came with.
    pub task_id: u64,
    /// The script's name.
    pub script: String,
    /// The script's exit code (0 for success).
    pub exit_code: i32,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// The id of the stored run report.
    pub report_id: u64,
}

impl EventData for ScriptRunReported {
    const KINDS: &'static [EventKind] = &[EventKind::ScriptRunFailed, EventKind::ScriptRunSucceeded];
}

/// `answer_settings.updated`: the site install settings after the change (no password).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerSettingsUpdated {
    /// Time zone, e.g. `Europe/Berlin`.
    pub timezone: String,
    /// Locale, e.g. `en_US.UTF-8`.
    pub locale: String,
    /// Keyboard layout, e.g. `us`.
    pub keyboard: String,
    /// How many SSH public keys are authorised.
    pub ssh_keys: u64,
    /// The package mirror URL, else `null` (each distribution's own).
    pub mirror: Option<String>,
    /// True when this change set the root password.
    pub root_password_changed: bool,
}

impl EventData for AnswerSettingsUpdated {
    const KINDS: &'static [EventKind] = &[EventKind::AnswerSettingsUpdated];
}

/// `answer_template.created|updated|deleted|rolled_back`: an answer template after the
/// change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerTemplateChanged {
    /// The template's name.
    pub name: String,
    /// Its format: `preseed`, `kickstart`, `autoinstall`, `cloud-config`, `autoyast`,
    /// `autounattend` or `ignition`.
    pub format: String,
    /// Its version (1 on creation, +1 on every change of format or content).
    pub version: u32,
}

impl EventData for AnswerTemplateChanged {
    const KINDS: &'static [EventKind] = &[
        EventKind::AnswerTemplateCreated,
        EventKind::AnswerTemplateDeleted,
        EventKind::AnswerTemplateRolledBack,
        EventKind::AnswerTemplateUpdated,
    ];
}

/// `netboot.overlay.updated`: the overlay stored for a distribution (the resource id names
/// the distribution).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetbootOverlay {
    /// The mirror replacing the catalog's (`http(s)://...`), else `null`.
    pub mirror: Option<String>,
    /// Kernel arguments appended to the catalog's (may be empty).
    pub extra_args: String,
    /// Initrd URLs appended after the catalog's.
    pub extra_initrds: Vec<String>,
}

impl EventData for NetbootOverlay {
    const KINDS: &'static [EventKind] = &[EventKind::NetbootOverlayUpdated];
}

/// `netboot.cache.filled`: a netboot file fetched into the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetbootCacheFilled {
    /// The file's path under the boot root (`netboot-cache/<distro>/<version>/<arch>/<name>`).
    pub path: String,
    /// The URL it was fetched from.
    pub upstream: String,
    /// Its size in bytes.
    pub bytes: u64,
}

impl EventData for NetbootCacheFilled {
    const KINDS: &'static [EventKind] = &[EventKind::NetbootCacheFilled];
}

/// `netboot.cache.fetch_failed`: a netboot file that could not be fetched into the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetbootCacheFetchFailed {
    /// The file's path under the boot root.
    pub path: String,
    /// The URL it was to be fetched from.
    pub upstream: String,
    /// What failed.
    pub error: String,
}

impl EventData for NetbootCacheFetchFailed {
    const KINDS: &'static [EventKind] = &[EventKind::NetbootCacheFetchFailed];
}

/// `store.item.imported`: an item of the community catalog imported (what
/// `POST /store/import` answers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreItemImported {
    /// The item's type: `answer-template`, `profile`, `netboot`, `script` or `baseline`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The item's id in the catalog.
    pub id: String,
    /// The catalog source's name (`local` for an uploaded bundle).
    pub source: String,
    /// The item's SHA-256 (checked), lower-case hex.
    pub sha256: String,
    /// What was installed (a baseline: its scripts, then itself).
    pub installed: Vec<ImportedResource>,
}

impl EventData for StoreItemImported {
    const KINDS: &'static [EventKind] = &[EventKind::StoreItemImported];
}

/// One resource an import created or replaced ([`StoreItemImported::installed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedResource {
    /// The resource kind: `answer_template`, `profile`, `netboot_overlay`, `script` or
    /// `baseline`.
    pub kind: String,
    /// Its id.
    pub id: ImportedId,
    /// The name it is installed under.
    pub name: String,
    /// `created` or `replaced`.
    pub action: String,
}

/// The id of an imported resource ([`ImportedResource::id`]): a number, or for a netboot
/// overlay the distribution's id (a string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ImportedId {
    /// A stored resource's numeric id.
    Number(u64),
    /// A distribution id (`debian-12`, ...).
    Name(String),
}

impl From<u64> for ImportedId {
    fn from(id: u64) -> Self {
        Self::Number(id)
    }
}

impl From<String> for ImportedId {
    fn from(id: String) -> Self {
        Self::Name(id)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    #[test]
    fn install_task_shapes_write_what_the_task_service_wrote() {
        let (id, mac) = (7u64, "52:54:00:77:00:07");
        for reason in [None, Some("deadline passed".to_string())] {
            same_json(
                &InstallTaskChanged {
                    id,
                    mac: mac.into(),
                    state: "failed".into(),
                    reason: reason.clone(),
                },
                json!({"id": id, "mac": mac, "state": "failed", "reason": reason}),
            );
            same_json(
                &InstallTaskStateChanged {
                    id,
                    mac: mac.into(),
                    from: "installing".into(),
                    state: "failed".into(),
                    reason: reason.clone(),
                },
                json!({"id": id, "mac": mac, "from": "installing", "state": "failed", "reason": reason}),
            );
        }
        let short = "Installing grub".to_string();
        same_json(
            &InstallTaskReport {
                id,
                mac: mac.into(),
                kind: "progress".into(),
                message: short.clone(),
            },
            json!({"id": id, "mac": mac, "kind": "progress", "message": short}),
        );
        same_json(
            &InstallTokenRefused {
                what: "answer".into(),
                task_id: id,
            },
            json!({"what": "answer", "task_id": id}),
        );
    }

    #[test]
    fn script_shapes_write_what_the_script_service_wrote() {
        let (name, version) = ("motd", 3u32);
        same_json(
            &ScriptChanged {
                name: name.into(),
                kind: "bash".into(),
                version,
            },
            json!({"name": name, "type": "bash", "version": version}),
        );
        let script_ids = vec![3u64, 1];
        same_json(
            &BaselineChanged {
                name: "base".into(),
                script_ids: script_ids.clone(),
                is_default: true,
            },
            json!({"name": "base", "script_ids": script_ids, "is_default": true}),
        );
        for host_id in [Some(4u64), None] {
            let (task_id, exit_code, duration_ms, report_id) = (7u64, -1i32, 1500u64, 99u64);
            same_json(
                &ScriptRunReported {
                    mac: "52:54:00:77:00:07".into(),
                    host_id,
                    task_id,
                    script: name.into(),
                    exit_code,
                    duration_ms,
                    report_id,
                },
                json!({
                    "mac": "52:54:00:77:00:07", "host_id": host_id, "task_id": task_id, "script": name,
                    "exit_code": exit_code, "duration_ms": duration_ms, "report_id": report_id,
                }),
            );
        }
    }

    #[test]
    fn answer_shapes_write_what_the_template_service_wrote() {
        let keys = vec!["ssh-ed25519 AAAA a@b".to_string(); 2];
        for mirror in [None, Some("http://mirror.lab/debian".to_string())] {
            same_json(
                &AnswerSettingsUpdated {
                    timezone: "UTC".into(),
                    locale: "en_US.UTF-8".into(),
                    keyboard: "us".into(),
                    ssh_keys: 2,
                    mirror: mirror.clone(),
                    root_password_changed: false,
                },
                json!({
                    "timezone": "UTC", "locale": "en_US.UTF-8", "keyboard": "us",
                    "ssh_keys": keys.len(), "mirror": mirror,
                    "root_password_changed": false,
                }),
            );
        }
        same_json(
            &AnswerTemplateChanged {
                name: "web".into(),
                format: "cloud-config".into(),
                version: 2,
            },
            json!({"name": "web", "format": "cloud-config", "version": 2u32}),
        );
    }

    #[test]
    fn netboot_and_catalog_shapes_write_what_their_services_wrote() {
        // The serialised Overlay.
        same_json(
            &NetbootOverlay {
                mirror: None,
                extra_args: "console=ttyS0".into(),
                extra_initrds: vec![],
            },
            json!({"mirror": null, "extra_args": "console=ttyS0", "extra_initrds": []}),
        );
        let (rel, upstream) = ("netboot-cache/debian/12/amd64/linux", "http://deb.example/linux");
        same_json(
            &NetbootCacheFilled {
                path: rel.into(),
                upstream: upstream.into(),
                bytes: 1234,
            },
            json!({"path": rel, "upstream": upstream, "bytes": 1234u64}),
        );
        same_json(
            &NetbootCacheFetchFailed {
                path: rel.into(),
                upstream: upstream.into(),
                error: "404".into(),
            },
            json!({"path": rel, "upstream": upstream, "error": "404".to_string()}),
        );
        // The serialised ImportResult: `type` kebab-case, ids numbers or a distribution id.
        same_json(
            &StoreItemImported {
                kind: "answer-template".into(),
                id: "web".into(),
                source: "local".into(),
                sha256: "ab".repeat(32),
                installed: vec![
                    ImportedResource {
                        kind: "answer_template".into(),
                        id: 5.into(),
                        name: "web".into(),
                        action: "created".into(),
                    },
                    ImportedResource {
                        kind: "netboot_overlay".into(),
                        id: "debian-12".to_string().into(),
                        name: "debian-12".into(),
                        action: "replaced".into(),
                    },
                ],
            },
            json!({
                "type": "answer-template", "id": "web", "source": "local", "sha256": "ab".repeat(32),
                "installed": [
                    {"kind": "answer_template", "id": 5, "name": "web", "action": "created"},
                    {"kind": "netboot_overlay", "id": "debian-12", "name": "debian-12", "action": "replaced"},
                ],
            }),
        );
    }
}
