//! Single sign-on with an OpenID Connect provider (`[auth.oidc]`, OpenID Connect Core
//! 1.0 with the `openidconnect` crate): the client the API's `/auth/oidc/*` routes drive.
//! [`Oidc::begin`] makes the provider's authorization URL for the code flow (PKCE S256,
//! RFC 7636; a random `state` and `nonce`) and keeps the pending flow in memory (bounded
//! in count and age), bound to the browser by a value the caller puts in a short-lived
//! cookie. [`Oidc::finish`] exchanges the code, verifies the ID token (issuer, audience,
//! expiry, nonce, signature by a key of the provider's JWKS, fetched again when a token
//! names an unknown key id), reads the groups claim (ID token, else userinfo) and maps it
//! to a role (highest wins; none → [`Refusal`]). Nothing the provider or the browser sent
//! is logged unescaped.

pub mod config;

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use self::config::OidcConfig;
use bootlane_core::{identity::Role, net::outbound::OutboundConfig};
use openidconnect::{
    core::{
        CoreAuthDisplay, CoreAuthenticationFlow, CoreClaimName, CoreClaimType, CoreClient, CoreClientAuthMethod,
        CoreGrantType, CoreIdToken, CoreJsonWebKey, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm,
        CoreJweKeyManagementAlgorithm, CoreResponseMode, CoreResponseType, CoreSubjectIdentifierType,
    },
    AdditionalProviderMetadata, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken,
    IdTokenVerifier, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, ProviderMetadata,
    RedirectUrl, Scope, SignatureVerificationError, TokenResponse,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

/// The cookie binding a pending sign-in to the browser that started it.
pub const FLOW_COOKIE: &str = "bootlane_oidc";
/// Most sign-ins pending at once; the oldest is dropped for a new one beyond this.
pub const MAX_PENDING: usize = 256;
/// How long a pending sign-in may wait for the provider's answer.
pub const PENDING_TTL: Duration = Duration::from_secs(600);
/// Least time between two fetches of the provider's keys for an unknown key id.
pub const JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// Largest `code`, `state` or `error` accepted from the provider's redirect, in bytes.
pub const MAX_PARAM: usize = 2048;

/// The discovery fields Bootlane reads besides the core ones: the RP-initiated logout
/// endpoint (OpenID Connect RP-Initiated Logout 1.0, section 2.1).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct LogoutMetadata {
    /// `end_session_endpoint`, when the provider offers logout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_session_endpoint: Option<url::Url>,
}
impl AdditionalProviderMetadata for LogoutMetadata {}

/// The provider's discovery document with [`LogoutMetadata`].
pub type Metadata = ProviderMetadata<
    LogoutMetadata,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// Why a sign-in through the provider was refused; [`Refusal::code`] goes to the login
/// page (`/login?sso_error=<code>`), [`Refusal::detail`] to the log (escaped).
#[derive(Debug)]
pub enum Refusal {
    /// Unknown, replayed or expired `state`, or a browser other than the one that started.
    BadState,
    /// The provider answered with `?error=` (the user cancelled, or the provider refused).
    Provider(String),
    /// The ID token failed a check (signature, issuer, audience, expiry, nonce).
    BadToken(String),
    /// The user's groups map to no role.
    NoRole,
    /// The provider's user name is a local account's name.
    LocalName,
    /// The provider could not be reached or answered nonsense.
    Unavailable(String),
}

impl Refusal {
    /// The short code the UI explains.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::BadState => "state",
            Refusal::Provider(_) => "provider",
            Refusal::BadToken(_) => "token",
            Refusal::NoRole => "no_role",
            Refusal::LocalName => "local_name",
            Refusal::Unavailable(_) => "unavailable",
        }
    }

    /// What happened, for the log (may contain provider text: escape it).
    pub fn detail(&self) -> String {
        match self {
            Refusal::BadState => "unknown, expired or replayed state".into(),
            Refusal::Provider(e) => format!("the provider answered error={e}"),
            Refusal::BadToken(e) => format!("ID token refused: {e}"),
            Refusal::NoRole => "no group maps to a role".into(),
            Refusal::LocalName => "the user name is a local account's".into(),
            Refusal::Unavailable(e) => format!("provider unavailable: {e}"),
        }
    }
}

/// Who the provider says signed in, after every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user name (`username_claim`, else `sub`).
    pub username: String,
    /// The mapped role.
    pub role: Role,
}

/// A sign-in waiting for the provider's answer.
struct Pending {
    nonce: Nonce,
    verifier: PkceCodeVerifier,
    /// SHA-256 of the browser's flow cookie.
    browser: [u8; 32],
    started: Instant,
}

/// The provider as discovered, with its current keys.
struct Provider {
    metadata: Metadata,
    keys: CoreJsonWebKeySet,
    keys_fetched: Instant,
}

/// The OpenID Connect relying party: configuration, outbound client, the discovered
/// provider (discovered at first use, then kept) and the pending sign-ins.
pub struct Oidc {
    cfg: OidcConfig,
    secret: Option<ClientSecret>,
    http: reqwest::Client,
    outbound: OutboundConfig,
    provider: Mutex<Option<Provider>>,
    pending: std::sync::Mutex<HashMap<String, Pending>>,
}

fn sha256(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// `s` with control characters and non-ASCII escaped and cut to 200 characters, for logs.
pub fn esc(s: &str) -> String {
    s.chars().take(200).flat_map(char::escape_default).collect()
}

impl Oidc {
    /// The relying party for `cfg`, reaching the provider under `outbound`.
    ///
    /// # Errors
    /// An unreadable client secret or CA file, or a CA file without certificates.
    pub fn new(cfg: &OidcConfig, outbound: &OutboundConfig) -> anyhow::Result<Self> {
        let secret = match &cfg.client_secret_file {
            Some(p) => {
                let s = std::fs::read_to_string(p)
                    .map_err(|e| anyhow::anyhow!("[auth.oidc] client_secret_file {}: {e}", p.display()))?;
                Some(ClientSecret::new(s.trim_end_matches(['\r', '\n']).to_string()))
            }
            None => None,
        };
        let mut b = bootlane_core::net::outbound::client_builder(outbound)
            // No redirects: discovery, token and key requests go where the provider says.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(cfg.timeout_secs));
        if let Some(p) = &cfg.ca_file {
            let pem = std::fs::read(p).map_err(|e| anyhow::anyhow!("[auth.oidc] ca_file {}: {e}", p.display()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| anyhow::anyhow!("[auth.oidc] ca_file {}: {e}", p.display()))?;
            if certs.is_empty() {
                anyhow::bail!("[auth.oidc] ca_file {} holds no certificate", p.display());
            }
            for c in certs {
                b = b.add_root_certificate(c);
            }
        }
        Ok(Self {
            cfg: cfg.clone(),
            secret,
            http: b.build()?,
            outbound: *outbound,
            provider: Mutex::new(None),
            pending: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The provider's name on the login page.
    pub fn display_name(&self) -> &str {
        &self.cfg.display_name
    }

    fn refuse_target(&self, url: &url::Url) -> Result<(), Refusal> {
        self.outbound
            .check_url(url)
            .map_err(|e| Refusal::Unavailable(e.to_string()))
    }

    /// The discovered metadata (discovering it on first use).
    async fn metadata(&self) -> Result<Metadata, Refusal> {
        let mut p = self.provider.lock().await;
        if let Some(p) = p.as_ref() {
            return Ok(p.metadata.clone());
        }
        let issuer = IssuerUrl::new(self.cfg.issuer.clone()).map_err(|e| Refusal::Unavailable(e.to_string()))?;
        self.refuse_target(issuer.url())?;
        let metadata = Metadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| Refusal::Unavailable(format!("discovery: {e}")))?;
        let keys = metadata.jwks().clone();
        *p = Some(Provider {
            metadata: metadata.clone(),
            keys,
            keys_fetched: Instant::now(),
        });
        Ok(metadata)
    }

    fn client(&self, metadata: Metadata) -> Result<ClientOf, Refusal> {
        let redirect =
            RedirectUrl::new(self.cfg.redirect_url.clone()).map_err(|e| Refusal::Unavailable(e.to_string()))?;
        Ok(
            CoreClient::from_provider_metadata(
                metadata,
                ClientId::new(self.cfg.client_id.clone()),
                self.secret.clone(),
            )
            .set_redirect_uri(redirect),
        )
    }

    /// Starts a sign-in: the provider's authorization URL and the browser's flow cookie
    /// value.
    ///
    /// # Errors
    /// [`Refusal::Unavailable`] when discovery fails.
    pub async fn begin(&self) -> Result<(url::Url, String), Refusal> {
        let client = self.client(self.metadata().await?)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut req = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for s in &self.cfg.scopes {
            if s != "openid" {
                req = req.add_scope(Scope::new(s.clone()));
            }
        }
        let (url, state, nonce) = req.url();
        let browser = CsrfToken::new_random().secret().clone();
        let mut pending = self.pending.lock().expect("pending lock");
        pending.retain(|_, p| p.started.elapsed() < PENDING_TTL);
        while pending.len() >= MAX_PENDING {
            let oldest = pending.iter().min_by_key(|(_, p)| p.started).map(|(k, _)| k.clone());
            match oldest {
                Some(k) => pending.remove(&k),
                None => break,
            };
        }
        pending.insert(
            state.secret().clone(),
            Pending {
                nonce,
                verifier,
                browser: sha256(&browser),
                started: Instant::now(),
            },
        );
        Ok((url, browser))
    }

    /// Drops the pending sign-in for `state`, if any (the provider answered with an error:
    /// the state is spent).
    pub fn abandon(&self, state: &str) {
        self.pending.lock().expect("pending lock").remove(state);
    }

    /// Takes the pending sign-in for `state` if `browser` (the flow cookie) started it; a
    /// state is usable once.
    fn take(&self, state: &str, browser: Option<&str>) -> Result<Pending, Refusal> {
        let mut pending = self.pending.lock().expect("pending lock");
        let p = pending.remove(state).ok_or(Refusal::BadState)?;
        let ok_browser = browser.is_some_and(|b| subtle::ConstantTimeEq::ct_eq(&sha256(b)[..], &p.browser[..]).into());
        if !ok_browser || p.started.elapsed() >= PENDING_TTL {
            return Err(Refusal::BadState);
        }
        Ok(p)
    }

    /// Finishes a sign-in: exchanges `code`, verifies the ID token and maps the groups.
    /// Returns the identity and the raw ID token (kept for logout).
    ///
    /// # Errors
    /// A [`Refusal`].
    pub async fn finish(&self, state: &str, code: &str, browser: Option<&str>) -> Result<(Identity, String), Refusal> {
        let pending = self.take(state, browser)?;
        let metadata = self.metadata().await?;
        let client = self.client(metadata)?;
        let token = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refusal::Unavailable(e.to_string()))?
            .set_pkce_verifier(pending.verifier)
            .request_async(&self.http)
            .await
            .map_err(|e| Refusal::Unavailable(format!("token request: {e}")))?;
        let id_token = token
            .id_token()
            .ok_or_else(|| Refusal::BadToken("the token response has no id_token".into()))?;
        let claims = self.verify_with_rotation(id_token, &pending.nonce).await?;
        let claims = match claims.get(&self.cfg.groups_claim) {
            Some(_) => claims,
            None => {
                let at = token.access_token().secret().clone();
                self.userinfo(&client, &at, &claims).await.unwrap_or(claims)
            }
        };
        let id = identity(&self.cfg, &claims)?;
        Ok((id, id_token.to_string()))
    }

    /// The userinfo claims merged over the ID token's (only when `sub` matches).
    async fn userinfo(
        &self,
        client: &ClientOf,
        access_token: &str,
        id_claims: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<serde_json::Map<String, serde_json::Value>> {
        let url = client.user_info_url()?.url().clone();
        self.refuse_target(&url).ok()?;
        let r = self.http.get(url).bearer_auth(access_token).send().await.ok()?;
        if !r.status().is_success() {
            return None;
        }
        let body = r.bytes().await.ok()?;
        if body.len() > 64 * 1024 {
            return None;
        }
        let info: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&body).ok()?;
        if info.get("sub") != id_claims.get("sub") {
            return None;
        }
        let mut merged = id_claims.clone();
        for (k, v) in info {
            merged.entry(k).or_insert(v);
        }
        Some(merged)
    }

    /// Verifies with the cached keys; when the token names a key id they lack, fetches the
    /// provider's JWKS again (at most once per [`JWKS_REFRESH_INTERVAL`]) and retries.
    async fn verify_with_rotation(
        &self,
        id_token: &CoreIdToken,
        nonce: &Nonce,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Refusal> {
        let keys = {
            let p = self.provider.lock().await;
            p.as_ref().map(|p| p.keys.clone()).ok_or(Refusal::BadState)?
        };
        match self.check().verify(keys, id_token, nonce) {
            Err(Refusal::BadToken(e)) if e == UNKNOWN_KEY => {
                let keys = self.refetch_keys().await?;
                self.check().verify(keys, id_token, nonce)
            }
            r => r,
        }
    }

    async fn refetch_keys(&self) -> Result<CoreJsonWebKeySet, Refusal> {
        let mut p = self.provider.lock().await;
        let p = p.as_mut().ok_or(Refusal::BadState)?;
        if p.keys_fetched.elapsed() < JWKS_REFRESH_INTERVAL {
            return Ok(p.keys.clone());
        }
        let uri = p.metadata.jwks_uri().clone();
        self.refuse_target(uri.url())?;
        p.keys_fetched = Instant::now();
        let keys = CoreJsonWebKeySet::fetch_async(&uri, &self.http)
            .await
            .map_err(|e| Refusal::Unavailable(format!("keys: {e}")))?;
        p.keys = keys.clone();
        p.metadata = p.metadata.clone().set_jwks(keys.clone());
        Ok(keys)
    }

    fn check(&self) -> TokenCheck {
        TokenCheck {
            issuer: self.cfg.issuer.clone(),
            client_id: self.cfg.client_id.clone(),
            secret: self.secret.clone(),
        }
    }

    /// The provider's logout URL for a session signed in with `id_token`
    /// (`end_session_endpoint` with `id_token_hint` and `post_logout_redirect_uri`, the
    /// login page of Bootlane's public URL); `None` when the provider lists no
    /// `end_session_endpoint`.
    pub async fn logout_url(&self, id_token: &str) -> Option<url::Url> {
        let metadata = self.metadata().await.ok()?;
        let mut u = metadata.additional_metadata().end_session_endpoint.clone()?;
        let mut back = url::Url::parse(&self.cfg.redirect_url).ok()?;
        back.set_path("/login");
        back.set_query(None);
        u.query_pairs_mut()
            .append_pair("id_token_hint", id_token)
            .append_pair("post_logout_redirect_uri", back.as_str())
            .append_pair("client_id", &self.cfg.client_id);
        Some(u)
    }
}

/// The client type after discovery.
type ClientOf = openidconnect::Client<
    openidconnect::EmptyAdditionalClaims,
    CoreAuthDisplay,
    openidconnect::core::CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    openidconnect::core::CoreAuthPrompt,
    openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>,
    openidconnect::core::CoreTokenResponse,
    openidconnect::core::CoreTokenIntrospectionResponse,
    openidconnect::core::CoreRevocableToken,
    openidconnect::core::CoreRevocationErrorResponse,
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The [`Refusal::BadToken`] text when no key of the provider matches the token's key id.
pub const UNKNOWN_KEY: &str = "no key of the provider matches the token";

/// The ID token checks of one relying party (OpenID Connect Core 1.0 section 3.1.3.7).
pub struct TokenCheck {
    /// The expected `iss`.
    pub issuer: String,
    /// The expected audience (`aud` must contain it; other audiences need `azp` = it).
    pub client_id: String,
    /// The client secret (HS256 tokens), for a confidential client.
    pub secret: Option<ClientSecret>,
}

impl TokenCheck {
    /// Verifies `id_token` against `keys` (signature), the issuer, the audience, the
    /// expiry and `nonce`; returns its claims as JSON.
    ///
    /// # Errors
    /// [`Refusal::BadToken`] naming the failed check (the text [`UNKNOWN_KEY`] when no key
    /// matches the token's key id).
    pub fn verify(
        &self,
        keys: CoreJsonWebKeySet,
        id_token: &CoreIdToken,
        nonce: &Nonce,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Refusal> {
        let issuer = IssuerUrl::new(self.issuer.clone()).map_err(|e| Refusal::BadToken(e.to_string()))?;
        let id = ClientId::new(self.client_id.clone());
        use openidconnect::core::CoreJwsSigningAlgorithm as A;
        // Every signing algorithm but `none`; HMAC ones only with a client secret (their
        // key). A key's type and `alg` bind it to its algorithm.
        let mut algs = vec![
            A::RsaSsaPkcs1V15Sha256,
            A::RsaSsaPkcs1V15Sha384,
            A::RsaSsaPkcs1V15Sha512,
            A::RsaSsaPssSha256,
            A::RsaSsaPssSha384,
            A::RsaSsaPssSha512,
            A::EcdsaP256Sha256,
            A::EcdsaP384Sha384,
            A::EcdsaP521Sha512,
            A::EdDsa,
        ];
        let verifier: IdTokenVerifier<CoreJsonWebKey> = match &self.secret {
            Some(s) => {
                algs.extend([A::HmacSha256, A::HmacSha384, A::HmacSha512]);
                IdTokenVerifier::new_confidential_client(id, s.clone(), issuer, keys)
            }
            None => IdTokenVerifier::new_public_client(id, issuer, keys),
        }
        .set_allowed_algs(algs);
        match id_token.claims(&verifier, nonce) {
            Ok(_) => {}
            Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
                return Err(Refusal::BadToken(UNKNOWN_KEY.into()))
            }
            Err(ClaimsVerificationError::SignatureVerification(e)) => {
                return Err(Refusal::BadToken(format!("signature: {e}")))
            }
            Err(e) => return Err(Refusal::BadToken(e.to_string())),
        }
        // The signature is checked: read the payload's claims as JSON (groups and the user
        // name claim are not among the typed standard claims).
        let raw = id_token.to_string();
        let payload = raw
            .split('.')
            .nth(1)
            .ok_or_else(|| Refusal::BadToken("not a JWS".into()))?;
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|e| Refusal::BadToken(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| Refusal::BadToken(e.to_string()))
    }
}

/// The identity in verified `claims`: the user name (`username_claim`, else `sub`) and
/// the highest role of the groups claim (an array of strings or one string).
///
/// # Errors
/// [`Refusal::NoRole`] when no group maps; [`Refusal::BadToken`] without a usable name.
pub fn identity(cfg: &OidcConfig, claims: &serde_json::Map<String, serde_json::Value>) -> Result<Identity, Refusal> {
    let name = claims
        .get(&cfg.username_claim)
        .or_else(|| claims.get("sub"))
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty() && s.len() <= 256 && !s.chars().any(char::is_control))
        .ok_or_else(|| Refusal::BadToken("no usable user name claim".into()))?;
    let groups: Vec<&str> = match claims.get(&cfg.groups_claim) {
        Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str()).collect(),
        Some(serde_json::Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    };
    let role = cfg.role_for(groups).ok_or(Refusal::NoRole)?;
    Ok(Identity {
        username: name.to_string(),
        role,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openidconnect::{
        core::{CoreEdDsaPrivateSigningKey, CoreIdTokenClaims, CoreJwsSigningAlgorithm},
        Audience, EmptyAdditionalClaims, EndUserUsername, JsonWebKeyId, PrivateSigningKey, StandardClaims,
        SubjectIdentifier,
    };

    const ISS: &str = "https://id.example.org";

    fn key(kid: &str) -> CoreEdDsaPrivateSigningKey {
        use base64::Engine as _;
        let rng = ring::rand::SystemRandom::new();
        let der = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        // PEM: base64 in lines of 64 characters (RFC 7468).
        let body: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            body.join("\n")
        );
        CoreEdDsaPrivateSigningKey::from_ed25519_pem(&pem, Some(JsonWebKeyId::new(kid.into()))).unwrap()
    }

    fn token(k: &CoreEdDsaPrivateSigningKey, iss: &str, aud: &str, nonce: &str, exp_in: i64) -> CoreIdToken {
        let now = chrono_now();
        let claims = CoreIdTokenClaims::new(
            IssuerUrl::new(iss.into()).unwrap(),
            vec![Audience::new(aud.into())],
            now + chrono::Duration::seconds(exp_in),
            now - chrono::Duration::seconds(60),
            StandardClaims::new(SubjectIdentifier::new("u-1".into()))
                .set_preferred_username(Some(EndUserUsername::new("alice".into()))),
            EmptyAdditionalClaims {},
        )
        .set_nonce(Some(Nonce::new(nonce.into())));
        CoreIdToken::new(claims, k, CoreJwsSigningAlgorithm::EdDsa, None, None).unwrap()
    }

    fn chrono_now() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }

    fn check() -> TokenCheck {
        TokenCheck {
            issuer: ISS.into(),
            client_id: "bootlane".into(),
            secret: None,
        }
    }

    fn jwks(k: &CoreEdDsaPrivateSigningKey) -> CoreJsonWebKeySet {
        CoreJsonWebKeySet::new(vec![k.as_verification_key()])
    }

    #[test]
    fn a_good_token_passes() {
        let k = key("k1");
        let t = token(&k, ISS, "bootlane", "n1", 300);
        let c = check().verify(jwks(&k), &t, &Nonce::new("n1".into())).unwrap();
        assert_eq!(c["preferred_username"], "alice");
    }

    #[test]
    fn a_tampered_signature_is_refused() {
        let k = key("k1");
        let t = token(&k, ISS, "bootlane", "n1", 300).to_string();
        let mut parts: Vec<String> = t.split('.').map(String::from).collect();
        // Flip one character of the signature.
        let sig = &mut parts[2];
        let c = if sig.starts_with('A') { "B" } else { "A" };
        sig.replace_range(0..1, c);
        let bad: CoreIdToken = parts.join(".").parse().unwrap();
        let e = check().verify(jwks(&k), &bad, &Nonce::new("n1".into())).unwrap_err();
        assert!(matches!(e, Refusal::BadToken(_)), "{e:?}");
        // A payload changed under the original signature is refused too.
        let other = token(&k, ISS, "bootlane", "n1", 3000).to_string();
        let mixed = format!(
            "{}.{}.{}",
            parts[0],
            other.split('.').nth(1).unwrap(),
            t.split('.').nth(2).unwrap()
        );
        let mixed: CoreIdToken = mixed.parse().unwrap();
        assert!(check().verify(jwks(&k), &mixed, &Nonce::new("n1".into())).is_err());
    }

    #[test]
    fn a_token_signed_by_another_key_is_refused() {
        let k = key("k1");
        let other = key("k1");
        let t = token(&other, ISS, "bootlane", "n1", 300);
        assert!(check().verify(jwks(&k), &t, &Nonce::new("n1".into())).is_err());
        // An unknown key id is reported as such (the caller fetches the keys again).
        let t = token(&key("k2"), ISS, "bootlane", "n1", 300);
        match check().verify(jwks(&k), &t, &Nonce::new("n1".into())) {
            Err(Refusal::BadToken(e)) => assert_eq!(e, UNKNOWN_KEY),
            r => panic!("{r:?}"),
        }
    }

    #[test]
    fn expired_wrong_audience_issuer_or_nonce_are_refused() {
        let k = key("k1");
        let n = Nonce::new("n1".into());
        for t in [
            token(&k, ISS, "bootlane", "n1", -120),
            token(&k, ISS, "someone-else", "n1", 300),
            token(&k, "https://evil.example.org", "bootlane", "n1", 300),
            token(&k, ISS, "bootlane", "n2", 300),
        ] {
            let e = check().verify(jwks(&k), &t, &n).unwrap_err();
            assert!(matches!(e, Refusal::BadToken(_)), "{e:?}");
        }
    }

    fn cfg() -> OidcConfig {
        toml::from_str(
            r#"
issuer = "https://id.example.org"
client_id = "bootlane"
redirect_url = "https://b.example.org/api/v1/auth/oidc/callback"
[group_roles]
ops = "operator"
"#,
        )
        .unwrap()
    }

    #[test]
    fn groups_map_to_a_role_and_none_is_refused() {
        let c = cfg();
        let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
        let id = identity(
            &c,
            &claims(serde_json::json!({"sub": "u", "preferred_username": "bob", "groups": ["x", "ops"]})),
        )
        .unwrap();
        assert_eq!(
            id,
            Identity {
                username: "bob".into(),
                role: Role::Operator
            }
        );
        let id = identity(&c, &claims(serde_json::json!({"sub": "u", "groups": "ops"}))).unwrap();
        assert_eq!(id.username, "u");
        assert!(matches!(
            identity(&c, &claims(serde_json::json!({"sub": "u", "groups": ["x"]}))),
            Err(Refusal::NoRole)
        ));
        assert!(matches!(
            identity(&c, &claims(serde_json::json!({"sub": "u"}))),
            Err(Refusal::NoRole)
        ));
    }

    #[test]
    fn a_state_works_once_and_only_in_its_browser() {
        let o = Oidc::new(&cfg(), &OutboundConfig::default()).unwrap();
        let put = |state: &str, browser: &str| {
            o.pending.lock().unwrap().insert(
                state.into(),
                Pending {
                    nonce: Nonce::new("n".into()),
                    verifier: PkceCodeVerifier::new("v".repeat(43)),
                    browser: sha256(browser),
                    started: Instant::now(),
                },
            );
        };
        put("s1", "b1");
        assert!(matches!(o.take("s1", Some("other")), Err(Refusal::BadState)));
        // The failed attempt spent the state.
        assert!(matches!(o.take("s1", Some("b1")), Err(Refusal::BadState)));
        put("s2", "b2");
        assert!(matches!(o.take("s2", None), Err(Refusal::BadState)));
        put("s3", "b3");
        assert!(o.take("s3", Some("b3")).is_ok());
        assert!(matches!(o.take("s3", Some("b3")), Err(Refusal::BadState)), "replay");
    }

    #[tokio::test]
    async fn an_unknown_key_id_fetches_the_keys_again_at_most_once_per_interval() {
        use openidconnect::{core::CoreResponseType, AuthUrl, JsonWebKeySetUrl, ResponseTypes};
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (old, new) = (key("old"), key("new"));
        let body = serde_json::to_string(&jwks(&new)).unwrap();
        let hits = std::sync::Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                h.fetch_add(1, Ordering::SeqCst);
                let body = body.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], body) }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        let outbound = OutboundConfig {
            allow_loopback: true,
            ..Default::default()
        };
        let o = Oidc::new(&cfg(), &outbound).unwrap();
        let metadata = Metadata::new(
            IssuerUrl::new(ISS.into()).unwrap(),
            AuthUrl::new(format!("{ISS}/auth")).unwrap(),
            JsonWebKeySetUrl::new(format!("http://{addr}/jwks")).unwrap(),
            vec![ResponseTypes::new(vec![CoreResponseType::Code])],
            vec![],
            vec![CoreJwsSigningAlgorithm::EdDsa],
            LogoutMetadata::default(),
        );
        *o.provider.lock().await = Some(Provider {
            metadata,
            keys: jwks(&old),
            keys_fetched: Instant::now() - JWKS_REFRESH_INTERVAL,
        });
        let n = Nonce::new("n1".into());
        // Signed with the provider's new key: the keys are fetched again and it passes.
        let t = token(&new, ISS, "bootlane", "n1", 300);
        o.verify_with_rotation(&t, &n).await.unwrap();
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        // The cached keys serve the next one without a fetch.
        o.verify_with_rotation(&t, &n).await.unwrap();
        // Another unknown key within the interval: refused, no second fetch.
        let t = token(&key("newer"), ISS, "bootlane", "n1", 300);
        assert!(o.verify_with_rotation(&t, &n).await.is_err());
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn log_text_is_escaped() {
        assert_eq!(esc("a\nb\u{1b}"), "a\\nb\\u{1b}");
    }
}
