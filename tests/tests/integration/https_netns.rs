//! The management plane's HTTP server against hostile and real clients, with the real
//! `bootlane` binary in a network namespace.
//!
//! - `http_idle_flood_from_one_address_leaves_other_clients_served`: the server runs
//!   under the systemd unit's own `LimitNOFILE` (read from `bootlane.service`); one
//!   address opens more idle connections than that limit, each sending half a request
//!   header and then nothing (slowloris). Another address must still get
//!   `GET /api/v1/status` and `GET /boot/ipxe` answered within 1 s; the connections
//!   kept past the per-client cap are closed by the header-read timeout; the refusals
//!   are counted in `/metrics`; SIGTERM still stops the server promptly.
//!
//! Namespaces and processes are removed by `Drop` whatever happens.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    os::fd::AsRawFd,
    path::Path,
    time::{Duration, Instant},
};

use bootlane_tests::{Launch, NetNs, Server};

/// Runs `f` on a thread that joined `ns`'s network namespace; sockets it opens stay in
/// that namespace and can be used from any thread afterwards.
fn in_netns<T: Send + 'static>(ns: &NetNs, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{}", ns.name);
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("netns file");
        // SAFETY: setns(2) on this thread only, with a descriptor we own.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("netns thread")
}

/// Raises this test process's descriptor limit to `n` (it holds the flood's sockets).
fn raise_nofile(n: u64) {
    let lim = libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    // SAFETY: setrlimit(2) with a valid struct; the test runs as root.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    assert_eq!(rc, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

/// The `LimitNOFILE=` of the shipped systemd unit.
fn unit_nofile() -> u64 {
    let unit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controlplane/debian/bootlane.service");
    let text = std::fs::read_to_string(&unit).expect("bootlane.service");
    text.lines()
        .find_map(|l| l.trim().strip_prefix("LimitNOFILE="))
        .map(|v| v.trim().parse().expect("LimitNOFILE is a number"))
        .unwrap_or(1024) // systemd's default soft limit when the unit sets none
}

/// `curl` from source address `from` in `ns`: the status code and the total time.
fn timed_get(ns: &NetNs, from: &str, url: &str) -> (u16, f64) {
    let out = ns.sh_out(&format!(
        "curl -s -o /dev/null -m 5 --interface {from} -w '%{{http_code}} %{{time_total}}' '{url}'"
    ));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut it = text.split_whitespace();
    let code = it.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let secs = it.next().and_then(|t| t.parse().ok()).unwrap_or(f64::INFINITY);
    (code, secs)
}

/// Opens up to `n` connections to `to` from this namespace's 127.0.0.1, each sending a
/// partial request header. Stops early after 50 failed connects in a row (a server that
/// no longer accepts). Returns the open sockets and the number of failed connects.
fn slowloris(n: usize, to: SocketAddr) -> (Vec<TcpStream>, usize) {
    let (mut held, mut failed, mut in_a_row) = (Vec::with_capacity(n), 0, 0);
    for _ in 0..n {
        match TcpStream::connect_timeout(&to, Duration::from_millis(200)) {
            Ok(mut s) => {
                in_a_row = 0;
                // Half a header: a server without a header timeout waits forever.
                let _ = s.write_all(b"GET /api/v1/status HTTP/1.1\r\nHost: bootlane\r\n");
                held.push(s);
            }
            Err(_) => {
                failed += 1;
                in_a_row += 1;
                if in_a_row >= 50 {
                    break;
                }
            }
        }
    }
    (held, failed)
}

#[test]
fn http_idle_flood_from_one_address_leaves_other_clients_served() {
    let nofile = unit_nofile();
    let flood = (nofile as usize + 1000).max(2000);
    raise_nofile(flood as u64 + 4096);
    let ns = NetNs::new("hts");
    let launch = Launch {
        wrapper: vec!["prlimit".into(), format!("--nofile={nofile}:{nofile}"), "--".into()],
        listen: Some("0.0.0.0:8080".into()),
        ..Launch::default()
    };
    let mut s = Server::start_with(&ns, "[dns]\nport = 5353\n[dns.xdp]\nmode = \"off\"\n", launch);
    let to: SocketAddr = "127.0.0.1:8080".parse().expect("addr");

    let t0 = Instant::now();
    let (held, failed) = in_netns(&ns, move || slowloris(flood, to));
    let opened = held.len();
    eprintln!(
        "flood: {} connections open, {failed} connects failed, in {:?} (server limit {nofile} descriptors)",
        held.len(),
        t0.elapsed()
    );

    // Another client address is served at once, the API and HTTP boot alike.
    for url in [
        "http://127.0.0.1:8080/api/v1/status",
        "http://127.0.0.1:8080/boot/ipxe?mac=52:54:00:00:00:01",
    ] {
        let (code, secs) = timed_get(&ns, "127.0.0.2", url);
        assert!(
            code == 200 && secs < 1.0,
            "{url} from 127.0.0.2 during the flood: status {code} after {secs} s (want 200 within 1 s); log:\n{}",
            s.log_text()
        );
    }

    assert!(
        opened > nofile as usize,
        "the flood opened only {opened} connections ({failed} connects failed), not more than the server's {nofile} descriptors"
    );

    // The connections the server kept (up to the per-client cap) are closed by the
    // header-read timeout (10 s by default), measured on one that is still open.
    let mut survivor = None;
    for mut c in held {
        c.set_nonblocking(true).expect("nonblocking");
        let mut b = [0u8; 64];
        match c.read(&mut b) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                survivor = Some(c);
                break;
            }
            _ => {} // Already closed by the server (refused over a cap).
        }
    }
    let mut survivor = survivor.expect("the server keeps the first connections (up to the per-client cap)");
    survivor.set_nonblocking(false).expect("blocking");
    survivor
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut b = [0u8; 256];
    let n = survivor.read(&mut b).unwrap_or(0);
    assert!(
        t0.elapsed() < Duration::from_secs(15),
        "a connection that sent half a header was still open after {:?} ({n} bytes: {:?})",
        t0.elapsed(),
        String::from_utf8_lossy(&b[..n])
    );

    let (code, metrics) = s.api("GET", "/metrics", None);
    assert_eq!(code, 200, "{metrics}");
    let text = metrics.as_str().unwrap_or_default();
    let refused: f64 = text
        .lines()
        .filter(|l| l.starts_with("bootlane_http_connections_refused_total{") && l.contains("per_client"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(
        refused >= opened.saturating_sub(64) as f64,
        "refusals counted: {refused} of {opened} connections (want all but the 64 kept):\n{text}",
    );

    // Graceful shutdown still works with idle connections open.
    let idle = in_netns(&ns, move || slowloris(10, to)).0;
    let t1 = Instant::now();
    let st = s.terminate(Duration::from_secs(15));
    assert!(
        st.is_some_and(|st| st.success()),
        "SIGTERM with idle connections open: {st:?} after {:?}; log:\n{}",
        t1.elapsed(),
        s.log_text()
    );
    drop(idle);
}
