//! `[auth.oidc]`: single sign-on with an OpenID Connect provider (OpenID Connect Core
//! 1.0). The login page offers "Sign in with <display_name>"; Bootlane sends the browser
//! to the provider with the authorization code flow (PKCE S256, RFC 7636; `state` and
//! `nonce`), checks the ID token it gets back (issuer, audience, expiry, nonce, signature
//! by a key of the provider's JWKS), reads the user's groups from the ID token (or the
//! userinfo endpoint) and maps them to a role through `group_roles` (the highest mapped
//! role wins; a user in no mapped group cannot sign in). The provider is found by
//! discovery (`<issuer>/.well-known/openid-configuration`) and reached under the
//! `[outbound]` policy.

use std::{collections::BTreeMap, path::PathBuf};

use bootlane_core::identity::Role;
use serde::{Deserialize, Serialize};

/// `[auth.oidc]` section: the provider, Bootlane's client registration there, the claims
/// read and which groups give which role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer URL (`https://...`; `http://` only for a loopback address),
    /// exactly as the provider names itself; discovery reads
    /// `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// Bootlane's client id at the provider.
    pub client_id: String,
    /// File holding the client secret (one line; a trailing newline is ignored), read at
    /// start; unset for a public client (PKCE only).
    #[serde(default)]
    pub client_secret_file: Option<PathBuf>,
    /// Bootlane's public URL of the callback, registered at the provider as a redirect
    /// URI: `https://<bootlane>/api/v1/auth/oidc/callback`.
    pub redirect_url: String,
    /// The provider's name on the login page ("Sign in with <display_name>"), 1-64
    /// characters. Default: `SSO`.
    #[serde(default = "default_display_name")]
    pub display_name: String,
    /// Scopes asked for. Default: `openid`, `profile`, `email`, `groups`; `openid` is
    /// always sent.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The claim (in the ID token, else from the userinfo endpoint) listing the user's
    /// groups: an array of strings or one string. Default: `groups`.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// The claim used as the user name in Bootlane (audit, "who am I"). Default:
    /// `preferred_username`; `sub` is used when the claim is absent.
    #[serde(default = "default_username_claim")]
    pub username_claim: String,
    /// Group name (as the provider sends it, compared exactly) → role (`admin`,
    /// `operator`, `viewer`). A user gets the highest role of their mapped groups; a user
    /// in none cannot sign in. At least one mapping is required.
    #[serde(default)]
    pub group_roles: BTreeMap<String, Role>,
    /// PEM file of the certificate authorities trusted for the provider's certificate (a
    /// site CA), added to the system's; read at start.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Longest wait for the provider per request (discovery, token, keys, userinfo), in
    /// seconds (1-60). Default: 10.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
}

fn default_display_name() -> String {
    "SSO".into()
}
fn default_scopes() -> Vec<String> {
    ["openid", "profile", "email", "groups"].map(String::from).to_vec()
}
fn default_groups_claim() -> String {
    "groups".into()
}
fn default_username_claim() -> String {
    "preferred_username".into()
}
fn default_timeout_secs() -> u64 {
    10
}

/// Checks that `s` is an `https://` URL, or `http://` to a loopback host.
fn web_url(key: &str, s: &str) -> anyhow::Result<url::Url> {
    let u = url::Url::parse(s).map_err(|e| anyhow::anyhow!("[auth.oidc] {key} = {s:?} is not a URL: {e}"))?;
    let loopback = match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => anyhow::bail!("[auth.oidc] {key} = {s:?} has no host"),
    };
    match u.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => anyhow::bail!("[auth.oidc] {key} = {s:?} must be https:// (http:// only on loopback)"),
    }
    if u.fragment().is_some() {
        anyhow::bail!("[auth.oidc] {key} = {s:?} must not have a #fragment");
    }
    Ok(u)
}

impl OidcConfig {
    /// Checks the section; the message names the key (`[auth.oidc] key`).
    ///
    /// # Errors
    /// An issuer or redirect URL that is not `https://` (or `http://` to loopback), a
    /// redirect URL not ending in `/api/v1/auth/oidc/callback`, an empty client id,
    /// display name or claim name, a display name over 64 characters, an empty scope or
    /// one with spaces, no group mapping, a timeout out of range.
    pub fn validate(&self) -> anyhow::Result<()> {
        web_url("issuer", &self.issuer)?;
        let r = web_url("redirect_url", &self.redirect_url)?;
        if !r.path().ends_with("/api/v1/auth/oidc/callback") {
            anyhow::bail!(
                "[auth.oidc] redirect_url = {:?} must be Bootlane's callback, ending in /api/v1/auth/oidc/callback",
                self.redirect_url
            );
        }
        if self.client_id.trim().is_empty() {
            anyhow::bail!("[auth.oidc] client_id must not be empty");
        }
        let n = self.display_name.chars().count();
        if n == 0 || n > 64 || self.display_name.chars().any(char::is_control) {
            anyhow::bail!("[auth.oidc] display_name must be 1-64 printable characters");
        }
        for s in &self.scopes {
            if s.is_empty()
                || s.chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\')
            {
                anyhow::bail!("[auth.oidc] scopes: {s:?} is not a scope token (RFC 6749 section 3.3)");
            }
        }
        if self.groups_claim.is_empty() {
            anyhow::bail!("[auth.oidc] groups_claim must not be empty");
        }
        if self.username_claim.is_empty() {
            anyhow::bail!("[auth.oidc] username_claim must not be empty");
        }
        if self.group_roles.is_empty() {
            anyhow::bail!("[auth.oidc] group_roles must map at least one group to a role");
        }
        if !(1..=60).contains(&self.timeout_secs) {
            anyhow::bail!("[auth.oidc] timeout_secs = {} must be 1-60", self.timeout_secs);
        }
        Ok(())
    }

    /// The role of a user in `groups`: the highest mapped one; `None` when no group maps.
    pub fn role_for<'a>(&self, groups: impl IntoIterator<Item = &'a str>) -> Option<Role> {
        groups
            .into_iter()
            .filter_map(|g| self.group_roles.get(g).copied())
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> OidcConfig {
        toml::from_str(
            r#"
issuer = "https://id.example.org/realms/lab"
client_id = "bootlane"
redirect_url = "https://bootlane.example.org/api/v1/auth/oidc/callback"
[group_roles]
ops = "operator"
admins = "admin"
"#,
        )
        .unwrap()
    }

    #[test]
    fn defaults_and_validation() {
        let c = cfg();
        c.validate().unwrap();
        assert_eq!(c.groups_claim, "groups");
        assert_eq!(c.username_claim, "preferred_username");
        assert_eq!(c.display_name, "SSO");
        assert!(c.scopes.iter().any(|s| s == "openid"));
        let mut b = c.clone();
        b.issuer = "http://id.example.org".into();
        assert!(b.validate().is_err(), "plain http off loopback");
        let mut b = c.clone();
        b.issuer = "http://127.0.0.1:9000".into();
        b.validate().unwrap();
        let mut b = c.clone();
        b.redirect_url = "https://bootlane.example.org/elsewhere".into();
        assert!(b.validate().is_err());
        let mut b = c.clone();
        b.group_roles.clear();
        assert!(b.validate().is_err());
        let mut b = c.clone();
        b.scopes.push("a b".into());
        assert!(b.validate().is_err());
    }

    #[test]
    fn highest_mapped_role_wins_and_none_maps_to_none() {
        let c = cfg();
        assert_eq!(c.role_for(["ops", "admins", "other"]), Some(Role::Admin));
        assert_eq!(c.role_for(["ops"]), Some(Role::Operator));
        assert_eq!(c.role_for(["other"]), None);
        assert_eq!(c.role_for([]), None);
    }
}
