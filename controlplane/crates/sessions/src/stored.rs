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
//!   out when empty), and its details as `dhcp` (an array of the fields of
//!   [`DhcpDetails`] in their declared order, `null` for an absent one; IPv4 addresses
//!   as 32-bit integers, `10.0.0.1` as 167772161, and the client's address and port as
//!   two fields) or `x` (the details object of any other step).
//!
//! The API's shape ([`BootSession`] with RFC 3339 times and named DHCP fields) is built
//! when a line is read. Lines of the first layout, `{"seq": <order>, "session": <the
//! API's session>}`, still read.

use std::{
    borrow::Cow,
    io::Write as _,
    net::{IpAddr, Ipv4Addr, SocketAddrV4},
    sync::Arc,
};

use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use time::OffsetDateTime;

use crate::model::{BootSession, BootStep, DhcpDetails, SessionState, StepDetails, StoredSession, Verdict};

fn nanos(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos()).unwrap_or(i64::MAX)
}

fn time<E: serde::de::Error>(n: i64) -> Result<OffsetDateTime, E> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(n)).map_err(E::custom)
}

fn yes() -> bool {
    true
}

/// The fields of [`DhcpDetails`] in their declared order as a line holds them, IPv4
/// addresses as integers and the client as its address and port.
type DhcpFields<'a> = (
    Cow<'a, str>,
    u16,
    u32,
    u16,
    bool,
    Option<u16>,
    Option<Cow<'a, str>>,
    Option<u32>,
    Option<u32>,
    Option<Cow<'a, str>>,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    Option<Cow<'a, str>>,
    Option<u32>,
);

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
    let a = |n: Option<u32>| n.map(Ipv4Addr::from_bits);
    DhcpDetails {
        message: name(f.0, MESSAGES),
        port: f.1,
        client: SocketAddrV4::new(Ipv4Addr::from_bits(f.2), f.3),
        ipxe: f.4,
        arch: f.5,
        vendor_class: f.6.map(|v| Arc::from(v.as_ref())),
        server_id: a(f.7),
        giaddr: a(f.8),
        reply: f.9.map(|r| name(r, MESSAGES)),
        server: a(f.10),
        yiaddr: a(f.11),
        next_server: a(f.12),
        boot_file: f.13.map(|v| Arc::from(v.as_ref())),
        rival: a(f.14),
    }
}

impl Serialize for StoredSession {
    /// The line [`encode`] writes, the layout's one writer (the store and the journal
    /// hold JSON).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut line = Vec::with_capacity(1024);
        encode(self, &mut line).map_err(S::Error::custom)?;
        let line = String::from_utf8(line).map_err(S::Error::custom)?;
        serde_json::value::RawValue::from_string(line)
            .map_err(S::Error::custom)?
            .serialize(s)
    }
}

/// Appends `b` as it is.
fn raw(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b);
}

fn int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    raw(out, itoa::Buffer::new().format(n).as_bytes());
}

/// `t` as a JSON string: as it is when nothing in it needs escaping (no `"`, `\\` or
/// control character), else through serde_json's escaping. The bytes serde_json writes.
fn text(out: &mut Vec<u8>, t: &str) -> serde_json::Result<()> {
    // A fold without an early exit: the compiler checks many bytes at a time.
    if t.bytes()
        .fold(false, |e, b| e | (b < 0x20) | (b == b'"') | (b == b'\\'))
    {
        return serde_json::to_writer(out, t);
    }
    out.push(b'"');
    raw(out, t.as_bytes());
    out.push(b'"');
    Ok(())
}

fn opt_int(out: &mut Vec<u8>, n: Option<impl itoa::Integer>) {
    match n {
        Some(n) => int(out, n),
        None => raw(out, b"null"),
    }
}

fn opt_text(out: &mut Vec<u8>, t: Option<&str>) -> serde_json::Result<()> {
    match t {
        Some(t) => text(out, t),
        None => {
            raw(out, b"null");
            Ok(())
        }
    }
}

/// The session id (`n`) of a line [`encode`] wrote, read from its start (`{"id":…,"n":…`)
/// without decoding the rest; `None` for another line.
pub fn session_id(line: &[u8]) -> Option<u64> {
    /// The number `b` starts with, and what follows it.
    fn number(b: &[u8]) -> Option<(u64, &[u8])> {
        let end = b.iter().position(|c| !c.is_ascii_digit()).unwrap_or(b.len());
        let n = std::str::from_utf8(&b[..end]).ok()?.parse().ok()?;
        Some((n, &b[end..]))
    }
    let (_, rest) = number(line.strip_prefix(b"{\"id\":")?)?;
    Some(number(rest.strip_prefix(b",\"n\":")?)?.0)
}

/// Writes `s`'s journal line (the layout above, without its newline) into `out`. Keys and
/// the product's own names are copied as they are and only text goes through escaping:
/// the recorder writes every ended session with it, thousands a second in a storm. The
/// `Serialize` implementation writes the same line.
///
/// # Errors
/// serde_json's, from a step's details object.
pub fn encode(s: &StoredSession, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let b = &s.session;
    raw(out, b"{\"id\":");
    int(out, s.seq);
    raw(out, b",\"n\":");
    int(out, b.id);
    if let Some(m) = &b.mac {
        raw(out, b",\"mac\":");
        text(out, m)?;
    }
    if let Some(ip) = b.ip {
        // An address's text needs no escaping.
        let _ = write!(out, ",\"ip\":\"{ip}\"");
    }
    if let Some(h) = &b.host {
        raw(out, b",\"host\":");
        text(out, h)?;
    }
    raw(out, b",\"t0\":");
    int(out, nanos(b.started));
    raw(out, b",\"t1\":");
    int(out, nanos(b.updated));
    if b.state != SessionState::Ended {
        raw(out, b",\"st\":\"open\"");
    }
    raw(out, b",\"v\":\"");
    raw(out, b.verdict.as_str().as_bytes());
    raw(out, b"\",\"r\":");
    text(out, &b.reason)?;
    if let Some(k) = b.kernel_ms {
        raw(out, b",\"k\":");
        int(out, k);
    }
    raw(out, b",\"c\":");
    int(out, b.step_count);
    if b.steps_dropped != 0 {
        raw(out, b",\"dr\":");
        int(out, b.steps_dropped);
    }
    raw(out, b",\"steps\":[");
    for (i, st) in b.steps.iter().enumerate() {
        raw(out, if i == 0 { b"{\"t\":" } else { b",{\"t\":" });
        int(out, nanos(st.at));
        if st.offset_ms != 0 {
            raw(out, b",\"o\":");
            int(out, st.offset_ms);
        }
        if let Some(d) = st.duration_ms {
            raw(out, b",\"d\":");
            int(out, d);
        }
        raw(out, b",\"k\":");
        text(out, &st.kind)?;
        if !st.ok {
            raw(out, b",\"ok\":false");
        }
        if !st.summary.is_empty() {
            raw(out, b",\"s\":");
            text(out, &st.summary)?;
        }
        match &st.details {
            StepDetails::Dhcp(d) => {
                let ip = |out: &mut Vec<u8>, a: Option<Ipv4Addr>| {
                    out.push(b',');
                    opt_int(out, a.map(Ipv4Addr::to_bits));
                };
                raw(out, b",\"dhcp\":[");
                text(out, &d.message)?;
                out.push(b',');
                int(out, d.port);
                out.push(b',');
                int(out, d.client.ip().to_bits());
                out.push(b',');
                int(out, d.client.port());
                raw(out, if d.ipxe { b",true," } else { b",false," });
                opt_int(out, d.arch);
                out.push(b',');
                opt_text(out, d.vendor_class.as_deref())?;
                ip(out, d.server_id);
                ip(out, d.giaddr);
                out.push(b',');
                opt_text(out, d.reply.as_deref())?;
                ip(out, d.server);
                ip(out, d.yiaddr);
                ip(out, d.next_server);
                out.push(b',');
                opt_text(out, d.boot_file.as_deref())?;
                ip(out, d.rival);
                out.push(b']');
            }
            StepDetails::Other(v) => {
                raw(out, b",\"x\":");
                serde_json::to_writer(&mut *out, v)?;
            }
        }
        out.push(b'}');
    }
    raw(out, b"]}");
    Ok(())
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
        // session_id reads `n` from the line's start; other lines give none.
        assert_eq!(session_id(line.as_bytes()), Some(7));
        for other in [&b"{\"n\":7}"[..], b"{\"id\":42,\"x\":7}", b"{\"id\":,\"n\":7}", b""] {
            assert_eq!(session_id(other), None);
        }
    }

    #[test]
    fn a_line_is_at_most_70_percent_of_the_api_shape() {
        let s = session();
        let line = serde_json::to_string(&s).unwrap().len();
        let api = serde_json::to_string(&s.session).unwrap().len();
        assert!(line * 10 <= api * 7, "journal line {line} bytes, API shape {api}");
    }

    #[test]
    fn lines_with_escapes_and_absent_fields_read_back() {
        let mut variants = vec![session()];
        let mut s = session();
        s.session.state = SessionState::Open;
        s.session.mac = None;
        s.session.ip = Some("fe80::1".parse().unwrap());
        s.session.host = None;
        s.session.kernel_ms = None;
        s.session.steps_dropped = 0;
        s.session.reason = "client text: \"\u{1b}[2J\\ \u{7f} é\n".into();
        s.session.steps[1].details = StepDetails::Other(Value::Null);
        s.session.steps[1].kind = Cow::Owned("a \"new\" kind".into());
        if let StepDetails::Dhcp(d) = &mut s.session.steps[0].details {
            d.vendor_class = Some("PXE\u{0}\t\"x\"".into());
            d.boot_file = None;
            d.reply = None;
            d.arch = None;
            d.ipxe = true;
            d.rival = Some(Ipv4Addr::new(10, 0, 0, 5));
        }
        variants.push(s);
        let mut s = session();
        s.session.ip = None;
        s.session.steps.clear();
        variants.push(s);
        for s in variants {
            let mut line = Vec::new();
            encode(&s, &mut line).unwrap();
            assert_eq!(line, serde_json::to_vec(&s).unwrap());
            let back: StoredSession = serde_json::from_slice(&line).unwrap();
            assert_eq!((back.seq, back.session), (s.seq, s.session));
        }
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
