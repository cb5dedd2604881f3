//! Bootlane's DHCP service: DHCPv4 (full server, proxyDHCP on 67 and 4011, relays through giaddr), DHCPv6 with its lease store, reservations and the boot decisions that pick next-server and the NBP for each client's architecture.

pub mod dhcp;
