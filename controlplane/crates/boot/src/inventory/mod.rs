//! Inventory: the machines Bootlane knows. [`model`] holds the host record and its
//! validation, [`service`] its single write path and the reads the API and the boot
//! catalog use. Boot profiles and the iPXE script stay in [`crate::boot`]; a host refers
//! to a profile only by id.

pub mod baseline;
pub mod model;
pub mod service;

/// The MACs of hosts whose `secure_boot` flag is set: a receiver of the set
/// [`service::HostService`] publishes after every host write
/// ([`service::HostService::secure_boot_hosts`]), read per request by DHCP (`borrow()`):
/// their x86-64 UEFI boots get the signed shim instead of iPXE.
pub type SecureBootHosts = tokio::sync::watch::Receiver<std::collections::HashSet<bootlane_core::net::types::MacAddr>>;

/// A receiver of an empty, never changing set (a DHCP service wired without the
/// inventory, and tests).
pub fn no_secure_boot_hosts() -> SecureBootHosts {
    tokio::sync::watch::Sender::new(std::collections::HashSet::new()).subscribe()
}
