//! Builds the XDP program (`dataplane-ebpf`) for the BPF target with aya-build and leaves
//! the object in `OUT_DIR/dataplane-ebpf`, where `src/dataplane` embeds it. With
//! `AYA_BUILD_SKIP=1` (CI lanes without bpf-linker) nothing is built and the binary
//! reports "built without XDP" at run time (cfg `bootlane_no_xdp`). With
//! `BOOTLANE_EBPF_OBJECT=<path>` that prebuilt object is embedded instead of building one.
//!
//! Built objects are cached by content in `<target dir>/ebpf-cache/<key>/`: every build
//! unit of this crate (`cargo check`, `cargo test`, `cargo build`, each profile and
//! feature set) has an `OUT_DIR` of its own, and aya-build builds `core` and the program
//! from scratch in each (about two minutes of CPU). The key hashes what the object is made
//! from: every file of `dataplane-ebpf/` and `common/`, the workspace's `Cargo.lock` and
//! `Cargo.toml`, the nightly toolchain's `rustc -vV`, and the target variables aya-build
//! reads. A hit is copied into `OUT_DIR`; a miss is built by aya-build and then cached.

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
    let workspace = std::path::Path::new(&manifest)
        .ancestors()
        .nth(3)
        .context("crates/dns is not three levels below the workspace")?
        .to_path_buf();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").context("OUT_DIR not set")?);
    let cached = cache_entry(&workspace, &out);
    if let Some(c) = cached.as_ref().filter(|c| c.is_file()) {
        // What aya-build would have asked cargo to watch, and what the key read.
        for dir in ["dataplane-ebpf", "common", "Cargo.lock", "Cargo.toml"] {
            println!("cargo::rerun-if-changed={}", workspace.join(dir).display());
        }
        for var in KEY_VARS {
            println!("cargo::rerun-if-env-changed={var}");
        }
        std::fs::copy(c, out.join("dataplane-ebpf")).with_context(|| format!("copying the cached {}", c.display()))?;
        return Ok(());
    }
    let root_dir = workspace.join("dataplane-ebpf");
    let root_dir = root_dir.to_str().context("non-UTF-8 workspace path")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "dataplane-ebpf",
            root_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
    .context("building the XDP program dataplane-ebpf (set AYA_BUILD_SKIP=1 to build without it)")?;
    if let Some(c) = cached {
        // Written beside, then renamed: a build running at the same time never reads half
        // an object. A cache that cannot be written only costs the next build its time.
        let tmp = c.with_extension(format!("tmp{}", std::process::id()));
        let stored = c
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::copy(out.join("dataplane-ebpf"), &tmp))
            .and_then(|_| std::fs::rename(&tmp, &c));
        if let Err(e) = stored {
            println!("cargo::warning=could not cache the XDP object in {}: {e}", c.display());
        }
    }
    Ok(())
}

/// The environment variables aya-build reads to pick the BPF target (part of the key).
const KEY_VARS: [&str; 4] = [
    "BPF_TARGET_ARCH",
    "AYA_BPF_TARGET_ARCH",
    "HOST",
    "CARGO_CFG_TARGET_ARCH",
];

/// The cache entry for the object the sources in `workspace` make, or `None` when the
/// target directory (the ancestor of `out` holding cargo's `CACHEDIR.TAG`) or the nightly
/// toolchain cannot be found: then the object is built as usual.
fn cache_entry(workspace: &std::path::Path, out: &std::path::Path) -> Option<std::path::PathBuf> {
    use std::hash::{Hash, Hasher};
    let target = out.ancestors().find(|p| p.join("CACHEDIR.TAG").is_file())?;
    let rustc = std::process::Command::new("rustup")
        .args(["run", "nightly", "rustc", "-vV"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rustc.stdout.hash(&mut h);
    for var in KEY_VARS {
        std::env::var(var).ok().hash(&mut h);
    }
    let mut files = Vec::new();
    for dir in ["dataplane-ebpf", "common"] {
        walk(&workspace.join(dir), &mut files);
    }
    files.sort();
    files.extend(["Cargo.lock", "Cargo.toml"].map(|f| workspace.join(f)));
    for f in &files {
        f.strip_prefix(workspace).unwrap_or(f).hash(&mut h);
        std::fs::read(f).ok()?.hash(&mut h);
    }
    Some(
        target
            .join("ebpf-cache")
            .join(format!("{:016x}", h.finish()))
            .join("dataplane-ebpf"),
    )
}

/// Every file under `dir` (a `target` directory left out).
fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if e.file_name() != "target" {
                walk(&p, files);
            }
        } else {
            files.push(p);
        }
    }
}
