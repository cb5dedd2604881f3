//! Networking value types and syntax rules shared by every resource (house style item
//! 16): the one MAC address type and the one set of name rules. DHCP, DNS, the boot
//! catalog, inventory, config and settings all validate through here, so a rule changes
//! in one place. Pure values and functions, no state.
//!
//! # Name rules (one function per meaning)
//! - A **host name** ([`validate_host_label`], [`validate_hostname`]) follows RFC 952 as
//!   relaxed by RFC 1123 §2.1 ("LDH"): labels of 1-63 letters, digits and `-`, not starting
//!   or ending with `-` (a leading digit is allowed), at most 253 characters in all. `_` is
//!   *not* allowed: it is not valid in a host name and DHCP clients and resolvers reject it.
//!   Hosts, DHCP reservations, the server name and upstream resolver names use this.
//! - A **DNS owner name** ([`validate_dns_label`], [`validate_domain_name`]) is what a
//!   record may be published under. It additionally allows `_` anywhere in a label, for
//!   service and attribute labels such as `_sip._tcp` (RFC 2782) and `_dmarc` (RFC 8552),
//!   and a lone `*` as the leftmost label (wildcards, RFC 4592 §2.1.1). Length limits are
//!   RFC 1035 §2.3.4's: 63 bytes per label, 255 bytes in wire form, which is 253
//!   characters of dotted text without the trailing dot.
//!
//! Both forms accept one trailing dot (an absolute name) and reject empty labels.

use std::{fmt, str::FromStr};

/// An Ethernet (EUI-48) MAC address.
///
/// Displayed lower case and colon separated (`52:54:00:77:00:42`), the form iPXE's
/// `${net0/mac}` uses; parsed by [`normalise_mac`] / [`FromStr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written into one buffer and padded once: a MAC is formatted for every boot
        // session and lease, where six `{:02x}` cost several times as much.
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b':'; 17];
        for (i, b) in self.0.iter().enumerate() {
            out[3 * i] = HEX[usize::from(b >> 4)];
            out[3 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        f.pad(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl FromStr for MacAddr {
    type Err = BadMac;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        normalise_mac(s)
    }
}

/// A string that is not a MAC address; holds the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a MAC address (expected six hex octets, e.g. 52:54:00:aa:bb:cc)")]
pub struct BadMac(pub String);

/// Parses a MAC in any case with `:`, `-` or `.` separators (`aabb.ccdd.eeff`), or none
/// (12 hex digits); surrounding white space is ignored.
///
/// # Errors
/// [`BadMac`] for anything that is not six hex octets.
pub fn normalise_mac(s: &str) -> Result<MacAddr, BadMac> {
    let hex: Vec<u8> = s.trim().bytes().filter(|c| !matches!(c, b':' | b'-' | b'.')).collect();
    if hex.len() != 12 || !hex.iter().all(u8::is_ascii_hexdigit) {
        return Err(BadMac(s.to_string()));
    }
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let mut out = [0u8; 6];
    for (i, o) in out.iter_mut().enumerate() {
        *o = nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]);
    }
    Ok(MacAddr(out))
}

/// Longest label, in bytes (RFC 1035 §2.3.4).
pub const MAX_LABEL_LEN: usize = 63;
/// Longest name in dotted text without the trailing dot (255 wire bytes, RFC 1035 §2.3.4:
/// each label costs its length plus one, plus the root's zero byte).
pub const MAX_NAME_LEN: usize = 253;

/// Why a host name or DNS name is not valid; the message says what is wrong and what is
/// allowed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// A label is empty (two dots in a row, or a leading dot).
    #[error("{0:?} has an empty label (two dots in a row or a leading dot)")]
    EmptyLabel(String),
    /// A label is longer than 63 bytes (RFC 1035 §2.3.4).
    #[error("label {0:?} is longer than 63 bytes (RFC 1035 §2.3.4)")]
    LabelTooLong(String),
    /// The whole name is longer than 253 characters / 255 wire bytes (RFC 1035 §2.3.4).
    #[error("{0:?} is longer than 253 characters (255 bytes in wire format, RFC 1035 §2.3.4)")]
    NameTooLong(String),
    /// A host-name label holds something other than letters, digits and inner `-`.
    #[error("label {0:?} may only hold letters, digits and '-', and must not start or end with '-' (host name, RFC 1123 §2.1)")]
    BadHostChar(String),
    /// A DNS label holds something other than letters, digits, `_` and inner `-`.
    #[error("label {0:?} may only hold letters, digits, '-' and '_', and must not start or end with '-'")]
    BadChar(String),
    /// `*` used other than as a whole leftmost label (RFC 4592 §2.1.1).
    #[error("{0:?}: '*' is only allowed as the whole leftmost label (RFC 4592)")]
    BadWildcard(String),
}

fn check_len(label: &str) -> Result<(), NameError> {
    if label.is_empty() {
        return Err(NameError::EmptyLabel(label.into()));
    }
    if label.len() > MAX_LABEL_LEN {
        return Err(NameError::LabelTooLong(label.into()));
    }
    Ok(())
}

fn inner_hyphens_only(label: &str) -> bool {
    !label.starts_with('-') && !label.ends_with('-')
}

/// Checks one host-name label (RFC 952, RFC 1123 §2.1): 1-63 bytes of letters, digits and
/// `-`, not starting or ending with `-`. `_` is rejected.
///
/// # Errors
/// [`NameError`] saying which rule failed.
pub fn validate_host_label(label: &str) -> Result<(), NameError> {
    check_len(label)?;
    let ok = label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !ok || !inner_hyphens_only(label) {
        return Err(NameError::BadHostChar(label.into()));
    }
    Ok(())
}

/// Checks one label of a DNS owner name: a host label that may also hold `_` (RFC 2782
/// `_sip._tcp`, RFC 8552), or a lone `*`. Whether `*` is in the leftmost position is
/// checked by [`validate_domain_name`].
///
/// # Errors
/// [`NameError`] saying which rule failed.
pub fn validate_dns_label(label: &str) -> Result<(), NameError> {
    check_len(label)?;
    if label == "*" {
        return Ok(());
    }
    let ok = label
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok || !inner_hyphens_only(label) {
        return Err(NameError::BadChar(label.into()));
    }
    Ok(())
}

/// Splits a dotted name into labels after the shared checks (empty, trailing dot, total
/// length), then runs `label_rule` on each.
fn validate_dotted(name: &str, label_rule: fn(&str) -> Result<(), NameError>) -> Result<(), NameError> {
    let t = name.strip_suffix('.').unwrap_or(name);
    if t.is_empty() {
        return Err(NameError::Empty);
    }
    if t.len() > MAX_NAME_LEN {
        return Err(NameError::NameTooLong(name.into()));
    }
    for label in t.split('.') {
        if label.is_empty() {
            return Err(NameError::EmptyLabel(name.into()));
        }
        label_rule(label)?;
    }
    Ok(())
}

/// The machine's host name, the default `[server] node_name` (`bootlane` when it cannot be
/// read or is not a valid host name, RFC 952/1123 as [`validate_hostname`] checks).
pub fn default_node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| validate_hostname(h).is_ok())
        .unwrap_or_else(|| "bootlane".into())
}

/// Checks a (possibly dotted) host name: every label passes [`validate_host_label`], at
/// most 253 characters, one trailing dot allowed.
///
/// # Errors
/// [`NameError`] saying which rule failed.
pub fn validate_hostname(name: &str) -> Result<(), NameError> {
    validate_dotted(name, validate_host_label)
}

/// Checks a DNS owner name: every label passes [`validate_dns_label`], `*` only as the
/// whole leftmost label, at most 253 characters, one trailing dot allowed.
///
/// # Errors
/// [`NameError`] saying which rule failed.
pub fn validate_domain_name(name: &str) -> Result<(), NameError> {
    validate_dotted(name, validate_dns_label)?;
    let t = name.strip_suffix('.').unwrap_or(name);
    if t.split('.').skip(1).any(|l| l.contains('*')) {
        return Err(NameError::BadWildcard(name.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_parses_every_separator_and_prints_one_form() {
        let want = MacAddr([0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc]);
        for s in [
            "52:54:00:aa:bb:cc",
            "52-54-00-AA-BB-CC",
            "5254.00aa.bbcc",
            "525400aabbcc",
            " 52:54:00:aa:bb:cc ",
        ] {
            assert_eq!(normalise_mac(s), Ok(want), "{s}");
        }
        assert_eq!(want.to_string(), "52:54:00:aa:bb:cc");
        assert_eq!("52:54:00:aa:bb:cc".parse::<MacAddr>(), Ok(want));
    }

    #[test]
    fn mac_rejects_wrong_length_and_non_hex() {
        for s in [
            "",
            "52:54:00:aa:bb",
            "52:54:00:aa:bb:cc:dd",
            "52:54:00:aa:bb:cg",
            "+2:54:00:aa:bb:cc",
            "é2:54:00:aa:bb:c",
        ] {
            assert_eq!(normalise_mac(s), Err(BadMac(s.to_string())), "{s:?}");
        }
    }

    #[test]
    fn underscore_is_a_dns_label_but_not_a_host_label() {
        assert!(validate_dns_label("_sip").is_ok());
        assert!(validate_domain_name("_sip._tcp.lab.test").is_ok());
        assert!(validate_dns_label("a_b").is_ok());
        assert_eq!(validate_host_label("_sip"), Err(NameError::BadHostChar("_sip".into())));
        assert_eq!(validate_host_label("a_b"), Err(NameError::BadHostChar("a_b".into())));
        assert!(validate_hostname("_sip._tcp.lab.test").is_err());
    }

    #[test]
    fn hyphens_only_inside() {
        for f in [validate_host_label, validate_dns_label] {
            assert!(f("a-b").is_ok());
            assert!(f("-ab").is_err());
            assert!(f("ab-").is_err());
            assert!(f("-").is_err());
        }
        // RFC 1123 §2.1: a leading digit is fine.
        assert!(validate_host_label("1host").is_ok());
    }

    #[test]
    fn label_length_limit_is_63() {
        let ok = "a".repeat(63);
        let long = "a".repeat(64);
        for f in [validate_host_label, validate_dns_label] {
            assert!(f(&ok).is_ok());
            assert_eq!(f(&long), Err(NameError::LabelTooLong(long.clone())));
            assert_eq!(f(""), Err(NameError::EmptyLabel(String::new())));
        }
    }

    #[test]
    fn name_length_limit_is_253_without_the_trailing_dot() {
        // 63+1+63+1+63+1+61 = 253 characters.
        let max = [&"a".repeat(63)[..], &"b".repeat(63), &"c".repeat(63), &"d".repeat(61)].join(".");
        assert_eq!(max.len(), 253);
        for f in [validate_hostname, validate_domain_name] {
            assert!(f(&max).is_ok());
            assert!(f(&format!("{max}.")).is_ok(), "trailing dot does not count");
            let over = format!("{max}e");
            assert_eq!(f(&over), Err(NameError::NameTooLong(over.clone())));
        }
    }

    #[test]
    fn empty_labels_and_trailing_dot() {
        for f in [validate_hostname, validate_domain_name] {
            assert_eq!(f(""), Err(NameError::Empty));
            assert_eq!(f("."), Err(NameError::Empty));
            assert!(f("host.lab.").is_ok());
            assert_eq!(f("host..lab"), Err(NameError::EmptyLabel("host..lab".into())));
            assert_eq!(f(".host"), Err(NameError::EmptyLabel(".host".into())));
            assert_eq!(f("host.."), Err(NameError::EmptyLabel("host..".into())));
            assert!(f("a b").is_err());
        }
    }

    #[test]
    fn wildcard_only_leftmost_and_never_a_host() {
        assert!(validate_domain_name("*.lab.test").is_ok());
        assert!(validate_domain_name("a.*.lab.test").is_err());
        assert!(validate_domain_name("a*.lab.test").is_err());
        assert!(validate_hostname("*.lab.test").is_err());
    }
}
