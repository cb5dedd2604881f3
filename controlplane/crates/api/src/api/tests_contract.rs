//! The OpenAPI contract at router level: the generated document walked operation by
//! operation (envelopes, error answers, path parameters, security), the session layer
//! checked against the document's security marks, real answers checked against the
//! document's schemas, and every layer's rejection checked for the envelope.

use std::collections::BTreeSet;

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
    routing::get,
    Router,
};
use serde_json::{json, Value};

use super::{
    openapi::{self, BEARER_SCHEME, COOKIE_SCHEME, ERROR_ENVELOPE, SSE},
    openapi_doc,
    test_support::{is_error_envelope, setup},
};

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

fn doc() -> Value {
    serde_json::to_value(openapi_doc()).unwrap()
}

/// `(path, method, operation)` for every operation of `doc`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for m in METHODS {
            if let Some(op) = item.get(m) {
                out.push((path.clone(), m.to_string(), op.clone()));
            }
        }
    }
    out
}

/// A small structural JSON Schema check (the subset utoipa emits): `$ref`, `allOf`,
/// `oneOf`/`anyOf`, `enum`, `type` (string or list), `properties`, `required`,
/// `additionalProperties: false`, `items`.
fn validate(doc: &Value, schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/components/schemas/")
            .ok_or_else(|| format!("{at}: foreign $ref {r}"))?;
        let target = &doc["components"]["schemas"][name];
        if target.is_null() {
            return Err(format!("{at}: dangling $ref {r}"));
        }
        return validate(doc, target, v, at);
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            validate(doc, s, v, at)?;
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            if !alts.iter().any(|s| validate(doc, s, v, at).is_ok()) {
                return Err(format!("{at}: {v} matches no {key} alternative"));
            }
        }
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            return Err(format!("{at}: {v} not in {e:?}"));
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "null" => v.is_null(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "string" => v.is_string(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => false,
        });
        if !ok {
            return Err(format!("{at}: {v} is not of type {t}"));
        }
    }
    if let Some(obj) = v.as_object() {
        if let Some(req) = schema.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    return Err(format!("{at}: required key {r:?} missing in {v}"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => validate(doc, s, val, &format!("{at}.{k}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: unexpected key {k:?}"));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            validate(doc, items, x, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Every `$ref` anywhere in `v`.
fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        out.insert(r.clone());
                    }
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn every_operation_has_envelope_errors_params_and_security() {
    let doc = doc();
    let ops = operations(&doc);
    assert!(ops.len() >= 45, "only {} operations in the document", ops.len());
    for (path, method, op) in &ops {
        let at = format!("{method} {path}");
        // Path parameters: the template's names and the declared ones are the same set.
        let in_template: BTreeSet<String> = path
            .split('{')
            .skip(1)
            .filter_map(|s| s.split_once('}').map(|(n, _)| n.to_string()))
            .collect();
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let declared: BTreeSet<String> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(in_template, declared, "{at}: path parameters");
        let responses = op["responses"].as_object().unwrap();
        // Successes: JSON ones are wrapped in the envelope.
        let mut any_success = false;
        for (status, r) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
            any_success = true;
            let content = r["content"]
                .as_object()
                .unwrap_or_else(|| panic!("{at} {status}: no content"));
            assert!(!content.is_empty(), "{at} {status}: no content");
            if let Some(j) = content.get("application/json") {
                let s = &j["schema"];
                assert_eq!(s["properties"]["success"]["enum"], json!([true]), "{at} {status}");
                assert!(s["properties"]["data"].is_object(), "{at} {status}");
                assert_eq!(s["required"], json!(["success", "data"]), "{at} {status}");
            }
        }
        // A redirect is the success of the routes a browser is sent through (single sign-on).
        let redirects = responses.keys().any(|s| s.starts_with('3'));
        assert!(any_success || redirects, "{at}: no 2xx or 3xx answer");
        // Errors: the statuses every layer can answer, each with the error envelope.
        let has_body = op.get("requestBody").is_some();
        let protected = op.get("security").is_some();
        let mut want = vec!["404", "405", "408", "500"];
        if has_body || !params.is_empty() {
            want.push("400");
        }
        if protected {
            want.push("401");
        }
        if has_body {
            want.extend(["413", "415"]);
        }
        for status in want {
            let r = responses
                .get(status)
                .unwrap_or_else(|| panic!("{at}: no {status} answer"));
            assert_eq!(
                r["content"]["application/json"]["schema"]["$ref"],
                format!("#/components/schemas/{ERROR_ENVELOPE}"),
                "{at} {status}"
            );
        }
        for (status, r) in responses
            .iter()
            .filter(|(s, _)| !s.starts_with('2') && !s.starts_with('3'))
        {
            assert!(
                r["content"]["application/json"].is_object(),
                "{at} {status}: not enveloped"
            );
        }
        if protected {
            assert_eq!(
                op["security"],
                json!([{ COOKIE_SCHEME: [] }, { BEARER_SCHEME: [] }]),
                "{at}"
            );
        }
    }
    let login = &doc["paths"]["/api/v1/auth/login"]["post"];
    assert!(login["responses"]["429"]["headers"]["Retry-After"].is_object());
    assert!(login.get("security").is_none(), "login must be public");
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(
        schemes[COOKIE_SCHEME],
        json!({"type": "apiKey", "in": "cookie", "name": "bootlane_session",
               "description": "Session token set by POST /api/v1/auth/login"})
    );
    assert_eq!(schemes[BEARER_SCHEME]["type"], "http");
    assert_eq!(schemes[BEARER_SCHEME]["scheme"], "bearer");
    let mut all = BTreeSet::new();
    refs(&doc, &mut all);
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap();
        assert!(doc["components"]["schemas"][name].is_object(), "dangling {r}");
    }
}

#[test]
fn sse_and_plain_text_answers_are_not_wrapped() {
    use utoipa::openapi::{
        path::{HttpMethod, OperationBuilder, PathItem},
        ContentBuilder, OpenApiBuilder, PathsBuilder, ResponseBuilder,
    };
    let op = |media: &str| {
        OperationBuilder::new()
            .response(
                "200",
                ResponseBuilder::new()
                    .description("stream")
                    .content(media, ContentBuilder::new().build()),
            )
            .build()
    };
    let mut doc = OpenApiBuilder::new()
        .paths(
            PathsBuilder::new()
                .path("/events/stream", PathItem::new(HttpMethod::Get, op(SSE)))
                .path("/metrics", PathItem::new(HttpMethod::Get, op("text/plain"))),
        )
        .build();
    openapi::protect(&mut doc);
    openapi::finalize(&mut doc);
    let v = serde_json::to_value(&doc).unwrap();
    let sse = &v["paths"]["/events/stream"]["get"]["responses"];
    assert_eq!(sse["200"]["content"][SSE]["schema"]["type"], "string");
    assert!(sse["200"]["content"].get("application/json").is_none());
    assert!(sse["401"]["content"]["application/json"].is_object());
    let plain = &v["paths"]["/metrics"]["get"]["responses"]["200"]["content"];
    assert_eq!(plain.as_object().unwrap().keys().collect::<Vec<_>>(), ["text/plain"]);
    assert!(plain["text/plain"].get("schema").is_none());
}

/// The document's security marks equal the session layer: without credentials every
/// protected operation answers 401 and no public one does.
#[tokio::test]
async fn security_marks_match_the_session_layer() {
    let t = setup().await;
    for (path, method, op) in operations(&doc()) {
        let uri = path
            .replace("{id}", "1")
            .replace("{profileId}", "1")
            .replace("{verId}", "1")
            .replace("{mac}", "02:00:00:00:00:01");
        let m = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).unwrap();
        let (s, _, v) = t.call(m, &uri, None).await;
        if op.get("security").is_some() {
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{method} {path}: {v}");
        } else {
            assert_ne!(s, StatusCode::UNAUTHORIZED, "{method} {path}: {v}");
        }
    }
}

/// Real answers of the router validate against the schema the document gives for their
/// operation and status.
#[tokio::test]
async fn answers_validate_against_the_document() {
    let doc = doc();
    let mut t = setup().await;
    let check = |path: &str, method: &str, status: StatusCode, body: &Value| {
        let r = &doc["paths"][path][method]["responses"][status.as_str()];
        assert!(
            r.is_object(),
            "{method} {path}: status {status} is not documented ({body})"
        );
        let schema = &r["content"]["application/json"]["schema"];
        validate(&doc, schema, body, &format!("{method} {path} {status}")).unwrap();
    };
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records", None).await;
    check("/api/v1/dns/records", "get", s, &v);
    t.login().await;
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/dns/records",
            Some(json!({"name": "pc1", "type": "A", "value": "10.0.0.5"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    check("/api/v1/dns/records", "post", s, &v);
    let id = v["data"]["id"].as_u64().unwrap();
    let (s, _, v) = t.call(Method::GET, &format!("/api/v1/dns/records/{id}"), None).await;
    check("/api/v1/dns/records/{id}", "get", s, &v);
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records/999999", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    check("/api/v1/dns/records/{id}", "get", s, &v);
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records/abc", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    check("/api/v1/dns/records/{id}", "get", s, &v);
    let (s, _, v) = t.call(Method::GET, "/api/v1/hosts?page=abc", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    check("/api/v1/hosts", "get", s, &v);
    // Every parameterless GET answers what the document says.
    for (path, method, op) in operations(&doc) {
        if method != "get" || path.contains('{') || op.get("parameters").is_some() {
            continue;
        }
        let (s, h, v) = t.call(Method::GET, &path, None).await;
        let ct = h.get(header::CONTENT_TYPE).unwrap().to_str().unwrap();
        if ct.starts_with("application/json") {
            check(&path, "get", s, &v);
        } else {
            let media = ct.split(';').next().unwrap();
            assert!(
                op["responses"][s.as_str()]["content"][media].is_object(),
                "GET {path}: {ct} not documented"
            );
        }
    }
}

/// Every layer's rejection is the envelope: query and path parameters, unknown routes,
/// 405, the body limit with a `Content-Length` (answered by the limit layer itself, before
/// any extractor) and without one (answered by the extractor).
#[tokio::test]
async fn every_layer_answers_the_envelope() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/dns/records?page=abc", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        is_error_envelope(&v) && v["error"].as_str().unwrap().contains("page"),
        "{v}"
    );
    let (s, _, v) = t.call(Method::GET, "/api/v1/leases?size=-1", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        is_error_envelope(&v) && v["error"].as_str().unwrap().contains("size"),
        "{v}"
    );
    let (s, _, v) = t.call(Method::GET, "/api/v1/audit-logs?size=x", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v), "{s} {v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/profiles/1/script-versions/x", None).await;
    assert!(s == StatusCode::BAD_REQUEST && is_error_envelope(&v), "{s} {v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/nothing/here", None).await;
    assert!(s == StatusCode::NOT_FOUND && is_error_envelope(&v), "{s} {v}");
    let (s, h, v) = t.call(Method::DELETE, "/api/v1/services/dns", None).await;
    assert!(s == StatusCode::METHOD_NOT_ALLOWED && is_error_envelope(&v), "{s} {v}");
    assert!(h.get(header::ALLOW).is_some());
    let big = "x".repeat((1 << 20) + 1);
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/dns/records")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, big.len())
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from(big))
        .unwrap();
    let (s, h, v) = t.raw(req).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(is_error_envelope(&v), "{v}");
    assert_eq!(h[header::CONTENT_TYPE], "application/json");
}

/// The bearer form of the session token works like the cookie (the document's `bearer`
/// scheme).
#[tokio::test]
async fn bearer_token_is_a_session() {
    let mut t = setup().await;
    t.login().await;
    let token = t.cookie.take().unwrap().split_once('=').unwrap().1.to_string();
    let req = Request::builder()
        .uri("/api/v1/version")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let req = Request::builder()
        .uri("/api/v1/version")
        .header(header::AUTHORIZATION, "Bearer not-a-session")
        .body(Body::empty())
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert!(s == StatusCode::UNAUTHORIZED && is_error_envelope(&v));
}

/// The timeout layer's bare 408 is rewritten into the envelope. The real handlers answer
/// well inside a second, so this stacks the same layers, in the same order as
/// [`super::router`], over a handler that sleeps.
#[tokio::test]
async fn timeout_answers_the_envelope() {
    use tower::ServiceExt;
    use tower_http::timeout::TimeoutLayer;
    let app = Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                "late"
            }),
        )
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            std::time::Duration::from_millis(20),
        ))
        .layer(axum::middleware::from_fn(super::envelope_405));
    let resp = app
        .oneshot(Request::builder().uri("/slow").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(is_error_envelope(&v), "{v}");
}

/// A page number far past the end is an empty page, not an overflow (found by the
/// contract test: `GET /hosts?page=9563184530536093696` panicked in debug builds).
#[tokio::test]
async fn huge_page_numbers_answer_an_empty_page() {
    let mut t = setup().await;
    t.login().await;
    for (path, key) in [
        ("/api/v1/hosts", "hosts"),
        ("/api/v1/dns/records", "records"),
        ("/api/v1/leases", "leases"),
    ] {
        let (s, _, v) = t.call(Method::GET, &format!("{path}?page={}", usize::MAX), None).await;
        assert_eq!(s, StatusCode::OK, "{path}: {v}");
        assert_eq!(v["data"][key], json!([]), "{path}: {v}");
    }
}

/// Found by schemathesis: serde fills a struct from an array of its fields, so a body (or
/// a settings group) given as an array must be refused by name; a day count past the
/// calendar's start is not a server error.
#[tokio::test]
async fn array_bodies_are_refused_and_huge_day_counts_are_not_errors() {
    let mut t = setup().await;
    t.login().await;
    let (s, _, v) = t
        .call(Method::PUT, "/api/v1/settings/netboot", Some(json!([null, null])))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("must be a JSON object, not an array"),
        "{v}"
    );
    let (s, _, v) = t
        .call(Method::PUT, "/api/v1/settings", Some(json!({"netboot": [null, null]})))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"].as_str().unwrap().contains("netboot"), "{v}");
    let (s, _, v) = t
        .call(Method::PUT, "/api/v1/settings", Some(json!({"netboot": null})))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/logs/cleanup",
            Some(json!({"keep_latest": 0, "older_than_days": 36_500})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/logs/cleanup",
            Some(json!({"keep_latest": 0, "older_than_days": 2_147_483_648_u64})),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/logs/cleanup",
            Some(json!({"older_than_days": 5_000_000_000_u64})),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "past u32: {v}");
    assert!(v["error"].as_str().unwrap().contains("older_than_days"), "{v}");
    let (s, _, v) = t.call(Method::GET, "/api/v1/events?since_id=-1", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    // Any JSON value: an iPXE script's before/after is a string.
    let doc = openapi_doc();
    let entry = serde_json::to_value(&doc.components.unwrap().schemas["AuditEntry"]).unwrap();
    assert!(entry["properties"]["after"].get("type").is_none(), "{entry}");
}

/// Property names of `schema`, through `$ref` and `allOf` (how `#[serde(flatten)]`
/// appears in the document).
fn property_names(doc: &Value, schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.trim_start_matches("#/components/schemas/");
        return property_names(doc, &doc["components"]["schemas"][name], out);
    }
    for s in schema["allOf"].as_array().into_iter().flatten() {
        property_names(doc, s, out);
    }
    out.extend(
        schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone()),
    );
}

/// One list contract: every list operation declares `page` (from 1), `size` (1-1000)
/// and `q` (from [`super::list::ListQuery`]) and answers its items under its own key
/// beside `total`, `page` and `size` (from [`super::list::PageInfo`]).
#[test]
fn every_list_shares_the_list_contract() {
    let doc = doc();
    let lists = [
        ("/api/v1/dns/records", "records"),
        ("/api/v1/hosts", "hosts"),
        ("/api/v1/profiles", "profiles"),
        ("/api/v1/profiles/{profileId}/script-versions", "versions"),
        ("/api/v1/leases", "leases"),
        ("/api/v1/dhcp/reservations", "reservations"),
        ("/api/v1/events", "events"),
    ];
    for (path, items) in lists {
        let op = &doc["paths"][path]["get"];
        let params = op["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no parameters"));
        let param = |n: &str| {
            params
                .iter()
                .find(|p| p["name"] == n && p["in"] == "query")
                .unwrap_or_else(|| panic!("{path}: no query parameter {n}"))
                .clone()
        };
        if path != "/api/v1/events" {
            // The events list has its own query type; its paging is shared.
            assert_eq!(param("page")["schema"]["minimum"], 1, "{path}");
            assert_eq!(param("size")["schema"]["minimum"], 1, "{path}");
            assert_eq!(param("size")["schema"]["maximum"], 1000, "{path}");
            param("q");
        }
        let data = &op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["data"];
        let mut props = BTreeSet::new();
        property_names(&doc, data, &mut props);
        for want in [items, "total", "page", "size"] {
            assert!(props.contains(want), "{path}: answer lacks {want:?}: {props:?}");
        }
    }
}

/// The list contract through the router: bounds and their messages, a page past the end,
/// `total`, `q` (blank is no filter) beside a field filter, on DNS records.
#[tokio::test]
async fn list_paging_and_q_through_the_router() {
    let mut t = setup().await;
    t.login().await;
    for name in ["alpha", "beta", "gamma"] {
        let (s, _, v) = t
            .call(
                Method::POST,
                "/api/v1/dns/records",
                Some(json!({"name": name, "type": "TXT", "value": "v=1"})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    // Only the TXT records made here (the server's own A/AAAA auto-records are there too).
    let get = |q: &str| format!("/api/v1/dns/records?type=TXT&{q}");
    for (q, msg) in [
        ("size=0", "'size' must be 1-1000"),
        ("size=1001", "'size' must be 1-1000"),
        ("page=0", "'page' starts at 1"),
        ("page=x", "page"),
    ] {
        let (s, _, v) = t.call(Method::GET, &get(q), None).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {v}");
        assert!(v["error"].as_str().unwrap().contains(msg), "{q}: {v}");
    }
    let (_, _, v) = t.call(Method::GET, &get("size=2&page=2"), None).await;
    let names: Vec<&str> = v["data"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gamma"], "{v}");
    assert_eq!(
        (&v["data"]["total"], &v["data"]["page"], &v["data"]["size"]),
        (&json!(3), &json!(2), &json!(2))
    );
    let (s, _, v) = t.call(Method::GET, &get("size=2&page=9"), None).await;
    assert_eq!(
        (s, &v["data"]["records"], &v["data"]["total"]),
        (StatusCode::OK, &json!([]), &json!(3))
    );
    let (_, _, v) = t.call(Method::GET, &get("q=%20ALP%20"), None).await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["records"][0]["name"]),
        (&json!(1), &json!("alpha"))
    );
    let (_, _, v) = t.call(Method::GET, &get("q=%20"), None).await;
    assert_eq!(v["data"]["total"], 3);
}

/// utoipa names a schema after its type: two `ToSchema` types of the same name (in
/// different modules) silently share one entry of `components.schemas`, and answers of
/// one are then judged by the other's schema. Every `ToSchema` type in the source must
/// have a distinct schema name (its own, or its `#[schema(as = ...)]` alias).
#[test]
fn schema_names_are_unique() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    // Every control plane crate: `controlplane/crates/*` and the binary's `controlplane/src`.
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    walk(&crates, &mut files);
    walk(&crates.join("../src"), &mut files);
    let mut seen: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut clashes = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if !(l.trim_start().starts_with("#[derive(") && l.contains("ToSchema")) {
                continue;
            }
            // The attributes up to the item: an alias, then the type's name.
            let mut alias = None;
            for next in &lines[i + 1..] {
                let t = next.trim();
                if let Some(a) = t.strip_prefix("#[schema(as = ") {
                    alias = a.split(')').next().map(str::to_string);
                } else if let Some(rest) = t.strip_prefix("pub struct ").or(t.strip_prefix("pub enum ")) {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    let name = alias.take().unwrap_or(name);
                    let at = format!("{}:{}", f.display(), i + 1);
                    if let Some(first) = seen.insert(name.clone(), at.clone()) {
                        clashes.push(format!("{name}: {first} and {at}"));
                    }
                    break;
                } else if !t.starts_with("#[") && !t.starts_with("///") && !t.is_empty() {
                    break;
                }
            }
        }
    }
    assert!(
        clashes.is_empty(),
        "schema names used twice (add #[schema(as = ...)]):\n{}",
        clashes.join("\n")
    );
}
