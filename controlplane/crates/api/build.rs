//! Recompiles the API crate when the web UI build (embedded by `api::ui`) appears or
//! changes: watches `web/dist` once it exists, else `web/` (where it will be created).
//! Never runs npm.

fn main() {
    let web = std::path::Path::new("../../../web");
    println!(
        "cargo::rerun-if-changed={}",
        if web.join("dist").exists() {
            "../../../web/dist"
        } else {
            "../../../web"
        }
    );
}
