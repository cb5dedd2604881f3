//! BMC power end to end (IPMI and Redfish): the real `bootlane` binary and two real BMC
//! counterparts, all on the loopback of a namespace this test creates (so their fixed ports
//! are free and nothing leaves the machine):
//! - OpenIPMI's `ipmi_sim` (recipe in `shared/notes/test-doubles.md`) with a chassis-control
//!   hook script that keeps the power and boot device in files and appends every `set` to a
//!   log this test reads;
//! - `sushy-emulator` (PyPI `sushy-tools`, fake driver, HTTP Basic auth from a bcrypt
//!   htpasswd made with `htpasswd -B`), whose power state flips 1-11 s after a reset.
//!
//! One test, in order, through the HTTP API only:
//! 1. IPMI: a probe without a protocol detects IPMI and reads the identity; power-on,
//!    power-off, restart (a cycle: off then on in the hook log), `boot-device pxe` and
//!    power-on into PXE of a running machine (boot override, then a cycle) each change the
//!    simulator's state; a wrong password is a 502 naming the cause and is the config's
//!    last error; `POST /hosts/{id}/power` drives a host through its own `bmc_addr`;
//! 2. a CSV of three BMCs imports two and reports the bad row with its line and column;
//! 3. Redfish: a probe detects Redfish; power-on into PXE sets the boot override and the
//!    service polls until the emulator's state flips to On; a bogus reset type and a wrong
//!    password give clear errors.
//!
//! The simulators are started by this test and killed by PID ([`bootlane_tests::Proc`]);
//! their files live in a temporary directory removed at the end.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bootlane_tests::{sh, spawn_in, unique, NetNs, Proc, Server};
use serde_json::{json, Value};

/// UDP port of `ipmi_sim` inside the namespace.
const IPMI_PORT: u16 = 9623;
/// TCP port of `sushy-emulator` inside the namespace.
const REDFISH_PORT: u16 = 8000;
const SUSHY: &str = "/opt/bootlane-sushy/bin/sushy-emulator";
const SYSTEM: &str = "27946b59-9e44-4fa7-8e91-f3527a1ef094";

/// The chassis-control hook: `<dev> get power boot`, `<dev> set <key> <value>...`,
/// `<dev> check`. State in `$DIR/power` and `$DIR/boot`, every set appended to `$DIR/log`.
fn hook(dir: &Path) -> String {
    format!(
        r#"#!/bin/sh
D={dir}
dev=$1; op=$2; shift 2
case "$op" in
get) for k in "$@"; do
       case $k in
       power) echo "power:$(cat $D/power 2>/dev/null || echo 0)";;
       boot) echo "boot:$(cat $D/boot 2>/dev/null || echo default)";;
       esac
     done;;
set) while [ $# -gt 0 ]; do
       k=$1; v=$2; shift 2
       echo "set $k $v" >> $D/log
       case $k in
       power) echo $v > $D/power;;
       boot) echo $v > $D/boot;;
       reset) echo 1 > $D/power;;
       esac
     done;;
check) exit 1;;
esac
"#,
        dir = dir.display()
    )
}

struct Sims {
    dir: PathBuf,
    _ipmi: Proc,
    _sushy: Proc,
}

impl Drop for Sims {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Sims {
    /// The hook log's lines.
    fn log(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    fn state(&self, key: &str) -> String {
        std::fs::read_to_string(self.dir.join(key))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
}

/// Waits until `f` holds, panicking with `what` after `timeout`.
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start_sims(ns: &NetNs) -> Sims {
    let dir = std::env::temp_dir().join(unique("bootlane-bmc-"));
    std::fs::create_dir_all(dir.join("ipmi-state")).expect("sim dir");
    let script = dir.join("chassis.sh");
    std::fs::write(&script, hook(&dir)).expect("hook");
    sh(&format!("chmod +x {}", script.display()));
    std::fs::write(
        dir.join("lan.conf"),
        format!(
            "name \"bootlane-bmc\"\nset_working_mc 0x20\n  startlan 1\n    addr 127.0.0.1 {IPMI_PORT}\n    priv_limit admin\n\
             \x20   allowed_auths_callback none md2 md5 straight\n    allowed_auths_user none md2 md5 straight\n\
             \x20   allowed_auths_operator none md2 md5 straight\n    allowed_auths_admin none md2 md5 straight\n\
             \x20   guid a123456789abcdefa123456789abcdef\n  endlan\n  chassis_control \"{} 0x20\"\n\
             \x20 user 2 true  \"admin\" \"secret\" admin 10 none md2 md5 straight\n",
            script.display()
        ),
    )
    .expect("lan.conf");
    std::fs::write(
        dir.join("bmc.emu"),
        "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nsel_enable 0x20 1000 0x0a\nmc_enable 0x20\n",
    )
    .expect("bmc.emu");
    let d = dir.display().to_string();
    let ipmi = spawn_in(
        ns,
        &[
            "ipmi_sim",
            "-c",
            &format!("{d}/lan.conf"),
            "-f",
            &format!("{d}/bmc.emu"),
            "-s",
            &format!("{d}/ipmi-state"),
            "-n",
        ],
    );
    // bcrypt only: sushy-emulator refuses other htpasswd hashes.
    sh(&format!("htpasswd -cbB {d}/htpasswd admin secret 2>/dev/null"));
    std::fs::write(
        dir.join("sushy.conf"),
        format!(
            "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\nSUSHY_EMULATOR_LISTEN_PORT = {REDFISH_PORT}\n\
             SUSHY_EMULATOR_AUTH_FILE = '{d}/htpasswd'\nSUSHY_EMULATOR_STATE_DIR = '{d}/sushy-state'\n\
             SUSHY_EMULATOR_FAKE_DRIVER = True\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': '{SYSTEM}', 'name': 'node-a', 'power_state': 'Off', \
             'external_notifier': False, 'nics': [{{'mac': '52:54:00:77:00:42', 'ip': '127.0.0.1'}}]}}]\n"
        ),
    )
    .expect("sushy.conf");
    let sushy = spawn_in(ns, &[SUSHY, "--config", &format!("{d}/sushy.conf")]);
    wait_for("ipmi_sim to answer", Duration::from_secs(15), || {
        ns.sh_out(&format!(
            "IPMI_PASSWORD=secret ipmitool -I lanplus -C 3 -H 127.0.0.1 -p {IPMI_PORT} -U admin -E -N 1 -R 1 chassis power status"
        ))
        .status
        .success()
    });
    wait_for("sushy-emulator to answer", Duration::from_secs(30), || {
        ns.sh_out(&format!("curl -sf -m 2 http://127.0.0.1:{REDFISH_PORT}/redfish/v1"))
            .status
            .success()
    });
    Sims {
        dir,
        _ipmi: ipmi,
        _sushy: sushy,
    }
}

/// Calls the API, asserting the status; returns `data` (or the whole error answer). The
/// client waits up to 40 s: a power action polls the BMC for up to `settle_secs` (25 s
/// here), and sushy-emulator flips its state up to 11 s after a reset.
fn call(s: &Server, method: &str, path: &str, body: Option<Value>, status: u16) -> Value {
    let (code, v) = s.api_for(40, method, path, body.as_ref());
    assert_eq!(code, status, "{method} {path}: {v}");
    if status < 300 {
        v["data"].clone()
    } else {
        v
    }
}

/// The hook log's lines written since `mark` lines.
fn since(sims: &Sims, mark: usize) -> Vec<String> {
    sims.log().into_iter().skip(mark).collect()
}

#[test]
fn ipmi_and_redfish_power_through_the_api() {
    let ns = NetNs::new("bmc");
    let sims = start_sims(&ns);
    let s = Server::start(
        &ns,
        "[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n[bmc]\nsettle_secs = 25\npoll_interval_ms = 500\ncommand_timeout_secs = 5\nallowed_networks = [\"127.0.0.0/8\"]\n\
         [outbound]\nallow_loopback = true\n",
    );

    // ---- IPMI ----
    let p = call(
        &s,
        "POST",
        "/bmc/probe",
        Some(json!({"address": "127.0.0.1", "port": IPMI_PORT, "user": "admin", "password": "secret"})),
        200,
    );
    assert_eq!(
        (p["protocol"].as_str(), p["detected"].as_bool()),
        (Some("ipmi"), Some(true)),
        "{p}"
    );
    assert_eq!(p["identity"]["manufacturer"], "MontaVista Software, Inc.");
    let c = call(
        &s,
        "POST",
        "/bmc/configs",
        Some(
            json!({"name": "sim", "address": "127.0.0.1", "port": IPMI_PORT, "protocol": "ipmi", "user": "admin", "password": "secret"}),
        ),
        201,
    );
    let id = c["id"].as_u64().unwrap();
    assert!(c.get("password").is_none() && c["has_password"] == true);

    let mark = sims.log().len();
    let o = call(&s, "POST", &format!("/bmc/{id}/power-on"), None, 200);
    assert_eq!(
        (o["power_state"].as_str(), o["settled"].as_bool()),
        (Some("on"), Some(true)),
        "{o}"
    );
    assert_eq!(since(&sims, mark), ["set power 1"]);
    assert_eq!(sims.state("power"), "1");

    let mark = sims.log().len();
    let o = call(&s, "POST", &format!("/bmc/{id}/power-off"), None, 200);
    assert_eq!(
        (o["sent"].as_str(), o["power_state"].as_str()),
        (Some("ForceOff"), Some("off")),
        "{o}"
    );
    assert_eq!(since(&sims, mark), ["set power 0"]);

    // Restart of a running machine is a cycle: off, then on again (the API waits for on).
    call(&s, "POST", &format!("/bmc/{id}/power-on"), None, 200);
    let mark = sims.log().len();
    let o = call(&s, "POST", &format!("/bmc/{id}/restart"), None, 200);
    assert_eq!(
        (o["sent"].as_str(), o["power_state"].as_str()),
        (Some("ForceRestart"), Some("on")),
        "{o}"
    );
    assert_eq!(since(&sims, mark), ["set power 0", "set power 1"]);

    let mark = sims.log().len();
    let b = call(
        &s,
        "POST",
        &format!("/bmc/{id}/boot-device"),
        Some(json!({"device": "pxe"})),
        200,
    );
    assert_eq!(since(&sims, mark), ["set boot pxe"]);
    assert_eq!(
        (b["kept"]["device"].as_str(), b["kept"]["target"].as_str()),
        (Some("pxe"), Some("Force PXE")),
        "{b}"
    );
    // ipmi_sim does not keep the EFI flag: the read-back says so.
    let b = call(
        &s,
        "POST",
        &format!("/bmc/{id}/boot-device"),
        Some(json!({"device": "disk", "uefi": true})),
        200,
    );
    assert_eq!(b["matches"], false, "{b}");
    assert!(b["message"].as_str().unwrap().contains("legacy"), "{b}");
    assert!(
        sims.log().last().is_some_and(|l| l.starts_with("set boot ")),
        "{:?}",
        sims.log()
    );

    // Power on into PXE while on: boot override first, then a power cycle.
    let mark = sims.log().len();
    let o = call(
        &s,
        "POST",
        &format!("/bmc/{id}/power-on"),
        Some(json!({"pxe": true})),
        200,
    );
    assert_eq!(
        (o["sent"].as_str(), o["boot"]["device"].as_str()),
        (Some("ForceRestart"), Some("pxe")),
        "{o}"
    );
    assert_eq!(since(&sims, mark), ["set boot pxe", "set power 0", "set power 1"]);
    let st = call(&s, "GET", &format!("/bmc/{id}/status"), None, 200);
    assert_eq!(
        (st["power_state"].as_str(), st["last_error"].is_null()),
        (Some("on"), true),
        "{st}"
    );

    // A wrong password: a 502 naming the cause, recorded as the last error; nothing changed.
    call(
        &s,
        "PUT",
        &format!("/bmc/configs/{id}"),
        Some(json!({"password": "wrong"})),
        200,
    );
    let mark = sims.log().len();
    let e = call(&s, "POST", &format!("/bmc/{id}/power-off"), None, 502);
    let msg = e["error"].as_str().unwrap();
    assert!(
        msg.contains("refused the password") && msg.contains("127.0.0.1:9623"),
        "{e}"
    );
    assert!(!msg.contains("wrong"), "the password is never echoed: {msg}");
    assert!(since(&sims, mark).is_empty());
    let st = call(&s, "GET", &format!("/bmc/{id}/status"), None, 200);
    assert!(
        st["last_error"].as_str().unwrap().contains("refused the password"),
        "{st}"
    );
    assert!(!s.log_text().contains("wrong\""), "the password is never logged");

    // A host driven through its own bmc_* fields.
    let h = call(
        &s,
        "POST",
        "/hosts",
        Some(
            json!({"name": "node1", "mac": "52:54:00:77:00:01", "bmc_addr": format!("127.0.0.1:{IPMI_PORT}"), "bmc_user": "admin", "bmc_password": "secret"}),
        ),
        201,
    );
    let o = call(
        &s,
        "POST",
        &format!("/hosts/{}/power", h["id"]),
        Some(json!({"action": "status"})),
        200,
    );
    assert_eq!(
        (o["power_state"].as_str(), o["bmc_id"].is_null()),
        (Some("on"), true),
        "{o}"
    );

    // ---- CSV import: three BMCs, one bad row ----
    let csv = format!(
        "name,address,port,protocol,user,password\n\
         rack1-a,127.0.0.1,{IPMI_PORT},ipmi,admin,secret\n\
         rack1-b,127.0.0.2,,snmp,admin,secret\n\
         rack1-c,http://127.0.0.1,{REDFISH_PORT},redfish,admin,secret\n"
    );
    let f = s.data_dir.join("bmcs.csv");
    std::fs::write(&f, csv).unwrap();
    let out = ns.sh(&format!(
        "curl -s -b {} -H 'Content-Type: text/csv' --data-binary @{} {}/bmc/configs/import",
        s.data_dir.join("cookies").display(),
        f.display(),
        s.base
    ));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("import answer {out}"));
    let r = &v["data"];
    assert_eq!(
        (r["imported"].as_u64(), r["failed"].as_u64()),
        (Some(2), Some(1)),
        "{v}"
    );
    assert_eq!(
        (r["rows"][1]["row"].as_u64(), r["rows"][1]["ok"].as_bool()),
        (Some(3), Some(false))
    );
    assert!(r["rows"][1]["error"].as_str().unwrap().contains("'protocol'"), "{v}");
    let list = call(&s, "GET", "/bmc/configs?q=rack1", None, 200);
    assert_eq!(list["total"], 2, "{list}");
    let imported = r["rows"][0]["id"].as_u64().unwrap();
    let st = call(
        &s,
        "POST",
        "/bmc/batch/status",
        Some(json!({"ids": [imported, id]})),
        200,
    );
    assert_eq!((st["ok"].as_u64(), st["failed"].as_u64()), (Some(1), Some(1)), "{st}");

    // ---- Redfish ----
    let p = call(
        &s,
        "POST",
        "/bmc/probe",
        Some(json!({"address": "127.0.0.1", "port": REDFISH_PORT, "user": "admin", "password": "secret"})),
        200,
    );
    assert_eq!(
        (p["protocol"].as_str(), p["power_state"].as_str()),
        (Some("redfish"), Some("off")),
        "{p}"
    );
    assert_eq!(p["identity"]["manufacturer"], "Sushy Emulator");
    let rf = call(
        &s,
        "POST",
        "/bmc/configs",
        Some(json!({"name": "rf", "address": "http://127.0.0.1", "port": REDFISH_PORT, "protocol": "redfish", "user": "admin", "password": "secret"})),
        201,
    )["id"]
        .as_u64()
        .unwrap();
    let t0 = Instant::now();
    let o = call(
        &s,
        "POST",
        &format!("/bmc/{rf}/power-on"),
        Some(json!({"pxe": true})),
        200,
    );
    assert_eq!(
        (o["sent"].as_str(), o["power_state_before"].as_str()),
        (Some("On"), Some("off")),
        "{o}"
    );
    assert_eq!(
        (o["power_state"].as_str(), o["settled"].as_bool()),
        (Some("on"), Some(true)),
        "{o}"
    );
    assert_eq!(o["boot"]["target"], "Pxe", "{o}");
    eprintln!("redfish power-on settled after {:?}", t0.elapsed());
    let sys = ns.sh(&format!(
        "curl -s -u admin:secret http://127.0.0.1:{REDFISH_PORT}/redfish/v1/Systems/{SYSTEM}"
    ));
    let sys: Value = serde_json::from_str(&sys).unwrap();
    assert_eq!(
        (
            sys["PowerState"].as_str(),
            sys["Boot"]["BootSourceOverrideTarget"].as_str()
        ),
        (Some("On"), Some("Pxe"))
    );
    let e = call(
        &s,
        "POST",
        &format!("/bmc/{rf}/restart"),
        Some(json!({"reset_type": "Bogus"})),
        400,
    );
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("\"Bogus\" is not one this BMC accepts"),
        "{e}"
    );
    call(
        &s,
        "PUT",
        &format!("/bmc/configs/{rf}"),
        Some(json!({"password": "nope"})),
        200,
    );
    let e = call(&s, "POST", &format!("/bmc/{rf}/refresh"), None, 502);
    assert!(e["error"].as_str().unwrap().contains("refused user \"admin\""), "{e}");
}
