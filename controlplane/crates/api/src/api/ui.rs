//! The web UI: serves the single-page app built from `web/` (Vite, output in
//! `web/dist`) at `/`, embedded into the binary with `rust-embed`.
//!
//! - Files are looked up by path; any other path without a file extension is a
//!   client-side route and gets `index.html`, so deep links and reloads work.
//! - Hashed assets (`/assets/*`, their names carry a content hash) are sent with
//!   `Cache-Control: public, max-age=31536000, immutable`; everything else (chiefly
//!   `index.html`) with `no-cache` and an `ETag`, so a new build is picked up at once.
//! - The build writes `.br` and `.gz` twins next to each text file; they are sent with
//!   `Content-Encoding` when the client's `Accept-Encoding` allows, so the server does no
//!   compression work at run time.
//! - `cargo build` never runs npm. Without `web/dist` the binary still builds
//!   (`allow_missing`) and every UI path answers a small page saying how to build the UI
//!   ([`NOT_BUILT`]).
//! - Every answer carries the UI's Content Security Policy ([`CSP`]),
//!   `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY` and
//!   `Referrer-Policy: same-origin`.
//! - `/api/...` paths never fall back to the UI: they keep the JSON 404 envelope, and so do
//!   methods other than GET/HEAD.

use std::{borrow::Cow, sync::Arc};

use axum::{
    extract::Request,
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Response},
    Router,
};

/// The built UI, embedded at compile time from `web/dist` (empty when it was not built).
#[derive(rust_embed::Embed)]
#[folder = "../../../web/dist"]
#[allow_missing = true]
struct Dist;

/// One file of the UI: its bytes and its content hash (hex, used as the `ETag`).
#[derive(Clone)]
pub struct Asset {
    /// File contents.
    pub bytes: Cow<'static, [u8]>,
    /// Content hash (hex), quoted into the `ETag`.
    pub hash: String,
}

/// Looks a UI file up by its path relative to `web/dist` (`index.html`,
/// `assets/index-abc123.js`, `assets/index-abc123.js.br`).
pub type Lookup = Arc<dyn Fn(&str) -> Option<Asset> + Send + Sync>;

/// Served at every UI path when the binary was built without `web/dist`.
pub const NOT_BUILT: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Bootlane</title></head>\n<body style=\"font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5\">\n<h1>Bootlane: the web UI was not built</h1>\n<p>This binary was built without the web UI (there was no <code>web/dist</code> when it was compiled). The REST API under <a href=\"/api/v1/openapi.json\"><code>/api/v1</code></a> works as usual.</p>\n<p>To include the UI, build it and then the binary again:</p>\n<pre>cargo xtask ui        # or: cd web &amp;&amp; npm ci &amp;&amp; npm run build\ncargo build -p bootlane</pre>\n</body></html>\n";

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The UI over the embedded build, as the application router's fallback: it answers
/// every path no route matched, so `/api/v1/...`, `/boot/...` and every later route take
/// precedence without knowing about it, and UI paths stay out of the per-route metrics
/// (they count as `unmatched`).
pub async fn fallback(req: Request) -> Response {
    static EMBEDDED: std::sync::OnceLock<Lookup> = std::sync::OnceLock::new();
    let lookup = EMBEDDED.get_or_init(|| {
        Arc::new(|path: &str| {
            Dist::get(path).map(|f| Asset {
                hash: hex::encode(f.metadata.sha256_hash()),
                bytes: f.data,
            })
        })
    });
    serve(lookup.clone(), req).await
}

/// A router that is only the UI fallback, over any file source (tests pass an in-memory
/// one).
pub fn router_with<S: Clone + Send + Sync + 'static>(lookup: Lookup) -> Router<S> {
    Router::new().fallback(move |req: Request| serve(lookup.clone(), req))
}

/// The UI's own Content Security Policy: scripts, styles, images and connections only
/// from the UI's origin (styles may also be inline: the charts set `style` attributes),
/// `data:` images (the empty favicon), no plugins, no framing, forms and `<base>` only to
/// the same origin.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

async fn serve(lookup: Lookup, req: Request) -> Response {
    let mut resp = serve_inner(lookup, req).await;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    resp
}

async fn serve_inner(lookup: Lookup, req: Request) -> Response {
    let path = req.uri().path().trim_start_matches('/').to_owned();
    if (req.method() != Method::GET && req.method() != Method::HEAD) || path == "api" || path.starts_with("api/") {
        return super::fallback(req).await.into_response();
    }
    if !path.is_empty() {
        if let Some(r) = file_response(&lookup, &path, req.headers()) {
            return r;
        }
    }
    // A path whose last segment has an extension names a file that is not there (an old
    // hashed asset, a typo): a 404, not index.html served as JavaScript.
    if path.rsplit('/').next().unwrap_or_default().contains('.') {
        return (
            StatusCode::NOT_FOUND,
            [(header::CACHE_CONTROL, "no-cache")],
            "not found\n",
        )
            .into_response();
    }
    file_response(&lookup, "index.html", req.headers()).unwrap_or_else(not_built)
}

fn not_built() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        NOT_BUILT,
    )
        .into_response()
}

/// The precompressed twins the client accepts, best first.
fn encodings(headers: &HeaderMap) -> Vec<(&'static str, &'static str)> {
    let accept = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let allows = |name: &str| {
        accept.split(',').any(|part| {
            let mut it = part.split(';');
            let coding = it.next().unwrap_or_default().trim();
            let q_zero = it.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            coding.eq_ignore_ascii_case(name) && !q_zero
        })
    };
    [("br", ".br"), ("gzip", ".gz")]
        .into_iter()
        .filter(|(name, _)| allows(name))
        .collect()
}

fn file_response(lookup: &Lookup, file: &str, headers: &HeaderMap) -> Option<Response> {
    let plain = lookup(file)?;
    let mime = mime_guess_for(file);
    let cache = if file.starts_with("assets/") {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let etag = format!("\"{}\"", plain.hash);
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
    {
        return Some(
            (
                StatusCode::NOT_MODIFIED,
                [(header::CACHE_CONTROL, cache), (header::ETAG, etag.as_str())],
            )
                .into_response(),
        );
    }
    let (bytes, encoding) = encodings(headers)
        .into_iter()
        .find_map(|(name, ext)| lookup(&format!("{file}{ext}")).map(|a| (a.bytes, Some(name))))
        .unwrap_or((plain.bytes, None));
    let mut resp = bytes.into_owned().into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&mime).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Some(enc) = encoding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(enc));
    }
    Some(resp)
}

/// Content type by extension, for the kinds of files a Vite build emits.
fn mime_guess_for(file: &str) -> String {
    let ext = file
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use axum::body::Body;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;

    const INDEX: &str = "<!doctype html><div id=app></div><script src=/assets/index-abc123.js></script>";
    const JS: &str = "console.log('ui')";

    fn fake(files: &[(&str, &[u8])]) -> Router {
        let map: HashMap<String, Vec<u8>> = files.iter().map(|(k, v)| ((*k).to_owned(), v.to_vec())).collect();
        router_with(Arc::new(move |p: &str| {
            map.get(p).map(|b| Asset {
                bytes: Cow::Owned(b.clone()),
                hash: format!("h{}", b.len()),
            })
        }))
    }

    fn built() -> Router {
        fake(&[
            ("index.html", INDEX.as_bytes()),
            ("assets/index-abc123.js", JS.as_bytes()),
            ("assets/index-abc123.js.br", b"BROTLI"),
            ("assets/index-abc123.js.gz", b"GZIP"),
        ])
    }

    async fn get(app: Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, String) {
        let mut req = Request::builder().uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let (parts, body) = resp.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    #[tokio::test]
    async fn index_is_served_at_the_root_with_no_cache() {
        let (status, h, body) = get(built(), "/", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, INDEX);
        assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(h[header::CACHE_CONTROL], "no-cache");
        assert_eq!(h[header::ETAG], format!("\"h{}\"", INDEX.len()));
    }

    #[tokio::test]
    async fn a_deep_link_falls_back_to_index() {
        for path in ["/services/dns", "/dns", "/hosts/12", "/login?next=%2Fdns"] {
            let (status, h, body) = get(built(), path, &[]).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(body, INDEX, "{path}");
            assert_eq!(h[header::CACHE_CONTROL], "no-cache", "{path}");
        }
    }

    #[tokio::test]
    async fn hashed_assets_are_immutable_and_precompressed_when_accepted() {
        let (status, h, body) = get(built(), "/assets/index-abc123.js", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, JS);
        assert_eq!(h[header::CACHE_CONTROL], "public, max-age=31536000, immutable");
        assert_eq!(h[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert!(h.get(header::CONTENT_ENCODING).is_none());

        let (_, h, body) = get(
            built(),
            "/assets/index-abc123.js",
            &[("accept-encoding", "gzip, deflate, br")],
        )
        .await;
        assert_eq!(
            (h[header::CONTENT_ENCODING].to_str().unwrap(), body.as_str()),
            ("br", "BROTLI")
        );
        assert_eq!(h[header::VARY], "accept-encoding");
        let (_, h, body) = get(
            built(),
            "/assets/index-abc123.js",
            &[("accept-encoding", "gzip, br;q=0")],
        )
        .await;
        assert_eq!(
            (h[header::CONTENT_ENCODING].to_str().unwrap(), body.as_str()),
            ("gzip", "GZIP")
        );
    }

    #[tokio::test]
    async fn a_missing_asset_is_a_404_not_index() {
        let (status, _, body) = get(built(), "/assets/index-old999.js", &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_ne!(body, INDEX);
    }

    #[tokio::test]
    async fn a_matching_etag_is_304() {
        let etag = format!("\"h{}\"", INDEX.len());
        let (status, _, body) = get(built(), "/", &[("if-none-match", &etag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
    }

    #[tokio::test]
    async fn without_a_build_every_ui_path_says_how_to_build_it() {
        for path in ["/", "/services/dns"] {
            let (status, h, body) = get(fake(&[]), path, &[]).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
            assert!(body.contains("web UI was not built"), "{body}");
            assert!(body.contains("cargo xtask ui") && body.contains("npm ci"), "{body}");
        }
    }

    #[tokio::test]
    async fn api_paths_and_other_methods_keep_the_json_404() {
        let (status, _, body) = get(built(), "/api/v2/things", &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["success"], false);
        let resp = built()
            .oneshot(Request::post("/dns").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    }

    /// Through the whole application router: unknown `/api/v1` paths stay the JSON 404 of
    /// the API, known ones are untouched, and `/` is the UI (built or the not-built page).
    #[tokio::test]
    async fn merged_into_the_app_the_api_keeps_its_404_and_the_root_is_html() {
        let (state, _) = crate::api::test_support::state(bootlane_config::config::Config::default()).await;
        let app = crate::api::router(state);
        let (status, _, body) = get(app.clone(), "/api/v1/unknown", &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["success"], false);
        assert!(v["error"].as_str().unwrap().contains("no endpoint GET"), "{v}");
        let (status, _, body) = get(app.clone(), "/api/v1/status", &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, h, _) = get(app, "/dhcp/leases", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
    }
}
