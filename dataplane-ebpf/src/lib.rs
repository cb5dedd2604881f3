//! Stub library target of the XDP DNS responder crate (aya-template layout): the real
//! program is the `dataplane-ebpf` binary in `src/main.rs`, built for `bpfel-unknown-none`
//! by `controlplane/build.rs`. This target exists so host tooling (`cargo metadata`,
//! `cargo clippy --workspace`) has something harmless to look at.
#![no_std]
