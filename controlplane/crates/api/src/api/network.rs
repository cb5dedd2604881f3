//! Network diagnostics routes (spec "Network diagnostics") over [`NetDiag`]:
//! `POST /network/ping` and `POST /network/traceroute` answer the whole run in the
//! envelope; `POST /network/ping/stream` and `POST /network/traceroute/stream` answer
//! `text/event-stream` with one `reply` (ping) or `hop` (traceroute) event per line as it
//! happens, ending with one `summary` event (the same JSON as the plain answer's summary).
//! Bounds: at most 20 echo requests, 30 hops and 3 probes per hop; one run per user at a
//! time (409 while the previous one lasts). `GET /network/interfaces` lives with the other
//! interface listing in `settings_api.rs`.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::State,
    response::sse::{Event as SseEvent, KeepAlive, Sse},
};
use futures::Stream;
use serde::Serialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::Result,
    extract::{ApiJson, Envelope},
    AppState,
};
use bootlane_machines::netdiag::{
    join_error, ping_summary, trace_summary, NetDiag, PingRequest, PingResult, RunGuard, TraceEvent, TraceSummary,
    TracerouteRequest,
};

fn begin(diag: &NetDiag) -> Result<RunGuard> {
    Ok(diag.begin(&bootlane_core::events::current_actor().user)?)
}

/// Ping a host from the server and answer every reply line with the summary. Waits for
/// the whole run (count × interval, at most about 40 s with the largest bounds).
#[utoipa::path(post, path = "/api/v1/network/ping", extensions(("x-bootlane-role" = json!("operator"))), tag = "network", request_body = PingRequest,
    responses((status = 200, body = PingResult, description = "Reply lines and the summary; a run stopped early (no raw-socket permission) has `summary.error`"),
        (status = 400, description = "A bound or the target is invalid (named)"),
        (status = 409, description = "This user already has a run going"), (status = 401)))]
pub async fn ping(
    State(diag): State<Arc<NetDiag>>,
    ApiJson(req): ApiJson<PingRequest>,
) -> Result<Envelope<PingResult>> {
    let plan = diag.ping_plan(req).await?;
    let _guard = begin(&diag)?;
    Ok(Envelope::ok(diag.ping(plan).await))
}

/// Trace the route to a host and answer the hops with their statistics over all rounds.
#[utoipa::path(post, path = "/api/v1/network/traceroute", extensions(("x-bootlane-role" = json!("operator"))), tag = "network", request_body = TracerouteRequest,
    responses((status = 200, body = TraceSummary, description = "Hops up to the target; a run stopped early has `error`"),
        (status = 400, description = "A bound or the target is invalid (named)"),
        (status = 409, description = "This user already has a run going"), (status = 401)))]
pub async fn traceroute(
    State(diag): State<Arc<NetDiag>>,
    ApiJson(req): ApiJson<TracerouteRequest>,
) -> Result<Envelope<TraceSummary>> {
    let plan = diag.trace_plan(req).await?;
    let _guard = begin(&diag)?;
    Ok(Envelope::ok(diag.traceroute(plan).await))
}

/// Ping, streamed: one `reply` event per echo request (a `PingReply`), then one
/// `summary` event (a `PingSummary`). Closing the connection stops the run.
#[utoipa::path(post, path = "/api/v1/network/ping/stream", extensions(("x-bootlane-role" = json!("operator"))), tag = "network", request_body = PingRequest,
    responses((status = 200, content_type = "text/event-stream", body = String,
        description = "`event: reply` lines (PingReply JSON), then `event: summary` (PingSummary JSON)"),
        (status = 400, description = "A bound or the target is invalid (named)"),
        (status = 409, description = "This user already has a run going"), (status = 401)))]
pub async fn ping_stream(
    State(diag): State<Arc<NetDiag>>,
    ApiJson(req): ApiJson<PingRequest>,
) -> Result<Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>>> {
    let plan = diag.ping_plan(req).await?;
    let guard = begin(&diag)?;
    let (rx, task) = diag.start_ping(plan.clone());
    let stream = futures::stream::unfold(Some((rx, task, Vec::new(), guard)), move |st| {
        let plan = plan.clone();
        async move {
            let (mut rx, task, mut replies, guard) = st?;
            match rx.recv().await {
                Some(r) => {
                    let ev = sse("reply", &r);
                    replies.push(r);
                    Some((Ok(ev), Some((rx, task, replies, guard))))
                }
                None => {
                    let summary = ping_summary(&plan, &replies, join_error(task).await);
                    drop(guard);
                    Some((Ok(sse("summary", &summary)), None))
                }
            }
        }
    });
    Ok(keep_alive(stream))
}

/// Traceroute, streamed: one `hop` event per hop in TTL order (a `TraceHop`, sent when
/// the first round settles it), then one `summary` event (a `TraceSummary` with every
/// hop's statistics over all rounds).
#[utoipa::path(post, path = "/api/v1/network/traceroute/stream", extensions(("x-bootlane-role" = json!("operator"))), tag = "network", request_body = TracerouteRequest,
    responses((status = 200, content_type = "text/event-stream", body = String,
        description = "`event: hop` lines (TraceHop JSON), then `event: summary` (TraceSummary JSON)"),
        (status = 400, description = "A bound or the target is invalid (named)"),
        (status = 409, description = "This user already has a run going"), (status = 401)))]
pub async fn traceroute_stream(
    State(diag): State<Arc<NetDiag>>,
    ApiJson(req): ApiJson<TracerouteRequest>,
) -> Result<Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>>> {
    let plan = diag.trace_plan(req).await?;
    let guard = begin(&diag)?;
    let (rx, task) = diag.start_trace(plan.clone());
    let stream = futures::stream::unfold(Some((rx, task, Vec::new(), None, guard)), move |st| {
        let plan = plan.clone();
        async move {
            let (mut rx, task, mut settled, mut done, guard) = st?;
            loop {
                match rx.recv().await {
                    Some(TraceEvent::Hop(h)) => {
                        let ev = sse("hop", &h);
                        settled.push(h);
                        return Some((Ok(ev), Some((rx, task, settled, done, guard))));
                    }
                    Some(TraceEvent::Done(hops)) => done = Some(hops),
                    None => {
                        let summary = trace_summary(&plan, done.unwrap_or(settled), join_error(task).await);
                        drop(guard);
                        return Some((Ok(sse("summary", &summary)), None));
                    }
                }
            }
        }
    });
    Ok(keep_alive(stream))
}

fn sse<T: Serialize>(kind: &str, v: &T) -> SseEvent {
    SseEvent::default()
        .event(kind)
        .data(serde_json::to_string(v).unwrap_or_else(|_| "{}".into()))
}

fn keep_alive<S>(stream: S) -> Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>>
where
    S: Stream<Item = std::result::Result<SseEvent, Infallible>> + Send + 'static,
{
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("heartbeat"))
}

/// The network diagnostics routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(ping))
        .routes(routes!(ping_stream))
        .routes(routes!(traceroute))
        .routes(routes!(traceroute_stream))
}

#[cfg(test)]
mod tests {
    use std::{
        net::IpAddr,
        sync::{Arc, Mutex},
        time::Duration,
    };

    use axum::http::{Method, StatusCode};
    use futures::future::BoxFuture;
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::super::test_support::{setup, T};
    use bootlane_machines::netdiag::{PingPlan, PingReply, Prober, TraceEvent, TraceHop, TracePlan};

    /// Answers every echo request after `delay` (seq 1 times out), and a two-hop route;
    /// records the plans it was given.
    struct Fake {
        delay: Duration,
        plans: Mutex<Vec<IpAddr>>,
    }

    fn hop(ttl: u8, addr: &str, reached: bool) -> TraceHop {
        TraceHop {
            ttl,
            addresses: vec![addr.into()],
            sent: 1,
            received: 1,
            last_ms: Some(1.5),
            best_ms: Some(1.5),
            avg_ms: Some(1.5),
            reached,
        }
    }

    impl Prober for Fake {
        fn ping(&self, plan: PingPlan, tx: mpsc::Sender<PingReply>) -> BoxFuture<'static, Result<(), String>> {
            self.plans.lock().unwrap().push(plan.address);
            let delay = self.delay;
            Box::pin(async move {
                for seq in 0..plan.count {
                    tokio::time::sleep(delay).await;
                    let ok = seq != 1;
                    let r = PingReply {
                        seq,
                        status: if ok { "reply" } else { "timeout" }.into(),
                        from: ok.then(|| plan.address.to_string()),
                        bytes: ok.then_some(64),
                        ttl: ok.then_some(64),
                        rtt_ms: ok.then_some(f64::from(seq) + 1.0),
                        error: None,
                    };
                    if tx.send(r).await.is_err() {
                        return Ok(());
                    }
                }
                Ok(())
            })
        }

        fn traceroute(&self, plan: TracePlan, tx: mpsc::Sender<TraceEvent>) -> BoxFuture<'static, Result<(), String>> {
            self.plans.lock().unwrap().push(plan.address);
            Box::pin(async move {
                let target = plan.address.to_string();
                for h in [hop(1, "192.0.2.1", false), hop(2, &target, true)] {
                    let _ = tx.send(TraceEvent::Hop(h)).await;
                }
                let _ = tx
                    .send(TraceEvent::Done(vec![
                        hop(1, "192.0.2.1", false),
                        hop(2, &target, true),
                        hop(3, &target, true),
                    ]))
                    .await;
                Ok(())
            })
        }
    }

    /// `(event, data as JSON)` of each message of a whole SSE body.
    fn parse_sse(body: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
        let text = body.as_str().expect("an SSE body is text");
        text.split("\n\n")
            .filter_map(|m| {
                let field = |f: &str| m.lines().find_map(|l| l.strip_prefix(f)).map(str::trim);
                Some((
                    field("event:")?.to_string(),
                    serde_json::from_str(field("data:")?).ok()?,
                ))
            })
            .collect()
    }

    async fn client(delay_ms: u64) -> (T, Arc<Fake>) {
        let mut t = setup().await;
        t.login().await;
        let fake = Arc::new(Fake {
            delay: Duration::from_millis(delay_ms),
            plans: Mutex::new(Vec::new()),
        });
        t.state.netdiag.set_prober(fake.clone());
        (t, fake)
    }

    #[tokio::test]
    async fn ping_answers_lines_and_summary() {
        let (t, fake) = client(0).await;
        let v = t
            .expect(
                Method::POST,
                "/api/v1/network/ping",
                Some(json!({"target": "192.0.2.9", "count": 3, "interval_ms": 100})),
                StatusCode::OK,
                "",
            )
            .await;
        let d = &v["data"];
        assert_eq!(d["replies"].as_array().unwrap().len(), 3);
        assert_eq!(d["replies"][1]["status"], "timeout");
        let s = &d["summary"];
        assert_eq!((s["sent"].as_u64(), s["received"].as_u64()), (Some(3), Some(2)));
        assert_eq!((s["min_ms"].as_f64(), s["max_ms"].as_f64()), (Some(1.0), Some(3.0)));
        assert_eq!(s["address"], "192.0.2.9");
        assert_eq!(
            fake.plans.lock().unwrap().as_slice(),
            &["192.0.2.9".parse::<IpAddr>().unwrap()]
        );
    }

    #[tokio::test]
    async fn bad_targets_and_bounds_are_400_and_nothing_is_sent() {
        let (t, fake) = client(0).await;
        for (body, needle) in [
            (json!({"target": "224.0.0.5"}), "multicast"),
            (json!({"target": "255.255.255.255"}), "broadcast"),
            (json!({"target": "0.0.0.0"}), "unspecified"),
            (json!({"target": "192.0.2.1", "count": 21}), "'count' must be 1-20"),
            (json!({"target": "192.0.2.1", "timeout_ms": 50}), "'timeout_ms'"),
            (json!({"target": ""}), "'target'"),
            (json!({"target": "no such name!"}), "'target'"),
            (json!({"count": 1}), "target"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/network/ping",
                Some(body.clone()),
                StatusCode::BAD_REQUEST,
                needle,
            )
            .await;
            t.expect(
                Method::POST,
                "/api/v1/network/ping/stream",
                Some(body),
                StatusCode::BAD_REQUEST,
                needle,
            )
            .await;
        }
        for (body, needle) in [
            (
                json!({"target": "192.0.2.1", "max_hops": 31}),
                "'max_hops' must be 1-30",
            ),
            (json!({"target": "192.0.2.1", "queries": 4}), "'queries' must be 1-3"),
            (json!({"target": "ff02::1"}), "multicast"),
        ] {
            t.expect(
                Method::POST,
                "/api/v1/network/traceroute",
                Some(body),
                StatusCode::BAD_REQUEST,
                needle,
            )
            .await;
        }
        assert!(fake.plans.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_ping_stream_sends_a_line_per_reply_then_the_summary() {
        let (t, _) = client(0).await;
        let (status, _, body) = t
            .call(
                Method::POST,
                "/api/v1/network/ping/stream",
                Some(json!({"target": "127.0.0.1", "count": 4, "interval_ms": 100})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let events = parse_sse(&body);
        let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["reply", "reply", "reply", "reply", "summary"], "{body}");
        assert_eq!(events[2].1["seq"], 2);
        assert_eq!(events[4].1["received"], 3);
        assert_eq!(events[4].1["loss_pct"], 25.0);
    }

    #[tokio::test]
    async fn the_traceroute_stream_sends_hops_then_the_summary() {
        let (t, _) = client(0).await;
        let (status, _, body) = t
            .call(
                Method::POST,
                "/api/v1/network/traceroute/stream",
                Some(json!({"target": "192.0.2.77"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let events = parse_sse(&body);
        let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["hop", "hop", "summary"], "{body}");
        assert_eq!(events[1].1["addresses"], json!(["192.0.2.77"]));
        let s = &events[2].1;
        assert_eq!(s["reached"], true);
        // Cut after the first hop where the target answered.
        assert_eq!(s["hops"].as_array().unwrap().len(), 2);
        let v = t
            .expect(
                Method::POST,
                "/api/v1/network/traceroute",
                Some(json!({"target": "192.0.2.77", "max_hops": 5})),
                StatusCode::OK,
                "",
            )
            .await;
        assert_eq!(v["data"]["hops"][1]["reached"], true);
    }

    #[tokio::test]
    async fn one_run_per_user_at_a_time() {
        let (t, _) = client(150).await;
        let t = Arc::new(t);
        let t2 = t.clone();
        let first = tokio::spawn(async move {
            t2.expect(
                Method::POST,
                "/api/v1/network/ping",
                Some(json!({"target": "192.0.2.1", "count": 3, "interval_ms": 100})),
                StatusCode::OK,
                "",
            )
            .await
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        t.expect(
            Method::POST,
            "/api/v1/network/traceroute",
            Some(json!({"target": "192.0.2.1"})),
            StatusCode::CONFLICT,
            "already has a ping or traceroute running",
        )
        .await;
        first.await.unwrap();
        // Free again once the first run ended.
        t.expect(
            Method::POST,
            "/api/v1/network/ping",
            Some(json!({"target": "192.0.2.1", "count": 1})),
            StatusCode::OK,
            "",
        )
        .await;
    }

    #[tokio::test]
    async fn diagnostics_need_a_session() {
        let t = setup().await;
        t.expect(
            Method::POST,
            "/api/v1/network/ping",
            Some(json!({"target": "127.0.0.1"})),
            StatusCode::UNAUTHORIZED,
            "",
        )
        .await;
    }
}
