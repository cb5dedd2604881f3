//! What a boot session is on the wire and in the journal: [`BootSession`] with its
//! [`BootStep`]s, its [`SessionState`] and its [`Verdict`].

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// The most steps one session keeps; later ones are counted in
/// [`BootSession::steps_dropped`].
pub const MAX_STEPS: usize = 200;

/// Where a boot attempt got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Steps are still coming and nothing went wrong so far.
    InProgress,
    /// The kernel and initrd were sent (and the installer fetched its answer file, when
    /// it has one): the installer runs.
    HandedToInstaller,
    /// The installer reported the installation done (or the installed system booted).
    Installed,
    /// The boot menu's choice was the local disk.
    BootedLocalDisk,
    /// The boot stopped; [`BootSession::reason`] says where and why.
    Stalled,
}

impl Verdict {
    /// The wire name (`in_progress`, `stalled`, ...), also the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InProgress => "in_progress",
            Self::HandedToInstaller => "handed_to_installer",
            Self::Installed => "installed",
            Self::BootedLocalDisk => "booted_local_disk",
            Self::Stalled => "stalled",
        }
    }
}

/// Whether a session may still get steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Steps may still come.
    Open,
    /// Over: quiet for `[boot_sessions] quiet_secs`, or a new boot of the machine began.
    Ended,
}

/// One step of a boot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BootStep {
    /// When it happened (for a transfer: when it ended), RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
    /// Milliseconds from the session's start to the step's start.
    pub offset_ms: u64,
    /// How long it took in milliseconds (transfers), else `null`.
    pub duration_ms: Option<u64>,
    /// `dhcp`, `proxydhcp`, `dhcp6`, `tftp`, `http`, `ipxe`, `menu`, `access`,
    /// `installer`, `baseline`, `bmc` or `wol`.
    pub kind: String,
    /// False for a refusal, a failure or an answer that was not Bootlane's.
    pub ok: bool,
    /// One sentence (client-sent text escaped).
    pub summary: String,
    /// The step's details by kind (DHCP: message, arch, vendor class, user class, server
    /// id, reply, address, next-server, boot file; TFTP: file, bytes, outcome, error;
    /// HTTP: file, bytes, status; iPXE: profile, host; ...).
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
}

/// One boot attempt of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BootSession {
    /// Id (from the store's id sequence).
    pub id: u64,
    /// The machine's MAC (lower-case colon form), `null` when only its address is known.
    pub mac: Option<String>,
    /// The machine's last known address.
    pub ip: Option<String>,
    /// The registered host with this MAC, if any.
    pub host: Option<String>,
    /// First step, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started: OffsetDateTime,
    /// Last step, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated: OffsetDateTime,
    /// Open or ended.
    pub state: SessionState,
    /// Where the boot got to.
    pub verdict: Verdict,
    /// The verdict in words: where it stopped and the likeliest cause, or how far it got.
    pub reason: String,
    /// Milliseconds from the first DHCPDISCOVER to the kernel sent, when both were seen.
    pub kernel_ms: Option<u64>,
    /// Steps recorded (lists leave `steps` empty and give the count here).
    pub step_count: usize,
    /// Steps beyond [`MAX_STEPS`], not kept.
    pub steps_dropped: u64,
    /// The steps, oldest first (empty in lists).
    #[serde(default)]
    pub steps: Vec<BootStep>,
}

impl BootSession {
    /// The session without its steps (for lists and the live stream).
    pub fn summary(&self) -> Self {
        Self {
            id: self.id,
            mac: self.mac.clone(),
            ip: self.ip.clone(),
            host: self.host.clone(),
            started: self.started,
            updated: self.updated,
            state: self.state,
            verdict: self.verdict,
            reason: self.reason.clone(),
            kernel_ms: self.kernel_ms,
            step_count: self.step_count,
            steps_dropped: self.steps_dropped,
            steps: Vec::new(),
        }
    }
}

/// An ended session as the journal stores it: `seq` orders the journal (sessions end in
/// another order than they begin).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredSession {
    /// Journal order (from the store's id sequence, taken when the session ended).
    pub seq: u64,
    /// The session.
    pub session: BootSession,
}

impl bootlane_core::store::Entity for StoredSession {
    const TREE: &'static str = "boot_sessions";
    fn id(&self) -> u64 {
        self.seq
    }
    fn set_id(&mut self, id: u64) {
        self.seq = id;
    }
}

/// What the live stream carries: a session's new summary and the step that changed it
/// (`null` when only the verdict or state changed).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SessionUpdate {
    /// The session, without its steps.
    pub session: BootSession,
    /// The new step.
    pub step: Option<BootStep>,
}
