//! Differential test of the fast path against the userspace server: for a generated
//! query set (A/AAAA, IPv4 and IPv6 transport, with and without EDNS, DO and a cookie,
//! mixed case, RD on/off, multi-record RRsets, subnet-scoped records, the server's
//! auto-records from two subnets, CNAMEs and misses), every answer the XDP program gives
//! must equal byte for byte what `bootlane::dns::handler::DnsHandler` returns for the
//! same query and client, and every query the projection covers must be answered by XDP
//! (not silently passed).

use std::{net::IpAddr, sync::Arc};

use bootlane::{
    dataplane::Projection,
    dns::{
        handler::{DnsHandler, Outcome, Transport, EDNS_UDP_SIZE},
        names::parse_domain,
        records::{validate, DnsRecord, RecordInput},
        zone::{Zone, ZoneInput},
    },
    net::IfAddr,
};
use bootlane_common::dns::{DnsConfig, CFG_FLAG_RA, QTYPE_A, QTYPE_AAAA};
use hickory_proto::{op::Message, rr::RecordType};

use crate::xdp_frames::{frame, loaded, parse, query, Edns};

fn rec(id: u64, name: &str, kind: &str, value: &str, subnet: Option<&str>, auto: bool) -> DnsRecord {
    let origin = parse_domain("lab.test").unwrap();
    let input = RecordInput {
        name: Some(name.into()),
        kind: Some(kind.into()),
        value: Some(value.into()),
        ttl: Some(if kind == "AAAA" { 120 } else { 300 }),
        subnet: subnet.map(String::from),
        ..Default::default()
    };
    let mut r = validate(&input, None, &origin, time::OffsetDateTime::now_utc())
        .unwrap_or_else(|e| panic!("{name} {kind} {value}: {e:?}"));
    r.id = id;
    r.auto = auto;
    r
}

fn ifaddr(iface: &str, cidr: &str) -> IfAddr {
    let net: ipnet::IpNet = cidr.parse().unwrap();
    IfAddr {
        iface: iface.into(),
        addr: net.addr(),
        net: net.trunc(),
    }
}

fn records() -> Vec<DnsRecord> {
    let mut v = vec![
        rec(1, "host1", "A", "10.0.0.11", None, false),
        rec(2, "host1", "A", "10.0.0.12", None, false),
        rec(3, "host1", "AAAA", "fd00::11", None, false),
        rec(4, "svc", "A", "192.0.2.1", None, false),
        rec(5, "svc", "A", "10.78.0.50", Some("10.78.0.0/24"), false),
        rec(6, "v6only", "AAAA", "fd00::66", None, false),
        rec(7, "v6only", "AAAA", "fd00::67", None, false),
        rec(8, "www", "CNAME", "host1", None, false),
        rec(9, "scoped6", "AAAA", "fd77::99", Some("fd77::/64"), false),
        rec(10, "@", "A", "10.77.0.1", None, true),
        rec(11, "bootlane", "A", "10.77.0.1", None, true),
        rec(12, "@", "AAAA", "fd77::1", None, true),
        rec(13, "bootlane", "AAAA", "fd77::1", None, true),
        rec(14, "nine", "MX", "10 host1", None, false),
    ];
    for i in 0..8u64 {
        v.push(rec(20 + i, "big", "A", &format!("10.1.0.{}", i + 1), None, false));
    }
    v
}

/// `name` with the case of letter `i` flipped when bit `i` of `mask` is set.
fn mixed_case(name: &str, mask: u32) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if mask >> (i % 32) & 1 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

#[test]
fn xdp_answers_equal_userspace_byte_for_byte() {
    for ra in [false, true] {
        let recs = records();
        let zone = Arc::new(Zone::build(ZoneInput {
            origin: parse_domain("lab.test").unwrap(),
            server_label: "bootlane",
            records: &recs,
            ifaddrs: vec![
                ifaddr("lo", "127.0.0.1/8"),
                ifaddr("vsrv", "10.77.0.1/24"),
                ifaddr("vsrv", "fd77::1/64"),
                ifaddr("vsrv2", "10.78.0.1/24"),
            ],
            serial: 7,
            recursion_available: ra,
        }));
        let handler = DnsHandler::default();
        handler.set_zone(zone.clone());
        let p = Projection {
            entries: zone.projection(),
            scopes: zone.scopes().collect(),
            server_addrs: ["10.77.0.1", "10.78.0.1", "fd77::1"]
                .iter()
                .map(|s| s.parse().unwrap())
                .collect(),
            config: DnsConfig {
                port: 53,
                edns_udp_size: EDNS_UDP_SIZE,
                flags: if ra { CFG_FLAG_RA } else { 0 },
                ..Default::default()
            },
        };
        let t = loaded(&p);
        let clients: [(&str, &str); 5] = [
            ("10.77.0.2", "10.77.0.1"),
            ("10.78.0.2", "10.78.0.1"),
            ("fd77::2", "fd77::1"),
            ("10.99.0.5", "10.77.0.1"),
            ("fd99::5", "fd77::1"),
        ];
        let names = [
            "host1.lab.test",
            "big.lab.test",
            "svc.lab.test",
            "v6only.lab.test",
            "scoped6.lab.test",
            "bootlane.lab.test",
            "lab.test",
            "www.lab.test",
            "nine.lab.test",
            "nope.lab.test",
            "other.example",
        ];
        let edns = [
            None,
            Some(Edns {
                dnssec_ok: false,
                version: 0,
                cookie: false,
                udp: 1232,
            }),
            Some(Edns {
                dnssec_ok: true,
                version: 0,
                cookie: true,
                udp: 4096,
            }),
        ];
        let (mut total, mut answered, mut must) = (0, 0, 0);
        let mut id = 0u16;
        for (ci, (c, s)) in clients.iter().enumerate() {
            let (c, s): (IpAddr, IpAddr) = (c.parse().unwrap(), s.parse().unwrap());
            for (ni, name) in names.iter().enumerate() {
                for qtype in [QTYPE_A, QTYPE_AAAA] {
                    for (ei, e) in edns.iter().enumerate() {
                        for rd in [true, false] {
                            id = id.wrapping_mul(31).wrapping_add(0x1234);
                            let mask = ((ci * 7 + ni * 3 + ei) as u32).wrapping_mul(0x9e37_79b9);
                            let qname = mixed_case(name, if rd { mask } else { 0 });
                            let q = query(id, &qname, qtype, rd, *e);
                            let Outcome::Reply(want) = handler.handle(&q, c, Transport::Udp) else {
                                panic!("userspace gave no reply for {qname}");
                            };
                            let m = Message::from_vec(&want).unwrap();
                            let rt = if qtype == QTYPE_A {
                                RecordType::A
                            } else {
                                RecordType::AAAA
                            };
                            let coverable = !m.answers.is_empty()
                                && m.answers.len() <= 8
                                && m.answers.iter().all(|r| r.record_type() == rt);
                            total += 1;
                            must += usize::from(coverable);
                            let (act, out) = t.test_run(&frame(None, c, s, 53, &q)).unwrap();
                            if act == 3 {
                                answered += 1;
                                let r = parse(&out);
                                assert_eq!(
                                    r.dns, want,
                                    "ra={ra} client {c} {qname} type {qtype} edns {e:?} rd {rd}:\nxdp  {:02x?}\nuser {:02x?}",
                                    r.dns, want
                                );
                            } else {
                                assert_eq!(act, 2, "only TX or PASS");
                                assert!(
                                    !coverable,
                                    "ra={ra} client {c} {qname} type {qtype}: userspace answers {:?} but XDP passed",
                                    m.answers
                                );
                            }
                        }
                    }
                }
            }
        }
        eprintln!(
            "differential ra={ra}: {total} queries, {answered} answered by XDP (all identical), {must} coverable"
        );
        assert_eq!(answered, must, "XDP answers exactly the coverable queries");
        assert!(answered > 100, "a meaningful share answered: {answered}");
    }
}

/// Response rate limiting agrees between the paths: with one answer per second per
/// prefix and slip 2, a burst of queries from one /24 (or /56) gets, from XDP and from
/// userspace alike, the answer, then drop, slip, drop, slip…, each slip byte for byte the
/// userspace slip (TC=1, the question and OPT kept, no records); another prefix is
/// unaffected; the XDP counters count what was dropped and slipped.
#[test]
fn xdp_rrl_limits_and_slips_like_userspace() {
    use bootlane::dns::rrl::{Rrl, RrlConfig};
    let recs = records();
    let zone = Arc::new(Zone::build(ZoneInput {
        origin: parse_domain("lab.test").unwrap(),
        server_label: "bootlane",
        records: &recs,
        ifaddrs: vec![ifaddr("vsrv", "10.77.0.1/24"), ifaddr("vsrv", "fd77::1/64")],
        serial: 7,
        recursion_available: false,
    }));
    let rrl = RrlConfig {
        responses_per_second: 1,
        slip: 2,
        ..RrlConfig::default()
    };
    let handler = DnsHandler::default();
    handler.set_zone(zone.clone());
    handler.set_rrl(Some(Rrl::new(&rrl)));
    let (mask_v4, mask_v6) = rrl.mask_words();
    let p = Projection {
        entries: zone.projection(),
        scopes: zone.scopes().collect(),
        server_addrs: ["10.77.0.1", "fd77::1"].iter().map(|s| s.parse().unwrap()).collect(),
        config: DnsConfig {
            port: 53,
            edns_udp_size: EDNS_UDP_SIZE,
            rrl_interval_ns: rrl.interval_ns(),
            rrl_slip: rrl.slip,
            rrl_mask_v4: mask_v4,
            rrl_mask_v6: mask_v6,
            ..Default::default()
        },
    };
    let t = loaded(&p);
    let edns = Some(Edns {
        dnssec_ok: true,
        version: 0,
        cookie: false,
        udp: 1232,
    });
    // Each group is one prefix: its clients share the bucket.
    let groups: [&[(&str, &str)]; 3] = [
        &[("10.77.0.2", "10.77.0.1"), ("10.77.0.77", "10.77.0.1")],
        &[("fd77::2", "fd77::1"), ("fd77:0:0:ff::9", "fd77::1")],
        &[("10.77.1.2", "10.77.0.1")],
    ];
    let mut id = 0u16;
    let (mut dropped, mut slipped) = (0u64, 0u64);
    for group in groups {
        let mut seen = Vec::new();
        for i in 0..8 {
            let (c, s) = group[i % group.len()];
            let (c, s): (IpAddr, IpAddr) = (c.parse().unwrap(), s.parse().unwrap());
            id = id.wrapping_add(1);
            let (name, qtype) = if i % 3 == 0 {
                ("host1.lab.test", QTYPE_AAAA)
            } else {
                ("Host1.lab.test", QTYPE_A)
            };
            let q = query(id, name, qtype, i % 2 == 0, if i % 2 == 0 { edns } else { None });
            let Outcome::Reply(full) = handler.handle(&q, c, Transport::Udp) else {
                panic!("userspace gave no reply");
            };
            let want = handler.limit_udp(c, full.clone());
            let (act, out) = t.test_run(&frame(None, c, s, 53, &q)).unwrap();
            match &want {
                None => {
                    assert_eq!(act, 1, "{c} query {i}: userspace dropped, XDP must drop (XDP_DROP)");
                    seen.push("drop");
                    dropped += 1;
                }
                Some(w) => {
                    assert_eq!(act, 3, "{c} query {i}: userspace sent, XDP must send");
                    let r = parse(&out);
                    assert_eq!(&r.dns, w, "{c} query {i}:\nxdp  {:02x?}\nuser {w:02x?}", r.dns);
                    let m = Message::from_vec(w).unwrap();
                    if m.metadata.truncation {
                        assert!(m.answers.is_empty() && !m.queries.is_empty());
                        assert_eq!(m.edns.is_some(), i % 2 == 0, "OPT kept in the slip");
                        seen.push("slip");
                        slipped += 1;
                    } else {
                        assert_eq!(w, &full);
                        seen.push("send");
                    }
                }
            }
        }
        assert_eq!(
            seen,
            ["send", "drop", "slip", "drop", "slip", "drop", "slip", "drop"],
            "{group:?}"
        );
    }
    let c = bootlane::dataplane::DnsTable::status(&t).counters;
    assert_eq!((c.rrl_dropped, c.rrl_slipped, c.answered), (dropped, slipped, 3));
    let m = handler.shared.metrics.snapshot();
    assert_eq!((m.rrl_dropped, m.rrl_slipped), (dropped, slipped));
}
