//! PXELINUX end to end (issue 12 "PXELINUX", Proof: "SeaBIOS through PXELINUX to the
//! installer kernel"): `scripts/e2e-pxelinux.sh` maps BIOS clients to `pxelinux.0`, puts the
//! real Debian installer's kernel and initrd in the boot root through the file API, checks
//! the generated `pxelinux.cfg/01-<mac>` over TFTP, HTTP and the `boot-config?format=pxelinux`
//! preview (and `default`, and "file not found" for other names), then boots a QEMU SeaBIOS
//! machine (e1000, `-boot n`) through PXELINUX to the installer kernel's "Linux version"
//! line on its serial console, and prints the boot's duration.

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

/// SeaBIOS → pxelinux.0 → the generated pxelinux.cfg/01-<mac> → the installer kernel.
#[test]
fn seabios_boots_the_installer_kernel_through_pxelinux() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-pxelinux.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .output()
        .expect("run e2e-pxelinux.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-pxelinux.sh failed");
    assert!(text.contains("[e2e-pxelinux] PASS"), "no PASS line");
}
