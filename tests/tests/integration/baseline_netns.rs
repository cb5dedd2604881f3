//! Post-install scripts end to end (issue 13, "Proof"): `scripts/e2e-baseline.sh` creates
//! scripts (sh, python, bash) and two baselines over the API, gives a machine in a client
//! namespace a DHCP lease, takes its install task's token from its boot script, checks that
//! a wrong token, an unknown task and a forged report get the same 403, then has the
//! machine pull `bundle.sh` with curl and run it: the scripts run in order and once, the
//! bundle stops at the failing one with its exit code, and the three reports are in the
//! host's report list and the event log. About 5 seconds.

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

/// A machine pulls and runs its post-install bundle and reports back.
#[test]
fn a_machine_pulls_its_bundle_runs_it_and_reports_back() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-baseline.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .output()
        .expect("run e2e-baseline.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-baseline.sh failed");
    assert!(text.contains("[e2e-baseline] PASS"), "no PASS line");
}
