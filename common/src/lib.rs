//! The kernel/user ABI of Bootlane: every type and constant that both the XDP program
//! (`dataplane-ebpf`) and the control plane (`controlplane`, feature `user`) read or write
//! in a BPF map. Organised by program; it holds no state and has no behaviour beyond
//! small `const fn` helpers, so it builds for `bpfel-unknown-none` as well as the host.
#![no_std]

pub mod dns;
