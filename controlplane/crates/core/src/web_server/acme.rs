//! ACME (RFC 8555) for the management certificate (`[api] tls = "acme"`), with
//! instant-acme: an account kept in `<data_dir>/tls/acme/account.json` (mode 0600), one
//! order for `[api] tls_names`, HTTP-01 challenges (RFC 8555 §8.3) answered by the boot
//! listener at `/.well-known/acme-challenge/{token}` ([`challenge_router`]), and the
//! issued chain and key stored in `<data_dir>/tls/acme/cert.pem` and `key.pem` (0600).
//!
//! [`spawn_renewal`] keeps the certificate fresh: it orders one at start when no valid
//! ACME certificate is stored (a self-signed one serves meanwhile), then renews when
//! less than a third of the lifetime remains, retrying failures every
//! [`RETRY_AFTER`] at most. State: the pending challenge tokens ([`Challenges`]),
//! shared by the ordering task and the boot listener's route.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, RwLock},
    time::Duration,
};

use anyhow::Context;
use axum::{extract::Path, http::StatusCode, routing::get, Router};
use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus,
    RetryPolicy,
};
use tokio_util::sync::CancellationToken;

use super::tls::{self, CertStore};

/// Longest wait before a failed order is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(60);
/// Longest sleep between two looks at the certificate's remaining lifetime.
pub const CHECK_AT_MOST_EVERY: Duration = Duration::from_secs(3600);

/// HTTP-01 key authorizations by token, while an order is pending.
#[derive(Debug, Default)]
pub struct Challenges(RwLock<HashMap<String, String>>);

impl Challenges {
    fn set(&self, token: &str, key_authorization: &str) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_owned(), key_authorization.to_owned());
    }

    fn clear(&self) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn get(&self, token: &str) -> Option<String> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }
}

/// `GET /.well-known/acme-challenge/{token}`: the key authorization of a pending HTTP-01
/// challenge as `text/plain` (RFC 8555 §8.3), 404 for any other token.
pub fn challenge_router(challenges: Arc<Challenges>) -> Router {
    Router::new().route(
        "/.well-known/acme-challenge/{token}",
        get(move |Path(token): Path<String>| {
            let c = challenges.clone();
            async move {
                match c.get(&token) {
                    Some(k) => (StatusCode::OK, [("content-type", "text/plain")], k),
                    None => (
                        StatusCode::NOT_FOUND,
                        [("content-type", "text/plain")],
                        "no such challenge".to_owned(),
                    ),
                }
            }
        }),
    )
}

/// Where and how to order.
#[derive(Debug, Clone)]
pub struct AcmeSettings {
    /// The ACME server's directory URL (`[api] acme_directory_url`).
    pub directory_url: String,
    /// Contact URIs (`[api] acme_contact`, e.g. `mailto:ops@example.com`).
    pub contact: Vec<String>,
    /// A PEM root to trust for the ACME server's own HTTPS (`[api] acme_ca_file`); the
    /// system's usual roots otherwise.
    pub ca_file: Option<PathBuf>,
    /// The names ordered (DNS names).
    pub names: Vec<String>,
    /// `<data_dir>/tls/acme`.
    pub dir: PathBuf,
}

impl AcmeSettings {
    fn cert_path(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    fn key_path(&self) -> PathBuf {
        self.dir.join("key.pem")
    }

    /// The stored ACME certificate, if it loads.
    pub fn stored(&self) -> Option<tls::Loaded> {
        tls::load_files(&self.cert_path(), &self.key_path(), "acme").ok()
    }

    async fn account(&self) -> anyhow::Result<Account> {
        let builder = || -> anyhow::Result<_> {
            Ok(match &self.ca_file {
                Some(ca) => {
                    Account::builder_with_root(ca).with_context(|| format!("[api] acme_ca_file {}", ca.display()))?
                }
                None => Account::builder()?,
            })
        };
        let path = self.dir.join("account.json");
        if let Ok(text) = std::fs::read(&path) {
            let creds: AccountCredentials =
                serde_json::from_slice(&text).with_context(|| format!("{} is not an ACME account", path.display()))?;
            return Ok(builder()?.from_credentials(creds).await?);
        }
        let contact: Vec<&str> = self.contact.iter().map(String::as_str).collect();
        let (account, creds) = builder()?
            .create(
                &NewAccount {
                    contact: &contact,
                    terms_of_service_agreed: true,
                    only_return_existing: false,
                },
                self.directory_url.clone(),
                None,
            )
            .await
            .with_context(|| format!("creating an ACME account at {}", self.directory_url))?;
        tls::private_dir(&self.dir)?;
        tls::write_atomic(&path, &serde_json::to_vec(&creds)?, 0o600)?;
        tracing::info!(directory = %self.directory_url, "ACME account created");
        Ok(account)
    }

    /// Orders a certificate for [`AcmeSettings::names`] with HTTP-01 challenges answered
    /// through `challenges`, stores it and returns it loaded.
    ///
    /// # Errors
    /// The ACME server's refusals (with its problem document), an authorization without
    /// an HTTP-01 challenge or that turns invalid, storage errors.
    pub async fn issue(&self, challenges: &Challenges) -> anyhow::Result<tls::Loaded> {
        let account = self.account().await?;
        let ids: Vec<Identifier> = self.names.iter().map(|n| Identifier::Dns(n.clone())).collect();
        let mut order = account
            .new_order(&NewOrder::new(&ids))
            .await
            .context("new ACME order")?;
        let mut authzs = order.authorizations();
        while let Some(a) = authzs.next().await {
            let mut a = a.context("ACME authorization")?;
            match a.status {
                AuthorizationStatus::Pending => {}
                AuthorizationStatus::Valid => continue,
                s => anyhow::bail!("ACME authorization is {s:?}"),
            }
            let mut ch = a
                .challenge(ChallengeType::Http01)
                .context("the ACME server offers no http-01 challenge")?;
            challenges.set(&ch.token, ch.key_authorization().as_str());
            ch.set_ready().await.context("ACME challenge ready")?;
        }
        let status = order.poll_ready(&RetryPolicy::default()).await;
        let result = async {
            let status = status.context("waiting for the ACME order")?;
            if status != OrderStatus::Ready {
                anyhow::bail!("the ACME order is {status:?}, not ready (a challenge failed?)");
            }
            let key_pem = order.finalize().await.context("finalizing the ACME order")?;
            let chain_pem = order
                .poll_certificate(&RetryPolicy::default())
                .await
                .context("downloading the ACME certificate")?;
            anyhow::Ok((key_pem, chain_pem))
        }
        .await;
        challenges.clear();
        let (key_pem, chain_pem) = result?;
        tls::private_dir(&self.dir)?;
        tls::write_atomic(&self.key_path(), key_pem.as_bytes(), 0o600)?;
        tls::write_atomic(&self.cert_path(), chain_pem.as_bytes(), 0o644)?;
        Ok(tls::load_files(&self.cert_path(), &self.key_path(), "acme")?)
    }
}

/// When the certificate described by `info` is due for renewal: once less than a third
/// of its lifetime remains (a non-ACME certificate is due at once).
pub fn renew_at(info: &tls::CertInfo) -> time::OffsetDateTime {
    if info.source != "acme" {
        return time::OffsetDateTime::UNIX_EPOCH;
    }
    info.not_after - (info.not_after - info.not_before) / 3
}

/// Orders a certificate whenever the one in `store` is due ([`renew_at`]) and swaps it
/// in, until `token` is cancelled (see the module docs).
pub fn spawn_renewal(
    store: Arc<CertStore>,
    settings: AcmeSettings,
    challenges: Arc<Challenges>,
    token: CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            let due = renew_at(&store.info());
            let wait = (due - time::OffsetDateTime::now_utc()).max(time::Duration::ZERO);
            let wait = Duration::try_from(wait).unwrap_or_default().min(CHECK_AT_MOST_EVERY);
            if !wait.is_zero() {
                tokio::select! {
                    () = token.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                continue;
            }
            tracing::info!(names = ?settings.names, directory = %settings.directory_url, "ordering an ACME certificate");
            let issued = tokio::select! {
                () = token.cancelled() => return,
                r = settings.issue(&challenges) => r,
            };
            match issued {
                Ok(l) => store.set(l),
                Err(e) => {
                    tracing::warn!("ACME order failed, retrying in {} s: {e:#}", RETRY_AFTER.as_secs());
                    tokio::select! {
                        () = token.cancelled() => return,
                        () = tokio::time::sleep(RETRY_AFTER) => {}
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{renew_at, Challenges};
    use crate::web_server::tls::CertInfo;

    fn info(source: &str, days: i64) -> CertInfo {
        let nb = time::macros::datetime!(2030-01-01 0:00 UTC);
        CertInfo {
            source: source.into(),
            fingerprint_sha256: String::new(),
            not_before: nb,
            not_after: nb + time::Duration::days(days),
        }
    }

    #[test]
    fn renewal_is_due_with_a_third_of_the_lifetime_left() {
        assert_eq!(
            renew_at(&info("acme", 90)),
            time::macros::datetime!(2030-03-02 0:00 UTC)
        );
        assert_eq!(renew_at(&info("self-signed", 825)), time::OffsetDateTime::UNIX_EPOCH);
    }

    #[tokio::test]
    async fn challenge_route_answers_only_pending_tokens() {
        use tower::ServiceExt;
        let c = std::sync::Arc::new(Challenges::default());
        c.set("tok", "tok.thumb");
        let app = super::challenge_router(c.clone());
        let get = |p: &str| {
            axum::http::Request::get(p)
                .body(axum::body::Body::empty())
                .expect("request")
        };
        let r = app
            .clone()
            .oneshot(get("/.well-known/acme-challenge/tok"))
            .await
            .expect("answer");
        assert_eq!(r.status(), 200);
        let body = axum::body::to_bytes(r.into_body(), 1024).await.expect("body");
        assert_eq!(&body[..], b"tok.thumb");
        let r = app
            .oneshot(get("/.well-known/acme-challenge/other"))
            .await
            .expect("answer");
        assert_eq!(r.status(), 404);
    }
}
