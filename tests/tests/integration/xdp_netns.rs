//! The fast path end to end: the real `bootlane serve` in a server namespace with
//! `[dns.xdp] mode = "generic"` and `"native"`, records created through the API,
//! `dig`/`kdig` from a client namespace over veth (IPv4 and IPv6), and the XDP counters
//! from `GET /services/dns` proving the kernel answered. For native mode the client's
//! veth gets an XDP program too (our object with empty maps, which passes everything),
//! because native `XDP_TX` on veth only reaches a peer that runs XDP (toolchain.md).
//! Namespaces, the server and the helper program are dropped by guards.

use std::{os::fd::AsRawFd, thread::sleep, time::Duration};

use aya::programs::{Xdp, XdpMode};
use bootlane_tests::{dig, lines, veth, NetNs, Server};
use serde_json::{json, Value};

/// Our object attached (native) to `iface` inside `ns`, with empty maps: `XDP_PASS` for
/// everything, so native `XDP_TX` on the server's veth reaches this peer (toolchain.md).
/// Dropping it detaches the program.
pub(crate) struct PeerPass(#[allow(dead_code)] aya::Ebpf);

/// Attaches [`PeerPass`] to `iface` inside `ns`.
pub(crate) fn attach_peer_pass(ns: &NetNs, iface: &str) -> PeerPass {
    let (ns, iface) = (ns.name.clone(), iface.to_string());
    // setns(2) affects only the calling thread: do the attach on a scratch thread.
    let ebpf = std::thread::spawn(move || {
        let f = std::fs::File::open(format!("/var/run/netns/{ns}")).expect("netns file");
        // SAFETY: setns on a valid namespace fd, for this thread only.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
        let mut ebpf = aya::Ebpf::load(bootlane::dataplane::xdp::OBJECT).expect("load object");
        let prog: &mut Xdp = ebpf
            .program_mut(bootlane::dataplane::xdp::PROGRAM)
            .unwrap()
            .try_into()
            .unwrap();
        prog.load().expect("load program");
        prog.attach(&iface, XdpMode::Driver).expect("attach to the client veth");
        ebpf
    })
    .join()
    .expect("attach thread");
    PeerPass(ebpf)
}

/// The DNS service's `xdp` object (`GET /services/dns`).
pub(crate) fn xdp_status(s: &Server) -> Value {
    let (code, v) = s.api("GET", "/services/dns", None);
    assert_eq!(code, 200, "{v}");
    v["data"]["xdp"].clone()
}

fn answered(s: &Server) -> u64 {
    xdp_status(s)["counters"]["answered"].as_u64().expect("counter")
}

fn run(mode: &str) {
    let srv = NetNs::new("bxs");
    let cli = NetNs::new("bxc");
    let (vs, vc) = veth(
        &srv,
        &["10.77.0.1/24", "fd77::1/64"],
        &cli,
        &["10.77.0.2/24", "fd77::2/64"],
    );
    let _peer = (mode == "native").then(|| attach_peer_pass(&cli, &vc));
    let config = format!(
        "[server]\nname = \"bootlane\"\n[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"{mode}\"\n"
    );
    let s = Server::start(&srv, &config);
    let st = xdp_status(&s);
    assert_eq!(st["active"], true, "{st}");
    assert_eq!(st["mode"], mode, "{st}");
    let ifs = st["interfaces"].as_array().expect("interfaces");
    assert!(
        ifs.iter().any(|i| i["name"] == vs.as_str() && i["attach_mode"] == mode),
        "{vs} attached in {mode} mode: {st}"
    );

    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.11"}));
    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.12"}));
    s.add_record(json!({"name": "host1", "type": "AAAA", "value": "fd00::11"}));
    for i in 1..=7 {
        s.add_record(json!({"name": "many", "type": "AAAA", "value": format!("fd00::{i}")}));
    }
    assert!(xdp_status(&s)["map_entries"].as_u64().unwrap() >= 3);

    let before = answered(&s);
    let c0 = xdp_status(&s)["counters"].clone();
    assert_eq!(
        lines(&dig(&cli, "@10.77.0.1 +short HoSt1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"]
    );
    eprintln!("{mode} after A: {}", xdp_status(&s)["counters"]);
    assert_eq!(
        lines(&dig(&cli, "@fd77::1 +short host1.lab.test AAAA")),
        vec!["fd00::11"]
    );
    eprintln!("{mode} after AAAA: {}", xdp_status(&s)["counters"]);
    let full = dig(&cli, "@10.77.0.1 +dnssec host1.lab.test A");
    assert!(
        full.contains("flags: qr aa rd;") && full.contains("udp: 1232"),
        "{full}"
    );
    assert!(full.contains("; EDNS: version: 0, flags: do;"), "{full}");
    // Queries without EDNS end exactly where the answer starts; when the frame has no
    // tailroom (native mode on veth) the program grows it at the head and must move a
    // question whose length is not a multiple of 8 (74 bytes over IPv4, 94 over IPv6).
    let before_noedns = answered(&s);
    assert_eq!(
        lines(&dig(&cli, "@10.77.0.1 +noedns +short host1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"]
    );
    assert_eq!(
        lines(&dig(&cli, "@fd77::1 +noedns +short host1.lab.test AAAA")),
        vec!["fd00::11"]
    );
    // Seven AAAA records grow the frame by 196 bytes: often more than native veth's
    // tailroom, so the program grows at the head (which has room for up to ~216 bytes)
    // and moves a 93-byte header-and-question block (not a multiple of 8).
    let many: Vec<String> = (1..=7).map(|i| format!("fd00::{i}")).collect();
    let mut got = lines(&dig(&cli, "@fd77::1 +noedns +short many.lab.test AAAA"));
    got.sort_by_key(|a| a.parse::<std::net::Ipv6Addr>().ok());
    assert_eq!(got, many);
    let c = xdp_status(&s)["counters"].clone();
    assert_eq!(answered(&s) - before_noedns, 3, "all answered by XDP: {c}");
    assert_eq!(c["pass_malformed"], 0, "no frame was passed half-rewritten: {c}");
    let k = cli.sh("kdig @10.77.0.1 +short host1.lab.test A");
    assert_eq!(lines(&k), vec!["10.0.0.11", "10.0.0.12"]);
    // The server's own name answers with its address on the client's subnet.
    assert_eq!(
        lines(&dig(&cli, "@10.77.0.1 +short bootlane.lab.test A")),
        vec!["10.77.0.1"]
    );
    let after = answered(&s);
    assert!(
        after >= before + 5,
        "{mode}: XDP answered {} of 5 queries; counters before {c0}, after {}",
        after - before,
        xdp_status(&s)["counters"]
    );

    // A change is answered by the fast path as soon as the API has answered.
    let r = s.add_record(json!({"name": "late", "type": "A", "value": "10.0.0.77"}));
    let before = answered(&s);
    assert_eq!(
        lines(&dig(&cli, "@10.77.0.1 +short late.lab.test A")),
        vec!["10.0.0.77"]
    );
    assert_eq!(answered(&s), before + 1, "{mode}: new record answered by XDP");
    let (code, _) = s.api("DELETE", &format!("/dns/records/{}", r["id"]), None);
    assert_eq!(code, 200);
    let before = xdp_status(&s)["counters"].clone();
    assert!(dig(&cli, "@10.77.0.1 late.lab.test A").contains("NXDOMAIN"));
    assert!(dig(&cli, "@10.77.0.1 host1.lab.test MX").contains("NOERROR"));
    let after = xdp_status(&s)["counters"].clone();
    assert_eq!(after["answered"], before["answered"], "misses are not answered by XDP");
    assert!(after["pass_miss"].as_u64() > before["pass_miss"].as_u64(), "{after}");
    assert!(
        after["pass_unsupported"].as_u64() > before["pass_unsupported"].as_u64(),
        "{after}"
    );

    // The counters are also in /metrics.
    let m = s.api("GET", "/metrics", None).1;
    let text = m.as_str().map(String::from).unwrap_or_else(|| m.to_string());
    assert!(text.contains("answered"), "metrics mention XDP counters: {text}");

    // Stop really stops: the program leaves the interface (the kernel's own view,
    // `ip link`), nothing answers; start attaches it again.
    let (code, v) = s.api("POST", "/services/dns/stop", None);
    assert_eq!((code, v["data"]["state"].as_str()), (200, Some("stopped")), "{v}");
    let st = xdp_status(&s);
    assert_eq!(st["active"], false, "{st}");
    let link = srv.sh(&format!("ip link show dev {vs}"));
    assert!(!link.contains("xdp"), "{mode}: still attached after stop: {link}");
    let out = cli.sh("dig @10.77.0.1 +time=1 +tries=1 host1.lab.test A || true");
    assert!(
        out.contains("timed out") || out.contains("no servers"),
        "{mode}: answered while stopped: {out}"
    );
    let (code, v) = s.api("POST", "/services/dns/start", None);
    assert_eq!((code, v["data"]["state"].as_str()), (200, Some("running")), "{v}");
    let st = xdp_status(&s);
    assert_eq!(st["active"], true, "{st}");
    let link = srv.sh(&format!("ip link show dev {vs}"));
    assert!(link.contains("xdp"), "{mode}: not attached again after start: {link}");
    let before = answered(&s);
    assert_eq!(
        lines(&dig(&cli, "@10.77.0.1 +short host1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"]
    );
    assert_eq!(answered(&s), before + 1, "{mode}: answered by XDP after restart");
    let (_, v) = s.api("GET", "/events?kind=dataplane.xdp", None);
    let kinds: Vec<&str> = v["data"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.starts_with(&["dataplane.xdp.attached", "dataplane.xdp.detached"]),
        "newest first: {kinds:?}"
    );
    sleep(Duration::from_millis(10));
}

#[test]
fn xdp_netns_generic_mode_with_dig_and_kdig() {
    crate::xdp_frames::require_root();
    run("generic");
}

#[test]
fn xdp_netns_native_mode_with_dig_and_kdig() {
    crate::xdp_frames::require_root();
    run("native");
}
