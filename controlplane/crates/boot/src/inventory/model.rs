//! The host model: a host as stored ([`Host`]), as the API shows it ([`HostView`], no BMC
//! password), the merge input of create and update ([`HostInput`]) and its validation
//! ([`Host::apply`]). Host names follow the shared host-name rule
//! ([`bootlane_core::net::types::validate_host_label`]), MACs the shared
//! [`MacAddr`](bootlane_core::net::types::MacAddr) form. Pure values, no state; uniqueness and
//! storage are [`super::service::HostService`]'s.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::{
    net::types::{normalise_mac, validate_host_label},
    service_error::{double_option, short_text, ServiceError},
};

/// A host as stored (the BMC password included; never serialised to clients, see
/// [`HostView`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Host {
    /// Id.
    pub id: u64,
    /// Name, lower case.
    pub name: String,
    /// MAC, lower-case colon form.
    pub mac: String,
    /// Address (informational; DHCP reservations are separate).
    pub ip: Option<IpAddr>,
    /// The profile whose menu the host boots; `None`: the default profile.
    pub profile_id: Option<u64>,
    /// The host's own baseline, applied before its profile's and the default.
    #[serde(default)]
    pub baseline_id: Option<u64>,
    /// Boot through the Secure Boot chain: the host's x86-64 UEFI boots get the signed
    /// shim, then signed GRUB with its generated menu, instead of iPXE.
    #[serde(default)]
    pub secure_boot: bool,
    /// BMC address, used for power actions when no BMC config names this host: `host`,
    /// `host:port`, `ipmi://host[:port]`, `redfish://`, `https://` or `http://host[:port]`.
    pub bmc_addr: Option<String>,
    /// BMC user name.
    pub bmc_user: Option<String>,
    /// BMC password (write-only through the API).
    pub bmc_password: Option<String>,
    /// Free text.
    pub description: String,
    /// Creation time.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(Host, "hosts");

/// A host as the API shows it: [`Host`] without the BMC password.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HostView {
    /// Id.
    pub id: u64,
    /// Name (DNS label: `a-z`, `0-9`, `-`, at most 63 characters), unique.
    pub name: String,
    /// MAC, lower-case colon form, unique.
    pub mac: String,
    /// Address, if set.
    #[schema(value_type = Option<String>)]
    pub ip: Option<IpAddr>,
    /// Profile id; `null`: the default profile.
    pub profile_id: Option<u64>,
    /// The host's own baseline (post-install scripts); `null`: none (its profile's and
    /// the default baseline still apply).
    pub baseline_id: Option<u64>,
    /// Its x86-64 UEFI boots get the signed shim and GRUB (Secure Boot) instead of iPXE.
    pub secure_boot: bool,
    /// BMC address.
    pub bmc_addr: Option<String>,
    /// BMC user.
    pub bmc_user: Option<String>,
    /// True when a BMC password is stored (the password itself is never returned).
    pub has_bmc_password: bool,
    /// Free text.
    pub description: String,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

impl From<&Host> for HostView {
    fn from(h: &Host) -> Self {
        Self {
            id: h.id,
            name: h.name.clone(),
            mac: h.mac.clone(),
            ip: h.ip,
            profile_id: h.profile_id,
            baseline_id: h.baseline_id,
            secure_boot: h.secure_boot,
            bmc_addr: h.bmc_addr.clone(),
            bmc_user: h.bmc_user.clone(),
            has_bmc_password: h.bmc_password.as_deref().is_some_and(|p| !p.is_empty()),
            description: h.description.clone(),
            created_at: h.created_at,
            updated_at: h.updated_at,
        }
    }
}

/// Body of `POST /hosts` (name and mac required) and `PUT /hosts/{id}` (any subset;
/// omitted fields keep their values, `null` clears an optional field).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HostInput {
    /// Name: a DNS label (letters, digits, `-`; 1-63 characters; stored lower case).
    pub name: Option<String>,
    /// MAC: `aa:bb:cc:dd:ee:ff`, `aa-bb-...`, `aabb.ccdd.eeff` or 12 hex digits.
    pub mac: Option<String>,
    /// IPv4 or IPv6 address.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub ip: Option<Option<String>>,
    /// An existing profile id (400 otherwise); `null`: the default profile.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u64>)]
    pub profile_id: Option<Option<u64>>,
    /// An existing baseline id (400 otherwise; checked by the service); `null`: none.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u64>)]
    pub baseline_id: Option<Option<u64>>,
    /// Boot through the Secure Boot chain (shim, signed GRUB) on x86-64 UEFI; default
    /// false.
    pub secure_boot: Option<bool>,
    /// BMC address.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub bmc_addr: Option<Option<String>>,
    /// BMC user.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub bmc_user: Option<Option<String>>,
    /// BMC password (write-only).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub bmc_password: Option<Option<String>>,
    /// Free text.
    pub description: Option<String>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub has_bmc_password: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

impl Host {
    /// An empty host created now (id 0 until stored); [`Host::apply`] fills it.
    pub fn blank(now: OffsetDateTime) -> Self {
        Self {
            id: 0,
            name: String::new(),
            mac: String::new(),
            ip: None,
            profile_id: None,
            baseline_id: None,
            secure_boot: false,
            bmc_addr: None,
            bmc_user: None,
            bmc_password: None,
            description: String::new(),
            created_at: now,
            updated_at: now,
        }
    }

    /// Merges `input` into this host after checking every given field: name (host-name
    /// label, stored lower case), MAC (any accepted form, stored lower-case colon form),
    /// IP, profile id (`profile_exists` must say yes), BMC fields and description (text
    /// limits). Uniqueness is checked by the service, which sees the other hosts.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field; whatever `profile_exists` returns.
    pub fn apply(
        &mut self,
        input: HostInput,
        profile_exists: impl Fn(u64) -> Result<bool, ServiceError>,
    ) -> Result<(), ServiceError> {
        if let Some(n) = input.name {
            self.name = host_name(&n)?;
        }
        if let Some(m) = input.mac {
            self.mac = normalise_mac(&m)
                .map_err(|_| {
                    ServiceError::Invalid(format!(
                        "mac {m:?} is not a MAC address (aa:bb:cc:dd:ee:ff, aa-bb-..., aabb.ccdd.eeff or 12 hex digits)"
                    ))
                })?
                .to_string();
        }
        if let Some(ip) = input.ip {
            self.ip = match ip.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                None => None,
                Some(s) => Some(
                    s.parse()
                        .map_err(|_| ServiceError::Invalid(format!("ip {s:?} is not an IPv4 or IPv6 address")))?,
                ),
            };
        }
        if let Some(p) = input.profile_id {
            if let Some(pid) = p {
                if !profile_exists(pid)? {
                    return Err(ServiceError::Invalid(format!("profile_id {pid}: no such profile")));
                }
            }
            self.profile_id = p;
        }
        if let Some(b) = input.baseline_id {
            self.baseline_id = b;
        }
        if let Some(sb) = input.secure_boot {
            self.secure_boot = sb;
        }
        if let Some(v) = input.bmc_addr {
            self.bmc_addr = v.map(|v| short_text("bmc_addr", &v, 255)).transpose()?;
        }
        if let Some(v) = input.bmc_user {
            self.bmc_user = v.map(|v| short_text("bmc_user", &v, 255)).transpose()?;
        }
        if let Some(v) = input.bmc_password {
            self.bmc_password = v.map(|v| short_text("bmc_password", &v, 255)).transpose()?;
        }
        if let Some(d) = input.description {
            self.description = short_text("description", &d, 1024)?;
        }
        Ok(())
    }
}

/// Checks a host name: one host-name label (RFC 1123 §2.1), returned lower case.
fn host_name(n: &str) -> Result<String, ServiceError> {
    let n = n.trim().to_ascii_lowercase();
    match validate_host_label(&n) {
        Ok(()) => Ok(n),
        Err(e) => Err(ServiceError::Invalid(format!(
            "'name' must be a single DNS label valid as a host name: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, mac: &str) -> HostInput {
        HostInput {
            name: Some(name.into()),
            mac: Some(mac.into()),
            ..Default::default()
        }
    }

    #[test]
    fn apply_normalises_name_and_mac() {
        let mut h = Host::blank(OffsetDateTime::UNIX_EPOCH);
        h.apply(input(" Node1 ", "52-54-00-AA-BB-CC"), |_| Ok(true)).unwrap();
        assert_eq!((h.name.as_str(), h.mac.as_str()), ("node1", "52:54:00:aa:bb:cc"));
    }

    #[test]
    fn apply_rejects_bad_fields_naming_them() {
        let bad = |i: HostInput, needle: &str| {
            let e = Host::blank(OffsetDateTime::UNIX_EPOCH)
                .apply(i, |_| Ok(false))
                .unwrap_err();
            assert!(
                matches!(&e, ServiceError::Invalid(m) if m.contains(needle)),
                "{e} lacks {needle}"
            );
        };
        bad(input("under_score", "52:54:00:aa:bb:cc"), "'name'");
        bad(input("-x", "52:54:00:aa:bb:cc"), "'name'");
        bad(input("n", "52:54:00:aa:bb"), "mac");
        bad(
            HostInput {
                profile_id: Some(Some(7)),
                ..Default::default()
            },
            "profile_id 7",
        );
        bad(
            HostInput {
                ip: Some(Some("10.0.0.300".into())),
                ..Default::default()
            },
            "ip",
        );
        bad(
            HostInput {
                description: Some("a\nb".into()),
                ..Default::default()
            },
            "'description'",
        );
    }

    #[test]
    fn view_hides_the_bmc_password() {
        let mut h = Host::blank(OffsetDateTime::UNIX_EPOCH);
        h.bmc_password = Some("secret".into());
        let v = serde_json::to_string(&HostView::from(&h)).unwrap();
        assert!(!v.contains("secret") && v.contains("\"has_bmc_password\":true"), "{v}");
    }
}
