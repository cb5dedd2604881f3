//! BMC passwords at rest, sealed ([`bootlane_identity::sealed`]: XChaCha20-Poly1305) with a
//! random 32-byte key in `<data_dir>/bmc.key` (mode 0600) and associated data naming the
//! purpose, so a sealed BMC password cannot be passed off as anything else. Losing the
//! key file loses the stored passwords (they must be entered again), nothing else.
//!
//! State: the key, in memory, for the life of the service.

use std::path::Path;

use bootlane_core::service_error::ServiceError;
use bootlane_identity::sealed::{KeySpec, Sealer};

/// File name of the key in the data directory.
pub const KEY_FILE: &str = "bmc.key";
const SPEC: KeySpec = KeySpec {
    file: KEY_FILE,
    aad: b"bootlane bmc password v1",
    what: "BMC key",
    when_lost: "delete it and enter the BMC passwords again",
};

/// Seals and opens BMC passwords with the data directory's key ([`Sealer`]).
#[derive(Debug)]
pub struct SecretBox {
    sealer: Sealer,
}

impl SecretBox {
    /// Reads `<data_dir>/bmc.key`, creating it (32 random bytes, mode 0600) when absent.
    ///
    /// # Errors
    /// [`ServiceError::Io`] when the file cannot be read or written, or
    /// [`ServiceError::Invalid`] when it is not 32 bytes long.
    pub fn open(data_dir: &Path) -> Result<Self, ServiceError> {
        Ok(Self {
            sealer: Sealer::open(data_dir, SPEC)?,
        })
    }

    /// Seals `plain` (a fresh nonce each time, so equal passwords seal differently).
    pub fn seal(&self, plain: &str) -> String {
        self.sealer.seal(plain.as_bytes())
    }

    /// Opens a value from [`SecretBox::seal`].
    ///
    /// # Errors
    /// [`ServiceError::Conflict`] when it is malformed or was sealed with another key (the
    /// key file was replaced): the password must be entered again.
    pub fn open_sealed(&self, sealed: &str) -> Result<String, ServiceError> {
        self.sealer
            .open_sealed(sealed)
            .and_then(|p| String::from_utf8(p).ok())
            .ok_or_else(|| {
                ServiceError::Conflict(
                    "the stored BMC password cannot be decrypted with this data directory's bmc.key; set the password again (PUT with 'password')".into(),
                )
            })
    }
}

impl bootlane_boot::inventory::service::PasswordSealer for SecretBox {
    fn seal(&self, plain: &str) -> String {
        SecretBox::seal(self, plain)
    }

    fn is_sealed(&self, stored: &str) -> bool {
        Sealer::is_sealed(stored)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_key_file_marks_a_data_directory_for_the_boot_guard() {
        assert!(bootlane_boot::boot::guard::DATA_DIR_MARKERS.contains(&KEY_FILE));
    }

    #[test]
    fn key_file_is_0600_and_values_round_trip_only_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = SecretBox::open(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let s1 = a.seal("s3cret!");
        let s2 = a.seal("s3cret!");
        assert_ne!(s1, s2, "a fresh nonce each time");
        assert!(s1.starts_with("v1:") && !s1.contains("s3cret"));
        assert_eq!(a.open_sealed(&s1).unwrap(), "s3cret!");
        // The same key file again (a restart) opens it; a looser mode is put back to 0600.
        std::fs::set_permissions(dir.path().join(KEY_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
        let again = SecretBox::open(dir.path()).unwrap();
        assert_eq!(again.open_sealed(&s1).unwrap(), "s3cret!");
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Another key, a flipped byte, garbage: refused.
        let other = SecretBox::open(tempfile::tempdir().unwrap().path()).unwrap();
        assert!(matches!(other.open_sealed(&s1), Err(ServiceError::Conflict(_))));
        let mut flipped = s1.clone();
        let last = flipped.pop().unwrap();
        flipped.push(if last == '0' { '1' } else { '0' });
        assert!(a.open_sealed(&flipped).is_err());
        assert!(a.open_sealed("plain").is_err());
        // A key file of the wrong length is a clear error.
        let bad = tempfile::tempdir().unwrap();
        std::fs::write(bad.path().join(KEY_FILE), b"short").unwrap();
        assert!(matches!(SecretBox::open(bad.path()), Err(ServiceError::Invalid(m)) if m.contains("32 bytes")));
    }
}
