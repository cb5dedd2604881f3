//! The Debian package, installed into a scratch root and run the way its unit runs it. The
//! package is `BOOTLANE_DEB`, else the newest `.deb` in `<target>/debian/dev/` or
//! `<target>/debian/` (`cargo xtask test` builds it first with
//! `cargo xtask package --debug`). Steps: the control data (Depends on `ipxe`, the
//! conffile, the maintainer scripts parse); `dpkg -x` into a scratch root and every file
//! in place (binary, conffile, unit, sysusers.d, man pages, completions); the `bootlane`
//! user created by `systemd-sysusers --root` from the package's own sysusers.d file (the
//! scratch root starts with the host's passwd and group, so the UID is free on the host);
//! the unit checked by `systemd-analyze verify` and `security --offline` (exposure at most
//! 2.5); then the installed binary run in a network namespace as that UID through
//! `setpriv` with exactly the unit's five capabilities (ambient, inheritable and bounding
//! set, no new privileges) and a `NOTIFY_SOCKET`: `READY=1` arrives, `dig` gets a record
//! created through the API from the XDP program (generic mode on a veth), the process's
//! capabilities are exactly those, SIGTERM gives `STOPPING=1` and a clean exit. Last, the
//! same binary with only `CAP_NET_BIND_SERVICE`: it still serves DNS from userspace and
//! `/status` says why the fast path is off. Scratch root, namespace, server: `Drop` guards.

use std::{
    os::unix::{fs::PermissionsExt, net::UnixDatagram},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use bootlane_tests::{dig, lines, sh, unique, veth, Launch, NetNs, Server};
use serde_json::{json, Value};

/// The unit's capabilities, in setpriv's spelling.
const CAPS: &str = "net_bind_service,net_raw,net_admin,bpf,perfmon";
/// The same as a capability mask: bits 10, 12, 13 (NET_BIND_SERVICE, NET_ADMIN, NET_RAW),
/// 38 (PERFMON) and 39 (BPF), as in `/proc/<pid>/status`.
const CAP_MASK: u64 = (1 << 10) | (1 << 12) | (1 << 13) | (1 << 38) | (1 << 39);

/// A directory removed (with its content) on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn deb_path() -> PathBuf {
    if let Ok(p) = std::env::var("BOOTLANE_DEB") {
        return PathBuf::from(p);
    }
    // <target>/debug/deps/integration-<hash>: the target dir is three levels up.
    let exe = std::env::current_exe().expect("current exe");
    let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
    let mut debs: Vec<(std::time::SystemTime, PathBuf)> = ["debian/dev", "debian"]
        .iter()
        .filter_map(|d| std::fs::read_dir(target.join(d)).ok())
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "deb"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    debs.sort();
    debs.pop()
        .map(|(_, p)| p)
        .expect("no .deb: run `cargo xtask package --debug` (cargo xtask test does) or set BOOTLANE_DEB")
}

/// `(status, stdout, stderr)` of a command.
fn output(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The values of `key=` lines of a unit file (every occurrence, in order).
fn unit_values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

/// Reads notifications from `sock` until one contains `want` (or `timeout` passes).
fn notification(sock: &UnixDatagram, want: &str, timeout: Duration) -> String {
    let end = Instant::now() + timeout;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        if let Ok(n) = sock.recv(&mut buf) {
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            if msg.lines().any(|l| l == want) {
                return msg;
            }
            seen.push(msg);
        }
    }
    panic!("no {want} within {timeout:?}; got {seen:?}");
}

fn capability_mask(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("{field} in {status}"));
    u64::from_str_radix(hex.trim(), 16).expect("hex mask")
}

fn setpriv(uid: u32, gid: u32, caps: &str) -> Vec<String> {
    let set = caps.split(',').map(|c| format!(",+{c}")).collect::<String>();
    [
        "setpriv".to_string(),
        format!("--reuid={uid}"),
        format!("--regid={gid}"),
        "--clear-groups".into(),
        format!("--inh-caps=-all{set}"),
        format!("--ambient-caps=-all{set}"),
        format!("--bounding-set=-all{set}"),
        "--no-new-privs".into(),
        "--".into(),
    ]
    .into()
}

#[test]
fn package_installs_and_runs_unprivileged_with_only_its_capabilities() {
    let started = Instant::now();
    let deb = deb_path();
    eprintln!("package: {}", deb.display());

    // Control data: the dependencies, the conffile, the maintainer scripts.
    let depends = sh(&format!("dpkg-deb --field {} Depends", deb.display()));
    assert!(
        depends.split(',').any(|d| d.trim() == "ipxe"),
        "ipxe declared: {depends}"
    );
    let scratch = Scratch(std::env::temp_dir().join(unique("bootlane-pkg-")));
    let control = scratch.0.join("control");
    let root = scratch.0.join("root");
    std::fs::create_dir_all(&root).expect("scratch root");
    sh(&format!("dpkg-deb -e {} {}", deb.display(), control.display()));
    assert_eq!(
        std::fs::read_to_string(control.join("conffiles"))
            .expect("conffiles")
            .trim(),
        "/etc/bootlane/bootlane.toml"
    );
    for script in ["postinst", "postrm", "prerm"] {
        sh(&format!("sh -n {}", control.join(script).display()));
    }
    let postinst = std::fs::read_to_string(control.join("postinst")).expect("postinst");
    assert!(
        postinst.contains("systemd-sysusers ${DPKG_ROOT:+--root=\"$DPKG_ROOT\"} bootlane.conf"),
        "{postinst}"
    );
    assert!(
        !postinst.contains("deb-systemd-invoke start"),
        "not started on install: {postinst}"
    );

    // The files, extracted into the scratch root.
    sh(&format!("dpkg -x {} {}", deb.display(), root.display()));
    for dir in [&scratch.0, &root] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let bin = root.join("usr/bin/bootlane");
    let unit_path = root.join("usr/lib/systemd/system/bootlane.service");
    for f in [
        "usr/bin/bootlane",
        "etc/bootlane/bootlane.toml",
        "usr/lib/systemd/system/bootlane.service",
        "usr/lib/sysusers.d/bootlane.conf",
        "usr/share/man/man1/bootlane.1.gz",
        "usr/share/man/man1/bootlane-serve.1.gz",
        "usr/share/man/man1/bootlane-config-check.1.gz",
        "usr/share/bash-completion/completions/bootlane",
        "usr/share/zsh/vendor-completions/_bootlane",
        "usr/share/fish/vendor_completions.d/bootlane.fish",
        "usr/share/doc/bootlane/copyright",
        "usr/share/bootlane/integrations/prometheus/bootlane-rules.yml",
        "usr/share/bootlane/integrations/prometheus/tests/bootlane-rules.test.yml",
        "usr/share/bootlane/integrations/grafana/bootlane-dashboard.json",
    ] {
        assert!(root.join(f).is_file(), "{f} missing from the package");
    }
    assert!(!root.join("usr/lib/ipxe").exists(), "iPXE is a dependency, not copied");
    let mode = std::fs::metadata(&bin).expect("binary").permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    let man = sh(&format!(
        "zcat {}",
        root.join("usr/share/man/man1/bootlane-serve.1.gz").display()
    ));
    assert!(
        man.contains(".TH bootlane-serve 1") && man.contains("\\-\\-data\\-dir"),
        "{man}"
    );
    sh(&format!(
        "bash -n {}",
        root.join("usr/share/bash-completion/completions/bootlane").display()
    ));
    let check = sh(&format!(
        "{} config check --config {}",
        bin.display(),
        root.join("etc/bootlane/bootlane.toml").display()
    ));
    assert!(
        check.trim().ends_with(": ok"),
        "the shipped config file is valid: {check}"
    );

    // The user, as the postinst creates it (systemd-sysusers with the package's file).
    std::fs::create_dir_all(root.join("etc")).expect("etc");
    for f in ["passwd", "group"] {
        std::fs::copy(Path::new("/etc").join(f), root.join("etc").join(f)).expect("copy host account files");
    }
    sh(&format!(
        "systemd-sysusers --root={} {}",
        root.display(),
        root.join("usr/lib/sysusers.d/bootlane.conf").display()
    ));
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).expect("passwd");
    let entry: Vec<&str> = passwd
        .lines()
        .find(|l| l.starts_with("bootlane:"))
        .expect("bootlane user created")
        .split(':')
        .collect();
    let (uid, gid): (u32, u32) = (entry[2].parse().unwrap(), entry[3].parse().unwrap());
    assert!(uid > 0 && uid < 1000, "a system user: {entry:?}");
    assert_eq!((entry[5], entry[6]), ("/var/lib/bootlane", "/usr/sbin/nologin"));
    let host_passwd = std::fs::read_to_string("/etc/passwd").expect("host passwd");
    assert!(
        !host_passwd.lines().any(|l| l.split(':').nth(2) == Some(entry[2])),
        "UID {uid} is free on the host"
    );

    // The unit: what it grants, and systemd's own checks.
    let unit = std::fs::read_to_string(&unit_path).expect("unit");
    for (key, want) in [
        ("Type", "notify"),
        ("User", "bootlane"),
        ("StateDirectory", "bootlane"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("NoNewPrivileges", "yes"),
        ("Restart", "on-failure"),
        (
            "ExecStart",
            "/usr/bin/bootlane serve --config /etc/bootlane/bootlane.toml",
        ),
    ] {
        assert_eq!(unit_values(&unit, key), [want], "{key}=");
    }
    let unit_caps = "CAP_NET_BIND_SERVICE CAP_NET_RAW CAP_NET_ADMIN CAP_BPF CAP_PERFMON";
    assert_eq!(unit_values(&unit, "AmbientCapabilities"), [unit_caps]);
    assert_eq!(unit_values(&unit, "CapabilityBoundingSet"), [unit_caps]);
    // verify looks for ExecStart's binary on this machine: point it at the scratch root.
    let check_dir = scratch.0.join("unit");
    std::fs::create_dir_all(&check_dir).expect("unit dir");
    let unit_copy = check_dir.join("bootlane.service");
    std::fs::write(
        &unit_copy,
        unit.replace("/usr/bin/bootlane", &bin.display().to_string()),
    )
    .expect("unit copy");
    let (ok, out, err) = output(
        Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&unit_copy),
    );
    assert!(ok && err.trim().is_empty(), "systemd-analyze verify: {out}{err}");
    let (ok, out, err) = output(
        Command::new("systemd-analyze")
            .args(["security", "--offline=yes", "--threshold=25"])
            .arg(&unit_copy),
    );
    let score = out.lines().last().unwrap_or_default().to_string();
    eprintln!("systemd-analyze security: {score}");
    assert!(ok, "exposure above 2.5: {score}\n{err}");

    // Run it as the unit does: the bootlane UID, only the five capabilities, no new
    // privileges, a notify socket; XDP generic on a veth, DNS on port 53.
    let srv = NetNs::new("bpk");
    let cli = NetNs::new("bpc");
    let (vs, _) = veth(&srv, &["10.78.0.1/24"], &cli, &["10.78.0.2/24"]);
    let notify_path = scratch.0.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).expect("notify socket");
    notify.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    std::fs::set_permissions(&notify_path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let config = "[server]\nname = \"bootlane\"\n[dns]\nport = 53\nlisten = [\"10.78.0.1\"]\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"generic\"\n";
    let launch = Launch {
        bin: Some(bin.clone()),
        wrapper: setpriv(uid, gid, CAPS),
        owner: Some((uid, gid)),
        env: vec![("NOTIFY_SOCKET".into(), notify_path.display().to_string())],
        listen: None,
    };
    let mut s = Server::start_with(&srv, config, launch.clone());
    let ready = notification(&notify, "READY=1", Duration::from_secs(5));
    assert!(ready.contains("STATUS=dns running"), "{ready}");
    let pid = s.pid().expect("running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let uids = status.lines().find(|l| l.starts_with("Uid:")).expect("Uid");
    assert_eq!(
        uids.split_whitespace().skip(1).collect::<Vec<_>>(),
        [entry[2]; 4],
        "{uids}"
    );
    for field in ["CapEff:", "CapPrm:", "CapAmb:", "CapBnd:"] {
        assert_eq!(capability_mask(pid, field), CAP_MASK, "{field} of the server");
    }
    let (code, st) = s.api("GET", "/status", None);
    assert_eq!(code, 200);
    assert_eq!(st["data"]["dns_xdp_active"], true, "XDP attached without root: {st}");
    let (_, dns) = s.api("GET", "/services/dns", None);
    let xdp = &dns["data"]["xdp"];
    assert!(
        xdp["interfaces"]
            .as_array()
            .expect("interfaces")
            .iter()
            .any(|i| i["name"] == vs.as_str() && i["attach_mode"] == "generic"),
        "{xdp}"
    );
    s.add_record(json!({"name": "pkg", "type": "A", "value": "10.0.0.42"}));
    let answered = |s: &Server| -> u64 {
        let (_, v): (u16, Value) = s.api("GET", "/services/dns", None);
        v["data"]["xdp"]["counters"]["answered"].as_u64().expect("counter")
    };
    let before = answered(&s);
    assert_eq!(
        lines(&dig(&cli, "@10.78.0.1 -p 53 +short pkg.lab.test A")),
        ["10.0.0.42"]
    );
    assert_eq!(answered(&s), before + 1, "answered by the XDP program");
    // The data directory is the service's own.
    let log_dir = s.data_dir.join("logs");
    assert!(log_dir.is_dir(), "the unprivileged server wrote its logs");
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&log_dir).unwrap()),
        uid
    );

    let exit = s.terminate(Duration::from_secs(10)).expect("stopped on SIGTERM");
    notification(&notify, "STOPPING=1", Duration::from_secs(2));
    assert!(exit.success(), "clean exit: {exit}");
    drop(s);

    // Without the XDP capabilities: still serving, and saying why the fast path is off.
    let mut launch = launch;
    launch.wrapper = setpriv(uid, gid, "net_bind_service");
    launch.env.clear();
    let s = Server::start_with(&srv, config, launch);
    let (_, st) = s.api("GET", "/status", None);
    assert_eq!(st["data"]["dns_xdp_active"], false, "{st}");
    let reason = st["data"]["dns_xdp_reason"].as_str().expect("a reason");
    assert!(reason.contains("CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON"), "{reason}");
    s.add_record(json!({"name": "slow", "type": "A", "value": "10.0.0.43"}));
    assert_eq!(lines(&dig(&cli, "@10.78.0.1 +short slow.lab.test A")), ["10.0.0.43"]);
    eprintln!("package test took {:?}", started.elapsed());
}
