//! Response rate limiting under a real flood: the real `bootlane serve` with the XDP fast
//! path in a server namespace and the default `[dns.rrl]` (20 answers per second per /24,
//! slip 2). `kxdpgun` floods from one namespace with source addresses spread over a
//! spoofed /24 (`-l`), at the generator's ceiling; meanwhile a legitimate client on
//! another subnet asks with `dig` and must keep at least 99 % of its queries answered,
//! while the answers to the flooded /24 are cut to the limit (the XDP counters say how
//! many were answered, dropped and slipped). Namespaces and processes are dropped by guards.

use std::{
    process::{Command, Stdio},
    thread::sleep,
    time::Duration,
};

use bootlane_tests::{veth, NetNs, Server};
use serde_json::{json, Value};

use super::xdp_netns::{attach_peer_pass, xdp_status};

/// Seconds the flood lasts.
const FLOOD_SECS: u64 = 8;
/// Queries the legitimate client sends during the flood, 10 per second.
const LEGIT_QUERIES: usize = 60;

fn counters(s: &Server) -> Value {
    xdp_status(s)["counters"].clone()
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("counter {k} in {v}"))
}

/// A number after `label` in kxdpgun's summary, e.g. `total replies: 1234 (...)`.
fn kxdpgun_stat(out: &str, label: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in kxdpgun output:\n{out}"))
}

#[test]
fn rrl_cuts_a_spoofed_flood_and_keeps_a_real_client_answered() {
    let srv = NetNs::new("brs");
    let flood = NetNs::new("brf");
    let legit = NetNs::new("brl");
    let (_vs1, vf) = veth(&srv, &["10.77.0.1/24"], &flood, &["10.77.0.2/24"]);
    let (_vs2, vl) = veth(&srv, &["10.78.0.1/24"], &legit, &["10.78.0.2/24"]);
    // The spoofed sources live nowhere: the server answers them at layer 2 (XDP_TX), the
    // kernel never routes to them.
    let _peer = attach_peer_pass(&legit, &vl);
    let s = Server::start(
        &srv,
        "[server]\nname = \"bootlane\"\n[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"native\"\n",
    );
    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.11"}));
    let (_, v) = s.api("GET", "/services/dns", None);
    assert_eq!(v["data"]["xdp"]["active"], true, "{v}");
    assert_eq!(v["data"]["rrl"]["responses_per_second"], 20, "the default limit: {v}");
    let qfile = std::env::temp_dir().join(bootlane_tests::unique("rrl-q-"));
    std::fs::write(&qfile, "host1.lab.test A\n").unwrap();
    let before = counters(&s);

    // The flood, at whatever rate the generator reaches (it busy-polls one core).
    let gun = Command::new("ip")
        .args([
            "netns",
            "exec",
            &flood.name,
            "timeout",
            "30",
            "kxdpgun",
            "-I",
            &vf,
            "-b",
            "64",
        ])
        .args([
            "-t",
            &FLOOD_SECS.to_string(),
            "-Q",
            "2000000",
            "-l",
            "10.90.0.0/24",
            "-i",
        ])
        .arg(&qfile)
        .arg("10.77.0.1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kxdpgun");
    sleep(Duration::from_millis(500));
    // The legitimate client, 10 queries per second, each waiting 1 s and trying twice.
    let out = legit.sh(&format!(
        "for i in $(seq {LEGIT_QUERIES}); do dig +time=1 +tries=2 +short @10.78.0.1 host1.lab.test A; sleep 0.1; done"
    ));
    let gun = gun.wait_with_output().expect("kxdpgun ran");
    let _ = std::fs::remove_file(&qfile);
    flood.sh(&format!("ip link set dev {vf} xdp off 2>/dev/null || true"));
    let gun_out = format!(
        "{}{}",
        String::from_utf8_lossy(&gun.stdout),
        String::from_utf8_lossy(&gun.stderr)
    );
    let after = counters(&s);

    let ok = out.lines().filter(|l| l.trim() == "10.0.0.11").count();
    let sent = kxdpgun_stat(&gun_out, "total queries:");
    let replies = kxdpgun_stat(&gun_out, "total replies:");
    let d = |k: &str| n(&after, k) - n(&before, k);
    let (answered, dropped, slipped) = (d("answered"), d("rrl_dropped"), d("rrl_slipped"));
    eprintln!(
        "flood: {sent} queries sent in {FLOOD_SECS} s ({} qps), {replies} replies; XDP answered {answered}, \
         RRL dropped {dropped}, slipped {slipped}; legitimate client: {ok}/{LEGIT_QUERIES} answered",
        sent / FLOOD_SECS
    );
    assert!(
        ok * 100 >= LEGIT_QUERIES * 99,
        "the legitimate client keeps >= 99 % answered: {ok}/{LEGIT_QUERIES}\n{out}"
    );
    assert!(sent > 50_000, "a real flood: {gun_out}");
    // The flood's full answers: the limit (20 per second, plus one second of burst) for
    // the flood's duration, with slack for the unlocked buckets' races between CPUs; the
    // legitimate client's answers are counted in `answered` too.
    let limit = 20 * (FLOOD_SECS + 2);
    assert!(
        answered <= 2 * limit + LEGIT_QUERIES as u64 * 2,
        "the flood's answers are cut to the limit: {answered} answered for {sent} queries"
    );
    // Every other flood query was rate limited: about half dropped, half slipped.
    assert!(
        (dropped + slipped) * 100 >= sent * 90,
        "{dropped} dropped + {slipped} slipped of {sent}\n{gun_out}"
    );
    let ratio = slipped as f64 / (dropped + slipped) as f64;
    assert!(
        (0.4..=0.6).contains(&ratio),
        "slip 2 sends every other limited answer: {ratio}"
    );
    // What left the server towards the spoofed /24: the full answers and the small slips.
    assert!(replies <= answered + slipped, "{replies} replies");
    // The metrics endpoint carries the same counters.
    let (code, m) = s.api("GET", "/metrics", None);
    assert_eq!(code, 200);
    let m = m.as_str().unwrap_or_default().to_string();
    let metric = |label: &str| -> u64 {
        m.lines()
            .find(|l| l.starts_with(&format!("bootlane_dns_xdp_rrl_total{{action=\"{label}\"}}")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no {label} RRL metric in\n{m}"))
    };
    assert!(metric("dropped") >= dropped && metric("slipped") >= slipped);
}
