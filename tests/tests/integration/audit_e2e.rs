//! The audit log end to end (`scripts/e2e-audit.sh`): the real binary on loopback with
//! `[audit] syslog` into a real rsyslogd, which must parse every copy as RFC 5424; `bootlane
//! audit verify` says ok while the server runs, an entry edited in the data directory makes
//! the CLI and `GET /audit-logs/verify` name the break; the password policy's 400 and the
//! failed-login 429 through curl. A few seconds.

use bootlane_tests::run_e2e;

/// The hash chain holds, an edit is found, and syslog gets an RFC 5424 copy.
#[test]
fn audit_chain_verifies_finds_an_edit_and_reaches_syslog() {
    run_e2e("e2e-audit.sh", "e2e-audit");
}
