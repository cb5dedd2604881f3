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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AnswersConfig {
    /// Default site time zone (an IANA name such as `Europe/Berlin`) until one is stored
    /// through `PUT /netboot/answer-settings`. Default `Etc/UTC`.
    pub timezone: String,
    /// Default site locale, e.g. `en_US.UTF-8`.
    pub locale: String,
    /// Default site keyboard layout (XKB name, e.g. `us`, `de`).
    pub keyboard: String,
    /// Default package mirror (an `http://` or `https://` URL); empty (the default): none,
    /// so every preset uses its distribution's own mirror.
    pub mirror: String,
    /// minijinja fuel per render: the instruction budget after which a template is
    /// stopped (so a template cannot loop forever). 1000-100000000; default 200000.
    pub fuel: u64,
    /// Time limit of one validator run, in seconds (1-300; default 20).
    pub validator_timeout_secs: u64,
    /// `xmllint` (libxml2-utils) for AutoYaST and autounattend; a name is looked up in
    /// `PATH`.
    pub xmllint: PathBuf,
    /// `ksvalidator` (PyPI pykickstart) for kickstart.
    pub ksvalidator: PathBuf,
    /// The Python that runs `cloud-init schema` (a venv holding pyyaml, jsonschema,
    /// jinja2, configobj, jsonpatch, requests, oauthlib).
    pub python: PathBuf,
    /// Where Debian's `cloud-init` package is unpacked (`dpkg -x`): `usr/bin/cloud-init`
    /// and `usr/lib/python3/dist-packages` under it. For cloud-config and autoinstall.
    pub cloud_init_root: PathBuf,
    /// `ignition-validate` (Debian's `ignition` package, unpacked) for Ignition.
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
