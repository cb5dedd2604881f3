//! UEFI HTTP boot end to end (issue 12 "UEFI HTTP boot", Proof: "OVMF HTTP boot"): Debian's
//! OVMF has its own HTTP boot client, so `scripts/e2e-httpboot.sh` proves it with real
//! firmware rather than a crafted client. `/boot/ipxe.efi` is served as `application/efi`;
//! a QEMU q35 OVMF machine whose PXE attempts fail sends its `HTTPClient:Arch:00016`
//! DISCOVER, gets architecture 16's URL with vendor class `HTTPClient`, downloads ipxe.efi
//! over HTTP and starts it, and iPXE runs its Bootlane script (the marker on the serial
//! console).

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

/// OVMF's HTTPv4 boot option → ipxe.efi by URL → the iPXE script.
#[test]
fn ovmf_http_boot_downloads_ipxe_by_url_and_runs_the_script() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-httpboot.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .output()
        .expect("run e2e-httpboot.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-httpboot.sh failed");
    assert!(text.contains("[e2e-httpboot] PASS"), "no PASS line");
}
