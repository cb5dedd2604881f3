//! Identity types shared by every layer: the three built-in roles a signed-in user, an API
//! token or a directory group can have. The API enforces them (the `x-bootlane-role`
//! declaration on each route); the configuration maps directory and single-sign-on groups
//! onto them (`[auth.ldap]`, `[auth.oidc]`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A user's role, from least to most allowed (`viewer < operator < admin`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
    schemars::JsonSchema,
    Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads everything but secrets.
    #[default]
    Viewer,
    /// Day-to-day work: hosts, profiles, images, answer templates, install tasks, leases,
    /// reservations, power, wake-on-LAN, diagnostics, DNS records, scripts.
    Operator,
    /// Everything, including users, settings, services, updates and backups.
    Admin,
}

impl Role {
    /// The role's name as the API and the CLI spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Operator => "operator",
            Self::Admin => "admin",
        }
    }

    /// Parses `viewer`, `operator` or `admin`.
    ///
    /// # Errors
    /// Any other text, with a message naming the three.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "viewer" => Ok(Self::Viewer),
            "operator" => Ok(Self::Operator),
            "admin" => Ok(Self::Admin),
            other => Err(format!("role {other:?} is not one of viewer, operator, admin")),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_names() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for r in [Role::Viewer, Role::Operator, Role::Admin] {
            assert_eq!(Role::parse(r.as_str()), Ok(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert!(Role::parse("root").unwrap_err().contains("viewer, operator, admin"));
    }
}
