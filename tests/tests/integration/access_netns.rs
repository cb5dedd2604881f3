//! Access control end to end: the real `bootlane` binary in a server namespace with a
//! bridge `br0` (10.77.0.1/24, one DHCP subnet in server mode) joined by a veth pair to a
//! client namespace and, for QEMU, by a tap device.
//!
//! `blacklist_udhcpc_tftp_and_http`, in order:
//! 1. the mode is switched from `off` to `blacklist` through the API and the client's MAC
//!    is blacklisted: busybox `udhcpc` gets no lease; with another MAC (not listed) on the
//!    same link it gets one;
//! 2. that client fetches `undionly.kpxe` by TFTP; once its MAC is blacklisted too, the
//!    next TFTP read fails (the server finds the client by its lease and answers ERROR 2),
//!    an HTTP boot file is a 403 and its iPXE script says it is not authorised and exits;
//! 3. the refusals were published as `access.refused` events.
//!
//! `whitelist_qemu_recorded_then_boots`: in whitelist mode a QEMU BIOS machine with the
//! iPXE ROM (not on the whitelist) gets no DHCP answer and shows up in
//! `/access/unauthorized` with its option 93 architecture and option 60 vendor class;
//! after `add-to-whitelist` a fresh boot of the same machine reaches its iPXE script
//! (the marker on its serial console), about 20 s under TCG.
//!
//! Every wait is on a condition with a deadline; namespaces and processes are removed by
//! `Drop` whatever happens.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use bootlane_tests::{veth, NetNs, Proc, Server};
use serde_json::{json, Value};

const CONFIG: &str = "[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n\
[[dhcp.subnets]]\nmode = \"server\"\ninterface = \"br0\"\ncidr = \"10.77.0.0/24\"\n\
range_start = \"10.77.0.100\"\nrange_end = \"10.77.0.150\"\nrouter = \"10.77.0.1\"\nlease_time_secs = 600\n";

struct Lab {
    srv: NetNs,
    cli: NetNs,
    /// The client's end of the veth pair.
    cli_if: String,
}

/// The server namespace with `br0` (10.77.0.1/24) holding a tap for QEMU and one end of a
/// veth pair whose other end is in the client namespace.
fn lab() -> Lab {
    let (srv, cli) = (NetNs::new("acs"), NetNs::new("acc"));
    srv.sh(
        "ip link add br0 type bridge && ip addr add 10.77.0.1/24 dev br0 && ip link set br0 up && \
         ip tuntap add dev tap0 mode tap && ip link set tap0 master br0 && ip link set tap0 up",
    );
    let (srv_if, cli_if) = veth(&srv, &[], &cli, &[]);
    srv.sh(&format!("ip link set {srv_if} master br0"));
    Lab { srv, cli, cli_if }
}

fn ok(s: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let (code, v) = s.api(method, path, body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v["data"].clone()
}

/// Sets the client interface's MAC (link down, address, up).
fn set_mac(lab: &Lab, mac: &str) {
    lab.cli.sh(&format!(
        "ip link set {0} down && ip addr flush dev {0} && ip link set {0} address {mac} && ip link set {0} up",
        lab.cli_if
    ));
}

/// Runs `udhcpc` once on the client (3 discovers, 1 s apart); the leased address, or `None`.
fn udhcpc(lab: &Lab, dir: &Path) -> Option<String> {
    bootlane_tests::udhcpc(&lab.cli, &lab.cli_if, dir)?.get("ip").cloned()
}

/// The server's log without ANSI colour codes.
fn plain_log(s: &Server) -> String {
    let text = s.log_text();
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte (a letter).
            for d in it.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn blacklist_udhcpc_tftp_and_http() {
    let lab = lab();
    let s = Server::start_on(&lab.srv, CONFIG, "0.0.0.0:8080");
    let dir = s.data_dir.clone();
    let (listed, other) = ("02:77:00:00:00:01", "02:77:00:00:00:02");

    // 1. Blacklist mode through the API; the listed client gets nothing, another one a lease.
    assert_eq!(ok(&s, "GET", "/access/mode", None)["mode"], "off");
    ok(
        &s,
        "POST",
        "/access/blacklist",
        Some(&json!({"mac": listed, "note": "lab"})),
    );
    let m = ok(&s, "PUT", "/access/mode", Some(&json!({"mode": "blacklist"})));
    assert_eq!(m, json!({"mode": "blacklist", "file_default": "off", "stored": true}));
    set_mac(&lab, listed);
    assert_eq!(udhcpc(&lab, &dir), None, "a blacklisted client must get no lease");
    let log = plain_log(&s);
    assert!(
        !log.contains(&format!("DHCPOFFER mac={listed}")),
        "an offer went to the blacklisted client"
    );
    assert!(log.contains("access control refuses this client"), "{log}");
    set_mac(&lab, other);
    let ip = udhcpc(&lab, &dir).expect("a client that is not listed gets a lease");
    assert!(ip.starts_with("10.77.0.1"), "{ip}");

    // 2. TFTP and HTTP boot judge the client by its lease.
    let tftp = || {
        lab.cli
            .sh_out("curl -fsS -m 10 tftp://10.77.0.1/undionly.kpxe -o /dev/null")
            .status
            .success()
    };
    assert!(tftp(), "TFTP for a client that is not listed");
    let http = |path: &str| {
        lab.cli.sh(&format!(
            "curl -s -m 10 -o /dev/null -w %{{http_code}} 'http://10.77.0.1:8080{path}'"
        ))
    };
    assert_eq!(http("/boot/undionly.kpxe"), "200");
    ok(
        &s,
        "POST",
        "/access/blacklist",
        Some(&json!({"mac": "02-77-00-00-00-02"})),
    );
    assert!(!tftp(), "TFTP must refuse a blacklisted client");
    assert!(
        plain_log(&s).contains("TFTP refused: access control"),
        "the refusal was not by access control"
    );
    assert_eq!(http("/boot/undionly.kpxe"), "403");
    let script = lab.cli.sh(&format!(
        "curl -fsS -m 10 'http://10.77.0.1:8080/boot/ipxe?mac={other}'"
    ));
    assert!(
        script.starts_with("#!ipxe") && script.contains("not authorised") && script.contains("\nexit"),
        "{script}"
    );
    // Mode off: the lists stay, nothing is refused.
    ok(&s, "PUT", "/access/mode", Some(&json!({"mode": "off"})));
    assert!(tftp(), "mode off serves everyone");

    // 3. Events: refusals per device (rate limited), entries and mode changes.
    let ev = ok(&s, "GET", "/events?size=1000", None);
    let kinds: Vec<&str> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    for want in ["access.refused", "access.entry.created", "access.mode.changed"] {
        assert!(kinds.contains(&want), "no {want}: {kinds:?}");
    }
    let refused_listed = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "access.refused" && e["data"]["mac"] == listed)
        .count();
    assert_eq!(refused_listed, 1, "three DISCOVERs, one event (per device per minute)");
    // Blacklist refusals are not unauthorized devices.
    assert_eq!(ok(&s, "GET", "/access/unauthorized", None)["total"], 0);
    assert!(s.log_text().lines().all(|l| !l.contains("panicked")));
}

/// A QEMU BIOS machine with the iPXE ROM on the tap, serial console to `serial`. `ip netns
/// exec` execs QEMU itself, so dropping the [`Proc`] kills QEMU (and frees the tap); the
/// callers' deadlines bound its life.
fn qemu(lab: &Lab, mac: &str, serial: &Path) -> Proc {
    let child = Command::new("ip")
        .args(["netns", "exec", &lab.srv.name])
        .args([
            "qemu-system-x86_64",
            "-accel",
            "tcg",
            "-m",
            "256",
            "-machine",
            "pc,graphics=off",
            "-display",
            "none",
            "-monitor",
            "none",
            "-no-reboot",
            "-boot",
            "n",
            "-netdev",
            "tap,id=n0,ifname=tap0,script=no,downscript=no",
            "-device",
            &format!("e1000,netdev=n0,mac={mac}"),
            "-serial",
        ])
        .arg(format!("file:{}", serial.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn qemu");
    Proc(child)
}

fn serial_text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default().replace('\r', "")
}

#[test]
fn whitelist_qemu_recorded_then_boots() {
    let lab = lab();
    let s = Server::start_on(
        &lab.srv,
        &format!("{CONFIG}[access]\nmode = \"whitelist\"\n"),
        "0.0.0.0:8080",
    );
    let mac = "52:54:00:77:00:42";
    let marker = format!("Bootlane: booting {mac}");
    assert_eq!(
        ok(&s, "GET", "/access/mode", None)["mode"],
        "whitelist",
        "from [access] mode"
    );

    // Not whitelisted: recorded, never answered.
    let serial = s.data_dir.join("serial-refused.log");
    let vm = qemu(&lab, mac, &serial);
    let mut dev = Value::Null;
    wait_for("the machine in /access/unauthorized", Duration::from_secs(90), || {
        let d = ok(&s, "GET", "/access/unauthorized", None);
        dev = d["devices"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["mac"] == mac).cloned())
            .unwrap_or(Value::Null);
        dev["count"].as_u64().is_some_and(|c| c >= 2)
    });
    drop(vm);
    eprintln!("unauthorized: {dev}");
    assert_eq!(dev["arch"], 0, "option 93: BIOS");
    assert!(
        dev["vendor_class"]
            .as_str()
            .is_some_and(|v| v.starts_with("PXEClient:Arch:00000")),
        "{dev}"
    );
    assert_eq!(dev["last_protocol"], "dhcp");
    let log = plain_log(&s);
    assert!(
        !log.contains(&format!("DHCPOFFER mac={mac}")),
        "an offer went to the refused machine"
    );
    assert!(!serial_text(&serial).contains(&marker));

    // Whitelisted from the unauthorized list: the same machine boots to its script.
    let id = dev["id"].as_u64().unwrap();
    let moved = ok(
        &s,
        "POST",
        "/access/unauthorized/add-to-whitelist",
        Some(&json!({"ids": [id]})),
    );
    assert_eq!(moved["moved"], 1, "{moved}");
    assert_eq!(ok(&s, "GET", "/access/whitelist", None)["entries"][0]["mac"], mac);
    assert_eq!(ok(&s, "GET", "/access/unauthorized", None)["total"], 0);
    let serial = s.data_dir.join("serial-allowed.log");
    let _vm = qemu(&lab, mac, &serial);
    wait_for(
        "the script's marker on the serial console",
        Duration::from_secs(170),
        || serial_text(&serial).contains(&marker),
    );
    let log = plain_log(&s);
    assert!(log.contains(&format!("DHCPACK mac={mac}")), "no DHCPACK");
    assert!(log.contains(&format!("serving the iPXE script mac={mac}")));
    assert!(log.lines().all(|l| !l.contains("panicked")));
}
