//! `[auth]`: how people sign in besides local accounts. Each way has its own subsection
//! (`[auth.ldap]` a directory, `[auth.oidc]` an OpenID Connect provider, `[auth.totp]`
//! second factors for local accounts); none is on by default, and local accounts always
//! remain (the break-glass administrator). Directory and provider groups map onto the
//! built-in roles ([`bootlane_core::identity::Role`]); a user whose groups map to no role
//! cannot sign in.

use serde::{Deserialize, Serialize};

/// `[auth]` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `[auth.ldap]`: sign-in with a directory account (LDAP over TLS); unset: none.
    pub ldap: Option<crate::auth_ldap::LdapConfig>,
}

impl AuthConfig {
    /// Checks every subsection that is set.
    ///
    /// # Errors
    /// The first problem, naming the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(l) = &self.ldap {
            l.validate()?;
        }
        Ok(())
    }
}
