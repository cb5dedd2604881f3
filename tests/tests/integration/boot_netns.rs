//! The boot path end to end: real clients and real firmware against the real binary in
//! network namespaces. Each test runs `scripts/e2e-boot.sh`, which builds the namespaces
//! (a bridge with a tap for QEMU), starts Bootlane with one DHCP subnet and checks,
//! failing on the first miss:
//! - udhcpc gets a lease with mask, router, DNS, domain, lease time and server id; a PXE
//!   BIOS client gets `undionly.kpxe` with next-server, arch 7 gets `ipxe.efi`, a client
//!   with user class `iPXE` gets the script URL;
//! - curl (plain and with blksize) and tftp-hpa fetch `undionly.kpxe` byte-identical;
//! - HTTP boot: the iPXE script and a Range request;
//! - QEMU machines boot to the served iPXE script and print its marker on the serial console;
//!   the BIOS machine is registered as a host with its own profile (through the API) and
//!   must reach that profile's custom entry.
//! - With the planes apart (`--tls`): pebble issues the management certificate over ACME,
//!   curl verifies it for every API call, Chromium refuses the UI without pebble's root
//!   and loads it with it (the about box shows the served certificate's fingerprint), and
//!   the BIOS machine boots through the plain-HTTP boot listener.
//!
//! The script removes everything it made (by PID and namespace name) on every exit path.

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-boot.sh")
}

fn run(args: &[&str]) {
    let out = Command::new("bash")
        .arg(script())
        .arg(bootlane_bin())
        .args(args)
        .output()
        .expect("run e2e-boot.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-boot.sh {args:?} failed");
    assert!(text.contains("[e2e-boot] PASS"), "no PASS line");
}

/// DHCP server mode (udhcpc), TFTP (curl, tftp-hpa), HTTP boot, and a BIOS machine with
/// the iPXE ROM booting to the profile script (about 20 s under TCG).
#[test]
fn boot_bios_ipxe_dhcp_tftp_http() {
    run(&[]);
}

/// A UEFI (OVMF) machine with the firmware's own PXE client: the tsize-only probe, then
/// `ipxe.efi` over TFTP with blksize/windowsize, then the script over HTTP.
#[test]
fn boot_uefi_firmware_pxe() {
    run(&["--uefi"]);
}

/// proxyDHCP next to a dnsmasq DHCP server: addresses from dnsmasq, boot information from
/// Bootlane only, plain clients left alone; a BIOS iPXE machine boots to the script.
#[test]
fn boot_proxy_dhcp_next_to_dnsmasq() {
    run(&["--proxy"]);
}

/// The management plane over HTTPS with an ACME certificate from pebble (curl and
/// Chromium verify it), the boot plane on its own plain-HTTP listener, and a BIOS iPXE
/// machine booting through the boot listener to its profile's entry.
#[test]
fn boot_bios_through_the_plain_boot_listener_with_the_ui_over_acme_https() {
    run(&["--tls"]);
}
