//! Boot session routes over the real recorder: a machine's iPXE script and a boot file it
//! did not get become one session with a verdict naming the file; filters, one session
//! with its steps, a host's sessions, the live stream, and bad filters answered 400.

use std::time::{Duration, Instant};

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};
use serde_json::{json, Value};

use super::test_support::{app, sse_events, T};
use bootlane_config::config::Config;

const MAC: &str = "52:54:00:5e:55:01";

/// Waits up to 5 s for the list at `path` to have a session passing `ok`.
async fn session(t: &T, path: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let (s, _, v) = t.call(Method::GET, path, None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if let Some(x) = v["data"].as_array().unwrap().iter().find(|x| ok(x)) {
            return x.clone();
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{path}: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_boot_is_recorded_judged_listed_and_streamed() {
    let mut t = app(Config::default()).await;
    t.host = Some("10.77.0.1:8080");
    t.login().await;
    let stream = t
        .send(
            Request::builder()
                .uri(format!("/api/v1/boot-sessions/stream?mac={MAC}"))
                .header(header::COOKIE, t.cookie.clone().unwrap())
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(stream.status(), StatusCode::OK);
    // Another machine's boot is not this stream's.
    let (s, _, _) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:5e:55:99", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = t.call(Method::GET, &format!("/boot/ipxe?mac={MAC}"), None).await;
    assert_eq!(s, StatusCode::OK);
    let live = sse_events(&mut stream.into_body(), 1).await;
    assert!(live.contains("event: session") && live.contains(MAC), "{live}");
    assert!(!live.contains("52:54:00:5e:55:99"), "{live}");
    let list = format!("/api/v1/boot-sessions?mac={}", MAC.to_uppercase());
    let first = session(&t, &list, |x| x["step_count"] == 1).await;
    // The default profile's default entry is the local disk.
    assert_eq!(
        (&first["state"], &first["verdict"]),
        (&json!("open"), &json!("booted_local_disk")),
        "{first}"
    );
    assert_eq!(first["reason"], "iPXE script's default entry is the local disk");
    assert_eq!(first["steps"], json!([]), "lists carry no steps");
    // The same client (by its address) asks for a kernel the boot root does not have.
    let (s, _, _) = t.call(Method::GET, "/boot/debian/linux", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let stalled = session(&t, "/api/v1/boot-sessions?verdict=stalled&state=open", |x| {
        x["mac"] == MAC
    })
    .await;
    assert_eq!(stalled["id"], first["id"]);
    assert_eq!(stalled["reason"], "asked for \"debian/linux\" over HTTP: not found");
    let one = t
        .expect(
            Method::GET,
            &format!("/api/v1/boot-sessions/{}", first["id"]),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let kinds: Vec<_> = one["data"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("ipxe"), json!("http")], "{one}");
    assert_eq!(one["data"]["steps"][1]["ok"], false);
    t.expect(
        Method::GET,
        "/api/v1/boot-sessions/999999",
        None,
        StatusCode::NOT_FOUND,
        "no boot session",
    )
    .await;
    for (q, needle) in [
        ("verdict=nope", "verdict"),
        ("state=closed", "state"),
        ("since=yesterday", "since must be an RFC 3339 time"),
        ("limit=0", "limit must be 1-500"),
        ("mac=zz", "mac must be a MAC address"),
    ] {
        if q.starts_with("mac") {
            t.expect(
                Method::GET,
                &format!("/api/v1/boot-sessions/stream?{q}"),
                None,
                StatusCode::BAD_REQUEST,
                needle,
            )
            .await;
        }
        t.expect(
            Method::GET,
            &format!("/api/v1/boot-sessions?{q}"),
            None,
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    let none = t
        .expect(
            Method::GET,
            "/api/v1/boot-sessions?state=ended",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(none["data"], json!([]));
    // A host's sessions, by its MAC.
    let h = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"mac": MAC, "name": "sess-1"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let id = h["data"]["id"].as_u64().unwrap();
    let mine = t
        .expect(
            Method::GET,
            &format!("/api/v1/hosts/{id}/boot-sessions"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(mine["data"][0]["id"], first["id"], "{mine}");
    t.expect(
        Method::GET,
        "/api/v1/hosts/987654/boot-sessions",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
    // Viewers read; nobody signed out does.
    t.cookie = None;
    t.expect(Method::GET, "/api/v1/boot-sessions", None, StatusCode::UNAUTHORIZED, "")
        .await;
}
