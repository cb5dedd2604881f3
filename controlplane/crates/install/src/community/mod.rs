//! The community catalog ("store"): items other sites can share (answer templates, boot
//! profiles, netboot overlays, post-install scripts, baselines with their scripts)
//! listed from *sources* and installed into this server's own resources through their
//! services.
//!
//! - [`mod@format`]: the source layout (`index.json`, `items/<type>/<id>.json`), the item
//!   shapes per type, and the sha256 of an item's content (canonical JSON).
//! - [`source`]: where items come from: the built-in set shipped in the binary
//!   (`controlplane/crates/install/catalog/`, replaceable by `[community] dir`) and HTTP sources
//!   (`[[community.sources]]`) whose index is cached for `cache_ttl_secs`.
//! - [`service`]: listing, item details, and the importer (one function per item type;
//!   a name clash is a 409 unless `rename` or `overwrite`; the sha256 is checked before
//!   anything is written).
//!
//! This module's configuration section is `[community]` ([`CommunityConfig`]); the name
//! `store` is taken by the data store ([`bootlane_core::store`]), so only the API paths say
//! `/store`. State: the HTTP sources' index caches (in [`service::CommunityService`]).

pub mod format;
pub mod service;
pub mod source;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// One `[[community.sources]]` entry: an HTTP catalog source.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Name shown in the catalog and accepted as `source` (1-64 of `a-z0-9._-`; not
    /// `builtin`, which is the built-in source's).
    pub name: String,
    /// Base URL (`http://` or `https://`): the index is `<url>/index.json`, items are
    /// `<url>/items/<type>/<id>.json`.
    pub url: String,
}

/// `[community]`: the catalog's sources and the limits of fetching them.
///
/// ```toml
/// [community]
/// # dir = "/etc/bootlane/catalog"   # replaces the built-in source (same layout); unset: built in
/// cache_ttl_secs = 300              # how long an HTTP source's index is reused
/// connect_timeout_secs = 5          # reaching an HTTP source
/// timeout_secs = 15                 # one fetch (index or item), start to end
/// max_bytes = 2097152               # largest index or item file (2 MiB)
///
/// [[community.sources]]
/// name = "lab"
/// url = "https://catalog.example.org/bootlane"
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CommunityConfig {
    /// A directory in the catalog layout (`index.json`, `items/<type>/<id>.json`) replacing the
    /// built-in set.
    ///
    /// Default: unset (the built-in catalog).
    pub dir: Option<PathBuf>,
    /// Seconds an HTTP source's index is reused (0-86400); a failed fetch is not cached.
    pub cache_ttl_secs: u64,
    /// Reaching an HTTP source (1-60).
    pub connect_timeout_secs: u64,
    /// One whole fetch (1-300).
    pub timeout_secs: u64,
    /// Largest index, item file or uploaded bundle.
    pub max_bytes: u64,
    /// HTTP sources, listed after the built-in one in this order.
    pub sources: Vec<SourceConfig>,
}

impl Default for CommunityConfig {
    fn default() -> Self {
        Self {
            dir: None,
            cache_ttl_secs: 300,
            connect_timeout_secs: 5,
            timeout_secs: 15,
            max_bytes: 2 << 20,
            sources: Vec::new(),
        }
    }
}

impl CommunityConfig {
    /// Checks the bounds, the source names (valid, unique, not `builtin`) and URLs.
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.cache_ttl_secs > 86_400 {
            anyhow::bail!("[community] cache_ttl_secs must be 0-86400");
        }
        if !(1..=60).contains(&self.connect_timeout_secs) {
            anyhow::bail!("[community] connect_timeout_secs must be 1-60");
        }
        if !(1..=300).contains(&self.timeout_secs) {
            anyhow::bail!("[community] timeout_secs must be 1-300");
        }
        if !(1024..=64 << 20).contains(&self.max_bytes) {
            anyhow::bail!("[community] max_bytes must be 1024-67108864");
        }
        let mut seen = std::collections::HashSet::new();
        for s in &self.sources {
            if !format::valid_id(&s.name) || s.name == source::BUILTIN {
                anyhow::bail!(
                    "[[community.sources]] name {:?} must be 1-64 of a-z 0-9 . _ - and not {:?}",
                    s.name,
                    source::BUILTIN
                );
            }
            if !seen.insert(s.name.as_str()) {
                anyhow::bail!("[[community.sources]] name {:?} is used twice", s.name);
            }
            let ok = url::Url::parse(&s.url)
                .ok()
                .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            if !ok {
                anyhow::bail!(
                    "[[community.sources]] {:?}: url must be an http:// or https:// URL (got {:?})",
                    s.name,
                    s.url
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation_names_the_key() {
        assert!(CommunityConfig::default().validate().is_ok());
        let mut c = CommunityConfig::default();
        c.sources.push(SourceConfig {
            name: "builtin".into(),
            url: "http://x/".into(),
        });
        assert!(c.validate().unwrap_err().to_string().contains("name"));
        c.sources[0].name = "lab".into();
        c.sources[0].url = "ftp://x/".into();
        assert!(c.validate().unwrap_err().to_string().contains("url"));
        c.sources[0].url = "http://x/".into();
        c.sources.push(c.sources[0].clone());
        assert!(c.validate().unwrap_err().to_string().contains("twice"));
        let c = CommunityConfig {
            timeout_secs: 0,
            ..Default::default()
        };
        assert!(c.validate().unwrap_err().to_string().contains("timeout_secs"));
    }
}
