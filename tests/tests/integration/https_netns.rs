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
//! - `https_self_signed_certificate_is_made_kept_and_shown`: `[api] tls = "self-signed"`;
//!   curl verifies the chain against the stored certificate, whose SHA-256 fingerprint
//!   (as `openssl x509 -fingerprint` prints it) is the one in `GET /api/v1/status` and in
//!   the log; the key file is mode 0600; HSTS is sent, the session cookie is `Secure`;
//!   plain HTTP on the port gets no answer; `bootlane status` shows the fingerprint over
//!   HTTPS; a restart keeps the same certificate.
//! - `https_files_reload_on_sighup_and_on_change`: `[api] tls = "files"` with a chain
//!   signed by an openssl test CA; replaced by one from a second CA and SIGHUP, then back
//!   without a signal (the file watch); a broken key file keeps the certificate in force.
//! - `https_split_listeners_each_refuse_the_others_routes`: the API and UI over HTTPS on
//!   8443, `/boot` and the machine routes over plain HTTP on `[api] boot_listen` 8080;
//!   each answers 404 to the other's routes, and the iPXE script points at port 8080.
//! - `https_acme_certificate_from_pebble_is_verified_and_renewed`: Debian's pebble (the
//!   ACME test server, RFC 8555) issues the management certificate after validating
//!   HTTP-01 on the boot listener; curl verifies the chain against pebble's root
//!   (`/roots/0`); the boot listener still serves `/boot/ipxe` over plain HTTP; a
//!   60-second certificate is renewed once a third of its lifetime remains.
//!
//! Namespaces and processes are removed by `Drop` whatever happens.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    os::fd::AsRawFd,
    path::Path,
    time::{Duration, Instant},
};

use bootlane_tests::{sh, unique, Launch, NetNs, Server, ADMIN_PASSWORD};

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

/// A `bootlane serve` with a config of our own (HTTPS, split listeners), which
/// [`Server`] (plain HTTP on 8080) cannot start; killed and its directory removed on drop.
struct RawServer {
    ns: String,
    child: Option<std::process::Child>,
    dir: std::path::PathBuf,
    config: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl RawServer {
    /// Writes `data_dir`, `log` and `toml` as the config and starts the server; waits
    /// until `ready_url` answers 200 to `curl <curl_opts>`.
    fn start(ns: &NetNs, toml: &str, curl_opts: &str, ready_url: &str) -> Self {
        let dir = std::env::temp_dir().join(unique("bootlane-tls-"));
        std::fs::create_dir_all(&dir).expect("dir");
        let config = dir.join("bootlane.toml");
        std::fs::write(
            &config,
            format!(
                "data_dir = \"{}\"\nlog = \"info,bootlane=debug\"\n[dns]\nport = 5353\n[dns.xdp]\nmode = \"off\"\n{toml}",
                dir.display()
            ),
        )
        .expect("config");
        let mut s = Self {
            ns: ns.name.clone(),
            child: None,
            log: dir.join("server.log"),
            dir,
            config,
        };
        s.spawn(curl_opts, ready_url);
        s
    }

    fn spawn(&mut self, curl_opts: &str, ready_url: &str) {
        self.child = Some(bootlane_tests::spawn_serve(
            &self.ns,
            &Launch::default(),
            &self.config,
            &self.log,
        ));
        let start = Instant::now();
        loop {
            if self.curl(&format!("{curl_opts} -o /dev/null -w '%{{http_code}}' '{ready_url}'")) == "200" {
                return;
            }
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("bootlane exited with {st}; log:\n{}", self.log_text());
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "bootlane did not come up; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's PID.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
    }

    fn signal(&self, sig: i32) {
        let c = self.child.as_ref().expect("running");
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(c.id() as i32, sig) };
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `curl -s -m 5 <args>` in the namespace; stdout.
    fn curl(&self, args: &str) -> String {
        let out = bootlane_tests::sh_out(&format!("ip netns exec {} curl -s -m 5 {args}", self.ns));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's PID.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `openssl x509 -fingerprint -sha256` of a PEM file: `AB:CD:...`.
fn openssl_fingerprint(pem: &Path) -> String {
    let out = sh(&format!(
        "openssl x509 -in {} -noout -fingerprint -sha256",
        pem.display()
    ));
    out.trim().rsplit('=').next().expect("fingerprint").to_string()
}

/// A test CA in `dir/<name>-ca.pem` and a leaf for `bootlane.test` signed by it in
/// `dir/<name>-cert.pem` (leaf then CA) and `dir/<name>-key.pem`, made with openssl.
fn openssl_ca_and_leaf(dir: &Path, name: &str) {
    openssl_ca_and_leaf_for(dir, name, "DNS:bootlane.test");
}

/// As [`openssl_ca_and_leaf`], for the subject alternative names `san`.
fn openssl_ca_and_leaf_for(dir: &Path, name: &str, san: &str) {
    let d = dir.display();
    sh(&format!(
        "cd {d} && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
         -subj '/CN=Test CA {name}' -keyout {name}-ca.key -out {name}-ca.pem 2>/dev/null && \
         openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=bootlane.test' \
         -keyout {name}-key.pem -out {name}.csr 2>/dev/null && \
         printf 'subjectAltName={san}\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > {name}.ext && \
         openssl x509 -req -in {name}.csr -CA {name}-ca.pem -CAkey {name}-ca.key -CAcreateserial -days 10 \
         -extfile {name}.ext -out {name}-leaf.pem 2>/dev/null && cat {name}-leaf.pem {name}-ca.pem > {name}-cert.pem"
    ));
}

/// Waits until `f` holds, panicking with `what` after `timeout`.
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

const RESOLVE: &str = "--resolve bootlane.test:8443:127.0.0.1";
/// More than the server's file-watch period (5 s).
const RELOAD_WAIT: Duration = Duration::from_secs(6);

#[test]
fn https_self_signed_certificate_is_made_kept_and_shown() {
    let ns = NetNs::new("hss");
    let url = "https://bootlane.test:8443/api/v1/status";
    let toml =
        "[api]\nlisten = \"127.0.0.1:8443\"\ntls = \"self-signed\"\ntls_names = [\"bootlane.test\", \"localhost\"]\n";
    let mut s = RawServer::start(&ns, toml, &format!("-k {RESOLVE}"), url);
    let cert = s.dir.join("tls/cert.pem");
    let key = s.dir.join("tls/key.pem");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key).expect("key file").permissions().mode() & 0o777,
        0o600
    );
    // curl verifies the chain and the name against the stored certificate.
    let body = s.curl(&format!("--cacert {} {RESOLVE} {url}", cert.display()));
    let v: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("status over verified HTTPS: {body:?}"));
    let fp = openssl_fingerprint(&cert);
    assert_eq!(v["data"]["tls"]["fingerprint_sha256"], fp.as_str(), "{v}");
    assert_eq!(v["data"]["tls"]["source"], "self-signed", "{v}");
    assert!(s.log_text().contains(&fp), "the fingerprint is logged");
    // HSTS, and a Secure session cookie at login.
    let headers = s
        .curl(&format!(
            "--cacert {} {RESOLVE} -D - -o /dev/null -H 'Content-Type: application/json' \
         --data-binary '{{\"username\":\"admin\",\"password\":\"{ADMIN_PASSWORD}\"}}' \
         https://bootlane.test:8443/api/v1/auth/login",
            cert.display()
        ))
        .to_ascii_lowercase();
    assert!(
        headers.contains("strict-transport-security: max-age=31536000"),
        "{headers}"
    );
    let cookie = headers
        .lines()
        .find(|l| l.starts_with("set-cookie: bootlane_session="))
        .unwrap_or_else(|| panic!("no session cookie: {headers}"));
    assert!(cookie.contains("; secure"), "{cookie}");
    // Plain HTTP on the TLS port gets no HTTP answer.
    let plain = s.curl("-o /dev/null -w '%{http_code}' http://127.0.0.1:8443/api/v1/status");
    assert_eq!(plain, "000", "plain HTTP answered on the TLS port");
    // `bootlane status` asks over HTTPS (https://localhost:8443 from the config) and
    // shows the fingerprint; it trusts the certificate named by BOOTLANE_CACERT.
    let out = bootlane_tests::sh_out(&format!(
        "ip netns exec {} env BOOTLANE_CACERT={} {} status --config {}",
        ns.name,
        cert.display(),
        bootlane_tests::bootlane_bin().display(),
        s.config.display()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(&fp) && text.contains("https://localhost:8443"),
        "bootlane status: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A restart keeps the certificate.
    s.stop();
    s.spawn(&format!("--cacert {} {RESOLVE}", cert.display()), url);
    assert_eq!(openssl_fingerprint(&cert), fp);
}

#[test]
fn https_files_reload_on_sighup_and_on_change() {
    let ns = NetNs::new("hsf");
    let work = tempfile::tempdir().expect("tmp");
    let w = work.path();
    openssl_ca_and_leaf(w, "one");
    openssl_ca_and_leaf(w, "two");
    let (cert, key) = (w.join("live-cert.pem"), w.join("live-key.pem"));
    // Replaces the live files the way certbot-like tools do: write, then rename. With
    // `frozen`, the new files first get a fixed size and modification time (NUL padding
    // after the PEM blocks is ignored), the same every time.
    let install_as = |name: &str, frozen: bool| {
        let freeze = if frozen {
            "truncate -s 8192 c.tmp && truncate -s 4096 k.tmp && touch -d @1600000000 c.tmp k.tmp &&"
        } else {
            ""
        };
        sh(&format!(
            "cd {d} && cp {name}-cert.pem c.tmp && cp {name}-key.pem k.tmp && {freeze} mv k.tmp {k} && mv c.tmp {c}",
            d = w.display(),
            c = cert.display(),
            k = key.display()
        ));
    };
    let install = |name: &str| install_as(name, false);
    install("one");
    let url = "https://bootlane.test:8443/api/v1/status";
    let ca = |name: &str| format!("--cacert {}/{name}-ca.pem {RESOLVE}", w.display());
    let toml = format!(
        "[api]\nlisten = \"127.0.0.1:8443\"\ntls = \"files\"\ntls_cert_file = \"{}\"\ntls_key_file = \"{}\"\n",
        cert.display(),
        key.display()
    );
    let s = RawServer::start(&ns, &toml, &ca("one"), url);
    let code = |s: &RawServer, name: &str| s.curl(&format!("{} -o /dev/null -w '%{{http_code}}' {url}", ca(name)));
    assert_eq!(
        code(&s, "two"),
        "000",
        "a chain from CA one does not verify against CA two"
    );
    let status = |s: &RawServer| -> serde_json::Value {
        serde_json::from_str(&s.curl(&format!("-k {RESOLVE} {url}"))).expect("status JSON")
    };
    assert_eq!(
        status(&s)["data"]["tls"]["fingerprint_sha256"],
        openssl_fingerprint(&w.join("one-leaf.pem")).as_str()
    );

    // SIGHUP reloads. Frozen files look unchanged to the file watch, so only the
    // signal can reload them.
    install_as("one", true);
    std::thread::sleep(RELOAD_WAIT);
    install_as("two", true);
    std::thread::sleep(RELOAD_WAIT);
    assert_eq!(
        code(&s, "one"),
        "200",
        "the watch reloaded files whose size and time did not change"
    );
    s.signal(libc::SIGHUP);
    wait_for("CA two's chain after SIGHUP", Duration::from_secs(3), || {
        code(&s, "two") == "200"
    });
    assert_eq!(code(&s, "one"), "000");

    // Without a signal, the watch notices a change within its 5 s period.
    install("one");
    wait_for("CA one's chain from the file watch", Duration::from_secs(8), || {
        code(&s, "one") == "200"
    });

    // A broken key: the certificate in force stays, the log says why.
    std::fs::write(&key, "not a key").expect("write");
    s.signal(libc::SIGHUP);
    wait_for("the refused reload in the log", Duration::from_secs(8), || {
        s.log_text().contains("TLS certificate not reloaded")
    });
    assert_eq!(code(&s, "one"), "200", "the previous certificate stays in force");
}

/// `curl` status code and body (`-w` appended after a newline).
fn code_and_body(s: &RawServer, args: &str) -> (String, String) {
    let out = s.curl(&format!("{args} -w '\n%{{http_code}}'"));
    let (body, code) = out.rsplit_once('\n').unwrap_or(("", "000"));
    (code.to_string(), body.to_string())
}

#[test]
fn https_split_listeners_each_refuse_the_others_routes() {
    let ns = NetNs::new("hsp");
    let toml = "[api]\nlisten = \"127.0.0.1:8443\"\nboot_listen = \"127.0.0.1:8080\"\ntls = \"self-signed\"\ntls_names = [\"bootlane.test\"]\n";
    let mgmt = "https://bootlane.test:8443";
    let s = RawServer::start(&ns, toml, &format!("-k {RESOLVE}"), &format!("{mgmt}/api/v1/status"));
    let tls = format!("--cacert {} {RESOLVE}", s.dir.join("tls/cert.pem").display());
    let boot = "http://127.0.0.1:8080";
    let mac = "52:54:00:12:34:56";

    // The management listener: API and UI, over verified TLS; no boot routes.
    assert_eq!(code_and_body(&s, &format!("{tls} {mgmt}/api/v1/status")).0, "200");
    assert_eq!(code_and_body(&s, &format!("{tls} {mgmt}/")).0, "200", "the web UI");
    let (c, b) = code_and_body(&s, &format!("{tls} '{mgmt}/boot/ipxe?mac={mac}'"));
    assert_eq!(c, "404", "/boot on the management listener: {b}");
    let (c, b) = code_and_body(&s, &format!("{tls} {mgmt}/api/v1/netboot/task/by-mac/{mac}"));
    assert!(
        c == "404" && b.contains("no endpoint"),
        "a machine route on the management listener: {c} {b}"
    );

    // The boot listener: plain HTTP, /boot and the machine routes; no API, no UI.
    let (c, script) = code_and_body(&s, &format!("'{boot}/boot/ipxe?mac={mac}'"));
    assert_eq!(c, "200", "{script}");
    assert!(script.starts_with("#!ipxe"), "{script}");
    assert!(
        !script.contains(":8443"),
        "the iPXE script points at the boot listener:\n{script}"
    );
    let (c, b) = code_and_body(&s, &format!("{boot}/api/v1/netboot/task/by-mac/{mac}"));
    assert!(
        !b.contains("no endpoint"),
        "the machine route is served on the boot listener: {c} {b}"
    );
    for path in ["/api/v1/status", "/api/v1/hosts", "/api/v1/openapi.json"] {
        let (c, b) = code_and_body(&s, &format!("{boot}{path}"));
        assert_eq!(c, "404", "{path} on the boot listener: {b}");
    }
    let (c, _) = code_and_body(&s, &format!("{boot}/"));
    assert_eq!(c, "404", "the web UI is not on the boot listener");
    // No HSTS over plain HTTP.
    let headers = s
        .curl(&format!("-D - -o /dev/null '{boot}/boot/ipxe?mac={mac}'"))
        .to_ascii_lowercase();
    assert!(!headers.contains("strict-transport-security"), "{headers}");
}

/// `/etc/netns/<ns>/hosts`, which `ip netns exec` mounts over `/etc/hosts` (so pebble
/// resolves the ordered name to the server); removed on drop.
struct NsHosts(std::path::PathBuf);

impl NsHosts {
    fn new(ns: &NetNs, text: &str) -> Self {
        let dir = Path::new("/etc/netns").join(&ns.name);
        std::fs::create_dir_all(&dir).expect("/etc/netns/<ns>");
        std::fs::write(dir.join("hosts"), text).expect("hosts");
        Self(dir)
    }
}

impl Drop for NsHosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn https_acme_certificate_from_pebble_is_verified_and_renewed() {
    let ns = NetNs::new("hac");
    let _hosts = NsHosts::new(&ns, "127.0.0.1 localhost bootlane.test\n::1 localhost\n");
    let work = tempfile::tempdir().expect("tmp");
    let w = work.path();
    // Pebble's own HTTPS certificate, from a test CA of ours (Debian's package ships none).
    openssl_ca_and_leaf_for(w, "pebble", "DNS:localhost,IP:127.0.0.1");
    let pebble_cfg = w.join("pebble.json");
    std::fs::write(
        &pebble_cfg,
        serde_json::json!({"pebble": {
            "listenAddress": "127.0.0.1:14000",
            "managementListenAddress": "127.0.0.1:15000",
            "certificate": w.join("pebble-leaf.pem"),
            "privateKey": w.join("pebble-key.pem"),
            "httpPort": 8080,
            "tlsPort": 5001,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "certificateValidityPeriod": 60
        }})
        .to_string(),
    )
    .expect("pebble config");
    let pebble = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            "env",
            "PEBBLE_VA_NOSLEEP=1",
            "PEBBLE_WFE_NONCEREJECT=0",
        ])
        .arg("pebble")
        .arg("-config")
        .arg(&pebble_cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(w.join("pebble.log")).expect("pebble log"))
        .spawn()
        .expect("spawn pebble (Debian package pebble)");
    let _pebble = bootlane_tests::Proc(pebble);
    let pebble_ca = w.join("pebble-ca.pem");
    let curl_ns = |args: &str| {
        let out = bootlane_tests::sh_out(&format!("ip netns exec {} curl -s -m 5 {args}", ns.name));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    wait_for("pebble's directory", Duration::from_secs(15), || {
        curl_ns(&format!(
            "--cacert {} -o /dev/null -w '%{{http_code}}' https://localhost:14000/dir",
            pebble_ca.display()
        )) == "200"
    });

    let toml = format!(
        "[api]\nlisten = \"127.0.0.1:8443\"\nboot_listen = \"127.0.0.1:8080\"\ntls = \"acme\"\n\
         tls_names = [\"bootlane.test\"]\nacme_directory_url = \"https://localhost:14000/dir\"\n\
         acme_ca_file = \"{}\"\n",
        pebble_ca.display()
    );
    let s = RawServer::start(
        &ns,
        &toml,
        &format!("-k {RESOLVE}"),
        "https://bootlane.test:8443/api/v1/status",
    );
    // Pebble's root for the certificates it issues (a new one every pebble start).
    let root = w.join("pebble-root.pem");
    curl_ns(&format!(
        "--cacert {} -o {} https://localhost:15000/roots/0",
        pebble_ca.display(),
        root.display()
    ));
    assert!(
        std::fs::read_to_string(&root)
            .unwrap_or_default()
            .contains("BEGIN CERTIFICATE"),
        "pebble's root"
    );
    let verified = format!(
        "--cacert {} {RESOLVE} https://bootlane.test:8443/api/v1/status",
        root.display()
    );
    let status = || -> serde_json::Value { serde_json::from_str(&s.curl(&verified)).unwrap_or_default() };
    wait_for(
        "a certificate from pebble that curl verifies",
        Duration::from_secs(30),
        || status()["data"]["tls"]["source"] == "acme",
    );
    let first = status()["data"]["tls"].clone();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(s.dir.join("tls/acme/key.pem"))
            .expect("key")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    // The boot listener still serves the iPXE script over plain HTTP.
    let (c, script) = code_and_body(&s, "'http://127.0.0.1:8080/boot/ipxe?mac=52:54:00:12:34:56'");
    assert!(c == "200" && script.starts_with("#!ipxe"), "{c} {script}");

    // Renewal: the 60 s certificate is replaced once less than 20 s remain.
    wait_for("the renewed certificate", Duration::from_secs(75), || {
        let now = status()["data"]["tls"].clone();
        now["source"] == "acme" && now["fingerprint_sha256"] != first["fingerprint_sha256"]
    });
    let second = status()["data"]["tls"].clone();
    assert_ne!(second["not_after"], first["not_after"], "{first} {second}");
    assert!(
        s.log_text().matches("ordering an ACME certificate").count() >= 2,
        "issued, then renewed"
    );
}
