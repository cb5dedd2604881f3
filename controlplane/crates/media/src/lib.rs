//! What a machine boots from: OS images (ISO and UDF trees, extraction, boot files found in them), the NFS exports installers mount, and the general and netboot settings that place the boot root.

pub mod media;
pub mod nfs;
pub mod settings;
