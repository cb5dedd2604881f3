//! Access-control records and their rules: [`MacPattern`] (a full MAC or a MAC prefix of
//! 3-5 octets, the OUI `52:54:00` being the usual one), [`AccessEntry`] (one blacklist or
//! whitelist entry, table `access_entries`, the list named in the record), and
//! [`UnauthorizedDevice`] (a machine that asked while not allowed, table
//! `access_unauthorized`, one record per MAC). Pure values; no state.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::net::types::MacAddr;

/// Shortest prefix accepted, in octets (an OUI, IEEE MA-L).
pub const MIN_PREFIX: usize = 3;

/// A MAC address or a MAC prefix.
///
/// Parsed from hex octets separated by `:` or `-` (one separator style, every octet two
/// hex digits), or from bare hex digits (`525400`, `525400770042`), or the
/// Cisco dotted form of a full MAC (`5254.0077.0042`); any case, surrounding ASCII white
/// space ignored. 3, 4 or 5 octets make a prefix (3 is the OUI; 4 and 5 cover the longer IEEE
/// MA-M / MA-S blocks rounded to whole octets), 6 octets a full MAC. Displayed lower case
/// and colon separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacPattern {
    octets: [u8; 6],
    len: u8,
}

/// A string that is neither a MAC nor a MAC prefix; the message names the forms accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a MAC address or MAC prefix: expected a full MAC (52:54:00:77:00:42, 52-54-00-77-00-42 or \
     525400770042) or a prefix of 3-5 octets such as the OUI 52:54:00 (also 52-54-00 or 525400)"
)]
pub struct BadPattern(pub String);

impl MacPattern {
    /// Parses a MAC or a prefix (see the type docs).
    ///
    /// # Errors
    /// [`BadPattern`] holding the input.
    pub fn parse(s: &str) -> Result<Self, BadPattern> {
        let bad = || BadPattern(s.to_string());
        // ASCII white space only, as the OpenAPI pattern says (`char::is_whitespace` would
        // also take U+0085, which a JSON Schema `\s` does not).
        let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
        let hex: String = if t.contains([':', '-']) {
            let parts: Vec<&str> = t.split([':', '-']).collect();
            // One separator style per pattern, and every octet two digits.
            if (t.contains(':') && t.contains('-')) || parts.iter().any(|p| p.len() != 2) {
                return Err(bad());
            }
            parts.concat()
        } else if t.contains('.') {
            let parts: Vec<&str> = t.split('.').collect();
            if parts.len() != 3 || parts.iter().any(|p| p.len() != 4) {
                return Err(bad());
            }
            parts.concat()
        } else {
            t.to_string()
        };
        if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let n = hex.len() / 2;
        if !(MIN_PREFIX..=6).contains(&n) {
            return Err(bad());
        }
        let mut octets = [0u8; 6];
        for (i, o) in octets.iter_mut().take(n).enumerate() {
            *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self { octets, len: n as u8 })
    }

    /// The pattern matching exactly `mac`.
    pub fn exact(mac: MacAddr) -> Self {
        Self { octets: mac.0, len: 6 }
    }

    /// True for a full MAC, false for a prefix.
    pub fn is_full(&self) -> bool {
        self.len == 6
    }

    /// Octets that must match (3-6).
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Never true (a pattern has at least [`MIN_PREFIX`] octets); for clippy's `len` rule.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The octets that must match.
    pub fn octets(&self) -> &[u8] {
        &self.octets[..self.len()]
    }

    /// True when `mac` starts with this pattern (equals it, for a full MAC).
    pub fn matches(&self, mac: MacAddr) -> bool {
        mac.0.starts_with(self.octets())
    }
}

impl fmt::Display for MacPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, o) in self.octets().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{o:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for MacPattern {
    type Err = BadPattern;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Which list an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListKind {
    /// Refused in blacklist mode.
    Blacklist,
    /// Served in whitelist mode.
    Whitelist,
}

impl ListKind {
    /// `blacklist` or `whitelist`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blacklist => "blacklist",
            Self::Whitelist => "whitelist",
        }
    }
}

/// One blacklist or whitelist entry.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct AccessEntry {
    /// Id (increasing).
    pub id: u64,
    /// The list it is on.
    pub list: ListKind,
    /// A full MAC (`52:54:00:77:00:42`) or a prefix (`52:54:00`), lower-case colon form.
    pub mac: String,
    /// True when `mac` is a prefix (matches every MAC starting with it).
    pub prefix: bool,
    /// Free text (at most 256 bytes).
    pub note: String,
    /// When it was added, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created: OffsetDateTime,
}

bootlane_core::store::entity!(AccessEntry, "access_entries");

impl AccessEntry {
    /// The stored pattern (`None` only for a record edited by hand into nonsense).
    pub fn pattern(&self) -> Option<MacPattern> {
        MacPattern::parse(&self.mac).ok()
    }
}

/// The protocol a client used when it was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = AccessProtocol)]
pub enum Protocol {
    /// DHCP server mode (port 67).
    Dhcp,
    /// proxyDHCP (ports 67 and 4011).
    ProxyDhcp,
    /// A TFTP read request.
    Tftp,
    /// An HTTP boot file (`/boot/...`).
    Http,
    /// The iPXE script (`/boot/ipxe`).
    Ipxe,
}

impl Protocol {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dhcp => "dhcp",
            Self::ProxyDhcp => "proxydhcp",
            Self::Tftp => "tftp",
            Self::Http => "http",
            Self::Ipxe => "ipxe",
        }
    }
}

/// A machine that asked while not allowed (whitelist mode), one record per MAC.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct UnauthorizedDevice {
    /// Id.
    pub id: u64,
    /// The machine's MAC, lower-case colon form.
    pub mac: String,
    /// First refusal, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub first_seen: OffsetDateTime,
    /// Latest refusal, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_seen: OffsetDateTime,
    /// Refused requests recorded (each DHCP datagram, TFTP read or HTTP request).
    pub count: u64,
    /// The latest IP address it used or asked for, if any (none before its first lease).
    pub last_ip: Option<String>,
    /// Client system architecture, DHCP option 93 (RFC 4578 §2.1: 0 BIOS, 7 and 9 EFI
    /// x86-64, 11 ARM64 EFI, ...), as last seen in a DHCP request.
    pub arch: Option<u16>,
    /// DHCP option 60 vendor class, as last seen (e.g. `PXEClient:Arch:00000:UNDI:002001`).
    pub vendor_class: Option<String>,
    /// The protocol of the latest refused request.
    pub last_protocol: Protocol,
}

bootlane_core::store::entity!(UnauthorizedDevice, "access_unauthorized");

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(s: &str) -> MacAddr {
        bootlane_core::net::types::normalise_mac(s).unwrap()
    }

    #[test]
    fn patterns_parse_every_accepted_form_and_print_one() {
        for s in [
            "52:54:00",
            "52-54-00",
            "525400",
            " 52:54:00 ",
            "52:54:00".to_uppercase().as_str(),
        ] {
            let p = MacPattern::parse(s).unwrap();
            assert_eq!(
                (p.to_string(), p.is_full(), p.len()),
                ("52:54:00".into(), false, 3),
                "{s}"
            );
        }
        for s in [
            "52:54:00:77:00:42",
            "52-54-00-77-00-42",
            "525400770042",
            "5254.0077.0042",
            "52:54:00:77:00:4A",
        ] {
            let p = MacPattern::parse(s).unwrap();
            assert!(p.is_full(), "{s}");
            assert!(p.to_string().starts_with("52:54:00:77:00:4"), "{s}");
        }
        assert_eq!(MacPattern::parse("aa:bb:cc:dd").unwrap().len(), 4);
        assert_eq!(MacPattern::parse("aabbccddee").unwrap().to_string(), "aa:bb:cc:dd:ee");
        assert_eq!(
            MacPattern::exact(mac("aa:bb:cc:dd:ee:ff")).to_string(),
            "aa:bb:cc:dd:ee:ff"
        );
    }

    #[test]
    fn patterns_refuse_everything_else_naming_the_forms() {
        for s in [
            "",
            "52",
            "52:54",
            "5254",
            "52:54:00:77:00:42:01",
            "52:5:00",
            "52:54-00",
            "zz:54:00",
            "52545",
            "52:54:00:",
            "5254.0077",
            "52.54.00",
        ] {
            let e = MacPattern::parse(s).unwrap_err();
            assert!(e.to_string().contains("OUI 52:54:00"), "{s}: {e}");
        }
    }

    #[test]
    fn prefixes_match_by_leading_octets_and_full_macs_exactly() {
        let oui = MacPattern::parse("52:54:00").unwrap();
        assert!(oui.matches(mac("52:54:00:77:00:42")));
        assert!(oui.matches(mac("52:54:00:00:00:00")));
        assert!(!oui.matches(mac("52:54:01:77:00:42")));
        assert!(!oui.matches(mac("00:52:54:00:77:00")));
        let four = MacPattern::parse("52:54:00:77").unwrap();
        assert!(four.matches(mac("52:54:00:77:99:99")) && !four.matches(mac("52:54:00:78:00:00")));
        let full = MacPattern::parse("52:54:00:77:00:42").unwrap();
        assert!(full.matches(mac("52:54:00:77:00:42")));
        assert!(!full.matches(mac("52:54:00:77:00:43")));
    }
}
