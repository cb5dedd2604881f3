//! Wake-on-LAN end to end: the real `bootlane` binary in a server namespace with two veth
//! links, one to a capture namespace (10.91.0.0/24) and one to a second namespace
//! (10.92.0.0/24). In the capture namespace, UDP sockets bound to the subnet-directed
//! broadcast `10.91.0.255:9`, the limited broadcast `255.255.255.255:9` and `0.0.0.0:7`
//! (the server sends to ports 9 and 7) record every datagram with its source and arrival
//! time; the other namespace listens on `0.0.0.0:9`.
//!
//! One test, in order:
//! 1. `POST /hosts/{id}/wake` for a host on 10.91.0.0/24: both broadcast forms arrive on
//!    port 9 and on port 7, each exactly the 102-byte magic packet for its MAC, from the
//!    server's address on that link; nothing reaches the other link (the socket is bound
//!    to the interface, so even `255.255.255.255` leaves only there);
//! 2. with a SecureOn password the six extra bytes arrive;
//! 3. `POST /hosts/batch/wake` with a 400 ms stagger: the hosts' packets arrive in the
//!    order asked, at least 400 ms apart, and again nothing on the other link;
//! 4. a schedule for a second a few seconds ahead (six-field cron, UTC) fires once:
//!    its packet arrives, no second one follows, and `GET /wol/schedules` says `ok`;
//!    its target is a bare MAC with no known address, so it goes out of both links.

use std::{
    net::{SocketAddr, UdpSocket},
    os::fd::AsRawFd,
    sync::mpsc,
    time::{Duration, Instant},
};

use bootlane_tests::{veth, NetNs, Server};
use serde_json::{json, Value};

/// One datagram a capture socket got.
#[derive(Debug, Clone)]
struct Got {
    /// Which socket: `directed`, `limited`, `port7` or `other`.
    tag: &'static str,
    payload: Vec<u8>,
    from: SocketAddr,
    at: Instant,
}

/// Binds UDP sockets inside namespace `ns` (a thread that joins it with `setns`; the
/// sockets stay in that namespace) and forwards what they receive on `tx`.
fn listen(ns: &NetNs, binds: &[(&'static str, &str)], tx: &mpsc::Sender<Got>) {
    let path = format!("/var/run/netns/{}", ns.name);
    let binds: Vec<(&'static str, String)> = binds.iter().map(|(t, a)| (*t, a.to_string())).collect();
    let sockets = std::thread::spawn(move || {
        let f = std::fs::File::open(&path).expect("netns handle");
        // SAFETY: setns(2) on a valid namespace fd; it changes only this thread's namespace.
        let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
        binds
            .into_iter()
            .map(|(t, a)| (t, UdpSocket::bind(&a).unwrap_or_else(|e| panic!("bind {a}: {e}"))))
            .collect::<Vec<_>>()
    })
    .join()
    .expect("listener setup");
    for (tag, s) in sockets {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while let Ok((n, from)) = s.recv_from(&mut buf) {
                let got = Got {
                    tag,
                    payload: buf[..n].to_vec(),
                    from,
                    at: Instant::now(),
                };
                if tx.send(got).is_err() {
                    return;
                }
            }
        });
    }
}

/// Everything received within `d`.
fn drain(rx: &mpsc::Receiver<Got>, d: Duration) -> Vec<Got> {
    let end = Instant::now() + d;
    let mut v = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(g) => v.push(g),
            Err(_) => break,
        }
    }
    v
}

fn magic(mac: [u8; 6]) -> Vec<u8> {
    let mut p = vec![0xFF; 6];
    for _ in 0..16 {
        p.extend_from_slice(&mac);
    }
    p
}

fn create_host(s: &Server, name: &str, mac: &str, ip: &str) -> u64 {
    let (code, v) = s.api("POST", "/hosts", Some(&json!({"name": name, "mac": mac, "ip": ip})));
    assert_eq!(code, 201, "{v}");
    v["data"]["id"].as_u64().unwrap()
}

fn ok(s: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let (code, v) = s.api(method, path, body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v["data"].clone()
}

#[test]
fn wake_on_lan_broadcasts_secureon_stagger_and_a_schedule() {
    let (srv, cap, other) = (NetNs::new("wls"), NetNs::new("wlc"), NetNs::new("wlo"));
    let (srv_if, _) = veth(&srv, &["10.91.0.1/24"], &cap, &["10.91.0.2/24"]);
    let (other_if, _) = veth(&srv, &["10.92.0.1/24"], &other, &["10.92.0.2/24"]);
    let (tx, rx) = mpsc::channel();
    listen(
        &cap,
        &[
            ("directed", "10.91.0.255:9"),
            ("limited", "255.255.255.255:9"),
            ("port7", "0.0.0.0:7"),
        ],
        &tx,
    );
    listen(&other, &[("other", "0.0.0.0:9")], &tx);
    let s = Server::start(
        &srv,
        "[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n\
         [wol]\nports = [9, 7]\nrepeat = 1\nstagger_ms = 0\n",
    );

    // GET /wol/interfaces: both links with their broadcast addresses.
    let ifs = ok(&s, "GET", "/wol/interfaces", None);
    let names: Vec<&str> = ifs["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&srv_if.as_str()) && names.contains(&other_if.as_str()),
        "{ifs}"
    );
    assert!(ifs.to_string().contains("10.91.0.255"), "{ifs}");

    // 1. Both broadcast forms, ports 9 and 7, exact bytes, from the server's link address.
    let mac1 = [0x52, 0x54, 0x00, 0x91, 0x00, 0x01];
    let h1 = create_host(&s, "wol1", "52:54:00:91:00:01", "10.91.0.50");
    let rec = ok(&s, "POST", &format!("/hosts/{h1}/wake"), None);
    assert_eq!(rec["interfaces"], json!([srv_if]), "{rec}");
    let got = drain(&rx, Duration::from_secs(1));
    let tags = |g: &[Got]| {
        let mut t: Vec<&str> = g.iter().map(|g| g.tag).collect();
        t.sort_unstable();
        t
    };
    // Port 7 gets both forms on its wildcard socket.
    assert_eq!(tags(&got), ["directed", "limited", "port7", "port7"], "{got:?}");
    for g in &got {
        assert_eq!(g.payload, magic(mac1), "{} got other bytes", g.tag);
        assert_eq!(g.from.ip().to_string(), "10.91.0.1", "{g:?}");
    }

    // 2. SecureOn: the password follows the sixteen copies.
    ok(
        &s,
        "POST",
        &format!("/hosts/{h1}/wake"),
        Some(&json!({"password": "de:ad:be:ef:00:01", "interface": srv_if})),
    );
    let got = drain(&rx, Duration::from_secs(1));
    assert_eq!(got.len(), 4, "{got:?}");
    for g in &got {
        assert_eq!(g.payload.len(), 108);
        assert_eq!(&g.payload[..102], magic(mac1).as_slice());
        assert_eq!(&g.payload[102..], &[0xde, 0xad, 0xbe, 0xef, 0x00, 0x01]);
    }

    // 3. Batch with a stagger: in the order asked, at least the stagger apart.
    let mac2 = [0x52, 0x54, 0x00, 0x91, 0x00, 0x02];
    let h2 = create_host(&s, "wol2", "52:54:00:91:00:02", "10.91.0.51");
    let t0 = Instant::now();
    let res = ok(
        &s,
        "POST",
        "/hosts/batch/wake",
        Some(&json!({"ids": [h2, h1], "stagger_ms": 400})),
    );
    assert_eq!(res["ok"], 2, "{res}");
    assert!(t0.elapsed() >= Duration::from_millis(400));
    let got = drain(&rx, Duration::from_secs(1));
    assert!(got.iter().all(|g| g.tag != "other"), "{got:?}");
    let got: Vec<Got> = got.into_iter().filter(|g| g.tag == "directed").collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].payload, magic(mac2), "the first id first");
    assert_eq!(got[1].payload, magic(mac1));
    let gap = got[1].at.duration_since(got[0].at);
    assert!(gap >= Duration::from_millis(390), "only {gap:?} between the hosts");

    // 4. A schedule a few seconds ahead fires once.
    let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(4);
    let cron = format!("{} {} {} * * *", at.second(), at.minute(), at.hour());
    let sched = ok(
        &s,
        "POST",
        "/wol/schedule",
        Some(&json!({"name": "soon", "cron": cron, "timezone": "UTC", "macs": ["52:54:00:91:00:03"]})),
    );
    assert!(sched["next_run"].as_str().is_some(), "{sched}");
    let got = drain(&rx, Duration::from_secs(8));
    // A MAC no host has and no address to go by: every interface, so the other link's
    // wildcard socket gets both forms (10.92.0.255:9 and 255.255.255.255:9) from 10.92.0.1.
    let other: Vec<&Got> = got.iter().filter(|g| g.tag == "other").collect();
    assert_eq!(other.len(), 2, "{got:?}");
    assert!(
        other.iter().all(|g| g.from.ip().to_string() == "10.92.0.1"),
        "{other:?}"
    );
    let got: Vec<Got> = got.into_iter().filter(|g| g.tag == "directed").collect();
    assert_eq!(got.len(), 1, "exactly one run: {got:?}");
    assert_eq!(got[0].payload, magic([0x52, 0x54, 0x00, 0x91, 0x00, 0x03]));
    let list = ok(&s, "GET", "/wol/schedules", None);
    assert_eq!(list["schedules"][0]["last_status"], "ok", "{list}");

    let hist = ok(&s, "GET", "/wol/history", None);
    assert_eq!(hist["total"], 5, "{hist}");
    assert!(s.log_text().lines().all(|l| !l.contains("panicked")));
}
