//! Network diagnostics end to end: the real `bootlane` binary in a server namespace, a
//! router namespace forwarding between 10.93.0.0/24 (the server's link) and 10.94.0.0/24,
//! and a target namespace at 10.94.0.2 behind it. All probes are real ICMP from the
//! server's raw sockets.
//!
//! One test, in order:
//! 1. `POST /network/ping` to the router: three replies from 10.93.0.2 with TTL 64, 0 % loss;
//!    to an address nobody holds: three timeouts, 100 % loss;
//! 2. `POST /network/ping/stream` to the target: `reply` events arrive one by one (the
//!    first well before the last, `interval_ms` apart), then the `summary`; the replies
//!    crossed the router (TTL 63);
//! 3. `POST /network/traceroute/stream` to the target: `hop` 1 is the router, `hop` 2 the
//!    target (reached), then the `summary` with both hops; the plain traceroute agrees;
//! 4. while a streamed ping runs, a second run of the same user is refused (409), and
//!    a multicast target is a 400.

use std::time::{Duration, Instant};

use bootlane_tests::{veth, NetNs, Server};
use serde_json::{json, Value};

fn ok(s: &Server, path: &str, body: &Value) -> Value {
    let (code, v) = s.api("POST", path, Some(body));
    assert_eq!(code, 200, "POST {path} {body}: {v}");
    v["data"].clone()
}

#[test]
fn ping_and_traceroute_through_a_router_plain_and_streamed() {
    let (srv, rtr, tgt) = (NetNs::new("nds"), NetNs::new("ndr"), NetNs::new("ndt"));
    veth(&srv, &["10.93.0.1/24"], &rtr, &["10.93.0.2/24"]);
    veth(&rtr, &["10.94.0.1/24"], &tgt, &["10.94.0.2/24"]);
    rtr.sh("sysctl -qw net.ipv4.ip_forward=1");
    srv.sh("ip route add 10.94.0.0/24 via 10.93.0.2");
    tgt.sh("ip route add default via 10.94.0.1");
    let s = Server::start(&srv, "[dns]\nenabled = false\n");

    // 1. Plain ping: the router answers; an unheld address does not.
    let r = ok(
        &s,
        "/network/ping",
        &json!({"target": "10.93.0.2", "count": 3, "interval_ms": 100}),
    );
    let sum = &r["summary"];
    assert_eq!(
        (sum["sent"].as_u64(), sum["received"].as_u64()),
        (Some(3), Some(3)),
        "{r}"
    );
    assert_eq!(sum["loss_pct"], 0.0);
    for (i, rep) in r["replies"].as_array().unwrap().iter().enumerate() {
        assert_eq!(rep["seq"], i as u64, "{rep}");
        assert_eq!(rep["status"], "reply", "{rep}");
        assert_eq!(rep["from"], "10.93.0.2", "{rep}");
        assert_eq!(rep["ttl"], 64, "{rep}");
        // A neighbour namespace can answer within the rounding (0.0 ms) on an idle core.
        let rtt = rep["rtt_ms"].as_f64().unwrap();
        assert!((0.0..1000.0).contains(&rtt), "{rep}");
    }
    let r = ok(
        &s,
        "/network/ping",
        &json!({"target": "10.93.0.99", "count": 3, "interval_ms": 100, "timeout_ms": 200}),
    );
    assert_eq!(r["summary"]["received"], 0, "{r}");
    assert_eq!(r["summary"]["loss_pct"], 100.0, "{r}");
    assert!(
        r["replies"].as_array().unwrap().iter().all(|l| l["status"] != "reply"),
        "{r}"
    );

    // 2. Streamed ping across the router: lines arrive as they happen.
    let t0 = Instant::now();
    let st = s.sse_post(
        "/network/ping/stream",
        &json!({"target": "10.94.0.2", "count": 4, "interval_ms": 400}),
    );
    let mut replies = Vec::new();
    let summary = loop {
        let m = st.next(Duration::from_secs(10)).expect("a stream event within 10 s");
        match m.event.as_str() {
            "reply" => replies.push((t0.elapsed(), m.data)),
            "summary" => break m.data,
            other => panic!("unexpected event {other}: {:?}", m.data),
        }
    };
    assert_eq!(replies.len(), 4, "{replies:?}");
    for (_, r) in &replies {
        assert_eq!(
            (r["status"].as_str(), r["from"].as_str()),
            (Some("reply"), Some("10.94.0.2")),
            "{r}"
        );
        assert_eq!(r["ttl"], 63, "one router on the way: {r}");
    }
    let spread = replies[3].0 - replies[0].0;
    assert!(
        spread >= Duration::from_millis(1000),
        "replies came together ({spread:?}): not streamed"
    );
    assert_eq!(
        (summary["sent"].as_u64(), summary["received"].as_u64()),
        (Some(4), Some(4)),
        "{summary}"
    );

    // 3. Traceroute, streamed then plain: the router, then the target.
    let st = s.sse_post(
        "/network/traceroute/stream",
        &json!({"target": "10.94.0.2", "queries": 2}),
    );
    let mut hops = Vec::new();
    let summary = loop {
        let m = st.next(Duration::from_secs(15)).expect("a stream event within 15 s");
        match m.event.as_str() {
            "hop" => hops.push(m.data),
            "summary" => break m.data,
            other => panic!("unexpected event {other}: {:?}", m.data),
        }
    };
    assert_eq!(hops.len(), 2, "{hops:?}");
    assert_eq!(
        (hops[0]["ttl"].as_u64(), hops[0]["reached"].as_bool()),
        (Some(1), Some(false)),
        "{hops:?}"
    );
    assert_eq!(hops[0]["addresses"], json!(["10.93.0.2"]));
    assert_eq!(
        (hops[1]["ttl"].as_u64(), hops[1]["reached"].as_bool()),
        (Some(2), Some(true)),
        "{hops:?}"
    );
    assert_eq!(hops[1]["addresses"], json!(["10.94.0.2"]));
    assert_eq!(summary["reached"], true, "{summary}");
    assert_eq!(summary["hops"].as_array().unwrap().len(), 2, "{summary}");
    assert_eq!(summary["hops"][1]["received"], 2, "two rounds: {summary}");
    let plain = ok(
        &s,
        "/network/traceroute",
        &json!({"target": "10.94.0.2", "queries": 1, "max_hops": 5}),
    );
    assert_eq!(plain["reached"], true, "{plain}");
    assert_eq!(plain["hops"][0]["addresses"], json!(["10.93.0.2"]), "{plain}");

    // 4. One run per user; a non-unicast target is refused before anything is sent.
    let st = s.sse_post(
        "/network/ping/stream",
        &json!({"target": "10.94.0.2", "count": 5, "interval_ms": 500}),
    );
    let first = st.next(Duration::from_secs(5)).expect("the first reply");
    assert_eq!(first.event, "reply");
    let (code, v) = s.api(
        "POST",
        "/network/ping",
        Some(&json!({"target": "10.93.0.2", "count": 1})),
    );
    assert_eq!(code, 409, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("already has a ping or traceroute running"),
        "{v}"
    );
    let (code, v) = s.api("POST", "/network/traceroute", Some(&json!({"target": "224.0.0.1"})));
    assert_eq!(code, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("multicast"), "{v}");
}
