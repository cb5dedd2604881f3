//! API tests through the router (house style level b): no sockets, no root; a temporary
//! store and a fake data plane that records the last projection.

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};
use serde_json::{json, Value};

use super::test_support::{is_error_envelope, setup, setup_with, sse_events, ADMIN_PASSWORD};

#[tokio::test]
async fn protected_routes_need_a_session() {
    let mut t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(is_error_envelope(&v));
    let (s, _, v) = t.call(Method::GET, "/api/v1/status", None).await;
    assert_eq!((s, &v["success"]), (StatusCode::OK, &json!(true)));
    let (_, _, v) = t.call(Method::GET, "/api/v1/auth/session", None).await;
    assert_eq!(v["data"]["authenticated"], false);
    t.login().await;
    let (_, _, v) = t.call(Method::GET, "/api/v1/auth/session", None).await;
    assert_eq!(
        (&v["data"]["authenticated"], &v["data"]["username"]),
        (&json!(true), &json!("admin"))
    );
    let (s, _, _) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, _) = t.call(Method::POST, "/api/v1/auth/logout", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
}

/// Every event carries the node that published it (`[server] node_name`);
/// `GET /events?node=` keeps one node's, `/status` names the node, and a node name that
/// is not a host name is refused at start.
#[tokio::test]
async fn events_carry_the_node_name() {
    let mut t = setup_with(|c| c.server.node_name = Some("rack-a1".into())).await;
    let (_, _, v) = t.call(Method::GET, "/api/v1/status", None).await;
    assert_eq!(v["data"]["node"], "rack-a1", "{v}");
    t.login().await;
    let (s, _, v) = t
        .call(Method::GET, "/api/v1/events?kind=auth.login&node=rack-a1", None)
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["data"]["total"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["data"]["events"][0]["node"], "rack-a1", "{v}");
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?node=rack-b2", None).await;
    assert_eq!(v["data"]["total"], 0, "{v}");
    let mut c = bootlane_config::config::Config::default();
    c.server.node_name = Some("rack a1".into());
    let e = c
        .problems()
        .into_iter()
        .map(|e| format!("{e:#}"))
        .collect::<Vec<_>>()
        .join("; ");
    assert!(e.contains("[server] node_name"), "{e}");
}

#[tokio::test]
async fn failed_logins_are_throttled() {
    let t = setup().await;
    for _ in 0..5 {
        let (s, _, v) = t
            .call(
                Method::POST,
                "/api/v1/auth/login",
                Some(json!({"username": "admin", "password": "nope"})),
            )
            .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        assert!(is_error_envelope(&v));
    }
    let (s, h, v) = t
        .call(
            Method::POST,
            "/api/v1/auth/login",
            Some(json!({"username": "admin", "password": ADMIN_PASSWORD})),
        )
        .await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS);
    assert!(h.get(header::RETRY_AFTER).is_some() && is_error_envelope(&v));
}

#[tokio::test]
async fn record_crud_validation_and_projection() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "Host1", "type": "A", "value": "10.0.0.11"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["data"]["id"].as_u64().unwrap();
    assert_eq!(
        (&v["data"]["fqdn"], &v["data"]["ttl"], &v["data"]["auto"]),
        (&json!("host1.lab.test."), &json!(300), &json!(false))
    );
    // The projection reached the data plane before the API answered.
    let has = t.fake.last.lock().unwrap().entries.iter().any(|(k, a)| {
        k.qname[..k.qname_len as usize] == *b"\x05host1\x03lab\x04test\x00" && a.addrs[0][..4] == [10, 0, 0, 11]
    });
    assert!(has);
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "host1", "type": "A", "value": "10.0.0.11"})),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(is_error_envelope(&v));
    for (body, needle) in [
        (json!({"name": "h", "type": "A", "value": "fd00::1"}), "IPv4"),
        (json!({"name": "h", "type": "AAAA", "value": "10.0.0.1"}), "IPv6"),
        (
            json!({"name": "h", "type": "SRV", "value": "x"}),
            "A, AAAA, CNAME, TXT, MX",
        ),
        (json!({"name": "a..b", "type": "A", "value": "10.0.0.1"}), "empty label"),
        (
            json!({"name": "host1", "type": "CNAME", "value": "other"}),
            "CNAME cannot coexist",
        ),
        (json!({"type": "A", "value": "10.0.0.1"}), "'name' is required"),
        (
            json!({"name": "h", "type": "A", "value": "10.0.0.1", "subnet": "nope"}),
            "subnet",
        ),
        (
            json!({"name": "h", "type": "A", "value": "10.0.0.1", "bogus": 1}),
            "unknown field",
        ),
    ] {
        let (s, _, v) = t.call(Method::POST, "/api/v1/dns/records", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{body} -> {v}");
    }
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "@", "type": "MX", "value": "20 mail.example.com"})),
        )
        .await;
    assert_eq!((s, &v["data"]["priority"]), (StatusCode::CREATED, &json!(20)));
    let (s, _, v) = t
        .call(
            Method::PUT,
            &format!("/api/v1/dns/records/{id}"),
            Some(json!({"value": "10.0.0.12", "ttl": 60})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["value"], &v["data"]["ttl"], &v["data"]["name"]),
        (&json!("10.0.0.12"), &json!(60), &json!("host1"))
    );
    let (_, _, v) = t
        .call(Method::GET, "/api/v1/dns/records?type=A&q=host&size=1&page=1", None)
        .await;
    assert_eq!(
        (
            v["data"]["total"].as_u64(),
            v["data"]["records"].as_array().unwrap().len()
        ),
        (Some(1), 1)
    );
    assert_eq!(v["data"]["local_domain"], "lab.test");
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records?type=SRV", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v));
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records/abc", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v));
    let (s, _, _) = t.call(Method::DELETE, &format!("/api/v1/dns/records/{id}"), None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _, v) = t.call(Method::GET, &format!("/api/v1/dns/records/{id}"), None).await;
    assert!(s == StatusCode::NOT_FOUND && is_error_envelope(&v));
    // Auto-records are listed and protected.
    let (_, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    let auto: Vec<&Value> = v["data"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["auto"] == true)
        .collect();
    assert!(
        auto.iter().any(|r| r["name"] == "@") && auto.iter().any(|r| r["name"] == "bootlane"),
        "{v}"
    );
    let (s, _, _) = t
        .call(Method::DELETE, &format!("/api/v1/dns/records/{}", auto[0]["id"]), None)
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, _, v) = t
        .call(Method::GET, "/api/v1/audit-logs?resource=dns_record", None)
        .await;
    assert!(v["data"]["entries"].as_array().unwrap().len() >= 3);
}

#[tokio::test]
async fn settings_validate_and_apply_live() {
    let mut t = setup().await;
    t.login().await;
    for (body, needle) in [
        (json!({"port": 0}), "port"),
        (json!({"port": 70000}), "port"),
        (json!({"upstream": "1.1.1.1, bad_host!"}), "bad_host!"),
        (json!({"upstream": "no-such-host.invalid"}), "does not resolve"),
        (json!({"local_domain": "bad domain"}), "local_domain"),
        (json!({"listen": ["nope"]}), "nope"),
    ] {
        let (s, _, v) = t.call(Method::PUT, "/api/v1/services/dns", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} -> {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{body} -> {v}");
    }
    t.call(
        Method::POST,
        "/api/v1/dns/records",
        Some(json!({"name": "host1", "type": "A", "value": "10.0.0.11"})),
    )
    .await;
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/services/dns",
            Some(json!({"local_domain": "Other.Lab", "upstream": "127.0.0.1:5300 [::1]"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["local_domain"], &v["data"]["upstream"]),
        (&json!("other.lab"), &json!("127.0.0.1:5300 [::1]"))
    );
    let (_, _, v) = t.call(Method::GET, "/api/v1/dns/records?name=host1", None).await;
    assert_eq!(v["data"]["records"][0]["fqdn"], "host1.other.lab.");
    let (_, _, v) = t.call(Method::GET, "/api/v1/services/dns", None).await;
    assert_eq!(
        (&v["data"]["enabled"], &v["data"]["running"]),
        (&json!(false), &json!(false))
    );
    assert!(v["data"]["xdp"].is_object());
}

#[tokio::test]
async fn every_failure_uses_the_envelope() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/no/such/thing", None).await;
    assert!(s == StatusCode::NOT_FOUND && is_error_envelope(&v));
    let (s, _, v) = t.call(Method::PATCH, "/api/v1/dns/records", None).await;
    assert!(s == StatusCode::METHOD_NOT_ALLOWED && is_error_envelope(&v), "{s} {v}");
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from("{not json"))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v), "{s} {v}");
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from("{}"))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(
        s == StatusCode::UNSUPPORTED_MEDIA_TYPE && is_error_envelope(&v),
        "{s} {v}"
    );
    let big = format!("{{\"name\":\"{}\"}}", "a".repeat(2 << 20));
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from(big))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(s == StatusCode::PAYLOAD_TOO_LARGE && is_error_envelope(&v), "{s} {v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/openapi.json", None).await;
    assert_eq!(s, StatusCode::OK);
    for p in [
        "/api/v1/dns/records",
        "/api/v1/dns/records/{id}",
        "/api/v1/services/dns",
        "/api/v1/auth/login",
        "/api/v1/version",
    ] {
        assert!(v["paths"][p].is_object(), "openapi lacks {p}");
    }
    let (_, _, v) = t.call(Method::GET, "/api/v1/version", None).await;
    assert!(
        v["data"]["version"].is_string() && v["data"]["git_commit"].is_string() && v["data"]["build_date"].is_string()
    );
    let (s, h, v) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h
        .get(header::CONTENT_TYPE)
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert!(v.as_str().unwrap().contains("bootlane_dns_xdp_answered_total"));
}

fn scrape(token: &str) -> Request<Body> {
    Request::builder()
        .uri("/api/v1/metrics")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap()
}

/// `/metrics` takes a session, the configured scrape token, or nothing when
/// `public = true`; anything else is a 401 in the envelope.
#[tokio::test]
async fn metrics_scrape_with_session_token_or_public() {
    // Default: session only.
    let mut t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert!(s == StatusCode::UNAUTHORIZED && is_error_envelope(&v), "{s} {v}");
    let (s, _, v) = t.raw(scrape("anything")).await;
    assert!(s == StatusCode::UNAUTHORIZED && is_error_envelope(&v), "{s} {v}");
    t.login().await;
    let (s, _, _) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert_eq!(s, StatusCode::OK);

    // Bearer token.
    let t = setup_with(|c| c.metrics.bearer_token = Some("scrape-0123456789".into())).await;
    let (s, _, v) = t.raw(scrape("scrape-0123456789")).await;
    assert_eq!(s, StatusCode::OK);
    assert!(v.as_str().unwrap().contains("bootlane_store_size_bytes"), "{v}");
    let (s, _, v) = t.raw(scrape("scrape-012345678")).await;
    assert!(s == StatusCode::UNAUTHORIZED && is_error_envelope(&v), "{s} {v}");
    let (s, _, _) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // The scrape token opens /metrics only.
    let req = Request::builder()
        .uri("/api/v1/dns/records")
        .header(header::AUTHORIZATION, "Bearer scrape-0123456789")
        .body(Body::empty())
        .unwrap();
    let (s, _, _) = t.raw(req).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    // Public.
    let t = setup_with(|c| c.metrics.public = true).await;
    let (s, h, _) = t.call(Method::GET, "/api/v1/metrics", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
}

/// API requests are counted by matched route template and status, with a latency
/// histogram; unknown paths are one `unmatched` label, never the raw path; the DNS,
/// XDP and store series keep their names.
#[tokio::test]
async fn api_requests_are_counted_by_route_and_status() {
    use bootlane_core::metrics::test_support::value;
    let mut t = setup().await;
    t.login().await;
    let ok = r#"bootlane_api_requests_total{method="GET",route="/api/v1/dns/records/{id}",status="404"}"#;
    let (_, _, before) = t.call(Method::GET, "/api/v1/metrics", None).await;
    let before = value(before.as_str().unwrap(), ok);
    let (s, _, _) = t.call(Method::GET, "/api/v1/dns/records/987654", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _, _) = t.call(Method::GET, "/api/v1/no-such-route-xyz", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (_, _, v) = t.call(Method::GET, "/api/v1/metrics", None).await;
    let text = v.as_str().unwrap();
    assert!(value(text, ok) >= before + 1.0, "{text}");
    assert!(
        text.contains(r#"bootlane_api_requests_total{method="POST",route="/api/v1/auth/login",status="200"}"#),
        "{text}"
    );
    assert!(text.contains(r#"route="unmatched",status="404"}"#), "{text}");
    assert!(!text.contains("no-such-route-xyz"), "{text}");
    assert!(
        text.contains("# TYPE bootlane_api_request_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains(
            r#"bootlane_api_request_duration_seconds_bucket{method="GET",route="/api/v1/dns/records/{id}",le="0.005"}"#
        ),
        "{text}"
    );
    assert!(
        value(
            text,
            r#"bootlane_api_request_duration_seconds_count{method="GET",route="/api/v1/dns/records/{id}"}"#
        ) >= 1.0,
        "{text}"
    );
    for name in [
        r#"bootlane_dns_queries_total{transport="udp"}"#,
        r#"bootlane_dns_responses_total{outcome="nxdomain"}"#,
        "bootlane_dns_xdp_answered_total ",
        r#"bootlane_dns_xdp_passed_total{reason="malformed"}"#,
        "bootlane_dns_xdp_active ",
        "bootlane_dns_xdp_map_entries ",
        "bootlane_dns_xdp_configured ",
        "bootlane_store_size_bytes ",
        r#"bootlane_store_up{backend="#,
    ] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
}

#[tokio::test]
async fn writes_become_events_with_user_and_address_and_the_audit_log_follows() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "ev1", "type": "A", "value": "10.0.0.21"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["data"]["id"].as_u64().unwrap();
    let (s, _, v) = t.call(Method::GET, "/api/v1/events?kind=dns.record.", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let e = &v["data"]["events"][0];
    assert_eq!(e["kind"], "dns.record.created", "{v}");
    assert_eq!(e["actor"], "admin");
    assert_eq!(e["remote_addr"], "10.9.9.9");
    assert_eq!(e["resource_id"], id.to_string());
    // Logins are events too.
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?kind=auth.login", None).await;
    assert!(v["data"]["total"].as_u64().unwrap() >= 1, "{v}");
    let (s, _, v) = t
        .call(Method::GET, "/api/v1/audit-logs?user=admin&resource=dns_record", None)
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let a = &v["data"]["entries"][0];
    assert_eq!(
        (&a["action"], &a["after"]["name"]),
        (&json!("create"), &json!("ev1")),
        "{v}"
    );
    assert_eq!(a["remote_addr"], "10.9.9.9");
    let (s, _, _) = t.call(Method::GET, "/api/v1/audit-logs?user=nobody", None).await;
    assert_eq!(s, StatusCode::OK);
    // A page far past the end is empty, not an overflow (found by schemathesis:
    // `(page - 1) * size` panicked in debug builds).
    for far in [
        "/api/v1/audit-logs?page=2111414520967830528",
        "/api/v1/events?page=2111414520967830528&size=1000",
    ] {
        let (s, _, v) = t.call(Method::GET, far, None).await;
        assert_eq!(s, StatusCode::OK, "{far}: {v}");
        assert_eq!(
            v["data"]["entries"]
                .as_array()
                .or(v["data"]["events"].as_array())
                .map(Vec::len),
            Some(0),
            "{v}"
        );
    }
    for bad in [
        "/api/v1/events?since=yesterday",
        "/api/v1/events?size=0",
        "/api/v1/audit-logs?from=x",
    ] {
        let (s, _, v) = t.call(Method::GET, bad, None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {v}");
        assert_eq!(v["success"], false);
    }
}

#[tokio::test]
async fn the_event_stream_resumes_after_last_event_id() {
    let mut t = setup().await;
    t.login().await;
    let mk = |n: &str| json!({"name": n, "type": "A", "value": "10.0.0.31"});
    t.call(Method::POST, "/api/v1/dns/records", Some(mk("s1"))).await;
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?kind=dns.record.", None).await;
    let last = v["data"]["events"][0]["id"].as_u64().unwrap();
    t.call(Method::POST, "/api/v1/dns/records", Some(mk("s2"))).await;
    t.call(Method::POST, "/api/v1/dns/records", Some(mk("s3"))).await;
    let req = Request::builder()
        .uri("/api/v1/events/stream?kind=dns.record.")
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .header("last-event-id", last.to_string())
        .body(Body::empty())
        .unwrap();
    let resp = t.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let text = sse_events(&mut resp.into_body(), 2).await;
    assert!(text.contains("event: dns.record.created"), "{text}");
    assert!(text.contains("\"s2\"") && text.contains("\"s3\""), "{text}");
    assert!(!text.contains("\"s1\""), "nothing at or before Last-Event-ID: {text}");
    let (s, _, _) = {
        let req = Request::builder()
            .uri("/api/v1/events/stream")
            .header(header::COOKIE, t.cookie.clone().unwrap())
            .header("last-event-id", "abc")
            .body(Body::empty())
            .unwrap();
        t.raw(req).await
    };
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn services_list_stop_start_and_reject_unknown_names() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/services", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let names: Vec<&str> = v["data"]["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["dns", "dhcp", "tftp", "http-boot"]);
    // HTTP boot really stops: the boot routes answer 503 until it starts again.
    let (s, _, v) = t.call(Method::POST, "/api/v1/services/http-boot/stop", None).await;
    assert_eq!((s, &v["data"]["state"]), (StatusCode::OK, &json!("stopped")), "{v}");
    let (s, _, _) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:00:00:01", None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/services/batch/start",
            Some(json!({"names": ["http-boot", "nope"]})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["results"][0]["status"]["state"], "running");
    assert_eq!(v["data"]["results"][1]["ok"], false);
    let (s, _, _) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:00:00:01", None).await;
    // Serving again: the handler answers (here 400, as the test request has no Host header).
    assert_eq!(s, StatusCode::BAD_REQUEST);
    // DHCP without an active subnet fails with a reason instead of pretending.
    let (_, _, v) = t.call(Method::POST, "/api/v1/services/dhcp/start", None).await;
    assert_eq!(v["data"]["state"], "failed", "{v}");
    assert!(v["data"]["reason"].as_str().unwrap().contains("subnet"), "{v}");
    for (path, needle) in [
        ("/api/v1/services/nope/start", "dns, dhcp, tftp, http-boot"),
        ("/api/v1/services/dns/reload", "start, stop, restart"),
    ] {
        let (s, _, v) = t.call(Method::POST, path, None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{path}: {v}");
    }
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/services/tftp/auto-start",
            Some(json!({"auto_start": false})),
        )
        .await;
    assert_eq!((s, &v["data"]["auto_start"]), (StatusCode::OK, &json!(false)), "{v}");
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?kind=service.", None).await;
    let kinds: Vec<&str> = v["data"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"service.stopped") && kinds.contains(&"service.failed"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn settings_groups_validate_and_say_how_they_applied() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/settings", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    for k in ["general", "interfaces", "netboot", "dns", "dhcp", "tftp"] {
        assert!(v["data"][k].is_object(), "{k}: {v}");
    }
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/settings/general",
            Some(json!({"session_ttl_secs": 600, "server_name": "pxe1"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["applied"]["live"], json!(["session_ttl_secs"]));
    assert_eq!(v["data"]["applied"]["next_start"], json!(["server_name"]));
    for (path, body, needle) in [
        (
            "/api/v1/settings/general",
            json!({"session_ttl_secs": 1}),
            "session_ttl_secs",
        ),
        ("/api/v1/settings/general", json!({"colour": "red"}), "colour"),
        (
            "/api/v1/settings/general",
            json!({"api_listen": "nowhere"}),
            "api_listen",
        ),
        (
            "/api/v1/settings/netboot",
            json!({"boot_root": "relative/dir"}),
            "boot_root",
        ),
        ("/api/v1/settings/interfaces", json!({"tftp": "not-an-ip"}), "tftp"),
        ("/api/v1/settings", json!({"bogus": {}}), "bogus"),
    ] {
        let (s, _, v) = t.call(Method::PUT, path, Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path} {body}: {v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{path} {body}: {v}");
    }
    // A directory under the configured root is accepted (others: see
    // `regression_the_boot_root_cannot_expose_the_data_directory`).
    let dir = t.state.settings.boot_root().canonicalize().unwrap().join("alt");
    std::fs::create_dir_all(&dir).unwrap();
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/settings/netboot",
            Some(json!({"boot_root": dir.display().to_string()})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["settings"]["boot_root"], dir.display().to_string());
    let (_, _, v) = t.call(Method::GET, "/api/v1/audit-logs?resource=settings", None).await;
    assert!(v["data"]["total"].as_u64().unwrap() >= 2, "{v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/interfaces", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["data"].as_array().unwrap().iter().any(|i| i["name"] == "lo"), "{v}");
}

/// `PUT /settings/netboot {"boot_root": <data dir>}` was accepted, and then
/// `/boot/initial-admin-password` and `/boot/bmc.key` were served to anyone without login.
/// No API call may make the data directory, its parents or a system directory the boot
/// root; a root set that way by hand in the file still serves none of the secrets.
#[tokio::test]
async fn regression_the_boot_root_cannot_expose_the_data_directory() {
    let mut t = setup().await;
    t.login().await;
    let data = t.state.config.data_dir.clone();
    std::fs::write(data.join("initial-admin-password"), "secret-password").unwrap();
    let before = t.state.settings.boot_root();
    for bad in [
        data.clone(),
        data.parent().unwrap().to_path_buf(),
        data.join("boot/.."),
        "/".into(),
        "/etc".into(),
        "/root".into(),
        "/var/lib".into(),
        "/usr".into(),
        "/proc".into(),
        "/home".into(),
    ] {
        let (s, _, v) = t
            .call(
                Method::PUT,
                "/api/v1/settings/netboot",
                Some(json!({"boot_root": bad.display().to_string()})),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{}: {v}", bad.display());
        assert!(v["error"].as_str().unwrap().contains("boot_root"), "{v}");
    }
    assert_eq!(t.state.settings.boot_root(), before);
    for f in ["initial-admin-password", "bmc.key", "store-format"] {
        let (s, _, _) = t.call(Method::GET, &format!("/boot/{f}"), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{f}");
    }

    // The root set by hand to the data directory: still nothing of it is served.
    let data2 = tempfile::tempdir().unwrap();
    let d = data2.path().to_path_buf();
    let t = setup_with(move |c| {
        c.data_dir = d.clone();
        c.boot.root = Some(d);
    })
    .await;
    std::fs::write(data2.path().join("initial-admin-password"), "secret-password").unwrap();
    std::fs::create_dir_all(data2.path().join("boot")).unwrap();
    std::fs::write(data2.path().join("boot/ipxe-ok.efi"), "fine").unwrap();
    assert!(data2.path().join("bmc.key").exists());
    for f in ["initial-admin-password", "bmc.key", "db/conf", "boot/../bmc.key"] {
        let (s, _, v) = t.call(Method::GET, &format!("/boot/{f}"), None).await;
        assert!(s == StatusCode::NOT_FOUND || s == StatusCode::FORBIDDEN, "{f}: {s} {v}");
        assert!(!v.to_string().contains("secret-password"), "{f}: {v}");
    }
    let (s, _, _) = t.call(Method::GET, "/boot/boot/ipxe-ok.efi", None).await;
    assert_eq!(s, StatusCode::OK);
}

/// The netboot group's `http_base_url`: validated by name, applied live to the scripts'
/// kernel URLs, cleared with `""`; logging changes publish `settings.changed` too.
#[tokio::test]
async fn netboot_base_url_and_logging_settings_events() {
    let mut t = setup().await;
    t.login().await;
    for bad in ["ftp://x", "http://", "http://h/?q=1", "not a url"] {
        let (s, _, v) = t
            .call(
                Method::PUT,
                "/api/v1/settings/netboot",
                Some(json!({"http_base_url": bad})),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {v}");
        assert!(v["error"].as_str().unwrap().contains("http_base_url"), "{v}");
    }
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/settings/netboot",
            Some(json!({"http_base_url": "https://pxe.lab.example:8443/"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["settings"]["http_base_url"], "https://pxe.lab.example:8443");
    assert_eq!(v["data"]["applied"]["live"][0], "http_base_url (dhcp, http-boot)");
    // A profile with a relative kernel path: the script names it under the base URL.
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/profiles",
            Some(json!({"name": "deb", "entries": [{"label": "Debian", "type": "linux", "kernel": "debian/linux", "is_default": true}]})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"mac": "52:54:00:00:00:42", "name": "n42", "profile_id": v["data"]["id"]})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let req = Request::builder()
        .uri("/boot/ipxe?mac=52:54:00:00:00:42")
        .header(header::HOST, "10.77.0.1:8080")
        .body(Body::empty())
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    let script = v.as_str().unwrap_or_default().to_owned();
    assert_eq!(s, StatusCode::OK, "{script}");
    assert!(
        script.contains("https://pxe.lab.example:8443/boot/debian/linux"),
        "{script}"
    );
    let (s, _, v) = t
        .call(
            Method::PUT,
            "/api/v1/settings/netboot",
            Some(json!({"http_base_url": ""})),
        )
        .await;
    assert_eq!(
        (s, &v["data"]["settings"]["http_base_url"]),
        (StatusCode::OK, &Value::Null),
        "{v}"
    );

    let (s, _, v) = t
        .call(Method::PUT, "/api/v1/settings/logging", Some(json!({"level": "debug"})))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, _, v) = t
        .call(
            Method::GET,
            "/api/v1/events?kind=settings.changed&resource_id=logging",
            None,
        )
        .await;
    assert_eq!(v["data"]["total"], 1, "{v}");
    assert_eq!(v["data"]["events"][0]["data"]["after"]["level"], "debug", "{v}");
}

/// The backup route streams the whole store, and what it serves restores.
#[tokio::test]
async fn the_api_serves_a_backup_that_restores() {
    use axum::http::{header, Method, StatusCode};
    use http_body_util::BodyExt;
    let mut t = setup().await;
    t.expect(Method::GET, "/api/v1/system/backup", None, StatusCode::UNAUTHORIZED, "")
        .await;
    t.login().await;
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(serde_json::json!({"name": "api-host", "mac": "52:54:00:aa:00:01"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    let resp = t.send(t.request(Method::GET, "/api/v1/system/backup", None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/x-ndjson");
    assert!(resp.headers()[header::CONTENT_DISPOSITION]
        .to_str()
        .unwrap()
        .contains("bootlane-backup-"));
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let dir = tempfile::tempdir().unwrap();
    let m = bootlane_backup::restore(&dir.path().join("r"), &bytes).await.unwrap();
    assert_eq!(m.trees.get("hosts"), Some(&1));
    let restored = bootlane_core::store::Store::open(&dir.path().join("r")).unwrap();
    assert_eq!(
        restored
            .table::<bootlane_boot::inventory::model::Host>()
            .unwrap()
            .list()
            .unwrap()[0]
            .name,
        "api-host"
    );
}
