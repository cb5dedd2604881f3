//! Bootlane's privileged integration tests (one binary; run by `cargo xtask test` as root).

// DNS against the real binary in network namespaces: dig/kdig from two client subnets,
// dnsmasq as upstream, live settings, kill -9 durability, garbage input.
mod dns_netns;
