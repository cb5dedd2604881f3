//! `[auth.ldap]`: directory sign-in. A user who is not a local account signs in with a
//! directory account: Bootlane finds the user's entry (a search as a service account, or
//! a DN made from a template), binds as that entry with the password given (a simple
//! bind, RFC 4513 section 5.1.3, only over TLS: `ldaps://` or StartTLS, RFC 4511 section
//! 4.14), reads the user's groups (the entry's `memberOf` or a group search) and maps
//! them to a role through `group_roles` (the highest mapped role wins; a user in no
//! mapped group cannot sign in). Groups are read again at every sign-in.

use std::{collections::BTreeMap, path::PathBuf};

use bootlane_core::identity::Role;
use serde::{Deserialize, Serialize};

/// `[auth.ldap]` section: where the directory is, how a user's entry and groups are
/// found, and which groups give which role.
///
/// Two ways to find the user's entry:
/// - a service account: `bind_dn` and `bind_password_file`, then a search under
///   `search_base` with `user_filter` (`{username}` replaced by the escaped user name,
///   RFC 4515);
/// - a DN template: `user_dn_template` (`{username}` replaced by the escaped user name,
///   RFC 4514), bound to directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LdapConfig {
    /// The directory: `ldaps://host[:port]` (TLS from the start, port 636 by default) or
    /// `ldap://host[:port]` (port 389; StartTLS before any bind unless `starttls = false`,
    /// which also needs `insecure_plaintext = true`).
    pub url: String,
    /// For `ldap://`: upgrade the connection with StartTLS before anything else (RFC 4511
    /// section 4.14). Ignored for `ldaps://`.
    #[serde(default = "default_true")]
    pub starttls: bool,
    /// Allows `ldap://` with `starttls = false`: passwords then cross the network in
    /// clear text. Only for a directory on the same host or a lab; refused otherwise.
    #[serde(default)]
    pub insecure_plaintext: bool,
    /// PEM file of the certificate authorities trusted for the directory's certificate
    /// (a site CA); when unset, the system's bundle
    /// (`/etc/ssl/certs/ca-certificates.crt`). Read at start.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// The service account's DN, bound to before searching for the user (with
    /// `bind_password_file` and `search_base`).
    #[serde(default)]
    pub bind_dn: Option<String>,
    /// File holding the service account's password (one line; a trailing newline is
    /// ignored), read at start. Keep it readable by the server only.
    #[serde(default)]
    pub bind_password_file: Option<PathBuf>,
    /// Where users are searched for (subtree), with the service account.
    #[serde(default)]
    pub search_base: Option<String>,
    /// The filter a user's entry must match (RFC 4515); `{username}` is replaced by the
    /// escaped user name. Exactly one entry must match.
    #[serde(default = "default_user_filter")]
    pub user_filter: String,
    /// Instead of a search: the user's DN, `{username}` replaced by the escaped user name
    /// (RFC 4514), e.g. `uid={username},ou=people,dc=example,dc=org`.
    #[serde(default)]
    pub user_dn_template: Option<String>,
    /// The attribute of the user's entry that lists the DNs of their groups, read when
    /// `group_search_base` is unset (OpenLDAP's memberof overlay, Active Directory).
    #[serde(default = "default_member_of")]
    pub member_of_attribute: String,
    /// When set, groups are found by a subtree search here with `group_filter` instead of
    /// the user's `member_of_attribute`.
    #[serde(default)]
    pub group_search_base: Option<String>,
    /// The filter a group the user is in matches (RFC 4515); `{dn}` is replaced by the
    /// escaped DN of the user's entry and `{username}` by the escaped user name.
    #[serde(default = "default_group_filter")]
    pub group_filter: String,
    /// Group DN → role (`admin`, `operator`, `viewer`). DNs compare without regard to
    /// case or spaces around `,` and `=`. A user gets the highest role of their mapped
    /// groups; a user in none cannot sign in. At least one mapping is required.
    #[serde(default)]
    pub group_roles: BTreeMap<String, Role>,
    /// Longest wait for the directory, per operation (connect, StartTLS, bind, search), in
    /// seconds (1-60). A directory that does not answer in time answers the sign-in with
    /// 503.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Directory sign-ins in flight at once (1-64); more wait for a slot.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
}

fn default_true() -> bool {
    true
}
fn default_user_filter() -> String {
    "(uid={username})".into()
}
fn default_member_of() -> String {
    "memberOf".into()
}
fn default_group_filter() -> String {
    "(member={dn})".into()
}
fn default_timeout_secs() -> u64 {
    5
}
fn default_max_concurrent() -> usize {
    8
}

/// True when `s` is a parenthesized LDAP filter whose parentheses balance.
fn looks_like_filter(s: &str) -> bool {
    if !(s.starts_with('(') && s.ends_with(')')) {
        return false;
    }
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

impl LdapConfig {
    /// True when the URL is `ldaps://` (TLS from the first byte).
    pub fn is_ldaps(&self) -> bool {
        self.url.to_ascii_lowercase().starts_with("ldaps://")
    }

    /// True when the connection is upgraded with StartTLS (`ldap://` and `starttls`).
    pub fn uses_starttls(&self) -> bool {
        !self.is_ldaps() && self.starttls
    }

    /// Checks the section; the message names the key (`[auth.ldap] key`).
    ///
    /// # Errors
    /// A URL that is not `ldap://host` or `ldaps://host`; `ldap://` without StartTLS
    /// unless `insecure_plaintext`; neither or both ways of finding the user; a service
    /// account without its password file or search base; filters or templates without
    /// their placeholder; no group mapping; a timeout or concurrency out of range.
    pub fn validate(&self) -> anyhow::Result<()> {
        let u = url::Url::parse(&self.url)
            .map_err(|e| anyhow::anyhow!("[auth.ldap] url = {:?} is not a URL: {e}", self.url))?;
        if !matches!(u.scheme(), "ldap" | "ldaps") {
            anyhow::bail!(
                "[auth.ldap] url = {:?} must start with ldaps:// or ldap:// (with StartTLS)",
                self.url
            );
        }
        if u.host_str().is_none_or(str::is_empty) {
            anyhow::bail!("[auth.ldap] url = {:?} names no host", self.url);
        }
        if !matches!(u.path(), "" | "/") || u.query().is_some() || u.fragment().is_some() {
            anyhow::bail!(
                "[auth.ldap] url = {:?} must be only ldap[s]://host[:port] (the search base has its own keys)",
                self.url
            );
        }
        if u.scheme() == "ldap" && !self.starttls && !self.insecure_plaintext {
            anyhow::bail!(
                "[auth.ldap] url = {:?} with starttls = false would send passwords in clear text; \
                 use ldaps://, keep starttls = true, or set insecure_plaintext = true to accept that",
                self.url
            );
        }
        match (&self.user_dn_template, &self.bind_dn) {
            (Some(_), Some(_)) => anyhow::bail!(
                "[auth.ldap] set either user_dn_template (direct bind) or bind_dn with search_base (search), not both"
            ),
            (None, None) => anyhow::bail!(
                "[auth.ldap] needs user_dn_template (direct bind) or bind_dn, bind_password_file and search_base (search)"
            ),
            (Some(t), None) => {
                if !t.contains("{username}") {
                    anyhow::bail!("[auth.ldap] user_dn_template = {t:?} must contain {{username}}");
                }
            }
            (None, Some(_)) => {
                if self.bind_password_file.is_none() {
                    anyhow::bail!("[auth.ldap] bind_dn needs bind_password_file");
                }
                if self.search_base.as_deref().is_none_or(str::is_empty) {
                    anyhow::bail!("[auth.ldap] bind_dn needs search_base (where users are searched for)");
                }
                if !self.user_filter.contains("{username}") || !looks_like_filter(&self.user_filter) {
                    anyhow::bail!(
                        "[auth.ldap] user_filter = {:?} must be a parenthesized filter containing {{username}}",
                        self.user_filter
                    );
                }
            }
        }
        if self.group_search_base.is_some()
            && (!(self.group_filter.contains("{dn}") || self.group_filter.contains("{username}"))
                || !looks_like_filter(&self.group_filter))
        {
            anyhow::bail!(
                "[auth.ldap] group_filter = {:?} must be a parenthesized filter containing {{dn}} or {{username}}",
                self.group_filter
            );
        }
        if self.group_search_base.is_none() && self.member_of_attribute.trim().is_empty() {
            anyhow::bail!("[auth.ldap] member_of_attribute must not be empty (or set group_search_base)");
        }
        if self.group_roles.is_empty() {
            anyhow::bail!(
                "[auth.ldap] group_roles is empty: nobody could sign in; map at least one group DN to a role"
            );
        }
        if let Some(dn) = self.group_roles.keys().find(|dn| !dn.contains('=')) {
            anyhow::bail!(
                "[auth.ldap] group_roles key {dn:?} is not a DN (like cn=admins,ou=groups,dc=example,dc=org)"
            );
        }
        if !(1..=60).contains(&self.timeout_secs) {
            anyhow::bail!("[auth.ldap] timeout_secs must be 1-60, not {}", self.timeout_secs);
        }
        if !(1..=64).contains(&self.max_concurrent) {
            anyhow::bail!("[auth.ldap] max_concurrent must be 1-64, not {}", self.max_concurrent);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &str) -> LdapConfig {
        toml::from_str(&format!(
            "url = \"ldap://dir.example.org\"\n\
             user_dn_template = \"uid={{username}},ou=people,dc=example,dc=org\"\n\
             [group_roles]\n\"cn=admins,ou=groups,dc=example,dc=org\" = \"admin\"\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn defaults_and_a_minimal_section_are_valid() {
        let c = parse("");
        assert!(c.starttls && !c.insecure_plaintext && c.uses_starttls());
        assert_eq!((c.timeout_secs, c.user_filter.as_str()), (5, "(uid={username})"));
        c.validate().unwrap();
    }

    #[test]
    fn plaintext_needs_the_explicit_switch() {
        let mut c = parse("");
        c.starttls = false;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("clear text"), "{e}");
        c.insecure_plaintext = true;
        c.validate().unwrap();
        c.url = "ldaps://dir.example.org:636".into();
        c.insecure_plaintext = false;
        c.validate().unwrap();
        assert!(!c.uses_starttls());
    }

    #[test]
    fn bad_urls_are_refused() {
        for url in [
            "dir.example.org",
            "http://dir.example.org",
            "ldap://",
            "ldap://h/dc=x",
            "ldaps://h?x",
        ] {
            let mut c = parse("");
            c.url = url.into();
            assert!(c.validate().is_err(), "{url} was accepted");
        }
    }

    #[test]
    fn missing_pieces_are_refused() {
        let mut c = parse("");
        c.user_dn_template = None;
        assert!(c.validate().unwrap_err().to_string().contains("needs user_dn_template"));
        c.bind_dn = Some("cn=svc,dc=example,dc=org".into());
        assert!(c.validate().unwrap_err().to_string().contains("bind_password_file"));
        c.bind_password_file = Some("/etc/bootlane/ldap-password".into());
        assert!(c.validate().unwrap_err().to_string().contains("search_base"));
        c.search_base = Some("ou=people,dc=example,dc=org".into());
        c.validate().unwrap();
        c.user_filter = "uid={username}".into();
        assert!(c.validate().unwrap_err().to_string().contains("user_filter"));
        c.user_filter = "(uid=x)".into();
        assert!(c.validate().unwrap_err().to_string().contains("user_filter"));
        c.user_filter = "(uid={username})".into();
        c.user_dn_template = Some("uid={username},dc=x".into());
        assert!(c.validate().unwrap_err().to_string().contains("not both"));
        c.user_dn_template = None;
        c.group_search_base = Some("ou=groups,dc=example,dc=org".into());
        c.group_filter = "(member=x)".into();
        assert!(c.validate().unwrap_err().to_string().contains("group_filter"));
        c.group_filter = "(member={dn})".into();
        c.validate().unwrap();
        c.group_roles.clear();
        assert!(c.validate().unwrap_err().to_string().contains("group_roles is empty"));
        let mut c = parse("");
        c.user_dn_template = Some("ou=people,dc=example,dc=org".into());
        assert!(c.validate().unwrap_err().to_string().contains("{username}"));
        let mut c = parse("");
        c.timeout_secs = 0;
        assert!(c.validate().is_err());
    }

    #[test]
    fn roles_parse_from_toml_and_unknown_keys_are_refused() {
        let c = parse("\"cn=ops,ou=groups,dc=example,dc=org\" = \"operator\"");
        assert_eq!(c.group_roles.values().copied().max(), Some(Role::Admin));
        let bad: Result<LdapConfig, _> = toml::from_str("url = \"ldaps://h\"\nuser_dn = \"x\"");
        assert!(bad.is_err());
        let bad: Result<LdapConfig, _> = toml::from_str("url = \"ldaps://h\"\n[group_roles]\n\"cn=a,dc=x\" = \"root\"");
        assert!(bad.is_err());
    }
}
