//! The journal's layout of an ended session ([`StoredSession`]): compact, because every
//! boot client's session is written once when it ends, and a storm of PXE clients ends
//! thousands a second. One JSON object per line, short keys, optional fields left out:
//!
//! - the session: `id` (the journal order, [`StoredSession::seq`]), `n` (the session's
//!   id), `mac`, `ip`, `host`, `t0` and `t1` (started and updated, Unix time in
//!   nanoseconds), `st` (the state, left out when `ended`), `v` (the verdict), `r` (the
//!   reason), `k` (`kernel_ms`), `c` (the step count), `dr` (steps dropped), `steps`;
//! - a step: `t` (Unix nanoseconds), `o` (`offset_ms`, left out when 0), `d`
//!   (`duration_ms`), `k` (the kind), `ok` (left out when true), `s` (the summary, left
//!   out when empty), and its details as `dhcp` (an array of the fourteen fields of
//!   [`DhcpDetails`] in their declared order, `null` for an absent one) or `x` (the
//!   details object of any other step).
//!
//! The API's shape ([`BootSession`] with RFC 3339 times and named DHCP fields) is built
//! when a line is read. Lines of the first layout, `{"seq": <order>, "session": <the
//! API's session>}`, still read.

use std::{
    borrow::Cow,
    net::{IpAddr, Ipv4Addr, SocketAddrV4},
};

use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use time::OffsetDateTime;

use crate::model::{BootSession, BootStep, DhcpDetails, SessionState, StepDetails, StoredSession, Verdict};

fn nanos(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos()).unwrap_or(i64::MAX)
}

fn time<E: serde::de::Error>(n: i64) -> Result<OffsetDateTime, E> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(n)).map_err(E::custom)
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_true(b: &bool) -> bool {
    *b
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_ended(s: &SessionState) -> bool {
    *s == SessionState::Ended
}

fn yes() -> bool {
    true
}

/// The fourteen fields of [`DhcpDetails`], in their declared order.
type DhcpFields<'a> = (
    Cow<'a, str>,
    u16,
    SocketAddrV4,
    bool,
    Option<u16>,
    Option<Cow<'a, str>>,
    Option<Ipv4Addr>,
    Option<Ipv4Addr>,
    Option<Cow<'a, str>>,
    Option<Ipv4Addr>,
    Option<Ipv4Addr>,
    Option<Ipv4Addr>,
    Option<Cow<'a, str>>,
    Option<Ipv4Addr>,
);

fn dhcp_fields(d: &DhcpDetails) -> DhcpFields<'_> {
    (
        Cow::Borrowed(&d.message),
        d.port,
        d.client,
        d.ipxe,
        d.arch,
        d.vendor_class.as_deref().map(Cow::Borrowed),
        d.server_id,
        d.giaddr,
        d.reply.as_deref().map(Cow::Borrowed),
        d.server,
        d.yiaddr,
        d.next_server,
        d.boot_file.as_deref().map(Cow::Borrowed),
        d.rival,
    )
}

/// A wire name read back: the `'static` one when it is one of `known`.
fn name(s: Cow<'_, str>, known: &[&'static str]) -> Cow<'static, str> {
    match known.iter().find(|k| **k == s) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(s.into_owned()),
    }
}

const MESSAGES: &[&str] = &[
    "discover", "offer", "request", "decline", "ack", "nak", "release", "inform",
];
const KINDS: &[&str] = &[
    "dhcp",
    "proxydhcp",
    "dhcp6",
    "tftp",
    "http",
    "ipxe",
    "menu",
    "access",
    "installer",
    "baseline",
    "bmc",
    "wol",
];

fn dhcp_details(f: DhcpFields<'_>) -> DhcpDetails {
    DhcpDetails {
        message: name(f.0, MESSAGES),
        port: f.1,
        client: f.2,
        ipxe: f.3,
        arch: f.4,
        vendor_class: f.5.map(Cow::into_owned),
        server_id: f.6,
        giaddr: f.7,
        reply: f.8.map(|r| name(r, MESSAGES)),
        server: f.9,
        yiaddr: f.10,
        next_server: f.11,
        boot_file: f.12.map(Cow::into_owned),
        rival: f.13,
    }
}

#[derive(Serialize)]
struct StepOut<'a> {
    t: i64,
    #[serde(skip_serializing_if = "is_zero")]
    o: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    d: Option<u64>,
    k: &'a str,
    #[serde(skip_serializing_if = "is_true")]
    ok: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    s: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dhcp: Option<DhcpFields<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<&'a Value>,
}

/// A session's steps, serialized one by one (no list of them is built).
struct Steps<'a>(&'a [BootStep]);

impl Serialize for Steps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|st| {
            let (dhcp, x) = match &st.details {
                StepDetails::Dhcp(d) => (Some(dhcp_fields(d)), None),
                StepDetails::Other(v) => (None, Some(v)),
            };
            StepOut {
                t: nanos(st.at),
                o: st.offset_ms,
                d: st.duration_ms,
                k: &st.kind,
                ok: st.ok,
                s: &st.summary,
                dhcp,
                x,
            }
        }))
    }
}

#[derive(Serialize)]
struct LineOut<'a> {
    id: u64,
    n: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mac: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ip: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<&'a str>,
    t0: i64,
    t1: i64,
    #[serde(skip_serializing_if = "is_ended")]
    st: SessionState,
    v: Verdict,
    r: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    k: Option<u64>,
    c: usize,
    #[serde(skip_serializing_if = "is_zero")]
    dr: u64,
    steps: Steps<'a>,
}

impl Serialize for StoredSession {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = &self.session;
        LineOut {
            id: self.seq,
            n: b.id,
            mac: b.mac.as_deref(),
            ip: b.ip,
            host: b.host.as_deref(),
            t0: nanos(b.started),
            t1: nanos(b.updated),
            st: b.state,
            v: b.verdict,
            r: &b.reason,
            k: b.kernel_ms,
            c: b.step_count,
            dr: b.steps_dropped,
            steps: Steps(&b.steps),
        }
        .serialize(s)
    }
}

#[derive(Deserialize)]
struct StepIn<'a> {
    t: i64,
    #[serde(default)]
    o: u64,
    #[serde(default)]
    d: Option<u64>,
    #[serde(borrow)]
    k: Cow<'a, str>,
    #[serde(default = "yes")]
    ok: bool,
    #[serde(default)]
    s: String,
    #[serde(default, borrow)]
    dhcp: Option<DhcpFields<'a>>,
    #[serde(default)]
    x: Option<Value>,
}

/// A line of either layout: the compact fields, or `seq` and `session` of the first one.
#[derive(Deserialize)]
struct LineIn<'a> {
    id: Option<u64>,
    n: Option<u64>,
    #[serde(default)]
    mac: Option<String>,
    #[serde(default)]
    ip: Option<IpAddr>,
    #[serde(default)]
    host: Option<String>,
    t0: Option<i64>,
    t1: Option<i64>,
    st: Option<SessionState>,
    v: Option<Verdict>,
    #[serde(default)]
    r: String,
    #[serde(default)]
    k: Option<u64>,
    #[serde(default)]
    c: usize,
    #[serde(default)]
    dr: u64,
    #[serde(default, borrow)]
    steps: Vec<StepIn<'a>>,
    seq: Option<u64>,
    session: Option<BootSession>,
}

impl<'de> Deserialize<'de> for StoredSession {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let l = LineIn::deserialize(d)?;
        if let (Some(seq), Some(session)) = (l.seq, l.session) {
            return Ok(Self { seq, session });
        }
        let need = |v: Option<i64>, f: &'static str| v.ok_or_else(|| D::Error::missing_field(f));
        let mut steps = Vec::with_capacity(l.steps.len());
        for s in l.steps {
            let details = match (s.dhcp, s.x) {
                (Some(f), _) => StepDetails::Dhcp(dhcp_details(f)),
                (None, x) => StepDetails::Other(x.unwrap_or(Value::Null)),
            };
            steps.push(BootStep {
                at: time(s.t)?,
                offset_ms: s.o,
                duration_ms: s.d,
                kind: name(s.k, KINDS),
                ok: s.ok,
                summary: s.s,
                details,
            });
        }
        Ok(Self {
            seq: l.id.ok_or_else(|| D::Error::missing_field("id"))?,
            session: BootSession {
                id: l.n.ok_or_else(|| D::Error::missing_field("n"))?,
                mac: l.mac,
                ip: l.ip,
                host: l.host,
                started: time(need(l.t0, "t0")?)?,
                updated: time(need(l.t1, "t1")?)?,
                state: l.st.unwrap_or(SessionState::Ended),
                verdict: l.v.ok_or_else(|| D::Error::missing_field("v"))?,
                reason: l.r,
                kernel_ms: l.k,
                step_count: l.c,
                steps_dropped: l.dr,
                steps,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session() -> StoredSession {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_764_456_074_621_205_016).unwrap();
        let dhcp = DhcpDetails {
            message: Cow::Borrowed("discover"),
            port: 67,
            client: "10.77.0.2:68".parse().unwrap(),
            ipxe: false,
            arch: Some(7),
            vendor_class: Some("PXEClient:Arch:00007:UNDI:003016".into()),
            server_id: None,
            giaddr: None,
            reply: Some(Cow::Borrowed("offer")),
            server: Some(Ipv4Addr::new(10, 77, 0, 1)),
            yiaddr: Some(Ipv4Addr::new(10, 77, 1, 5)),
            next_server: Some(Ipv4Addr::new(10, 77, 0, 1)),
            boot_file: Some("ipxe.efi".into()),
            rival: None,
        };
        StoredSession {
            seq: 42,
            session: BootSession {
                id: 7,
                mac: Some("52:54:00:00:00:01".into()),
                ip: Some("10.77.1.5".parse().unwrap()),
                host: Some("node1".into()),
                started: at,
                updated: at + time::Duration::milliseconds(1500),
                state: SessionState::Ended,
                verdict: Verdict::Stalled,
                reason: "asked for \"ipxe.efi\" over TFTP: not found in the boot root".into(),
                kernel_ms: Some(1200),
                step_count: 3,
                steps_dropped: 1,
                steps: vec![
                    BootStep {
                        at,
                        offset_ms: 0,
                        duration_ms: None,
                        kind: Cow::Borrowed("dhcp"),
                        ok: true,
                        summary: String::new(),
                        details: StepDetails::Dhcp(dhcp),
                    },
                    BootStep {
                        at: at + time::Duration::milliseconds(1500),
                        offset_ms: 1400,
                        duration_ms: Some(100),
                        kind: Cow::Borrowed("tftp"),
                        ok: false,
                        summary: "TFTP \"ipxe.efi\" refused: File not found (code 1)".into(),
                        details: StepDetails::Other(json!({"file": "ipxe.efi", "outcome": "refused", "code": 1})),
                    },
                ],
            },
        }
    }

    #[test]
    fn a_session_reads_back_as_it_was_written() {
        let s = session();
        let line = serde_json::to_string(&s).unwrap();
        let back: StoredSession = serde_json::from_str(&line).unwrap();
        assert_eq!(back.seq, s.seq);
        assert_eq!(back.session, s.session);
        // The journal finds a line's order under `id` without decoding the rest.
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 42);
        // Written again, the same bytes.
        assert_eq!(serde_json::to_string(&back).unwrap(), line);
    }

    #[test]
    fn a_line_is_at_most_three_quarters_of_the_api_shape() {
        let s = session();
        let line = serde_json::to_string(&s).unwrap().len();
        let api = serde_json::to_string(&s.session).unwrap().len();
        assert!(line * 4 <= api * 3, "journal line {line} bytes, API shape {api}");
    }

    #[test]
    fn lines_of_the_first_layout_still_read() {
        let s = session();
        let old = json!({"seq": 42, "session": serde_json::to_value(&s.session).unwrap()}).to_string();
        let back: StoredSession = serde_json::from_str(&old).unwrap();
        assert_eq!(back.seq, 42);
        assert_eq!(back.session, s.session);
    }

    #[test]
    fn a_line_without_its_order_or_times_is_refused() {
        let s = serde_json::to_value(session()).unwrap();
        for f in ["id", "n", "t0", "t1", "v"] {
            let mut l = s.clone();
            l.as_object_mut().unwrap().remove(f);
            let e = serde_json::from_value::<StoredSession>(l).unwrap_err().to_string();
            assert!(e.contains(f), "{f}: {e}");
        }
    }
}
