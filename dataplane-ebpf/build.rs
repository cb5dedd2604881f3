//! Rebuilds the eBPF object when `bpf-linker` changes (aya-template pattern): cargo does
//! not track the linker as an input, so a new bpf-linker would otherwise leave a stale
//! object behind.

fn main() {
    if let Ok(linker) = which::which("bpf-linker") {
        println!("cargo:rerun-if-changed={}", linker.display());
    }
}
