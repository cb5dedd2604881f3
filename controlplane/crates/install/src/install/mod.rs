//! Install tasks: a machine installing itself from an answer file. A task binds a machine
//! (a host or a bare MAC), what it boots (an OS image or a profile's `linux` entry), an
//! answer template and options, and moves through [`TaskState`] as the installer fetches
//! its answer and reports back on the public routes (`/api/v1/netboot/answer/{id}`,
//! `/api/v1/netboot/report/{id}/{token}/{kind}`). The iPXE script of a machine with a task
//! follows it (the loop guard, [`service::TaskService::boot_script`]).
//!
//! This module owns the `[install_tasks]` configuration section ([`InstallTasksConfig`])
//! and the task model; [`service`] is the single path for every change. No global state.

pub mod service;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// `[install_tasks]`: deadlines, tokens and the answer's source check.
///
/// ```toml
/// [install_tasks]
/// deadline_mins = 60          # sliding deadline of a started install, extended by every report
/// token_ttl_hours = 6         # the token expires this long after the install starts
/// answer_lease_check = true   # the token only from the machine (its lease, or its first address)
/// token_idle_hours = 24       # the token stops working after this long unused
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct InstallTasksConfig {
    /// Minutes a started install may go without a report before it fails (1-1440); every report
    /// extends it.
    pub deadline_mins: u64,
    /// Hours a task's token stays valid once its install started (1-168); a late `done` is
    /// still accepted.
    pub token_ttl_hours: u64,
    /// Bind a task's token to the machine: only the address holding the MAC's DHCP lease or,
    /// with no lease here, the address its iPXE script was first served to.
    pub answer_lease_check: bool,
    /// Hours a token may go unused before it stops working (1-720).
    pub token_idle_hours: u64,
}

impl Default for InstallTasksConfig {
    fn default() -> Self {
        Self {
            deadline_mins: 60,
            token_ttl_hours: 6,
            answer_lease_check: true,
            token_idle_hours: 24,
        }
    }
}

impl InstallTasksConfig {
    /// Checks the ranges.
    ///
    /// # Errors
    /// A message naming the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=1440).contains(&self.deadline_mins) {
            anyhow::bail!("[install_tasks] deadline_mins must be 1-1440");
        }
        if !(1..=720).contains(&self.token_idle_hours) {
            anyhow::bail!("[install_tasks] token_idle_hours must be 1-720");
        }
        if !(1..=168).contains(&self.token_ttl_hours) {
            anyhow::bail!("[install_tasks] token_ttl_hours must be 1-168");
        }
        Ok(())
    }
}

/// State of an install task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Waiting for the machine to boot and fetch its answer file.
    Pending,
    /// The answer file was fetched; the installer runs.
    Installing,
    /// The installer reported done: the disk is written. The machine boots locally.
    Installed,
    /// The installed system's first boot reported in.
    Done,
    /// Reported failed, or the deadline passed; see `reason`.
    Failed,
    /// Cancelled by an operator.
    Cancelled,
}

impl TaskState {
    /// The state's name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Installing => "installing",
            Self::Installed => "installed",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task has ended: its token is revoked and reports are ignored.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }

    /// Whether the machine should boot the installer (`pending`, `installing`).
    pub fn active(self) -> bool {
        matches!(self, Self::Pending | Self::Installing)
    }

    /// The transitions allowed: `pending` → `installing` (answer fetched) → `installed`
    /// (done reported) → `done` (first boot reported); `pending`/`installing` →
    /// `failed`; `pending`/`installing`/`installed` → `cancelled`; `failed` → `pending`
    /// (retry). `installing` → `installing` is a progress report (not a transition).
    pub fn can_become(self, to: Self) -> bool {
        use TaskState::*;
        matches!(
            (self, to),
            (Pending, Installing | Failed | Cancelled)
                | (Installing, Installed | Failed | Cancelled)
                | (Installed, Done | Cancelled)
                | (Failed, Pending)
        )
    }
}

/// What an installer reports (`POST /netboot/report/{id}/{token}/{kind}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportKind {
    /// A step of the install (the body is its message); extends the deadline.
    Progress,
    /// The install finished: `installing` → `installed`.
    Done,
    /// The install failed (the body is the installer's log, last 64 KiB kept).
    Failed,
    /// The installed system booted: `installed` → `done`.
    Booted,
}

impl ReportKind {
    /// Parses a path segment.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "progress" => Some(Self::Progress),
            "done" => Some(Self::Done),
            "failed" => Some(Self::Failed),
            "booted" => Some(Self::Booted),
            _ => None,
        }
    }
}

/// One report kept with its task (the last [`MAX_REPORTS`]).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Report {
    /// What was reported.
    pub kind: ReportKind,
    /// The message or log (at most [`MAX_REPORT_BYTES`]: the tail is kept).
    pub message: String,
    /// The reporting address.
    pub from: Option<String>,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
}

/// Reports kept per task.
pub const MAX_REPORTS: usize = 50;
/// Longest report body kept, in bytes (the tail of a longer one).
pub const MAX_REPORT_BYTES: usize = 64 << 10;

/// What the task boots: an OS image's detected kernel, or a profile's `linux` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum TaskSource {
    /// An OS image (its detected kernel, initrds and arguments, served at
    /// `/boot/images/<id>/`).
    Image {
        /// The image id.
        image_id: u64,
    },
    /// Entry `entry` (0-based; default the first `linux` entry) of a profile.
    Profile {
        /// The profile id.
        profile_id: u64,
        /// Index of a `linux` entry.
        #[serde(default)]
        entry: Option<usize>,
    },
}

/// An install task as stored (the token included: never answered as is; see
/// [`TaskView`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstallTask {
    /// Id.
    pub id: u64,
    /// The machine's MAC (lower case, colons).
    pub mac: String,
    /// Its host, when the task names one.
    pub host_id: Option<u64>,
    /// What it boots.
    pub source: TaskSource,
    /// The answer template.
    pub template_id: u64,
    /// Extra kernel arguments.
    #[serde(default)]
    pub extra_cmdline: String,
    /// Free text.
    #[serde(default)]
    pub comment: String,
    /// State.
    pub state: TaskState,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    /// Lower-case hex, 256 random bits.
    pub token: String,
    /// When the token stops being accepted (set when the install starts).
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub token_expires_at: Option<OffsetDateTime>,
    /// When the token was last accepted (created: the task's creation); after
    /// `[install_tasks] token_idle_hours` without use it stops working.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub token_used_at: Option<OffsetDateTime>,
    /// The address the task's iPXE script was first served to while Bootlane held no DHCP
    /// lease of the MAC (proxyDHCP, or another DHCP server): the only address that may use
    /// the token then. Cleared by a retry.
    #[serde(default)]
    pub bound_address: Option<IpAddr>,
    /// When an `installing` task fails without a report.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub deadline_at: Option<OffsetDateTime>,
    /// How many times the answer was served.
    #[serde(default)]
    pub answer_fetches: u32,
    /// The last reports, oldest first.
    #[serde(default)]
    pub reports: Vec<Report>,
    /// Creation.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When it became `installing`.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub started_at: Option<OffsetDateTime>,
    /// When it reached a final state or `installed`.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub finished_at: Option<OffsetDateTime>,
}

bootlane_core::store::entity!(InstallTask, "install_tasks");

/// An install task as the API answers it: no token; the answer and report URLs are
/// shown without it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TaskView {
    /// Id.
    pub id: u64,
    /// MAC.
    pub mac: String,
    /// Host id.
    pub host_id: Option<u64>,
    /// Host name, when it has a host.
    pub host_name: Option<String>,
    /// What it boots.
    pub source: TaskSource,
    /// Answer template id.
    pub template_id: u64,
    /// Extra kernel arguments.
    pub extra_cmdline: String,
    /// Free text.
    pub comment: String,
    /// State.
    pub state: TaskState,
    /// Why it failed or was cancelled.
    pub reason: Option<String>,
    /// When the token expires (once started).
    #[schema(value_type = Option<String>, format = DateTime)]
    #[serde(with = "time::serde::rfc3339::option")]
    pub token_expires_at: Option<OffsetDateTime>,
    /// The address the token is bound to when Bootlane holds no DHCP lease of the MAC
    /// (the first address its iPXE script was served to); `null` otherwise.
    #[schema(value_type = Option<String>)]
    pub bound_address: Option<IpAddr>,
    /// Deadline of a running install.
    #[schema(value_type = Option<String>, format = DateTime)]
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline_at: Option<OffsetDateTime>,
    /// Times the answer was served.
    pub answer_fetches: u32,
    /// Last reports, oldest first.
    pub reports: Vec<Report>,
    /// Creation, RFC 3339.
    #[schema(value_type = String, format = DateTime)]
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[schema(value_type = String, format = DateTime)]
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Start of the install.
    #[schema(value_type = Option<String>, format = DateTime)]
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    /// End of the install.
    #[schema(value_type = Option<String>, format = DateTime)]
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

/// `POST /netboot/tasks` and `PUT /netboot/tasks/{id}` body. On PUT (only while
/// `pending` or `failed`) absent fields are kept.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskInput {
    /// The host (its MAC is used); or give `mac`.
    pub host_id: Option<u64>,
    /// A MAC without a host (`aa:bb:cc:dd:ee:ff` or `-`-separated).
    pub mac: Option<String>,
    /// What it boots.
    pub source: Option<TaskSource>,
    /// The answer template.
    pub template_id: Option<u64>,
    /// Extra kernel arguments (one line, at most 1024 bytes).
    pub extra_cmdline: Option<String>,
    /// Free text (at most 1024 bytes).
    pub comment: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::TaskState::{self, *};

    const ALL: [TaskState; 6] = [Pending, Installing, Installed, Done, Failed, Cancelled];

    #[test]
    fn every_transition_allowed_and_refused() {
        let allowed = [
            (Pending, Installing),
            (Pending, Failed),
            (Pending, Cancelled),
            (Installing, Installed),
            (Installing, Failed),
            (Installing, Cancelled),
            (Installed, Done),
            (Installed, Cancelled),
            (Failed, Pending),
        ];
        for from in ALL {
            for to in ALL {
                assert_eq!(
                    from.can_become(to),
                    allowed.contains(&(from, to)),
                    "{} -> {}",
                    from.as_str(),
                    to.as_str()
                );
            }
        }
        assert!(Done.is_final() && Failed.is_final() && Cancelled.is_final());
        assert!(!Installed.is_final() && !Pending.is_final() && !Installing.is_final());
        assert!(Pending.active() && Installing.active() && !Installed.active());
    }
}
