//! NFS exports of the boot root (spec "Service settings", `/services/nfs`):
//! distributions booted with an NFS root (casper `netboot=nfs`, Debian live
//! `netboot=nfs`, dracut `root=nfs:`) mount an extracted image tree from the kernel NFS
//! server (Debian `nfs-kernel-server`). Bootlane does not serve NFS itself: it writes
//! one exports(5) file (`[nfs] exports_file`, in `/etc/exports.d/` by default) and runs
//! `exportfs -ra`, which loads every exports file into the kernel.
//!
//! The model, its validation (paths under the boot root only, client networks, a
//! whitelist of export options) and the exports-file rendering are in [`exports`]; the
//! single write path (validate, write the file atomically, run `exportfs`, roll back on
//! refusal, store, publish `nfs.updated` / `nfs.apply.failed`) is [`service`]. This module
//! owns the `[nfs]` configuration section ([`NfsConfig`]; `config.rs` only aggregates).
//! No global state.

pub mod exports;
pub mod service;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Longest `exportfs` run accepted, in seconds (the upper bound of `[nfs] exportfs_timeout_secs`).
pub const MAX_EXPORTFS_TIMEOUT_SECS: u64 = 300;

/// `[nfs]`: where the exports go and how they are loaded.
///
/// ```toml
/// [nfs]
/// exports_file = "/etc/exports.d/bootlane.exports"  # ours alone; rewritten on every change
/// exportfs = "/usr/sbin/exportfs"                    # from nfs-kernel-server
/// exportfs_timeout_secs = 30                         # 1-300
/// allow_rw = false                                   # accept the `rw` export option
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NfsConfig {
    /// The one exports(5) file Bootlane writes (its name must end in `.exports`).
    pub exports_file: PathBuf,
    /// The `exportfs` binary; when missing, NFS settings are stored but not applied.
    pub exportfs: PathBuf,
    /// Longest one `exportfs` run may take (1-300); a change that times out is rolled back.
    pub exportfs_timeout_secs: u64,
    /// Accept the `rw` export option.
    pub allow_rw: bool,
}

impl Default for NfsConfig {
    fn default() -> Self {
        Self {
            exports_file: PathBuf::from("/etc/exports.d/bootlane.exports"),
            exportfs: PathBuf::from("/usr/sbin/exportfs"),
            exportfs_timeout_secs: 30,
            allow_rw: false,
        }
    }
}

impl NfsConfig {
    /// Checks the values (see the field docs).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        let f = &self.exports_file;
        if !f.is_absolute() || f.extension().is_none_or(|e| e != "exports") || f.file_name().is_none() {
            anyhow::bail!(
                "[nfs] exports_file must be an absolute path whose name ends in .exports, e.g. /etc/exports.d/bootlane.exports"
            );
        }
        if !self.exportfs.is_absolute() {
            anyhow::bail!("[nfs] exportfs must be an absolute path, e.g. /usr/sbin/exportfs");
        }
        if !(1..=MAX_EXPORTFS_TIMEOUT_SECS).contains(&self.exportfs_timeout_secs) {
            anyhow::bail!("[nfs] exportfs_timeout_secs must be 1-{MAX_EXPORTFS_TIMEOUT_SECS}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_bounds() {
        NfsConfig::default().validate().unwrap();
        let bad = |f: fn(&mut NfsConfig)| {
            let mut c = NfsConfig::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.exports_file = "bootlane.exports".into()).contains("exports_file"));
        assert!(bad(|c| c.exports_file = "/etc/exports.d/bootlane.conf".into()).contains("exports_file"));
        assert!(bad(|c| c.exportfs = "exportfs".into()).contains("exportfs"));
        assert!(bad(|c| c.exportfs_timeout_secs = 0).contains("exportfs_timeout_secs"));
        assert!(bad(|c| c.exportfs_timeout_secs = 301).contains("exportfs_timeout_secs"));
        let c: NfsConfig = toml::from_str("allow_rw = true\nexportfs_timeout_secs = 5").unwrap();
        c.validate().unwrap();
        assert!(c.allow_rw);
        assert!(
            toml::from_str::<NfsConfig>("exports = 1").is_err(),
            "unknown keys are refused"
        );
    }
}
