//! Builds the XDP program (`dataplane-ebpf`) for the BPF target with aya-build and leaves
//! the object in `OUT_DIR/dataplane-ebpf`, where `src/dataplane` embeds it. With
//! `AYA_BUILD_SKIP=1` (CI lanes without bpf-linker) nothing is built and the binary
//! reports "built without XDP" at run time (cfg `bootlane_no_xdp`). With
//! `BOOTLANE_EBPF_OBJECT=<path>` that prebuilt object is embedded instead of building one.

use anyhow::Context as _;

fn main() -> anyhow::Result<()> {
    println!("cargo::rustc-check-cfg=cfg(bootlane_no_xdp)");
    println!("cargo::rerun-if-env-changed=AYA_BUILD_SKIP");
    let skip = std::env::var("AYA_BUILD_SKIP").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if skip {
        println!("cargo::rustc-cfg=bootlane_no_xdp");
        return Ok(());
    }
    // A prebuilt object (`cargo xtask fuzz` passes the one its debug build made): copied
    // as is, so builds with other flags or triples do not rebuild the program and `core`
    // for the BPF target (several minutes).
    println!("cargo::rerun-if-env-changed=BOOTLANE_EBPF_OBJECT");
    if let Some(object) = std::env::var_os("BOOTLANE_EBPF_OBJECT").filter(|v| !v.is_empty()) {
        let out = std::path::PathBuf::from(std::env::var("OUT_DIR").context("OUT_DIR not set")?);
        println!("cargo::rerun-if-changed={}", object.to_string_lossy());
        std::fs::copy(&object, out.join("dataplane-ebpf"))
            .with_context(|| format!("copying BOOTLANE_EBPF_OBJECT {}", object.to_string_lossy()))?;
        return Ok(());
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR not set")?;
    let root_dir = std::path::Path::new(&manifest)
        .ancestors()
        .nth(3)
        .context("crates/dns is not three levels below the workspace")?
        .join("dataplane-ebpf");
    let root_dir = root_dir.to_str().context("non-UTF-8 workspace path")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "dataplane-ebpf",
            root_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
    .context("building the XDP program dataplane-ebpf (set AYA_BUILD_SKIP=1 to build without it)")
}
