//! The boot doctor against real peers in network namespaces: the real `bootlane` binary
//! serves two links, and `POST /doctor` must find what is wrong on them.
//!
//! - Link A (10.95.0.0/24, server mode): a rival dnsmasq answers PXE clients with its own
//!   boot file (`pxelinux.0`, next-server 10.95.0.5): an error naming it. TFTP, HTTP and
//!   the MTU are fine there.
//! - Link B (10.96.0.0/24, server mode, MTU 1280): a real relay (`dhcrelay` from
//!   isc-dhcp-relay) forwards a `udhcpc` client of 10.97.0.0/24, a subnet Bootlane does not
//!   have: a warning naming the relay; the configured relayed subnet 10.98.0.0/24 that no
//!   relay reaches is named; the small MTU warns.
//!
//! `bootlane doctor` prints the same findings and exits 1; a second run while one lasts
//! is refused (409). And the boot files of BIOS and x86-64 UEFI are found; the probes took no address from Bootlane's own pool; the run took under 10 s.

use std::{path::Path, process::Command};

use bootlane_tests::{bootlane_bin, spawn_in, unique, veth, NetNs, Server, ADMIN_PASSWORD};
use serde_json::Value;

fn findings<'a>(r: &'a Value, check: &str, severity: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == check && f["severity"] == severity)
        .collect()
}

#[test]
fn doctor_finds_a_rival_dhcp_server_an_unconfigured_relay_and_a_small_mtu() {
    let (srv, lan, rly, cli) = (
        NetNs::new("dcs"),
        NetNs::new("dcl"),
        NetNs::new("dcr"),
        NetNs::new("dcc"),
    );
    let (a, lan_if) = veth(&srv, &["10.95.0.1/24"], &lan, &["10.95.0.5/24"]);
    let (b, rly_up) = veth(&srv, &["10.96.0.1/24"], &rly, &["10.96.0.2/24"]);
    let (rly_down, cli_if) = veth(&rly, &["10.97.0.1/24"], &cli, &[]);
    srv.sh(&format!("ip link set {b} mtu 1280"));
    rly.sh(&format!("ip link set {rly_up} mtu 1280"));
    // Link B's relayed subnets are reached through the relay.
    srv.sh("ip route add 10.97.0.0/24 via 10.96.0.2 && ip route add 10.98.0.0/24 via 10.96.0.2");

    // The rival: dnsmasq handing out addresses and its own boot file on link A.
    let work = std::env::temp_dir().join(unique("doctor-"));
    std::fs::create_dir_all(&work).unwrap();
    let leases = work.join("dnsmasq.leases");
    let _rival = spawn_in(
        &lan,
        &[
            "dnsmasq",
            "-k",
            "--no-resolv",
            "--no-hosts",
            "--conf-file=/dev/null",
            "--port=0",
            "-u",
            "root",
            &format!("--interface={lan_if}"),
            "--bind-interfaces",
            "--dhcp-range=10.95.0.50,10.95.0.60,255.255.255.0,1h",
            "--dhcp-boot=pxelinux.0,rival,10.95.0.5",
            &format!("--dhcp-leasefile={}", leases.display()),
        ],
    );
    // The relay on link B, forwarding the client link to Bootlane.
    let _relay = spawn_in(
        &rly,
        &[
            "dhcrelay",
            "-4",
            "-d",
            "-q",
            "-iu",
            &rly_up,
            "-id",
            &rly_down,
            "10.96.0.1",
        ],
    );

    let config = format!(
        "[dns.xdp]\nmode = \"off\"\n\
         [[dhcp.subnets]]\nmode = \"server\"\ninterface = \"{a}\"\ncidr = \"10.95.0.0/24\"\nrange_start = \"10.95.0.100\"\nrange_end = \"10.95.0.110\"\n\
         [[dhcp.subnets]]\nmode = \"server\"\ninterface = \"{b}\"\ncidr = \"10.96.0.0/24\"\nrange_start = \"10.96.0.100\"\nrange_end = \"10.96.0.110\"\n\
         [[dhcp.subnets]]\nmode = \"server\"\ninterface = \"{b}\"\ncidr = \"10.98.0.0/24\"\nrange_start = \"10.98.0.100\"\nrange_end = \"10.98.0.110\"\nserver_address = \"10.96.0.1\"\n"
    );
    let s = Server::start_on(&srv, &config, "0.0.0.0:8080");

    // A client behind the relay asks (and gets nothing: its subnet is not configured).
    cli.sh(&format!(
        "udhcpc -i {cli_if} -n -q -t 3 -T 1 -s /bin/true >/dev/null 2>&1 || true"
    ));

    let (code, v) = s.api_for(60, "POST", "/doctor", None);
    assert_eq!(code, 200, "{v}");
    let r = &v["data"];
    eprintln!("{}", serde_json::to_string_pretty(r).unwrap());
    assert!(r["duration_ms"].as_u64().unwrap() < 10_000, "{r}");
    let mut ifaces: Vec<&str> = r["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ifaces.sort();
    let mut want = vec![a.as_str(), b.as_str()];
    want.sort();
    assert_eq!(ifaces, want);

    let rival = findings(r, "rival_dhcp", "error");
    assert_eq!(rival.len(), 1, "{r}");
    assert_eq!(rival[0]["interface"], a.as_str());
    let text = rival[0]["summary"].as_str().unwrap();
    assert!(text.contains("10.95.0.5") && text.contains("pxelinux.0"), "{text}");
    assert!(rival[0]["fix"].as_str().unwrap().contains("dhcp-boot"), "{}", rival[0]);
    // Link B has no other DHCP server.
    assert!(
        findings(r, "rival_dhcp", "ok")
            .iter()
            .any(|f| f["interface"] == b.as_str()),
        "{r}"
    );

    let relay = findings(r, "relay", "warning");
    assert_eq!(relay.len(), 1, "{r}");
    assert!(
        relay[0]["summary"].as_str().unwrap().contains("10.97.0.1"),
        "{}",
        relay[0]
    );
    let unreached = findings(r, "relay", "info");
    assert!(
        unreached
            .iter()
            .any(|f| f["summary"].as_str().unwrap().contains("10.98.0.0/24")),
        "{r}"
    );

    let mtu = findings(r, "mtu", "warning");
    assert_eq!(mtu.len(), 1, "{r}");
    assert_eq!(mtu[0]["interface"], b.as_str());
    assert!(
        findings(r, "mtu", "ok").iter().any(|f| f["interface"] == a.as_str()),
        "{r}"
    );

    // Bootlane's own services answer on link A: TFTP with the options firmware asks, the
    // iPXE script over HTTP, and every arch-map file exists.
    let tftp = findings(r, "tftp", "ok");
    assert!(
        tftp.iter().any(|f| f["interface"] == a.as_str()
            && f["details"]["blksize"] == 1468
            && f["details"]["windowsize"] == 4),
        "{r}"
    );
    assert!(
        findings(r, "http", "ok").iter().any(|f| f["interface"] == a.as_str()),
        "{r}"
    );
    // The BIOS and x86-64 UEFI files are in place; the default arch map's other entries
    // (IA32, ARM) name files Debian does not ship: warnings, not errors.
    assert_eq!(findings(r, "boot_file", "ok").len(), 1, "{r}");
    assert!(findings(r, "boot_file", "error").is_empty(), "{r}");

    // The probes held no address of Bootlane's pool, and the report is kept.
    let (_, leases) = s.api("GET", "/dhcp/leases", None);
    assert!(!leases.to_string().contains("02:b0:07:d0:c7:01"), "{leases}");
    let (code, last) = s.api("GET", "/doctor", None);
    assert_eq!((code, &last["data"]["started_at"]), (200, &r["started_at"]));

    // `bootlane doctor` prints the same findings and exits 1 on the error.
    let out = Command::new("ip")
        .args(["netns", "exec", &srv.name, "sh", "-c"])
        .arg(format!(
            "echo '{ADMIN_PASSWORD}' | {} doctor --api http://127.0.0.1:8080 --password-stdin",
            bootlane_bin().display()
        ))
        .output()
        .expect("bootlane doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("boot doctor: 1 error(s)"), "{text}");
    assert!(
        text.contains(&format!("ERROR   rival_dhcp [{a}]: another DHCP server, 10.95.0.5")),
        "{text}"
    );
    assert!(text.contains(&format!("WARNING mtu [{b}]: MTU 1280")), "{text}");

    // While a run lasts (its DHCP probes alone listen 4.5 s), a second one is refused.
    std::thread::scope(|scope| {
        let first = scope.spawn(|| s.api_for(60, "POST", "/doctor", None));
        std::thread::sleep(std::time::Duration::from_secs(2));
        let (code, busy) = s.api("POST", "/doctor", None);
        assert_eq!(code, 409, "{busy}");
        assert!(busy["error"].as_str().unwrap().contains("already going"), "{busy}");
        assert_eq!(first.join().unwrap().0, 200);
    });
    let _ = std::fs::remove_dir_all(Path::new(&work));
}
