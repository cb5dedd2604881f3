//! `GET /events`, `GET /events/stream` (server-sent events), `GET /audit-logs` and
//! `GET /audit-logs/verify` (the audit log's hash chain, [`bootlane_core::audit`]) over
//! the [`EventBus`]. Handlers take only the bus (sub-state).
//!
//! The stream follows axum's `examples/sse`: every event is one SSE message with `id:`
//! (the event id), `event:` (the kind) and `data:` (the event as JSON). A client that
//! reconnects with `Last-Event-ID` (or `?last_event_id=`, for the first connection of an
//! `EventSource`) first gets every stored event after that id, then the live ones, with
//! nothing lost or repeated. A comment line every 15 s keeps proxies from closing it. A
//! subscriber that reads too slowly gets an `event: lagged` message saying how many
//! events it missed (it can fetch them from `GET /events?since_id=`).
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::State,
    http::HeaderMap,
    response::sse::{Event as SseEvent, KeepAlive, Sse},
};
use futures::Stream;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::broadcast::error::RecvError;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiQuery, Envelope},
    list::paging,
    AppState,
};
use bootlane_core::{
    audit::Verification,
    events::{AuditEntry, Event, EventBus, EventKind},
};

/// Filters of `GET /events` (all optional, combined with AND).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// Kind prefix, e.g. `dhcp.` or `dns.record.created`.
    pub kind: Option<String>,
    /// Resource kind, e.g. `host`.
    pub resource: Option<String>,
    /// Resource id, e.g. a MAC or a record id.
    pub resource_id: Option<String>,
    /// Node that published the event (`[server] node_name`), exact.
    pub node: Option<String>,
    /// Only events with an id above this one (0 or more; event ids fit an int64).
    #[param(minimum = 0)]
    pub since_id: Option<i64>,
    /// Only events at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Page number, from 1. Default 1.
    pub page: Option<usize>,
    /// Page size, 1-1000. Default 100.
    pub size: Option<usize>,
}

/// `GET /events` answer: newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventList {
    /// Events of this page, newest first.
    pub events: Vec<Event>,
    /// Events matching the filters (all pages).
    pub total: usize,
    /// Page number.
    pub page: usize,
    /// Page size.
    pub size: usize,
    /// Id of the newest event published so far (resume point for the stream).
    pub last_id: u64,
}

fn parse_time(key: &str, v: &Option<String>) -> Result<Option<OffsetDateTime>> {
    v.as_deref()
        .map(|t| {
            OffsetDateTime::parse(t.trim(), &time::format_description::well_known::Rfc3339).map_err(|_| {
                ApiError::BadRequest(format!(
                    "'{key}' {t:?} is not an RFC 3339 time such as 2026-11-23T10:00:00Z"
                ))
            })
        })
        .transpose()
}

/// List events, newest first, with filters and paging.
#[utoipa::path(get, path = "/api/v1/events", extensions(("x-bootlane-role" = json!("viewer"))), tag = "events", params(EventQuery),
    responses((status = 200, body = EventList), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn list(State(bus): State<Arc<EventBus>>, ApiQuery(q): ApiQuery<EventQuery>) -> Result<Envelope<EventList>> {
    let (page, size) = paging(q.page, q.size)?;
    let since = parse_time("since", &q.since)?;
    let since_id = q
        .since_id
        .map(|i| {
            u64::try_from(i).map_err(|_| ApiError::BadRequest(format!("since_id {i} is negative; give 0 or more")))
        })
        .transpose()?;
    bus.settle().await;
    let mut total = 0;
    let mut events = Vec::new();
    let skip = (page - 1).saturating_mul(size);
    for e in bus.newest_first() {
        let e = e?;
        if since_id.is_some_and(|id| e.id <= id) || since.is_some_and(|t| e.time < t) {
            // Newest first: everything after this is older still.
            break;
        }
        let keep = q.kind.as_deref().is_none_or(|k| e.kind.starts_with(k))
            && q.resource.as_deref().is_none_or(|r| e.resource.as_deref() == Some(r))
            && q.resource_id
                .as_deref()
                .is_none_or(|r| e.resource_id.as_deref() == Some(r))
            && q.node.as_deref().is_none_or(|n| e.node == n);
        if keep {
            if total >= skip && events.len() < size {
                events.push(e);
            }
            total += 1;
        }
    }
    Ok(Envelope::ok(EventList {
        events,
        total,
        page,
        size,
        last_id: bus.last_id(),
    }))
}

/// Query of `GET /events/stream`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Only kinds with this prefix (e.g. `dhcp.lease.`).
    pub kind: Option<String>,
    /// Only events of this node (`[server] node_name`), exact.
    pub node: Option<String>,
    /// Resume after this event id (the `Last-Event-ID` header wins when both are sent).
    pub last_event_id: Option<u64>,
}

/// Events as server-sent events; resumes after `Last-Event-ID`.
#[utoipa::path(get, path = "/api/v1/events/stream", extensions(("x-bootlane-role" = json!("viewer"))), tag = "events", params(StreamQuery,
        ("Last-Event-ID" = Option<u64>, Header, description = "Resume after this event id")),
    responses((status = 200, description = "An endless text/event-stream: `id:` event id, `event:` kind, `data:` the event as JSON", content_type = "text/event-stream", body = String),
        (status = 400, description = "Bad Last-Event-ID"), (status = 401)))]
pub async fn stream(
    State(bus): State<Arc<EventBus>>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>>> {
    let last = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::BadRequest("the Last-Event-ID header must be an event id (a number)".into())
                })?,
        ),
        None => q.last_event_id,
    };
    let kind = q.kind.unwrap_or_default();
    let node = q.node;
    let wanted = move |e: &Event| e.kind.starts_with(&kind) && node.as_deref().is_none_or(|n| e.node == n);
    let sub = bus.subscribe();
    // Replay: stored events after `last` that are older than the in-memory ring, then the
    // ring's part after `last`, then live events. The subscription was taken atomically
    // with the ring snapshot, so nothing falls between them.
    let mut replay: Vec<Arc<Event>> = Vec::new();
    if let Some(last) = last {
        let ring_first = sub.recent.first().map_or(u64::MAX, |e| e.id);
        let mut after = last;
        loop {
            let chunk = bus.after(after, 1000)?;
            let Some(end) = chunk.last().map(|e| e.id) else { break };
            replay.extend(chunk.into_iter().filter(|e| e.id < ring_first).map(Arc::new));
            if end >= ring_first {
                break;
            }
            after = end;
        }
        replay.extend(sub.recent.iter().filter(|e| e.id > last).cloned());
    }
    let mut rx = sub.rx;
    let mut sent = replay.last().map(|e| e.id).or(last).unwrap_or(0);
    let stream = async_stream(move |mut yield_| async move {
        for e in replay {
            if wanted(&e) {
                yield_(sse(&e)).await;
            }
        }
        loop {
            match rx.recv().await {
                Ok(e) => {
                    if e.id <= sent {
                        continue;
                    }
                    sent = e.id;
                    if wanted(&e) {
                        yield_(sse(&e)).await;
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    yield_(SseEvent::default().event("lagged").data(format!(
                        "{{\"skipped\":{n},\"resume_with\":\"GET /api/v1/events?since_id={sent}\"}}"
                    )))
                    .await;
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("heartbeat")))
}

fn sse(e: &Event) -> SseEvent {
    SseEvent::default()
        .id(e.id.to_string())
        .event(e.kind.clone())
        .data(serde_json::to_string(e).unwrap_or_else(|_| "{}".into()))
}

/// A tiny generator: `f` gets a `yield_` callback that pushes items into a bounded
/// channel read by the returned stream (1 item of slack: a slow SSE client holds its
/// own task, never the bus).
fn async_stream<F, Fut>(f: F) -> impl Stream<Item = std::result::Result<SseEvent, Infallible>>
where
    F: FnOnce(Box<dyn FnMut(SseEvent) -> futures::future::BoxFuture<'static, ()> + Send>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(1);
    let yield_ = Box::new(move |e: SseEvent| {
        let tx = tx.clone();
        Box::pin(async move {
            let _ = tx.send(e).await;
        }) as futures::future::BoxFuture<'static, ()>
    });
    let fut = f(yield_);
    let task = tokio::spawn(fut);
    futures::stream::unfold((rx, AbortOnDrop(task)), |(mut rx, t)| async move {
        rx.recv().await.map(|e| (Ok(e), (rx, t)))
    })
}

/// Stops the producer task when the client goes away.
struct AbortOnDrop(tokio::task::JoinHandle<()>);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Filters of `GET /audit-logs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only changes by this user.
    pub user: Option<String>,
    /// Only this resource kind (e.g. `dns_record`, `host`, `settings`).
    pub resource: Option<String>,
    /// Only this resource id.
    pub resource_id: Option<String>,
    /// From this time (RFC 3339, inclusive).
    pub from: Option<String>,
    /// Until this time (RFC 3339, exclusive).
    pub to: Option<String>,
    /// Page number, from 1. Default 1.
    pub page: Option<usize>,
    /// Page size, 1-1000. Default 100.
    pub size: Option<usize>,
}

/// `GET /audit-logs` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditList {
    /// Entries of this page, newest first.
    pub entries: Vec<AuditEntry>,
    /// Entries matching the filters.
    pub total: usize,
    /// Page number.
    pub page: usize,
    /// Page size.
    pub size: usize,
}

/// The audit log (derived from write events), newest first.
#[utoipa::path(get, path = "/api/v1/audit-logs", extensions(("x-bootlane-role" = json!("viewer"))), tag = "events", params(AuditQuery),
    responses((status = 200, body = AuditList), (status = 400, description = "Bad filter or paging"), (status = 401)))]
pub async fn audit_logs(
    State(bus): State<Arc<EventBus>>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Envelope<AuditList>> {
    let (page, size) = paging(q.page, q.size)?;
    let from = parse_time("from", &q.from)?;
    let to = parse_time("to", &q.to)?;
    bus.settle().await;
    let skip = (page - 1).saturating_mul(size);
    let mut total = 0;
    let mut entries = Vec::new();
    for a in bus.audit_newest_first() {
        let a = a?;
        if from.is_some_and(|f| a.timestamp < f) {
            break;
        }
        let keep = to.is_none_or(|t| a.timestamp < t)
            && q.user.as_deref().is_none_or(|u| a.user == u)
            && q.resource.as_deref().is_none_or(|r| a.resource == r)
            && q.resource_id.as_deref().is_none_or(|r| a.resource_id == r);
        if keep {
            if total >= skip && entries.len() < size {
                entries.push(a);
            }
            total += 1;
        }
    }
    Ok(Envelope::ok(AuditList {
        entries,
        total,
        page,
        size,
    }))
}

/// Verify the audit log: every chained entry must carry the SHA-256 of the one before
/// it, from the signed anchor of pruned entries (if any) on. Answers `ok` with the
/// count, or `broken` with the first entry whose chain breaks (its id, the expected
/// hash, the one found). Entries from before the chain existed are counted as
/// `unchained`. Reads the whole log.
#[utoipa::path(get, path = "/api/v1/audit-logs/verify", extensions(("x-bootlane-role" = json!("viewer"))), tag = "events",
    responses((status = 200, body = Verification, description = "The verdict (a broken chain is a 200 with `status: broken`)"),
        (status = 401), (status = 500, description = "The log, anchor or key could not be read")))]
pub async fn audit_verify(State(bus): State<Arc<EventBus>>) -> Result<Envelope<Verification>> {
    let v = bus.verify_audit().await.map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Envelope::ok(v))
}

/// Protected event routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(stream))
        .routes(routes!(audit_logs))
        .routes(routes!(audit_verify))
}

/// Adds the list of event kinds ([`EventKind::openapi_list`]) to the descriptions of the
/// `Event` schema's `kind` and of the `kind` filter of `GET /events` and
/// `GET /events/stream` in `doc` (the list comes from the type, so it cannot drift from
/// what the server publishes).
pub(crate) fn describe_kinds(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{schema::Schema, RefOr};
    let list = EventKind::openapi_list();
    let append = |d: &mut Option<String>| {
        let d = d.get_or_insert_with(String::new);
        d.push_str(if d.is_empty() { "" } else { " " });
        d.push_str(&list);
    };
    let event = doc.components.as_mut().and_then(|c| c.schemas.get_mut("Event"));
    if let Some(RefOr::T(Schema::Object(o))) = event {
        if let Some(RefOr::T(Schema::Object(kind))) = o.properties.get_mut("kind") {
            append(&mut kind.description);
        }
    }
    for path in ["/api/v1/events", "/api/v1/events/stream"] {
        let Some(get) = doc.paths.paths.get_mut(path).and_then(|p| p.get.as_mut()) else {
            continue;
        };
        for p in get.parameters.iter_mut().flatten().filter(|p| p.name == "kind") {
            append(&mut p.description);
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use super::super::test_support::setup;

    /// The OpenAPI document names every event kind, from the type, in the `Event` schema's
    /// `kind` and in the `kind` filters of both event routes (and keeps their own words).
    #[test]
    fn the_openapi_document_lists_every_kind() {
        let doc = serde_json::to_value(super::super::openapi_doc()).unwrap();
        let field = doc["components"]["schemas"]["Event"]["properties"]["kind"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(field.starts_with("Dotted kind, e.g. `dhcp.lease.granted`"), "{field}");
        let mut texts = vec![field];
        for path in ["/api/v1/events", "/api/v1/events/stream"] {
            let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
            let kind = params.iter().find(|p| p["name"] == "kind").unwrap();
            let d = kind["description"].as_str().unwrap().to_string();
            assert!(
                d.starts_with("Kind prefix") || d.starts_with("Only kinds with this prefix"),
                "{d}"
            );
            texts.push(d);
        }
        for d in texts {
            assert!(d.ends_with(&bootlane_core::events::EventKind::openapi_list()), "{d}");
            for k in bootlane_core::events::EventKind::ALL {
                assert!(d.contains(&format!("`{k}`")), "{k} missing from {d}");
            }
        }
    }

    #[tokio::test]
    async fn the_audit_log_verifies_and_an_edited_entry_is_named() {
        let mut t = setup().await;
        t.expect(
            Method::GET,
            "/api/v1/audit-logs/verify",
            None,
            StatusCode::UNAUTHORIZED,
            "",
        )
        .await;
        t.login().await;
        for name in ["ops-a", "ops-b", "ops-c"] {
            t.expect(
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": name, "password": "audit-Kx7#pL4w-first"})),
                StatusCode::CREATED,
                "",
            )
            .await;
        }
        let v = t
            .expect(Method::GET, "/api/v1/audit-logs/verify", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["status"], "ok", "{v}");
        assert!(v["data"]["entries"].as_u64().unwrap() >= 3, "{v}");
        // The listing keeps its fields and shows each entry's link.
        let list = t
            .expect(
                Method::GET,
                "/api/v1/audit-logs?resource=user",
                None,
                StatusCode::OK,
                "",
            )
            .await;
        let newest = &list["data"]["entries"][0];
        assert_eq!(newest["prev_hash"].as_str().unwrap().len(), 64, "{newest}");
        let second = list["data"]["entries"][1]["id"].as_u64().unwrap();

        // Edit "ops-b created" in the stored journal: the entry after it breaks.
        let dir = t.state.store.data_dir().join("journal").join("audit_entries");
        for f in std::fs::read_dir(dir).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, text.replace("user ops-b created", "user ops-b looked at")).unwrap();
            }
        }
        let v = t
            .expect(Method::GET, "/api/v1/audit-logs/verify", None, StatusCode::OK, "")
            .await;
        assert_eq!(v["data"]["status"], "broken", "{v}");
        let b = &v["data"]["first_break"];
        assert!(b["id"].as_u64().unwrap() >= second, "{v}");
        assert_eq!(b["expected"].as_str().unwrap().len(), 64, "{v}");
        assert_ne!(b["expected"], b["found"], "{v}");
    }
}
