//! Post-install scripts end to end: `scripts/e2e-baseline.sh` creates scripts (sh, python,
//! bash) and two baselines over the API, gives a machine in a client namespace a DHCP
//! lease, takes its install task's token from its boot script, checks that a wrong token,
//! an unknown task and a forged report get the same 403, then has the machine pull
//! `bundle.sh` with curl and run it: the scripts run in order and once, the bundle stops at
//! the failing one with its exit code, and the three reports are in the host's report list
//! and the event log. About 5 seconds.

use bootlane_tests::run_e2e;

/// A machine pulls and runs its post-install bundle and reports back.
#[test]
fn a_machine_pulls_its_bundle_runs_it_and_reports_back() {
    run_e2e("e2e-baseline.sh", "e2e-baseline");
}
