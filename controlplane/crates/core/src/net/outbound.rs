//! Outbound HTTP fetches that cannot be turned against the host (server-side request
//! forgery): the `[outbound]` configuration section ([`OutboundConfig`]) and the one
//! builder every outbound HTTP client starts from ([`client_builder`]), used by the
//! netboot cache, the community store's HTTP sources, the update manifest and its
//! downloads, and Redfish.
//!
//! A URL an administrator (or a manifest, a catalog, a redirect) names could point back at
//! the server itself (`127.0.0.1`, a local admin port), at a link-local service, or at a
//! cloud metadata service that hands out credentials (`169.254.169.254`,
//! `fd00:ec2::254`). The rules ([`OutboundConfig::check`]) refuse these targets:
//!
//! | Range | Kind | Opened by |
//! |---|---|---|
//! | `127.0.0.0/8`, `::1` | loopback | `allow_loopback` |
//! | `0.0.0.0/8`, `::` | unspecified (Linux connects these to the host itself) | `allow_loopback` |
//! | `169.254.0.0/16`, `fe80::/10` | link-local | `allow_link_local` |
//! | `169.254.169.254`, `fd00:ec2::254` | cloud metadata | never |
//!
//! An IPv6 address that embeds an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
//! `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is judged by the IPv4 address it carries.
//! Private ranges (RFC 1918 `10/8`, `172.16/12`, `192.168/16`, and IPv6 ULA `fc00::/7`)
//! stay allowed: BMCs, mirrors and catalog sources live there.
//!
//! The rules are enforced in three places, so that no path around them is left:
//! - names: the client's resolver ([`GuardedResolver`], tokio's `lookup_host`) drops the
//!   forbidden addresses of every answer, and the connection is made only to the addresses
//!   kept, so a name that resolves (or re-resolves, DNS rebinding) to a forbidden address
//!   is not reached;
//! - redirects: a custom redirect policy checks every target before it is followed;
//! - IP literals: reqwest does not call the resolver for a URL whose host is an IP
//!   address, so every request goes through [`checked`] before it is sent.
//!
//! No global state: the configuration is copied into each client.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use serde::{Deserialize, Serialize};

/// Most redirects followed by one request (reqwest's own default).
pub const MAX_REDIRECTS: usize = 10;

/// `[outbound]`: which otherwise refused targets outbound fetches may reach.
///
/// ```toml
/// [outbound]
/// allow_loopback = false    # 127.0.0.0/8, ::1, 0.0.0.0/8, :: (the host itself)
/// allow_link_local = false  # 169.254.0.0/16, fe80::/10 (never the cloud metadata addresses)
/// ```
///
/// Private RFC 1918 and ULA ranges are always allowed (BMCs and mirrors live there); the
/// cloud metadata addresses `169.254.169.254` and `fd00:ec2::254` are always refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OutboundConfig {
    /// Allow 127.0.0.0/8, ::1, 0.0.0.0/8 and :: (services on this host).
    pub allow_loopback: bool,
    /// Allow 169.254.0.0/16 and fe80::/10 (never the metadata addresses).
    pub allow_link_local: bool,
}

/// Why an address is refused (see the table of the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `169.254.169.254`, `fd00:ec2::254`.
    Metadata,
}

impl Forbidden {
    /// The range's name and the setting that opens it, as error messages end.
    fn explain(self) -> &'static str {
        match self {
            Self::Loopback => "loopback address; set [outbound] allow_loopback = true to allow",
            Self::Unspecified => "unspecified address (the host itself); set [outbound] allow_loopback = true to allow",
            Self::LinkLocal => "link-local address; set [outbound] allow_link_local = true to allow",
            Self::Metadata => "cloud metadata address; never fetched",
        }
    }
}

/// The AWS/GCP/Azure/OpenStack metadata address.
const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
/// The AWS IPv6 metadata address.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// The range `ip` falls in, if it is one of the refused ones (whatever the settings).
pub fn classify(ip: IpAddr) -> Option<Forbidden> {
    match ip {
        IpAddr::V4(a) => classify_v4(a),
        IpAddr::V6(a) => classify_v6(a),
    }
}

fn classify_v4(a: Ipv4Addr) -> Option<Forbidden> {
    if a == METADATA_V4 {
        Some(Forbidden::Metadata)
    } else if a.is_loopback() {
        Some(Forbidden::Loopback)
    } else if a.octets()[0] == 0 {
        Some(Forbidden::Unspecified)
    } else if a.is_link_local() {
        Some(Forbidden::LinkLocal)
    } else {
        None
    }
}

fn classify_v6(a: Ipv6Addr) -> Option<Forbidden> {
    let s = a.segments();
    if a == METADATA_V6 {
        return Some(Forbidden::Metadata);
    }
    if a.is_loopback() {
        return Some(Forbidden::Loopback);
    }
    if a.is_unspecified() {
        return Some(Forbidden::Unspecified);
    }
    if s[0] & 0xffc0 == 0xfe80 {
        return Some(Forbidden::LinkLocal);
    }
    let embedded = |a: Ipv6Addr| {
        let o = a.octets();
        Ipv4Addr::new(o[12], o[13], o[14], o[15])
    };
    // IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96, deprecated but still routed by
    // some stacks) and the NAT64 well-known prefix (64:ff9b::/96, RFC 6052): the IPv4
    // address they carry decides.
    let mapped = s[..5] == [0; 5] && s[5] == 0xffff;
    let compatible = s[..6] == [0; 6];
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    if mapped || compatible || nat64 {
        return classify_v4(embedded(a));
    }
    None
}

impl OutboundConfig {
    /// Checks the section (every combination is valid; kept for the uniform
    /// `Config::problems` list).
    ///
    /// # Errors
    /// None today.
    pub fn validate(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Whether a fetch may connect to `ip`: `Err` with the refused range when it is
    /// loopback, unspecified or link-local without the matching setting, or a cloud
    /// metadata address (always).
    ///
    /// # Errors
    /// The [`Forbidden`] range `ip` is in.
    pub fn check(&self, ip: IpAddr) -> Result<(), Forbidden> {
        match classify(ip) {
            None => Ok(()),
            Some(Forbidden::Loopback | Forbidden::Unspecified) if self.allow_loopback => Ok(()),
            Some(Forbidden::LinkLocal) if self.allow_link_local => Ok(()),
            Some(f) => Err(f),
        }
    }

    /// Whether a fetch of `url` may start: its host, when an IP literal, passes
    /// [`OutboundConfig::check`] (names are checked by the resolver when connecting).
    ///
    /// # Errors
    /// [`Refused::Address`] naming the URL and the range.
    pub fn check_url(&self, url: &url::Url) -> Result<(), Refused> {
        let ip = match url.host() {
            Some(url::Host::Ipv4(a)) => IpAddr::V4(a),
            Some(url::Host::Ipv6(a)) => IpAddr::V6(a),
            Some(url::Host::Domain(_)) | None => return Ok(()),
        };
        self.check(ip).map_err(|why| Refused::Address {
            url: url.to_string(),
            ip,
            why,
        })
    }
}

/// A refused outbound fetch. Its message names the URL or host, the address and the
/// setting that would allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The URL's host (an IP literal, or a redirect's target) is in a refused range.
    #[error("refusing to fetch {url}: {ip} is a {}", why.explain())]
    Address {
        /// The URL.
        url: String,
        /// Its address.
        ip: IpAddr,
        /// The range.
        why: Forbidden,
    },
    /// Every address a name resolves to is in a refused range.
    #[error(
        "refusing to connect to {name}: it resolves only to refused addresses ({})",
        list(refused)
    )]
    Resolved {
        /// The name.
        name: String,
        /// Each address with its range.
        refused: Vec<(IpAddr, Forbidden)>,
    },
    /// The URL does not parse (a request built from a bad string).
    #[error("refusing to fetch {url:?}: not a URL ({reason})")]
    BadUrl {
        /// The text.
        url: String,
        /// Why it does not parse.
        reason: String,
    },
}

fn list(refused: &[(IpAddr, Forbidden)]) -> String {
    refused
        .iter()
        .map(|(ip, why)| format!("{ip}: {}", why.explain()))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `url` parsed and checked by [`OutboundConfig::check_url`]: call it on every URL right
/// before sending (reqwest skips the resolver for IP literals, so this is their only
/// check).
///
/// # Errors
/// [`Refused::BadUrl`] when `url` does not parse; [`Refused::Address`] when its host is a
/// refused IP literal.
pub fn checked(policy: &OutboundConfig, url: &str) -> Result<url::Url, Refused> {
    let u = url::Url::parse(url).map_err(|e| Refused::BadUrl {
        url: url.to_string(),
        reason: e.to_string(),
    })?;
    policy.check_url(&u)?;
    Ok(u)
}

/// The resolver of outbound clients: tokio's `lookup_host` (the system resolver), with the
/// addresses [`OutboundConfig::check`] refuses dropped; an error ([`Refused::Resolved`])
/// when none is left.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    policy: OutboundConfig,
}

impl GuardedResolver {
    /// A resolver applying `policy`.
    pub fn new(policy: OutboundConfig) -> Self {
        Self { policy }
    }

    /// Resolves `name` (port 0: reqwest puts the URL's port in) and keeps the allowed
    /// addresses, in resolver order.
    ///
    /// # Errors
    /// The lookup failure, or [`Refused::Resolved`] when every address is refused.
    pub async fn lookup(&self, name: &str) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let mut kept = Vec::new();
        let mut refused = Vec::new();
        for a in tokio::net::lookup_host((name, 0)).await? {
            match self.policy.check(a.ip()) {
                Ok(()) => kept.push(a),
                Err(why) => refused.push((a.ip(), why)),
            }
        }
        if kept.is_empty() && !refused.is_empty() {
            return Err(Box::new(Refused::Resolved {
                name: name.to_string(),
                refused,
            }));
        }
        if kept.is_empty() {
            return Err(format!("{name} has no address").into());
        }
        Ok(kept)
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = *self;
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The redirect policy of outbound clients: at most [`MAX_REDIRECTS`], each target checked
/// with [`OutboundConfig::check_url`] before it is followed (names among them are checked
/// by the resolver when connecting).
pub fn redirect_policy(policy: OutboundConfig) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            let e = format!("more than {MAX_REDIRECTS} redirects");
            return attempt.error(e);
        }
        match policy.check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(e) => attempt.error(e),
        }
    })
}

/// The builder every outbound HTTP client starts from: the [`GuardedResolver`] and the
/// checking [`redirect_policy`] of `policy`, and the `bootlane/<version>` user agent.
/// Callers add their timeouts (and may make redirects stricter, e.g. `Policy::none()`),
/// and pass every URL through [`checked`] before sending.
pub fn client_builder(policy: &OutboundConfig) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver::new(*policy)))
        .redirect(redirect_policy(*policy))
        .user_agent(concat!("bootlane/", env!("CARGO_PKG_VERSION")))
}

/// A reqwest error with its causes (`: `-joined), so a refusal by the resolver or the
/// redirect policy shows its reason; the URL is left in as reqwest writes it.
pub fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: OutboundConfig = OutboundConfig {
        allow_loopback: false,
        allow_link_local: false,
    };
    const OPEN: OutboundConfig = OutboundConfig {
        allow_loopback: true,
        allow_link_local: true,
    };

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_range_is_classified() {
        use Forbidden::*;
        let cases: &[(&str, Option<Forbidden>)] = &[
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.254", Some(Loopback)),
            ("::1", Some(Loopback)),
            ("0.0.0.0", Some(Unspecified)),
            ("0.1.2.3", Some(Unspecified)),
            ("::", Some(Unspecified)),
            ("169.254.0.1", Some(LinkLocal)),
            ("169.254.255.255", Some(LinkLocal)),
            ("fe80::1", Some(LinkLocal)),
            ("febf:ffff::1", Some(LinkLocal)),
            ("169.254.169.254", Some(Metadata)),
            ("fd00:ec2::254", Some(Metadata)),
            // IPv4-mapped, IPv4-compatible and NAT64 forms judge the IPv4 address.
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("::ffff:169.254.1.1", Some(LinkLocal)),
            ("::ffff:169.254.169.254", Some(Metadata)),
            ("::127.0.0.1", Some(Loopback)),
            ("::169.254.169.254", Some(Metadata)),
            ("64:ff9b::127.0.0.1", Some(Loopback)),
            ("64:ff9b::169.254.169.254", Some(Metadata)),
            // Allowed: private, public, ULA, global, and the neighbours of each range.
            ("10.1.2.3", None),
            ("172.16.0.1", None),
            ("192.168.1.1", None),
            ("8.8.8.8", None),
            ("128.0.0.1", None),
            ("1.0.0.0", None),
            ("169.253.255.255", None),
            ("169.255.0.1", None),
            ("fd00:ec2::253", None),
            ("fd12::1", None),
            ("fec0::1", None),
            ("2001:db8::1", None),
            ("::2:0:0", None),
            ("::ffff:10.0.0.1", None),
            ("64:ff9b::10.0.0.1", None),
            ("64:ff9b:1::127.0.0.1", None),
        ];
        for (a, want) in cases {
            assert_eq!(classify(ip(a)), *want, "{a}");
        }
    }

    #[test]
    fn settings_open_their_ranges_and_never_metadata() {
        let lo = OutboundConfig {
            allow_loopback: true,
            ..STRICT
        };
        let ll = OutboundConfig {
            allow_link_local: true,
            ..STRICT
        };
        for a in ["127.0.0.1", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1"] {
            assert!(STRICT.check(ip(a)).is_err(), "{a}");
            assert!(ll.check(ip(a)).is_err(), "{a}");
            assert_eq!(lo.check(ip(a)), Ok(()), "{a}");
        }
        for a in ["169.254.1.2", "fe80::1", "::ffff:169.254.1.2"] {
            assert_eq!(STRICT.check(ip(a)), Err(Forbidden::LinkLocal), "{a}");
            assert!(lo.check(ip(a)).is_err(), "{a}");
            assert_eq!(ll.check(ip(a)), Ok(()), "{a}");
        }
        for a in ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"] {
            assert_eq!(OPEN.check(ip(a)), Err(Forbidden::Metadata), "{a}");
        }
        for a in ["10.0.0.1", "192.168.0.10", "2001:db8::1"] {
            assert_eq!(STRICT.check(ip(a)), Ok(()), "{a}");
        }
    }

    #[test]
    fn literal_urls_are_checked_with_a_clear_message() {
        let e = checked(&STRICT, "http://169.254.1.1/latest").unwrap_err();
        assert_eq!(
            e.to_string(),
            "refusing to fetch http://169.254.1.1/latest: 169.254.1.1 is a link-local address; set [outbound] allow_link_local = true to allow"
        );
        let e = checked(&STRICT, "http://[::ffff:7f00:1]:8080/x").unwrap_err();
        assert!(e.to_string().contains("allow_loopback = true"), "{e}");
        // WHATWG host parsing: hex and short IPv4 forms are literals too.
        assert!(checked(&STRICT, "http://0x7f.1/").is_err());
        assert!(checked(&STRICT, "http://2130706433/").is_err());
        assert!(checked(&OPEN, "http://169.254.169.254/")
            .unwrap_err()
            .to_string()
            .contains("metadata"));
        assert!(
            checked(&STRICT, "http://example.org/").is_ok(),
            "names go to the resolver"
        );
        assert!(checked(&STRICT, "http://10.0.0.1/").is_ok());
        assert!(matches!(checked(&STRICT, "not a url"), Err(Refused::BadUrl { .. })));
        assert_eq!(OutboundConfig::default(), STRICT, "secure by default");
    }

    /// A real HTTP server on `127.0.0.1:0` answering `/` with "ok" and `/to?u=<url>` with a
    /// 302 to `<url>`; answers its port.
    async fn serve() -> u16 {
        use axum::{extract::Query, response::Redirect, routing::get, Router};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let app = Router::new().route("/", get(|| async { "ok" })).route(
            "/to",
            get(|Query(q): Query<std::collections::HashMap<String, String>>| async move { Redirect::to(&q["u"]) }),
        );
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        port
    }

    async fn fetch(policy: OutboundConfig, url: &str) -> Result<String, String> {
        let c = client_builder(&policy).build().unwrap();
        let u = checked(&policy, url).map_err(|e| e.to_string())?;
        let r = c.get(u).send().await.map_err(|e| describe(&e))?;
        r.text().await.map_err(|e| describe(&e))
    }

    #[tokio::test]
    async fn names_resolving_to_loopback_are_refused_by_the_resolver() {
        let port = serve().await;
        let url = format!("http://localhost:{port}/");
        let e = fetch(STRICT, &url).await.unwrap_err();
        assert!(
            e.contains("refusing to connect to localhost") && e.contains("allow_loopback = true"),
            "{e}"
        );
        assert_eq!(fetch(OPEN, &url).await.unwrap(), "ok");
        let e = GuardedResolver::new(STRICT).lookup("localhost").await.unwrap_err();
        assert!(e.to_string().contains("127.0.0.1: loopback"), "{e}");
    }

    #[tokio::test]
    async fn every_redirect_target_is_checked() {
        let port = serve().await;
        let lo_only = OutboundConfig {
            allow_loopback: true,
            ..STRICT
        };
        // Loopback allowed, so the first hop is fetched; its redirect to a link-local
        // literal (which reqwest would connect to without asking the resolver) is refused.
        let e = fetch(lo_only, &format!("http://127.0.0.1:{port}/to?u=http://169.254.10.10/"))
            .await
            .unwrap_err();
        assert!(
            e.contains("refusing to fetch http://169.254.10.10/") && e.contains("allow_link_local = true"),
            "{e}"
        );
        let e = fetch(
            OPEN,
            &format!("http://127.0.0.1:{port}/to?u=http://169.254.169.254/latest"),
        )
        .await
        .unwrap_err();
        assert!(e.contains("cloud metadata"), "{e}");
        // A redirect to an allowed target is followed.
        let back = format!("http://127.0.0.1:{port}/");
        assert_eq!(
            fetch(lo_only, &format!("http://127.0.0.1:{port}/to?u={back}"))
                .await
                .unwrap(),
            "ok"
        );
        // The literal itself, before any connection.
        let e = fetch(STRICT, &back).await.unwrap_err();
        assert!(e.contains("is a loopback address"), "{e}");
    }
}
