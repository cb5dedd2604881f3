//! Inventory: the machines Bootlane knows. [`model`] holds the host record and its
//! validation, [`service`] its single write path and the reads the API and the boot
//! catalog use. Boot profiles and the iPXE script stay in [`crate::boot`]; a host refers
//! to a profile only by id.

pub mod model;
pub mod service;
