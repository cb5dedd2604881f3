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
    pub ldap: Option<bootlane_identity::ldap::config::LdapConfig>,
    /// `[auth.oidc]`: single sign-on with an OpenID Connect provider; unset: none.
    pub oidc: Option<bootlane_identity::oidc::config::OidcConfig>,
    /// `[auth.totp]`: second factors (TOTP) for local accounts.
    pub totp: TotpConfig,
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
        if let Some(o) = &self.oidc {
            o.validate()?;
        }
        Ok(())
    }
}

/// `[auth.totp]`: one-time codes (TOTP, RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps,
/// one step of clock skew accepted either way) as a second factor for local accounts.
/// Each local user turns it on for themselves (enrolment in the web UI or through
/// `POST /api/v1/auth/totp/enrol`); it does not apply to directory or single-sign-on
/// users, whose provider has its own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TotpConfig {
    /// When true, a local admin without a second factor who signs in gets a session that
    /// can only enrol one (every other signed-in route answers 403 until the enrolment is
    /// confirmed). Default: false.
    pub required_for_admins: bool,
}
