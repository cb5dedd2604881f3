//! Access control (spec "Access control"): which machines Bootlane serves on the wire.
//! Three lists live in the store — the blacklist and the whitelist
//! ([`model::AccessEntry`]: a full MAC or a MAC prefix such as the OUI `52:54:00`, with a
//! note) and the unauthorized devices ([`model::UnauthorizedDevice`]: machines that asked
//! while not allowed) — and one mode ([`Mode`]): `off` (serve everyone, the default),
//! `blacklist` (refuse listed machines) or `whitelist` (serve only listed machines; the
//! others are recorded as unauthorized).
//!
//! Enforcement is one cheap call on each protocol's hot path, [`gate::AccessGate::check`],
//! over an in-memory snapshot of the mode and both lists that [`service::AccessService`]
//! (the single write path) swaps after every write, so a change applies to the very next
//! packet and no packet reads the store. Where a refusal happens and what the client sees:
//! - DHCP server and proxyDHCP: no answer at all (a refused client sees a silent network);
//! - TFTP: the client's IP is mapped to its MAC (the DHCP lease, or the address a client
//!   announced in a DHCP request) and a refused read gets ERROR 2 "access violation",
//!   RFC 1350 §7's code for a request that cannot be satisfied for access reasons (the
//!   firmware gives up at once rather than retrying into a timeout);
//! - HTTP boot: the iPXE script (`/boot/ipxe?mac=`) becomes a short script that says the
//!   machine is not authorised and `exit`s (back to the firmware, which tries the local
//!   disk); any other `/boot/...` file is a 403.
//!
//! Refusals are recorded and reported off the hot path (a bounded queue to one task): in
//! whitelist mode the device is upserted into the unauthorized list by MAC (count, first
//! and last seen, last IP, option 93 architecture, option 60 vendor class, protocol); in
//! blacklist mode it is not (it is already listed). Either way an `access.refused` event is
//! published at most once per device per minute, carrying how many refusals it stood for.
//!
//! This module owns the `[access]` configuration section ([`AccessConfig`]; `config.rs`
//! only aggregates). The mode in force is the stored one (`PUT /access/mode`) or else the
//! file's. State: the service and its gate, built once in `bootlane::app::build`; the
//! recorder task stops with the server's cancellation token.

pub mod gate;
pub mod model;
pub mod service;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The access mode: who is served on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Everyone is served; the lists are kept but not enforced (the default).
    #[default]
    Off,
    /// Machines matching a blacklist entry are refused; everyone else is served.
    Blacklist,
    /// Only machines matching a whitelist entry are served; others are refused and
    /// recorded as unauthorized.
    Whitelist,
}

impl Mode {
    /// The lower-case name (`off`, `blacklist`, `whitelist`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Blacklist => "blacklist",
            Self::Whitelist => "whitelist",
        }
    }
}

/// `[access]`: access control defaults.
///
/// ```toml
/// [access]
/// mode = "off"   # off | blacklist | whitelist; default off. PUT /api/v1/access/mode overrides it
/// ```
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AccessConfig {
    /// `off`, `blacklist` or `whitelist`, used until a mode is stored with `PUT
    /// /api/v1/access/mode`. See [Access control](access.md).
    pub mode: Mode,
}

impl AccessConfig {
    /// Checks the section (every value the type admits is valid; kept for symmetry with
    /// the other sections).
    ///
    /// # Errors
    /// Never today.
    pub fn validate(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parses_each_mode_and_refuses_others() {
        assert_eq!(AccessConfig::default().mode, Mode::Off);
        for (s, m) in [
            ("off", Mode::Off),
            ("blacklist", Mode::Blacklist),
            ("whitelist", Mode::Whitelist),
        ] {
            let c: AccessConfig = toml::from_str(&format!("mode = \"{s}\"")).unwrap();
            assert_eq!(c.mode, m);
            assert_eq!(m.as_str(), s);
        }
        assert!(toml::from_str::<AccessConfig>("mode = \"deny\"").is_err());
        assert!(toml::from_str::<AccessConfig>("modes = \"off\"").is_err());
    }
}
