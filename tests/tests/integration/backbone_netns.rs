//! The operations backbone end to end: the real `bootlane` binary in a server namespace
//! with two veth links to two client namespaces, real clients only — `curl -N` on
//! `/events/stream`, `udhcpc` for leases, `curl tftp://` for a boot file.
//!
//! One test walks this list in order, failing on the first miss:
//! 1. a DNS record created through the API, a DHCP lease and a TFTP download arrive on the
//!    event stream as `dns.record.created`, `dhcp.lease.granted`, `tftp.transfer.completed`,
//!    in that order and with increasing ids;
//! 2. with the stream dropped, two more writes happen; a new stream sent
//!    `Last-Event-ID: <last id seen>` replays exactly those two, then goes on live;
//! 3. `POST /services/dhcp/stop`: udhcpc gets no lease; `start`: it gets one;
//! 4. the subnet 10.78.0.0/24 is configured on the first link (the wrong wire), so a
//!    client on the second link gets nothing; `PUT /settings/interfaces` moves it to the
//!    second link and that client gets a 10.78.0.x lease from the same server process,
//!    whose port-67 socket is now bound to the second link.
//!
//! Every wait is on a condition with a deadline; the namespaces and processes are removed
//! by `Drop` whatever happens.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use bootlane_tests::{udhcpc, veth, NetNs, Server, SseMessage};
use serde_json::json;

struct Lab {
    srv: NetNs,
    c1: NetNs,
    c2: NetNs,
    /// Server side of the first link (10.77.0.1/24) and the client's end.
    srv1: String,
    cli1: String,
    /// Server side of the second link (10.78.0.1/24) and the client's end.
    srv2: String,
    cli2: String,
}

fn lab() -> Lab {
    let (srv, c1, c2) = (NetNs::new("bbs"), NetNs::new("bbc"), NetNs::new("bbc"));
    let (srv1, cli1) = veth(&srv, &["10.77.0.1/24"], &c1, &[]);
    let (srv2, cli2) = veth(&srv, &["10.78.0.1/24"], &c2, &[]);
    Lab {
        srv,
        c1,
        c2,
        srv1,
        cli1,
        srv2,
        cli2,
    }
}

fn config(lab: &Lab) -> String {
    let subnet = |cidr: &str, net: &str| {
        format!(
            "[[dhcp.subnets]]\nmode = \"server\"\ninterface = \"{}\"\ncidr = \"{cidr}\"\n\
             range_start = \"{net}.100\"\nrange_end = \"{net}.150\"\nlease_time_secs = 600\n",
            lab.srv1
        )
    };
    format!(
        "[server]\nname = \"bootlane\"\n[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n{}{}",
        subnet("10.77.0.0/24", "10.77.0"),
        // Parked on the first link on purpose: the test moves it to the second one.
        subnet("10.78.0.0/24", "10.78.0"),
    )
}

/// Waits until `f` holds, panicking with `what` after `timeout`.
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn service_state(s: &Server, name: &str) -> String {
    let (code, v) = s.api("GET", "/services", None);
    assert_eq!(code, 200, "{v}");
    v["data"]["services"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == name))
        .map(|x| x["state"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// The `ss` lines of the server namespace's UDP sockets on port 67.
fn dhcp_sockets(lab: &Lab) -> String {
    lab.srv.sh("ss -Hulpn sport = :67")
}

fn in_pool(lease: &BTreeMap<String, String>, net: &str) -> bool {
    lease.get("ip").is_some_and(|ip| {
        ip.strip_prefix(&format!("{net}."))
            .and_then(|h| h.parse::<u8>().ok())
            .is_some_and(|h| (100..=150).contains(&h))
    })
}

fn kinds(msgs: &[SseMessage]) -> Vec<(Option<u64>, &str)> {
    msgs.iter().map(|m| (m.id, m.event.as_str())).collect()
}

#[test]
fn events_stream_resume_service_stop_start_and_live_interface_move() {
    let lab = lab();
    let mut s = Server::start(&lab.srv, &config(&lab));
    let pid = s.pid().expect("server running");
    let dir = s.data_dir.clone();
    wait_for("DHCP running", Duration::from_secs(10), || {
        service_state(&s, "dhcp") == "running"
    });
    wait_for("TFTP running", Duration::from_secs(10), || {
        service_state(&s, "tftp") == "running"
    });
    // A boot file of our own, with bytes that catch a reordered or short transfer.
    let boot = dir.join("boot");
    std::fs::create_dir_all(&boot).expect("boot root");
    let payload: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    std::fs::write(boot.join("backbone.bin"), &payload).expect("boot file");

    // ---- 1. Three happenings arrive on the stream in order ------------------------------
    // Subscribing from the current last id makes the start race-free: whatever happens
    // after that id is replayed if curl connects late.
    let (code, v) = s.api("GET", "/events?size=1", None);
    assert_eq!(code, 200, "{v}");
    let start_id = v["data"]["last_id"].as_u64().expect("last_id");
    let stream = s.sse("/events/stream", Some(start_id));

    let rec = s.add_record(json!({"name": "backbone", "type": "A", "value": "10.0.0.5"}));
    let rec_id = rec["id"].as_u64().expect("record id").to_string();
    let lease = udhcpc(&lab.c1, &lab.cli1, &dir).expect("udhcpc on the first link gets a lease");
    assert!(
        in_pool(&lease, "10.77.0"),
        "lease from the 10.77.0.0/24 pool: {lease:?}"
    );
    assert_eq!(lease.get("serverid").map(String::as_str), Some("10.77.0.1"));
    let got = dir.join("got.bin");
    lab.c1.sh(&format!(
        "curl -fsS -m 20 tftp://10.77.0.1/backbone.bin -o {}",
        got.display()
    ));
    assert!(
        std::fs::read(&got).expect("downloaded file") == payload,
        "TFTP download differs"
    );

    let (done, before) = stream.until(Duration::from_secs(15), |m| {
        m.event == "tftp.transfer.completed" && m.data["data"]["file"] == "backbone.bin"
    });
    let mut all = before;
    all.push(done.clone());
    eprintln!("stream: {:?}", kinds(&all));
    let ids: Vec<u64> = all.iter().map(|m| m.id.expect("every event has an id")).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]) && ids[0] > start_id,
        "ids increase from {start_id}: {ids:?}"
    );
    let pos = |pred: &dyn Fn(&SseMessage) -> bool| all.iter().position(pred);
    let created = pos(&|m| m.event == "dns.record.created" && m.data["resource_id"] == rec_id.as_str())
        .unwrap_or_else(|| panic!("no dns.record.created for {rec_id}: {:?}", kinds(&all)));
    let granted = pos(&|m| m.event == "dhcp.lease.granted" && m.data["data"]["ip"] == lease["ip"].as_str())
        .unwrap_or_else(|| panic!("no dhcp.lease.granted for {}: {:?}", lease["ip"], kinds(&all)));
    let completed = all.len() - 1;
    assert!(
        created < granted && granted < completed,
        "order: record {created}, lease {granted}, transfer {completed}"
    );
    // The fields every event must carry, on each.
    let c = &all[created].data;
    assert_eq!(c["actor"], "admin", "{c}");
    assert_eq!(c["data"]["action"], "create", "{c}");
    assert_eq!(c["data"]["after"]["value"], "10.0.0.5", "{c}");
    let g = &all[granted].data;
    assert_eq!(g["actor"], "system", "{g}");
    assert_eq!(g["data"]["subnet"], "10.77.0.0/24", "{g}");
    let t = &done.data;
    assert_eq!(t["data"]["bytes"], payload.len(), "{t}");
    assert!(
        t["remote_addr"]
            .as_str()
            .is_some_and(|a| a.starts_with(&format!("{}:", lease["ip"]))),
        "{t}"
    );
    let last_seen = done.id.expect("id");
    // Nothing lost: the stream carried every stored event in that range (ids may skip).
    let (code, v) = s.api("GET", &format!("/events?since_id={start_id}&size=1000"), None);
    assert_eq!(code, 200, "{v}");
    let mut stored: Vec<u64> = v["data"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["id"].as_u64())
        .filter(|id| *id <= last_seen)
        .collect();
    stored.sort_unstable();
    assert_eq!(ids, stored, "the stream carried every stored event after {start_id}");

    // ---- 2. Drop the stream, write twice, resume with Last-Event-ID --------------------
    drop(stream);
    let path = format!("/dns/records/{rec_id}");
    let (code, v) = s.api("PUT", &path, Some(&json!({"value": "10.0.0.6"})));
    assert_eq!(code, 200, "{v}");
    let (code, v) = s.api("DELETE", &path, None);
    assert_eq!(code, 200, "{v}");
    let resumed = s.sse("/events/stream?kind=dns.record.", Some(last_seen));
    let wait = Duration::from_secs(10);
    let first = resumed.next(wait).expect("first replayed event");
    let second = resumed.next(wait).expect("second replayed event");
    assert_eq!(
        [
            (first.event.as_str(), &first.data["resource_id"]),
            (second.event.as_str(), &second.data["resource_id"])
        ],
        [
            ("dns.record.updated", &json!(rec_id)),
            ("dns.record.deleted", &json!(rec_id))
        ],
        "exactly the two writes, in order"
    );
    assert_eq!(first.data["data"]["after"]["value"], "10.0.0.6");
    assert!(first.id.expect("id") > last_seen && second.id > first.id);
    // Nothing else was replayed: the next message is a live write made now.
    let live = s.add_record(json!({"name": "live", "type": "A", "value": "10.0.0.7"}));
    let third = resumed.next(wait).expect("live event after the replay");
    assert_eq!(
        (third.event.as_str(), &third.data["resource_id"]),
        (
            "dns.record.created",
            &json!(live["id"].as_u64().expect("id").to_string())
        ),
        "the replay held exactly two events"
    );
    drop(resumed);

    // ---- 3. Stop really stops; start brings leases back --------------------------------
    let (code, v) = s.api("POST", "/services/dhcp/stop", None);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["data"]["state"], "stopped", "{v}");
    assert_eq!(dhcp_sockets(&lab).trim(), "", "no socket on port 67 once stopped");
    assert!(
        udhcpc(&lab.c1, &lab.cli1, &dir).is_none(),
        "a stopped DHCP service must not answer"
    );
    let (code, v) = s.api("POST", "/services/dhcp/start", None);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["data"]["state"], "running", "{v}");
    let again = udhcpc(&lab.c1, &lab.cli1, &dir).expect("a lease once DHCP is started again");
    assert!(in_pool(&again, "10.77.0"), "{again:?}");

    // ---- 4. Move a subnet to the second link, live -------------------------------------
    assert!(
        udhcpc(&lab.c2, &lab.cli2, &dir).is_none(),
        "nothing serves the second link before the move"
    );
    let (code, v) = s.api(
        "PUT",
        "/settings/interfaces",
        Some(&json!({"dhcp": {"10.78.0.0/24": lab.srv2}})),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["data"]["applied"]["restarted"], json!(["dhcp"]), "{v}");
    assert_eq!(v["data"]["settings"]["dhcp"]["10.78.0.0/24"], json!(lab.srv2), "{v}");
    let moved = udhcpc(&lab.c2, &lab.cli2, &dir).expect("a lease on the second link after the move");
    assert!(
        in_pool(&moved, "10.78.0"),
        "lease from the 10.78.0.0/24 pool: {moved:?}"
    );
    assert_eq!(moved.get("serverid").map(String::as_str), Some("10.78.0.1"));
    // The first link still works, and it is all the same process.
    let first_link = udhcpc(&lab.c1, &lab.cli1, &dir).expect("the first link still gets leases");
    assert!(in_pool(&first_link, "10.77.0"), "{first_link:?}");
    assert_eq!(s.pid(), Some(pid), "no process restart");
    let socks = dhcp_sockets(&lab);
    assert!(
        socks
            .lines()
            .any(|l| l.contains(&format!("%{}:67", lab.srv2)) && l.contains(&format!("pid={pid},"))),
        "port 67 on {} belongs to the original process {pid}:\n{socks}",
        lab.srv2
    );
}
