//! Domain events and the audit log derived from them.
//!
//! One [`EventBus`] per process carries every notable happening as a typed [`Event`]:
//! API writes (each service publishes its own), logins, DHCP leases, TFTP transfers,
//! iPXE scripts and boot files served, XDP and service state changes, settings changes.
//! Publishing is synchronous and never blocks: the event gets the next id (monotonic,
//! never reused: ids come from the store's id generator), goes into an in-memory ring of
//! recent events and onto a `tokio::sync::broadcast` channel for live subscribers (SSE),
//! and is queued for a background writer that appends events in batches (one `fdatasync`
//! per batch) to the store's `events` journal and copies write events into the
//! `audit_entries` journal ([`crate::store::journal`]: append-only segment files beside the database, so
//! memory does not grow with the history). A slow subscriber lags (the broadcast channel
//! drops its oldest unread events and the subscriber is told how many) but never slows a
//! writer, the DNS path or the DHCP path.
//!
//! Kinds and shapes: a publisher names its event's kind with an [`EventKind`] variant
//! (`events/kind.rs`); the event keeps the dotted wire name as a string, so an event of a
//! kind this version does not know, relayed by a newer node, passes through unchanged. Every
//! kind's `data` has a type ([`EventData`], `events/data.rs` and its submodules by domain)
//! given to [`NewEvent::with`]; writes carry [`Write`] (`{action, before, after}`, built by
//! [`NewEvent::write`]) and kinds without data ([`NoData`]) are published with
//! [`NewEvent::new`] alone. Publishers cannot set untyped JSON.
//!
//! Who did it: the API's session layer runs each request inside [`with_actor`], and
//! [`EventBus::publish`] reads that task-local [`Actor`] (user name and client address),
//! so services need not pass the caller around; outside a request the actor is `system`.
//!
//! Retention is bounded by count and age for events and, separately, for the audit log
//! (`[events]` keys, see [`EventsConfig`]).
//!
//! The audit log is tamper-evident ([`crate::audit`]): the writer links each audit
//! entry to the one before it (`prev_hash`, a SHA-256 hash chain) as it stores it,
//! records a signed anchor before retention deletes entries, and with `[audit] syslog`
//! copies each stored entry to the local syslog socket. [`EventBus::verify_audit`]
//! checks the chain. Global state: none (the bus is owned by the app and handed to the
//! services that publish).

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::{broadcast, mpsc, watch};
use utoipa::ToSchema;

use crate::{
    audit::AuditConfig,
    store::{journal::Journal, Store, StoreError, Table},
};

mod data;
mod kind;

pub use data::*;
pub use kind::EventKind;

/// `[events]`: retention of the event history and of the audit log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EventsConfig {
    /// Most events kept.
    pub retention_count: usize,
    /// Events older than this are removed.
    pub retention_days: u32,
    /// Most audit entries kept.
    pub audit_retention_count: usize,
    /// Audit entries older than this are removed (the last removed one is recorded in the
    /// signed anchor).
    pub audit_retention_days: u32,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            retention_count: 100_000,
            retention_days: 30,
            audit_retention_count: 100_000,
            audit_retention_days: 365,
        }
    }
}

impl EventsConfig {
    /// Checks the values (counts at least 1, days 1-36500).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.retention_count == 0 || self.audit_retention_count == 0 {
            anyhow::bail!("[events] retention_count and audit_retention_count must be at least 1");
        }
        if !(1..=36_500).contains(&self.retention_days) || !(1..=36_500).contains(&self.audit_retention_days) {
            anyhow::bail!("[events] retention_days and audit_retention_days must be 1-36500");
        }
        Ok(())
    }
}

/// One event. `kind` is dotted (`dns.record.created`); the book's events chapter lists every
/// kind with its `data`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Event {
    /// Monotonic id, never reused (also the SSE `id:`).
    pub id: u64,
    /// When it happened, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub time: OffsetDateTime,
    /// Dotted kind, e.g. `dhcp.lease.granted`.
    pub kind: String,
    /// Resource kind it concerns (`dns_record`, `host`, `lease`, `service`, ...), if any.
    pub resource: Option<String>,
    /// Resource id (record id, MAC, service name, ...), if any.
    pub resource_id: Option<String>,
    /// User name for API actions, `system` for everything the server does on its own.
    pub actor: String,
    /// The name of the API token the action came with (its owner is `actor`); absent for
    /// sessions and for the server's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Client address of the API request, or the network client (DHCP/TFTP/HTTP boot).
    pub remote_addr: Option<String>,
    /// One human sentence.
    pub summary: String,
    /// Kind-specific details (for writes: `action`, `before`, `after`).
    #[schema(value_type = Value)]
    pub data: serde_json::Value,
    /// The node that published it (`[server] node_name`); empty for events stored
    /// before nodes had names.
    #[serde(default)]
    pub node: String,
}

crate::store::entity!(Event, "events");

pub use crate::audit::AuditEntry;

/// Who caused an event: set for the duration of an API request by [`with_actor`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Actor {
    /// User name (for an API token, the token's owner).
    pub user: String,
    /// Client address (`ip:port` or `ip`).
    pub remote_addr: Option<String>,
    /// The name of the API token the request carried, if it came with one rather than a
    /// session.
    pub token: Option<String>,
}

tokio::task_local! {
    static ACTOR: Actor;
}

/// Runs `fut` with `actor` as the actor of every event it publishes (task-local, so it
/// follows the request's own task, not tasks it spawns).
pub async fn with_actor<F: std::future::Future>(actor: Actor, fut: F) -> F::Output {
    ACTOR.scope(actor, fut).await
}

/// The actor of the current task: the API caller inside [`with_actor`], else `system`.
pub fn current_actor() -> Actor {
    ACTOR.try_with(Clone::clone).unwrap_or_else(|_| Actor {
        user: "system".into(),
        remote_addr: None,
        token: None,
    })
}

/// What a publisher provides; the bus fills in id, time and (unless set) the actor.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// The kind (stored as its dotted wire name).
    pub kind: EventKind,
    /// Resource kind.
    pub resource: Option<String>,
    /// Resource id.
    pub resource_id: Option<String>,
    /// One sentence.
    pub summary: String,
    /// Details, set from the kind's [`EventData`] shape ([`NewEvent::with`],
    /// [`NewEvent::write`]); `null` until then.
    data: serde_json::Value,
    /// Network client for events caused by a client rather than an API user.
    pub remote_addr: Option<String>,
}

impl NewEvent {
    /// An event of `kind` with a summary; add the rest with the builder methods.
    pub fn new(kind: EventKind, summary: impl Into<String>) -> Self {
        Self {
            kind,
            resource: None,
            resource_id: None,
            summary: summary.into(),
            data: serde_json::Value::Null,
            remote_addr: None,
        }
    }

    /// Sets the resource kind and id.
    pub fn resource(mut self, kind: impl Into<String>, id: impl ToString) -> Self {
        self.resource = Some(kind.into());
        self.resource_id = Some(id.to_string());
        self
    }

    /// Sets `data` from its typed shape (see [`EventData`]), the only way to set it; in
    /// debug builds, panics when `D` is not a shape of this event's kind.
    pub fn with<D: EventData>(mut self, data: &D) -> Self {
        debug_assert!(
            D::KINDS.contains(&self.kind),
            "{} does not carry {}",
            self.kind,
            std::any::type_name::<D>()
        );
        self.data = serde_json::to_value(data).unwrap_or_default();
        self
    }

    /// Sets the network client's address.
    pub fn remote(mut self, addr: impl ToString) -> Self {
        self.remote_addr = Some(addr.to_string());
        self
    }

    /// A write of `resource` `id` (`action` is `create`/`update`/`delete`/...): `data` is
    /// [`Write`] (`action`, `before` and `after`, `null` for a missing one), and the event is
    /// copied into the audit log. In debug builds, panics when `kind` is not a write kind
    /// ([`Write::KINDS`]).
    pub fn write<B: Serialize, A: Serialize>(
        kind: EventKind,
        resource: &str,
        id: impl ToString,
        action: &str,
        summary: impl Into<String>,
        before: Option<&B>,
        after: Option<&A>,
    ) -> Self {
        let j = |v: Option<serde_json::Value>| v.unwrap_or(serde_json::Value::Null);
        Self::new(kind, summary).resource(resource, id).with(&Write {
            action: action.to_string(),
            before: j(before.and_then(|b| serde_json::to_value(b).ok())),
            after: j(after.and_then(|a| serde_json::to_value(a).ok())),
        })
    }
}

/// How many recent events stay in memory for gap-free SSE resumption and fast reads.
const RING: usize = 4096;
/// Capacity of each live subscriber's queue before it lags.
const SUBSCRIBER_QUEUE: usize = 1024;
/// Events waiting for the writer before new ones are kept only in memory.
const PERSIST_QUEUE: usize = 65_536;

struct Inner {
    ring: VecDeque<Arc<Event>>,
    last_id: u64,
    node: String,
}

/// The event bus. Cheap to share as `Arc<EventBus>`.
pub struct EventBus {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
    persist: Option<mpsc::Sender<Arc<Event>>>,
    persisted: watch::Receiver<u64>,
    store: Option<Store>,
    events: Option<Journal<Event>>,
    audit: Option<Journal<AuditEntry>>,
    /// The data directory holding the audit anchor and its key (`None` in memory).
    data_dir: Option<std::path::PathBuf>,
    dropped: AtomicU64,
    /// Where this node's own events go to reach the other nodes (see
    /// [`EventBus::relay_to`]).
    relay: std::sync::OnceLock<mpsc::Sender<Arc<Event>>>,
}

/// A live subscription: the recent events at the moment of subscribing (for replay) and
/// the receiver of everything published after them, with no gap and no overlap.
pub struct Subscription {
    /// Recent events (ascending ids) known when the subscription started.
    pub recent: Vec<Arc<Event>>,
    /// Events published afterwards.
    pub rx: broadcast::Receiver<Arc<Event>>,
}

impl EventBus {
    /// A bus persisting into `store`'s `events` and `audit_entries` journals, with a background
    /// writer that applies `config`'s retention. History kept in the sled trees `events`
    /// and `audit_entries` by earlier versions is moved into the journals first. Must be
    /// called inside a tokio runtime.
    ///
    /// # Errors
    /// Store errors opening the journals or moving the old history.
    pub fn open(store: &Store, config: EventsConfig) -> Result<Arc<Self>, StoreError> {
        Self::open_with_audit(store, config, AuditConfig::default())
    }

    /// [`EventBus::open`] with the `[audit]` settings (the syslog copy).
    ///
    /// # Errors
    /// Store errors opening the journals or moving the old history.
    pub fn open_with_audit(
        store: &Store,
        config: EventsConfig,
        audit_config: AuditConfig,
    ) -> Result<Arc<Self>, StoreError> {
        let events: Journal<Event> = store.journal(|e: &Event| e.time)?;
        let audit: Journal<AuditEntry> = store.journal(|a: &AuditEntry| a.timestamp)?;
        adopt_sled_history(store, &events)?;
        adopt_sled_history(store, &audit)?;
        let last = events.last_id();
        let (ptx, prx) = mpsc::channel(PERSIST_QUEUE);
        let (wtx, wrx) = watch::channel(last);
        let mut bus = Self::build(
            Some(ptx),
            wrx,
            Some(store.clone()),
            Some(events.clone()),
            Some(audit.clone()),
            last,
        );
        let data_dir = store.data_dir().to_path_buf();
        bus.data_dir = Some(data_dir.clone());
        let bus = Arc::new(bus);
        let ctx = AuditWriter {
            journal: audit,
            data_dir,
            config: audit_config,
            bus: Arc::downgrade(&bus),
        };
        tokio::spawn(writer(prx, wtx, events, ctx, config));
        Ok(bus)
    }

    /// A bus that keeps events in memory only (for handler tests that do not care).
    pub fn in_memory() -> Arc<Self> {
        let (_wtx, wrx) = watch::channel(0);
        Arc::new(Self::build(None, wrx, None, None, None, 0))
    }

    fn build(
        persist: Option<mpsc::Sender<Arc<Event>>>,
        persisted: watch::Receiver<u64>,
        store: Option<Store>,
        events: Option<Journal<Event>>,
        audit: Option<Journal<AuditEntry>>,
        last_id: u64,
    ) -> Self {
        Self {
            inner: Mutex::new(Inner {
                ring: VecDeque::with_capacity(RING),
                last_id,
                node: crate::net::types::default_node_name(),
            }),
            tx: broadcast::channel(SUBSCRIBER_QUEUE).0,
            persist,
            persisted,
            store,
            events,
            audit,
            data_dir: None,
            dropped: AtomicU64::new(0),
            relay: std::sync::OnceLock::new(),
        }
    }

    /// Publishes one event and returns it. Never blocks and never fails: a store problem
    /// is logged by the writer, and the event still reaches live subscribers.
    pub fn publish(&self, e: NewEvent) -> Arc<Event> {
        let actor = current_actor();
        let mut g = self.inner.lock().expect("event bus lock");
        // Ids come from the store's persistent generator (unique across restarts) and are
        // forced above the last one so the order of ids is the order of publication.
        let id = self.next_id(&g);
        g.last_id = id;
        let ev = Arc::new(Event {
            id,
            time: OffsetDateTime::now_utc(),
            kind: e.kind.as_str().to_string(),
            resource: e.resource,
            resource_id: e.resource_id,
            actor: actor.user,
            token: actor.token,
            remote_addr: e.remote_addr.or(actor.remote_addr),
            summary: e.summary,
            data: e.data,
            node: g.node.clone(),
        });
        self.deliver(g, ev.clone());
        if let Some(r) = self.relay.get() {
            // Other nodes hear of it when the relay keeps up; it never holds this up.
            let _ = r.try_send(ev.clone());
        }
        metrics::counter!("bootlane_events_published_total").increment(1);
        tracing::debug!(id = ev.id, kind = %ev.kind, "{}", ev.summary);
        ev
    }

    /// Takes in an event another node published: it gets an id of this node's (ids are
    /// per node) and keeps its time, node, actor and data; it reaches live subscribers
    /// and the journals like this node's own, and is not relayed again.
    pub fn ingest(&self, mut ev: Event) {
        let mut g = self.inner.lock().expect("event bus lock");
        ev.id = self.next_id(&g);
        g.last_id = ev.id;
        self.deliver(g, Arc::new(ev));
        metrics::counter!("bootlane_events_received_total").increment(1);
    }

    /// Sends this node's events published from now on into `tx` (the cluster relay; set
    /// once, later calls are ignored).
    pub fn relay_to(&self, tx: mpsc::Sender<Arc<Event>>) {
        let _ = self.relay.set(tx);
    }

    /// The next event id: from the store's persistent generator (unique across restarts),
    /// forced above the last one so the order of ids is the order of publication.
    fn next_id(&self, g: &Inner) -> u64 {
        self.store
            .as_ref()
            .and_then(|s| s.next_id().ok())
            .unwrap_or(0)
            .max(g.last_id + 1)
    }

    /// Puts `ev` in the ring, sends it to live subscribers and queues it for the journals.
    fn deliver(&self, mut g: std::sync::MutexGuard<'_, Inner>, ev: Arc<Event>) {
        if g.ring.len() == RING {
            g.ring.pop_front();
        }
        g.ring.push_back(ev.clone());
        // No receivers is not an error.
        let _ = self.tx.send(ev.clone());
        drop(g);
        if let Some(p) = &self.persist {
            if p.try_send(ev.clone()).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(id = ev.id, kind = %ev.kind, "event writer is behind; event kept in memory only");
            }
        }
    }

    /// Names the node every event published from now on carries (`[server] node_name`;
    /// until it is called, the machine's host name).
    pub fn set_node(&self, node: &str) {
        self.inner.lock().expect("event bus lock").node = node.to_string();
    }

    /// The node name events are published with.
    pub fn node(&self) -> String {
        self.inner.lock().expect("event bus lock").node.clone()
    }

    /// Subscribes: the recent events plus everything published from now on.
    pub fn subscribe(&self) -> Subscription {
        let g = self.inner.lock().expect("event bus lock");
        let rx = self.tx.subscribe();
        let recent = g.ring.iter().cloned().collect();
        drop(g);
        metrics::gauge!("bootlane_event_subscribers").set(self.tx.receiver_count() as f64);
        Subscription { recent, rx }
    }

    /// Live subscribers now.
    pub fn subscribers(&self) -> usize {
        self.tx.receiver_count()
    }

    /// The id of the last event published (0 when none).
    pub fn last_id(&self) -> u64 {
        self.inner.lock().expect("event bus lock").last_id
    }

    /// Waits (at most 2 s) until every event published so far is in the store, so a read
    /// right after a write sees it.
    pub async fn settle(&self) {
        let target = self.last_id();
        let mut rx = self.persisted.clone();
        if self.persist.is_none() {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_secs(2), rx.wait_for(|v| *v >= target)).await;
    }

    /// Stored events with an id above `after`, ascending, at most `limit`; falls back to
    /// the in-memory ring for a bus without a store. Reads journal files (blocking, usually
    /// from the page cache).
    ///
    /// # Errors
    /// Store errors.
    pub fn after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        match &self.events {
            Some(t) => t.after(after, limit),
            None => Ok(self
                .inner
                .lock()
                .expect("event bus lock")
                .ring
                .iter()
                .filter(|e| e.id > after)
                .take(limit)
                .map(|e| (**e).clone())
                .collect()),
        }
    }

    /// Stored events, newest first (the ring for a bus without a store), decoded one
    /// journal segment at a time.
    pub fn newest_first(&self) -> Box<dyn Iterator<Item = Result<Event, StoreError>> + '_> {
        match &self.events {
            Some(t) => Box::new(t.newest_first()),
            None => {
                let v: Vec<Event> = self
                    .inner
                    .lock()
                    .expect("event bus lock")
                    .ring
                    .iter()
                    .rev()
                    .map(|e| (**e).clone())
                    .collect();
                Box::new(v.into_iter().map(Ok))
            }
        }
    }

    /// Audit entries, newest first (empty for a bus without a store).
    pub fn audit_newest_first(&self) -> Box<dyn Iterator<Item = Result<AuditEntry, StoreError>> + '_> {
        match &self.audit {
            Some(t) => Box::new(t.newest_first()),
            None => Box::new(std::iter::empty()),
        }
    }

    /// Verifies the audit log's hash chain from its anchor (see [`crate::audit::verify`]);
    /// waits for queued entries first. Reads every stored entry, on the blocking pool.
    /// A bus without a store has nothing to verify (`ok`, no entries).
    ///
    /// # Errors
    /// Journal, anchor or key files that cannot be read.
    pub async fn verify_audit(&self) -> Result<crate::audit::Verification, crate::audit::AuditError> {
        self.settle().await;
        let (Some(journal), Some(dir)) = (self.audit.clone(), self.data_dir.clone()) else {
            return crate::audit::verify(std::path::Path::new("/nonexistent"), std::iter::empty());
        };
        tokio::task::spawn_blocking(move || crate::audit::verify(&dir, journal.ascending(0)))
            .await
            .map_err(|e| crate::audit::AuditError::Invalid(format!("verification task failed: {e}")))?
    }

    /// Events that could not be queued for the store since start.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The audit entry for a write event (one whose `data.action` is set), else `None`.
pub fn audit_entry(e: &Event) -> Option<AuditEntry> {
    let action = e.data.get("action")?.as_str()?.to_string();
    Some(AuditEntry {
        id: e.id,
        timestamp: e.time,
        user: e.actor.clone(),
        token: e.token.clone(),
        remote_addr: e.remote_addr.clone(),
        action,
        resource: e.resource.clone().unwrap_or_default(),
        resource_id: e.resource_id.clone().unwrap_or_default(),
        kind: e.kind.clone(),
        summary: e.summary.clone(),
        before: e.data.get("before").cloned().unwrap_or_default(),
        after: e.data.get("after").cloned().unwrap_or_default(),
        prev_hash: None,
    })
}

/// Moves history an earlier version kept in `T`'s sled tree into `journal` (once: the
/// tree is emptied afterwards), so an upgrade keeps the event history and audit log.
fn adopt_sled_history<T: crate::store::Entity>(store: &Store, journal: &Journal<T>) -> Result<(), StoreError> {
    let old: Table<T> = store.table()?;
    if old.is_empty() {
        return Ok(());
    }
    let values = old.list()?;
    journal.append(&values)?;
    let n = old.clear()?;
    tracing::info!("moved {n} values of the sled tree {:?} into the journal", T::TREE);
    Ok(())
}

/// What the writer needs for the audit journal: the journal, the data directory of its
/// anchor, the `[audit]` settings and the bus (for its node name, the syslog HOSTNAME;
/// weak, so the writer does not keep the bus alive).
struct AuditWriter {
    journal: Journal<AuditEntry>,
    data_dir: std::path::PathBuf,
    config: AuditConfig,
    bus: std::sync::Weak<EventBus>,
}

impl AuditWriter {
    /// The chain's head from the newest stored entry and the anchor.
    fn head(&self) -> Option<String> {
        let newest = self.journal.newest_first().next().and_then(Result::ok);
        let anchor = crate::audit::read_anchor(&self.data_dir).ok().flatten().map(|(a, _)| a);
        crate::audit::head(newest.as_ref(), anchor.as_ref())
    }

    /// Retention of the audit log: the anchor of what goes is written (and synced)
    /// before anything is deleted; if it cannot be, nothing is pruned this time.
    fn prune(&self, count: usize, max_age: time::Duration) {
        let run = || -> Result<usize, crate::audit::AuditError> {
            let floor = self.journal.prune_floor(count, max_age)?;
            if floor <= self.journal.floor() {
                return Ok(0);
            }
            if let Some(last) = self.journal.value_before(floor)? {
                crate::audit::write_anchor(&self.data_dir, &last)?;
            }
            Ok(self.journal.retire_below(floor)?)
        };
        if let Err(e) = run() {
            tracing::error!("pruning old audit entries failed: {e}");
        }
    }
}

/// The background writer: appends batches of events to the journal, derives audit
/// entries (linked into the hash chain, copied to syslog when enabled), and applies
/// retention at start and about once a minute. File work runs on the blocking pool.
async fn writer(
    mut rx: mpsc::Receiver<Arc<Event>>,
    persisted: watch::Sender<u64>,
    events: Journal<Event>,
    audit: AuditWriter,
    config: EventsConfig,
) {
    let audit = Arc::new(audit);
    let retain = move |events: Journal<Event>, audit: Arc<AuditWriter>| {
        let days = |d: u32| time::Duration::days(i64::from(d));
        if let Err(e) = events.prune(config.retention_count, days(config.retention_days)) {
            tracing::error!("pruning old events failed: {e}");
        }
        audit.prune(config.audit_retention_count, days(config.audit_retention_days));
    };
    let (e, a) = (events.clone(), audit.clone());
    let _ = tokio::task::spawn_blocking(move || retain(e, a)).await;
    let a = audit.clone();
    let mut head = tokio::task::spawn_blocking(move || a.head()).await.unwrap_or(None);
    let mut last_prune = tokio::time::Instant::now();
    let mut buf = Vec::with_capacity(512);
    while rx.recv_many(&mut buf, 512).await > 0 {
        let batch: Vec<Event> = buf.drain(..).map(|e| (*e).clone()).collect();
        let last = batch.last().map(|e| e.id);
        let (e, a) = (events.clone(), audit.clone());
        let h = head.clone();
        head = tokio::task::spawn_blocking(move || {
            let mut audits: Vec<AuditEntry> = batch.iter().filter_map(audit_entry).collect();
            if let Err(err) = e.append(&batch) {
                tracing::error!("storing {} events failed: {err}", batch.len());
            }
            if audits.is_empty() {
                return h;
            }
            let mut next = h;
            crate::audit::link(&mut audits, &mut next);
            match a.journal.append(&audits) {
                Ok(()) if audits.last().is_some_and(|n| n.id != a.journal.last_id()) => {
                    // The journal skipped entries with stale ids: go on from what it holds.
                    tracing::error!("audit entries with ids below the stored ones were not stored");
                    a.head()
                }
                Ok(()) => {
                    if let Some(newest) = audits.last() {
                        if let Err(err) = crate::audit::write_head(&a.data_dir, newest) {
                            tracing::error!("recording the newest audit entry failed: {err}");
                        }
                    }
                    if a.config.syslog {
                        let node = a.bus.upgrade().map(|b| b.node()).unwrap_or_default();
                        crate::audit::send_to_syslog(&a.config, &node, &audits);
                    }
                    next
                }
                Err(err) => {
                    tracing::error!("storing {} audit entries failed: {err}", audits.len());
                    // The chain goes on from what is stored.
                    a.head()
                }
            }
        })
        .await
        .unwrap_or(None);
        if let Some(last) = last {
            persisted.send_replace(last);
        }
        if last_prune.elapsed() >= Duration::from_secs(60) {
            last_prune = tokio::time::Instant::now();
            let (e, a) = (events.clone(), audit.clone());
            let _ = tokio::task::spawn_blocking(move || retain(e, a)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ids_increase_and_survive_a_restart() {
        let store = Store::temporary();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        let a = bus.publish(NewEvent::new(EventKind::ServiceStopped, "a"));
        let b = bus.publish(NewEvent::new(EventKind::ServiceStopped, "b"));
        assert!(b.id > a.id);
        bus.settle().await;
        assert_eq!(bus.after(0, 10).unwrap().len(), 2);
        let bus2 = EventBus::open(&store, EventsConfig::default()).unwrap();
        let c = bus2.publish(NewEvent::new(EventKind::ServiceStopped, "c"));
        assert!(c.id > b.id, "ids are never reused across restarts");
    }

    #[tokio::test]
    async fn actor_comes_from_the_request_scope() {
        let bus = EventBus::in_memory();
        let e = bus.publish(NewEvent::new(EventKind::ServiceStopped, "outside"));
        assert_eq!(e.actor, "system");
        let actor = Actor {
            user: "alice".into(),
            remote_addr: Some("10.0.0.9".into()),
            token: None,
        };
        let e = with_actor(actor, async {
            bus.publish(NewEvent::new(EventKind::ServiceStopped, "inside"))
        })
        .await;
        assert_eq!(e.actor, "alice");
        assert_eq!(e.remote_addr.as_deref(), Some("10.0.0.9"));
        assert_eq!(e.token, None);
        assert!(serde_json::to_value(&*e).unwrap().get("token").is_none());
    }

    #[tokio::test]
    async fn subscription_has_no_gap_and_no_overlap() {
        let bus = EventBus::in_memory();
        bus.publish(NewEvent::new(EventKind::ServiceStopped, "1"));
        let mut sub = bus.subscribe();
        bus.publish(NewEvent::new(EventKind::ServiceStopped, "2"));
        assert_eq!(sub.recent.len(), 1);
        let next = sub.rx.recv().await.unwrap();
        assert_eq!(next.summary, "2");
        assert!(next.id > sub.recent[0].id);
    }

    #[tokio::test]
    async fn a_slow_subscriber_lags_but_never_blocks_the_publisher() {
        let bus = EventBus::in_memory();
        let mut sub = bus.subscribe();
        for i in 0..(SUBSCRIBER_QUEUE + 10) {
            bus.publish(NewEvent::new(EventKind::ServiceStopped, i.to_string()));
        }
        match sub.rx.recv().await {
            Err(broadcast::error::RecvError::Lagged(n)) => assert_eq!(n, 10),
            other => panic!("expected a lag, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn writes_become_audit_entries_and_retention_applies() {
        let store = Store::temporary();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        let actor = Actor {
            user: "bob".into(),
            remote_addr: Some("192.0.2.1".into()),
            token: Some("ci-deploy".into()),
        };
        with_actor(actor, async {
            bus.publish(NewEvent::write(
                EventKind::HostCreated,
                "host",
                7,
                "create",
                "host pc7 created",
                None::<&()>,
                Some(&serde_json::json!({"name": "pc7"})),
            ));
        })
        .await;
        bus.publish(NewEvent::new(EventKind::DhcpLeaseGranted, "not a write"));
        bus.settle().await;
        let audit: Vec<AuditEntry> = bus.audit_newest_first().map(Result::unwrap).collect();
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].user, "bob");
        assert_eq!(
            audit[0].token.as_deref(),
            Some("ci-deploy"),
            "the audit entry names the token"
        );
        assert_eq!(audit[0].action, "create");
        assert_eq!(audit[0].resource_id, "7");
        assert_eq!(audit[0].after["name"], "pc7");

        let t = bus.events.clone().unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.prune(1, time::Duration::days(30)).unwrap(), 1);
        assert_eq!(t.len(), 1);
        assert_eq!(bus.after(0, 10).unwrap()[0].kind, "dhcp.lease.granted");
    }

    #[tokio::test]
    async fn history_in_the_old_sled_trees_moves_into_the_journals() {
        let store = Store::temporary();
        let old: Table<Event> = store.table().unwrap();
        let mut e = (*EventBus::in_memory().publish(NewEvent::new(EventKind::HostCreated, "old"))).clone();
        e.id = 41;
        old.put(&e).await.unwrap();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        assert!(old.is_empty(), "the sled tree is emptied");
        assert_eq!(bus.after(0, 10).unwrap(), vec![e]);
        assert!(
            bus.publish(NewEvent::new(EventKind::ServiceStopped, "new")).id > 41,
            "ids go on above the old ones"
        );
        bus.settle().await;
        drop(bus);
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        assert_eq!(bus.after(0, 10).unwrap().len(), 2, "moved once, not twice");

        // A backup carries the journal as the tree `events`; restored, it is moved back.
        let snap = store.snapshot().await.unwrap();
        let (_, pairs) = snap.trees.iter().find(|(n, _)| n == "events").unwrap();
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].0, 41u64.to_be_bytes().to_vec());
        let restored = Store::temporary();
        restored.load(&snap).await.unwrap();
        let bus = EventBus::open(&restored, EventsConfig::default()).unwrap();
        assert_eq!(bus.after(0, 10).unwrap()[0].summary, "old");
        let without_ids = |s: crate::store::Snapshot| {
            s.trees
                .into_iter()
                .filter(|(n, _)| n != crate::store::ID_TREE)
                .collect::<Vec<_>>()
        };
        assert_eq!(without_ids(restored.snapshot().await.unwrap()), without_ids(snap));
    }

    fn write_event(bus: &EventBus, i: u64) {
        bus.publish(NewEvent::write(
            EventKind::HostUpdated,
            "host",
            i,
            "update",
            format!("host {i} updated"),
            None::<&()>,
            Some(&serde_json::json!({"name": format!("pc{i}")})),
        ));
    }

    /// The segment file holding the audit journal of `store`.
    fn audit_files(store: &Store) -> Vec<std::path::PathBuf> {
        let dir = store.data_dir().join("journal").join("audit_entries");
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn the_audit_log_is_chained_and_an_edited_entry_is_found() {
        let store = Store::temporary();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        for i in 1..=5 {
            write_event(&bus, i);
        }
        let v = bus.verify_audit().await.unwrap();
        assert!(v.ok() && v.entries == 5 && v.unchained == 0, "{v:?}");
        let entries: Vec<AuditEntry> = bus.audit_newest_first().map(Result::unwrap).collect();
        assert_eq!(
            entries.last().unwrap().prev_hash.as_deref(),
            Some(crate::audit::GENESIS)
        );

        // Someone edits the third entry in the store: verification names the fourth.
        let file = audit_files(&store).pop().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let tampered = text.replacen("host 3 updated", "host 3 looked at", 1);
        assert_ne!(text, tampered);
        std::fs::write(&file, &tampered).unwrap();
        let v = bus.verify_audit().await.unwrap();
        let b = v.first_break.clone().expect("the edit is found");
        assert_eq!(b.id, entries[1].id, "the entry after the edited one: {v:?}");
        assert_eq!(b.found, entries[1].prev_hash);
        assert_ne!(b.expected, b.found.clone().unwrap());
        // The offline check (bootlane audit verify) reads the same files and agrees.
        let offline = crate::audit::verify_data_dir(store.data_dir()).unwrap();
        assert_eq!(offline.first_break, v.first_break);
        std::fs::write(&file, &text).unwrap();
        assert!(crate::audit::verify_data_dir(store.data_dir()).unwrap().ok());

        // A restart goes on with the chain.
        drop(bus);
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        write_event(&bus, 6);
        let v = bus.verify_audit().await.unwrap();
        assert!(v.ok() && v.entries == 6, "{v:?}");
    }

    #[tokio::test]
    async fn pruning_leaves_a_signed_anchor_and_verify_still_works() {
        let store = Store::temporary();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        for i in 1..=6 {
            write_event(&bus, i);
        }
        bus.settle().await;
        let all: Vec<AuditEntry> = bus.audit_newest_first().map(Result::unwrap).collect();
        drop(bus);
        // Reopened with room for 2 entries: the writer prunes at start.
        let config = EventsConfig {
            audit_retention_count: 2,
            ..EventsConfig::default()
        };
        let bus = EventBus::open(&store, config.clone()).unwrap();
        write_event(&bus, 7);
        let v = bus.verify_audit().await.unwrap();
        assert!(v.ok(), "{v:?}");
        let anchor = v.anchor.clone().expect("an anchor of the pruned entries");
        // At start 6 entries are stored and 2 kept: 1-4 are pruned, 4 is the anchor.
        assert_eq!(anchor.id, all[2].id);
        assert_eq!(anchor.hash, crate::audit::entry_hash(&all[2]));
        assert_eq!(bus.audit_newest_first().count(), 3, "5, 6 and the new 7");
        let key = store.data_dir().join(crate::audit::KEY_FILE);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        // The offline check after a restart (retired entries reappear until the next
        // prune; they are at or below the anchor and skipped).
        drop(bus);
        let v = crate::audit::verify_data_dir(store.data_dir()).unwrap();
        assert!(v.ok(), "{v:?}");
        let bus = EventBus::open(&store, config).unwrap();
        write_event(&bus, 8);
        let v = bus.verify_audit().await.unwrap();
        assert!(v.ok() && v.anchor.is_some(), "{v:?}");
    }

    #[tokio::test]
    async fn entries_from_before_the_chain_are_an_unchained_prefix() {
        let store = Store::temporary();
        let old: Table<AuditEntry> = store.table().unwrap();
        let e = (*EventBus::in_memory().publish(NewEvent::write(
            EventKind::HostCreated,
            "host",
            1,
            "create",
            "old",
            None::<&()>,
            Some(&1),
        )))
        .clone();
        let mut a = audit_entry(&e).unwrap();
        a.id = 40;
        old.put(&a).await.unwrap();
        // Its event came along (so new ids go on above it).
        let mut old_event = e.clone();
        old_event.id = 40;
        store.table::<Event>().unwrap().put(&old_event).await.unwrap();
        let bus = EventBus::open(&store, EventsConfig::default()).unwrap();
        write_event(&bus, 2);
        let v = bus.verify_audit().await.unwrap();
        assert!(v.ok() && v.unchained == 1 && v.entries == 1, "{v:?}");
        // The old entry keeps its fields and gains none in the API's JSON.
        let listed: Vec<AuditEntry> = bus.audit_newest_first().map(Result::unwrap).collect();
        assert!(listed[1].prev_hash.is_none());
        assert!(serde_json::to_value(&listed[1]).unwrap().get("prev_hash").is_none());
    }

    #[tokio::test]
    async fn the_syslog_copy_of_each_stored_entry_reaches_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev-log");
        let rx = tokio::net::UnixDatagram::bind(&path).unwrap();
        let store = Store::temporary();
        let audit = AuditConfig {
            syslog: true,
            syslog_socket: path,
        };
        let bus = EventBus::open_with_audit(&store, EventsConfig::default(), audit).unwrap();
        bus.set_node("rack-a1");
        bus.publish(NewEvent::new(EventKind::DhcpLeaseGranted, "not audited"));
        write_event(&bus, 9);
        let mut buf = vec![0; 65536];
        let n = tokio::time::timeout(Duration::from_secs(5), rx.recv(&mut buf))
            .await
            .expect("a datagram within 5 s")
            .unwrap();
        let msg = String::from_utf8_lossy(&buf[..n]).to_string();
        assert!(msg.starts_with("<85>1 ") && msg.contains(" rack-a1 bootlane "), "{msg}");
        assert!(msg.contains("\"summary\":\"host 9 updated\""), "{msg}");
        assert!(!msg.contains("not audited"));
    }
}
