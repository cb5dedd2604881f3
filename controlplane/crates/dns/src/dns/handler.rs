//! Request → response logic of the userspace DNS server, independent of sockets: a
//! query's bytes and the client address go in, bytes to send (or a forwarding job, or
//! nothing) come out. Wire format by hickory-proto.
//!
//! Rules: responses to responses and runts are dropped (RFC 1035 §4.1.1); undecodable
//! queries or QDCOUNT != 1 get FORMERR; opcodes other than QUERY get NOTIMP with a bare
//! header (`not_implemented`: no RD, AA, RA, AD or CD, no question); EDNS versions above
//! 0 get BADVERS (RFC 6891 §6.1.3); a malformed COOKIE option gets FORMERR (RFC 7873
//! §5.2.2, [`malformed_cookie`]); AXFR over UDP gets FORMERR and IXFR over UDP NOTIMP
//! (RFC 5936 §4.2, [`transfer_over_udp`]); local data is answered authoritatively (AA, RD
//! copied, RA when forwarding is configured, no AD/CD); EDNS answers carry an OPT with
//! [`EDNS_UDP_SIZE`] and the DO bit copied (RFC 3225 §3); answers larger than the
//! client's limit (512, or its EDNS size; 65535 on TCP) are sent with TC and no records
//! (RFC 2181 §9); non-local names go upstream, or get REFUSED when no upstream is
//! configured. The XDP program builds exactly the same bytes for the A/AAAA answers it
//! gives (see `common::dns`).

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{
        atomic::{AtomicU64, Ordering::Relaxed},
        Arc, Mutex, RwLock,
    },
};

use hickory_proto::{
    op::{Edns, Message, MessageType, OpCode, Query, ResponseCode},
    rr::{
        rdata::opt::{EdnsCode, OPT},
        DNSClass, Name, RecordType,
    },
};
use ipnet::IpNet;
use serde::Serialize;
use utoipa::ToSchema;

use super::{
    acl,
    rrl::{Rrl, Verdict},
    upstream,
    zone::{Lookup, Zone},
};

/// UDP payload size advertised in our OPT records (RFC 6891 §6.2.5; the DNS flag day 2020
/// value that avoids IP fragmentation).
pub const EDNS_UDP_SIZE: u16 = 1232;

/// Transport a query arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// UDP: answers are limited to the client's UDP size.
    Udp,
    /// TCP (RFC 7766): answers up to 65535 bytes.
    Tcp,
}

/// Counters of the userspace DNS server (monotonic).
#[derive(Debug, Default)]
pub struct DnsMetrics {
    /// Queries received over UDP.
    pub queries_udp: AtomicU64,
    /// Queries received over TCP.
    pub queries_tcp: AtomicU64,
    /// Answered from local data (including NODATA/NXDOMAIN).
    pub local: AtomicU64,
    /// Forwarded upstream.
    pub forwarded: AtomicU64,
    /// NXDOMAIN answers.
    pub nxdomain: AtomicU64,
    /// REFUSED answers.
    pub refused: AtomicU64,
    /// SERVFAIL answers (every upstream failed).
    pub servfail: AtomicU64,
    /// FORMERR, NOTIMP and BADVERS answers.
    pub errors: AtomicU64,
    /// Packets dropped without an answer.
    pub dropped: AtomicU64,
    /// Answers sent truncated (TC).
    pub truncated: AtomicU64,
    /// REFUSED because the client may not recurse (`allow_recursion`; not in `refused`).
    pub recursion_refused: AtomicU64,
    /// UDP answers dropped by response rate limiting (`[dns.rrl]`).
    pub rrl_dropped: AtomicU64,
    /// UDP answers over the rate limit sent truncated (TC=1) instead: the slip.
    pub rrl_slipped: AtomicU64,
}

/// A snapshot of [`DnsMetrics`] for the API.
#[derive(Debug, Clone, Copy, Serialize, ToSchema, Default)]
pub struct DnsMetricsSnapshot {
    /// Queries received over UDP.
    pub queries_udp: u64,
    /// Queries received over TCP.
    pub queries_tcp: u64,
    /// Answered from local data.
    pub local: u64,
    /// Forwarded upstream.
    pub forwarded: u64,
    /// NXDOMAIN answers.
    pub nxdomain: u64,
    /// REFUSED answers.
    pub refused: u64,
    /// SERVFAIL answers.
    pub servfail: u64,
    /// FORMERR/NOTIMP/BADVERS answers.
    pub errors: u64,
    /// Dropped packets.
    pub dropped: u64,
    /// Truncated answers.
    pub truncated: u64,
    /// REFUSED to clients outside `allow_recursion` (not counted in `refused`).
    pub recursion_refused: u64,
    /// UDP answers dropped by response rate limiting.
    pub rrl_dropped: u64,
    /// UDP answers over the rate limit sent truncated (TC=1) instead.
    pub rrl_slipped: u64,
}

impl DnsMetrics {
    /// Reads every counter.
    pub fn snapshot(&self) -> DnsMetricsSnapshot {
        DnsMetricsSnapshot {
            queries_udp: self.queries_udp.load(Relaxed),
            queries_tcp: self.queries_tcp.load(Relaxed),
            local: self.local.load(Relaxed),
            forwarded: self.forwarded.load(Relaxed),
            nxdomain: self.nxdomain.load(Relaxed),
            refused: self.refused.load(Relaxed),
            servfail: self.servfail.load(Relaxed),
            errors: self.errors.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            truncated: self.truncated.load(Relaxed),
            recursion_refused: self.recursion_refused.load(Relaxed),
            rrl_dropped: self.rrl_dropped.load(Relaxed),
            rrl_slipped: self.rrl_slipped.load(Relaxed),
        }
    }
}

impl DnsMetricsSnapshot {
    /// Copies the counters into the metrics recorder ([`bootlane_core::metrics::DNS_QUERIES`],
    /// [`bootlane_core::metrics::DNS_RESPONSES`]) at scrape time: the query path keeps its own
    /// atomics and never touches the recorder.
    pub fn export(&self) {
        use bootlane_core::metrics::{DNS_QUERIES, DNS_RESPONSES};
        for (transport, v) in [("udp", self.queries_udp), ("tcp", self.queries_tcp)] {
            metrics::counter!(DNS_QUERIES, "transport" => transport).absolute(v);
        }
        for (outcome, v) in [
            ("local", self.local),
            ("forwarded", self.forwarded),
            ("nxdomain", self.nxdomain),
            ("refused", self.refused),
            ("servfail", self.servfail),
            ("error", self.errors),
            ("dropped", self.dropped),
            ("truncated", self.truncated),
            ("recursion_refused", self.recursion_refused),
            ("rrl_dropped", self.rrl_dropped),
            ("rrl_slipped", self.rrl_slipped),
        ] {
            metrics::counter!(DNS_RESPONSES, "outcome" => outcome).absolute(v);
        }
    }
}

/// What to do with a query.
pub enum Outcome {
    /// Send these bytes back.
    Reply(Vec<u8>),
    /// Resolve upstream first ([`DnsHandler::complete`]).
    Forward(Box<ForwardJob>),
    /// Send nothing.
    Drop,
}

/// A query that needs the upstreams.
pub struct ForwardJob {
    raw: Vec<u8>,
    req: Message,
    upstreams: Arc<Vec<SocketAddr>>,
    limit: usize,
    /// Local CNAME answers whose target must be resolved upstream (then `raw` is unused).
    chase: Option<(Message, Name)>,
}

/// State shared by every transport task: the current zone, upstreams and counters.
#[derive(Default)]
pub struct Shared {
    /// Current zone snapshot.
    pub zone: RwLock<Option<Arc<Zone>>>,
    /// Current upstream list.
    pub upstreams: RwLock<Arc<Vec<SocketAddr>>>,
    /// Counters.
    pub metrics: DnsMetrics,
    /// Prefixes of the clients that may recurse ([`super::acl`]); `None` lets everyone
    /// (a bare handler in tests; the DNS service always sets it).
    recursion: RwLock<Option<Arc<Vec<IpNet>>>>,
    /// Response rate limiting of UDP answers; `None`: off.
    rrl: RwLock<Option<Arc<Rrl>>>,
    /// Encoded answers by [`cache_key`]; emptied whenever the zone or the upstreams change.
    cache: Mutex<HashMap<Vec<u8>, Arc<[u8]>>>,
    /// Bumped (before the cache is emptied) on every zone or upstream change, so an answer
    /// computed from the old data is never inserted afterwards.
    generation: AtomicU64,
}

/// Most cached answers; the cache is emptied when it is full (and on every data change).
pub const ANSWER_CACHE_CAPACITY: usize = 65_536;

/// The cache key of a query the answer cache may serve, or `None` to take the full path.
/// Only plain queries qualify: QR=0, opcode QUERY, QDCOUNT=1, no answer/authority records,
/// at most an OPT of version 0 in the additional section, no compression in the question.
/// The key holds the RD bit, the question exactly as sent (case included: it is echoed),
/// whether there was an OPT and its DO bit, the answer size limit and the client's scope —
/// everything the answer bytes depend on besides the ID.
fn cache_key(b: &[u8], limit_for: impl Fn(Option<u16>) -> usize, scope: impl Fn() -> u32) -> Option<Vec<u8>> {
    let be16 = |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    if b.len() < 12 || b[2] & 0xf8 != 0 || be16(4)? != 1 || be16(6)? != 0 || be16(8)? != 0 || be16(10)? > 1 {
        return None;
    }
    let mut i = 12;
    loop {
        let l = *b.get(i)? as usize;
        if l == 0 {
            break;
        }
        if l & 0xc0 != 0 || i + 1 + l > 12 + 255 {
            return None;
        }
        i += 1 + l;
    }
    let qend = i + 5; // root byte, QTYPE, QCLASS
    if qend > b.len() {
        return None;
    }
    // Zone transfers are answered by transport (see `transfer_over_udp`); a UDP answer
    // must never be replayed over TCP, so they are never cached.
    if matches!(be16(qend - 4)?, 251 | 252) {
        return None;
    }
    let (edns, end) = if be16(10)? == 1 {
        // OPT: root owner, TYPE 41, CLASS = UDP size, TTL = ext-rcode/version/flags, RDLEN.
        if *b.get(qend)? != 0 || be16(qend + 1)? != 41 || *b.get(qend + 6)? != 0 {
            return None;
        }
        let size = be16(qend + 3)?;
        let do_bit = *b.get(qend + 7)? & 0x80;
        let end = qend + 11 + be16(qend + 9)? as usize;
        // Options are not part of the key, so a query whose COOKIE is malformed must take
        // the full path (FORMERR, RFC 7873 §5.2.2) instead of a cached answer.
        let mut o = qend + 11;
        while o < end {
            let (code, len) = (be16(o)?, be16(o + 2)? as usize);
            if code == 10 && !cookie_len_ok(len) {
                return None;
            }
            o += 4 + len;
        }
        (Some((size, do_bit)), end)
    } else {
        (None, qend)
    };
    if end != b.len() {
        return None;
    }
    let mut key = Vec::with_capacity(qend - 12 + 12);
    key.push(b[2] & 0x01);
    key.extend_from_slice(&b[12..qend]);
    key.push(edns.map_or(0, |(_, d)| 1 | d));
    key.extend_from_slice(&(limit_for(edns.map(|(s, _)| s)) as u32).to_be_bytes());
    key.extend_from_slice(&scope().to_be_bytes());
    Some(key)
}

/// The request handler. Cheap to clone.
#[derive(Clone, Default)]
pub struct DnsHandler {
    /// Shared state.
    pub shared: Arc<Shared>,
}

fn formerr_from_header(bytes: &[u8], rcode: u8) -> Vec<u8> {
    // Header only: ID, QR=1, the query's opcode, RD for a QUERY only (see `not_implemented`),
    // the given RCODE, all counts 0.
    let mut h = vec![0u8; 12];
    h[..2].copy_from_slice(&bytes[..2]);
    let opcode = bytes[2] & 0x78;
    h[2] = 0x80 | opcode | if opcode == 0 { bytes[2] & 0x01 } else { 0 };
    h[3] = rcode & 0x0f;
    h
}

/// The NOTIMP answer to an opcode other than QUERY (RFC 1035 §4.1.1): the ID, QR and the
/// opcode echoed, RCODE 4, every other flag clear and no question, plus our OPT when the
/// query had one (RFC 6891 §7; DO copied, RFC 3225 §3). RD, AA and RA are defined for QUERY only (RFC 1035
/// §4.1.1; RFC 6895 §2 lists them per opcode), and AD/CD for DNSSEC queries only
/// (RFC 4035 §3.2), so none is echoed: BIND (`dns_message_reply` without a question for
/// other opcodes) and Knot answer the same way, and ISC's compliance test
/// (genreport `opcodeflg`) reports an echoed RD as a failure.
fn not_implemented(req: &Message) -> Message {
    let mut resp = Message::new(req.id, MessageType::Response, req.op_code);
    resp.metadata.response_code = ResponseCode::NotImp;
    if let Some(ours) = our_edns(req) {
        resp.set_edns(ours);
    }
    resp
}

/// Our OPT record for an answer to `req` when it carried one (RFC 6891): our UDP payload
/// size ([`EDNS_UDP_SIZE`]), version 0, and the DO bit copied (RFC 3225 §3).
fn our_edns(req: &Message) -> Option<Edns> {
    req.edns.as_ref().map(|e| {
        let mut ours = Edns::new();
        ours.set_max_payload(EDNS_UDP_SIZE);
        ours.set_version(0);
        ours.set_dnssec_ok(e.flags().dnssec_ok);
        ours
    })
}

impl DnsHandler {
    /// Replaces the zone snapshot.
    pub fn set_zone(&self, zone: Arc<Zone>) {
        *self.shared.zone.write().expect("zone lock") = Some(zone);
        self.invalidate();
    }

    /// Replaces the upstream list.
    pub fn set_upstreams(&self, ups: Vec<SocketAddr>) {
        *self.shared.upstreams.write().expect("upstream lock") = Arc::new(ups);
        self.invalidate();
    }

    /// Replaces the prefixes of the clients that may recurse (`None`: everyone). A no-op
    /// when they did not change, so a periodic refresh keeps the answer cache.
    pub fn set_recursion_acl(&self, nets: Option<Vec<IpNet>>) {
        let new = nets.map(Arc::new);
        {
            let mut cur = self.shared.recursion.write().expect("recursion lock");
            if *cur == new {
                return;
            }
            *cur = new;
        }
        self.invalidate();
    }

    /// The prefixes of the clients that may recurse (`None`: everyone).
    pub fn recursion_acl(&self) -> Option<Arc<Vec<IpNet>>> {
        self.shared.recursion.read().expect("recursion lock").clone()
    }

    /// Replaces the response rate limiter (`None`: no limit).
    pub fn set_rrl(&self, rrl: Option<Rrl>) {
        *self.shared.rrl.write().expect("rrl lock") = rrl.map(Arc::new);
    }

    /// Response rate limiting of a UDP answer `out` to `client` (RFC-less practice of
    /// Knot and BIND, see [`super::rrl`]): the bytes to send — `out` itself, or the slip
    /// ([`slip`]) — or `None` to drop it. TCP answers are never limited.
    pub fn limit_udp(&self, client: IpAddr, out: Vec<u8>) -> Option<Vec<u8>> {
        let rrl = self.shared.rrl.read().expect("rrl lock").clone();
        let Some(rrl) = rrl else { return Some(out) };
        match rrl.check(client) {
            Verdict::Send => Some(out),
            Verdict::Slip => {
                self.shared.metrics.rrl_slipped.fetch_add(1, Relaxed);
                Some(slip(&out))
            }
            Verdict::Drop => {
                self.shared.metrics.rrl_dropped.fetch_add(1, Relaxed);
                None
            }
        }
    }

    fn may_recurse(&self, client: IpAddr) -> bool {
        self.shared
            .recursion
            .read()
            .expect("recursion lock")
            .as_ref()
            .is_none_or(|nets| acl::allows(nets, client))
    }

    fn invalidate(&self) {
        self.shared.generation.fetch_add(1, Relaxed);
        self.shared.cache.lock().expect("answer cache lock").clear();
    }

    /// The current zone, if built.
    pub fn zone(&self) -> Option<Arc<Zone>> {
        self.shared.zone.read().expect("zone lock").clone()
    }

    /// Handles one query from `client` received over `transport`.
    pub fn handle(&self, bytes: &[u8], client: IpAddr, transport: Transport) -> Outcome {
        let m = &self.shared.metrics;
        match transport {
            Transport::Udp => m.queries_udp.fetch_add(1, Relaxed),
            Transport::Tcp => m.queries_tcp.fetch_add(1, Relaxed),
        };
        if bytes.len() < 12 || bytes[2] & 0x80 != 0 {
            m.dropped.fetch_add(1, Relaxed);
            return Outcome::Drop;
        }
        // The answer cache: a repeated plain query gets the same bytes with its own ID,
        // without decoding, looking up or encoding anything (the XDP path's idea, for
        // every query type and outcome userspace answers itself).
        let zone = self.zone();
        let generation = self.shared.generation.load(Relaxed);
        let key = zone.as_ref().and_then(|z| {
            let limit = |size: Option<u16>| match transport {
                Transport::Tcp => 65535,
                Transport::Udp => size.map_or(512, |s| s.max(512) as usize),
            };
            cache_key(bytes, limit, || z.scope_of(Some(client)))
        });
        if let Some(k) = &key {
            let hit = self.shared.cache.lock().expect("answer cache lock").get(k).cloned();
            if let Some(cached) = hit {
                let mut out = cached.to_vec();
                out[..2].copy_from_slice(&bytes[..2]);
                count_cached(&out, m);
                return Outcome::Reply(out);
            }
        }
        let (outcome, cacheable) = self.handle_uncached(bytes, client, transport);
        if let (Some(k), Outcome::Reply(out), true) = (key, &outcome, cacheable) {
            let mut cache = self.shared.cache.lock().expect("answer cache lock");
            if self.shared.generation.load(Relaxed) == generation {
                if cache.len() >= ANSWER_CACHE_CAPACITY {
                    cache.clear();
                }
                cache.insert(k, Arc::from(out.as_slice()));
            }
        }
        outcome
    }

    /// The full path. The flag is false for answers that depend on the client beyond its
    /// scope (the recursion ACL): those must not be replayed from the cache.
    fn handle_uncached(&self, bytes: &[u8], client: IpAddr, transport: Transport) -> (Outcome, bool) {
        let mut cacheable = true;
        let outcome = self.answer(bytes, client, transport, &mut cacheable);
        (outcome, cacheable)
    }

    fn answer(&self, bytes: &[u8], client: IpAddr, transport: Transport, cacheable: &mut bool) -> Outcome {
        let m = &self.shared.metrics;
        let req = match Message::from_vec(bytes) {
            Ok(r) => r,
            Err(_) => {
                m.errors.fetch_add(1, Relaxed);
                return Outcome::Reply(formerr_from_header(bytes, 1));
            }
        };
        let limit = match transport {
            Transport::Tcp => 65535,
            Transport::Udp => req.edns.as_ref().map_or(512, |e| e.max_payload().max(512) as usize),
        };
        if req.op_code != OpCode::Query {
            m.errors.fetch_add(1, Relaxed);
            return Outcome::Reply(encode(&mut not_implemented(&req), limit, m));
        }
        let mut resp = self.response_for(&req);
        if req.queries.len() != 1 {
            m.errors.fetch_add(1, Relaxed);
            resp.queries.clear();
            resp.metadata.response_code = ResponseCode::FormErr;
            return Outcome::Reply(encode(&mut resp, limit, m));
        }
        if req.edns.as_ref().is_some_and(|e| e.version() > 0) {
            m.errors.fetch_add(1, Relaxed);
            resp.metadata.response_code = ResponseCode::BADVERS;
            return Outcome::Reply(encode(&mut resp, limit, m));
        }
        if req.edns.as_ref().is_some_and(|e| malformed_cookie(e.options())) {
            m.errors.fetch_add(1, Relaxed);
            resp.metadata.response_code = ResponseCode::FormErr;
            return Outcome::Reply(encode(&mut resp, limit, m));
        }
        let q = &req.queries[0];
        if let Some(rcode) = transfer_over_udp(q.query_type(), transport) {
            m.errors.fetch_add(1, Relaxed);
            resp.metadata.response_code = rcode;
            return Outcome::Reply(encode(&mut resp, limit, m));
        }
        let Some(zone) = self.zone() else {
            resp.metadata.response_code = ResponseCode::ServFail;
            return Outcome::Reply(encode(&mut resp, limit, m));
        };
        resp.metadata.recursion_available = zone.recursion_available();
        let lookup = if q.query_class() == DNSClass::IN {
            zone.lookup(q.name(), q.query_type(), zone.scope_of(Some(client)))
        } else {
            Lookup::NotLocal
        };
        match lookup {
            Lookup::Answer { answers, chase } => {
                m.local.fetch_add(1, Relaxed);
                resp.metadata.authoritative = true;
                resp.answers = answers;
                if let Some(target) = chase {
                    let ups = self.shared.upstreams.read().expect("upstream lock").clone();
                    // Chasing a CNAME out of the zone is recursion: only for allowed
                    // clients; the others get the local CNAME alone.
                    *cacheable &= ups.is_empty();
                    if !ups.is_empty() && q.query_type() != RecordType::CNAME && self.may_recurse(client) {
                        return Outcome::Forward(Box::new(ForwardJob {
                            raw: Vec::new(),
                            req,
                            upstreams: ups,
                            limit,
                            chase: Some((resp, target)),
                        }));
                    }
                }
                Outcome::Reply(encode(&mut resp, limit, m))
            }
            Lookup::NoData { soa } => {
                m.local.fetch_add(1, Relaxed);
                resp.metadata.authoritative = true;
                resp.authorities.extend(soa.map(|mut s| {
                    s.ttl = super::zone::NEGATIVE_TTL;
                    s
                }));
                Outcome::Reply(encode(&mut resp, limit, m))
            }
            Lookup::NxDomain { mut soa } => {
                m.local.fetch_add(1, Relaxed);
                m.nxdomain.fetch_add(1, Relaxed);
                resp.metadata.authoritative = true;
                resp.metadata.response_code = ResponseCode::NXDomain;
                soa.ttl = super::zone::NEGATIVE_TTL;
                resp.authorities.push(soa);
                Outcome::Reply(encode(&mut resp, limit, m))
            }
            Lookup::NotLocal => {
                let ups = self.shared.upstreams.read().expect("upstream lock").clone();
                if !ups.is_empty() && !self.may_recurse(client) {
                    // `allow_recursion`: a client outside the list gets REFUSED (RFC 5358
                    // §4, BIND's `allow-recursion`), never cached (the next client may be
                    // allowed).
                    *cacheable = false;
                    m.recursion_refused.fetch_add(1, Relaxed);
                    resp.metadata.response_code = ResponseCode::Refused;
                    return Outcome::Reply(encode(&mut resp, limit, m));
                }
                if ups.is_empty() {
                    m.refused.fetch_add(1, Relaxed);
                    resp.metadata.response_code = ResponseCode::Refused;
                    return Outcome::Reply(encode(&mut resp, limit, m));
                }
                Outcome::Forward(Box::new(ForwardJob {
                    raw: bytes.to_vec(),
                    req,
                    upstreams: ups,
                    limit,
                    chase: None,
                }))
            }
        }
    }

    /// Completes a forwarding job: asks the upstreams and returns the bytes to send
    /// (SERVFAIL when every upstream failed).
    pub async fn complete(&self, job: Box<ForwardJob>) -> Option<Vec<u8>> {
        let m = &self.shared.metrics;
        m.forwarded.fetch_add(1, Relaxed);
        if let Some((mut resp, target)) = job.chase {
            let qtype = job.req.queries[0].query_type();
            let mut q = Message::query();
            q.metadata.recursion_desired = true;
            q.add_query(Query::query(target, qtype));
            if let Ok(bytes) = q.to_vec() {
                if let Some(ans) = upstream::forward(&bytes, &job.upstreams)
                    .await
                    .and_then(|r| Message::from_vec(&r).ok())
                {
                    resp.answers.extend(ans.answers);
                }
            }
            return Some(encode(&mut resp, job.limit, m));
        }
        match upstream::forward(&job.raw, &job.upstreams).await {
            Some(r) if r.len() <= job.limit => Some(r),
            Some(r) => match Message::from_vec(&r) {
                Ok(mut msg) => Some(encode(&mut msg, job.limit, m)),
                Err(_) => None,
            },
            None => {
                m.servfail.fetch_add(1, Relaxed);
                let mut resp = self.response_for(&job.req);
                resp.metadata.recursion_available = true;
                resp.metadata.response_code = ResponseCode::ServFail;
                Some(encode(&mut resp, job.limit, m))
            }
        }
    }

    fn response_for(&self, req: &Message) -> Message {
        let mut resp = Message::new(req.id, MessageType::Response, req.op_code);
        resp.metadata.recursion_desired = req.recursion_desired;
        resp.queries = req.queries.clone();
        if let Some(ours) = our_edns(req) {
            resp.set_edns(ours);
        }
        resp
    }
}

/// RFC 7873 §5.2.2: a COOKIE option (code 10) whose length is not 8 (client cookie
/// only) or 16 to 40 (client cookie plus an 8-32 byte server cookie) is malformed and
/// answered FORMERR. Bootlane implements no server cookies; well-formed options are
/// ignored (§5.2.1 allows a server without cookie support to do so).
pub fn malformed_cookie(opt: &OPT) -> bool {
    opt.get_all(EdnsCode::Cookie)
        .iter()
        .any(|o| !cookie_len_ok(usize::from(o.len())))
}

/// The COOKIE option lengths RFC 7873 §4 allows: 8, or 16 to 40.
pub fn cookie_len_ok(len: usize) -> bool {
    len == 8 || (16..=40).contains(&len)
}

/// The answer to a zone-transfer query over UDP, or `None` when `qtype`/`transport` is
/// not one.
///
/// - AXFR: RFC 5936 §4.2 says "AXFR sessions over UDP transport are not defined"; we
///   answer FORMERR, as BIND does (`xfrout.c`: `FAILC(DNS_R_FORMERR, "attempted AXFR
///   over UDP")`), so the client learns at once to use TCP rather than timing out.
/// - IXFR: RFC 1995 §2 does allow IXFR over UDP, so the query is not malformed and
///   FORMERR would be wrong. Bootlane serves no zone transfers at all (it is not a
///   primary for secondaries), so it answers NOTIMP (RFC 1035 §4.1.1: "does not support
///   the requested kind of query"), not the SOA-only reply that would tell the client to
///   retry over TCP for a transfer that does not exist there either.
pub fn transfer_over_udp(qtype: RecordType, transport: Transport) -> Option<ResponseCode> {
    match (qtype, transport) {
        (RecordType::AXFR, Transport::Udp) => Some(ResponseCode::FormErr),
        (RecordType::IXFR, Transport::Udp) => Some(ResponseCode::NotImp),
        _ => None,
    }
}

/// The slip of an answer over the rate limit: the same answer with TC set and its
/// answer, authority and additional records removed (the question and our OPT stay), so a
/// real client retries over TCP (RFC 7766 §5) while a reflected flood gains nothing. The
/// XDP fast path builds the same bytes for the answers it limits.
pub fn slip(out: &[u8]) -> Vec<u8> {
    match Message::from_vec(out) {
        Ok(mut m) => {
            m.metadata.truncation = true;
            m.answers.clear();
            m.authorities.clear();
            m.additionals.clear();
            m.to_vec().unwrap_or_else(|_| slip_header(out))
        }
        Err(_) => slip_header(out),
    }
}

/// The bare header of `out` with TC set and every count 0 (an answer we could not decode).
fn slip_header(out: &[u8]) -> Vec<u8> {
    let mut h = out.get(..12).map_or_else(|| vec![0; 12], <[u8]>::to_vec);
    h[2] |= 0x02;
    h[4..].fill(0);
    h
}

/// Counts a cached answer like the full path counted it, from its header: AA means local
/// data, RCODE 3 NXDOMAIN, RCODE 5 REFUSED, TC truncated.
fn count_cached(out: &[u8], m: &DnsMetrics) {
    let rcode = out[3] & 0x0f;
    if out[2] & 0x04 != 0 {
        m.local.fetch_add(1, Relaxed);
    }
    if out[2] & 0x02 != 0 {
        m.truncated.fetch_add(1, Relaxed);
    }
    match rcode {
        3 => m.nxdomain.fetch_add(1, Relaxed),
        5 => m.refused.fetch_add(1, Relaxed),
        _ => 0,
    };
}

/// Encodes `msg`; when it exceeds `limit` bytes, sends it with TC and no records.
fn encode(msg: &mut Message, limit: usize, m: &DnsMetrics) -> Vec<u8> {
    match msg.to_vec() {
        Ok(b) if b.len() <= limit => b,
        Ok(_) => {
            m.truncated.fetch_add(1, Relaxed);
            msg.metadata.truncation = true;
            msg.answers.clear();
            msg.authorities.clear();
            msg.additionals.clear();
            let b = msg.to_vec().unwrap_or_default();
            if b.len() <= limit {
                return b;
            }
            // Still too large: only an echoed question section can be that big (a NOTIMP
            // answer to a query with hundreds of questions was 1710 bytes; found by
            // fuzzing). A UDP answer never exceeds what the client can receive (RFC 1035
            // §4.2.1), so the questions go as well.
            msg.queries.clear();
            msg.to_vec().unwrap_or_default()
        }
        Err(e) => {
            tracing::warn!("cannot encode DNS answer: {e}");
            msg.answers.clear();
            msg.authorities.clear();
            msg.additionals.clear();
            msg.metadata.response_code = ResponseCode::ServFail;
            msg.to_vec().unwrap_or_default()
        }
    }
}
