//! The userspace DNS server end to end (issue 2, "Proof"): the real `bootlane` binary in a
//! server namespace, real clients (`dig`, `kdig`) in two client namespaces on different
//! subnets, and dnsmasq in a third namespace as the upstream. XDP is off here so every
//! answer is the userspace path's; the fast path has its own tests.

use bootlane_tests::{dig, lines, spawn_in, veth, NetNs, Server};
use serde_json::json;

const CONFIG: &str =
    "[server]\nname = \"bootlane\"\n[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n";

struct Lab {
    srv: NetNs,
    c1: NetNs,
    c2: NetNs,
    up: NetNs,
}

fn lab() -> Lab {
    let (srv, c1, c2, up) = (
        NetNs::new("bls"),
        NetNs::new("blc"),
        NetNs::new("blc"),
        NetNs::new("blu"),
    );
    veth(
        &srv,
        &["10.77.0.1/24", "fd77::1/64"],
        &c1,
        &["10.77.0.2/24", "fd77::2/64"],
    );
    veth(&srv, &["10.78.0.1/24"], &c2, &["10.78.0.2/24"]);
    veth(&srv, &["10.79.0.1/24"], &up, &["10.79.0.2/24"]);
    Lab { srv, c1, c2, up }
}

#[test]
fn dns_real_clients_two_subnets_and_upstream() {
    let lab = lab();
    let s = Server::start(&lab.srv, CONFIG);
    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.11"}));
    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.12"}));
    s.add_record(json!({"name": "host1", "type": "AAAA", "value": "fd00::11"}));
    s.add_record(json!({"name": "www", "type": "CNAME", "value": "host1"}));
    s.add_record(json!({"name": "@", "type": "MX", "value": "10 mail"}));
    s.add_record(json!({"name": "@", "type": "TXT", "value": "v=spf1 -all"}));
    s.add_record(json!({"name": "svc", "type": "A", "value": "192.0.2.1"}));
    s.add_record(json!({"name": "svc", "type": "A", "value": "10.78.0.50", "subnet": "10.78.0.0/24"}));

    let q = |ns: &NetNs, args: &str| dig(ns, &format!("@10.77.0.1 {args}"));
    let q2 = |ns: &NetNs, args: &str| dig(ns, &format!("@10.78.0.1 {args}"));
    assert_eq!(
        lines(&q(&lab.c1, "+short HOST1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"]
    );
    assert_eq!(lines(&q(&lab.c1, "+short host1.lab.test AAAA")), vec!["fd00::11"]);
    assert_eq!(
        lines(&dig(&lab.c1, "@fd77::1 +short host1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"],
        "IPv6 transport"
    );
    assert_eq!(
        lines(&q(&lab.c1, "+short www.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12", "host1.lab.test."]
    );
    assert_eq!(lines(&q(&lab.c1, "+short lab.test MX")), vec!["10 mail.lab.test."]);
    assert_eq!(lines(&q(&lab.c1, "+short lab.test TXT")), vec!["\"v=spf1 -all\""]);
    let full = q(&lab.c1, "host1.lab.test A");
    assert!(
        full.contains("flags: qr aa rd;") && full.contains("status: NOERROR"),
        "{full}"
    );
    assert!(full.contains("udp: 1232"), "EDNS answer carries our OPT: {full}");
    let nx = q(&lab.c1, "nope.lab.test A");
    assert!(nx.contains("status: NXDOMAIN") && nx.contains("SOA"), "{nx}");
    let nodata = q(&lab.c1, "svc.lab.test AAAA");
    assert!(
        nodata.contains("status: NOERROR") && nodata.contains("ANSWER: 0") && nodata.contains("SOA"),
        "{nodata}"
    );
    let refused = q(&lab.c1, "up.example A");
    assert!(refused.contains("status: REFUSED"), "no upstream yet: {refused}");
    // TCP, and kdig as a second client implementation.
    assert_eq!(
        lines(&q(&lab.c1, "+tcp +short host1.lab.test A")),
        vec!["10.0.0.11", "10.0.0.12"]
    );
    let k = lab.c1.sh("kdig @10.77.0.1 +short +tcp lab.test SOA");
    assert!(k.starts_with("bootlane.lab.test. hostmaster.lab.test."), "{k}");

    // Subnet-aware answers: the server's own name resolves to its address on the client's subnet.
    assert_eq!(lines(&q(&lab.c1, "+short bootlane.lab.test A")), vec!["10.77.0.1"]);
    assert_eq!(lines(&q2(&lab.c2, "+short bootlane.lab.test A")), vec!["10.78.0.1"]);
    assert_eq!(lines(&q2(&lab.c2, "+short lab.test A")), vec!["10.78.0.1"]);
    assert_eq!(lines(&q(&lab.c1, "+short bootlane.lab.test AAAA")), vec!["fd77::1"]);
    assert_eq!(lines(&q(&lab.c1, "+short svc.lab.test A")), vec!["192.0.2.1"]);
    assert_eq!(lines(&q2(&lab.c2, "+short svc.lab.test A")), vec!["10.78.0.50"]);

    // A change is visible as soon as the API has answered.
    let r = s.add_record(json!({"name": "late", "type": "A", "value": "10.0.0.77"}));
    assert_eq!(lines(&q(&lab.c1, "+short late.lab.test A")), vec!["10.0.0.77"]);
    let (code, _) = s.api(
        "PUT",
        &format!("/dns/records/{}", r["id"]),
        Some(&json!({"value": "10.0.0.78"})),
    );
    assert_eq!(code, 200);
    assert_eq!(lines(&q(&lab.c1, "+short late.lab.test A")), vec!["10.0.0.78"]);
    let (code, _) = s.api("DELETE", &format!("/dns/records/{}", r["id"]), None);
    assert_eq!(code, 200);
    assert!(q(&lab.c1, "late.lab.test A").contains("NXDOMAIN"));

    // Upstream forwarding through dnsmasq, configured live.
    let _dnsmasq = spawn_in(
        &lab.up,
        &[
            "dnsmasq",
            "-k",
            "--no-resolv",
            "--no-hosts",
            "--conf-file=/dev/null",
            "--port=53",
            "--listen-address=10.79.0.2",
            "--bind-interfaces",
            "--host-record=up.example,192.0.2.99",
            "--pid-file=",
        ],
    );
    lab.srv.sh("ip route add default via 10.79.0.2 2>/dev/null || true");
    let (code, v) = s.api("PUT", "/services/dns", Some(&json!({"upstream": "10.79.0.2:53"})));
    assert_eq!(code, 200, "{v}");
    let mut ok = false;
    for _ in 0..30 {
        if lines(&q(&lab.c1, "+short up.example A")) == vec!["192.0.2.99"] {
            ok = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(ok, "forwarded answer from dnsmasq");
    let fwd = q(&lab.c1, "up.example A");
    assert!(
        fwd.contains(" ra"),
        "forwarded answers are relayed as the upstream sent them: {fwd}"
    );
    // Local names are still answered locally, now with RA.
    assert!(q(&lab.c1, "host1.lab.test A").contains("flags: qr aa rd ra;"));
    // A dead upstream fails over to the next one; all dead gives SERVFAIL.
    let (code, _) = s.api(
        "PUT",
        "/services/dns",
        Some(&json!({"upstream": "10.79.0.3:53, 10.79.0.2:53"})),
    );
    assert_eq!(code, 200);
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 +time=5 +short up.example A")),
        vec!["192.0.2.99"]
    );
    let (code, _) = s.api("PUT", "/services/dns", Some(&json!({"upstream": "10.79.0.3:53"})));
    assert_eq!(code, 200);
    assert!(dig(&lab.c1, "@10.77.0.1 +time=5 up.example A").contains("SERVFAIL"));
}

#[test]
fn settings_apply_live_and_garbage_is_harmless() {
    let lab = lab();
    let s = Server::start(&lab.srv, CONFIG);
    s.add_record(json!({"name": "host1", "type": "A", "value": "10.0.0.11"}));
    // Port change rebinds without a restart.
    let (code, v) = s.api("PUT", "/services/dns", Some(&json!({"port": 5353})));
    assert_eq!(code, 200, "{v}");
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 -p 5353 +short host1.lab.test")),
        vec!["10.0.0.11"]
    );
    assert!(
        dig(&lab.c1, "@10.77.0.1 -p 53 +short host1.lab.test").contains("timed out")
            || dig(&lab.c1, "@10.77.0.1 -p 53 host1.lab.test").contains("connection refused")
    );
    // A new local domain moves relative names and the auto-records.
    let (code, _) = s.api("PUT", "/services/dns", Some(&json!({"local_domain": "moved.test"})));
    assert_eq!(code, 200);
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 -p 5353 +short host1.moved.test")),
        vec!["10.0.0.11"]
    );
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 -p 5353 +short bootlane.moved.test")),
        vec!["10.77.0.1"]
    );
    // Disabling stops the listener; enabling brings it back.
    let (code, _) = s.api("PUT", "/services/dns", Some(&json!({"enabled": false})));
    assert_eq!(code, 200);
    assert!(lines(&dig(&lab.c1, "@10.77.0.1 -p 5353 +short host1.moved.test"))
        .iter()
        .all(|l| l.starts_with(";;")));
    let (code, _) = s.api("PUT", "/services/dns", Some(&json!({"enabled": true})));
    assert_eq!(code, 200);
    // Garbage datagrams (random bytes, truncated headers, a response) get no crash.
    lab.c1.sh(
        "python3 -c \"import socket,random\nr=random.Random(7)\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nfor i in range(2000):\n  s.sendto(bytes(r.getrandbits(8) for _ in range(r.randrange(0,300))),('10.77.0.1',5353))\"",
    );
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 -p 5353 +short host1.moved.test")),
        vec!["10.0.0.11"]
    );
    let (code, v) = s.api("GET", "/services/dns", None);
    assert_eq!(code, 200);
    assert!(
        v["data"]["metrics"]["errors"].as_u64().unwrap() + v["data"]["metrics"]["dropped"].as_u64().unwrap() > 0,
        "{v}"
    );
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let lab = lab();
    let mut s = Server::start(&lab.srv, CONFIG);
    let mut ids = Vec::new();
    for i in 0..150 {
        let r = s.add_record(
            json!({"name": format!("h{i}"), "type": "A", "value": format!("10.1.{}.{}", i / 250, i % 250 + 1)}),
        );
        ids.push(r["id"].as_u64().unwrap());
    }
    let (code, _) = s.api("PUT", "/services/dns", Some(&json!({"upstream": "10.79.0.2"})));
    assert_eq!(code, 200);
    s.kill9();
    s.spawn();
    let (code, v) = s.api("GET", "/dns/records?size=1000", None);
    assert_eq!(code, 200);
    let have: Vec<u64> = v["data"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["auto"] == false)
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(have, ids, "every acknowledged record is back after kill -9");
    let (_, v) = s.api("GET", "/services/dns", None);
    assert_eq!(v["data"]["upstream"], "10.79.0.2");
    // Sessions live in the store: the cookie from before the crash still works.
    assert_eq!(
        lines(&dig(&lab.c1, "@10.77.0.1 +short h149.lab.test")),
        vec!["10.1.0.150"]
    );
}
