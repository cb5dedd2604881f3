//! The `[answers]` configuration section: the defaults of the site install settings
//! (time zone, locale, keyboard, package mirror), the render limits, and where the
//! answer-file validators are (the defaults are where `scripts/setup.sh` puts them).
//! Validated here; `config.rs` only aggregates. No state.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[answers]`: answer-template defaults and validators.
///
/// ```toml
/// [answers]
/// timezone = "Etc/UTC"           # default site time zone (IANA name)
/// locale = "en_US.UTF-8"         # default site locale
/// keyboard = "us"                # default site keyboard layout (XKB)
/// mirror = ""                    # default package mirror URL; "" = each preset's own
/// fuel = 200000                  # minijinja fuel per render (instructions)
/// validator_timeout_secs = 20    # per validator run
/// xmllint = "xmllint"
/// ksvalidator = "/opt/bootlane-venv/bin/ksvalidator"
/// python = "/opt/bootlane-venv/bin/python3"
/// cloud_init_root = "/opt/bootlane-tools/cloud-init"
/// ignition_validate = "/opt/bootlane-tools/ignition/usr/bin/ignition-validate"
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AnswersConfig {
    /// Time zone (IANA name) of installed machines.
    pub timezone: String,
    /// Locale.
    pub locale: String,
    /// Keyboard layout (XKB).
    pub keyboard: String,
    /// Package mirror (`http://` or `https://`); empty: each distribution's own.
    pub mirror: String,
    /// Render budget of one template (minijinja fuel, 1000-100000000).
    pub fuel: u64,
    /// Longest one validator run may take (1-300).
    pub validator_timeout_secs: u64,
    /// Validator of autounattend and AutoYaST files.
    pub xmllint: PathBuf,
    /// Kickstart validator (pykickstart).
    pub ksvalidator: PathBuf,
    /// The Python that runs `cloud-init schema`.
    pub python: PathBuf,
    /// Debian's cloud-init package unpacked there.
    pub cloud_init_root: PathBuf,
    /// Ignition validator.
    pub ignition_validate: PathBuf,
}

impl Default for AnswersConfig {
    fn default() -> Self {
        Self {
            timezone: "Etc/UTC".into(),
            locale: "en_US.UTF-8".into(),
            keyboard: "us".into(),
            mirror: String::new(),
            fuel: 200_000,
            validator_timeout_secs: 20,
            xmllint: "xmllint".into(),
            ksvalidator: "/opt/bootlane-venv/bin/ksvalidator".into(),
            python: "/opt/bootlane-venv/bin/python3".into(),
            cloud_init_root: "/opt/bootlane-tools/cloud-init".into(),
            ignition_validate: "/opt/bootlane-tools/ignition/usr/bin/ignition-validate".into(),
        }
    }
}

impl AnswersConfig {
    /// Checks the values (see the field docs).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        use super::site::{check_keyboard, check_locale, check_mirror, check_timezone};
        let named = |key: &str, r: Result<(), String>| r.map_err(|e| anyhow::anyhow!("[answers] {key}: {e}"));
        named("timezone", check_timezone(&self.timezone))?;
        named("locale", check_locale(&self.locale))?;
        named("keyboard", check_keyboard(&self.keyboard))?;
        if !self.mirror.is_empty() {
            named("mirror", check_mirror(&self.mirror).map(|_| ()))?;
        }
        if !(1000..=100_000_000).contains(&self.fuel) {
            anyhow::bail!("[answers] fuel must be 1000-100000000");
        }
        if !(1..=300).contains(&self.validator_timeout_secs) {
            anyhow::bail!("[answers] validator_timeout_secs must be 1-300");
        }
        for (k, p) in [
            ("xmllint", &self.xmllint),
            ("ksvalidator", &self.ksvalidator),
            ("python", &self.python),
            ("cloud_init_root", &self.cloud_init_root),
            ("ignition_validate", &self.ignition_validate),
        ] {
            if p.as_os_str().is_empty() {
                anyhow::bail!("[answers] {k} must not be empty");
            }
        }
        Ok(())
    }
}
