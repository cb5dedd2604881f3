//! Boot media (issue 9, sections "Files" and "Bootloaders"): the files of the boot root
//! as an API resource ([`files`]: list, root space, streamed upload, delete), the one
//! function that turns a client-supplied path into a path under the boot root
//! ([`paths::resolve`]), and the analysis of the boot files the DHCP architecture map
//! hands out ([`bootloader`]: kind, PE machine type, iPXE version, right file per
//! architecture). Owns the `[files]` config section ([`FilesConfig`]) and the media error
//! type ([`MediaError`]). Holds no global state: the boot root is read through the
//! settings' shared cell on every request, so a live change of `boot_root` applies at once.

pub mod bootloader;
pub mod files;
pub mod paths;

use serde::{Deserialize, Serialize};

/// `[files]`: limits of the file API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct FilesConfig {
    /// Largest file `POST /api/v1/files/upload` accepts, in bytes (413 beyond it).
    /// Default 17179869184 (16 GiB).
    pub max_upload_bytes: u64,
}

impl Default for FilesConfig {
    fn default() -> Self {
        Self {
            max_upload_bytes: 16 << 30,
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

/// A failed media operation. The media API needs answers the shared
/// [`ServiceError`](crate::service_error::ServiceError) does not have (413, 507, I/O
/// failures with their source), so it has its own type; each variant maps to one HTTP
/// status in [`ApiError`](crate::api::error::ApiError) and its message is written for the
/// API client.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// A bad input, e.g. a refused path (400); the message names the problem.
    #[error("{0}")]
    Invalid(String),
    /// No such file or directory (404).
    #[error("{0}")]
    NotFound(String),
    /// Clashes with what exists: the file exists and `overwrite` is false, the directory
    /// is not empty and `recursive` is false (409).
    #[error("{0}")]
    Conflict(String),
    /// Larger than `[files] max_upload_bytes` (413).
    #[error("{0}")]
    TooLarge(String),
    /// Not enough free space on the boot root's volume (507).
    #[error("{0}")]
    NoSpace(String),
    /// A file-system operation failed (500); `what` says which.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl MediaError {
    /// [`MediaError::Io`] for `what`, or [`MediaError::NoSpace`] when the cause is ENOSPC
    /// or EDQUOT (the disk or the quota is full).
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        let what = what.into();
        if matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
            return Self::NoSpace(format!("{what}: the boot root's volume is full"));
        }
        Self::Io { what, source }
    }
}
