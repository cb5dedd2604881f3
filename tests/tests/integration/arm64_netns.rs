//! ARM64 network boot end to end (issue 12 "ARM64", Proof: "AAVMF on `qemu-system-aarch64`
//! to the ARM64 kernel"): `scripts/e2e-arm64.sh` checks that Debian's signed ARM64 GRUB is
//! architecture 11's boot file in the boot root, puts the real ARM64 installer kernel and
//! initrd there through the file API, checks the generated menu at the d-i GRUB's prefix
//! against `boot-config?format=grub`, and boots `qemu-system-aarch64 -M virt` with AAVMF
//! through GRUB to the ARM64 kernel's "Linux version" line (about 2 minutes under TCG).

use bootlane_tests::run_e2e;

/// AAVMF → grubaa64.efi (architecture 11) → the generated menu → the ARM64 installer kernel.
#[test]
fn aavmf_boots_the_arm64_installer_kernel_through_grub() {
    run_e2e("e2e-arm64.sh", "e2e-arm64");
}
