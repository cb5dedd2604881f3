//! What a boot session is on the wire: [`BootSession`] with its [`BootStep`]s, its
//! [`SessionState`] and its [`Verdict`]; and [`StoredSession`], an ended one in the
//! journal (its layout there is [`crate::stored`]'s).

use std::{
    borrow::Cow,
    fmt::Write as _,
    net::{IpAddr, Ipv4Addr, SocketAddrV4},
    sync::Arc,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
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
    /// Every verdict, in declaration order (so `v as usize` indexes it).
    pub const ALL: [Self; 5] = [
        Self::InProgress,
        Self::HandedToInstaller,
        Self::Installed,
        Self::BootedLocalDisk,
        Self::Stalled,
    ];

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
    #[schema(value_type = String)]
    pub kind: Cow<'static, str>,
    /// False for a refusal, a failure or an answer that was not Bootlane's.
    pub ok: bool,
    /// One sentence (client-sent text escaped). A DHCP step's is written when it is read
    /// ([`BootStep::fill_summary`]) and not stored in the journal.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// The step's details by kind (DHCP: message, arch, vendor class, user class, server
    /// id, reply, address, next-server, boot file; TFTP: file, bytes, outcome, error;
    /// HTTP: file, bytes, status; iPXE: profile, host; ...).
    #[schema(value_type = Object)]
    pub details: StepDetails,
}

impl BootStep {
    /// Writes a DHCP step's summary from its details when it has none yet.
    pub fn fill_summary(&mut self) {
        if let (true, StepDetails::Dhcp(d)) = (self.summary.is_empty(), &self.details) {
            self.summary = d.summary();
        }
    }
}

impl BootSession {
    /// Writes every DHCP step's summary ([`BootStep::fill_summary`]).
    pub fn fill_summaries(&mut self) {
        self.steps.iter_mut().for_each(BootStep::fill_summary);
    }
}

/// A step's details: typed for a DHCP message (the step every boot client makes several
/// of, built on the DHCP server's hot path: no map, few allocations), a JSON object for the
/// others. Both are the same JSON object on the wire and in the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StepDetails {
    /// A DHCPv4 message the server handled.
    Dhcp(DhcpDetails),
    /// Any other step's details (see [`BootStep::details`]).
    Other(Value),
}

impl StepDetails {
    /// The DHCP message's details, for a DHCP step.
    pub fn dhcp(&self) -> Option<&DhcpDetails> {
        match self {
            Self::Dhcp(d) => Some(d),
            Self::Other(_) => None,
        }
    }

    /// The value of field `k` of a non-DHCP step's details.
    pub fn get(&self, k: &str) -> Option<&Value> {
        match self {
            Self::Dhcp(_) => None,
            Self::Other(v) => v.get(k),
        }
    }

    /// The text of field `k` of a non-DHCP step's details.
    pub fn str(&self, k: &str) -> Option<&str> {
        self.get(k).and_then(Value::as_str)
    }

    /// Sets field `k` of a non-DHCP step's details (an object); DHCP details have no
    /// free fields and are left as they are.
    pub fn set(&mut self, k: &str, v: Value) {
        if let Self::Other(Value::Object(m)) = self {
            m.insert(k.to_string(), v);
        }
    }
}

impl From<Value> for StepDetails {
    fn from(v: Value) -> Self {
        Self::Other(v)
    }
}

/// The words for a client system architecture (option 93, RFC 4578 and IANA's
/// "Processor Architecture Types").
pub fn arch_name(a: u16) -> Cow<'static, str> {
    match a {
        0 => "BIOS".into(),
        6 => "x86 UEFI".into(),
        7 | 9 => "x86-64 UEFI".into(),
        10 => "ARM32 UEFI".into(),
        11 => "ARM64 UEFI".into(),
        16 => "x86-64 UEFI HTTP".into(),
        19 => "ARM64 UEFI HTTP".into(),
        n => format!("arch {n}").into(),
    }
}

impl DhcpDetails {
    /// The step's one sentence, e.g. `DISCOVER (x86-64 UEFI, "PXEClient") → OFFER
    /// 10.0.0.50, boot file "ipxe.efi" from 10.0.0.1`; the vendor class and boot file
    /// quoted with control characters escaped. Written when the step is read, not when
    /// the message is handled.
    pub fn summary(&self) -> String {
        let mut out = String::with_capacity(96);
        out.extend(self.message.chars().map(|c| c.to_ascii_uppercase()));
        let mut sep = " (";
        if let Some(a) = self.arch {
            let _ = write!(out, "{sep}{}", arch_name(a));
            sep = ", ";
        }
        if let Some(v) = &self.vendor_class {
            let _ = write!(out, "{sep}{:?}", v.split(':').next().unwrap_or(v));
            sep = ", ";
        }
        if self.ipxe {
            let _ = write!(out, "{sep}iPXE");
            sep = ", ";
        }
        if sep == ", " {
            out.push(')');
        }
        match (&self.reply, self.rival) {
            (_, Some(id)) => {
                let _ = write!(out, " for {id}'s offer: another server's, not answered");
            }
            (Some(r), _) => {
                out.push_str(" → ");
                out.extend(r.chars().map(|c| c.to_ascii_uppercase()));
                if let Some(ip) = self.yiaddr {
                    let _ = write!(out, " {ip}");
                }
                if let Some(f) = &self.boot_file {
                    let _ = write!(out, ", boot file {f:?}");
                    if let Some(n) = self.next_server {
                        let _ = write!(out, " from {n}");
                    }
                }
            }
            (None, None) => out.push_str(" (not answered)"),
        }
        out
    }
}

/// What a DHCPv4 step records of the message and Bootlane's answer (RFC 2131, RFC 2132
/// options 53, 54, 60, 67, 77; RFC 4578 option 93). Absent fields were not sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DhcpDetails {
    /// The message type (`discover`, `request`, `inform`, ...).
    pub message: Cow<'static, str>,
    /// The local port: 67 (DHCP, proxyDHCP) or 4011 (PXE boot server).
    pub port: u16,
    /// The client's source address and port.
    pub client: SocketAddrV4,
    /// The client is iPXE (user class `iPXE` or option 175).
    pub ipxe: bool,
    /// Option 93: the client system architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<u16>,
    /// Option 60: the vendor class (shared: a site has a handful, each held once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_class: Option<Arc<str>>,
    /// Option 54 of the request: the server whose offer the client took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<Ipv4Addr>,
    /// The relay agent (`giaddr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub giaddr: Option<Ipv4Addr>,
    /// Bootlane's answer (`offer`, `ack`, `nak`); absent when it did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<Cow<'static, str>>,
    /// Bootlane's server identifier in the answer (option 54).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Ipv4Addr>,
    /// The address offered or acknowledged (`yiaddr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yiaddr: Option<Ipv4Addr>,
    /// The answer's next-server (`siaddr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_server: Option<Ipv4Addr>,
    /// The boot file given (option 67, else `file`; shared, as the vendor class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_file: Option<Arc<str>>,
    /// Another server whose offer the client took (option 54 of a request Bootlane did
    /// not answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rival: Option<Ipv4Addr>,
}

/// One boot attempt of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BootSession {
    /// Id (from the store's id sequence).
    pub id: u64,
    /// The machine's MAC (lower-case colon form), `null` when only its address is known.
    pub mac: Option<String>,
    /// The machine's last known address.
    #[schema(value_type = Option<String>)]
    pub ip: Option<IpAddr>,
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
            ip: self.ip,
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
/// another order than they begin). Its JSON is the journal's compact layout, not the
/// API's (see [`crate::stored`]).
#[derive(Debug, Clone)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn step_details_keep_their_json_shape_and_read_back_typed() {
        let dhcp = StepDetails::Dhcp(DhcpDetails {
            message: "discover".into(),
            port: 67,
            client: "0.0.0.0:68".parse().unwrap(),
            ipxe: false,
            arch: Some(7),
            vendor_class: Some("PXEClient:Arch:00007".into()),
            server_id: None,
            giaddr: None,
            reply: Some("offer".into()),
            server: Some(Ipv4Addr::new(10, 0, 0, 1)),
            yiaddr: Some(Ipv4Addr::new(10, 0, 0, 50)),
            next_server: Some(Ipv4Addr::new(10, 0, 0, 1)),
            boot_file: Some("ipxe.efi".into()),
            rival: None,
        });
        let v = serde_json::to_value(&dhcp).unwrap();
        assert_eq!(
            v,
            json!({"message": "discover", "port": 67, "client": "0.0.0.0:68", "ipxe": false, "arch": 7,
                   "vendor_class": "PXEClient:Arch:00007", "reply": "offer", "server": "10.0.0.1",
                   "yiaddr": "10.0.0.50", "next_server": "10.0.0.1", "boot_file": "ipxe.efi"})
        );
        assert_eq!(serde_json::from_value::<StepDetails>(v).unwrap(), dhcp);
        // Other kinds stay free-form, even with a field a DHCP step also has.
        let tftp = json!({"file": "ipxe.efi", "outcome": "Complete", "client": "10.0.0.50:1024"});
        let read: StepDetails = serde_json::from_value(tftp.clone()).unwrap();
        assert_eq!(read, StepDetails::Other(tftp));
        assert_eq!(read.str("file"), Some("ipxe.efi"));
        assert_eq!(dhcp.str("boot_file"), None, "DHCP details are read typed");
        // A DHCP step's summary is written when read, and the journal line leaves it out.
        let mut step = BootStep {
            at: OffsetDateTime::UNIX_EPOCH,
            offset_ms: 0,
            duration_ms: None,
            kind: "dhcp".into(),
            ok: true,
            summary: String::new(),
            details: dhcp,
        };
        assert!(serde_json::to_value(&step).unwrap().get("summary").is_none());
        step.fill_summary();
        assert_eq!(
            step.summary,
            r#"DISCOVER (x86-64 UEFI, "PXEClient") → OFFER 10.0.0.50, boot file "ipxe.efi" from 10.0.0.1"#
        );
    }
}
