//! HTTPS for the management listener: the certificate in force ([`CertStore`], a rustls
//! [`ResolvesServerCert`] whose certificate is swapped atomically, so a reload never
//! drops a connection), where it comes from, and the TLS acceptor built over it.
//!
//! Sources (`[api] tls`, see `bootlane::config::TlsMode`):
//! - `self-signed`: made with rcgen at first start (ECDSA P-256, 825 days, the names of
//!   `[api] tls_names`), stored in `<data_dir>/tls/` (key mode 0600, directory 0700)
//!   and reused on later starts until fewer than 30 days remain; its SHA-256
//!   fingerprint is logged and shown by `GET /api/v1/status` so a user can check it
//!   against the browser's warning.
//! - `files`: a PEM chain and key, reloaded on SIGHUP and when either file changes
//!   (checked every [`RELOAD_POLL`]); a file that fails to load is logged and the
//!   previous certificate stays in force.
//! - `acme`: issued and renewed by an ACME server (RFC 8555), stored in `<data_dir>/tls/acme/`.
//!
//! Only HTTP/1.1 is offered (ALPN `http/1.1`), TLS 1.2 and 1.3 with rustls' safe
//! defaults over ring. State: the [`CertStore`] shared by the acceptor, the reloaders
//! and the status route; nothing global.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::{Duration, SystemTime},
};

use rustls::{
    crypto::CryptoProvider,
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

/// How often `files` mode checks its two files for a change.
pub const RELOAD_POLL: Duration = Duration::from_secs(5);
/// Lifetime of a self-signed certificate (the longest Apple platforms accept for a
/// certificate a user trusts by hand).
pub const SELF_SIGNED_DAYS: i64 = 825;
/// A stored self-signed certificate with less than this left is replaced at start.
pub const SELF_SIGNED_RENEW_DAYS: i64 = 30;

/// Errors loading or making a certificate; each names the file involved.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The PEM text holds no certificate, or one that does not parse.
    #[error("{0}: no usable PEM certificate")]
    NoCertificate(String),
    /// The PEM text holds no private key (PKCS#8, PKCS#1 or SEC1).
    #[error("{0}: no usable PEM private key")]
    NoKey(String),
    /// The key is not usable with rustls, or does not match the certificate.
    #[error("{what}: {source}")]
    Key {
        /// The key's file or origin.
        what: String,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// The certificate's validity could not be read (not X.509 DER).
    #[error("{0}: the certificate does not parse as X.509")]
    NotX509(String),
    /// rcgen failed to make a certificate or key.
    #[error("making a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// The TLS configuration could not be built.
    #[error("TLS configuration: {0}")]
    Config(#[source] rustls::Error),
}

/// What the certificate in force is (`GET /api/v1/status` field `tls`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CertInfo {
    /// Where it comes from: `self-signed`, `files` or `acme`.
    pub source: String,
    /// SHA-256 of the leaf certificate's DER, upper-case hex pairs joined by `:` (the
    /// form browsers and `openssl x509 -fingerprint -sha256` show).
    pub fingerprint_sha256: String,
    /// Start of validity (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String)]
    pub not_before: time::OffsetDateTime,
    /// End of validity (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String)]
    pub not_after: time::OffsetDateTime,
}

/// A loaded certificate chain with its key and description.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Chain and signing key, as rustls serves them.
    pub key: Arc<CertifiedKey>,
    /// What it is.
    pub info: CertInfo,
}

/// The certificate in force, swapped atomically by the reloaders (see the module docs).
#[derive(Debug)]
pub struct CertStore {
    current: RwLock<Loaded>,
}

impl CertStore {
    /// A store serving `loaded`.
    pub fn new(loaded: Loaded) -> Arc<Self> {
        Arc::new(Self {
            current: RwLock::new(loaded),
        })
    }

    /// Serves `loaded` from the next handshake on; connections already open keep theirs.
    pub fn set(&self, loaded: Loaded) {
        tracing::info!(
            source = %loaded.info.source,
            fingerprint_sha256 = %loaded.info.fingerprint_sha256,
            not_after = %loaded.info.not_after,
            "TLS certificate in force"
        );
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = loaded;
    }

    /// What the certificate in force is.
    pub fn info(&self) -> CertInfo {
        self.current.read().unwrap_or_else(|p| p.into_inner()).info.clone()
    }

    /// A TLS acceptor over this store (TLS 1.2/1.3, ALPN `http/1.1`).
    ///
    /// # Errors
    /// [`TlsError::Config`] if ring's provider refuses the default protocol versions
    /// (it does not).
    pub fn acceptor(self: &Arc<Self>) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().unwrap_or_else(|p| p.into_inner()).key.clone())
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// SHA-256 of `der` as upper-case hex pairs joined by `:`.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Validity (notBefore, notAfter) of an X.509 certificate in DER (RFC 5280 §4.1.2.5).
///
/// # Errors
/// [`TlsError::NotX509`] naming `what`.
pub fn validity(der: &[u8], what: &str) -> Result<(time::OffsetDateTime, time::OffsetDateTime), TlsError> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(der).map_err(|_| TlsError::NotX509(what.into()))?;
    let v = &cert.tbs_certificate.validity;
    let conv = |t: x509_cert::time::Time| -> Result<time::OffsetDateTime, TlsError> {
        let secs = t
            .to_unix_duration()
            .as_secs()
            .try_into()
            .map_err(|_| TlsError::NotX509(what.into()))?;
        time::OffsetDateTime::from_unix_timestamp(secs).map_err(|_| TlsError::NotX509(what.into()))
    };
    Ok((conv(v.not_before)?, conv(v.not_after)?))
}

/// Parses a PEM chain (leaf first) and PEM key; `what` names them in errors and
/// `source` goes into [`CertInfo::source`].
///
/// # Errors
/// [`TlsError::NoCertificate`], [`TlsError::NoKey`], [`TlsError::Key`] (unusable or
/// not the certificate's key), [`TlsError::NotX509`].
pub fn from_pem(cert_pem: &[u8], key_pem: &[u8], what: &str, source: &str) -> Result<Loaded, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| TlsError::NoCertificate(what.into()))?;
    let leaf = chain
        .first()
        .ok_or_else(|| TlsError::NoCertificate(what.into()))?
        .clone();
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| TlsError::NoKey(what.into()))?;
    let key = CertifiedKey::from_der(chain, key, &provider()).map_err(|source| TlsError::Key {
        what: what.into(),
        source,
    })?;
    let (not_before, not_after) = validity(&leaf, what)?;
    Ok(Loaded {
        key: Arc::new(key),
        info: CertInfo {
            source: source.into(),
            fingerprint_sha256: fingerprint(&leaf),
            not_before,
            not_after,
        },
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads a PEM chain file and PEM key file (`files` mode).
///
/// # Errors
/// As [`from_pem`], plus [`TlsError::Io`] for an unreadable file.
pub fn load_files(cert: &Path, key: &Path, source: &str) -> Result<Loaded, TlsError> {
    let what = format!("{} and {}", cert.display(), key.display());
    from_pem(&read(cert)?, &read(key)?, &what, source)
}

/// Writes `bytes` to `path` through a temporary file and a rename (never a half-written
/// file), with `mode`.
///
/// # Errors
/// [`TlsError::Io`] naming `path`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let io = |source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Creates `dir` with mode 0700 if missing.
///
/// # Errors
/// [`TlsError::Io`].
pub fn private_dir(dir: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| TlsError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// The self-signed certificate in `dir` (`cert.pem`, `key.pem`): the stored one while
/// it loads and has more than [`SELF_SIGNED_RENEW_DAYS`] left, else a new one for
/// `names` (DNS names or IP addresses), written there first.
///
/// # Errors
/// [`TlsError::Generate`] (a name rcgen refuses), [`TlsError::Io`] writing the files.
pub fn self_signed(dir: &Path, names: &[String]) -> Result<Loaded, TlsError> {
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    let renew_before = time::OffsetDateTime::now_utc() + time::Duration::days(SELF_SIGNED_RENEW_DAYS);
    match load_files(&cert_path, &key_path, "self-signed") {
        Ok(l) if l.info.not_after > renew_before => return Ok(l),
        Ok(l) => {
            tracing::info!(not_after = %l.info.not_after, "the self-signed certificate expires soon: making a new one")
        }
        Err(TlsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("the stored self-signed certificate is unusable ({e}): making a new one"),
    }
    private_dir(dir)?;
    let mut params = rcgen::CertificateParams::new(names.to_vec())?;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(SELF_SIGNED_DAYS);
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("Bootlane {}", names.first().map_or("server", String::as_str)),
    );
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    write_atomic(&key_path, key.serialize_pem().as_bytes(), 0o600)?;
    write_atomic(&cert_path, cert.pem().as_bytes(), 0o644)?;
    let loaded = load_files(&cert_path, &key_path, "self-signed")?;
    tracing::info!(
        path = %cert_path.display(),
        fingerprint_sha256 = %loaded.info.fingerprint_sha256,
        ?names,
        "made a self-signed TLS certificate; compare this fingerprint with the one your browser shows"
    );
    Ok(loaded)
}

/// Keeps `store` on the files `cert` and `key` (`files` mode): reloads them on SIGHUP
/// and when either file's modification time or size changes, until `token` is
/// cancelled. A failed load is logged and the certificate in force is kept.
pub fn spawn_file_reloader(store: Arc<CertStore>, cert: PathBuf, key: PathBuf, token: CancellationToken) {
    let stamp = |p: &Path| -> Option<(SystemTime, u64)> {
        let m = std::fs::metadata(p).ok()?;
        Some((m.modified().ok()?, m.len()))
    };
    let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!("TLS: no SIGHUP reload ({e}); files are still checked for changes");
            None
        }
    };
    tokio::spawn(async move {
        let mut seen = (stamp(&cert), stamp(&key));
        let mut tick = tokio::time::interval(RELOAD_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let hangup = async {
                match hup.as_mut() {
                    Some(h) => {
                        h.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let why = tokio::select! {
                () = token.cancelled() => return,
                () = hangup => "SIGHUP",
                _ = tick.tick() => {
                    let now = (stamp(&cert), stamp(&key));
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    "a file changed"
                }
            };
            match load_files(&cert, &key, "files") {
                Ok(l) => {
                    tracing::info!(reason = why, "TLS certificate reloaded");
                    store.set(l);
                }
                Err(e) => tracing::warn!(
                    reason = why,
                    "TLS certificate not reloaded, the previous one stays in force: {e}"
                ),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{fingerprint, from_pem, self_signed, TlsError};

    fn pair(names: &[&str]) -> (String, String) {
        let k =
            rcgen::generate_simple_self_signed(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).expect("rcgen");
        (k.cert.pem(), k.signing_key.serialize_pem())
    }

    #[test]
    fn pem_pair_loads_with_fingerprint_and_validity() {
        let (c, k) = pair(&["a.test"]);
        let l = from_pem(c.as_bytes(), k.as_bytes(), "t", "files").expect("loads");
        assert_eq!(l.info.fingerprint_sha256.len(), 32 * 3 - 1);
        assert!(l.info.not_before < l.info.not_after);
        assert_eq!(l.info.source, "files");
    }

    #[test]
    fn key_of_another_certificate_is_refused() {
        let (c, _) = pair(&["a.test"]);
        let (_, k2) = pair(&["b.test"]);
        assert!(matches!(
            from_pem(c.as_bytes(), k2.as_bytes(), "t", "files"),
            Err(TlsError::Key { .. })
        ));
    }

    #[test]
    fn garbage_is_a_clear_error() {
        let (c, k) = pair(&["a.test"]);
        assert!(matches!(
            from_pem(b"nothing", k.as_bytes(), "t", "files"),
            Err(TlsError::NoCertificate(_))
        ));
        assert!(matches!(
            from_pem(c.as_bytes(), b"nothing", "t", "files"),
            Err(TlsError::NoKey(_))
        ));
    }

    #[test]
    fn fingerprint_is_colon_separated_upper_hex() {
        assert_eq!(&fingerprint(b"abc")[..8], "BA:78:16");
    }

    #[test]
    fn self_signed_is_made_once_then_reused_with_a_private_key_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tmp");
        let tls = dir.path().join("tls");
        let names = vec!["bootlane.test".to_string(), "127.0.0.1".to_string()];
        let first = self_signed(&tls, &names).expect("made");
        let mode = std::fs::metadata(tls.join("key.pem"))
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dmode = std::fs::metadata(&tls).expect("dir").permissions().mode();
        assert_eq!(dmode & 0o777, 0o700);
        let again = self_signed(&tls, &names).expect("reused");
        assert_eq!(first.info.fingerprint_sha256, again.info.fingerprint_sha256);
        let days = (first.info.not_after - first.info.not_before).whole_days();
        assert!((824..=826).contains(&days), "{days}");
        // A damaged file is replaced, not fatal.
        std::fs::write(tls.join("cert.pem"), "damaged").expect("write");
        let third = self_signed(&tls, &names).expect("remade");
        assert_ne!(third.info.fingerprint_sha256, first.info.fingerprint_sha256);
    }
}
