//! Boot sessions with real firmware: `scripts/e2e-sessions.sh` boots a QEMU BIOS machine
//! (iPXE ROM) whose profile names a kernel the boot root does not have (its session is
//! `stalled`, naming the file), then puts a rival dnsmasq that answers first on the same
//! bridge: the doctor reports it as an error and a second machine's session says it took
//! the rival's offer. Two short BIOS boots (about a minute in all), so it runs in the light
//! lane beside the long firmware boots.

use bootlane_tests::run_e2e;

/// A missing kernel and another server's offer, each named by the session's verdict.
#[test]
fn sessions_name_a_missing_kernel_and_another_servers_offer() {
    run_e2e("e2e-sessions.sh", "e2e-sessions");
}
