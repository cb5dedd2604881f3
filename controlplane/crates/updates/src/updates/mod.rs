//! Verified updates: the update source's JSON manifest and its checks ([`manifest`]), the
//! service that asks the source, downloads an artifact in the background with progress
//! events and keeps it only once its SHA-256 and minisign signature are verified
//! ([`service`]), and the `bootlane update` subcommand that re-verifies a stored artifact
//! and installs it over the binary ([`install`]).
//!
//! This module owns the `[updates]` configuration section ([`UpdatesConfig`], validated
//! here; `config.rs` only aggregates) and the `<data_dir>/updates/` directory. Nothing here
//! ever replaces the running binary: only the operator's `bootlane update install` does.
//! It holds no global state: the service is built once in `bootlane::app::build`.

pub mod install;
pub mod manifest;
pub mod service;

use serde::{Deserialize, Serialize};

/// Smallest accepted `[updates] timeout_secs`.
pub const MIN_TIMEOUT_SECS: u64 = 1;
/// Largest accepted `[updates] timeout_secs`.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// Smallest accepted `[updates] max_size` (bytes).
pub const MIN_MAX_SIZE: u64 = 1024;
/// Largest accepted `[updates] max_size` (bytes): 4 GiB.
pub const MAX_MAX_SIZE: u64 = 4 << 30;

/// The platform name of this build, `<os>-<arch>` as Rust names them (`linux-x86_64`,
/// `linux-aarch64`): the default `[updates] platform`, the key of a manifest's artifacts.
pub fn build_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// `[updates]`: where new versions come from and how they are checked.
///
/// ```toml
/// [updates]
/// manifest_url = ""          # JSON manifest (the book, "Updates"); default "" = no update source
/// public_key = ""            # minisign public key (the base64 line of the .pub file); required with manifest_url
/// platform = "linux-x86_64"  # artifact key in the manifest; default: this build's <os>-<arch>
/// timeout_secs = 30          # connect timeout, whole-manifest timeout and download idle timeout, 1-600
/// max_size = 268435456       # largest artifact downloaded, in bytes (1 KiB - 4 GiB); default 256 MiB
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UpdatesConfig {
    /// The update source's JSON manifest; empty: nothing is ever contacted for updates.
    pub manifest_url: String,
    /// The minisign public key (the base64 `RW...` line of its `.pub` file); required with
    /// `manifest_url`.
    pub public_key: String,
    /// The artifact key in the manifest.
    ///
    /// Default: this build's `<os>-<arch>`, e.g. `linux-x86_64`.
    pub platform: String,
    /// Connect timeout, whole-manifest timeout and longest silence while downloading (1-600).
    pub timeout_secs: u64,
    /// Largest artifact downloaded (1024 - 4294967296; 256 MiB).
    pub max_size: u64,
}

impl Default for UpdatesConfig {
    fn default() -> Self {
        Self {
            manifest_url: String::new(),
            public_key: String::new(),
            platform: build_platform(),
            timeout_secs: 30,
            max_size: 256 << 20,
        }
    }
}

impl UpdatesConfig {
    /// Whether an update source is configured (`manifest_url` not empty).
    pub fn configured(&self) -> bool {
        !self.manifest_url.trim().is_empty()
    }

    /// Checks the values (see the field docs).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.configured() {
            let u = url::Url::parse(self.manifest_url.trim())
                .map_err(|e| anyhow::anyhow!("[updates] manifest_url {:?} is not a URL: {e}", self.manifest_url))?;
            if !matches!(u.scheme(), "http" | "https") {
                anyhow::bail!("[updates] manifest_url must be an http:// or https:// URL");
            }
            if self.public_key.trim().is_empty() {
                anyhow::bail!(
                    "[updates] public_key is required with manifest_url: the base64 line of the minisign public key that signs the artifacts"
                );
            }
        }
        if !self.public_key.trim().is_empty() {
            manifest::public_key(&self.public_key).map_err(|e| anyhow::anyhow!("[updates] public_key: {e}"))?;
        }
        if self.platform.is_empty()
            || self.platform.len() > 64
            || !self
                .platform
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            anyhow::bail!(
                "[updates] platform must be 1-64 characters of letters, digits, '-', '_' or '.', e.g. linux-x86_64"
            );
        }
        if !(MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS).contains(&self.timeout_secs) {
            anyhow::bail!("[updates] timeout_secs must be {MIN_TIMEOUT_SECS}-{MAX_TIMEOUT_SECS}");
        }
        if !(MIN_MAX_SIZE..=MAX_MAX_SIZE).contains(&self.max_size) {
            anyhow::bail!("[updates] max_size must be {MIN_MAX_SIZE}-{MAX_MAX_SIZE} bytes");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_bounds() {
        let d = UpdatesConfig::default();
        d.validate().unwrap();
        assert!(!d.configured());
        assert_eq!(d.platform, build_platform());
        assert!(d.platform.starts_with(std::env::consts::OS), "{}", d.platform);
        let bad = |f: fn(&mut UpdatesConfig)| {
            let mut c = UpdatesConfig::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.manifest_url = "not a url".into()).contains("manifest_url"));
        assert!(bad(|c| c.manifest_url = "ftp://x/m.json".into()).contains("manifest_url"));
        assert!(bad(|c| c.manifest_url = "http://x/m.json".into()).contains("public_key"));
        assert!(bad(|c| c.public_key = "RWnot-a-key".into()).contains("public_key"));
        assert!(bad(|c| c.platform = "linux x86".into()).contains("platform"));
        assert!(bad(|c| c.timeout_secs = 0).contains("timeout_secs"));
        assert!(bad(|c| c.timeout_secs = 601).contains("timeout_secs"));
        assert!(bad(|c| c.max_size = 10).contains("max_size"));
        assert!(bad(|c| c.max_size = MAX_MAX_SIZE + 1).contains("max_size"));
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let c: UpdatesConfig = toml::from_str(&format!(
            "manifest_url = \"http://127.0.0.1:1/m.json\"\npublic_key = \"{}\"\ntimeout_secs = 5",
            kp.pk.to_base64()
        ))
        .unwrap();
        c.validate().unwrap();
        assert!(
            toml::from_str::<UpdatesConfig>("url = \"x\"").is_err(),
            "unknown keys are refused"
        );
    }
}
