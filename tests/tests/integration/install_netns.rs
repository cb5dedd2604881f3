//! Unattended installs end to end: `scripts/e2e-install.sh` puts the real Debian
//! installer's kernel and initrd in the boot root through the file API, makes an answer
//! template from the Debian preset, registers a QEMU BIOS machine as a host with an install
//! task, checks that 1,000 answer requests with random tokens are all refused or
//! rate-limited with one identical refusal, boots the machine: the installer fetches its
//! preseed (the task becomes `installing`) and its early command reports progress (an
//! event); then a `done` report makes the task `installed` and a second boot of the same
//! machine gets the local-boot script. About 2-3 minutes under TCG.

use bootlane_tests::run_e2e;

/// The whole install flow with the real Debian installer.
#[test]
fn debian_installer_fetches_its_preseed_and_reports_back() {
    run_e2e("e2e-install.sh", "e2e-install");
}
