use std::net::{Ipv4Addr, SocketAddrV4};

use super::*;
use bootlane_core::events::{BootFileServed, EventKind, IpxeServed, NewEvent, TftpRefused, TftpTransfer};

const MAC: &str = "52:54:00:aa:bb:01";

fn seen(kind: &'static str, reply: Option<&'static str>, server_id: Option<Ipv4Addr>) -> DhcpSeen {
    DhcpSeen {
        at: std::time::SystemTime::now(),
        mac: MAC.parse().unwrap(),
        src: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 68),
        port: 67,
        kind,
        arch: Some(0),
        vendor_class: Some("PXEClient:Arch:00000:UNDI:002001".into()),
        ipxe: false,
        server_id,
        giaddr: None,
        reply,
        server: reply.map(|_| Ipv4Addr::new(10, 0, 0, 1)),
        yiaddr: reply.map(|_| Ipv4Addr::new(10, 0, 0, 50)),
        next_server: reply.map(|_| Ipv4Addr::new(10, 0, 0, 1)),
        boot_file: reply.map(|_| "undionly.kpxe\x1b[2J".into()),
    }
}

const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// A firmware DISCOVER offered 10.0.0.50 and its REQUEST acknowledged.
fn dora(s: &Sessions) {
    s.observe(from_dhcp(seen("discover", Some("offer"), None), &mut Names::default()));
    s.observe(from_dhcp(
        seen("request", Some("ack"), Some(SERVER)),
        &mut Names::default(),
    ));
}

fn sessions(quiet: u64) -> Arc<Sessions> {
    let cfg = SessionsConfig {
        quiet_secs: quiet,
        ..Default::default()
    };
    Sessions::open(&Store::temporary(), cfg, None, None).unwrap()
}

fn ev(bus: &EventBus, e: NewEvent) -> Arc<Event> {
    bus.publish(e.remote("10.0.0.50"))
}

#[tokio::test]
async fn a_boot_becomes_one_session_with_a_verdict_and_is_stored_when_quiet() {
    let s = sessions(5);
    let bus = EventBus::in_memory();
    dora(&s);
    // TFTP names the client by address only: matched through the ACK's address.
    s.event(&ev(
        &bus,
        NewEvent::new(EventKind::TftpTransferCompleted, "t").with(&TftpTransfer {
            file: "undionly.kpxe".into(),
            client: "10.0.0.50:2070".into(),
            bytes: 70_000,
            duration_ms: 120,
            outcome: "Complete".into(),
        }),
    ));
    s.event(&ev(
        &bus,
        NewEvent::new(EventKind::BootIpxeServed, "i").with(&IpxeServed::Profile {
            mac: MAC.into(),
            profile: "debian".into(),
            host: None,
        }),
    ));
    let open = s.list(&Filter::default(), 10).unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].state, SessionState::Open);
    assert_eq!(open[0].verdict, Verdict::InProgress);
    assert_eq!(open[0].step_count, 4);
    assert!(open[0].steps.is_empty(), "lists carry no steps");
    for f in ["debian/vmlinuz", "debian/initrd.gz"] {
        s.event(&ev(
            &bus,
            NewEvent::new(EventKind::BootFileServed, "f").with(&BootFileServed {
                file: f.into(),
                bytes: 1000,
                image: None,
                status: 200,
            }),
        ));
    }
    let one = s.get(open[0].id).unwrap().unwrap();
    assert_eq!(one.steps.len(), 6);
    assert_eq!(one.verdict, Verdict::HandedToInstaller, "{}", one.reason);
    assert!(one.kernel_ms.is_some());
    assert!(
        one.steps[0].summary.contains("\\u{1b}"),
        "client text escaped: {}",
        one.steps[0].summary
    );
    assert_eq!(one.steps[4].details.str("role"), Some("kernel"));
    s.tick(OffsetDateTime::now_utc() + time::Duration::seconds(6));
    let ended = s
        .list(
            &Filter {
                state: Some(SessionState::Ended),
                ..Default::default()
            },
            10,
        )
        .unwrap();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].verdict, Verdict::HandedToInstaller);
    // From the journal after a restart of the recorder.
    let stored: Vec<_> = s.journal.newest_first().collect::<Result<_, _>>().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].session.steps.len(), 6);
}

#[tokio::test]
async fn another_servers_offer_and_a_missing_file_are_named_and_a_firmware_discover_begins_anew() {
    let s = sessions(900);
    let bus = EventBus::in_memory();
    s.observe(from_dhcp(seen("discover", Some("offer"), None), &mut Names::default()));
    s.observe(from_dhcp(
        seen("request", None, Some(Ipv4Addr::new(10, 0, 0, 5))),
        &mut Names::default(),
    ));
    let l = s.list(&Filter::default(), 10).unwrap();
    assert_eq!(l[0].verdict, Verdict::Stalled);
    assert_eq!(l[0].reason, "took another server's offer: 10.0.0.5 answered first");
    // Retries of DHCP stay in the session; a TFTP refusal (from the rival's address plan).
    s.observe(from_dhcp(seen("discover", Some("offer"), None), &mut Names::default()));
    assert_eq!(s.list(&Filter::default(), 10).unwrap().len(), 1);
    s.observe(from_dhcp(
        seen("request", Some("ack"), Some(SERVER)),
        &mut Names::default(),
    ));
    s.event(&ev(
        &bus,
        NewEvent::new(EventKind::TftpTransferFailed, "t").with(&TftpRefused {
            file: "ipxe.efi".into(),
            client: "10.0.0.50:2070".into(),
            error: "File not found".into(),
            code: 1,
        }),
    ));
    let l = s.list(&Filter::default(), 10).unwrap();
    assert_eq!(
        l[0].reason,
        "asked for \"ipxe.efi\" over TFTP: not found in the boot root"
    );
    // The machine reboots: a firmware DISCOVER after TFTP begins a new session.
    s.observe(from_dhcp(seen("discover", Some("offer"), None), &mut Names::default()));
    let l = s.list(&Filter::default(), 10).unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].state, SessionState::Open);
    assert_eq!(l[1].state, SessionState::Ended);
    assert_eq!(l[1].verdict, Verdict::Stalled);
    let by_verdict = s
        .list(
            &Filter {
                verdict: Some(Verdict::Stalled),
                ..Default::default()
            },
            10,
        )
        .unwrap();
    assert_eq!(by_verdict.len(), 1);
    // A machine that is no boot client opens nothing.
    let mut plain = seen("discover", Some("offer"), None);
    plain.mac = "52:54:00:aa:bb:02".parse().unwrap();
    plain.arch = None;
    plain.vendor_class = None;
    s.observe(from_dhcp(plain, &mut Names::default()));
    assert_eq!(s.list(&Filter::default(), 10).unwrap().len(), 2);
}

#[tokio::test]
async fn open_sessions_are_bounded_and_the_oldest_ends_first() {
    let s = sessions(900);
    for i in 0..=MAX_OPEN as u32 {
        let mut d = seen("discover", Some("offer"), None);
        let b = i.to_be_bytes();
        d.mac = format!("52:54:00:{:02x}:{:02x}:{:02x}", b[1], b[2], b[3])
            .parse()
            .unwrap();
        s.observe(from_dhcp(d, &mut Names::default()));
    }
    let st = s.state.lock().unwrap();
    assert_eq!(st.open.len(), MAX_OPEN);
    assert!(
        !st.open.contains_key(&Key::Mac("52:54:00:00:00:00".parse().unwrap())),
        "the oldest ended"
    );
    assert!(st.open.contains_key(&Key::Mac("52:54:00:00:10:00".parse().unwrap())));
    assert_eq!(st.pending.len(), 1);
    assert!(st.order.len() <= 2 * MAX_OPEN);
    let oldest = st.recent[0].clone();
    drop(st);
    // Ended and not yet in the journal: read back from its pending line, steps and all.
    assert!(oldest.steps.is_empty(), "memory keeps the summary");
    let read = s.get(oldest.id).unwrap().expect("a pending session is found");
    assert_eq!((read.mac.as_deref(), read.steps.len()), (Some("52:54:00:00:00:00"), 1));
    assert_eq!(read.state, SessionState::Ended);
    s.flush();
    assert!(s.state.lock().unwrap().pending.is_empty());
    assert_eq!(s.get(oldest.id).unwrap(), Some(read), "the same from the journal");
}

#[tokio::test]
async fn steps_that_arrive_out_of_order_are_judged_in_time_order() {
    let s = sessions(900);
    let bus = EventBus::in_memory();
    // The script is served first, but its event reaches the recorder after the 404 the
    // same client asked next (the HTTP route reports it at once).
    let script = ev(
        &bus,
        NewEvent::new(EventKind::BootIpxeServed, "i").with(&IpxeServed::Profile {
            mac: MAC.into(),
            profile: "debian".into(),
            host: None,
        }),
    );
    std::thread::sleep(Duration::from_millis(5));
    s.http_missing(Some("10.0.0.50".parse().unwrap()), "debian/linux");
    s.event(&script);
    let l = s.list(&Filter::default(), 10).unwrap();
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(l[0].mac.as_deref(), Some(MAC));
    assert_eq!(l[0].reason, "asked for \"debian/linux\" over HTTP: not found");
    let one = s.get(l[0].id).unwrap().unwrap();
    assert_eq!(one.steps[0].kind, "ipxe");
    assert_eq!(one.steps[0].offset_ms, 0);
    assert!(one.steps[1].offset_ms >= 5, "{:?}", one.steps);
}

#[tokio::test]
async fn retention_by_count_keeps_the_newest_ended_sessions() {
    let cfg = SessionsConfig {
        retention_count: 5,
        ..Default::default()
    };
    let s = Sessions::open(&Store::temporary(), cfg, None, None).unwrap();
    for i in 0..12u8 {
        let mut d = seen("discover", Some("offer"), None);
        d.mac = MacAddr([0x52, 0x54, 0, 0, 1, i]);
        s.observe(from_dhcp(d, &mut Names::default()));
        // Each session ends and reaches the journal on its own append.
        s.end_all();
    }
    assert_eq!(s.journal.newest_first().count(), 12);
    s.prune();
    let kept: Vec<String> = s
        .journal
        .newest_first()
        .map(|r| r.unwrap().session.mac.unwrap())
        .collect();
    assert_eq!(
        kept,
        (7..12u8)
            .rev()
            .map(|i| format!("52:54:00:00:01:{i:02x}"))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn the_recorder_thread_runs_at_its_nice_and_records() {
    let s = sessions(900);
    let bus = EventBus::in_memory();
    let (tx, rx) = bootlane_dhcp::dhcp::trace::channel();
    let token = CancellationToken::new();
    s.spawn(&bus, rx, token.clone()).unwrap();
    tx.try_send(seen("discover", Some("offer"), None)).unwrap();
    // The thread's nice value, from /proc (field 19 of its stat line).
    let nice = || {
        std::fs::read_dir("/proc/self/task").unwrap().find_map(|t| {
            let t = t.unwrap().path();
            let comm = std::fs::read_to_string(t.join("comm")).ok()?;
            let stat = std::fs::read_to_string(t.join("stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 2..];
            (comm.trim() == "boot-sessions").then(|| after.split(' ').nth(16)?.parse::<i32>().ok())?
        })
    };
    for _ in 0..100 {
        if s.state.lock().unwrap().open.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        s.state.lock().unwrap().open.len(),
        1,
        "the queued DISCOVER began a session"
    );
    // SAFETY: getpriority(2) on the calling thread's own id.
    let ours = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
    let theirs = nice().expect("the boot-sessions thread");
    if ours <= RECORDER_NICE {
        assert_eq!(theirs, RECORDER_NICE);
    } else {
        // A test run already below that priority cannot be raised without privilege.
        assert!(theirs >= RECORDER_NICE, "{theirs}");
    }
    token.cancel();
}
