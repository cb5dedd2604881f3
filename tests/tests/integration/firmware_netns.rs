//! The firmware boot tests, run side by side (each script makes its own namespaces and
//! subnet, so the slow software-emulated boots overlap and the suite stays well inside CI's
//! limit):
//! - Secure Boot (`scripts/e2e-secureboot.sh`; OVMF with Microsoft keys enrolled and
//!   Secure Boot enforced boots shim, GRUB and the Debian installer kernel, whose log says
//!   Secure Boot is enabled; the same firmware handed plain iPXE refuses it): a host
//!   marked `secure_boot`, the profile preview's Secure Boot findings, the
//!   generated `grub/grub.cfg-<mac>` over TFTP, HTTP and `boot-config?format=grub`, QEMU q35
//!   with `OVMF_CODE_4M.ms.fd` through shim and signed GRUB to "Secure boot enabled", then
//!   the flag cleared and `ipxe.efi` refused ("Access Denied").
//! - UEFI HTTP boot with OVMF (`scripts/e2e-httpboot.sh`): `/boot/ipxe.efi`
//!   served as `application/efi`; OVMF's own HTTP client sends its `HTTPClient:Arch:00016`
//!   DISCOVER, gets architecture 16's URL with vendor class `HTTPClient`, downloads
//!   ipxe.efi and starts it, and iPXE runs its Bootlane script.
//! - ARM64 (`scripts/e2e-arm64.sh`, AAVMF on `qemu-system-aarch64` to the ARM64 kernel):
//!   architecture 11's boot file is Debian's signed ARM64 GRUB, whose generated
//!   menu (at the d-i GRUB's prefix) boots the real ARM64 installer kernel under AAVMF.
//! - IPv6 (`scripts/e2e-ipv6.sh`, OVMF over IPv6 only, with no IPv4 address on the lab
//!   link, to its iPXE script): radvd with the managed flag, `dhclient -6` leased from the
//!   DHCPv6 pool with the boot-file URL (and by Information-Request), TFTP over IPv6, OVMF's
//!   PXEv6 to ipxe.efi, iPXE's own DHCPv6 to its script over HTTP/IPv6, then proxy mode
//!   set live through `PUT /services/dhcp`.

use bootlane_tests::run_e2e_parallel;

/// Secure Boot, UEFI HTTP boot, ARM64 and IPv6, at once.
#[test]
fn secure_boot_http_boot_arm64_and_ipv6_firmware_boots() {
    run_e2e_parallel(&[
        ("e2e-secureboot.sh", "e2e-secureboot"),
        ("e2e-httpboot.sh", "e2e-httpboot"),
        ("e2e-arm64.sh", "e2e-arm64"),
        ("e2e-ipv6.sh", "e2e-ipv6"),
    ]);
}
