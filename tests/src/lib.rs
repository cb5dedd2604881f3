//! Test lab for Bootlane's privileged integration tests: network namespaces joined by veth
//! pairs (removed by `Drop`), the real `bootlane` binary started inside one of them (killed
//! by `Drop`), an API client (curl inside the namespace, with a cookie jar) and helpers to
//! run real clients (`dig`, `kdig`, dnsmasq) in a namespace, and a server-sent-events
//! reader ([`SseStream`]: `curl -N` on an event stream, parsed into messages). Names carry the test
//! process's PID and a counter so parallel runs never collide; nothing is ever cleaned up
//! by name pattern (test-lab.md safety rule). Traffic stays inside the namespaces.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::{
        atomic::{AtomicU32, Ordering},
        mpsc,
    },
    thread::sleep,
    time::{Duration, Instant},
};

use serde_json::Value;

pub mod xdp_frames;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A unique short name (`<prefix><pid>x<n>`, at most 15 bytes for interface names).
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}x{}",
        std::process::id() % 100_000,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `cmd` through `sh -c`, panicking with its output when it fails.
pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().expect("sh");
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` through `sh -c` and returns its output whatever the status.
pub fn sh_out(cmd: &str) -> Output {
    Command::new("sh").arg("-c").arg(cmd).output().expect("sh")
}

/// A network namespace, deleted (with its links) on drop.
pub struct NetNs {
    /// Namespace name.
    pub name: String,
}

impl NetNs {
    /// Creates a namespace with `lo` up.
    pub fn new(prefix: &str) -> Self {
        let name = unique(prefix);
        sh(&format!("ip netns add {name} && ip -n {name} link set lo up"));
        Self { name }
    }

    /// `ip netns exec <ns> <cmd>` through `sh -c`, panicking on failure.
    pub fn sh(&self, cmd: &str) -> String {
        sh(&format!(
            "ip netns exec {} sh -c '{}'",
            self.name,
            cmd.replace('\'', "'\\''")
        ))
    }

    /// As [`NetNs::sh`], returning the output whatever the status.
    pub fn sh_out(&self, cmd: &str) -> Output {
        sh_out(&format!(
            "ip netns exec {} sh -c '{}'",
            self.name,
            cmd.replace('\'', "'\\''")
        ))
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

/// Joins `a` and `b` with a veth pair; returns the interface names (in `a`, in `b`).
/// `a_addrs`/`b_addrs` are `addr/prefix` strings (IPv6 added with `nodad`).
pub fn veth(a: &NetNs, a_addrs: &[&str], b: &NetNs, b_addrs: &[&str]) -> (String, String) {
    let (ia, ib) = (unique("va"), unique("vb"));
    sh(&format!(
        "ip link add {ia} netns {} type veth peer name {ib} netns {}",
        a.name, b.name
    ));
    for (ns, ifc, addrs) in [(a, &ia, a_addrs), (b, &ib, b_addrs)] {
        for ad in addrs {
            let nodad = if ad.contains(':') { " nodad" } else { "" };
            sh(&format!("ip -n {} addr add {ad} dev {ifc}{nodad}", ns.name));
        }
        sh(&format!("ip -n {} link set {ifc} up", ns.name));
    }
    (ia, ib)
}

/// Path of the bootlane binary (`BOOTLANE_BIN`, set by `cargo xtask test`), or the debug
/// build next to this test binary.
pub fn bootlane_bin() -> PathBuf {
    if let Ok(p) = std::env::var("BOOTLANE_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("bootlane"))
        .expect("target dir")
}

/// Runs `scripts/<script>` with the bootlane binary; answers whether it exited 0 and
/// everything it wrote (stdout, then stderr).
///
/// # Panics
/// When the script cannot be started.
fn e2e_output(script: &str) -> (bool, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(script);
    let out = Command::new("bash")
        .arg(&path)
        .arg(bootlane_bin())
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// What is wrong with a run of `script` tagged `[<tag>]`: `None` when it exited 0 and
/// printed `[<tag>] PASS`.
fn e2e_problem(script: &str, tag: &str, ok: bool, text: &str) -> Option<String> {
    if !ok {
        Some(format!("{script} failed"))
    } else if !text.contains(&format!("[{tag}] PASS")) {
        Some(format!("{script}: no PASS line"))
    } else {
        None
    }
}

/// Runs `scripts/<script>` (an end-to-end script tagged `[<tag>]`) with the bootlane
/// binary, prints everything it wrote, and panics unless it exited 0 and printed
/// `[<tag>] PASS`.
///
/// # Panics
/// When the script cannot be started, fails, or passes without saying so.
pub fn run_e2e(script: &str, tag: &str) {
    let (ok, text) = e2e_output(script);
    eprintln!("{text}");
    if let Some(p) = e2e_problem(script, tag, ok, &text) {
        panic!("{p}");
    }
}

/// [`run_e2e`] for several `(script, tag)` at once, each in a thread of its own (the
/// scripts make their own namespaces and subnets, so slow firmware boots can overlap);
/// prints each one's output when all have ended, then panics naming every one that failed.
///
/// # Panics
/// As [`run_e2e`], after all have run.
pub fn run_e2e_parallel(runs: &[(&'static str, &'static str)]) {
    let handles: Vec<_> = runs
        .iter()
        .map(|&(script, tag)| {
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let (ok, text) = e2e_output(script);
                (script, tag, ok, text, t0.elapsed())
            })
        })
        .collect();
    let mut problems = Vec::new();
    for h in handles {
        let (script, tag, ok, text, took) = h.join().expect("e2e thread");
        eprintln!("==== {script} ({} s) ====\n{text}", took.as_secs());
        problems.extend(e2e_problem(script, tag, ok, &text));
    }
    assert!(problems.is_empty(), "{}", problems.join("; "));
}

/// Starts `bootlane serve --config <config>` in namespace `ns` as `launch` says (binary,
/// wrapper, extra environment), with [`ADMIN_PASSWORD`] as the first admin password,
/// stderr appended to `log` and stdout dropped. The caller waits for it to answer.
///
/// # Panics
/// When the log cannot be opened or the process cannot be spawned.
pub fn spawn_serve(ns: &str, launch: &Launch, config: &Path, log: &Path) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log");
    Command::new("ip")
        .args(["netns", "exec", ns])
        .args(&launch.wrapper)
        .arg(launch.bin.clone().unwrap_or_else(bootlane_bin))
        .args(["serve", "--config"])
        .arg(config)
        .env("BOOTLANE_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn bootlane")
}

/// How [`Server::start_with`] runs the server: which binary (default [`bootlane_bin`]),
/// behind which wrapper command (e.g. `setpriv --reuid ...` to drop privileges), with the
/// data directory owned by which `(uid, gid)`, and with which extra environment.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The binary; `None`: [`bootlane_bin`].
    pub bin: Option<PathBuf>,
    /// Command line put before the binary inside the namespace.
    pub wrapper: Vec<String>,
    /// Owner of the data directory (for a server that does not run as root).
    pub owner: Option<(u32, u32)>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// `[api] listen`; `None`: `127.0.0.1:8080`.
    pub listen: Option<String>,
}

/// A running `bootlane serve` inside a namespace, killed on drop.
pub struct Server {
    launch: Launch,
    child: Option<Child>,
    /// Namespace it runs in.
    pub ns: String,
    /// Data directory (removed on drop).
    pub data_dir: PathBuf,
    /// Config file.
    pub config: PathBuf,
    /// API base, e.g. `http://127.0.0.1:8080/api/v1`.
    pub base: String,
    jar: PathBuf,
    log: PathBuf,
}

/// Admin password used by the lab.
pub const ADMIN_PASSWORD: &str = "lab-admin-Mx4kP7wQ";

impl Server {
    /// Writes `config_toml` (with `data_dir` and `[api] listen` added) and starts the server
    /// in `ns`, waiting until the API answers and logging in.
    pub fn start(ns: &NetNs, config_toml: &str) -> Self {
        Self::start_with(ns, config_toml, Launch::default())
    }

    /// As [`Server::start`] with the API (and HTTP boot) listening on `listen`, e.g.
    /// `0.0.0.0:8080` for machines in the namespace that fetch iPXE scripts over HTTP; the
    /// test still talks to it through `127.0.0.1:8080`, so `listen` must cover that.
    pub fn start_on(ns: &NetNs, config_toml: &str, listen: &str) -> Self {
        let launch = Launch {
            listen: Some(listen.to_string()),
            ..Launch::default()
        };
        Self::start_with(ns, config_toml, launch)
    }

    /// As [`Server::start`], run as `launch` says.
    pub fn start_with(ns: &NetNs, config_toml: &str, launch: Launch) -> Self {
        let listen = launch.listen.clone().unwrap_or_else(|| "127.0.0.1:8080".into());
        let data_dir = std::env::temp_dir().join(unique("bootlane-lab-"));
        std::fs::create_dir_all(&data_dir).expect("data dir");
        let config = data_dir.join("bootlane.toml");
        let toml = format!(
            "data_dir = \"{}\"\nlog = \"info,bootlane=debug\"\n{config_toml}\n[api]\nlisten = \"{listen}\"\n",
            data_dir.display()
        );
        std::fs::write(&config, toml).expect("config");
        if let Some((uid, gid)) = launch.owner {
            std::os::unix::fs::chown(&data_dir, Some(uid), Some(gid)).expect("chown data dir");
        }
        let mut s = Self {
            launch,
            child: None,
            ns: ns.name.clone(),
            jar: data_dir.join("cookies"),
            log: data_dir.join("server.log"),
            data_dir,
            config,
            base: "http://127.0.0.1:8080/api/v1".into(),
        };
        s.spawn();
        s
    }

    /// (Re)starts the process with the same config and data directory.
    pub fn spawn(&mut self) {
        self.child = Some(spawn_serve(&self.ns, &self.launch, &self.config, &self.log));
        let start = Instant::now();
        loop {
            let out = self.curl(&format!("-o /dev/null -w %{{http_code}} {}/status", self.base));
            if out.trim() == "200" {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "bootlane did not come up; log:\n{}",
                self.log_text()
            );
            if let Some(Ok(Some(st))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("bootlane exited with {st}; log:\n{}", self.log_text());
            }
            sleep(Duration::from_millis(100));
        }
        let (code, v) = self.api(
            "POST",
            "/auth/login",
            Some(&serde_json::json!({"username": "admin", "password": ADMIN_PASSWORD})),
        );
        assert_eq!(code, 200, "login failed: {v}");
    }

    /// PID of the running server process (`ip netns exec` execs it, so this is
    /// `bootlane` itself), or `None` when it is not running.
    pub fn pid(&mut self) -> Option<u32> {
        let c = self.child.as_mut()?;
        match c.try_wait() {
            Ok(None) => Some(c.id()),
            _ => None,
        }
    }

    /// Opens `GET <base><path>` as a server-sent-events stream with `curl -N` inside the
    /// server's namespace, authenticated with the session cookie; `last_event_id` is sent
    /// as the `Last-Event-ID` header.
    pub fn sse(&self, path: &str, last_event_id: Option<u64>) -> SseStream {
        let mut cmd = self.sse_curl();
        if let Some(id) = last_event_id {
            cmd.args(["-H", &format!("Last-Event-ID: {id}")]);
        }
        Self::sse_stream(cmd.arg(format!("{}{path}", self.base)))
    }

    /// Opens `POST <base><path>` with the JSON `body` as a server-sent-events stream
    /// (streamed diagnostics), as [`Server::sse`] does for GET.
    pub fn sse_post(&self, path: &str, body: &Value) -> SseStream {
        let mut cmd = self.sse_curl();
        cmd.args(["-X", "POST", "-H", "Content-Type: application/json", "--data-binary"])
            .arg(body.to_string());
        Self::sse_stream(cmd.arg(format!("{}{path}", self.base)))
    }

    fn sse_curl(&self) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, "curl", "-sN", "-b"])
            .arg(&self.jar)
            .args(["-H", "Accept: text/event-stream"]);
        cmd
    }

    fn sse_stream(cmd: &mut Command) -> SseStream {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn curl -N");
        let out = child.stdout.take().expect("curl stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut msg = SseMessage::default();
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if line.is_empty() {
                    if (!msg.event.is_empty() || msg.id.is_some()) && tx.send(std::mem::take(&mut msg)).is_err() {
                        return;
                    }
                    continue;
                }
                // `:`-lines are comments (the heartbeat); `field: value` otherwise.
                let Some((field, value)) = line.split_once(':') else {
                    continue;
                };
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => msg.id = value.parse().ok(),
                    "event" => msg.event = value.to_string(),
                    "data" => msg.data = serde_json::from_str(value).unwrap_or(Value::String(value.into())),
                    _ => {}
                }
            }
        });
        SseStream { _curl: Proc(child), rx }
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to end; its exit status, or
    /// `None` if it was not running or did not end in time (then SIGKILL on drop).
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let c = self.child.as_mut()?;
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(st)) = c.try_wait() {
                self.child = None;
                return Some(st);
            }
            sleep(Duration::from_millis(50));
        }
        None
    }

    /// Sends SIGKILL and waits for the process to end.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child's PID.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn curl(&self, args: &str) -> String {
        self.curl_for(10, args)
    }

    fn curl_for(&self, secs: u64, args: &str) -> String {
        let out = sh_out(&format!(
            "ip netns exec {} curl -s -m {secs} -b {} -c {} {args}",
            self.ns,
            self.jar.display(),
            self.jar.display()
        ));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Calls the API; returns the status and the decoded JSON (or a JSON string).
    pub fn api(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.api_for(10, method, path, body)
    }

    /// As [`Server::api`], giving up after `secs` seconds instead of 10 (calls that wait
    /// on a device, e.g. a BMC power action polling until the state changes).
    pub fn api_for(&self, secs: u64, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body_arg = match body {
            Some(b) => {
                let f = self.data_dir.join(unique("body"));
                std::fs::write(&f, b.to_string()).expect("body file");
                format!("-H 'Content-Type: application/json' --data-binary @{}", f.display())
            }
            None => String::new(),
        };
        let out = self.curl_for(
            secs,
            &format!("-X {method} {body_arg} -w '\\n%{{http_code}}' '{}{path}'", self.base),
        );
        let (body, code) = out.rsplit_once('\n').unwrap_or(("", "0"));
        let v = serde_json::from_str(body).unwrap_or(Value::String(body.to_string()));
        (code.trim().parse().unwrap_or(0), v)
    }

    /// Creates a DNS record, panicking unless the API answers 201.
    pub fn add_record(&self, rec: Value) -> Value {
        let (code, v) = self.api("POST", "/dns/records", Some(&rec));
        assert_eq!(code, 201, "creating {rec}: {v}");
        v["data"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!("---- bootlane log ----\n{}", self.log_text());
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// A child process (e.g. dnsmasq) killed by PID on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// One server-sent event: `id:`, `event:` and `data:` (decoded as JSON when it is JSON).
#[derive(Debug, Default, Clone)]
pub struct SseMessage {
    /// The `id:` field.
    pub id: Option<u64>,
    /// The `event:` field (Bootlane sends the event kind).
    pub event: String,
    /// The `data:` field.
    pub data: Value,
}

/// A `curl -N` reading an event stream (see [`Server::sse`]); dropping it kills curl,
/// which closes the connection.
pub struct SseStream {
    _curl: Proc,
    rx: mpsc::Receiver<SseMessage>,
}

impl SseStream {
    /// The next message, or `None` when none arrives within `timeout` (or curl ended).
    pub fn next(&self, timeout: Duration) -> Option<SseMessage> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Reads messages until one satisfies `pred` and returns it, with every message read
    /// before it; panics (showing what was read) when none does within `timeout`.
    pub fn until(&self, timeout: Duration, pred: impl Fn(&SseMessage) -> bool) -> (SseMessage, Vec<SseMessage>) {
        let end = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(m) if pred(&m) => return (m, seen),
                Some(m) => seen.push(m),
                None => panic!(
                    "no matching event within {timeout:?}; read: {:?}",
                    seen.iter().map(|m| (m.id, &m.event)).collect::<Vec<_>>()
                ),
            }
        }
    }
}

/// Starts `cmd` (argv) inside `ns` in the background.
pub fn spawn_in(ns: &NetNs, argv: &[&str]) -> Proc {
    let child = Command::new("ip")
        .args(["netns", "exec", &ns.name])
        .args(argv)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    Proc(child)
}

/// `dig +short` style helper: runs `dig <args>` in `ns` and returns stdout.
pub fn dig(ns: &NetNs, args: &str) -> String {
    let out = ns.sh_out(&format!("dig +time=2 +tries=1 {args}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Sorted non-empty lines of `s`.
pub fn lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// Records what udhcpc got (`bound` only) into `$OUT` and configures the address, so the
/// client can fetch over TFTP afterwards.
pub const UDHCPC_SCRIPT: &str = "#!/bin/sh\n[ \"$1\" = bound ] || exit 0\n\
env | grep -E '^(ip|mask|subnet|router|serverid|lease)=' | sort >\"$OUT\"\n\
ip addr flush dev \"$interface\"\nip addr add \"$ip/$mask\" dev \"$interface\"\n";

/// Runs `udhcpc` once on `ifc` inside `ns` (3 discovers, 1 s apart, then give up) and
/// returns what it was bound with, or `None` when it got no lease.
pub fn udhcpc(ns: &NetNs, ifc: &str, dir: &Path) -> Option<BTreeMap<String, String>> {
    let script = dir.join("udhcpc.sh");
    if !script.exists() {
        std::fs::write(&script, UDHCPC_SCRIPT).expect("udhcpc script");
        sh(&format!("chmod +x {}", script.display()));
    }
    let out = dir.join(format!("lease-{ifc}.env"));
    let _ = std::fs::remove_file(&out);
    let run = ns.sh_out(&format!(
        "OUT={} udhcpc -i {ifc} -f -q -n -t 3 -T 1 -s {}",
        out.display(),
        script.display()
    ));
    let text = std::fs::read_to_string(&out).ok();
    eprintln!(
        "udhcpc on {ifc}: {} {}",
        run.status,
        text.as_deref().unwrap_or("no lease").replace('\n', " ")
    );
    if !run.status.success() {
        return None;
    }
    let lease: BTreeMap<String, String> = text?
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some(lease)
}
