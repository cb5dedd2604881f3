//! Router tests of the update routes with the shared client of [`super::test_support`].
//! The update source is a real HTTP server on `127.0.0.1:0` (axum) serving a manifest
//! and artifacts signed in the test with a generated minisign key; the data directory
//! is temporary.

use std::{path::Path, time::Duration};

use axum::{
    http::{Method, StatusCode},
    routing::get,
    Router,
};
use serde_json::{json, Value};
use sha2::Digest;

use super::test_support::{setup_with, T};
use bootlane_updates::updates::manifest::{
    test_support::{keys, sign},
    Label,
};

/// What the test source serves: the manifest and the artifact body.
struct Source {
    manifest: Value,
    body: Vec<u8>,
}

/// Serves `src` on `127.0.0.1:0` (`/m.json`, `/a.bin`); answers the base URL.
async fn serve(src: Source) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let m = src.manifest.to_string();
    let app = Router::new()
        .route("/m.json", get(move || async move { m }))
        .route("/a.bin", get(move || async move { src.body }));
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    base
}

/// A manifest listing `1.0.0` and `99.0.0` (notes "big"), whose `99.0.0` artifact for this
/// platform announces `announced` (size, sha256, and the signature of its statement as
/// version `99.0.0`, file `a.bin`).
fn manifest(announced: &[u8], kp: &minisign::KeyPair) -> Value {
    manifest_signed_as("99.0.0", announced, kp)
}

/// [`manifest`] with the artifact signed as version `signed_as` instead.
fn manifest_signed_as(signed_as: &str, announced: &[u8], kp: &minisign::KeyPair) -> Value {
    let platform = bootlane_updates::updates::build_platform();
    let label = Label {
        version: signed_as,
        platform: &platform,
        file: "a.bin",
    };
    json!({"versions": [
        {"version": "1.0.0", "notes": "old"},
        {"version": "99.0.0", "released": "2026-11-20", "notes": "big", "artifacts": {&platform: {
            "url": "a.bin", "size": announced.len(), "sha256": hex::encode(sha2::Sha256::digest(announced)),
            "signature": sign(kp, label, announced)}}}
    ]})
}

/// A logged-in client whose `[updates]` points at `base` and trusts `pk`.
async fn client(base: Option<&str>, pk: &str, max_size: u64) -> T {
    let (url, pk) = (base.map(|b| format!("{b}/m.json")), pk.to_string());
    let mut t = setup_with(|c| {
        c.updates.manifest_url = url.unwrap_or_default();
        c.updates.public_key = pk;
        c.updates.timeout_secs = 5;
        c.updates.max_size = max_size;
        // The test source is on loopback.
        c.outbound.allow_loopback = true;
    })
    .await;
    t.login().await;
    t
}

/// Polls `GET /version/download` until the job is no longer running.
async fn finished(t: &T) -> Value {
    for _ in 0..200 {
        let v = t
            .expect(Method::GET, "/api/v1/version/download", None, StatusCode::OK, "")
            .await;
        if v["data"]["state"] != "running" {
            return v["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the download did not finish");
}

async fn kinds(t: &T) -> Vec<(String, Value)> {
    t.state.events.settle().await;
    t.state
        .events
        .after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.starts_with("update."))
        .map(|e| (e.kind.clone(), e.data.clone()))
        .collect()
}

/// Everything under `<data_dir>/updates/` (names), hidden temporary files included.
fn kept(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("updates"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn no_source_answers_so_and_download_is_refused() {
    let t = client(None, "", 1 << 20).await;
    let v = t
        .expect(Method::POST, "/api/v1/version/check", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["update_available"], false);
    assert_eq!(v["data"]["current"], env!("CARGO_PKG_VERSION"));
    assert!(
        v["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("no update source is configured"),
        "{v}"
    );
    assert!(v["data"]["source"].is_null() && v["data"]["newest"].is_null(), "{v}");
    t.expect(
        Method::POST,
        "/api/v1/version/download",
        None,
        StatusCode::BAD_REQUEST,
        "no update source is configured",
    )
    .await;
    let v = t
        .expect(Method::GET, "/api/v1/version/downloads", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"], json!([]));
}

#[tokio::test]
async fn failing_source_is_a_502_naming_url_and_reason() {
    let (pk, _) = keys();
    // A port nobody listens on: bound, then closed.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let t = client(Some(&dead), &pk, 1 << 20).await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/version/check",
            None,
            StatusCode::BAD_GATEWAY,
            &format!("{dead}/m.json"),
        )
        .await;
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("connect") && !e.contains("for url"), "{e}");
    t.expect(
        Method::POST,
        "/api/v1/version/download",
        None,
        StatusCode::BAD_GATEWAY,
        &dead,
    )
    .await;
    // A source that answers, but not a manifest: the reason is named.
    let base = serve(Source {
        manifest: json!({"versions": [{"version": "one"}]}),
        body: vec![],
    })
    .await;
    let t = client(Some(&base), &pk, 1 << 20).await;
    t.expect(
        Method::POST,
        "/api/v1/version/check",
        None,
        StatusCode::BAD_GATEWAY,
        "not a semantic version",
    )
    .await;
}

/// The `[outbound]` rules cover the manifest and the artifact: a source on loopback is
/// refused by default (502 naming the URL and the setting, the source never asked), and
/// with loopback allowed, an artifact listed on a link-local address is still refused.
#[tokio::test]
async fn outbound_rules_cover_the_manifest_and_the_artifact() {
    let (pk, kp) = keys();
    let body = b"new bootlane".to_vec();
    let base = serve(Source {
        manifest: manifest(&body, &kp),
        body: body.clone(),
    })
    .await;
    let mut t = setup_with(|c| {
        c.updates.manifest_url = format!("{base}/m.json");
        c.updates.public_key = pk.clone();
        c.updates.timeout_secs = 5;
    })
    .await;
    t.login().await;
    let refusal = format!(
        "refusing to fetch {base}/m.json: 127.0.0.1 is a loopback address; set [outbound] allow_loopback = true to allow"
    );
    for route in ["/api/v1/version/check", "/api/v1/version/download"] {
        t.expect(Method::POST, route, None, StatusCode::BAD_GATEWAY, &refusal)
            .await;
    }

    let mut m = manifest(&body, &kp);
    m["versions"][1]["artifacts"][bootlane_updates::updates::build_platform()]["url"] =
        "http://169.254.7.7/a.bin".into();
    let base = serve(Source { manifest: m, body }).await;
    let t = client(Some(&base), &pk, 1 << 20).await;
    t.expect(Method::POST, "/api/v1/version/download", None, StatusCode::ACCEPTED, "")
        .await;
    let job = finished(&t).await;
    assert_eq!(job["state"], "failed", "{job}");
    let e = job["error"].as_str().unwrap();
    assert!(
        e.contains("refusing to fetch http://169.254.7.7/a.bin") && e.contains("allow_link_local = true"),
        "{e}"
    );
    assert!(kept(&t.state.config.data_dir).is_empty(), "nothing kept");
}

#[tokio::test]
async fn check_answers_newer_and_download_stores_verified_artifact() {
    let (pk, kp) = keys();
    let body: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let base = serve(Source {
        manifest: manifest(&body, &kp),
        body: body.clone(),
    })
    .await;
    let t = client(Some(&base), &pk, 1 << 20).await;
    let v = t
        .expect(Method::POST, "/api/v1/version/check", None, StatusCode::OK, "")
        .await;
    let d = &v["data"];
    assert_eq!(
        (d["update_available"].as_bool(), d["newest"].as_str()),
        (Some(true), Some("99.0.0")),
        "{v}"
    );
    assert_eq!(d["notes"], "big");
    assert_eq!(d["released"], "2026-11-20");
    assert_eq!(d["artifact"]["url"], format!("{base}/a.bin"));
    assert_eq!(d["artifact"]["size"], body.len());
    assert_eq!(d["artifact"]["sha256"], hex::encode(sha2::Sha256::digest(&body)));

    // Bad input first.
    t.expect(
        Method::POST,
        "/api/v1/version/download",
        Some(json!({"version": "1.x"})),
        StatusCode::BAD_REQUEST,
        "'version'",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/version/download",
        Some(json!({"version": "5.0.0"})),
        StatusCode::NOT_FOUND,
        "it lists: 99.0.0, 1.0.0",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/version/download",
        Some(json!({"version": "1.0.0"})),
        StatusCode::NOT_FOUND,
        "no artifact for platform",
    )
    .await;

    let v = t
        .expect(
            Method::POST,
            "/api/v1/version/download",
            Some(json!({})),
            StatusCode::ACCEPTED,
            "",
        )
        .await;
    assert_eq!(v["data"]["version"], "99.0.0");
    let job = finished(&t).await;
    assert_eq!(job["state"], "completed", "{job}");
    let dir = t.state.config.data_dir.join("updates");
    assert_eq!(std::fs::read(dir.join("99.0.0/bootlane")).unwrap(), body);
    let m: Value = serde_json::from_slice(&std::fs::read(dir.join("99.0.0/manifest.json")).unwrap()).unwrap();
    assert_eq!(m["version"], "99.0.0");
    assert_eq!(m["size"], body.len());
    assert_eq!(m["sha256"], d["artifact"]["sha256"]);
    assert_eq!(m["source"], format!("{base}/m.json"));
    assert!(m["signature"].as_str().unwrap().contains("trusted comment"), "{m}");
    assert!(m["downloaded_at"].is_string());
    assert_eq!(
        kept(&t.state.config.data_dir),
        vec!["99.0.0".to_string()],
        "no temporary file left"
    );
    let ev = kinds(&t).await;
    assert_eq!(ev.first().map(|e| e.0.as_str()), Some("update.download.started"));
    assert_eq!(ev.last().map(|e| e.0.as_str()), Some("update.download.completed"));
    let pcts: Vec<u64> = ev
        .iter()
        .filter(|e| e.0 == "update.download.progress")
        .map(|e| e.1["percent"].as_u64().unwrap())
        .collect();
    assert!(!pcts.is_empty() && pcts.windows(2).all(|w| w[0] < w[1]), "{pcts:?}");
    let v = t
        .expect(Method::GET, "/api/v1/version/downloads", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"][0]["version"], "99.0.0");
    // Asked again: already stored, nothing fetched.
    let v = t
        .expect(Method::POST, "/api/v1/version/download", None, StatusCode::ACCEPTED, "")
        .await;
    assert_eq!(v["data"]["state"], "completed", "{v}");
}

/// Serves `body` announced as `announced`, downloads, and answers the failed job's error
/// after checking that nothing was kept and a failure event names the reason.
async fn refused(announced: &[u8], body: Vec<u8>, kp: &minisign::KeyPair, pk: &str, max: u64) -> String {
    let base = serve(Source {
        manifest: manifest(announced, kp),
        body,
    })
    .await;
    let t = client(Some(&base), pk, max).await;
    t.expect(Method::POST, "/api/v1/version/download", None, StatusCode::ACCEPTED, "")
        .await;
    let job = finished(&t).await;
    assert_eq!(job["state"], "failed", "{job}");
    let err = job["error"].as_str().unwrap().to_string();
    assert_eq!(
        kept(&t.state.config.data_dir),
        Vec::<String>::new(),
        "nothing kept after: {err}"
    );
    let ev = kinds(&t).await;
    let last = ev.last().unwrap();
    assert_eq!(last.0, "update.download.failed");
    assert_eq!(last.1["reason"], err.as_str());
    let v = t
        .expect(Method::GET, "/api/v1/version/downloads", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"], json!([]));
    err
}

#[tokio::test]
async fn wrong_sha256_signature_size_or_cut_off_keeps_nothing() {
    let (pk, kp) = keys();
    let good: Vec<u8> = (0..50_000u32).map(|i| (i % 253) as u8).collect();
    // Tampered in transit: same size, other bytes.
    let mut bad = good.clone();
    bad[1234] ^= 0xff;
    let e = refused(&good, bad, &kp, &pk, 1 << 20).await;
    assert!(e.contains("sha256 mismatch"), "{e}");
    // The manifest's hash matches the bytes, but the signature is another key's.
    let (_, other) = keys();
    let e = refused(&good, good.clone(), &other, &pk, 1 << 20).await;
    assert!(e.contains("signature") && e.contains("another key"), "{e}");
    // Signed, by the right key, for another version (an old build relabelled as 99.0.0).
    let base = serve(Source {
        manifest: manifest_signed_as("98.0.0", &good, &kp),
        body: good.clone(),
    })
    .await;
    let t = client(Some(&base), &pk, 1 << 20).await;
    t.expect(Method::POST, "/api/v1/version/download", None, StatusCode::ACCEPTED, "")
        .await;
    let job = finished(&t).await;
    let e = job["error"].as_str().unwrap();
    assert!(e.contains("signature check failed") && e.contains("statement"), "{job}");
    assert!(kept(&t.state.config.data_dir).is_empty());
    // Larger than [updates] max_size.
    let e = refused(&good, good.clone(), &kp, &pk, 10_000).await;
    assert!(e.contains("too large") && e.contains("max_size"), "{e}");
    // The server sends more than announced.
    let mut long = good.clone();
    long.extend_from_slice(b"extra");
    let e = refused(&good, long, &kp, &pk, 1 << 20).await;
    assert!(e.contains("too large"), "{e}");
    // Cut off: fewer bytes than announced.
    let e = refused(&good, good[..20_000].to_vec(), &kp, &pk, 1 << 20).await;
    assert!(e.contains("cut off"), "{e}");
}
