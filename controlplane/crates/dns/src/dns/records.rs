//! The DNS record resource (spec "DNS record"): the stored shape [`DnsRecord`], the API
//! input [`RecordInput`], and validation that turns one into the other. Names are stored
//! lowercased as the user wrote them (relative names stay relative, so a change of local
//! domain moves them along); `fqdn` is computed on output. Pure data and functions, no
//! state.

use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::Name;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::names;
use bootlane_core::net::types::NameError;

/// Record types with local data (spec "Built-in DNS server", item 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, PartialOrd, Ord)]
#[serde(rename_all = "UPPERCASE")]
pub enum RecordKind {
    /// IPv4 address (RFC 1035 §3.4.1).
    A,
    /// IPv6 address (RFC 3596).
    #[allow(clippy::upper_case_acronyms)]
    AAAA,
    /// Alias (RFC 1035 §3.3.1).
    #[allow(clippy::upper_case_acronyms)]
    CNAME,
    /// Text (RFC 1035 §3.3.14).
    #[allow(clippy::upper_case_acronyms)]
    TXT,
    /// Mail exchange (RFC 1035 §3.3.9).
    MX,
}

impl RecordKind {
    /// Parses `A`, `AAAA`, `CNAME`, `TXT`, `MX` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_uppercase().as_str() {
            "A" => Self::A,
            "AAAA" => Self::AAAA,
            "CNAME" => Self::CNAME,
            "TXT" => Self::TXT,
            "MX" => Self::MX,
            _ => return None,
        })
    }

    /// The upper-case type mnemonic.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::A => "A",
            Self::AAAA => "AAAA",
            Self::CNAME => "CNAME",
            Self::TXT => "TXT",
            Self::MX => "MX",
        }
    }
}

/// Default TTL in seconds.
pub const DEFAULT_TTL: u32 = 300;
/// Default MX preference.
pub const DEFAULT_MX_PRIORITY: u16 = 10;
/// Longest TXT value accepted, in bytes (split into 255-byte strings on the wire).
pub const MAX_TXT_BYTES: usize = 4000;

/// A stored DNS record. JSON shape of the API's record objects.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct DnsRecord {
    /// Unique id (assigned by the server).
    pub id: u64,
    /// Name as given, lowercased: `@`, a relative name (`host1`) or an absolute one (`www.example.com.`).
    pub name: String,
    /// Absolute name this record answers for, with a trailing dot (read-only, computed).
    #[serde(default)]
    pub fqdn: String,
    /// Record type.
    #[serde(rename = "type")]
    pub kind: RecordKind,
    /// Record data: an IPv4/IPv6 address, a target name (CNAME, MX) or text (TXT).
    pub value: String,
    /// TTL in seconds.
    pub ttl: u32,
    /// MX preference (0-65535); `null` for other types.
    pub priority: Option<u16>,
    /// If set, the record is answered only to clients inside this CIDR, and wins over
    /// global records of the same name and type.
    #[schema(value_type = Option<String>, example = "10.77.0.0/24")]
    pub subnet: Option<IpNet>,
    /// Disabled records are kept but never answered.
    pub enabled: bool,
    /// Created by the server (auto-records: `@` and the server's own name); read-only.
    pub auto: bool,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(DnsRecord, "dns_records");

impl DnsRecord {
    /// The absolute owner name under `origin`; `None` if the stored name no longer parses
    /// (it was validated on write, so only a corrupt store gets here).
    pub fn owner(&self, origin: &Name) -> Option<Name> {
        names::absolute(&self.name, origin).ok()
    }

    /// Fills the computed `fqdn` field for output.
    pub fn with_fqdn(mut self, origin: &Name) -> Self {
        self.fqdn = self.owner(origin).map(|n| names::display(&n)).unwrap_or_default();
        self
    }

    /// True when `self` and `other` hold the same data (name, type, value, priority, subnet).
    pub fn same_data(&self, other: &Self, origin: &Name) -> bool {
        self.owner(origin) == other.owner(origin)
            && self.kind == other.kind
            && self.value.eq_ignore_ascii_case(&other.value)
            && self.priority == other.priority
            && self.subnet == other.subnet
    }
}

/// Body of `POST /dns/records` and `PUT /dns/records/{id}`. On PUT, omitted fields keep
/// their stored value.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// Record name (`@`, relative or absolute). Required on create.
    pub name: Option<String>,
    /// `A`, `AAAA`, `CNAME`, `TXT` or `MX`. Required on create.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Record data. Required on create. For MX, `"10 mail.example.com"` is also accepted.
    pub value: Option<String>,
    /// TTL in seconds (0-2147483647, RFC 2181 §8). Default 300.
    pub ttl: Option<u32>,
    /// MX preference, 0-65535. Default 10. Only for MX.
    pub priority: Option<u32>,
    /// Client subnet (CIDR) this record is limited to; `null` or `""` for all clients.
    pub subnet: Option<String>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Read-only fields, accepted and ignored so a GET body can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub fqdn: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub auto: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

/// A validation failure: the message says which field is wrong and how to fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Invalid(pub String);

fn invalid(msg: impl Into<String>) -> Invalid {
    Invalid(msg.into())
}

/// Validates `input` (merged over `base` for updates) and returns the record to store.
/// `now` becomes `updated_at` (and `created_at` for new records).
///
/// # Errors
/// [`Invalid`] naming the field and the rule.
pub fn validate(
    input: &RecordInput,
    base: Option<&DnsRecord>,
    origin: &Name,
    now: OffsetDateTime,
) -> Result<DnsRecord, Invalid> {
    let name = input
        .name
        .clone()
        .or_else(|| base.map(|b| b.name.clone()))
        .ok_or_else(|| invalid("'name' is required: use '@' for the local domain, 'host1' for host1.<local domain>, or an absolute name ending in '.'"))?;
    let kind_str = input
        .kind
        .clone()
        .or_else(|| base.map(|b| b.kind.as_str().to_string()))
        .ok_or_else(|| invalid("'type' is required: one of A, AAAA, CNAME, TXT, MX"))?;
    let kind = RecordKind::parse(kind_str.trim()).ok_or_else(|| {
        invalid(format!(
            "'type' {kind_str:?} is not supported: use one of A, AAAA, CNAME, TXT, MX"
        ))
    })?;
    let value = input
        .value
        .clone()
        .or_else(|| base.map(|b| b.value.clone()))
        .ok_or_else(|| invalid("'value' is required"))?;
    let name = name.trim().to_ascii_lowercase();
    let owner = names::absolute(&name, origin).map_err(|e| name_err("name", e))?;
    if owner.len() > 255 {
        return Err(invalid(
            "'name' is longer than 255 bytes once the local domain is appended",
        ));
    }
    let ttl = input.ttl.or(base.map(|b| b.ttl)).unwrap_or(DEFAULT_TTL);
    if ttl > i32::MAX as u32 {
        return Err(invalid("'ttl' must be 0-2147483647 seconds (RFC 2181 §8)"));
    }
    let subnet = match &input.subnet {
        Some(s) if s.trim().is_empty() => None,
        Some(s) => Some(
            s.trim()
                .parse::<IpNet>()
                .map_err(|_| {
                    invalid(format!(
                        "'subnet' {s:?} is not a CIDR such as 10.77.0.0/24 or fd77::/64"
                    ))
                })?
                .trunc(),
        ),
        None => base.and_then(|b| b.subnet),
    };
    let mut priority = None;
    let value = match kind {
        RecordKind::A => value
            .trim()
            .parse::<Ipv4Addr>()
            .map_err(|_| {
                invalid(format!(
                    "an A record's 'value' must be an IPv4 address such as 10.0.0.5, not {value:?}"
                ))
            })?
            .to_string(),
        RecordKind::AAAA => value
            .trim()
            .parse::<Ipv6Addr>()
            .map_err(|_| {
                invalid(format!(
                    "an AAAA record's 'value' must be an IPv6 address such as fd00::5, not {value:?}"
                ))
            })?
            .to_string(),
        RecordKind::CNAME => {
            let v = value.trim().to_ascii_lowercase();
            let target = names::absolute_target(&v, origin).map_err(|e| name_err("value", e))?;
            if target == owner {
                return Err(invalid("a CNAME must not point at its own name"));
            }
            v
        }
        RecordKind::MX => {
            let v = value.trim();
            let (pref, host) = match v.split_once(char::is_whitespace) {
                Some((p, h)) if p.parse::<u32>().is_ok() => (Some(p.parse::<u32>().unwrap_or(0)), h.trim()),
                _ => (None, v),
            };
            let p = input
                .priority
                .or(pref)
                .or(base.and_then(|b| b.priority).map(u32::from))
                .unwrap_or(u32::from(DEFAULT_MX_PRIORITY));
            let p = u16::try_from(p).map_err(|_| invalid("'priority' must be 0-65535"))?;
            priority = Some(p);
            let host = host.to_ascii_lowercase();
            names::absolute_target(&host, origin).map_err(|e| name_err("value", e))?;
            host
        }
        RecordKind::TXT => {
            if value.len() > MAX_TXT_BYTES {
                return Err(invalid(format!(
                    "a TXT 'value' may be at most {MAX_TXT_BYTES} bytes (it is split into 255-byte strings)"
                )));
            }
            value.clone()
        }
    };
    if kind != RecordKind::MX && input.priority.is_some() {
        return Err(invalid("'priority' is only valid for MX records"));
    }
    Ok(DnsRecord {
        id: base.map(|b| b.id).unwrap_or(0),
        name,
        fqdn: names::display(&owner),
        kind,
        value,
        ttl,
        priority,
        subnet,
        enabled: input.enabled.or(base.map(|b| b.enabled)).unwrap_or(true),
        auto: base.map(|b| b.auto).unwrap_or(false),
        created_at: base.map(|b| b.created_at).unwrap_or(now),
        updated_at: now,
    })
}

fn name_err(field: &str, e: NameError) -> Invalid {
    invalid(format!("'{field}' is not a valid domain name: {e}"))
}

/// Splits a TXT value into character-strings of at most 255 bytes (RFC 1035 §3.3.14),
/// never inside a UTF-8 sequence.
pub fn txt_strings(value: &str) -> Vec<String> {
    if value.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in value.chars() {
        if cur.len() + ch.len_utf8() > 255 {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Name {
        names::parse_domain("bootlane.local").unwrap()
    }

    fn input(name: &str, kind: &str, value: &str) -> RecordInput {
        RecordInput {
            name: Some(name.into()),
            kind: Some(kind.into()),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    #[test]
    fn validates_each_type() {
        let now = OffsetDateTime::now_utc();
        let r = validate(&input("Host1", "a", "10.0.0.5"), None, &origin(), now).unwrap();
        assert_eq!(
            (r.name.as_str(), r.fqdn.as_str(), r.ttl, r.enabled),
            ("host1", "host1.bootlane.local.", 300, true)
        );
        assert!(validate(&input("h", "A", "fd00::1"), None, &origin(), now).is_err());
        assert!(validate(&input("h", "AAAA", "10.0.0.1"), None, &origin(), now).is_err());
        assert!(validate(&input("h", "CNAME", "bad name"), None, &origin(), now).is_err());
        assert!(validate(&input("h", "SRV", "x"), None, &origin(), now)
            .unwrap_err()
            .0
            .contains("A, AAAA, CNAME, TXT, MX"));
        let mx = validate(&input("@", "MX", "20 mail.example.com"), None, &origin(), now).unwrap();
        assert_eq!((mx.priority, mx.value.as_str()), (Some(20), "mail.example.com"));
        let mx = validate(&input("@", "MX", "mail"), None, &origin(), now).unwrap();
        assert_eq!(mx.priority, Some(10));
        let mut bad = input("h", "A", "10.0.0.1");
        bad.subnet = Some("10.0.0.0/33".into());
        assert!(validate(&bad, None, &origin(), now).unwrap_err().0.contains("subnet"));
    }

    #[test]
    fn txt_splits_at_255() {
        let v = "x".repeat(600);
        let s = txt_strings(&v);
        assert_eq!(s.iter().map(String::len).collect::<Vec<_>>(), vec![255, 255, 90]);
    }
}
