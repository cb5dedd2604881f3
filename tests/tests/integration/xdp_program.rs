//! The XDP program in isolation (house style 12c): the embedded object's map names match
//! `common::dns`, and `BPF_PROG_TEST_RUN` on crafted Ethernet/IPv4/IPv6/802.1Q frames
//! gives `XDP_TX` with a valid, decodable answer for every supported shape and `XDP_PASS`
//! with the frame untouched for everything else, each counted under the right reason.
//! Also measures how long 100,000 records take to load into the map (it must stay under 2 s).

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    time::Instant,
};

use bootlane::dataplane::{xdp::XdpTable, DnsTable, Projection};
use bootlane_common::dns::{
    DnsConfig, DNS_CONFIG, DNS_COUNTERS, DNS_KEY_SCRATCH, DNS_RECORDS, DNS_RRL, DNS_SCOPES, DNS_SCRATCH,
    DNS_SERVER_ADDRS, QTYPE_A, QTYPE_AAAA,
};
use hickory_proto::{
    op::{Message, ResponseCode},
    rr::{RData, RecordType},
};

use crate::xdp_frames::{answer, frame, key, parse, query, require_root, Edns};

const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

fn v4(s: &str) -> IpAddr {
    IpAddr::V4(s.parse::<Ipv4Addr>().unwrap())
}
fn v6(s: &str) -> IpAddr {
    IpAddr::V6(s.parse::<Ipv6Addr>().unwrap())
}

fn projection() -> Projection {
    let big: Vec<IpAddr> = (1..=8).map(|i| v4(&format!("10.1.0.{i}"))).collect();
    Projection {
        entries: vec![
            (
                key("host1.lab.test", QTYPE_A, 0),
                answer(300, &[v4("10.0.0.11"), v4("10.0.0.12")]),
            ),
            (key("host1.lab.test", QTYPE_AAAA, 0), answer(120, &[v6("fd00::11")])),
            (key("big.lab.test", QTYPE_A, 0), answer(60, &big)),
            (key("svc.lab.test", QTYPE_A, 0), answer(300, &[v4("192.0.2.1")])),
            (key("svc.lab.test", QTYPE_A, 1), answer(300, &[v4("10.78.0.50")])),
            (key("pass.lab.test", QTYPE_A, 0), answer(300, &[v4("192.0.2.2")])),
            (key("pass.lab.test", QTYPE_A, 1), answer(300, &[])),
        ],
        scopes: vec![("10.78.0.0/24".parse().unwrap(), 1), ("fd78::/64".parse().unwrap(), 1)],
        server_addrs: vec![v4("10.77.0.1"), v4("10.78.0.1"), v6("fd77::1")],
        config: DnsConfig {
            port: 53,
            edns_udp_size: 1232,
            flags: 0,
            ..Default::default()
        },
    }
}

fn run(t: &XdpTable, f: &[u8]) -> (u32, Vec<u8>) {
    t.test_run(f).expect("test_run")
}

fn expect_answer(t: &XdpTable, f: &[u8]) -> (crate::xdp_frames::Reply, Message) {
    let (act, out) = run(t, f);
    assert_eq!(act, XDP_TX, "expected XDP_TX");
    let r = parse(&out);
    let m = Message::from_vec(&r.dns).expect("answer decodes");
    (r, m)
}

fn expect_pass(t: &XdpTable, f: &[u8], what: &str) {
    let (act, out) = run(t, f);
    assert_eq!(act, XDP_PASS, "{what}: expected XDP_PASS");
    assert_eq!(out, f, "{what}: a passed frame is untouched");
}

fn addrs(m: &Message) -> Vec<String> {
    m.answers
        .iter()
        .map(|r| match &r.data {
            RData::A(a) => a.0.to_string(),
            RData::AAAA(a) => a.0.to_string(),
            d => panic!("unexpected rdata {d:?}"),
        })
        .collect()
}

#[test]
fn xdp_map_names_resolve_in_the_embedded_object() {
    require_root();
    let ebpf = aya_load();
    for name in [
        DNS_RECORDS,
        DNS_SCOPES,
        DNS_SERVER_ADDRS,
        DNS_CONFIG,
        DNS_COUNTERS,
        DNS_SCRATCH,
        DNS_KEY_SCRATCH,
        DNS_RRL,
    ] {
        assert!(ebpf.map(name).is_some(), "map {name} missing from the object");
    }
    assert!(ebpf.program(bootlane::dataplane::xdp::PROGRAM).is_some());
}

fn aya_load() -> aya::Ebpf {
    aya::Ebpf::load(bootlane::dataplane::xdp::OBJECT).expect("load object")
}

#[test]
fn xdp_test_run_hits() {
    let t = crate::xdp_frames::loaded(&projection());
    let (c, s, s2, s6) = (v4("10.77.0.2"), v4("10.77.0.1"), v4("10.78.0.1"), v6("fd77::1"));

    // A, two records, RD copied, no EDNS.
    let q = query(0x1234, "host1.lab.test", QTYPE_A, true, None);
    let (r, m) = expect_answer(&t, &frame(None, c, s, 53, &q));
    assert_eq!((r.src, r.dst, r.sport, r.dport), (s, c, 53, 40000));
    assert_eq!(m.metadata.id, 0x1234);
    assert!(m.metadata.authoritative && m.metadata.recursion_desired);
    assert!(!m.metadata.recursion_available);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(addrs(&m), ["10.0.0.11", "10.0.0.12"]);
    assert_eq!(m.answers[0].ttl, 300);
    assert!(m.edns.is_none());
    assert_eq!(&r.dns[12 + 16 + 4..12 + 16 + 6], &[0xc0, 0x0c], "owner is a pointer");

    // AAAA over IPv6, mixed case echoed as sent.
    let q = query(7, "HoSt1.LAB.test", QTYPE_AAAA, false, None);
    let (r, m) = expect_answer(&t, &frame(None, v6("fd77::2"), s6, 53, &q));
    assert_eq!(r.src, s6);
    assert!(!m.metadata.recursion_desired);
    assert_eq!(addrs(&m), ["fd00::11"]);
    assert_eq!(m.answers[0].ttl, 120);
    assert_eq!(m.queries[0].name().to_ascii(), "HoSt1.LAB.test.");

    // 802.1Q tag kept, 8 records.
    let q = query(8, "big.lab.test", QTYPE_A, true, None);
    let (r, m) = expect_answer(&t, &frame(Some(0x0064), c, s, 53, &q));
    assert_eq!(r.vlan, Some(0x0064));
    assert_eq!(m.answers.len(), 8);

    // EDNS with DO and a cookie: our OPT, DO copied, options dropped.
    let e = Edns {
        dnssec_ok: true,
        version: 0,
        cookie: true,
        udp: 4096,
    };
    let q = query(9, "host1.lab.test", QTYPE_A, true, Some(e));
    let (_, m) = expect_answer(&t, &frame(None, c, s, 53, &q));
    let edns = m.edns.as_ref().expect("OPT in answer");
    assert_eq!(edns.max_payload(), 1232);
    assert!(edns.flags().dnssec_ok);
    assert!(edns.options().as_ref().is_empty(), "client options are not echoed");
    let e = Edns {
        dnssec_ok: false,
        version: 0,
        cookie: false,
        udp: 1232,
    };
    let q = query(10, "host1.lab.test", QTYPE_AAAA, true, Some(e));
    let (_, m) = expect_answer(&t, &frame(None, v6("fd77::2"), s6, 53, &q));
    assert!(!m.edns.as_ref().unwrap().flags().dnssec_ok);

    // Subnet scope: the scoped answer inside 10.78.0.0/24, the global one elsewhere.
    let q = query(11, "svc.lab.test", QTYPE_A, true, None);
    let (_, m) = expect_answer(&t, &frame(None, v4("10.78.0.2"), s2, 53, &q));
    assert_eq!(addrs(&m), ["10.78.0.50"]);
    let (_, m) = expect_answer(&t, &frame(None, c, s, 53, &q));
    assert_eq!(addrs(&m), ["192.0.2.1"]);
    // count == 0: global answer elsewhere, userspace inside the scope.
    let q = query(12, "pass.lab.test", QTYPE_A, true, None);
    expect_answer(&t, &frame(None, c, s, 53, &q));
    expect_pass(&t, &frame(None, v4("10.78.0.2"), s2, 53, &q), "count 0 entry");

    let st = t.status();
    assert!(st.counters.answered >= 8, "{:?}", st.counters);
    assert_eq!(st.counters.pass_miss, 1, "{:?}", st.counters);
}

#[test]
fn xdp_test_run_pass_throughs() {
    let t = crate::xdp_frames::loaded(&projection());
    let (c, s) = (v4("10.77.0.2"), v4("10.77.0.1"));
    let before = t.status().counters;
    let q = |name: &str, qt: u16| query(1, name, qt, true, None);
    expect_pass(&t, &frame(None, c, s, 53, &q("nope.lab.test", QTYPE_A)), "miss");
    expect_pass(&t, &frame(None, c, s, 53, &q("svc.lab.test", QTYPE_AAAA)), "NODATA");
    expect_pass(&t, &frame(None, c, s, 53, &q("host1.lab.test", 15)), "MX");
    expect_pass(&t, &frame(None, c, s, 53, &q("host1.lab.test", 255)), "ANY");
    let long = format!("{}.lab.test", ["a123456789"; 12].join("."));
    expect_pass(&t, &frame(None, c, s, 53, &q(&long, QTYPE_A)), "too long");
    expect_pass(
        &t,
        &frame(None, c, s, 5353, &q("host1.lab.test", QTYPE_A)),
        "wrong port",
    );
    expect_pass(
        &t,
        &frame(None, c, v4("10.77.0.9"), 53, &q("host1.lab.test", QTYPE_A)),
        "wrong dst",
    );
    let e = Edns {
        dnssec_ok: false,
        version: 1,
        cookie: false,
        udp: 1232,
    };
    let bad_vers = query(1, "host1.lab.test", QTYPE_A, true, Some(e));
    expect_pass(&t, &frame(None, c, s, 53, &bad_vers), "EDNS version 1");
    // Malformed: truncated question, label running past the end, runt header.
    let mut trunc = q("host1.lab.test", QTYPE_A);
    trunc.truncate(20);
    expect_pass(&t, &frame(None, c, s, 53, &trunc), "truncated question");
    expect_pass(&t, &frame(None, c, s, 53, &[0u8; 5]), "runt");
    // A response (QR=1), a NOTIFY (opcode 4), two questions.
    let mut resp = q("host1.lab.test", QTYPE_A);
    resp[2] |= 0x80;
    expect_pass(&t, &frame(None, c, s, 53, &resp), "response");
    let mut notify = q("host1.lab.test", QTYPE_A);
    notify[2] |= 4 << 3;
    expect_pass(&t, &frame(None, c, s, 53, &notify), "opcode");
    let mut two = q("host1.lab.test", QTYPE_A);
    two[5] = 2;
    expect_pass(&t, &frame(None, c, s, 53, &two), "QDCOUNT 2");
    // Not UDP: the same bytes as TCP (protocol 6) and an ARP frame.
    let mut tcp = frame(None, c, s, 53, &q("host1.lab.test", QTYPE_A));
    tcp[14 + 9] = 6;
    expect_pass(&t, &tcp, "TCP");
    let mut arp = vec![0xffu8; 12];
    arp.extend([0x08, 0x06]);
    arp.extend([0u8; 28]);
    expect_pass(&t, &arp, "ARP");
    // An IPv4 fragment.
    let mut frag = frame(None, c, s, 53, &q("host1.lab.test", QTYPE_A));
    frag[14 + 6] = 0x20;
    expect_pass(&t, &frag, "fragment");

    let after = t.status().counters;
    assert_eq!(after.answered, before.answered, "nothing answered");
    assert_eq!(after.pass_miss - before.pass_miss, 2, "{after:?}");
    assert_eq!(after.pass_too_long - before.pass_too_long, 1, "{after:?}");
    assert!(after.pass_unsupported - before.pass_unsupported >= 6, "{after:?}");
    assert!(after.pass_malformed - before.pass_malformed >= 2, "{after:?}");
    assert!(after.pass_not_dns - before.pass_not_dns >= 5, "{after:?}");
}

#[test]
fn xdp_map_load_100k_records_under_2s() {
    require_root();
    let t = XdpTable::detached(131_072).expect("load");
    let mut p = projection();
    p.entries = (0..100_000u32)
        .map(|i| {
            let b = i.to_be_bytes();
            (
                key(&format!("h{i}.bulk.lab.test"), QTYPE_A, 0),
                answer(300, &[IpAddr::from([10, b[1], b[2], b[3]])]),
            )
        })
        .collect();
    let start = Instant::now();
    t.apply(&p).expect("apply 100k");
    let took = start.elapsed();
    eprintln!("100,000 records loaded into {DNS_RECORDS} in {took:?}");
    assert_eq!(t.kernel_record_count().unwrap(), 100_000);
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
    // Shrinking to 10 entries removes the rest.
    p.entries.truncate(10);
    let start = Instant::now();
    t.apply(&p).expect("apply 10");
    eprintln!("99,990 stale records deleted in {:?}", start.elapsed());
    assert_eq!(t.kernel_record_count().unwrap(), 10);
    let _ = RecordType::A;
}

#[test]
fn xdp_per_packet_cost() {
    // Not a pass/fail benchmark: prints the kernel-measured mean time per run of the
    // program (BPF_PROG_TEST_RUN, repeat) for an answered and a passed query, the figure
    // kxdpgun cannot show on this machine (it saturates first). Asserts only sanity.
    let t = crate::xdp_frames::loaded(&projection());
    let (c, s) = (v4("10.77.0.2"), v4("10.77.0.1"));
    let hit = frame(None, c, s, 53, &query(1, "host1.lab.test", QTYPE_A, true, None));
    let e = Edns {
        dnssec_ok: true,
        version: 0,
        cookie: true,
        udp: 1232,
    };
    let big = frame(
        None,
        v6("fd77::2"),
        v6("fd77::1"),
        53,
        &query(2, "big.lab.test", QTYPE_A, true, Some(e)),
    );
    let miss = frame(None, c, s, 53, &query(3, "nope.lab.test", QTYPE_A, true, None));
    for (what, f, act) in [
        ("answer A x2, IPv4", &hit, XDP_TX),
        ("answer A x8 + OPT, IPv6", &big, XDP_TX),
        ("miss -> XDP_PASS", &miss, XDP_PASS),
    ] {
        // repeat > 1 would rerun on the already rewritten frame, so one run per call and
        // the kernel-measured durations averaged.
        let n = 20_000u32;
        let mut total = std::time::Duration::ZERO;
        for _ in 0..n {
            let (a, d) = t.test_run_repeat(f, 1).expect("test_run");
            assert_eq!(a, act, "{what}");
            total += d;
        }
        let d = total / n;
        eprintln!("XDP per-packet cost, {what}: {d:?} per run (mean of {n})");
        assert!(d.as_micros() < 50, "{what}: {d:?}");
    }
}

/// `q` (a query with an empty OPT) with `options` as its OPT RDATA.
fn with_options(mut q: Vec<u8>, options: &[u8]) -> Vec<u8> {
    q.truncate(q.len() - 2);
    q.extend((options.len() as u16).to_be_bytes());
    q.extend(options);
    q
}

/// One EDNS option: code, length, `len` data bytes.
fn option(code: u16, len: usize) -> Vec<u8> {
    let mut o = code.to_be_bytes().to_vec();
    o.extend((len as u16).to_be_bytes());
    o.extend((0..len).map(|i| i as u8));
    o
}

/// RFC 7873 §5.2.2: a query whose COOKIE option is malformed is left to userspace (which
/// answers FORMERR) and never answered NOERROR in the kernel; a well-formed cookie, next
/// to padding, is still answered by the fast path, and any other option goes to
/// userspace.
#[test]
fn r7_xdp_passes_malformed_cookies() {
    let t = crate::xdp_frames::loaded(&projection());
    let (c, s) = (v4("10.77.0.2"), v4("10.77.0.1"));
    let e = Edns {
        dnssec_ok: false,
        version: 0,
        cookie: false,
        udp: 1232,
    };
    let base = || query(21, "host1.lab.test", QTYPE_A, true, Some(e));
    let before = t.status().counters;
    for len in [0, 1, 7, 9, 15, 41, 64] {
        let q = with_options(base(), &option(10, len));
        expect_pass(&t, &frame(None, c, s, 53, &q), &format!("cookie of {len} bytes"));
    }
    // A malformed cookie after another option, and an option running past the RDATA.
    let mut two = option(12, 7);
    two.extend(option(10, 12));
    expect_pass(&t, &frame(None, c, s, 53, &with_options(base(), &two)), "second option");
    let mut overrun = option(10, 8);
    overrun.truncate(10);
    expect_pass(&t, &frame(None, c, s, 53, &with_options(base(), &overrun)), "overrun");
    let after = t.status().counters;
    assert_eq!(after.answered, before.answered, "nothing answered");
    assert_eq!(after.pass_malformed - before.pass_malformed, 9, "{after:?}");

    for len in [8, 16, 40] {
        let mut opts = option(12, 7);
        opts.extend(option(10, len));
        let q = with_options(base(), &opts);
        let (_, m) = expect_answer(&t, &frame(None, c, s, 53, &q));
        assert_eq!(addrs(&m), ["10.0.0.11", "10.0.0.12"], "cookie of {len} bytes");
    }
    // Any other option (here a CLIENT-SUBNET, zero-length and so malformed: userspace
    // answers FORMERR) goes to userspace, which validates it (found by fuzzing).
    for opts in [option(8, 0), option(8, 7), option(3, 0)] {
        let q = with_options(base(), &opts);
        expect_pass(&t, &frame(None, c, s, 53, &q), &format!("option {:?}", &opts[..2]));
    }
}

/// The server's addresses live inline in `DNS_CONFIG` up to `INLINE_SERVER_ADDRS`;
/// with more, the program checks the `DNS_SERVER_ADDRS` map (`CFG_FLAG_SERVER_MAP`).
/// Both answer exactly the server's addresses. Without any scoped entry
/// (`CFG_FLAG_SCOPED` off) a client inside a scope prefix gets the global answer
/// without the LPM lookup; with one, its scoped answer.
#[test]
fn server_addresses_inline_and_in_the_map_and_the_scope_flag() {
    let c = v4("10.77.0.2");
    let q = query(9, "host1.lab.test", QTYPE_A, true, None);
    for n in [1usize, bootlane_common::dns::INLINE_SERVER_ADDRS, 40] {
        let mut p = projection();
        p.server_addrs = (1..=n).map(|i| v4(&format!("10.77.1.{i}"))).collect();
        let t = crate::xdp_frames::loaded(&p);
        for i in [1, n] {
            let (_, m) = expect_answer(&t, &frame(None, c, v4(&format!("10.77.1.{i}")), 53, &q));
            assert_eq!(addrs(&m), ["10.0.0.11", "10.0.0.12"], "{n} addresses, server {i}");
        }
        let other = frame(None, c, v4(&format!("10.77.1.{}", n + 1)), 53, &q);
        expect_pass(&t, &other, &format!("{n} addresses: not a server address"));
    }
    // The scope flag: scoped entries present, then none.
    let scoped_client = v4("10.78.0.9");
    let q = query(10, "svc.lab.test", QTYPE_A, true, None);
    let t = crate::xdp_frames::loaded(&projection());
    let (_, m) = expect_answer(&t, &frame(None, scoped_client, v4("10.78.0.1"), 53, &q));
    assert_eq!(addrs(&m), ["10.78.0.50"], "scoped answer");
    let mut p = projection();
    p.entries.retain(|(k, _)| k.scope == 0);
    DnsTable::apply(&t, &p).expect("apply");
    let (_, m) = expect_answer(&t, &frame(None, scoped_client, v4("10.78.0.1"), 53, &q));
    assert_eq!(addrs(&m), ["192.0.2.1"], "global answer once no entry is scoped");
}
