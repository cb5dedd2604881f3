//! Secure Boot end to end (issue 12 "Secure Boot", Proof: "OVMF with Microsoft keys enrolled
//! and Secure Boot enforced: shim, GRUB, and the Debian installer kernel starts, and the
//! kernel log says Secure Boot is enabled. The same firmware handed plain iPXE refuses it"):
//! `scripts/e2e-secureboot.sh` puts the real installer in the boot root, marks a host
//! `secure_boot`, checks the profile preview's Secure Boot findings and the generated
//! `grub/grub.cfg-<mac>` over TFTP, HTTP and `boot-config?format=grub`, boots QEMU q35 with
//! `OVMF_CODE_4M.ms.fd` through shim and signed GRUB to the kernel's "Secure boot enabled"
//! line, then clears the flag and sees the same firmware refuse `ipxe.efi`.

use bootlane_tests::run_e2e;

/// OVMF (Secure Boot, Microsoft keys) → shim → signed GRUB → the signed installer kernel;
/// then the same firmware refuses unsigned iPXE.
#[test]
fn ovmf_secure_boot_boots_shim_grub_and_the_signed_kernel_and_refuses_ipxe() {
    run_e2e("e2e-secureboot.sh", "e2e-secureboot");
}
