//! ARM64 network boot end to end (issue 12 "ARM64", Proof: "AAVMF on `qemu-system-aarch64`
//! to the ARM64 kernel"): `scripts/e2e-arm64.sh` checks that Debian's signed ARM64 GRUB is
//! architecture 11's boot file in the boot root, puts the real ARM64 installer kernel and
//! initrd there through the file API, checks the generated menu at the d-i GRUB's prefix
//! against `boot-config?format=grub`, and boots `qemu-system-aarch64 -M virt` with AAVMF
//! through GRUB to the ARM64 kernel's "Linux version" line (about 2 minutes under TCG).

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

/// AAVMF → grubaa64.efi (architecture 11) → the generated menu → the ARM64 installer kernel.
#[test]
fn aavmf_boots_the_arm64_installer_kernel_through_grub() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-arm64.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .output()
        .expect("run e2e-arm64.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-arm64.sh failed");
    assert!(text.contains("[e2e-arm64] PASS"), "no PASS line");
}
