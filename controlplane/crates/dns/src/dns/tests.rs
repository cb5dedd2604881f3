//! Handler tests from raw query bytes (house style level a): every answer shape the DNS
//! server gives, checked by decoding the reply with hickory-proto.

use std::{net::IpAddr, sync::Arc};

use hickory_proto::{
    op::{Edns, Message, MessageType, OpCode, Query, ResponseCode},
    rr::{Name, RData, RecordType},
};
use time::OffsetDateTime;

use super::{
    handler::{DnsHandler, Outcome, Transport},
    names,
    records::{self, DnsRecord, RecordInput},
    zone::{Zone, ZoneInput},
};
use bootlane_core::net::IfAddr;

fn ifaddr(iface: &str, cidr: &str) -> IfAddr {
    let net: ipnet::IpNet = cidr.parse().unwrap();
    IfAddr {
        iface: iface.into(),
        addr: net.addr(),
        net: net.trunc(),
    }
}

fn rec(id: u64, name: &str, kind: &str, value: &str, subnet: Option<&str>) -> DnsRecord {
    let origin = names::parse_domain("lab.test").unwrap();
    let input = RecordInput {
        name: Some(name.into()),
        kind: Some(kind.into()),
        value: Some(value.into()),
        subnet: subnet.map(Into::into),
        ..Default::default()
    };
    let mut r = records::validate(&input, None, &origin, OffsetDateTime::now_utc()).unwrap();
    r.id = id;
    r
}

fn auto(id: u64, name: &str, kind: &str, value: &str) -> DnsRecord {
    let mut r = rec(id, name, kind, value, None);
    r.auto = true;
    r
}

fn zone(upstream: bool) -> Zone {
    let records = vec![
        auto(1, "@", "A", "10.1.0.1"),
        auto(2, "bootlane", "A", "10.1.0.1"),
        auto(3, "bootlane", "AAAA", "fd01::1"),
        rec(4, "host1", "A", "10.0.0.11", None),
        rec(5, "host1", "A", "10.0.0.12", None),
        rec(6, "host1", "AAAA", "fd00::11", None),
        rec(7, "www", "CNAME", "host1", None),
        rec(8, "ext", "CNAME", "www.example.com", None),
        rec(9, "@", "MX", "10 mail", None),
        rec(10, "@", "TXT", &"t".repeat(300), None),
        rec(11, "svc", "A", "192.0.2.1", None),
        rec(12, "svc", "A", "10.2.0.50", Some("10.2.0.0/24")),
        rec(13, "a.deep", "A", "10.0.0.99", None),
        rec(14, "big", "TXT", &"x".repeat(3000), None),
    ];
    Zone::build(ZoneInput {
        origin: names::parse_domain("lab.test").unwrap(),
        server_label: "bootlane",
        records: &records,
        ifaddrs: vec![
            ifaddr("lo", "127.0.0.1/8"),
            ifaddr("eth0", "10.1.0.1/24"),
            ifaddr("eth0", "fd01::1/64"),
            ifaddr("eth1", "10.2.0.1/24"),
        ],
        serial: 7,
        recursion_available: upstream,
    })
}

fn handler() -> DnsHandler {
    let h = DnsHandler::default();
    h.set_zone(Arc::new(zone(false)));
    h
}

fn query(name: &str, qtype: RecordType, edns: Option<u16>) -> Vec<u8> {
    let mut m = Message::new(0x1234, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(Name::from_ascii(name).unwrap(), qtype));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        e.set_dnssec_ok(true);
        m.set_edns(e);
    }
    m.to_vec().unwrap()
}

fn ask(h: &DnsHandler, bytes: &[u8], client: &str, t: Transport) -> Message {
    match h.handle(bytes, client.parse::<IpAddr>().unwrap(), t) {
        Outcome::Reply(b) => Message::from_vec(&b).unwrap(),
        _ => panic!("expected a direct reply"),
    }
}

fn addrs(m: &Message) -> Vec<String> {
    m.answers
        .iter()
        .map(|r| match &r.data {
            RData::A(a) => a.0.to_string(),
            RData::AAAA(a) => a.0.to_string(),
            RData::CNAME(c) => format!("CNAME {}", c.0),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_rrset_authoritative_case_insensitive() {
    let m = ask(
        &handler(),
        &query("HoSt1.Lab.Test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.response_code, ResponseCode::NoError);
    assert!(m.authoritative && m.recursion_desired && !m.recursion_available);
    assert_eq!(m.id, 0x1234);
    assert_eq!(addrs(&m), vec!["10.0.0.11", "10.0.0.12"]);
    // The owner is the query name as sent (compressed to the question).
    assert_eq!(m.answers[0].name.to_ascii(), "HoSt1.Lab.Test.");
    assert!(m.edns.is_none());
}

#[test]
fn cname_chain_is_followed() {
    let m = ask(
        &handler(),
        &query("www.lab.test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(addrs(&m), vec!["CNAME host1.lab.test.", "10.0.0.11", "10.0.0.12"]);
}

#[test]
fn nodata_and_nxdomain_carry_the_soa() {
    let h = handler();
    let m = ask(
        &h,
        &query("www2.lab.test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.response_code, ResponseCode::NXDomain);
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
    let m = ask(
        &h,
        &query("svc.lab.test.", RecordType::AAAA, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!((m.response_code, m.answers.len()), (ResponseCode::NoError, 0));
    assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
    // Empty non-terminal (RFC 8020): deep.lab.test exists because a.deep.lab.test does.
    let m = ask(
        &h,
        &query("deep.lab.test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!((m.response_code, m.answers.len()), (ResponseCode::NoError, 0));
}

#[test]
fn apex_soa_ns_mx_txt() {
    let h = handler();
    let m = ask(
        &h,
        &query("lab.test.", RecordType::SOA, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.answers[0].record_type(), RecordType::SOA);
    let m = ask(
        &h,
        &query("lab.test.", RecordType::NS, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.answers[0].record_type(), RecordType::NS);
    let m = ask(
        &h,
        &query("lab.test.", RecordType::MX, None),
        "10.9.9.9",
        Transport::Udp,
    );
    match &m.answers[0].data {
        RData::MX(mx) => assert_eq!((mx.preference, mx.exchange.to_ascii()), (10, "mail.lab.test.".into())),
        other => panic!("{other:?}"),
    }
    let m = ask(
        &h,
        &query("lab.test.", RecordType::TXT, None),
        "10.9.9.9",
        Transport::Udp,
    );
    match &m.answers[0].data {
        RData::TXT(t) => assert_eq!(t.txt_data.iter().map(|s| s.len()).collect::<Vec<_>>(), vec![255, 45]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn subnet_aware_auto_and_scoped_records() {
    let h = handler();
    let a = |client: &str, name: &str, t| addrs(&ask(&h, &query(name, t, None), client, Transport::Udp));
    assert_eq!(a("10.1.0.77", "bootlane.lab.test.", RecordType::A), vec!["10.1.0.1"]);
    assert_eq!(a("10.2.0.77", "bootlane.lab.test.", RecordType::A), vec!["10.2.0.1"]);
    assert_eq!(a("10.2.0.77", "lab.test.", RecordType::A), vec!["10.2.0.1"]);
    assert_eq!(a("10.9.9.9", "bootlane.lab.test.", RecordType::A), vec!["10.1.0.1"]);
    assert_eq!(a("fd01::99", "bootlane.lab.test.", RecordType::A), vec!["10.1.0.1"]);
    assert_eq!(a("10.1.0.77", "bootlane.lab.test.", RecordType::AAAA), vec!["fd01::1"]);
    assert_eq!(a("10.2.0.77", "svc.lab.test.", RecordType::A), vec!["10.2.0.50"]);
    assert_eq!(a("10.1.0.77", "svc.lab.test.", RecordType::A), vec!["192.0.2.1"]);
}

#[test]
fn edns_do_copied_and_truncation() {
    let h = handler();
    let m = ask(
        &h,
        &query("host1.lab.test.", RecordType::A, Some(4096)),
        "10.9.9.9",
        Transport::Udp,
    );
    let e = m.edns.as_ref().expect("OPT in answer");
    assert_eq!((e.max_payload(), e.version(), e.flags().dnssec_ok), (1232, 0, true));
    // 3000 bytes of TXT: truncated over plain UDP (512) and over EDNS 1232, whole over TCP.
    let m = ask(
        &h,
        &query("big.lab.test.", RecordType::TXT, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert!(m.truncation && m.answers.is_empty());
    let m = ask(
        &h,
        &query("big.lab.test.", RecordType::TXT, Some(1232)),
        "10.9.9.9",
        Transport::Udp,
    );
    assert!(m.truncation);
    let m = ask(
        &h,
        &query("big.lab.test.", RecordType::TXT, None),
        "10.9.9.9",
        Transport::Tcp,
    );
    assert!(!m.truncation && m.answers.len() == 1);
}

#[test]
fn refused_without_upstream_and_any_is_minimal() {
    let h = handler();
    let m = ask(
        &h,
        &query("example.com.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.response_code, ResponseCode::Refused);
    let m = ask(
        &h,
        &query("host1.lab.test.", RecordType::ANY, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].record_type(), RecordType::HINFO);
}

#[test]
fn forwards_when_upstream_configured() {
    let h = DnsHandler::default();
    h.set_zone(Arc::new(zone(true)));
    h.set_upstreams(vec!["127.0.0.1:9".parse().unwrap()]);
    assert!(matches!(
        h.handle(
            &query("example.com.", RecordType::A, None),
            "10.9.9.9".parse().unwrap(),
            Transport::Udp
        ),
        Outcome::Forward(_)
    ));
    // A local CNAME to an outside name is chased upstream too.
    assert!(matches!(
        h.handle(
            &query("ext.lab.test.", RecordType::A, None),
            "10.9.9.9".parse().unwrap(),
            Transport::Udp
        ),
        Outcome::Forward(_)
    ));
    let m = ask(
        &h,
        &query("host1.lab.test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert!(m.recursion_available);
}

#[test]
fn malformed_input_gets_formerr_notimp_badvers_or_silence() {
    let h = handler();
    // Runt: silence.
    assert!(matches!(
        h.handle(&[1, 2, 3], "10.9.9.9".parse().unwrap(), Transport::Udp),
        Outcome::Drop
    ));
    // A response (QR=1): silence.
    let mut resp = query("host1.lab.test.", RecordType::A, None);
    resp[2] |= 0x80;
    assert!(matches!(
        h.handle(&resp, "10.9.9.9".parse().unwrap(), Transport::Udp),
        Outcome::Drop
    ));
    // Header claims one question but the body is garbage: FORMERR with the ID.
    let bad = [0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
    let m = ask(&h, &bad, "10.9.9.9", Transport::Udp);
    assert_eq!((m.id, m.response_code), (0xabcd, ResponseCode::FormErr));
    // Two questions: FORMERR.
    let mut two = Message::new(7, MessageType::Query, OpCode::Query);
    two.add_query(Query::query(Name::from_ascii("a.lab.test.").unwrap(), RecordType::A));
    two.add_query(Query::query(Name::from_ascii("b.lab.test.").unwrap(), RecordType::A));
    assert_eq!(
        ask(&h, &two.to_vec().unwrap(), "10.9.9.9", Transport::Udp).response_code,
        ResponseCode::FormErr
    );
    // NOTIFY opcode: NOTIMP.
    let mut n = Message::new(8, MessageType::Query, OpCode::Notify);
    n.add_query(Query::query(Name::from_ascii("lab.test.").unwrap(), RecordType::SOA));
    assert_eq!(
        ask(&h, &n.to_vec().unwrap(), "10.9.9.9", Transport::Udp).response_code,
        ResponseCode::NotImp
    );
    // EDNS version 1: BADVERS.
    let mut q = Message::new(9, MessageType::Query, OpCode::Query);
    q.add_query(Query::query(
        Name::from_ascii("host1.lab.test.").unwrap(),
        RecordType::A,
    ));
    let mut e = Edns::new();
    e.set_version(1);
    q.set_edns(e);
    // BADVERS and BADSIG share code 16 (RFC 6891 §9); hickory decodes 16 as BADSIG.
    assert_eq!(
        u16::from(ask(&h, &q.to_vec().unwrap(), "10.9.9.9", Transport::Udp).response_code),
        16
    );
}

#[test]
fn random_bytes_never_panic() {
    let h = handler();
    let mut seed = 0x1234_5678_u64;
    for len in 0..600 {
        let mut b = query("host1.lab.test.", RecordType::A, Some(1232));
        for _ in 0..(len % 7 + 1) {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let i = (seed >> 33) as usize % b.len();
            b[i] = (seed >> 17) as u8;
        }
        b.truncate(len % (b.len() + 1));
        let _ = h.handle(&b, "10.9.9.9".parse().unwrap(), Transport::Udp);
    }
}

#[test]
fn projection_matches_lookup_and_scopes() {
    let z = zone(false);
    let p = z.projection();
    let find = |name: &str, qtype: u16, scope: u32| {
        let wire = names::to_wire_lower(&Name::from_ascii(name).unwrap());
        p.iter()
            .find(|(k, _)| k.scope == scope && k.qtype == qtype && k.qname[..k.qname_len as usize] == wire[..])
            .map(|(_, v)| *v)
    };
    let g = find("host1.lab.test.", 1, 0).expect("global host1 A");
    assert_eq!(
        (g.count, &g.addrs[0][..4], &g.addrs[1][..4]),
        (2, &[10, 0, 0, 11][..], &[10, 0, 0, 12][..])
    );
    assert!(find("www.lab.test.", 1, 0).is_none(), "CNAME answers stay in userspace");
    let s2 = z.scope_of(Some("10.2.0.5".parse().unwrap()));
    assert_ne!(s2, 0);
    assert_eq!(
        &find("svc.lab.test.", 1, s2).expect("scoped svc").addrs[0][..4],
        &[10, 2, 0, 50]
    );
    assert_eq!(
        &find("bootlane.lab.test.", 1, s2).expect("scoped auto").addrs[0][..4],
        &[10, 2, 0, 1]
    );
    assert!(
        find("host1.lab.test.", 1, s2).is_none(),
        "same as global: no scoped entry"
    );
}

#[test]
fn answer_cache_serves_repeats_and_follows_changes() {
    let h = handler();
    let reply = |id: u16, name: &str, client: &str| {
        let mut q = query(name, RecordType::A, Some(1232));
        q[..2].copy_from_slice(&id.to_be_bytes());
        match h.handle(&q, client.parse().unwrap(), Transport::Udp) {
            Outcome::Reply(b) => b,
            _ => panic!("expected a reply"),
        }
    };
    let first = reply(1, "host1.lab.test.", "10.9.9.9");
    let second = reply(2, "host1.lab.test.", "10.9.9.9");
    assert_eq!(
        (&first[2..], &second[..2]),
        (&second[2..], &[0u8, 2][..]),
        "same bytes, own ID"
    );
    // The question is echoed as sent, so another spelling is another entry.
    let upper = Message::from_vec(&reply(3, "HOST1.lab.test.", "10.9.9.9")).unwrap();
    assert_eq!(upper.queries[0].name().to_ascii(), "HOST1.lab.test.");
    // The scope is part of the key: the server's own name answers per subnet.
    let a = |b: Vec<u8>| addrs(&Message::from_vec(&b).unwrap());
    assert_eq!(a(reply(4, "bootlane.lab.test.", "10.1.0.7")), vec!["10.1.0.1"]);
    assert_eq!(a(reply(5, "bootlane.lab.test.", "10.2.0.7")), vec!["10.2.0.1"]);
    assert_eq!(a(reply(6, "bootlane.lab.test.", "10.1.0.7")), vec!["10.1.0.1"]);
    // A new zone empties the cache.
    let records = vec![rec(4, "host1", "A", "10.0.0.99", None)];
    h.set_zone(Arc::new(Zone::build(ZoneInput {
        origin: names::parse_domain("lab.test").unwrap(),
        server_label: "bootlane",
        records: &records,
        ifaddrs: vec![],
        serial: 8,
        recursion_available: false,
    })));
    assert_eq!(a(reply(7, "host1.lab.test.", "10.9.9.9")), vec!["10.0.0.99"]);
    let m = h.shared.metrics.snapshot();
    assert_eq!((m.queries_udp, m.local), (7, 7));
}

/// A query for `host1.lab.test. A` whose OPT carries one COOKIE option of `len` bytes.
fn cookie_query(len: usize) -> Vec<u8> {
    use hickory_proto::rr::rdata::opt::EdnsOption;
    let mut q = Message::new(0x4242, MessageType::Query, OpCode::Query);
    q.add_query(Query::query(
        Name::from_ascii("host1.lab.test.").unwrap(),
        RecordType::A,
    ));
    let mut e = Edns::new();
    e.set_max_payload(1232);
    e.options_mut()
        .insert(EdnsOption::Unknown(10, (0..len as u8).collect()));
    q.set_edns(e);
    q.to_vec().unwrap()
}

/// RFC 7873 §5.2.2: a COOKIE option of a length other than 8 or 16-40 is FORMERR;
/// well-formed ones are ignored (answered normally). Asked twice each, so the answer
/// cache can neither serve a malformed query nor be poisoned by one.
#[test]
fn malformed_cookie_is_formerr() {
    let h = handler();
    for len in [0, 1, 7, 9, 15, 41, 64] {
        for _ in 0..2 {
            let r = ask(&h, &cookie_query(len), "10.9.9.9", Transport::Udp);
            assert_eq!(r.response_code, ResponseCode::FormErr, "cookie length {len}");
            assert_eq!(r.id, 0x4242);
            assert!(r.answers.is_empty());
            assert!(r.edns.is_some(), "an EDNS query gets an OPT back (RFC 6891 §7)");
        }
    }
    for len in [8, 16, 24, 40] {
        for _ in 0..2 {
            let r = ask(&h, &cookie_query(len), "10.9.9.9", Transport::Udp);
            assert_eq!(r.response_code, ResponseCode::NoError, "cookie length {len}");
            assert_eq!(addrs(&r), ["10.0.0.11", "10.0.0.12"], "cookie length {len}");
        }
    }
    // A plain query for the same name, cached first, does not answer a malformed one.
    let plain = query("host1.lab.test.", RecordType::A, Some(1232));
    assert_eq!(
        ask(&h, &plain, "10.9.9.9", Transport::Udp).response_code,
        ResponseCode::NoError
    );
    let r = ask(&h, &cookie_query(5), "10.9.9.9", Transport::Udp);
    assert_eq!(r.response_code, ResponseCode::FormErr);
}

/// RFC 5936 §4.2: AXFR over UDP is FORMERR (as BIND answers); IXFR, which RFC 1995
/// allows over UDP, is NOTIMP (Bootlane serves no transfers). Over TCP neither rule
/// applies.
#[test]
fn zone_transfers_over_udp() {
    let h = handler();
    for _ in 0..2 {
        let r = ask(
            &h,
            &query("lab.test.", RecordType::AXFR, None),
            "10.9.9.9",
            Transport::Udp,
        );
        assert_eq!(r.response_code, ResponseCode::FormErr);
        assert!(r.answers.is_empty());
        let r = ask(
            &h,
            &query("lab.test.", RecordType::AXFR, Some(65535)),
            "10.9.9.9",
            Transport::Udp,
        );
        assert_eq!(r.response_code, ResponseCode::FormErr);
        let r = ask(
            &h,
            &query("lab.test.", RecordType::IXFR, None),
            "10.9.9.9",
            Transport::Udp,
        );
        assert_eq!(r.response_code, ResponseCode::NotImp);
    }
    // The same AXFR over TCP after the UDP ones: not the UDP answer from the cache.
    let r = ask(
        &h,
        &query("lab.test.", RecordType::AXFR, Some(65535)),
        "10.9.9.9",
        Transport::Tcp,
    );
    assert_ne!(r.response_code, ResponseCode::FormErr);
}

/// Fuzzing regression (`dns_handler`): a NOTIFY with 259 questions must not get a NOTIMP
/// echoing them all (1710 bytes over UDP to a client without EDNS). Every UDP answer fits 512
/// bytes (or the client's EDNS size): the questions are dropped when nothing else can go.
#[test]
fn regression_fuzz_udp_answer_never_exceeds_the_client_limit() {
    let mut q = vec![0xc9, 0x11, 0x20, 0x00, 0x01, 0x03, 0, 0, 0, 0, 0, 0];
    for _ in 0..259 {
        q.extend(b"\x03lab\x04test\x00\x00\x1c\x00\x01");
    }
    let Outcome::Reply(out) = handler().handle(&q, "10.77.0.2".parse().unwrap(), Transport::Udp) else {
        panic!("a direct reply");
    };
    assert!(out.len() <= 512, "{} bytes", out.len());
    let r = Message::from_vec(&out).unwrap();
    assert_eq!(r.metadata.response_code, ResponseCode::NotImp);
    assert_eq!(&out[..2], &[0xc9, 0x11]);
}

/// ISC's DNS compliance test (genreport `-f all`, `opcodeflg`): an unknown opcode with
/// every flag set was answered NOTIMP with RD echoed. RD, AA, RA, AD and CD are defined
/// for QUERY only: the answer is the bare header (ID, QR, opcode, NOTIMP), plus our OPT
/// when the query had one, for every opcode but QUERY and whatever flags the query set.
#[test]
fn regression_notimp_echoes_no_flags_and_no_question() {
    let h = handler();
    for opcode in [1u8, 2, 4, 5, 15] {
        for edns in [None, Some(1232)] {
            let mut q = query("host1.lab.test.", RecordType::A, edns);
            // Opcode, AA, TC and RD in byte 2; RA, Z, AD and CD in byte 3 (RFC 1035 §4.1.1,
            // RFC 4035 §3.2).
            q[2] = (opcode << 3) | 0x07;
            q[3] = 0xf0;
            let Outcome::Reply(out) = h.handle(&q, "10.9.9.9".parse().unwrap(), Transport::Udp) else {
                panic!("a direct reply");
            };
            let arcount = u8::from(edns.is_some());
            assert_eq!(
                &out[..12],
                &[0x12, 0x34, 0x80 | (opcode << 3), 0x04, 0, 0, 0, 0, 0, 0, 0, arcount],
                "opcode {opcode}, EDNS {edns:?}"
            );
            if edns.is_some() {
                // Our OPT: root owner, type 41, our UDP size, version 0, DO copied, no options.
                assert_eq!(&out[12..], &[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
            } else {
                assert_eq!(out.len(), 12);
            }
        }
    }
    // A QUERY keeps RD (and gets AA for local data).
    let m = ask(
        &h,
        &query("host1.lab.test.", RecordType::A, None),
        "10.9.9.9",
        Transport::Udp,
    );
    assert!(m.metadata.recursion_desired && m.metadata.authoritative);
    // An undecodable message with another opcode: FORMERR, no RD either.
    let bad = [0xab, 0xcd, 0x79, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
    let Outcome::Reply(out) = h.handle(&bad, "10.9.9.9".parse().unwrap(), Transport::Udp) else {
        panic!("a direct reply");
    };
    assert_eq!(out[2] & 0x01, 0, "no RD outside QUERY: {out:?}");
}

/// `allow_recursion`: a client outside the list gets REFUSED for a name outside the zone
/// (and a local CNAME unchased), one inside is forwarded, local names are answered to both,
/// and neither answer is replayed to the other from the answer cache.
#[test]
fn recursion_only_for_allowed_clients() {
    let h = DnsHandler::default();
    h.set_zone(Arc::new(zone(true)));
    h.set_upstreams(vec!["192.0.2.53:53".parse().unwrap()]);
    h.set_recursion_acl(Some(vec!["10.1.0.0/24".parse().unwrap(), "::1/128".parse().unwrap()]));
    let q = query("up.example.", RecordType::A, None);
    for round in 0..2 {
        assert!(
            matches!(
                h.handle(&q, "10.1.0.9".parse().unwrap(), Transport::Udp),
                Outcome::Forward(_)
            ),
            "round {round}: allowed client forwarded"
        );
        assert!(matches!(
            h.handle(&q, "::1".parse().unwrap(), Transport::Tcp),
            Outcome::Forward(_)
        ));
        let m = ask(&h, &q, "10.2.0.9", Transport::Udp);
        assert_eq!(m.response_code, ResponseCode::Refused, "round {round}");
        assert!(m.answers.is_empty());
        // The local CNAME pointing out of the zone: answered, not chased, for the outsider.
        let ext = query("ext.lab.test.", RecordType::A, None);
        let m = ask(&h, &ext, "10.2.0.9", Transport::Udp);
        assert_eq!(m.response_code, ResponseCode::NoError);
        assert_eq!(m.answers.len(), 1, "the CNAME alone");
        assert!(matches!(
            h.handle(&ext, "10.1.0.9".parse().unwrap(), Transport::Udp),
            Outcome::Forward(_)
        ));
        // Local names: everyone.
        let m = ask(
            &h,
            &query("host1.lab.test.", RecordType::A, None),
            "10.2.0.9",
            Transport::Udp,
        );
        assert_eq!((m.response_code, m.answers.len()), (ResponseCode::NoError, 2));
    }
    assert_eq!(h.shared.metrics.snapshot().recursion_refused, 2);
}
