//! What each input becomes: a DHCP message the server handled ([`from_dhcp`]) or an event
//! of the boot path ([`from_event`]) turned into an [`Observed`] step with the machine it
//! belongs to. Client-sent text (file names, vendor classes, installer messages) enters a
//! summary only quoted with control characters escaped (Rust's `{:?}`).

use std::{borrow::Cow, collections::HashSet, net::IpAddr, sync::Arc};

use serde_json::{json, Value};
use time::OffsetDateTime;

use bootlane_core::events::{
    AccessRefused, BmcPowerRequested, BootFileServed, Dhcp6LeaseChanged, Event, InstallTaskReport,
    InstallTaskStateChanged, IpxeServed, MenuServed, ScriptRunReported, TftpRefused, TftpTransfer, WolWake,
};
use bootlane_core::net::types::MacAddr;
use bootlane_dhcp::dhcp::trace::{DhcpSeen, SeenText};

use crate::model::{arch_name, DhcpDetails, StepDetails};

/// Whether a step may begin a new session of its machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opens {
    /// Never (the installer's own DHCP, a lease event): joins an open session or is
    /// dropped.
    No,
    /// When the machine has no open session (a TFTP or HTTP request, a script).
    IfNone,
    /// A firmware PXE DHCPDISCOVER: a new session when the open one has got past DHCP.
    Firmware,
    /// An iPXE DHCPDISCOVER: a new session when the open one already got a script or
    /// menu (iPXE in the network card's ROM starting a new boot).
    Ipxe,
    /// Always (a power-on or wake-on-LAN: a new boot attempt).
    Always,
}

/// One input as a step of a machine's boot.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The machine's MAC, when the input carries it (one it cannot parse is left out).
    pub mac: Option<MacAddr>,
    /// The machine's address, when the input carries it.
    pub ip: Option<IpAddr>,
    /// The host id an action named (power), to be mapped to its MAC.
    pub host_id: Option<u64>,
    /// When it happened.
    pub at: OffsetDateTime,
    /// How long it took, in milliseconds.
    pub duration_ms: Option<u64>,
    /// The step's kind (see [`crate::model::BootStep::kind`]).
    pub kind: &'static str,
    /// Success or not.
    pub ok: bool,
    /// One sentence.
    pub summary: String,
    /// Details by kind.
    pub details: StepDetails,
    /// Whether it may begin a session.
    pub opens: Opens,
}

/// The most distinct texts [`Names`] holds; past it, it starts again empty.
pub const MAX_NAMES: usize = 1024;

/// Text DHCP steps share (vendor classes, boot files): each distinct value is held once,
/// and the steps of thousands of sessions point at those few copies, which stay in the
/// recorder's cache. The last few values given out are compared first (a storm repeats
/// one vendor class and one boot file), then a set bounded by [`MAX_NAMES`] (vendor
/// classes are the client's choice).
#[derive(Debug, Default)]
pub struct Names {
    all: HashSet<Arc<str>>,
    last: [Option<Arc<str>>; 4],
    next: usize,
}

impl Names {
    /// The shared copy of `s` (a new one, shared from now on, when `s` is new).
    pub fn share(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.last.iter().flatten().find(|a| ***a == *s) {
            return a.clone();
        }
        let a = match self.all.get(s) {
            Some(a) => a.clone(),
            None => {
                if self.all.len() >= MAX_NAMES {
                    self.all.clear();
                }
                let a: Arc<str> = Arc::from(s);
                self.all.insert(a.clone());
                a
            }
        };
        self.last[self.next % self.last.len()] = Some(a.clone());
        self.next = self.next.wrapping_add(1);
        a
    }
}

/// The details of a DHCP step (its text shared through `names`).
fn dhcp_details(s: DhcpSeen, rival: Option<std::net::Ipv4Addr>, names: &mut Names) -> DhcpDetails {
    DhcpDetails {
        message: Cow::Borrowed(s.kind),
        port: s.port,
        client: s.src,
        ipxe: s.ipxe,
        arch: s.arch,
        vendor_class: s.vendor_class.map(|v| names.share(v.as_str())),
        server_id: s.server_id,
        giaddr: s.giaddr,
        reply: s.reply.map(Cow::Borrowed),
        server: s.server,
        yiaddr: s.yiaddr,
        next_server: s.next_server,
        boot_file: s.boot_file.map(|f| names.share(f.as_str())),
        rival,
    }
}

/// Whether a DHCP message may begin a session: a firmware PXE DHCPDISCOVER (vendor class
/// `PXEClient` or `HTTPClient`, or option 93, and not iPXE), an iPXE one on port 67, any
/// other boot client's DHCPDISCOVER when the machine has no open session; nothing else.
pub fn dhcp_opens(s: &DhcpSeen) -> Opens {
    if s.kind != "discover" {
        return Opens::No;
    }
    let pxe = s
        .vendor_class
        .as_ref()
        .map(SeenText::as_str)
        .is_some_and(|v| v.starts_with("PXEClient") || v.starts_with("HTTPClient"));
    if !s.ipxe && (s.arch.is_some() || pxe) {
        Opens::Firmware
    } else if s.ipxe && s.port == 67 {
        Opens::Ipxe
    } else if s.ipxe {
        Opens::IfNone
    } else {
        Opens::No
    }
}

/// A DHCP message the server handled, as a step (its text shared through `names`).
pub fn from_dhcp(s: DhcpSeen, names: &mut Names) -> Observed {
    let kind = if s.port == 4011 || (s.reply.is_some() && s.yiaddr.is_none() && s.kind == "discover") {
        "proxydhcp"
    } else {
        "dhcp"
    };
    let rival = match (s.kind, s.server_id, s.reply) {
        ("request", Some(id), None) => Some(id),
        _ => None,
    };
    Observed {
        mac: Some(s.mac),
        // The address is the machine's once acknowledged (an offer may go unanswered):
        // only an ACK's is remembered for the machine's later TFTP and HTTP requests.
        ip: s.yiaddr.filter(|_| s.reply == Some("ack")).map(IpAddr::V4),
        host_id: None,
        at: OffsetDateTime::from(s.at),
        duration_ms: None,
        kind,
        ok: rival.is_none() && s.reply != Some("nak"),
        // Written when the step is read (DhcpDetails::summary): not for every message.
        summary: String::new(),
        opens: dhcp_opens(&s),
        details: StepDetails::Dhcp(dhcp_details(s, rival, names)),
    }
}

fn client_ip(addr: &str) -> Option<IpAddr> {
    addr.parse::<std::net::SocketAddr>()
        .map(|a| a.ip().to_canonical())
        .or_else(|_| addr.parse::<IpAddr>().map(|a| a.to_canonical()))
        .ok()
}

/// An event's MAC text as an address (`None` when absent or not a MAC, as `unknown`).
fn mac(m: Option<&str>) -> Option<MacAddr> {
    m.and_then(|m| m.parse().ok())
}

fn data<T: serde::de::DeserializeOwned>(e: &Event) -> Option<T> {
    T::deserialize(&e.data).ok()
}

fn step(e: &Event, kind: &'static str, ok: bool, summary: String, details: Value, opens: Opens) -> Observed {
    Observed {
        mac: None,
        ip: e.remote_addr.as_deref().and_then(client_ip),
        host_id: None,
        at: e.time,
        duration_ms: None,
        kind,
        ok,
        summary,
        details: details.into(),
        opens,
    }
}

/// An event of the boot path as a step; `None` for events that are not about a machine's
/// boot (or the data does not decode).
pub fn from_event(e: &Event) -> Option<Observed> {
    let o = match e.kind.as_str() {
        "tftp.transfer.completed" | "tftp.transfer.aborted" | "tftp.transfer.failed" => {
            if let Some(t) = data::<TftpTransfer>(e) {
                let ok = t.outcome == "Complete";
                let how = match t.outcome.as_str() {
                    "Complete" => format!("{} bytes sent in {} ms", t.bytes, t.duration_ms),
                    "ClientError" => format!(
                        "the client ended the transfer after {} ms (firmware asking only the size does this)",
                        t.duration_ms
                    ),
                    o => format!("{o} after {} ms", t.duration_ms),
                };
                let mut o = step(
                    e,
                    "tftp",
                    ok,
                    format!("TFTP {:?}: {how}", t.file),
                    json!({"file": t.file, "bytes": t.bytes, "outcome": t.outcome, "client": t.client}),
                    Opens::IfNone,
                );
                o.ip = client_ip(&t.client);
                o.duration_ms = Some(t.duration_ms);
                o
            } else {
                let t = data::<TftpRefused>(e)?;
                let mut o = step(
                    e,
                    "tftp",
                    false,
                    format!("TFTP {:?} refused: {} (code {})", t.file, t.error, t.code),
                    json!({"file": t.file, "outcome": "refused", "code": t.code, "error": t.error, "client": t.client}),
                    Opens::IfNone,
                );
                o.ip = client_ip(&t.client);
                o
            }
        }
        "dhcp6.lease.granted" | "dhcp6.lease.renewed" => {
            let l = data::<Dhcp6LeaseChanged>(e)?;
            let what = if e.kind.ends_with("granted") {
                "granted"
            } else {
                "renewed"
            };
            let arch = l.arch.map(|a| format!(" ({})", arch_name(a))).unwrap_or_default();
            let mut o = step(
                e,
                "dhcp6",
                true,
                format!("DHCPv6 lease {} {what}{arch}", l.ip),
                json!({"ip": l.ip, "duid": l.duid, "iaid": l.iaid, "arch": l.arch, "subnet": l.subnet}),
                if l.arch.is_some() { Opens::IfNone } else { Opens::No },
            );
            o.mac = mac(l.mac.as_deref());
            o.ip = Some(IpAddr::V6(l.ip));
            o
        }
        "boot.ipxe.served" => match data::<IpxeServed>(e)? {
            IpxeServed::Profile { mac, profile, host } => {
                let mut o = step(
                    e,
                    "ipxe",
                    true,
                    format!("iPXE script of profile {profile:?} served"),
                    json!({"profile": profile, "host": host}),
                    Opens::IfNone,
                );
                o.mac = mac.parse().ok();
                o
            }
            IpxeServed::InstallTask { mac, action, .. } => {
                let action = action.unwrap_or_else(|| "install".into());
                let what = match action.as_str() {
                    "local" => "the local disk: the install is over",
                    "hold" => "nothing: the install failed, not retried yet",
                    _ => "the installer",
                };
                let mut o = step(
                    e,
                    "ipxe",
                    action != "hold",
                    format!("iPXE script of the machine's install task served: {what}"),
                    json!({"install_task": action == "install", "action": action, "local": action == "local"}),
                    Opens::IfNone,
                );
                o.mac = mac.parse().ok();
                o
            }
        },
        "boot.pxelinux.served" | "boot.grub.served" => {
            let m = data::<MenuServed>(e)?;
            let loader = if e.kind == "boot.grub.served" {
                "GRUB"
            } else {
                "PXELINUX"
            };
            let mut o = step(
                e,
                "menu",
                true,
                format!(
                    "{loader} menu {:?} of profile {:?} sent over {}",
                    m.file, m.profile, m.protocol
                ),
                json!({"file": m.file, "profile": m.profile, "host": m.host, "protocol": m.protocol, "loader": loader}),
                Opens::IfNone,
            );
            o.mac = mac(m.mac.as_deref());
            o
        }
        "boot.file.served" => {
            let f = data::<BootFileServed>(e)?;
            step(
                e,
                "http",
                true,
                format!("HTTP {:?}: {} bytes, status {}", f.file, f.bytes, f.status),
                json!({"file": f.file, "bytes": f.bytes, "status": f.status, "image": f.image}),
                Opens::IfNone,
            )
        }
        "access.refused" => {
            let a = data::<AccessRefused>(e)?;
            let mut o = step(
                e,
                "access",
                false,
                format!("refused by access control ({})", a.protocol),
                serde_json::to_value(&a).unwrap_or(Value::Null),
                Opens::IfNone,
            );
            o.mac = mac(a.mac.as_deref());
            o.ip = a.ip.or(o.ip);
            o
        }
        "install.task.state" => {
            let s = data::<InstallTaskStateChanged>(e)?;
            let summary = match s.state.as_str() {
                "installing" => "the installer fetched its answer file".to_string(),
                other => format!("install task {}: {} → {other}", s.id, s.from),
            };
            let mut o = step(
                e,
                "installer",
                s.state != "failed",
                summary,
                json!({"task": s.id, "from": s.from, "state": s.state, "reason": s.reason}),
                Opens::No,
            );
            o.mac = s.mac.parse().ok();
            o.ip = None;
            o
        }
        "install.task.report" => {
            let r = data::<InstallTaskReport>(e)?;
            let mut o = step(
                e,
                "installer",
                r.kind != "failed",
                format!("installer report {:?}: {:?}", r.kind, r.message),
                json!({"task": r.id, "report": r.kind, "message": r.message}),
                Opens::IfNone,
            );
            o.mac = r.mac.parse().ok();
            o.ip = None;
            o
        }
        "script.run.succeeded" | "script.run.failed" => {
            let r = data::<ScriptRunReported>(e)?;
            let ok = e.kind == "script.run.succeeded";
            let mut o = step(
                e,
                "baseline",
                ok,
                format!("baseline script {}", if ok { "ran" } else { "failed" }),
                serde_json::to_value(&r).unwrap_or(Value::Null),
                Opens::No,
            );
            o.mac = r.mac.parse().ok();
            o.ip = None;
            o
        }
        "wol.sent" => {
            let w = data::<WolWake>(e)?;
            let mut o = step(
                e,
                "wol",
                true,
                "wake-on-LAN magic packet sent".into(),
                json!({"interfaces": w.interfaces}),
                Opens::Always,
            );
            o.mac = w.mac.parse().ok();
            o.ip = None;
            o
        }
        "bmc.power.requested" => {
            let b = data::<BmcPowerRequested>(e)?;
            let mut o = step(
                e,
                "bmc",
                true,
                format!(
                    "BMC power {}{}",
                    b.action,
                    if b.pxe { " (next boot from the network)" } else { "" }
                ),
                json!({"action": b.action, "pxe": b.pxe}),
                if matches!(b.action.as_str(), "on" | "cycle" | "reset") {
                    Opens::Always
                } else {
                    Opens::No
                },
            );
            o.host_id = b.host_id;
            o.ip = None;
            o
        }
        _ => return None,
    };
    Some(o)
}

/// An HTTP boot file the server did not have (a 404), as a step.
pub fn http_missing(ip: Option<IpAddr>, file: &str) -> Observed {
    Observed {
        mac: None,
        ip: ip.map(|i| i.to_canonical()),
        host_id: None,
        at: OffsetDateTime::now_utc(),
        duration_ms: None,
        kind: "http",
        ok: false,
        summary: format!("HTTP {file:?}: not found (404)"),
        details: json!({"file": file, "status": 404}).into(),
        opens: Opens::IfNone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hold_one_copy_of_each_text_and_stay_bounded() {
        let mut n = Names::default();
        let a = n.share("PXEClient:Arch:00007");
        for _ in 0..10 {
            assert!(Arc::ptr_eq(&a, &n.share("PXEClient:Arch:00007")));
        }
        // Past the last few given out, the set still finds it.
        for i in 0..8 {
            n.share(&format!("other{i}"));
        }
        assert!(Arc::ptr_eq(&a, &n.share("PXEClient:Arch:00007")));
        for i in 0..3 * MAX_NAMES {
            n.share(&format!("client-chosen {i}"));
        }
        assert!(n.all.len() <= MAX_NAMES);
        assert_eq!(&*n.share("PXEClient:Arch:00007"), "PXEClient:Arch:00007");
    }
}
