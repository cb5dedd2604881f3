//! Router tests of the log endpoints (`/logs/*`, `/settings/logging`): real files in a
//! temporary log directory, log lines emitted through the test control's own subscriber
//! (never a global one), the SSE stream read frame by frame.

use std::fs;

use axum::http::{header, Method, StatusCode};
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::test_support::{self, is_error, sse_events, T};
use bootlane_config::config::Config;

/// A logged-in client; its log directory is `<temporary data dir>/logs`.
async fn setup() -> T {
    let mut t = test_support::app(Config::default()).await;
    t.login().await;
    t
}

/// Log helpers on the shared client.
impl T {
    /// Emits log lines through the control's subscriber.
    fn emit(&self, f: impl FnOnce()) {
        tracing::dispatcher::with_default(self.state.logs.dispatch().unwrap(), f);
    }

    /// Writes a file into the log directory, last modified `age_days` ago.
    fn file(&self, name: &str, bytes: usize, age_days: i64) {
        let p = self.state.logs.dir().join(name);
        fs::write(&p, vec![b'x'; bytes]).unwrap();
        let f = fs::File::options().write(true).open(&p).unwrap();
        f.set_modified((OffsetDateTime::now_utc() - time::Duration::days(age_days)).into())
            .unwrap();
    }

    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.state.logs.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }
}

#[tokio::test]
async fn log_routes_need_a_session() {
    let mut t = setup().await;
    t.cookie = None;
    for (m, p) in [
        (Method::GET, "/api/v1/logs/files"),
        (Method::GET, "/api/v1/logs/disk-usage"),
        (Method::POST, "/api/v1/logs/cleanup"),
        (Method::GET, "/api/v1/logs/stream"),
        (Method::GET, "/api/v1/settings/logging"),
        (Method::PUT, "/api/v1/settings/logging"),
    ] {
        let (s, _, v) = t.call(m, p, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{p}: {v}");
    }
    // Every route is in the OpenAPI document; the stream as text/event-stream.
    let (_, _, doc) = t.call(Method::GET, "/api/v1/openapi.json", None).await;
    for p in ["files", "disk-usage", "cleanup", "stream"] {
        assert!(doc["paths"][format!("/api/v1/logs/{p}")].is_object(), "{p}");
    }
    assert!(doc["paths"]["/api/v1/settings/logging"]["put"].is_object());
    assert!(doc["paths"]["/api/v1/logs/stream"]["get"]["responses"]["200"]["content"]["text/event-stream"].is_object());
}

#[tokio::test]
async fn files_and_disk_usage() {
    let t = setup().await;
    t.emit(|| tracing::info!("first line"));
    let current = t.state.logs.current_file().unwrap();
    t.file("bootlane.2020-01-01.log", 1000, 10);
    t.file("notes.txt", 50, 1);
    let (s, _, v) = t.call(Method::GET, "/api/v1/logs/files", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let files = v["data"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{v}");
    assert_eq!(
        (&files[0]["name"], &files[0]["current"]),
        (&json!(current), &json!(true))
    );
    assert_eq!(
        (&files[1]["name"], &files[1]["size_bytes"], &files[1]["current"]),
        (&json!("bootlane.2020-01-01.log"), &json!(1000), &json!(false))
    );
    let modified = files[1]["modified"].as_str().unwrap();
    assert!(OffsetDateTime::parse(modified, &time::format_description::well_known::Rfc3339).is_ok());

    let (s, _, v) = t.call(Method::GET, "/api/v1/logs/disk-usage", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let d = &v["data"];
    let cur_size = d["files"][0]["size_bytes"].as_u64().unwrap();
    assert!(cur_size > 0);
    assert_eq!(d["total_bytes"].as_u64().unwrap(), cur_size + 1000);
    assert!(d["volume_total_bytes"].as_u64().unwrap() >= d["volume_free_bytes"].as_u64().unwrap());
    assert!(d["volume_total_bytes"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn cleanup_rules_and_bad_requests() {
    let t = setup().await;
    t.emit(|| tracing::info!("make the current file"));
    let current = t.state.logs.current_file().unwrap();
    t.file("bootlane.2020-01-01.log", 300, 20);
    t.file("bootlane.2020-01-11.log", 200, 10);
    t.file("bootlane.2020-01-11.1.log", 100, 9);
    t.file("unrelated.log", 10, 100);
    for (body, needle) in [
        (json!({}), "older_than_days, keep_latest"),
        (json!({"keep_latest": -1}), "keep_latest"),
        (json!({"older_than_days": "x"}), "older_than_days"),
        (json!({"keep": 1}), "unknown field `keep`"),
    ] {
        let (s, _, v) = t.call(Method::POST, "/api/v1/logs/cleanup", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert!(is_error(&v, needle), "{body}: {v}");
    }
    // Older than 15 days: only the 20-day-old file.
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/logs/cleanup",
            Some(json!({"older_than_days": 15})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["removed"][0]["name"], "bootlane.2020-01-01.log");
    assert_eq!(v["data"]["freed_bytes"], 300);
    // Keep the latest 2 (the current file and the 9-day-old one).
    let (_, _, v) = t
        .call(Method::POST, "/api/v1/logs/cleanup", Some(json!({"keep_latest": 2})))
        .await;
    assert_eq!(v["data"]["removed"][0]["name"], "bootlane.2020-01-11.log", "{v}");
    // Keep none, any age: everything but the current file and foreign files.
    let (_, _, v) = t
        .call(
            Method::POST,
            "/api/v1/logs/cleanup",
            Some(json!({"keep_latest": 0, "older_than_days": 0})),
        )
        .await;
    assert_eq!(v["data"]["removed"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(t.names(), [current.as_str(), "unrelated.log"]);
}

#[tokio::test]
async fn logging_settings_get_put_and_errors() {
    let t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/settings/logging", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["level"], &v["data"]["rotation"], &v["data"]["keep_files"]),
        (&json!("info"), &json!("daily"), &json!(14))
    );
    // The GET answer can be PUT back unchanged.
    let (s, _, v2) = t
        .call(Method::PUT, "/api/v1/settings/logging", Some(v["data"].clone()))
        .await;
    assert_eq!(s, StatusCode::OK, "{v2}");

    let mut rx = t.state.logs.subscribe();
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/settings/logging",
            Some(json!({"level": "debug", "rotation": "hourly"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["applied"], "live");
    assert_eq!(
        (&v["data"]["settings"]["level"], &v["data"]["settings"]["rotation"]),
        (&json!("debug"), &json!("hourly"))
    );
    while rx.try_recv().is_ok() {}
    t.emit(|| tracing::debug!("debug is on"));
    assert_eq!(rx.try_recv().unwrap().message, "debug is on");
    let (_, _, v) = t.call(Method::GET, "/api/v1/settings/logging", None).await;
    assert_eq!(v["data"]["level"], "debug");

    for (body, needle) in [
        (json!({"level": "bootlane=[oops"}), "level"),
        (json!({"max_file_bytes": 1}), "max_file_bytes"),
        (json!({"keep_files": 0}), "keep_files"),
        (json!({"retention_days": 100000}), "retention_days"),
        (json!({"rotation": "weekly"}), "rotation"),
        (json!({"verbose": true}), "unknown field `verbose`"),
        (json!({"dir": "/tmp/elsewhere"}), "dir"),
    ] {
        let (s, _, v) = t
            .call(Method::PUT, "/api/v1/settings/logging", Some(body.clone()))
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert!(is_error(&v, needle), "{body}: {v}");
    }
    let (_, _, v) = t.call(Method::GET, "/api/v1/settings/logging", None).await;
    assert_eq!(
        (&v["data"]["level"], &v["data"]["keep_files"]),
        (&json!("debug"), &json!(14))
    );
}

/// Reads SSE frames until one whole event (ending in a blank line) arrived.

#[tokio::test]
async fn stream_sends_filtered_log_lines_as_sse() {
    let t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/logs/stream?level=loud", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(is_error(&v, "level"), "{v}");

    let req = t.request(
        Method::GET,
        "/api/v1/logs/stream?level=warn&target=bootlane::dhcp",
        None,
    );
    let resp = t.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = resp.into_body();
    t.emit(|| {
        tracing::info!(target: "bootlane::dhcp::server", "below the minimum level");
        tracing::warn!(target: "bootlane::tftp", "another target");
        tracing::warn!(target: "bootlane::dhcp::server", mac = "52:54:00:00:00:01", "no free address");
    });
    let ev = sse_events(&mut body, 1).await;
    assert!(ev.starts_with("event: log\n"), "{ev}");
    let data = ev.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let line: Value = serde_json::from_str(data).unwrap();
    assert_eq!(
        (
            &line["level"],
            &line["target"],
            &line["message"],
            &line["fields"]["mac"]
        ),
        (
            &json!("warn"),
            &json!("bootlane::dhcp::server"),
            &json!("no free address"),
            &json!("52:54:00:00:00:01")
        )
    );
}

#[tokio::test]
async fn a_lagging_stream_gets_a_lagged_event() {
    let t = setup().await;
    let req = t.request(Method::GET, "/api/v1/logs/stream", None);
    let mut body = t.send(req).await.into_body();
    t.emit(|| {
        for i in 0..bootlane_core::logging::stream::STREAM_CAPACITY + 5 {
            tracing::info!(i, "flood");
        }
    });
    let ev = sse_events(&mut body, 1).await;
    assert!(ev.starts_with("event: lagged\n"), "{ev}");
    assert!(ev.contains(r#"data: {"skipped":5}"#), "{ev}");
    let ev = sse_events(&mut body, 1).await;
    assert!(
        ev.contains(r#""i":5"#),
        "the stream goes on with the oldest line kept: {ev}"
    );
}
