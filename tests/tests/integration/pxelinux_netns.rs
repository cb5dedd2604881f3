//! PXELINUX end to end (SeaBIOS through PXELINUX to the installer kernel):
//! `scripts/e2e-pxelinux.sh` maps BIOS clients to `pxelinux.0`, puts the real Debian
//! installer's kernel and initrd in the boot root through the file API, checks the generated
//! `pxelinux.cfg/01-<mac>` over TFTP, HTTP and the `boot-config?format=pxelinux` preview (and
//! `default`, and "file not found" for other names), then boots a QEMU SeaBIOS machine (e1000,
//! `-boot n`) through PXELINUX to the installer kernel's "Linux version" line on its serial
//! console, and prints the boot's duration.

use bootlane_tests::run_e2e;

/// SeaBIOS → pxelinux.0 → the generated pxelinux.cfg/01-<mac> → the installer kernel.
#[test]
fn seabios_boots_the_installer_kernel_through_pxelinux() {
    run_e2e("e2e-pxelinux.sh", "e2e-pxelinux");
}
