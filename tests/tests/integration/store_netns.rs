//! The store end to end: `scripts/e2e-store.sh` serves a catalog source with
//! `python3 -m http.server` in a namespace, imports an item from it and one from the
//! built-in source, checks that a tampered item is refused with nothing written, and that a
//! stopped source is reported without hiding the built-in items.

use bootlane_tests::run_e2e;

/// HTTP and built-in sources, a tampered item, a failing source.
#[test]
fn catalog_sources_import_and_a_tampered_item_is_refused() {
    run_e2e("e2e-store.sh", "e2e-store");
}
