//! UEFI HTTP boot end to end (issue 12 "UEFI HTTP boot", Proof: "OVMF HTTP boot"): Debian's
//! OVMF has its own HTTP boot client, so `scripts/e2e-httpboot.sh` proves it with real
//! firmware rather than a crafted client. `/boot/ipxe.efi` is served as `application/efi`;
//! a QEMU q35 OVMF machine whose PXE attempts fail sends its `HTTPClient:Arch:00016`
//! DISCOVER, gets architecture 16's URL with vendor class `HTTPClient`, downloads ipxe.efi
//! over HTTP and starts it, and iPXE runs its Bootlane script (the marker on the serial
//! console).

use bootlane_tests::run_e2e;

/// OVMF's HTTPv4 boot option → ipxe.efi by URL → the iPXE script.
#[test]
fn ovmf_http_boot_downloads_ipxe_by_url_and_runs_the_script() {
    run_e2e("e2e-httpboot.sh", "e2e-httpboot");
}
