//! BMC passwords at rest (stored encrypted with a key kept in the data directory, mode
//! 0600): XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`) with a random 32-byte key
//! in `<data_dir>/bmc.key`, created on first use with mode 0600 (and put back to 0600
//! when found looser). Each sealed value is `v1:` + hex(24-byte random nonce ‖
//! ciphertext ‖ tag); the associated data names the purpose, so a sealed BMC password
//! cannot be passed off as anything else. Losing the key file loses the stored
//! passwords (they must be entered again), nothing else.
//!
//! State: the key, in memory, for the life of the service.

use std::{io::Write, os::unix::fs::PermissionsExt, path::Path};

use chacha20poly1305::{
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
    XChaCha20Poly1305, XNonce,
};

use bootlane_core::service_error::ServiceError;

/// File name of the key in the data directory.
pub const KEY_FILE: &str = "bmc.key";
const PREFIX: &str = "v1:";
const AAD: &[u8] = b"bootlane bmc password v1";
const NONCE_LEN: usize = 24;

/// Seals and opens BMC passwords with the data directory's key.
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// Reads `<data_dir>/bmc.key`, creating it (32 random bytes, mode 0600) when absent.
    ///
    /// # Errors
    /// [`ServiceError::Io`] when the file cannot be read or written, or
    /// [`ServiceError::Invalid`] when it is not 32 bytes long.
    pub fn open(data_dir: &Path) -> Result<Self, ServiceError> {
        let path = data_dir.join(KEY_FILE);
        let key = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode_0600()
            .open(&path)
        {
            Ok(mut f) => {
                let key = XChaCha20Poly1305::generate_key(&mut OsRng);
                f.write_all(&key)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| ServiceError::io(format!("writing the BMC key {}", path.display()), e))?;
                key.to_vec()
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::metadata(&path)
                    .map_err(|e| ServiceError::io(format!("reading the BMC key {}", path.display()), e))?;
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!(path = %path.display(), "the BMC key was readable by others; set to mode 0600");
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                        .map_err(|e| ServiceError::io(format!("restricting the BMC key {}", path.display()), e))?;
                }
                std::fs::read(&path)
                    .map_err(|e| ServiceError::io(format!("reading the BMC key {}", path.display()), e))?
            }
            Err(e) => return Err(ServiceError::io(format!("creating the BMC key {}", path.display()), e)),
        };
        let cipher = XChaCha20Poly1305::new_from_slice(&key).map_err(|_| {
            ServiceError::Invalid(format!(
                "the BMC key {} is not 32 bytes; restore it from a backup, or delete it and enter the BMC passwords again",
                path.display()
            ))
        })?;
        Ok(Self { cipher })
    }

    /// Seals `plain` (a fresh nonce each time, so equal passwords seal differently).
    pub fn seal(&self, plain: &str) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ct = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plain.as_bytes(),
                    aad: AAD,
                },
            )
            .expect("XChaCha20-Poly1305 encryption of an in-memory buffer cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        format!("{PREFIX}{}", hex::encode(out))
    }

    /// Opens a value from [`SecretBox::seal`].
    ///
    /// # Errors
    /// [`ServiceError::Conflict`] when it is malformed or was sealed with another key (the
    /// key file was replaced): the password must be entered again.
    pub fn open_sealed(&self, sealed: &str) -> Result<String, ServiceError> {
        let bad = || {
            ServiceError::Conflict(
                "the stored BMC password cannot be decrypted with this data directory's bmc.key; set the password again (PUT with 'password')".into(),
            )
        };
        let raw = sealed
            .strip_prefix(PREFIX)
            .and_then(|h| hex::decode(h).ok())
            .filter(|r| r.len() >= NONCE_LEN)
            .ok_or_else(bad)?;
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: AAD })
            .map_err(|_| bad())?;
        String::from_utf8(plain).map_err(|_| bad())
    }
}

impl bootlane_boot::inventory::service::PasswordSealer for SecretBox {
    fn seal(&self, plain: &str) -> String {
        SecretBox::seal(self, plain)
    }

    fn is_sealed(&self, stored: &str) -> bool {
        stored.starts_with(PREFIX)
    }
}

/// `OpenOptions::mode(0o600)` under a name that says why.
trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}

#[cfg(test)]
mod tests {
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
