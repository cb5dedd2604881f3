//! Transfer tests over 127.0.0.1 with a handmade client: plain RFC 1350, options,
//! windows, retransmission, the abandoned UEFI tsize probe, refusals, concurrency.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

use super::{
    handler::FsHandler,
    packet::{self, errcode, Packet},
    server::{Server, TftpLimits},
};

struct Lab {
    _dir: tempfile::TempDir,
    addr: SocketAddr,
    token: CancellationToken,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

fn content(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

async fn lab(files: &[(&str, usize)]) -> Lab {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().join("boot");
    std::fs::create_dir_all(&root).unwrap();
    for (name, size) in files {
        std::fs::write(root.join(name), content(*size)).unwrap();
    }
    std::fs::write(dir.path().join("secret"), b"secret").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("escape")).unwrap();
    let token = CancellationToken::new();
    let limits = TftpLimits {
        timeout: Duration::from_millis(200),
        max_timeout: Duration::from_millis(400),
        retries: 3,
        max_transfers: 64,
        max_per_client: 64,
    };
    let mut server = Server::new(Arc::new(FsHandler::new(root)), limits, token.clone());
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.register_socket(sock).unwrap();
    // The server's tasks live until the token is cancelled.
    std::mem::forget(server);
    Lab { _dir: dir, addr, token }
}

async fn recv(sock: &UdpSocket) -> (Packet, SocketAddr) {
    let mut buf = vec![0u8; 70000];
    let (n, from) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
        .await
        .expect("server answered in time")
        .unwrap();
    (Packet::parse(&buf[..n]).unwrap(), from)
}

/// Downloads `name` with `opts`, acknowledging each window's last block (or every block
/// when `ack_every`); returns the bytes and the OACK options.
async fn fetch(
    server: SocketAddr,
    name: &str,
    opts: &[(&str, &str)],
) -> Result<(Vec<u8>, Vec<(String, String)>), (u16, String)> {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&packet::rrq(name, "octet", opts), server).await.unwrap();
    let mut out = Vec::new();
    let mut oack = Vec::new();
    let mut blksize = 512;
    let mut window = 1u16;
    let mut expect: u16 = 1;
    let mut in_window = 0u16;
    loop {
        let (p, tid) = recv(&sock).await;
        match p {
            Packet::Oack(o) => {
                for (k, v) in &o {
                    match k.as_str() {
                        "blksize" => blksize = v.parse().unwrap(),
                        "windowsize" => window = v.parse().unwrap(),
                        _ => {}
                    }
                }
                oack = o;
                sock.send_to(&packet::ack(0), tid).await.unwrap();
            }
            Packet::Data(n, d) => {
                assert_eq!(n, expect, "blocks arrive in order on a clean link");
                let last = d.len() < blksize;
                out.extend_from_slice(&d);
                expect = expect.wrapping_add(1);
                in_window += 1;
                if last || in_window == window {
                    sock.send_to(&packet::ack(n), tid).await.unwrap();
                    in_window = 0;
                }
                if last {
                    return Ok((out, oack));
                }
            }
            Packet::Error(c, m) => return Err((c, m)),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn plain_and_with_options() {
    let l = lab(&[("a.bin", 1500), ("exact.bin", 1024), ("empty.bin", 0)]).await;
    let (d, oack) = fetch(l.addr, "a.bin", &[]).await.unwrap();
    assert_eq!(d, content(1500));
    assert!(oack.is_empty());
    // A multiple of the block size ends with an empty block.
    let (d, _) = fetch(l.addr, "exact.bin", &[]).await.unwrap();
    assert_eq!(d, content(1024));
    let (d, _) = fetch(l.addr, "empty.bin", &[]).await.unwrap();
    assert!(d.is_empty());
    let (d, oack) = fetch(
        l.addr,
        "/a.bin",
        &[("tsize", "0"), ("blksize", "1468"), ("timeout", "2")],
    )
    .await
    .unwrap();
    assert_eq!(d, content(1500));
    assert_eq!(
        oack,
        vec![
            ("tsize".to_string(), "1500".to_string()),
            ("blksize".to_string(), "1468".to_string()),
            ("timeout".to_string(), "2".to_string())
        ]
    );
}

#[tokio::test]
async fn windowsize_and_block_wrap() {
    // 70 000 blocks of 8 bytes: the block number wraps past 65535.
    let big = 8 * 70_000 + 3;
    let l = lab(&[("w.bin", 100_000), ("big.bin", big)]).await;
    let (d, oack) = fetch(l.addr, "w.bin", &[("blksize", "1024"), ("windowsize", "8")])
        .await
        .unwrap();
    assert_eq!(d, content(100_000));
    assert!(oack.contains(&("windowsize".to_string(), "8".to_string())));
    let (d, _) = fetch(l.addr, "big.bin", &[("blksize", "8"), ("windowsize", "64")])
        .await
        .unwrap();
    assert_eq!(d.len(), big);
    assert_eq!(d, content(big));
}

#[tokio::test]
async fn retransmits_after_a_lost_block() {
    let l = lab(&[("r.bin", 700)]).await;
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&packet::rrq("r.bin", "octet", &[]), l.addr).await.unwrap();
    // "Lose" block 1: do not ack; the server resends it after its timeout.
    let (first, tid) = recv(&sock).await;
    assert!(matches!(first, Packet::Data(1, _)));
    let t0 = std::time::Instant::now();
    let (again, _) = recv(&sock).await;
    assert_eq!(again, first);
    assert!(t0.elapsed() >= Duration::from_millis(150));
    sock.send_to(&packet::ack(1), tid).await.unwrap();
    let (p, _) = recv(&sock).await;
    let Packet::Data(2, d) = p else {
        panic!("expected block 2, got {p:?}")
    };
    assert_eq!(d.len(), 700 - 512);
    // A packet from a foreign port gets "unknown transfer ID" and changes nothing.
    let intruder = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    intruder.send_to(&packet::ack(2), tid).await.unwrap();
    let (p, _) = recv(&intruder).await;
    assert!(matches!(p, Packet::Error(errcode::UNKNOWN_TID, _)), "{p:?}");
    sock.send_to(&packet::ack(1), tid).await.unwrap(); // duplicate, ignored
    sock.send_to(&packet::ack(2), tid).await.unwrap();
}

#[tokio::test]
async fn abandoned_tsize_probe_then_real_transfer() {
    // The UEFI pattern: ask for tsize only, read the OACK, go away (or send ERROR 8),
    // then ask again with blksize and windowsize.
    let l = lab(&[("ipxe.efi", 5000)]).await;
    let probe = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    probe
        .send_to(&packet::rrq("ipxe.efi", "octet", &[("tsize", "0")]), l.addr)
        .await
        .unwrap();
    let (p, tid) = recv(&probe).await;
    assert_eq!(p, Packet::Oack(vec![("tsize".to_string(), "5000".to_string())]));
    // Second probe: abandoned without a word.
    let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    silent
        .send_to(&packet::rrq("ipxe.efi", "octet", &[("tsize", "0")]), l.addr)
        .await
        .unwrap();
    let _ = recv(&silent).await;
    probe
        .send_to(&packet::error(errcode::OPTION_REFUSED, "tsize only"), tid)
        .await
        .unwrap();
    let (d, oack) = fetch(l.addr, "ipxe.efi", &[("blksize", "1468"), ("windowsize", "4")])
        .await
        .unwrap();
    assert_eq!(d, content(5000));
    assert_eq!(oack.len(), 2);
}

#[tokio::test]
async fn refusals() {
    let l = lab(&[("a.bin", 10)]).await;
    for (name, code) in [
        ("missing.bin", errcode::NOT_FOUND),
        ("../secret", errcode::ACCESS),
        ("escape", errcode::ACCESS),
        ("..\\secret", errcode::ACCESS),
    ] {
        let e = fetch(l.addr, name, &[]).await.unwrap_err();
        assert_eq!(e.0, code, "{name}");
    }
    // Writes are refused.
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut wrq = packet::rrq("a.bin", "octet", &[]);
    wrq[1] = 2;
    sock.send_to(&wrq, l.addr).await.unwrap();
    let (p, _) = recv(&sock).await;
    assert!(matches!(p, Packet::Error(errcode::ACCESS, _)));
    // Garbage on the listening port is ignored and the server keeps serving.
    sock.send_to(&[0, 9, 1, 2, 3], l.addr).await.unwrap();
    sock.send_to(&[], l.addr).await.unwrap();
    let (d, _) = fetch(l.addr, "a.bin", &[]).await.unwrap();
    assert_eq!(d, content(10));
}

#[tokio::test]
async fn many_concurrent_transfers() {
    let l = lab(&[("c.bin", 64 * 1024)]).await;
    let mut set = tokio::task::JoinSet::new();
    for i in 0..40 {
        let addr = l.addr;
        set.spawn(async move {
            let opts: &[(&str, &str)] = if i % 2 == 0 {
                &[("blksize", "1468"), ("windowsize", "8")]
            } else {
                &[]
            };
            fetch(addr, "c.bin", opts).await.unwrap().0
        });
    }
    while let Some(r) = set.join_next().await {
        assert_eq!(r.unwrap(), content(64 * 1024));
    }
}

#[test]
fn window_memory_is_bounded() {
    use super::{handler::negotiate, packet::Request};
    let req = Request {
        write: false,
        filename: "x".into(),
        mode: "octet".into(),
        options: vec![("windowsize".into(), "64".into()), ("blksize".into(), "65464".into())],
    };
    let n = negotiate(&req, 1 << 30);
    assert_eq!(n.blksize, 65464);
    assert_eq!(n.windowsize, 4, "256 KiB / 65464 bytes");
    assert!(
        n.oack.contains(&("windowsize".to_string(), "4".to_string())),
        "the OACK carries the lowered window"
    );
}

/// Fuzzing regression (`tftp_packet`): an option sent twice is negotiated once, with
/// the first value, and the OACK says exactly what the transfer uses.
#[test]
fn regression_fuzz_repeated_option_counts_once() {
    use super::{handler::negotiate, packet::Request};
    let req = Request {
        write: false,
        filename: "small.bin".into(),
        mode: "octet".into(),
        options: vec![
            ("blksize".into(), "2048".into()),
            ("blksize".into(), "1024".into()),
            ("tsize".into(), "0".into()),
        ],
    };
    let n = negotiate(&req, 3300);
    assert_eq!(n.blksize, 2048);
    assert_eq!(
        n.oack,
        vec![
            ("blksize".to_string(), "2048".to_string()),
            ("tsize".to_string(), "3300".to_string())
        ]
    );
}

/// Fuzzing regression (`tftp_session`): a stray ACK while the OACK awaits ACK 0 gets no
/// answer (no Sorcerer's Apprentice); the OACK is resent only when its timer runs out,
/// and the transfer then proceeds.
#[tokio::test]
async fn regression_fuzz_stray_ack_before_oack_is_acknowledged() {
    let l = lab(&[("s.bin", 700)]).await;
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&packet::rrq("s.bin", "octet", &[("blksize", "1024")]), l.addr)
        .await
        .unwrap();
    let (p, tid) = recv(&sock).await;
    assert!(matches!(p, Packet::Oack(_)), "{p:?}");
    let t0 = std::time::Instant::now();
    sock.send_to(&packet::ack(1025), tid).await.unwrap();
    let (p, _) = recv(&sock).await;
    assert!(matches!(p, Packet::Oack(_)), "{p:?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(150),
        "the OACK came again after {:?}: in answer to the stray ACK, not its 200 ms timer",
        t0.elapsed()
    );
    sock.send_to(&packet::ack(0), tid).await.unwrap();
    let (p, _) = recv(&sock).await;
    assert!(matches!(&p, Packet::Data(1, d) if d.len() == 700), "{p:?}");
}

/// A completed transfer and a refused one show up in the rendered metrics. The
/// recorder is shared by every test in the binary, so the test compares before/after
/// values.
#[tokio::test]
async fn transfers_are_counted() {
    use bootlane_core::metrics::{install, render, test_support::value};
    install();
    let l = lab(&[("m.bin", 1500)]).await;
    let text = render();
    let started = value(&text, "bootlane_tftp_transfers_started_total");
    let completed = value(&text, "bootlane_tftp_transfers_completed_total");
    let bytes = value(&text, "bootlane_tftp_bytes_sent_total");
    let not_found = value(&text, r#"bootlane_tftp_errors_total{kind="not_found"}"#);

    let (d, _) = fetch(l.addr, "m.bin", &[]).await.unwrap();
    assert_eq!(d.len(), 1500);
    let (code, _) = fetch(l.addr, "missing.bin", &[]).await.unwrap_err();
    assert_eq!(code, errcode::NOT_FOUND);

    // The server counts the completion when it reads the final ACK, just after the
    // client has sent it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let text = loop {
        let text = render();
        if value(&text, "bootlane_tftp_transfers_completed_total") > completed || tokio::time::Instant::now() > deadline
        {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        value(&text, "bootlane_tftp_transfers_started_total") >= started + 1.0,
        "{text}"
    );
    assert!(
        value(&text, "bootlane_tftp_transfers_completed_total") >= completed + 1.0,
        "{text}"
    );
    assert!(
        value(&text, "bootlane_tftp_bytes_sent_total") >= bytes + 1500.0,
        "{text}"
    );
    assert!(
        value(&text, r#"bootlane_tftp_errors_total{kind="not_found"}"#) >= not_found + 1.0,
        "{text}"
    );
    assert!(text.contains("# TYPE bootlane_tftp_active_transfers gauge"), "{text}");
}

/// A read request from a refused client (known by the address its DHCP request named)
/// gets ERROR 2 (access violation); an allowed one is served; an unknown address is
/// refused in whitelist mode, a blacklisted one in blacklist mode.
#[tokio::test]
async fn access_control_refuses_by_the_clients_address() {
    use bootlane_boot::access::{gate::test_gate, Mode};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.bin"), content(700)).unwrap();
    let token = CancellationToken::new();
    let (gate, _rx) = test_gate(Mode::Whitelist, &["52:54:00:77:00:42"], &["52:54:00:77:00:43"]);
    let mut server = Server::new(
        Arc::new(FsHandler::new(dir.path().to_path_buf())),
        TftpLimits::default(),
        token.clone(),
    )
    .with_access(gate.clone());
    let addr = server
        .register_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .unwrap();
    let e = fetch(addr, "a.bin", &[]).await.unwrap_err();
    assert_eq!(e.0, errcode::ACCESS, "unknown client in whitelist mode: {e:?}");
    let lo = std::net::Ipv4Addr::LOCALHOST;
    gate.learn(
        lo,
        bootlane_core::net::types::normalise_mac("52:54:00:77:00:43").unwrap(),
    );
    assert_eq!(fetch(addr, "a.bin", &[]).await.unwrap().0, content(700), "whitelisted");
    gate.learn(
        lo,
        bootlane_core::net::types::normalise_mac("52:54:00:77:00:44").unwrap(),
    );
    assert_eq!(fetch(addr, "a.bin", &[]).await.unwrap_err().0, errcode::ACCESS);
    let (black, _rx) = test_gate(Mode::Blacklist, &["52:54:00:77:00:42"], &[]);
    gate.swap(bootlane_boot::access::gate::Snapshot::default());
    assert!(!gate.enforcing());
    assert!(fetch(addr, "a.bin", &[]).await.is_ok(), "mode off");
    // Blacklist mode: listed refused, unknown served.
    black.learn(
        lo,
        bootlane_core::net::types::normalise_mac("52:54:00:77:00:42").unwrap(),
    );
    let mut server2 = Server::new(
        Arc::new(FsHandler::new(dir.path().to_path_buf())),
        TftpLimits::default(),
        token.clone(),
    )
    .with_access(black);
    let addr2 = server2
        .register_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .unwrap();
    assert_eq!(fetch(addr2, "a.bin", &[]).await.unwrap_err().0, errcode::ACCESS);
    token.cancel();
    server.shutdown().await;
    server2.shutdown().await;
}

/// Names the root lacks are asked of the generated-files source (with the client's
/// address), served from memory with options like any file; a file on disk wins; a name
/// the source does not make is "file not found".
#[tokio::test]
async fn generated_files() {
    struct Gen;
    impl super::handler::GeneratedFiles for Gen {
        fn generate(&self, path: &str, peer: SocketAddr) -> Option<Vec<u8>> {
            (path == "pxelinux.cfg/default" || path == "gen.txt")
                .then(|| format!("{path} for {}\n", peer.ip()).repeat(40).into_bytes())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::write(root.join("gen.txt"), b"on disk").unwrap();
    let token = CancellationToken::new();
    let handler = FsHandler::new(root).with_generated(Some(Arc::new(Gen)));
    let mut server = Server::new(Arc::new(handler), TftpLimits::default(), token.clone());
    let addr = server
        .register_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .unwrap();
    let want = "pxelinux.cfg/default for 127.0.0.1\n".repeat(40).into_bytes();
    let (d, _) = fetch(addr, "pxelinux.cfg/default", &[]).await.unwrap();
    assert_eq!(d, want, "more than one block, plain");
    let (d, oack) = fetch(addr, "pxelinux.cfg/default", &[("tsize", "0"), ("blksize", "1024")])
        .await
        .unwrap();
    assert_eq!(d, want);
    assert!(
        oack.contains(&("tsize".to_string(), want.len().to_string())),
        "{oack:?}"
    );
    let (d, _) = fetch(addr, "gen.txt", &[]).await.unwrap();
    assert_eq!(d, b"on disk", "a file on disk wins");
    let e = fetch(addr, "pxelinux.cfg/0A000001", &[]).await.unwrap_err();
    assert_eq!(e.0, errcode::NOT_FOUND);
    token.cancel();
    server.shutdown().await;
}

/// The caps were checked only after a transfer socket was bound (a flood of requests cost
/// a socket each), and one address could take every slot. Now both caps come first: the
/// refusal comes from the listening port itself, and other addresses still get service.
#[tokio::test]
async fn regression_caps_are_checked_before_a_socket_is_bound() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.bin"), content(100_000)).unwrap();
    let token = CancellationToken::new();
    let limits = TftpLimits {
        timeout: Duration::from_secs(5),
        max_timeout: Duration::from_secs(5),
        retries: 3,
        max_transfers: 3,
        max_per_client: 2,
    };
    let mut server = Server::new(
        Arc::new(FsHandler::new(dir.path().to_path_buf())),
        limits,
        token.clone(),
    );
    let addr = server
        .register_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .unwrap();
    // Two stalled transfers from 127.0.0.1 (never acknowledged): its cap is reached.
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.send_to(&packet::rrq("big.bin", "octet", &[]), addr).await.unwrap();
        let (p, tid) = recv(&s).await;
        assert!(matches!(p, Packet::Data(1, _)) && tid != addr, "{p:?}");
        stalled.push(s);
    }
    let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    s.send_to(&packet::rrq("big.bin", "octet", &[]), addr).await.unwrap();
    let (p, from) = recv(&s).await;
    assert_eq!(p, Packet::Error(errcode::UNDEFINED, "server busy".into()));
    assert_eq!(
        from, addr,
        "refused from the listening port: no transfer socket was bound"
    );
    // Another address still gets the last slot; then the total cap refuses a fourth.
    let other = UdpSocket::bind("127.0.0.2:0").await.unwrap();
    other
        .send_to(&packet::rrq("big.bin", "octet", &[]), addr)
        .await
        .unwrap();
    let (p, _) = recv(&other).await;
    assert!(matches!(p, Packet::Data(1, _)), "{p:?}");
    let third = UdpSocket::bind("127.0.0.3:0").await.unwrap();
    third
        .send_to(&packet::rrq("big.bin", "octet", &[]), addr)
        .await
        .unwrap();
    let (p, from) = recv(&third).await;
    assert_eq!(p, Packet::Error(errcode::UNDEFINED, "server busy".into()));
    assert_eq!(from, addr);
    token.cancel();
    server.shutdown().await;
}

#[test]
fn slots_are_given_back_and_the_map_empties() {
    let slots = super::server::Slots::new(4, 2);
    let a: std::net::IpAddr = "10.0.0.1".parse().unwrap();
    let b: std::net::IpAddr = "10.0.0.2".parse().unwrap();
    let s1 = slots.try_take(a).unwrap();
    let s2 = slots.try_take(a).unwrap();
    assert!(slots.try_take(a).is_none());
    let s3 = slots.try_take(b).unwrap();
    let s4 = slots.try_take(b).unwrap();
    assert!(slots.try_take("10.0.0.3".parse().unwrap()).is_none(), "total cap");
    drop((s1, s2, s3));
    assert_eq!((slots.held_by(a), slots.held_by(b)), (0, 1));
    drop(s4);
    assert_eq!(slots.held_by(b), 0);
    assert!(slots.try_take(a).is_some());
}

#[tokio::test]
async fn settings_reach_the_running_server_and_older_stored_overrides_read_back() {
    use bootlane_core::{settings::Source, store::Store};

    use super::control::{TftpChange, TftpControl};

    let store = Store::temporary();
    // An older version's document: every key, `null` where not overridden.
    store
        .kv("tftp_settings")
        .unwrap()
        .put(
            "overrides",
            &serde_json::json!({"timeout_ms": null, "retries": 7, "enabled": null, "port": null,
                "listen": null, "root": null, "max_transfers": null}),
        )
        .await
        .unwrap();
    let base = super::TftpConfig {
        timeout_ms: 2000,
        ..Default::default()
    };
    let boot_root = bootlane_boot::boot::netboot::NetbootSettings::with_root(std::path::Path::new("/srv/boot")).fixed();
    let events = bootlane_core::events::EventBus::open(&store, Default::default()).unwrap();
    let control = TftpControl::open(&store, &base, true, boot_root, events).unwrap();
    let eff = control.effective();
    assert_eq!((eff.timeout_ms, eff.retries), (2000, 7));
    assert_eq!(eff.root, Some(PathBuf::from("/srv/boot")), "the boot root when unset");
    let sources = control.sources();
    assert_eq!(
        (sources["timeout_ms"], sources["retries"], sources["port"]),
        (Source::File, Source::Api, Source::Default)
    );

    let limits = tokio::sync::watch::Sender::new(TftpLimits::default());
    let token = CancellationToken::new();
    tokio::spawn(super::follow_limits(control.subscribe(), limits.clone(), token.clone()));
    let (_, restart) = control
        .set(TftpChange {
            timeout_ms: Some(250),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!restart, "the timeout applies live");
    let t0 = std::time::Instant::now();
    while limits.borrow().timeout != Duration::from_millis(250) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the server's limits follow the settings"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(limits.borrow().retries, 7);
    let (_, restart) = control
        .set(TftpChange {
            port: Some(6969),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(restart, "a new port needs a restart");
    let stored: serde_json::Value = store.kv("tftp_settings").unwrap().get("overrides").unwrap().unwrap();
    assert_eq!(
        stored,
        serde_json::json!({"port": 6969, "retries": 7, "timeout_ms": 250})
    );
    token.cancel();
}
