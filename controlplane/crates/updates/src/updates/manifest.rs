//! The update manifest (the format is Bootlane's own, documented in the book's chapter
//! "Updates") and the checks of an artifact against it: size, SHA-256 and the minisign
//! signature, made with the key configured as `[updates] public_key`.
//!
//! The signature does not cover the file alone: it covers the update statement
//! ([`statement`]), a short text binding the version, the platform, the artifact's file
//! name and its SHA-256:
//!
//! ```text
//! bootlane-update-v1
//! <version>
//! <platform>
//! <file name>
//! <sha256, 64 lowercase hex digits>
//! ```
//!
//! each line ending with `\n`. A validly signed artifact therefore cannot be relabelled in
//! a manifest as another version, another platform or another file: the statement Bootlane
//! rebuilds from the manifest entry would differ from the signed one. The file itself is
//! bound through its SHA-256, checked while it streams in. The statement is signed with
//! `minisign -S -m <statement file>` (Ed25519 over its BLAKE2b-512, minisign's default
//! "prehashed" mode; legacy signatures are refused); the book's "Updates" chapter gives
//! the commands.
//!
//! ```json
//! {
//!   "versions": [
//!     {
//!       "version": "1.4.0",
//!       "released": "2026-11-20",
//!       "notes": "What changed, as plain text or Markdown.",
//!       "artifacts": {
//!         "linux-x86_64": {
//!           "url": "bootlane-1.4.0-linux-x86_64",
//!           "size": 23456789,
//!           "sha256": "<64 hex digits>",
//!           "signature": "untrusted comment: ...\n<base64>\ntrusted comment: ...\n<base64>\n"
//!         }
//!       }
//!     }
//!   ]
//! }
//! ```
//!
//! An artifact is the `bootlane` executable itself; its `url` may be relative to the
//! manifest's. Unknown keys are ignored (newer manifests stay readable); every entry is
//! checked when the manifest is read, so a bad entry is reported before anything is
//! downloaded. No state.

use std::{collections::BTreeMap, io::Read, path::Path};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use utoipa::ToSchema;

/// Largest manifest read, in bytes (1 MiB).
pub const MAX_MANIFEST_BYTES: usize = 1 << 20;

/// The whole manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The published versions, in any order.
    pub versions: Vec<Release>,
}

/// One published version.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Release {
    /// Semantic version (`1.4.0`, `1.5.0-rc.1`).
    pub version: String,
    /// Release date as the publisher writes it (free text, optional).
    #[serde(default)]
    pub released: Option<String>,
    /// Release notes (plain text or Markdown).
    #[serde(default)]
    pub notes: String,
    /// Artifacts by platform (`linux-x86_64`, ...; see `[updates] platform`).
    #[serde(default)]
    pub artifacts: BTreeMap<String, Artifact>,
}

/// One downloadable file of a release.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct Artifact {
    /// Where it is; relative URLs are resolved against the manifest's URL (answers carry
    /// the resolved one).
    pub url: String,
    /// Exact size in bytes.
    pub size: u64,
    /// SHA-256 of the file, 64 hex digits (lowercase in answers).
    pub sha256: String,
    /// The whole minisign signature file of the artifact (`minisign -S -m <file>`), lines
    /// joined with `\n`.
    pub signature: String,
}

/// A manifest that passed [`parse`]: releases newest first, each with its parsed version.
#[derive(Debug, Clone)]
pub struct Checked {
    /// `(version, release)`, newest first; artifact URLs resolved, hashes lowercase.
    pub releases: Vec<(semver::Version, Release)>,
}

impl Checked {
    /// The newest release.
    pub fn newest(&self) -> Option<&(semver::Version, Release)> {
        self.releases.first()
    }

    /// The release whose version equals `v` (semver equality, so `1.4.0` matches `1.4.0`).
    pub fn find(&self, v: &semver::Version) -> Option<&(semver::Version, Release)> {
        self.releases.iter().find(|(x, _)| x == v)
    }
}

/// First line of the update statement: names the statement's format.
pub const STATEMENT_V1: &str = "bootlane-update-v1";

/// The update statement that an artifact's signature covers (see the module docs):
/// `bootlane-update-v1\n<version>\n<platform>\n<file>\n<sha256>\n`, the SHA-256 in
/// lowercase hex.
pub fn statement(version: &str, platform: &str, file: &str, sha256: &str) -> String {
    format!(
        "{STATEMENT_V1}\n{version}\n{platform}\n{file}\n{}\n",
        sha256.to_ascii_lowercase()
    )
}

/// The artifact's file name, as the update statement names it: the last segment of the
/// artifact URL's path (`.../bootlane-1.4.0-linux-x86_64` gives `bootlane-1.4.0-linux-x86_64`).
///
/// # Errors
/// A sentence when the URL ends without a file name, or the name has characters other
/// than letters, digits, `.`, `_`, `-` and `+` (so the name is the same whether read
/// percent-encoded or not).
pub fn file_name(url: &url::Url) -> Result<String, String> {
    let name = url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default();
    if name.is_empty() || name.len() > 255 {
        return Err(format!("url {url} does not end with a file name"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
        || name.starts_with('.')
    {
        return Err(format!(
            "the file name {name:?} of url {url} must be letters, digits, '.', '_', '-' or '+' (it is part of the signed statement)"
        ));
    }
    Ok(name.to_string())
}

/// Parses a minisign public key given as its base64 line (`RW...`).
///
/// # Errors
/// A sentence saying what is wrong with it.
pub fn public_key(b64: &str) -> Result<minisign_verify::PublicKey, String> {
    minisign_verify::PublicKey::from_base64(b64.trim())
        .map_err(|e| format!("not a minisign public key (the base64 line of a minisign .pub file, RW...): {e}"))
}

/// Reads and checks a manifest fetched from `base`: JSON of the documented shape, each
/// version a semantic version and listed once, each artifact with an http(s) URL
/// (relative ones resolved against `base`), a non-zero size, a 64-hex-digit SHA-256 and a
/// decodable minisign signature.
///
/// # Errors
/// A sentence naming the bad entry.
pub fn parse(bytes: &[u8], base: &url::Url) -> Result<Checked, String> {
    let m: Manifest = serde_json::from_slice(bytes).map_err(|e| format!("not a Bootlane update manifest: {e}"))?;
    let mut releases = Vec::with_capacity(m.versions.len());
    for mut r in m.versions {
        let v = semver::Version::parse(r.version.trim())
            .map_err(|e| format!("version {:?} is not a semantic version: {e}", r.version))?;
        if releases.iter().any(|(x, _): &(semver::Version, Release)| x == &v) {
            return Err(format!("version {v} is listed twice"));
        }
        for (platform, a) in &mut r.artifacts {
            let at = |what: &str| format!("version {v}, artifact {platform}: {what}");
            let url = base
                .join(a.url.trim())
                .map_err(|e| at(&format!("url {:?}: {e}", a.url)))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(at("url must be http:// or https://"));
            }
            file_name(&url).map_err(|e| at(&e))?;
            a.url = url.to_string();
            if a.size == 0 {
                return Err(at("size must be the artifact's size in bytes"));
            }
            if a.sha256.len() != 64 || !a.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(at("sha256 must be 64 hex digits"));
            }
            a.sha256.make_ascii_lowercase();
            minisign_verify::Signature::decode(&a.signature)
                .map_err(|e| at(&format!("signature is not a minisign signature: {e}")))?;
        }
        r.version = v.to_string();
        releases.push((v, r));
    }
    releases.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(Checked { releases })
}

/// Why an artifact failed its checks.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    /// The byte count differs from the manifest's size (a cut-off or padded file).
    #[error("size mismatch: got {got} bytes, the manifest says {want}")]
    Size {
        /// Bytes received or found.
        got: u64,
        /// Bytes announced.
        want: u64,
    },
    /// The SHA-256 differs (a damaged or tampered file).
    #[error("sha256 mismatch: got {got}, the manifest says {want}")]
    Sha256 {
        /// Computed digest (hex).
        got: String,
        /// Announced digest (hex).
        want: String,
    },
    /// The minisign signature does not verify with the configured key, or does not cover
    /// this version, platform, file name and SHA-256.
    #[error("signature check failed: {0}")]
    Signature(String),
}

fn signature_error(e: &minisign_verify::Error) -> String {
    match e {
        minisign_verify::Error::UnexpectedKeyId => {
            "the artifact was signed with another key than [updates] public_key".into()
        }
        minisign_verify::Error::UnsupportedLegacyMode | minisign_verify::Error::UnexpectedAlgorithm => {
            "legacy (non-prehashed) minisign signatures are not accepted; sign with a current minisign".into()
        }
        e => format!(
            "the signature does not cover this artifact's statement (version, platform, file name and sha256; see \"Updates\" in the book) ({e})"
        ),
    }
}

/// What an artifact is announced as: the fields of the update statement besides its
/// SHA-256 ([`statement`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label<'a> {
    /// The version the manifest lists it under.
    pub version: &'a str,
    /// The platform key it is listed under.
    pub platform: &'a str,
    /// Its file name ([`file_name`] of its URL).
    pub file: &'a str,
}

/// The incremental checks of one artifact: feed it the bytes with [`Verifier::update`],
/// then [`Verifier::finish`]. Holds the SHA-256 state; the signature is checked over the
/// update statement at the end.
pub struct Verifier<'a> {
    sha: Sha256,
    key: &'a minisign_verify::PublicKey,
    signature: &'a minisign_verify::Signature,
    label: Label<'a>,
    len: u64,
}

impl<'a> Verifier<'a> {
    /// Starts checking an artifact announced as `label` against `signature` made by
    /// `key`.
    ///
    /// # Errors
    /// [`VerifyError::Signature`] at once when the signature is by another key or of the
    /// legacy kind (nothing needs to be downloaded to know).
    pub fn new(
        key: &'a minisign_verify::PublicKey,
        signature: &'a minisign_verify::Signature,
        label: Label<'a>,
    ) -> Result<Self, VerifyError> {
        // Only for its early key-id and algorithm checks; the statement is verified in
        // `finish`.
        key.verify_stream(signature)
            .map_err(|e| VerifyError::Signature(signature_error(&e)))?;
        Ok(Self {
            sha: Sha256::new(),
            key,
            signature,
            label,
            len: 0,
        })
    }

    /// Feeds the next bytes.
    pub fn update(&mut self, buf: &[u8]) {
        self.sha.update(buf);
        self.len += buf.len() as u64;
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was fed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks size, then SHA-256, then the signature over the update statement of the
    /// label and that SHA-256; answers the SHA-256 (hex).
    ///
    /// # Errors
    /// The first check that failed.
    pub fn finish(self, size: u64, sha256: &str) -> Result<String, VerifyError> {
        if self.len != size {
            return Err(VerifyError::Size {
                got: self.len,
                want: size,
            });
        }
        let got = hex::encode(self.sha.finalize());
        if !got.eq_ignore_ascii_case(sha256) {
            return Err(VerifyError::Sha256 {
                got,
                want: sha256.to_ascii_lowercase(),
            });
        }
        let l = self.label;
        self.key
            .verify(
                statement(l.version, l.platform, l.file, &got).as_bytes(),
                self.signature,
                false,
            )
            .map_err(|e| VerifyError::Signature(signature_error(&e)))?;
        Ok(got)
    }
}

/// A decoded signature, or [`VerifyError::Signature`].
///
/// # Errors
/// The text is not a minisign signature.
pub fn signature(text: &str) -> Result<minisign_verify::Signature, VerifyError> {
    minisign_verify::Signature::decode(text)
        .map_err(|e| VerifyError::Signature(format!("not a minisign signature: {e}")))
}

/// Checks the file at `path` (read in 64 KiB blocks), announced as `label`, against
/// `size`, `sha256` and `signature` with `key`; answers the SHA-256 (hex).
///
/// # Errors
/// An unreadable file (as `Err(Err(io))`), or the failed check.
pub fn verify_file(
    path: &Path,
    key: &minisign_verify::PublicKey,
    label: Label<'_>,
    size: u64,
    sha256: &str,
    signature_text: &str,
) -> Result<String, Result<VerifyError, std::io::Error>> {
    let sig = signature(signature_text).map_err(Ok)?;
    let mut v = Verifier::new(key, &sig, label).map_err(Ok)?;
    let mut f = std::fs::File::open(path).map_err(Err)?;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f.read(&mut buf).map_err(Err)?;
        if n == 0 {
            break;
        }
        v.update(&buf[..n]);
        if v.len() > size {
            break;
        }
    }
    v.finish(size, sha256).map_err(Ok)
}

/// Signing for the tests of this crate and of the API above it (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support {
    use sha2::{Digest, Sha256};

    use super::{statement, Label};

    /// A generated key pair: `(public key base64 line, signer)`.
    pub fn keys() -> (String, minisign::KeyPair) {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        (kp.pk.to_base64(), kp)
    }

    /// The minisign signature file (`.minisig` text) of the update statement of `data`
    /// announced as `label`: what `minisign -S -m <statement file>` writes.
    pub fn sign(kp: &minisign::KeyPair, label: Label<'_>, data: &[u8]) -> String {
        let st = statement(
            label.version,
            label.platform,
            label.file,
            &hex::encode(Sha256::digest(data)),
        );
        minisign::sign(Some(&kp.pk), &kp.sk, std::io::Cursor::new(st), None, None)
            .unwrap()
            .into_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{
        test_support::{keys, sign},
        *,
    };

    const LABEL: Label<'static> = Label {
        version: "1.4.0",
        platform: "linux-x86_64",
        file: "bootlane-1.4.0-linux-x86_64",
    };

    fn artifact(version: &str, data: &[u8], kp: &minisign::KeyPair) -> serde_json::Value {
        let label = Label {
            version,
            file: "a.bin",
            ..LABEL
        };
        serde_json::json!({"url": "a.bin", "size": data.len(), "sha256": hex::encode(Sha256::digest(data)), "signature": sign(kp, label, data)})
    }

    #[test]
    fn parse_orders_resolves_and_refuses_bad_entries() {
        let (_, kp) = keys();
        let base = url::Url::parse("http://h:8/dir/manifest.json").unwrap();
        let m = serde_json::json!({"versions": [
            {"version": "1.2.0", "notes": "old", "artifacts": {"linux-x86_64": artifact("1.2.0", b"x", &kp)}},
            {"version": "1.10.0", "notes": "new", "extra": 1, "artifacts": {"linux-x86_64": artifact("1.10.0", b"y", &kp)}},
            {"version": "1.10.0-rc.1"}
        ]});
        let c = parse(m.to_string().as_bytes(), &base).unwrap();
        let (v, r) = c.newest().unwrap();
        assert_eq!(
            (v.to_string().as_str(), r.notes.as_str()),
            ("1.10.0", "new"),
            "semver order, not text order"
        );
        assert_eq!(r.artifacts["linux-x86_64"].url, "http://h:8/dir/a.bin");
        assert!(c.find(&semver::Version::parse("1.2.0").unwrap()).is_some());
        let bad = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut m = m.clone();
            f(&mut m);
            parse(m.to_string().as_bytes(), &base).unwrap_err()
        };
        assert!(bad(&|m| m["versions"][0]["version"] = "1.2".into()).contains("semantic version"));
        assert!(bad(&|m| m["versions"][2]["version"] = "1.2.0".into()).contains("twice"));
        assert!(bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["sha256"] = "abc".into()).contains("sha256"));
        assert!(bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["size"] = 0.into()).contains("size"));
        assert!(
            bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["signature"] = "nope".into()).contains("signature")
        );
        assert!(
            bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["url"] = "file:///etc/passwd".into())
                .contains("http")
        );
        assert!(
            bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["url"] = "http://h/dir/".into())
                .contains("file name")
        );
        assert!(
            bad(&|m| m["versions"][0]["artifacts"]["linux-x86_64"]["url"] = "boot%0Alane".into()).contains("file name")
        );
        assert!(parse(b"{}", &base).unwrap_err().contains("manifest"));
    }

    #[test]
    fn the_statement_and_file_names() {
        assert_eq!(
            statement("1.4.0", "linux-x86_64", "bootlane-1.4.0-linux-x86_64", &"AB".repeat(32)),
            format!(
                "bootlane-update-v1\n1.4.0\nlinux-x86_64\nbootlane-1.4.0-linux-x86_64\n{}\n",
                "ab".repeat(32)
            )
        );
        let name = |u: &str| file_name(&url::Url::parse(u).unwrap());
        assert_eq!(
            name("https://x/r/1.4.0/bootlane+v1.4_0-x").unwrap(),
            "bootlane+v1.4_0-x"
        );
        assert_eq!(
            name("https://x/a/b.bin?x=1#f").unwrap(),
            "b.bin",
            "query and fragment are not the name"
        );
        for bad in [
            "https://x/",
            "https://x/dir/",
            "https://x/a%20b",
            "https://x/.hidden",
            "https://x/a%2Fb",
        ] {
            assert!(name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn verifier_checks_size_sha256_and_signature() {
        let (pk_b64, kp) = keys();
        let pk = public_key(&pk_b64).unwrap();
        let data = b"the new bootlane binary".to_vec();
        let sha = hex::encode(Sha256::digest(&data));
        let check = |bytes: &[u8], sha: &str, sig: &str| {
            let sig = signature(sig)?;
            let mut v = Verifier::new(&pk, &sig, LABEL)?;
            v.update(bytes);
            v.finish(data.len() as u64, sha)
        };
        assert_eq!(check(&data, &sha, &sign(&kp, LABEL, &data)).unwrap(), sha);
        // Cut off.
        assert!(matches!(
            check(&data[..5], &sha, &sign(&kp, LABEL, &data)),
            Err(VerifyError::Size { got: 5, .. })
        ));
        // Tampered (same size).
        let mut t = data.clone();
        t[0] ^= 1;
        assert!(matches!(
            check(&t, &sha, &sign(&kp, LABEL, &data)),
            Err(VerifyError::Sha256 { .. })
        ));
        // Right hash, signature of other bytes.
        let e = check(&data, &sha, &sign(&kp, LABEL, b"something else")).unwrap_err();
        assert!(matches!(e, VerifyError::Signature(_)), "{e}");
        // Signed by another key: refused before any byte is fed.
        let (_, other) = keys();
        let sig = signature(&sign(&other, LABEL, &data)).unwrap();
        let e = Verifier::new(&pk, &sig, LABEL).err().unwrap();
        assert!(e.to_string().contains("another key"), "{e}");
        // A signature of the file itself (the form before statements): refused.
        let bare = minisign::sign(Some(&kp.pk), &kp.sk, std::io::Cursor::new(&data), None, None)
            .unwrap()
            .into_string();
        let e = check(&data, &sha, &bare).unwrap_err();
        assert!(e.to_string().contains("statement"), "{e}");
        // The file form.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, &data).unwrap();
        verify_file(&p, &pk, LABEL, data.len() as u64, &sha, &sign(&kp, LABEL, &data)).unwrap();
        std::fs::write(&p, &t).unwrap();
        assert!(matches!(
            verify_file(&p, &pk, LABEL, data.len() as u64, &sha, &sign(&kp, LABEL, &data)),
            Err(Ok(VerifyError::Sha256 { .. }))
        ));
    }

    /// Regression: a validly signed artifact cannot be relabelled. The same bytes and the
    /// same signature, announced as another version, platform or file name, fail the
    /// signature check (the statement rebuilt from the manifest differs from the signed
    /// one); announced as signed, they pass.
    #[test]
    fn a_signed_artifact_relabelled_as_another_version_platform_or_file_is_refused() {
        let (pk_b64, kp) = keys();
        let pk = public_key(&pk_b64).unwrap();
        let old = b"bootlane 1.4.0 with a known hole".to_vec();
        let sha = hex::encode(Sha256::digest(&old));
        let sig_text = sign(&kp, LABEL, &old);
        let sig = signature(&sig_text).unwrap();
        let as_label = |label: Label<'_>| {
            let mut v = Verifier::new(&pk, &sig, label).unwrap();
            v.update(&old);
            v.finish(old.len() as u64, &sha)
        };
        assert_eq!(as_label(LABEL).unwrap(), sha);
        for relabelled in [
            Label {
                version: "1.5.0",
                ..LABEL
            },
            Label {
                platform: "linux-aarch64",
                ..LABEL
            },
            Label {
                file: "bootlane-1.5.0-linux-x86_64",
                ..LABEL
            },
        ] {
            let e = as_label(relabelled).unwrap_err();
            assert!(matches!(e, VerifyError::Signature(_)), "{relabelled:?}: {e}");
        }
        // Through a whole manifest: the 1.4.0 entry copied under 1.5.0 (same URL, size,
        // sha256 and signature) parses, but its artifact does not verify as 1.5.0.
        let base = url::Url::parse("https://updates.example/m.json").unwrap();
        let entry = serde_json::json!({"url": LABEL.file, "size": old.len(), "sha256": sha, "signature": sig_text});
        let m = serde_json::json!({"versions": [
            {"version": "1.4.0", "artifacts": {"linux-x86_64": entry.clone()}},
            {"version": "1.5.0", "artifacts": {"linux-x86_64": entry}},
        ]});
        let c = parse(m.to_string().as_bytes(), &base).unwrap();
        for (v, r) in &c.releases {
            let a = &r.artifacts["linux-x86_64"];
            let file = file_name(&url::Url::parse(&a.url).unwrap()).unwrap();
            let version = v.to_string();
            let label = Label {
                version: &version,
                platform: "linux-x86_64",
                file: &file,
            };
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("a");
            std::fs::write(&p, &old).unwrap();
            let r = verify_file(&p, &pk, label, a.size, &a.sha256, &a.signature);
            if version == "1.4.0" {
                r.unwrap();
            } else {
                assert!(matches!(r, Err(Ok(VerifyError::Signature(_)))), "{r:?}");
            }
        }
    }
}
