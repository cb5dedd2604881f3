//! The store end to end (issue 13 "Store", "Proof"): `scripts/e2e-store.sh` serves a
//! catalog source with `python3 -m http.server` in a namespace, imports an item from it and
//! one from the built-in source, checks that a tampered item is refused with nothing
//! written, and that a stopped source is reported without hiding the built-in items.

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

/// HTTP and built-in sources, a tampered item, a failing source.
#[test]
fn catalog_sources_import_and_a_tampered_item_is_refused() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-store.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .output()
        .expect("run e2e-store.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-store.sh failed");
    assert!(text.contains("[e2e-store] PASS"), "no PASS line");
}
