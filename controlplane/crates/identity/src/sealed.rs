//! Secrets at rest: values the server must read back in clear (BMC passwords, TOTP
//! secrets) are stored sealed with XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`)
//! under a random 32-byte key in a file of the data directory, created on first use with
//! mode 0600 (and put back to 0600 when found looser). Each purpose has its own key file
//! and associated data ([`KeySpec`]), so a value sealed for one purpose cannot be passed
//! off as another. A sealed value is `v1:` + hex(24-byte random nonce ‖ ciphertext ‖
//! tag). Losing a key file loses the values sealed with it, nothing else.
//!
//! State: the key, in memory, for the life of the [`Sealer`].

use std::{
    io::Write,
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::Path,
};

use chacha20poly1305::{
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
    XChaCha20Poly1305, XNonce,
};

use bootlane_core::service_error::ServiceError;

const PREFIX: &str = "v1:";
const NONCE_LEN: usize = 24;

/// One purpose's key: its file in the data directory, its associated data, and the words
/// its errors use.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// File name in the data directory (e.g. `bmc.key`).
    pub file: &'static str,
    /// Associated data bound to every value sealed with it (names the purpose).
    pub aad: &'static [u8],
    /// What the key is, in messages (e.g. `BMC key`).
    pub what: &'static str,
    /// What to do when the key file is damaged, in messages (e.g. `delete it and enter
    /// the BMC passwords again`).
    pub when_lost: &'static str,
}

/// Seals and opens values with one purpose's key.
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    aad: &'static [u8],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// Reads `<data_dir>/<spec.file>`, creating it (32 random bytes, mode 0600) when
    /// absent.
    ///
    /// # Errors
    /// [`ServiceError::Io`] when the file cannot be read or written, or
    /// [`ServiceError::Invalid`] when it is not 32 bytes long.
    pub fn open(data_dir: &Path, spec: KeySpec) -> Result<Self, ServiceError> {
        let path = data_dir.join(spec.file);
        let io = |doing: &str, e| ServiceError::io(format!("{doing} the {} {}", spec.what, path.display()), e);
        let key = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let key = XChaCha20Poly1305::generate_key(&mut OsRng);
                f.write_all(&key)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| io("writing", e))?;
                key.to_vec()
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::metadata(&path).map_err(|e| io("reading", e))?;
                if meta.permissions().mode() & 0o077 != 0 {
                    tracing::warn!(path = %path.display(), "the {} was readable by others; set to mode 0600", spec.what);
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                        .map_err(|e| io("restricting", e))?;
                }
                std::fs::read(&path).map_err(|e| io("reading", e))?
            }
            Err(e) => return Err(io("creating", e)),
        };
        let cipher = XChaCha20Poly1305::new_from_slice(&key).map_err(|_| {
            ServiceError::Invalid(format!(
                "the {} {} is not 32 bytes; restore it from a backup, or {}",
                spec.what,
                path.display(),
                spec.when_lost
            ))
        })?;
        Ok(Self { cipher, aad: spec.aad })
    }

    /// Seals `plain` (a fresh nonce each time, so equal values seal differently).
    pub fn seal(&self, plain: &[u8]) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ct = self
            .cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plain,
                    aad: self.aad,
                },
            )
            .expect("XChaCha20-Poly1305 encryption of an in-memory buffer cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        format!("{PREFIX}{}", hex::encode(out))
    }

    /// True when `stored` has the shape of a sealed value.
    pub fn is_sealed(stored: &str) -> bool {
        stored.starts_with(PREFIX)
    }

    /// Opens a value from [`Sealer::seal`]; `None` when it is malformed, was sealed with
    /// another key (the key file was replaced) or for another purpose.
    pub fn open_sealed(&self, sealed: &str) -> Option<Vec<u8>> {
        let raw = sealed
            .strip_prefix(PREFIX)
            .and_then(|h| hex::decode(h).ok())
            .filter(|r| r.len() >= NONCE_LEN)?;
        let (nonce, ct) = raw.split_at(NONCE_LEN);
        self.cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: self.aad })
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: KeySpec = KeySpec {
        file: "a.key",
        aad: b"purpose a",
        what: "A key",
        when_lost: "delete it",
    };

    #[test]
    fn values_open_only_with_their_key_and_purpose() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::open(dir.path(), A).unwrap();
        let sealed = s.seal(b"hunter2");
        assert!(Sealer::is_sealed(&sealed) && !sealed.contains("hunter2"));
        assert_ne!(sealed, s.seal(b"hunter2"), "a fresh nonce each time");
        assert_eq!(s.open_sealed(&sealed).unwrap(), b"hunter2");
        // The same key file, read again: still opens; another purpose's AAD does not.
        assert!(Sealer::open(dir.path(), A).unwrap().open_sealed(&sealed).is_some());
        std::fs::copy(dir.path().join("a.key"), dir.path().join("b.key")).unwrap();
        let b = Sealer::open(
            dir.path(),
            KeySpec {
                file: "b.key",
                aad: b"purpose b",
                ..A
            },
        )
        .unwrap();
        assert!(b.open_sealed(&sealed).is_none());
        assert!(s.open_sealed("v1:00").is_none() && s.open_sealed("plain").is_none());
        let mode = std::fs::metadata(dir.path().join("a.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join("short.key"), b"short").unwrap();
        let e = Sealer::open(dir.path(), KeySpec { file: "short.key", ..A }).unwrap_err();
        assert!(
            e.to_string()
                .contains("not 32 bytes; restore it from a backup, or delete it"),
            "{e}"
        );
    }
}
