//! Catalog sources: the built-in set (`controlplane/crates/install/catalog/`, embedded in the
//! binary, or `[community] dir` in its place) and HTTP sources
//! (`[[community.sources]]`). Every source reads the same layout ([`super::format`]):
//! `index.json` and `items/<type>/<id>.json`.
//!
//! HTTP fetches have the bounded timeouts of `[community]` and a size cap
//! (`max_bytes`, enforced while reading, not trusted from `Content-Length`); an HTTP
//! source's parsed index is cached for `cache_ttl_secs`, and a failure is never cached
//! (the next listing asks again, bounded by the timeouts). Items are fetched fresh on
//! each detail or import. Errors are plain messages: the service names the source.
//! State: each HTTP source's cached index.

use std::{
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use super::format::{self, Index, Item, ItemType};
use bootlane_core::net::outbound::OutboundConfig;

/// Name of the built-in source.
pub const BUILTIN: &str = "builtin";

/// The built-in catalog, embedded at build time (`debug-embed`: debug builds too).
#[derive(rust_embed::Embed)]
#[folder = "catalog/"]
struct Embedded;

/// Where a source reads from.
#[derive(Debug, Clone)]
pub enum Location {
    /// The set embedded in the binary.
    Embedded,
    /// A directory in the source layout (`[community] dir`).
    Dir(PathBuf),
    /// An HTTP base URL (ends with `/`).
    Http(url::Url),
}

/// One source with its index cache.
#[derive(Debug)]
pub struct Source {
    /// Its name (`builtin` or the configured one).
    pub name: String,
    /// Where it reads from.
    pub location: Location,
    cache: Mutex<Option<(Instant, Arc<Index>)>>,
}

/// How a source fetches: the HTTP client (with its timeouts), the `[outbound]` rules, the
/// index TTL and the size cap.
#[derive(Debug, Clone)]
pub struct Fetcher {
    /// The client, built by [`bootlane_core::net::outbound::client_builder`] with `[community]`'s connect and
    /// total timeouts.
    pub client: reqwest::Client,
    /// The rules every URL is checked with before it is fetched (the same the client was
    /// built with).
    pub outbound: OutboundConfig,
    /// How long an HTTP index is reused.
    pub ttl: Duration,
    /// Largest file accepted, in bytes.
    pub max_bytes: u64,
}

impl Source {
    /// A source named `name` reading from `location`.
    pub fn new(name: impl Into<String>, location: Location) -> Self {
        Self {
            name: name.into(),
            location,
            cache: Mutex::new(None),
        }
    }

    /// An HTTP source; `url` gets a trailing `/` so relative paths join under it.
    ///
    /// # Errors
    /// A URL that does not parse.
    pub fn http(name: impl Into<String>, url: &str) -> Result<Self, String> {
        let base = if url.ends_with('/') {
            url.to_string()
        } else {
            format!("{url}/")
        };
        let u = url::Url::parse(&base).map_err(|e| format!("bad url {url:?}: {e}"))?;
        Ok(Self::new(name, Location::Http(u)))
    }

    /// `builtin`, `directory` or `http`.
    pub fn kind(&self) -> &'static str {
        match self.location {
            Location::Embedded => "builtin",
            Location::Dir(_) => "directory",
            Location::Http(_) => "http",
        }
    }

    /// The URL or directory it reads, for display (`None` for the embedded set).
    pub fn address(&self) -> Option<String> {
        match &self.location {
            Location::Embedded => None,
            Location::Dir(d) => Some(d.display().to_string()),
            Location::Http(u) => Some(u.to_string()),
        }
    }

    async fn read(&self, f: &Fetcher, rel: &str) -> Result<Vec<u8>, String> {
        match &self.location {
            Location::Embedded => Embedded::get(rel)
                .map(|e| e.data.into_owned())
                .ok_or_else(|| format!("{rel} is missing")),
            Location::Dir(d) => {
                let p = d.join(rel);
                let meta = tokio::fs::metadata(&p)
                    .await
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                if meta.len() > f.max_bytes {
                    return Err(format!("{rel} is larger than [community] max_bytes ({})", f.max_bytes));
                }
                tokio::fs::read(&p).await.map_err(|e| format!("{}: {e}", p.display()))
            }
            Location::Http(base) => {
                let url = base.join(rel).map_err(|e| format!("{rel}: {e}"))?;
                f.outbound.check_url(&url).map_err(|e| e.to_string())?;
                let mut resp = f.client.get(url.clone()).send().await.map_err(|e| describe(&url, &e))?;
                if !resp.status().is_success() {
                    return Err(format!("GET {url} answered HTTP {}", resp.status()));
                }
                let mut body = Vec::new();
                while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&url, &e))? {
                    body.extend_from_slice(&chunk);
                    if body.len() as u64 > f.max_bytes {
                        return Err(format!(
                            "GET {url}: larger than [community] max_bytes ({})",
                            f.max_bytes
                        ));
                    }
                }
                Ok(body)
            }
        }
    }

    /// The source's index: cached for the TTL when it is an HTTP source.
    ///
    /// # Errors
    /// The fetch or parse failure, as a message.
    pub async fn index(&self, f: &Fetcher) -> Result<Arc<Index>, String> {
        let cacheable = matches!(self.location, Location::Http(_));
        if cacheable {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, idx)) = cache.as_ref() {
                if at.elapsed() < f.ttl {
                    return Ok(idx.clone());
                }
            }
        }
        let idx = Arc::new(format::parse_index(&self.read(f, "index.json").await?)?);
        if cacheable {
            *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), idx.clone()));
        }
        Ok(idx)
    }

    /// Item `kind`/`id` (its file, parsed; its own sha256 checked by
    /// [`format::parse_item`]; the caller compares it with the index's).
    ///
    /// # Errors
    /// The fetch failure, a file that is not an item, or one whose type or id is not the
    /// one asked for.
    pub async fn item(&self, f: &Fetcher, kind: ItemType, id: &str) -> Result<Item, String> {
        if !format::valid_id(id) {
            return Err(format!("invalid item id {id:?}"));
        }
        let rel = format!("items/{}/{id}.json", kind.as_str());
        let item = format::parse_item(&self.read(f, &rel).await?).map_err(|e| format!("{rel}: {e}"))?;
        if item.meta.kind != kind || item.meta.id != id {
            return Err(format!(
                "{rel} holds item {}/{}, not {}/{id}",
                item.meta.kind.as_str(),
                item.meta.id,
                kind.as_str()
            ));
        }
        Ok(item)
    }
}

/// A reqwest error with its cause chain (timeouts and refused connections say so).
fn describe(url: &url::Url, e: &reqwest::Error) -> String {
    let mut msg = format!("GET {url}: ");
    if e.is_timeout() {
        msg.push_str("timed out");
    } else if e.is_connect() {
        msg.push_str("cannot connect");
    } else {
        msg.push_str("failed");
    }
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_core::net::outbound;

    /// A fetcher with short timeouts; `allow_loopback` as given (the test servers are on
    /// loopback).
    fn fetcher_with(allow_loopback: bool) -> Fetcher {
        let policy = OutboundConfig {
            allow_loopback,
            ..OutboundConfig::default()
        };
        Fetcher {
            client: outbound::client_builder(&policy)
                .connect_timeout(Duration::from_secs(1))
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap(),
            outbound: policy,
            ttl: Duration::from_secs(60),
            max_bytes: 2 << 20,
        }
    }

    fn fetcher() -> Fetcher {
        fetcher_with(true)
    }

    /// An HTTP source on loopback (a real server serving the built-in index) is refused by
    /// default, without a connection, and read with `[outbound] allow_loopback = true`.
    #[tokio::test]
    async fn a_loopback_source_is_refused_unless_outbound_allows_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let index = Embedded::get("index.json").unwrap().data.into_owned();
        let app = axum::Router::new().route(
            "/cat/index.json",
            axum::routing::get(move || {
                h.fetch_add(1, Ordering::SeqCst);
                let index = index.clone();
                async move { index }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/cat", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await });

        let s = Source::http("lab", &base).unwrap();
        let e = s.index(&fetcher_with(false)).await.unwrap_err();
        assert_eq!(
            e,
            format!(
                "refusing to fetch {base}/index.json: 127.0.0.1 is a loopback address; set [outbound] allow_loopback = true to allow"
            )
        );
        assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was contacted");
        let idx = s.index(&fetcher_with(true)).await.unwrap();
        assert!(idx.items.len() >= 20);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    /// The embedded set is consistent: every index entry's item file exists, parses, its
    /// sha256 is its content's and the index's, and its metadata matches the index.
    /// (`scripts/catalog-index.py controlplane/crates/install/catalog` rewrites it after an edit.)
    #[tokio::test]
    async fn the_builtin_set_is_consistent() {
        let s = Source::new(BUILTIN, Location::Embedded);
        let f = fetcher();
        let idx = s.index(&f).await.unwrap();
        assert!(idx.items.len() >= 20, "{}", idx.items.len());
        for m in &idx.items {
            let item = s.item(&f, m.kind, &m.id).await.unwrap();
            assert_eq!(&item.meta, m, "{}/{}", m.kind.as_str(), m.id);
        }
        for t in ItemType::ALL {
            assert!(idx.items.iter().any(|m| m.kind == t), "no built-in {}", t.as_str());
        }
    }

    /// The built-in answer templates are the answer-file presets, word for word.
    #[tokio::test]
    async fn builtin_answer_templates_are_the_presets() {
        let s = Source::new(BUILTIN, Location::Embedded);
        let f = fetcher();
        for p in crate::answers::presets::PRESETS {
            let item = s.item(&f, ItemType::AnswerTemplate, p.key).await.unwrap();
            let c: format::AnswerTemplateContent = serde_json::from_value(item.content).unwrap();
            assert_eq!(
                c.template, p.content,
                "preset {} drifted: run scripts/catalog-index.py",
                p.key
            );
            assert_eq!(c.format, p.format);
        }
    }

    #[tokio::test]
    async fn an_unreachable_http_source_fails_within_the_timeout() {
        // Port 9 on loopback: nothing listens (connection refused at once).
        let s = Source::http("down", "http://127.0.0.1:9").unwrap();
        let t0 = Instant::now();
        let e = s.index(&fetcher()).await.unwrap_err();
        assert!(e.contains("http://127.0.0.1:9/index.json"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }
}
