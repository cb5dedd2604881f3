//! Directory sign-in (`[auth.ldap]`): checks a user name and password against an LDAP
//! directory (RFC 4511) and maps the user's groups to a [`Role`].
//!
//! One sign-in is one short connection: TLS first (`ldaps://`, or StartTLS on `ldap://`,
//! RFC 4511 section 4.14; the certificate is verified against `ca_file` or the system's
//! bundle), then either a bind as the service account and a search for the user's entry
//! (`user_filter`, the user name escaped per RFC 4515) or a DN made from
//! `user_dn_template` (the user name escaped per RFC 4514), a simple bind as that entry
//! with the password given (RFC 4513 section 5.1.3), the user's groups (the entry's
//! `memberOf`, or a group search with `group_filter`), and an unbind. An empty password
//! is refused before any connection: an empty-password simple bind is an
//! "unauthenticated bind" (RFC 4513 section 5.1.2) that many servers answer with success.
//!
//! Bounds: at most `max_concurrent` sign-ins talk to the directory at once (more wait for
//! a slot, at most `timeout_secs`); each operation (connect, StartTLS, bind, search) waits
//! at most `timeout_secs`, the whole exchange at most four times that; searches ask for at
//! most [`MAX_GROUPS`] entries. The exchange runs in its own task, so a misbehaving
//! server cannot take the request's task down with it.

use std::{sync::Arc, time::Duration};

pub mod config;

use self::config::LdapConfig;
use bootlane_core::identity::Role;
use ldap3::{dn_escape, ldap_escape, Ldap, LdapConnAsync, LdapConnSettings, Scope, SearchEntry, SearchOptions};

/// Most group entries read for one user (a group search's size limit).
pub const MAX_GROUPS: i32 = 1000;
/// Longest user name sent to the directory, in bytes; longer names are refused without
/// asking it.
pub const MAX_USERNAME_BYTES: usize = 256;

/// Bind result codes (RFC 4511 appendix A) that mean "these credentials are not good":
/// invalidCredentials (49), noSuchObject (32), invalidDNSyntax (34),
/// inappropriateAuthentication (48), unwillingToPerform (53, OpenLDAP's answer to an
/// unauthenticated bind).
const REFUSED_BIND_CODES: [u32; 5] = [49, 32, 34, 48, 53];
/// sizeLimitExceeded (RFC 4511 appendix A): the entries up to the limit came back.
const SIZE_LIMIT_EXCEEDED: u32 = 4;

/// Why a directory sign-in did not give a role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectoryError {
    /// Wrong password, unknown user, an empty password or a name that matches several
    /// entries: the caller answers as for a wrong local password.
    #[error("wrong user name or password")]
    Refused,
    /// The password is right but none of the user's groups maps to a role.
    #[error("in no directory group that maps to a Bootlane role")]
    NoRole,
    /// The directory could not be reached or answered unexpectedly (the reason, for the
    /// log; the service account's bind failing is one).
    #[error("the directory is unavailable: {0}")]
    Unavailable(String),
}

/// A configured directory: the checked `[auth.ldap]` section, the service account's
/// password, the TLS settings and the concurrency slots.
pub struct Directory {
    cfg: LdapConfig,
    bind_password: Option<String>,
    tls: Option<Arc<rustls::ClientConfig>>,
    slots: Arc<tokio::sync::Semaphore>,
    roles: Vec<(String, Role)>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("url", &self.cfg.url)
            .finish_non_exhaustive()
    }
}

/// `dn` in a form two spellings of one DN share: ASCII lower case, no spaces around the
/// `,` and `=` separators (escaped characters, `\,` or `\2c`, are kept as they are).
pub fn normalize_dn(dn: &str) -> String {
    let mut out = String::with_capacity(dn.len());
    let mut chars = dn.trim().chars();
    let mut skip_spaces = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                if let Some(n) = chars.next() {
                    out.push(n.to_ascii_lowercase());
                }
                skip_spaces = false;
            }
            ',' | '=' => {
                while out.ends_with(' ') && !out.ends_with("\\ ") {
                    out.pop();
                }
                out.push(c);
                skip_spaces = true;
            }
            ' ' if skip_spaces => {}
            c => {
                out.push(c.to_ascii_lowercase());
                skip_spaces = false;
            }
        }
    }
    out
}

/// The filter that finds `username`'s entry: `user_filter` with `{username}` replaced by
/// the name escaped per RFC 4515 section 3 (`*`, `(`, `)`, `\` and NUL as `\2a` …).
pub fn user_filter(cfg: &LdapConfig, username: &str) -> String {
    cfg.user_filter.replace("{username}", &ldap_escape(username))
}

/// The DN to bind to for `username` with `user_dn_template` (`None` without one), the name
/// escaped as an attribute value per RFC 4514 section 2.4 (`,`, `+`, `"`, `\`, `<`, `>`,
/// `;`, `=`, NUL, a leading space or `#`, a trailing space).
pub fn user_dn(cfg: &LdapConfig, username: &str) -> Option<String> {
    cfg.user_dn_template
        .as_ref()
        .map(|t| t.replace("{username}", &dn_escape(username)))
}

/// The filter that finds the groups of the entry `dn` (`username`): `group_filter` with
/// `{dn}` and `{username}` replaced by their values escaped per RFC 4515.
pub fn group_filter(cfg: &LdapConfig, dn: &str, username: &str) -> String {
    cfg.group_filter
        .replace("{dn}", &ldap_escape(dn))
        .replace("{username}", &ldap_escape(username))
}

/// The highest role any of `groups` (DNs) maps to in `roles` (normalized DN → role, as
/// [`normalize_dn`] makes them); `None` when none maps.
pub fn map_role<S: AsRef<str>>(roles: &[(String, Role)], groups: &[S]) -> Option<Role> {
    groups
        .iter()
        .filter_map(|g| {
            let g = normalize_dn(g.as_ref());
            roles.iter().find(|(dn, _)| *dn == g).map(|(_, r)| *r)
        })
        .max()
}

/// Values of `attr` in `entry`, the attribute name compared without regard to case.
fn attr_values(entry: &SearchEntry, attr: &str) -> Vec<String> {
    entry
        .attrs
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(attr))
        .flat_map(|(_, v)| v.iter().cloned())
        .collect()
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> DirectoryError {
    DirectoryError::Unavailable(format!("{what}: {e}"))
}

/// The TLS client settings: ring, TLS 1.2 and 1.3, the roots from `ca_file` (PEM) or the
/// system's bundle (`/etc/ssl/certs/ca-certificates.crt`).
fn tls_config(cfg: &LdapConfig) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls_pki_types::{pem::PemObject, CertificateDer};
    let path = cfg
        .ca_file
        .clone()
        .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
    let what = if cfg.ca_file.is_some() {
        "[auth.ldap] ca_file"
    } else {
        "the system's CA bundle"
    };
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&path).map_err(|e| anyhow::anyhow!("{what} {}: {e}", path.display()))? {
        let c = c.map_err(|e| anyhow::anyhow!("{what} {}: {e}", path.display()))?;
        roots
            .add(c)
            .map_err(|e| anyhow::anyhow!("{what} {}: {e}", path.display()))?;
    }
    if roots.is_empty() {
        anyhow::bail!("{what} {} holds no certificate", path.display());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

impl Directory {
    /// Prepares the directory of a checked `[auth.ldap]` section: reads the service
    /// account's password file (one line; the trailing newline is dropped) and the CA
    /// certificates. Connects to nothing.
    ///
    /// # Errors
    /// A section that fails [`LdapConfig::validate`], an unreadable or empty password
    /// file, a CA file without a readable certificate.
    pub fn new(cfg: &LdapConfig) -> anyhow::Result<Self> {
        cfg.validate()?;
        let bind_password = match &cfg.bind_password_file {
            Some(p) => {
                let s = std::fs::read_to_string(p)
                    .map_err(|e| anyhow::anyhow!("[auth.ldap] bind_password_file {}: {e}", p.display()))?;
                let s = s.strip_suffix('\n').unwrap_or(&s);
                let s = s.strip_suffix('\r').unwrap_or(s);
                if s.is_empty() {
                    anyhow::bail!("[auth.ldap] bind_password_file {} is empty", p.display());
                }
                Some(s.to_owned())
            }
            None => None,
        };
        let tls = if cfg.is_ldaps() || cfg.uses_starttls() {
            Some(tls_config(cfg)?)
        } else {
            None
        };
        Ok(Self {
            roles: cfg.group_roles.iter().map(|(dn, r)| (normalize_dn(dn), *r)).collect(),
            slots: Arc::new(tokio::sync::Semaphore::new(cfg.max_concurrent)),
            cfg: cfg.clone(),
            bind_password,
            tls,
        })
    }

    /// The directory's URL (for messages).
    pub fn url(&self) -> &str {
        &self.cfg.url
    }

    /// Checks `username` and `password` against the directory and returns the highest
    /// role the user's groups map to.
    ///
    /// # Errors
    /// [`DirectoryError::Refused`] for an empty password or user name, a name longer than
    /// [`MAX_USERNAME_BYTES`] or with control characters (all without connecting), an
    /// unknown user, a wrong password or a name matching several entries;
    /// [`DirectoryError::NoRole`] when no group maps; [`DirectoryError::Unavailable`]
    /// when the directory cannot be reached in time, TLS fails, the service account is
    /// refused, or it answers with an unexpected result code.
    pub async fn authenticate(&self, username: &str, password: &str) -> Result<Role, DirectoryError> {
        if password.is_empty()
            || username.is_empty()
            || username.len() > MAX_USERNAME_BYTES
            || username.chars().any(char::is_control)
        {
            return Err(DirectoryError::Refused);
        }
        let op = Duration::from_secs(self.cfg.timeout_secs);
        let permit = tokio::time::timeout(op, self.slots.clone().acquire_owned())
            .await
            .map_err(|_| {
                DirectoryError::Unavailable(format!(
                    "all {} directory sign-in slots stayed busy for {} s",
                    self.cfg.max_concurrent, self.cfg.timeout_secs
                ))
            })?
            .map_err(|e| unavailable("directory slots", e))?;
        let job = Exchange {
            cfg: self.cfg.clone(),
            bind_password: self.bind_password.clone(),
            tls: self.tls.clone(),
            roles: self.roles.clone(),
            op,
        };
        let (user, pw) = (username.to_owned(), password.to_owned());
        let task = tokio::spawn(async move {
            let _permit = permit;
            tokio::time::timeout(op * 4, job.run(&user, &pw)).await
        });
        match task.await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(DirectoryError::Unavailable(format!(
                "no answer within {} s",
                self.cfg.timeout_secs * 4
            ))),
            Err(e) => Err(unavailable("the directory exchange failed", e)),
        }
    }
}

/// One sign-in's exchange with the directory (owned, so it runs in its own task).
struct Exchange {
    cfg: LdapConfig,
    bind_password: Option<String>,
    tls: Option<Arc<rustls::ClientConfig>>,
    roles: Vec<(String, Role)>,
    op: Duration,
}

impl Exchange {
    async fn connect(&self) -> Result<Ldap, DirectoryError> {
        let mut settings = LdapConnSettings::new()
            .set_conn_timeout(self.op)
            .set_starttls(self.cfg.uses_starttls());
        if let Some(tls) = &self.tls {
            settings = settings.set_config(tls.clone());
        }
        let (conn, ldap) = tokio::time::timeout(self.op, LdapConnAsync::with_settings(settings, &self.cfg.url))
            .await
            .map_err(|_| DirectoryError::Unavailable(format!("no connection within {} s", self.cfg.timeout_secs)))?
            .map_err(|e| unavailable("cannot connect", e))?;
        ldap3::drive!(conn);
        Ok(ldap)
    }

    /// A subtree or base search returning the entries (up to `limit`), tolerating
    /// sizeLimitExceeded.
    async fn search(
        &self,
        ldap: &mut Ldap,
        base: &str,
        scope: Scope,
        filter: &str,
        attrs: Vec<&str>,
        limit: i32,
    ) -> Result<Vec<SearchEntry>, DirectoryError> {
        let res = ldap
            .with_search_options(SearchOptions::new().sizelimit(limit))
            .with_timeout(self.op)
            .search(base, scope, filter, attrs)
            .await
            .map_err(|e| unavailable("search", e))?;
        match res.1.rc {
            0 | SIZE_LIMIT_EXCEEDED => {}
            32 if scope == Scope::Base => return Ok(Vec::new()),
            rc => {
                return Err(DirectoryError::Unavailable(format!(
                    "search under {base:?} answered result code {rc} ({:?})",
                    res.1.text
                )))
            }
        }
        // SearchEntry::construct panics on a malformed entry; this runs in its own task.
        Ok(res.0.into_iter().map(SearchEntry::construct).collect())
    }

    async fn bind_service(&self, ldap: &mut Ldap) -> Result<(), DirectoryError> {
        let (Some(dn), Some(pw)) = (&self.cfg.bind_dn, &self.bind_password) else {
            return Ok(());
        };
        let r = ldap
            .with_timeout(self.op)
            .simple_bind(dn, pw)
            .await
            .map_err(|e| unavailable("service account bind", e))?;
        if r.rc != 0 {
            return Err(DirectoryError::Unavailable(format!(
                "the service account {dn:?} was refused (result code {}); check bind_dn and bind_password_file",
                r.rc
            )));
        }
        Ok(())
    }

    async fn run(self, username: &str, password: &str) -> Result<Role, DirectoryError> {
        let mut ldap = self.connect().await?;
        let r = self.exchange(&mut ldap, username, password).await;
        let _ = tokio::time::timeout(self.op, ldap.unbind()).await;
        r
    }

    async fn exchange(&self, ldap: &mut Ldap, username: &str, password: &str) -> Result<Role, DirectoryError> {
        let by_member_of = self.cfg.group_search_base.is_none();
        let member_of = self.cfg.member_of_attribute.as_str();
        // The user's entry: a search as the service account, or the template.
        let (dn, mut groups) = match user_dn(&self.cfg, username) {
            Some(dn) => (dn, None),
            None => {
                self.bind_service(ldap).await?;
                let base = self.cfg.search_base.as_deref().unwrap_or_default();
                let attrs = if by_member_of { vec![member_of] } else { vec!["1.1"] };
                let mut found = self
                    .search(ldap, base, Scope::Subtree, &user_filter(&self.cfg, username), attrs, 2)
                    .await?;
                if found.len() != 1 {
                    if found.len() > 1 {
                        tracing::warn!(user = ?username, "directory sign-in refused: the user filter matches more than one entry");
                    }
                    return Err(DirectoryError::Refused);
                }
                let e = found.remove(0);
                let groups = by_member_of.then(|| attr_values(&e, member_of));
                (e.dn, groups)
            }
        };
        // Never an empty password here (checked before connecting); the bind proves it.
        debug_assert!(!password.is_empty());
        let r = ldap
            .with_timeout(self.op)
            .simple_bind(&dn, password)
            .await
            .map_err(|e| unavailable("bind", e))?;
        match r.rc {
            0 => {}
            rc if REFUSED_BIND_CODES.contains(&rc) => return Err(DirectoryError::Refused),
            rc => {
                return Err(DirectoryError::Unavailable(format!(
                    "the user bind answered result code {rc} ({:?})",
                    r.text
                )))
            }
        }
        let groups = match groups.take() {
            Some(g) => g,
            None if by_member_of => {
                let found = self
                    .search(ldap, &dn, Scope::Base, "(objectClass=*)", vec![member_of], 1)
                    .await?;
                found.iter().flat_map(|e| attr_values(e, member_of)).collect()
            }
            None => {
                self.bind_service(ldap).await?;
                let base = self.cfg.group_search_base.as_deref().unwrap_or_default();
                self.search(
                    ldap,
                    base,
                    Scope::Subtree,
                    &group_filter(&self.cfg, &dn, username),
                    vec!["1.1"],
                    MAX_GROUPS,
                )
                .await?
                .into_iter()
                .map(|e| e.dn)
                .collect()
            }
        };
        map_role(&self.roles, &groups).ok_or(DirectoryError::NoRole)
    }
}

/// What the tests of this crate and of the API use: a lab configuration and a directory
/// that accepts connections and never answers (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod test_support {
    use std::sync::{atomic::AtomicUsize, Arc};

    use super::config::LdapConfig;

    /// `[auth.ldap]` for a directory at `url` over plain TCP (a DN template, one admin
    /// group, 1 s timeouts).
    ///
    /// # Panics
    /// Never: the configuration is fixed.
    pub fn lab_config(url: &str) -> LdapConfig {
        let mut c: LdapConfig = toml::from_str(
            "url = \"ldap://127.0.0.1\"\n\
             user_dn_template = \"uid={username},ou=people,dc=example,dc=org\"\n\
             timeout_secs = 1\n\
             [group_roles]\n\"cn=admins,ou=groups,dc=example,dc=org\" = \"admin\"\n",
        )
        .expect("the lab configuration parses");
        c.url = url.into();
        c.starttls = false;
        c.insecure_plaintext = true;
        c
    }

    /// A listener on loopback that accepts and never answers (a hung directory): its
    /// `ldap://` URL and its count of accepted connections.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn silent_server() -> (String, Arc<AtomicUsize>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("ldap://{}", l.local_addr().expect("its address"));
        let n = Arc::new(AtomicUsize::new(0));
        let seen = n.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = l.accept().await {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(s);
            }
        });
        (url, n)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        test_support::{lab_config as cfg, silent_server},
        *,
    };

    #[test]
    fn filter_values_are_escaped_per_rfc4515() {
        let c = cfg("ldap://127.0.0.1");
        assert_eq!(user_filter(&c, "alice"), "(uid=alice)");
        assert_eq!(
            user_filter(&c, "*)(uid=*))(|(uid=*"),
            "(uid=\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a)"
        );
        assert_eq!(user_filter(&c, "a\\b\0c"), "(uid=a\\5cb\\00c)");
        // The escaped filter parses and keeps one equality assertion.
        assert!(ldap3::parse_filter(user_filter(&c, "*)(objectClass=*")).is_ok());
        let g = group_filter(&c, "uid=a*,ou=people,dc=x", "a*");
        assert_eq!(g, "(member=uid=a\\2a,ou=people,dc=x)");
    }

    #[test]
    fn dn_values_are_escaped_per_rfc4514() {
        let c = cfg("ldap://127.0.0.1");
        assert_eq!(user_dn(&c, "alice").unwrap(), "uid=alice,ou=people,dc=example,dc=org");
        assert_eq!(
            user_dn(&c, "x,ou=admins").unwrap(),
            "uid=x\\2cou\\3dadmins,ou=people,dc=example,dc=org"
        );
        assert_eq!(
            user_dn(&c, " #a+b\"<>;\\ ").unwrap().split(",ou=").next().unwrap(),
            "uid=\\20#a\\2bb\\22\\3c\\3e\\3b\\5c\\20"
        );
        assert!(user_dn(&c, "#x").unwrap().starts_with("uid=\\23x,ou=people"));
        let mut c = c;
        c.user_dn_template = None;
        assert_eq!(user_dn(&c, "alice"), None);
    }

    #[test]
    fn dns_normalize_case_and_separator_spaces() {
        assert_eq!(
            normalize_dn(" CN=Admins , OU=Groups,dc = Example "),
            "cn=admins,ou=groups,dc=example"
        );
        assert_eq!(normalize_dn("cn=a\\, b,dc=x"), "cn=a\\, b,dc=x");
        assert_ne!(normalize_dn("cn=a\\,b,dc=x"), normalize_dn("cn=a,b,dc=x"));
    }

    #[test]
    fn the_highest_mapped_role_wins_and_no_mapping_gives_none() {
        let roles = vec![
            (normalize_dn("cn=viewers,dc=x"), Role::Viewer),
            (normalize_dn("cn=admins,dc=x"), Role::Admin),
            (normalize_dn("cn=ops,dc=x"), Role::Operator),
        ];
        assert_eq!(
            map_role(&roles, &["cn=ops,dc=x", "CN=Viewers, DC=x"]),
            Some(Role::Operator)
        );
        assert_eq!(
            map_role(&roles, &["cn=viewers,dc=x", "cn=admins,dc=x", "cn=ops,dc=x"]),
            Some(Role::Admin)
        );
        assert_eq!(map_role(&roles, &["cn=viewers,dc=x"]), Some(Role::Viewer));
        assert_eq!(map_role(&roles, &["cn=others,dc=x", "cn=admins,dc=y"]), None);
        assert_eq!(map_role::<&str>(&roles, &[]), None);
        // A group whose DN merely contains a mapped one is not that group.
        assert_eq!(map_role(&roles, &["cn=sub,cn=admins,dc=x"]), None);
    }

    /// A TCP listener that counts the connections it accepts (and never answers).

    #[tokio::test]
    async fn an_empty_password_is_refused_before_any_connection() {
        let (url, accepted) = silent_server().await;
        let d = Directory::new(&cfg(&url)).unwrap();
        assert_eq!(d.authenticate("alice", "").await, Err(DirectoryError::Refused));
        assert_eq!(d.authenticate("", "secret").await, Err(DirectoryError::Refused));
        assert_eq!(d.authenticate("a\nb", "secret").await, Err(DirectoryError::Refused));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The same server does see a sign-in with a password (so the count above can fail).
        let r = d.authenticate("alice", "secret").await;
        assert!(matches!(r, Err(DirectoryError::Unavailable(_))), "{r:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_silent_or_absent_directory_is_unavailable_within_the_timeout() {
        let (url, _) = silent_server().await;
        let d = Directory::new(&cfg(&url)).unwrap();
        let t = std::time::Instant::now();
        let r = d.authenticate("alice", "secret").await;
        assert!(matches!(r, Err(DirectoryError::Unavailable(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        // A closed port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = Directory::new(&cfg(&format!("ldap://127.0.0.1:{port}"))).unwrap();
        let r = d.authenticate("alice", "secret").await;
        assert!(matches!(r, Err(DirectoryError::Unavailable(_))), "{r:?}");
    }

    #[tokio::test]
    async fn sign_ins_beyond_max_concurrent_wait_for_a_slot() {
        let (url, accepted) = silent_server().await;
        let mut c = cfg(&url);
        c.max_concurrent = 2;
        let d = Arc::new(Directory::new(&c).unwrap());
        let runs: Vec<_> = (0..5)
            .map(|_| {
                let d = d.clone();
                tokio::spawn(async move { d.authenticate("alice", "secret").await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        for r in runs {
            assert!(matches!(r.await.unwrap(), Err(DirectoryError::Unavailable(_))));
        }
    }

    #[test]
    fn setup_errors_name_the_file() {
        let mut c = cfg("ldaps://dir.example.org");
        c.ca_file = Some("/nonexistent/ca.pem".into());
        let e = Directory::new(&c).unwrap_err().to_string();
        assert!(e.contains("ca_file") && e.contains("/nonexistent/ca.pem"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "\n").unwrap();
        let mut c = cfg("ldap://127.0.0.1");
        c.user_dn_template = None;
        c.bind_dn = Some("cn=svc,dc=x".into());
        c.search_base = Some("dc=x".into());
        c.bind_password_file = Some(pw.clone());
        assert!(Directory::new(&c).unwrap_err().to_string().contains("is empty"));
        std::fs::write(&pw, "s3cret\n").unwrap();
        assert_eq!(Directory::new(&c).unwrap().bind_password.as_deref(), Some("s3cret"));
    }
}
