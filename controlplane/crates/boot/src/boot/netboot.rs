//! The netboot settings group (`/settings/netboot`): the boot directory served by TFTP and
//! HTTP boot, the HTTP base URL clients use and the iPXE script path DHCP hands to iPXE.
//! It is a [`Group`] of the settings layer ([`bootlane_core::settings`]): the
//! configuration file's `[boot] root` is the base, `PUT /settings/netboot` stores the
//! whole document in `settings/netboot` (the shape older versions read) with the keys set
//! through the API beside it. The readers (DHCP, TFTP, HTTP boot, the generated boot
//! configurations, files, NFS) hold a [`Netboot`] receiver of the effective value and
//! read it per request, so a change applies to the next answer. State: none here (the
//! layer lives in the settings service).

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use utoipa::ToSchema;

use bootlane_core::settings::{Effect, Group, Problem};

/// The iPXE script path on the API port, with iPXE's own MAC expansion: `netX` is the
/// device iPXE opened last (the one it booted from), which is not always `net0`.
pub const IPXE_SCRIPT_PATH: &str = "/boot/ipxe?mac=${netX/mac}";

/// `/settings/netboot`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NetbootSettings {
    /// The boot directory served by TFTP and `GET /boot/...` (absolute, existing).
    pub boot_root: String,
    /// The HTTP base URL clients should use for iPXE scripts, kernels and initrds
    /// (`http://` or `https://`, host and optional port and path, no query), e.g. a DNS
    /// name or a reverse proxy in front of Bootlane. `null` (the default): `http://<the
    /// subnet's server address>:<API port>` in DHCP answers and `http://<Host header>` in
    /// scripts. Applies to the next DHCP answer and script, no restart.
    pub http_base_url: Option<String>,
    /// The iPXE script path appended to the base URL in the URL DHCP hands to iPXE
    /// clients (the loop breaker: a client whose user class is `iPXE`, option 77, gets
    /// this URL instead of the iPXE binary, so it does not chain-load itself again).
    /// Read-only.
    pub ipxe_script_path: String,
}

/// The effective netboot settings as the readers hold them: a receiver of the settings
/// layer's value (read with `borrow()` per request; a change shows at the next read).
pub type Netboot = watch::Receiver<NetbootSettings>;

impl NetbootSettings {
    /// The settings of a boot root with no base URL (the configuration file's value).
    pub fn with_root(boot_root: &std::path::Path) -> Self {
        Self {
            boot_root: boot_root.display().to_string(),
            http_base_url: None,
            ipxe_script_path: IPXE_SCRIPT_PATH.to_owned(),
        }
    }

    /// The boot directory as a path.
    pub fn root(&self) -> std::path::PathBuf {
        std::path::PathBuf::from(&self.boot_root)
    }

    /// A receiver that always holds `self` (tests and tools that have no settings layer).
    pub fn fixed(self) -> Netboot {
        watch::Sender::new(self).subscribe()
    }
}

/// The netboot group of the settings layer. A new root restarts TFTP; the base URL applies
/// live. The root's rules that need the data directory (see
/// [`crate::boot::guard::check_root`]) are checked by the settings service beside
/// [`Group::validate`] (on `PUT` and on reading the stored document).
impl Group for NetbootSettings {
    const TREE: &'static str = "settings";
    const KEY: &'static str = "netboot";
    const SERVICE: &'static str = "tftp";
    const WHOLE_DOCUMENT: bool = true;

    fn validate(&self) -> Vec<Problem> {
        // The boot root's rules need the data directory and the configured root: the
        // settings service checks them (`guard::check_root`).
        let mut p = Vec::new();
        if let Some(u) = &self.http_base_url {
            if let Err(e) = validate_base_url(u) {
                p.push(Problem::new("http_base_url", e));
            }
        }
        if self.ipxe_script_path != IPXE_SCRIPT_PATH {
            p.push(Problem::new(
                "ipxe_script_path",
                "'ipxe_script_path' is read-only (it follows api_listen and the subnets' server addresses)",
            ));
        }
        p
    }

    fn effect(key: &str) -> Effect {
        match key {
            "boot_root" => Effect::Restart,
            _ => Effect::Live,
        }
    }
}

/// Checks an `http_base_url`: `http` or `https`, a host, no query or fragment, no user
/// info; answers it without a trailing `/` (paths are appended with one).
///
/// # Errors
/// The message naming `http_base_url` and what is wrong.
pub fn validate_base_url(u: &str) -> Result<String, String> {
    let bad = |why: &str| format!("'http_base_url' {u:?}: {why}");
    let parsed = url::Url::parse(u).map_err(|e| bad(&format!("not a URL ({e}); e.g. http://boot.lab.example:8080")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("must not have a query or fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("must not carry a user name or password"));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_each_bad_key() {
        let mut s = NetbootSettings::with_root(std::path::Path::new("/srv/boot"));
        assert!(s.validate().is_empty());
        s.http_base_url = Some("ftp://x".into());
        s.ipxe_script_path = "/other".into();
        let keys: Vec<String> = s.validate().into_iter().map(|p| p.key).collect();
        assert_eq!(keys, vec!["http_base_url", "ipxe_script_path"]);
        assert_eq!(
            validate_base_url("https://boot.lab/pxe/").as_deref(),
            Ok("https://boot.lab/pxe")
        );
    }

    #[test]
    fn a_fixed_receiver_keeps_its_value() {
        let rx = NetbootSettings::with_root(std::path::Path::new("/srv/boot")).fixed();
        assert_eq!(rx.borrow().root(), std::path::PathBuf::from("/srv/boot"));
        assert_eq!(rx.borrow().http_base_url, None);
    }
}
