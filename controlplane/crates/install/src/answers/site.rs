//! Site install settings: the values every answer file shares (time zone, locale,
//! keyboard, SSH authorised keys, the root password, the package mirror), exposed to
//! templates as `site`. The root password is accepted in plain text on write and kept
//! only as a SHA-512 crypt (`$6$`) hash, the form Debian
//! (`passwd/root-password-crypted`), kickstart (`rootpw --iscrypted`), AutoYaST,
//! cloud-init and Ignition take; the plain text is never stored, answered or rendered.
//! Pure types and checks; the service keeps the stored document.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use bootlane_core::service_error::ServiceError;

/// The stored document (`store.kv("answer_settings")`, key `site`). Absent fields take
/// the `[answers]` defaults.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StoredSite {
    /// Time zone, when set.
    pub timezone: Option<String>,
    /// Locale, when set.
    pub locale: Option<String>,
    /// Keyboard layout, when set.
    pub keyboard: Option<String>,
    /// SSH public keys (`authorized_keys` lines).
    #[serde(default)]
    pub ssh_authorized_keys: Vec<String>,
    /// SHA-512 crypt hash of the root password, when one is set.
    pub root_password_hash: Option<String>,
    /// Package mirror URL; `Some("")` clears the `[answers] mirror` default.
    pub mirror: Option<String>,
}

/// `GET /netboot/answer-settings`: the effective site settings (never a plain password).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct SiteSettings {
    /// IANA time zone, e.g. `Europe/Berlin`.
    pub timezone: String,
    /// Locale, e.g. `en_US.UTF-8`.
    pub locale: String,
    /// Keyboard layout (XKB name), e.g. `us`.
    pub keyboard: String,
    /// SSH public keys put in the installed system's root (or default user's)
    /// `authorized_keys`, one `type base64 [comment]` line each.
    pub ssh_authorized_keys: Vec<String>,
    /// True when a root password is set.
    pub has_root_password: bool,
    /// Its SHA-512 crypt hash (`$6$...`), `null` when none is set.
    pub root_password_hash: Option<String>,
    /// Package mirror URL (`http(s)://host[:port]/path`), `null` for each distribution's own.
    pub mirror: Option<String>,
}

/// Body of `PUT /netboot/answer-settings`: any subset; omitted fields keep their values.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SitePatch {
    /// See [`SiteSettings::timezone`].
    pub timezone: Option<String>,
    /// See [`SiteSettings::locale`].
    pub locale: Option<String>,
    /// See [`SiteSettings::keyboard`].
    pub keyboard: Option<String>,
    /// See [`SiteSettings::ssh_authorized_keys`] (replaces the list; at most 50).
    pub ssh_authorized_keys: Option<Vec<String>>,
    /// The root password in plain text (8-256 characters); stored only as its SHA-512
    /// crypt hash. `""` removes the password.
    pub root_password: Option<String>,
    /// A ready SHA-512 crypt hash (`$6$...`) instead of `root_password`.
    pub root_password_hash: Option<String>,
    /// See [`SiteSettings::mirror`]; `""` clears it.
    pub mirror: Option<String>,
    /// Read-only, accepted and ignored so a GET answer can be PUT back.
    pub has_root_password: Option<bool>,
}

/// `site` in a template: [`SiteSettings`] without `has_root_password`, plus the mirror
/// split for installers that take host and directory apart (`mirror_scheme`,
/// `mirror_host` with the port, `mirror_path`), and the locale's language as `en_US`
/// (`language`) and as a BCP 47 tag `en-US` (`language_tag`, Windows).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SiteVars {
    /// Time zone.
    pub timezone: String,
    /// Locale.
    pub locale: String,
    /// `en_US` from `en_US.UTF-8`.
    pub language: String,
    /// `en-US` from `en_US.UTF-8`.
    pub language_tag: String,
    /// Keyboard layout.
    pub keyboard: String,
    /// SSH public keys.
    pub ssh_authorized_keys: Vec<String>,
    /// SHA-512 crypt hash of the root password, or none.
    pub root_password_hash: Option<String>,
    /// Mirror URL, or none.
    pub mirror: Option<String>,
    /// `http` or `https`, or none.
    pub mirror_scheme: Option<String>,
    /// `host[:port]`, or none.
    pub mirror_host: Option<String>,
    /// Path (`/debian`), or none.
    pub mirror_path: Option<String>,
}

impl SiteSettings {
    /// The template view.
    pub fn vars(&self) -> SiteVars {
        let language = self.locale.split(['.', '@']).next().unwrap_or_default().to_string();
        let (scheme, host, path) = match self.mirror.as_deref().map(check_mirror) {
            Some(Ok((s, h, p))) => (Some(s), Some(h), Some(p)),
            _ => (None, None, None),
        };
        SiteVars {
            timezone: self.timezone.clone(),
            locale: self.locale.clone(),
            language_tag: language.replace('_', "-"),
            language,
            keyboard: self.keyboard.clone(),
            ssh_authorized_keys: self.ssh_authorized_keys.clone(),
            root_password_hash: self.root_password_hash.clone(),
            mirror: self.mirror.clone(),
            mirror_scheme: scheme,
            mirror_host: host,
            mirror_path: path,
        }
    }
}

fn simple(v: &str, max: usize, extra: &[char]) -> bool {
    !v.is_empty() && v.len() <= max && v.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// Checks an IANA time-zone name (`Area/City`, `UTC`): ASCII letters, digits, `/_-+`.
///
/// # Errors
/// What is wrong.
pub fn check_timezone(v: &str) -> Result<(), String> {
    if simple(v, 64, &['/', '_', '-', '+']) && !v.starts_with('/') && !v.contains("..") {
        Ok(())
    } else {
        Err(format!(
            "{v:?} is not a time-zone name such as Etc/UTC or Europe/Berlin"
        ))
    }
}

/// Checks a locale (`en_US.UTF-8`, `de_DE`, `C.UTF-8`).
///
/// # Errors
/// What is wrong.
pub fn check_locale(v: &str) -> Result<(), String> {
    if simple(v, 64, &['_', '.', '-', '@']) {
        Ok(())
    } else {
        Err(format!("{v:?} is not a locale such as en_US.UTF-8"))
    }
}

/// Checks a keyboard layout name (`us`, `de`, `fr-latin9`).
///
/// # Errors
/// What is wrong.
pub fn check_keyboard(v: &str) -> Result<(), String> {
    if simple(v, 32, &['_', '-']) {
        Ok(())
    } else {
        Err(format!("{v:?} is not a keyboard layout such as us or de"))
    }
}

/// Checks a mirror URL and splits it into scheme, `host[:port]` and path (`/` when
/// empty, no trailing `/` otherwise).
///
/// # Errors
/// What is wrong.
pub fn check_mirror(v: &str) -> Result<(String, String, String), String> {
    let bad = || format!("{v:?} is not an http:// or https:// mirror URL such as http://deb.debian.org/debian");
    let u = url::Url::parse(v).map_err(|_| bad())?;
    if !matches!(u.scheme(), "http" | "https")
        || u.host_str().is_none()
        || u.query().is_some()
        || v.contains(char::is_whitespace)
        || !u.username().is_empty()
    {
        return Err(bad());
    }
    let host = match u.port() {
        Some(p) => format!("{}:{p}", u.host_str().unwrap_or_default()),
        None => u.host_str().unwrap_or_default().to_string(),
    };
    let path = match u.path().trim_end_matches('/') {
        "" => "/".to_string(),
        p => p.to_string(),
    };
    Ok((u.scheme().to_string(), host, path))
}

/// Checks one `authorized_keys` line: one line, a known key type, base64 data.
///
/// # Errors
/// What is wrong.
pub fn check_ssh_key(v: &str) -> Result<(), String> {
    let mut parts = v.split_whitespace();
    let (Some(kind), Some(data)) = (parts.next(), parts.next()) else {
        return Err("an SSH key is 'type base64 [comment]', e.g. 'ssh-ed25519 AAAA... me@host'".into());
    };
    let known = kind.starts_with("ssh-") || kind.starts_with("ecdsa-sha2-") || kind.starts_with("sk-");
    let b64 = data.len() >= 16 && data.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
    if !known || !b64 || v.len() > 8192 || v.chars().any(|c| c.is_control() || c == '\'' || c == '"' || c == '\\') {
        return Err(format!(
            "{:?} is not an SSH public key line (type such as ssh-ed25519, base64 data, an optional comment without quotes or backslashes)",
            v.chars().take(40).collect::<String>()
        ));
    }
    Ok(())
}

/// Hashes `password` with SHA-512 crypt (5000 rounds, the glibc default, random salt).
///
/// # Errors
/// [`ServiceError::Invalid`] for a password that is not 8-256 characters without
/// control characters.
pub fn hash_password(password: &str) -> Result<String, ServiceError> {
    if password.chars().count() < 8 || password.chars().count() > 256 || password.chars().any(char::is_control) {
        return Err(ServiceError::Invalid(
            "'root_password' must be 8-256 characters without control characters".into(),
        ));
    }
    let params = sha_crypt::Sha512Params::new(sha_crypt::ROUNDS_DEFAULT)
        .map_err(|e| ServiceError::Invalid(format!("'root_password': {e:?}")))?;
    sha_crypt::sha512_simple(password, &params)
        .map_err(|e| ServiceError::Invalid(format!("'root_password' could not be hashed: {e:?}")))
}

/// Checks a ready SHA-512 crypt hash: `$6$[rounds=N$]salt$86-character hash`.
///
/// # Errors
/// [`ServiceError::Invalid`] naming `root_password_hash`.
pub fn check_hash(h: &str) -> Result<(), ServiceError> {
    let bad = || {
        ServiceError::Invalid(
            "'root_password_hash' must be a SHA-512 crypt hash ($6$salt$hash, as from `mkpasswd -m sha-512`)".into(),
        )
    };
    let rest = h.strip_prefix("$6$").ok_or_else(bad)?;
    let parts: Vec<&str> = rest.split('$').collect();
    let (salt, hash) = match parts.as_slice() {
        [s, hsh] => (*s, *hsh),
        [r, s, hsh] if r.starts_with("rounds=") => (*s, *hsh),
        _ => return Err(bad()),
    };
    let crypt64 = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '/');
    if salt.is_empty() || salt.len() > 16 || !crypt64(salt) || hash.len() != 86 || !crypt64(hash) {
        return Err(bad());
    }
    Ok(())
}

/// Applies `patch` to `stored` (checked; the new document). `defaults` fills in the
/// effective view for the answer.
///
/// # Errors
/// [`ServiceError::Invalid`] naming the key.
pub fn apply(stored: &StoredSite, patch: SitePatch) -> Result<StoredSite, ServiceError> {
    let invalid = |k: &str, e: String| ServiceError::Invalid(format!("'{k}': {e}"));
    let mut s = stored.clone();
    if let Some(v) = patch.timezone {
        check_timezone(&v).map_err(|e| invalid("timezone", e))?;
        s.timezone = Some(v);
    }
    if let Some(v) = patch.locale {
        check_locale(&v).map_err(|e| invalid("locale", e))?;
        s.locale = Some(v);
    }
    if let Some(v) = patch.keyboard {
        check_keyboard(&v).map_err(|e| invalid("keyboard", e))?;
        s.keyboard = Some(v);
    }
    if let Some(keys) = patch.ssh_authorized_keys {
        if keys.len() > 50 {
            return Err(invalid("ssh_authorized_keys", "at most 50 keys".into()));
        }
        for (i, k) in keys.iter().enumerate() {
            check_ssh_key(k.trim()).map_err(|e| ServiceError::Invalid(format!("'ssh_authorized_keys[{i}]': {e}")))?;
        }
        s.ssh_authorized_keys = keys.into_iter().map(|k| k.trim().to_string()).collect();
    }
    match (patch.root_password, patch.root_password_hash) {
        (Some(_), Some(_)) => {
            return Err(ServiceError::Invalid(
                "give either 'root_password' or 'root_password_hash', not both".into(),
            ))
        }
        (Some(p), None) if p.is_empty() => s.root_password_hash = None,
        (Some(p), None) => s.root_password_hash = Some(hash_password(&p)?),
        (None, Some(h)) if h.is_empty() => s.root_password_hash = None,
        (None, Some(h)) => {
            check_hash(&h)?;
            s.root_password_hash = Some(h);
        }
        (None, None) => {}
    }
    if let Some(m) = patch.mirror {
        if !m.is_empty() {
            check_mirror(&m).map_err(|e| invalid("mirror", e))?;
        }
        s.mirror = Some(m);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_kept_only_as_a_sha512_crypt_hash_that_verifies() {
        let s = apply(
            &StoredSite::default(),
            SitePatch {
                root_password: Some("correct horse".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let h = s.root_password_hash.clone().unwrap();
        assert!(h.starts_with("$6$"), "{h}");
        check_hash(&h).unwrap();
        assert!(sha_crypt::sha512_check("correct horse", &h).is_ok());
        assert!(sha_crypt::sha512_check("wrong", &h).is_err());
        assert!(!serde_json::to_string(&s).unwrap().contains("correct horse"));
        // "" removes it.
        let s = apply(
            &s,
            SitePatch {
                root_password: Some(String::new()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(s.root_password_hash.is_none());
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (p, key) in [
            (
                SitePatch {
                    timezone: Some("Europe/../x".into()),
                    ..Default::default()
                },
                "timezone",
            ),
            (
                SitePatch {
                    mirror: Some("ftp://x".into()),
                    ..Default::default()
                },
                "mirror",
            ),
            (
                SitePatch {
                    ssh_authorized_keys: Some(vec!["nope".into()]),
                    ..Default::default()
                },
                "ssh_authorized_keys[0]",
            ),
            (
                SitePatch {
                    root_password: Some("short".into()),
                    ..Default::default()
                },
                "root_password",
            ),
            (
                SitePatch {
                    root_password_hash: Some("$1$abc$def".into()),
                    ..Default::default()
                },
                "root_password_hash",
            ),
        ] {
            let e = apply(&StoredSite::default(), p).unwrap_err().to_string();
            assert!(e.contains(&format!("'{key}'")), "{key}: {e}");
        }
    }

    #[test]
    fn the_mirror_is_split_for_installers() {
        assert_eq!(
            check_mirror("http://mirror.lab:8080/debian/").unwrap(),
            ("http".into(), "mirror.lab:8080".into(), "/debian".into())
        );
        let v = SiteSettings {
            timezone: "Etc/UTC".into(),
            locale: "de_DE.UTF-8".into(),
            keyboard: "de".into(),
            ssh_authorized_keys: vec![],
            has_root_password: false,
            root_password_hash: None,
            mirror: Some("https://ftp.de.debian.org/debian".into()),
        }
        .vars();
        assert_eq!(v.mirror_host.as_deref(), Some("ftp.de.debian.org"));
        assert_eq!(v.language_tag, "de-DE");
    }
}
