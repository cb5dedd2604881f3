//! Bootlane's DNS service: the XDP program's loader and its BPF maps (the fast path for local A/AAAA), the user-space server for everything the fast path passes up (records, forwarding, RRL, DNS64, zone transfers) and the traffic statistics read from the maps.

pub mod dataplane;
pub mod dns;
pub mod stats;
