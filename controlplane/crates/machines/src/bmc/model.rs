//! The BMC config resource: as stored ([`BmcConfig`], password sealed by
//! [`super::secret`]), as the API shows it ([`BmcView`]: `has_password`, never the
//! password), the merge input of create, update and the CSV import ([`BmcInput`]) and its
//! validation ([`BmcConfig::apply`]); the values a BMC reports ([`PowerState`],
//! [`Identity`], [`LastStatus`]). Pure values, no state; uniqueness, the host link and
//! storage are [`super::service::BmcService`]'s.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::{
    net::types::validate_hostname,
    service_error::{double_option, short_text, ServiceError},
};

/// How Bootlane talks to a BMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// IPMI 2.0 over LAN (RMCP+, `ipmitool -I lanplus`), UDP port 623 by default.
    Ipmi,
    /// DMTF Redfish over HTTPS (port 443 by default; `http://` in the address: port 80).
    Redfish,
}

impl Protocol {
    /// The lower-case name (`ipmi`, `redfish`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ipmi => "ipmi",
            Self::Redfish => "redfish",
        }
    }

    /// Parses `ipmi` / `redfish` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ipmi" => Some(Self::Ipmi),
            "redfish" => Some(Self::Redfish),
            _ => None,
        }
    }
}

/// A machine's power state as its BMC reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PowerState {
    /// Powered on.
    On,
    /// Powered off.
    Off,
    /// Anything else (Redfish `PoweringOn`, `PoweringOff`, `Paused`, ...).
    Unknown,
}

/// What a BMC says about its machine (read by probe and refresh).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Identity {
    /// Manufacturer (Redfish `Manufacturer`; IPMI FRU product manufacturer, else `mc info`).
    pub manufacturer: Option<String>,
    /// Model (Redfish `Model`; IPMI FRU product name, else `mc info` product name).
    pub model: Option<String>,
    /// Serial number (Redfish `SerialNumber`; IPMI FRU product, board or chassis serial).
    pub serial: Option<String>,
}

/// The last thing Bootlane learnt from a BMC (`GET /bmc/{id}/status`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LastStatus {
    /// Power state at `last_checked`; `null` before the first contact.
    pub power_state: Option<PowerState>,
    /// When the BMC was last contacted (RFC 3339), successfully or not.
    #[serde(with = "time::serde::rfc3339::option", default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_checked: Option<OffsetDateTime>,
    /// Why the last contact failed; `null` when it succeeded.
    pub last_error: Option<String>,
}

/// A BMC config as stored (the password sealed; never serialised to clients, see
/// [`BmcView`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BmcConfig {
    /// Id.
    pub id: u64,
    /// The inventory host this BMC powers, if linked (at most one config per host).
    pub host_id: Option<u64>,
    /// Name, unique (case-insensitive).
    pub name: String,
    /// Address: an IP or a host name; for Redfish optionally `http://` or `https://` first.
    pub address: String,
    /// Port; `None`: the protocol's default (623, 443, or 80 for `http://`).
    pub port: Option<u16>,
    /// Protocol.
    pub protocol: Protocol,
    /// User name.
    pub user: String,
    /// The password sealed by [`super::secret::SecretBox`]; empty when none.
    pub password: String,
    /// IPMI cipher suite id (`ipmitool -C`).
    pub cipher_suite: u8,
    /// Redfish system id (`/redfish/v1/Systems/<id>`); `None`: the first member.
    pub system_id: Option<String>,
    /// Verify the Redfish server's TLS certificate.
    pub verify_tls: bool,
    /// Last status.
    #[serde(default)]
    pub status: LastStatus,
    /// Identity read by the last refresh.
    #[serde(default)]
    pub identity: Identity,
    /// Creation time.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(BmcConfig, "bmc_configs");

/// A BMC config as the API shows it: [`BmcConfig`] with `has_password` for the password.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BmcView {
    /// Id.
    pub id: u64,
    /// Linked inventory host id, if any.
    pub host_id: Option<u64>,
    /// Name, unique.
    pub name: String,
    /// Address as entered (IP or host name; Redfish may start with `http://`/`https://`).
    pub address: String,
    /// Port in use (the protocol's default when none was set).
    pub port: u16,
    /// `ipmi` or `redfish`.
    pub protocol: Protocol,
    /// User name.
    pub user: String,
    /// True when a password is stored (the password itself is write-only).
    pub has_password: bool,
    /// IPMI cipher suite id (default 3).
    pub cipher_suite: u8,
    /// Redfish system id; `null`: the first member of `/redfish/v1/Systems`.
    pub system_id: Option<String>,
    /// Whether the Redfish TLS certificate is verified (default true).
    pub verify_tls: bool,
    /// Last status (power state, last checked, last error).
    pub status: LastStatus,
    /// Manufacturer, model and serial from the last refresh or probe.
    pub identity: Identity,
    /// Creation time (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

impl From<&BmcConfig> for BmcView {
    fn from(c: &BmcConfig) -> Self {
        Self {
            id: c.id,
            host_id: c.host_id,
            name: c.name.clone(),
            address: c.address.clone(),
            port: c.effective_port(),
            protocol: c.protocol,
            user: c.user.clone(),
            has_password: !c.password.is_empty(),
            cipher_suite: c.cipher_suite,
            system_id: c.system_id.clone(),
            verify_tls: c.verify_tls,
            status: c.status.clone(),
            identity: c.identity.clone(),
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// Body of `POST /bmc/configs` (`name`, `address`, `protocol`, `user` required) and of
/// `PUT /bmc/configs/{id}` (omitted fields keep their values, `null` clears an optional
/// one), and one row of the CSV import.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BmcInput {
    /// Name, 1-64 bytes, unique (case-insensitive).
    pub name: Option<String>,
    /// The inventory host this BMC powers (`POST /hosts/{id}/power` then uses it); one
    /// config per host. `null` unlinks.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u64>)]
    pub host_id: Option<Option<u64>>,
    /// IPv4/IPv6 address or host name; for Redfish optionally `https://` (the default)
    /// or `http://` first.
    pub address: Option<String>,
    /// Port, 1-65535; `null`/absent: 623 (IPMI), 443 (Redfish), 80 (Redfish `http://`).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u16>, minimum = 1, maximum = 65535)]
    pub port: Option<Option<u16>>,
    /// `ipmi` or `redfish`.
    pub protocol: Option<Protocol>,
    /// User name, 1-64 bytes (IPMI: at most 16).
    pub user: Option<String>,
    /// Password, write-only, at most 128 bytes (IPMI: at most 20). Stored encrypted.
    pub password: Option<String>,
    /// IPMI cipher suite id, 0-17 (default 3: RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128).
    #[schema(minimum = 0, maximum = 17)]
    pub cipher_suite: Option<u8>,
    /// Redfish system id (letters, digits, `.`, `_`, `-`, `:`; at most 128); `null`: the
    /// first member of `/redfish/v1/Systems`.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub system_id: Option<Option<String>>,
    /// Verify the Redfish TLS certificate (default true; BMCs often have self-signed ones).
    pub verify_tls: Option<bool>,
}

/// Splits a BMC address into (`https` for Redfish unless `http://` is given, the host).
/// The host is an IP literal (IPv6 with or without brackets) or a host name.
///
/// # Errors
/// [`ServiceError::Invalid`] naming `field`.
pub fn parse_address(field: &str, address: &str, protocol: Protocol) -> Result<(bool, String), ServiceError> {
    let a = address.trim();
    let (tls, rest) = if let Some(r) = a.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = a.strip_prefix("http://") {
        (false, r)
    } else {
        (true, a)
    };
    if rest.len() != a.len() && protocol == Protocol::Ipmi {
        return Err(ServiceError::Invalid(format!(
            "'{field}': an IPMI address is a bare IP or host name, without http:// or https://"
        )));
    }
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let host = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')).unwrap_or(rest);
    if host.parse::<IpAddr>().is_ok() || (validate_hostname(host).is_ok() && host.len() <= 253) {
        return Ok((tls, host.to_ascii_lowercase()));
    }
    Err(ServiceError::Invalid(format!(
        "'{field}' must be an IP address or a host name (for Redfish optionally after http:// or https://; the port goes in 'port'), got {address:?}"
    )))
}

impl BmcConfig {
    /// A config with no values yet (`apply` fills it in).
    pub fn blank(now: OffsetDateTime) -> Self {
        Self {
            id: 0,
            host_id: None,
            name: String::new(),
            address: String::new(),
            port: None,
            protocol: Protocol::Ipmi,
            user: String::new(),
            password: String::new(),
            cipher_suite: 3,
            system_id: None,
            verify_tls: true,
            status: LastStatus::default(),
            identity: Identity::default(),
            created_at: now,
            updated_at: now,
        }
    }

    /// The port in use: the set one or the protocol's default.
    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or(match self.protocol {
            Protocol::Ipmi => 623,
            Protocol::Redfish if self.address.trim().starts_with("http://") => 80,
            Protocol::Redfish => 443,
        })
    }

    /// Merges `input` into `self` and validates the result. `creating` makes `name`,
    /// `address`, `protocol` and `user` required. A new password is handed to `seal`.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the first bad field.
    pub fn apply(
        &mut self,
        input: BmcInput,
        creating: bool,
        seal: &dyn Fn(&str) -> String,
    ) -> Result<(), ServiceError> {
        let missing = |f: &str| ServiceError::Invalid(format!("'{f}' is required"));
        if creating {
            for (set, f) in [
                (input.name.is_some(), "name"),
                (input.address.is_some(), "address"),
                (input.protocol.is_some(), "protocol"),
                (input.user.is_some(), "user"),
            ] {
                if !set {
                    return Err(missing(f));
                }
            }
        }
        if let Some(n) = input.name {
            let n = short_text("name", n.trim(), 64)?;
            if n.is_empty() {
                return Err(ServiceError::Invalid("'name' must not be empty".into()));
            }
            self.name = n;
        }
        if let Some(h) = input.host_id {
            if h.is_some_and(|h| h == 0 || h > i64::MAX as u64) {
                return Err(ServiceError::Invalid("'host_id' is not a host id".into()));
            }
            self.host_id = h;
        }
        if let Some(p) = input.protocol {
            self.protocol = p;
        }
        if let Some(a) = input.address {
            self.address = short_text("address", a.trim(), 300)?;
        }
        parse_address("address", &self.address, self.protocol)?;
        if let Some(p) = input.port {
            if p == Some(0) {
                return Err(ServiceError::Invalid("'port' must be 1-65535".into()));
            }
            self.port = p;
        }
        if let Some(u) = input.user {
            let u = short_text("user", &u, 64)?;
            if u.is_empty() {
                return Err(ServiceError::Invalid("'user' must not be empty".into()));
            }
            self.user = u;
        }
        if self.protocol == Protocol::Ipmi && self.user.len() > 16 {
            return Err(ServiceError::Invalid(
                "'user': an IPMI user name is at most 16 bytes".into(),
            ));
        }
        if let Some(p) = input.password {
            if p.len() > 128 || p.contains(['\0', '\n', '\r']) {
                return Err(ServiceError::Invalid(
                    "'password' must be at most 128 bytes without NUL or line breaks".into(),
                ));
            }
            if self.protocol == Protocol::Ipmi && p.len() > 20 {
                return Err(ServiceError::Invalid(
                    "'password': an IPMI 2.0 password is at most 20 bytes".into(),
                ));
            }
            self.password = if p.is_empty() { String::new() } else { seal(&p) };
        }
        if let Some(c) = input.cipher_suite {
            if c > 17 {
                return Err(ServiceError::Invalid("'cipher_suite' must be 0-17".into()));
            }
            self.cipher_suite = c;
        }
        if let Some(s) = input.system_id {
            if let Some(s) = &s {
                if s.is_empty()
                    || s.len() > 128
                    || !s
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
                {
                    return Err(ServiceError::Invalid(
                        "'system_id' must be 1-128 letters, digits, '.', '_', '-' or ':'".into(),
                    ));
                }
            }
            self.system_id = s;
        }
        if let Some(v) = input.verify_tls {
            self.verify_tls = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(p: &str) -> String {
        format!("sealed({p})")
    }

    fn input(v: serde_json::Value) -> BmcInput {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn create_defaults_and_the_view_hides_the_password() {
        let mut c = BmcConfig::blank(OffsetDateTime::UNIX_EPOCH);
        c.apply(
            input(serde_json::json!({"name": " r1-bmc ", "address": "10.0.0.5", "protocol": "ipmi", "user": "admin", "password": "pw"})),
            true,
            &seal,
        )
        .unwrap();
        assert_eq!(
            (c.name.as_str(), c.effective_port(), c.cipher_suite, c.verify_tls),
            ("r1-bmc", 623, 3, true)
        );
        assert_eq!(c.password, "sealed(pw)");
        let v = serde_json::to_string(&BmcView::from(&c)).unwrap();
        assert!(v.contains("\"has_password\":true") && !v.contains("pw\""), "{v}");
        // Redfish ports follow the scheme; a PUT changes only what it names.
        c.apply(
            input(serde_json::json!({"protocol": "redfish", "address": "http://[fd00::5]/"})),
            false,
            &seal,
        )
        .unwrap();
        assert_eq!(c.effective_port(), 80);
        assert_eq!(
            parse_address("a", &c.address, c.protocol).unwrap(),
            (false, "fd00::5".into())
        );
        c.apply(
            input(serde_json::json!({"address": "bmc.lab.test", "port": 8443})),
            false,
            &seal,
        )
        .unwrap();
        assert_eq!((c.effective_port(), c.password.as_str()), (8443, "sealed(pw)"));
        c.apply(input(serde_json::json!({"port": null, "password": ""})), false, &seal)
            .unwrap();
        assert_eq!((c.effective_port(), c.password.as_str()), (443, ""));
    }

    #[test]
    fn bad_fields_are_named() {
        let base = serde_json::json!({"name": "x", "address": "10.0.0.5", "protocol": "ipmi", "user": "u"});
        for (patch, field) in [
            (serde_json::json!({"name": null}), "'name' is required"),
            (serde_json::json!({"address": "not a host!"}), "'address'"),
            (serde_json::json!({"address": "https://10.0.0.5"}), "'address'"),
            (serde_json::json!({"port": 0}), "'port'"),
            (serde_json::json!({"user": "a-very-long-ipmi-user"}), "'user'"),
            (serde_json::json!({"password": "123456789012345678901"}), "'password'"),
            (serde_json::json!({"cipher_suite": 18}), "'cipher_suite'"),
            (serde_json::json!({"system_id": "../x"}), "'system_id'"),
            (serde_json::json!({"host_id": 0}), "'host_id'"),
            (serde_json::json!({"name": "  "}), "'name'"),
        ] {
            let mut v = base.clone();
            for (k, x) in patch.as_object().unwrap() {
                if x.is_null() && k == "name" {
                    v.as_object_mut().unwrap().remove(k);
                } else {
                    v[k] = x.clone();
                }
            }
            let mut c = BmcConfig::blank(OffsetDateTime::UNIX_EPOCH);
            match c.apply(input(v), true, &seal) {
                Err(ServiceError::Invalid(m)) => assert!(m.contains(field), "{m} lacks {field}"),
                other => panic!("{patch}: {other:?}"),
            }
        }
        assert!(serde_json::from_value::<BmcInput>(serde_json::json!({"protocol": "snmp"})).is_err());
        assert!(serde_json::from_value::<BmcInput>(serde_json::json!({"bogus": 1})).is_err());
    }
}
