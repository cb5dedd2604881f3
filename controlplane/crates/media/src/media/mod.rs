//! Boot media: the files of the boot root as an API resource ([`files`]: list, root space,
//! streamed upload, delete), the one function that turns a client-supplied path into a path
//! under the boot root ([`paths::resolve`]), and the analysis of the boot files the DHCP
//! architecture map hands out ([`bootloader`]: kind, PE machine type, iPXE version, right
//! file per architecture), and OS images ([`images`]: uploaded ISOs, read by [`iso`],
//! recognised by [`detect`]). Owns the `[files]` config section ([`FilesConfig`]); errors
//! are the service layer's [`bootlane_core::service_error::ServiceError`]. Holds no global state:
//! the boot root is read through the settings' shared cell on every request, so a live
//! change of `boot_root` applies at once.

pub mod bootloader;
pub mod detect;
pub mod files;
pub mod images;
pub mod iso;
pub mod paths;

use serde::{Deserialize, Serialize};

/// `[files]`: limits of the file API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FilesConfig {
    /// Largest `POST /api/v1/files/upload` (16 GiB); 413 beyond.
    pub max_upload_bytes: u64,
    /// The directory `POST /api/v1/os-images/import` takes existing ISOs from (paths relative
    /// to it); unset: import is off.
    pub import_dir: Option<std::path::PathBuf>,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self {
            max_upload_bytes: 16 << 30,
            import_dir: None,
        }
    }
}

impl FilesConfig {
    /// Checks the section: `max_upload_bytes` at least 1.
    ///
    /// # Errors
    /// A message naming the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.max_upload_bytes == 0 {
            anyhow::bail!("[files] max_upload_bytes must be at least 1");
        }
        Ok(())
    }
}
