//! Inventory: the machines Bootlane knows. [`model`] holds the host record and its
//! validation, [`service`] its single write path and the reads the API and the boot
//! catalog use. Boot profiles and the iPXE script stay in [`crate::boot`]; a host refers
//! to a profile only by id.

pub mod baseline;
pub mod model;
pub mod service;

/// The MACs of hosts whose `secure_boot` flag is set, kept by
/// [`service::HostService`] and read per request by DHCP: their x86-64 UEFI boots get the
/// signed shim instead of iPXE.
pub type SecureBootHosts =
    std::sync::Arc<std::sync::RwLock<std::collections::HashSet<bootlane_core::net::types::MacAddr>>>;
