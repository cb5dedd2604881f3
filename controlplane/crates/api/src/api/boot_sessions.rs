//! The boot session routes ([`bootlane_sessions`]): `GET /boot-sessions` lists sessions
//! (filters: machine, host, state, verdict, time), `GET /boot-sessions/{id}` gives one
//! with its steps, `GET /boot-sessions/stream` streams each new step and each ended
//! session as server-sent events, and `GET /hosts/{id}/boot-sessions` lists a host's
//! recent sessions.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::{FromRef, State},
    response::sse::{Event as SseEvent, KeepAlive, Sse},
};
use futures::Stream;
use serde::Deserialize;
use time::{format_description::well_known::Rfc3339, OffsetDateTime};
use tokio::sync::broadcast::error::RecvError;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiPath, ApiQuery, Envelope},
    AppState,
};
use bootlane_boot::inventory::service::HostService;
use bootlane_sessions::{
    model::{BootSession, SessionState, SessionUpdate, Verdict},
    recorder::{Filter, Sessions},
};

impl FromRef<AppState> for Arc<Sessions> {
    fn from_ref(s: &AppState) -> Self {
        s.sessions.clone()
    }
}

/// The most sessions one list answers.
pub const MAX_LIMIT: usize = 500;

/// Query of `GET /boot-sessions`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionQuery {
    /// The machine's MAC (any case, colon form).
    pub mac: Option<String>,
    /// The registered host's name.
    pub host: Option<String>,
    /// `open` or `ended`.
    pub state: Option<SessionState>,
    /// `in_progress`, `handed_to_installer`, `installed`, `booted_local_disk` or `stalled`.
    pub verdict: Option<Verdict>,
    /// Sessions with a step at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Sessions started at or before this time (RFC 3339).
    pub until: Option<String>,
    /// At most this many (1-500, default 50).
    pub limit: Option<usize>,
}

fn when(name: &str, v: Option<&str>) -> Result<Option<OffsetDateTime>> {
    v.map(|v| {
        OffsetDateTime::parse(v, &Rfc3339)
            .map_err(|_| ApiError::BadRequest(format!("{name} must be an RFC 3339 time, e.g. 2026-11-29T12:00:00Z")))
    })
    .transpose()
}

fn limit(l: Option<usize>) -> Result<usize> {
    match l.unwrap_or(50) {
        n @ 1..=MAX_LIMIT => Ok(n),
        _ => Err(ApiError::BadRequest(format!("limit must be 1-{MAX_LIMIT}"))),
    }
}

async fn listed(s: Arc<Sessions>, f: Filter, n: usize) -> Result<Vec<BootSession>> {
    tokio::task::spawn_blocking(move || s.list(&f, n))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(e.into()))
}

/// Boot sessions, open ones first, then ended ones newest first; without their steps
/// (`step_count` gives how many).
#[utoipa::path(get, path = "/api/v1/boot-sessions", extensions(("x-bootlane-role" = json!("viewer"))), tag = "boot-sessions", params(SessionQuery),
    responses((status = 200, body = Vec<BootSession>), (status = 400, description = "A bad filter"), (status = 401)))]
pub async fn list(
    State(s): State<Arc<Sessions>>,
    ApiQuery(q): ApiQuery<SessionQuery>,
) -> Result<Envelope<Vec<BootSession>>> {
    let mac = mac_filter(q.mac)?;
    let f = Filter {
        mac,
        host: q.host,
        state: q.state,
        verdict: q.verdict,
        since: when("since", q.since.as_deref())?,
        until: when("until", q.until.as_deref())?,
    };
    Ok(Envelope::ok(listed(s, f, limit(q.limit)?).await?))
}

/// One boot session with its steps.
#[utoipa::path(get, path = "/api/v1/boot-sessions/{id}", extensions(("x-bootlane-role" = json!("viewer"))), tag = "boot-sessions",
    params(("id" = u64, Path, description = "Session id")),
    responses((status = 200, body = BootSession), (status = 404), (status = 401)))]
pub async fn one(State(s): State<Arc<Sessions>>, ApiPath(id): ApiPath<u64>) -> Result<Envelope<BootSession>> {
    tokio::task::spawn_blocking(move || s.get(id))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(e.into()))?
        .map(Envelope::ok)
        .ok_or_else(|| ApiError::NotFound(format!("no boot session {id}")))
}

/// Query of `GET /hosts/{id}/boot-sessions`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HostSessionQuery {
    /// At most this many (1-500, default 20).
    pub limit: Option<usize>,
}

/// A host's recent boot sessions (by its MAC), newest first, without their steps.
#[utoipa::path(get, path = "/api/v1/hosts/{id}/boot-sessions", extensions(("x-bootlane-role" = json!("viewer"))), tag = "boot-sessions",
    params(("id" = u64, Path, description = "Host id"), HostSessionQuery),
    responses((status = 200, body = Vec<BootSession>), (status = 404), (status = 401)))]
pub async fn for_host(
    State(s): State<Arc<Sessions>>,
    State(hosts): State<Arc<HostService>>,
    ApiPath(id): ApiPath<u64>,
    ApiQuery(q): ApiQuery<HostSessionQuery>,
) -> Result<Envelope<Vec<BootSession>>> {
    let host = hosts.get(id)?;
    let f = Filter {
        mac: Some(host.mac),
        ..Default::default()
    };
    Ok(Envelope::ok(listed(s, f, limit(Some(q.limit.unwrap_or(20)))?).await?))
}

/// Query of `GET /boot-sessions/stream`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Only this machine's sessions (MAC, any case, colon form).
    pub mac: Option<String>,
}

fn mac_filter(m: Option<String>) -> Result<Option<String>> {
    m.map(|m| {
        m.parse::<bootlane_core::net::types::MacAddr>()
            .map(|m| m.to_string())
            .map_err(|_| ApiError::BadRequest("mac must be a MAC address (aa:bb:cc:dd:ee:ff)".into()))
    })
    .transpose()
}

/// Each new step of a boot session and each session that ended, as server-sent events
/// named `session`, `data` a [`SessionUpdate`] as JSON; `lagged` when this subscriber
/// fell behind (re-read the list).
#[utoipa::path(get, path = "/api/v1/boot-sessions/stream", extensions(("x-bootlane-role" = json!("viewer"))), tag = "boot-sessions", params(StreamQuery),
    responses((status = 200, description = "An endless text/event-stream of `session` events (data: SessionUpdate)", content_type = "text/event-stream", body = SessionUpdate),
        (status = 400, description = "A bad MAC"), (status = 401)))]
pub async fn stream(
    State(s): State<Arc<Sessions>>,
    ApiQuery(q): ApiQuery<StreamQuery>,
) -> Result<Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>>> {
    let mac = mac_filter(q.mac)?;
    let rx = s.subscribe();
    let stream = futures::stream::unfold((rx, mac), |(mut rx, mac)| async move {
        loop {
            let e = match rx.recv().await {
                Ok(u) if mac.as_ref().is_some_and(|m| u.session.mac.as_ref() != Some(m)) => continue,
                Ok(u) => SseEvent::default()
                    .event("session")
                    .data(serde_json::to_string(&*u).unwrap_or_default()),
                Err(RecvError::Lagged(n)) => SseEvent::default().event("lagged").data(format!("{{\"skipped\":{n}}}")),
                Err(RecvError::Closed) => return None,
            };
            return Some((Ok(e), (rx, mac)));
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("heartbeat")))
}

/// The boot session routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(stream))
        .routes(routes!(one))
        .routes(routes!(for_host))
}
