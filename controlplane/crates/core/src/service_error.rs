//! The error type shared by the services behind the REST API (DNS records and settings,
//! the boot catalog of hosts and profiles, DHCP administration), and serde helpers their
//! inputs share. Each variant maps to one HTTP status in
//! `bootlane::api::error::ApiError`; the message is written for the API client
//! (what is wrong and how to fix it). No state.

use serde::{Deserialize, Deserializer};

use crate::store::StoreError;

/// A failed service operation.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A value is invalid, or a change needs a restart (400); the message says which and why.
    #[error("{0}")]
    Invalid(String),
    /// Clashes with existing data, e.g. a duplicate (409); the message names the clash.
    #[error("{0}")]
    Conflict(String),
    /// No such resource (404).
    #[error("{0}")]
    NotFound(String),
    /// A credential other than the session (a task token) is wrong, expired or revoked
    /// (403); the message never says which.
    #[error("{0}")]
    Forbidden(String),
    /// The store failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Larger than a configured maximum, e.g. `[files] max_upload_bytes` (413).
    #[error("{0}")]
    TooLarge(String),
    /// Not enough free space on a volume, e.g. the boot root's (507).
    #[error("{0}")]
    NoSpace(String),
    /// A device Bootlane drives (a BMC) failed, refused or did not answer (502); the
    /// message names the device and the cause.
    #[error("{0}")]
    Upstream(String),
    /// A file-system operation failed (500); `what` says which, `source` why.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl ServiceError {
    /// [`ServiceError::Io`] for `what`, or [`ServiceError::NoSpace`] when the cause is
    /// ENOSPC or EDQUOT (the disk or the quota is full).
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        let what = what.into();
        if matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
            return Self::NoSpace(format!("{what}: the volume is full"));
        }
        Self::Io { what, source }
    }
}

/// Deserialises a field that may be absent (outer `None`: keep the stored value), `null`
/// (inner `None`: clear it) or a value — the merge semantics of every PUT.
///
/// # Errors
/// The inner type's deserialisation errors.
pub fn double_option<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Checks a free-text field: at most `max` bytes and no control characters; answers it
/// unchanged.
///
/// # Errors
/// [`ServiceError::Invalid`] naming `field`.
pub fn short_text(field: &str, v: &str, max: usize) -> Result<String, ServiceError> {
    if v.len() > max || v.chars().any(|c| c.is_control()) {
        return Err(ServiceError::Invalid(format!(
            "'{field}' must be at most {max} bytes without control characters"
        )));
    }
    Ok(v.to_string())
}
