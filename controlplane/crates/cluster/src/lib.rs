//! Following other nodes: with the shared PostgreSQL store, a write made through another
//! node's API reaches this node's store mirror by `LISTEN/NOTIFY` ([`bootlane_core::store::pg`]),
//! and [`follow`] gathers each burst of such changes and hands it to every registered
//! [`Follower`] whose trees it touches (`bootlane_api::app::followers`): the DNS zone and XDP map
//! (records), the DHCP handler (reservations, DHCP settings) and lease indexes (leases,
//! key by key: a lease granted through one node is renewed through any), the access gate
//! (entries, mode) and the Secure Boot MACs (hosts). iPXE scripts, profiles and answer
//! files are rendered from the store per request and need nothing.
//! [`relay_events`] carries each node's events to the others, so any node's event stream
//! shows the whole cluster (`?node=` picks one). With sled there are no other nodes and
//! neither does anything.

use std::sync::Arc;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_util::sync::CancellationToken;

use bootlane_core::{
    events::{Event, EventBus},
    store::{
        follow::{Burst, Follower},
        pg::MAX_PAYLOAD,
        RemoteChange, Store,
    },
};

/// The services that rebuild what they derived when other nodes change the store, in
/// the order they are given each burst. Each names its trees ([`Follower::trees`]).
pub type Followers = Vec<Arc<dyn Follower>>;

/// The names of the `followers` that derive from tree `tree` (empty: nothing cached from
/// it).
pub fn followers_of<'a>(followers: &'a [Arc<dyn Follower>], tree: &str) -> Vec<&'a str> {
    followers
        .iter()
        .filter(|f| f.trees().contains(&tree))
        .map(|f| f.name())
        .collect()
}

/// Hands `burst` to every follower whose trees it touches, in order.
async fn dispatch(followers: &[Arc<dyn Follower>], burst: &Burst) {
    for f in followers.iter().filter(|f| burst.touches(f.trees())) {
        let part = f.name();
        match f.follow(burst).await {
            Ok(()) => tracing::debug!(part, "rebuilt after another node's change"),
            Err(e) => tracing::error!(part, "rebuilding after another node's change failed: {e}"),
        }
    }
}

/// Publishes `store.disconnected` (with the reason) when the shared store's connection
/// is lost and `store.connected` when it is back and caught up, until `token` is
/// cancelled (nothing for sled).
pub fn report_link(store: &Store, events: Arc<EventBus>, token: CancellationToken) {
    let Some(mut link) = store.watch_link() else { return };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                r = link.changed() => if r.is_err() { return },
            }
            let (up, err) = link.borrow_and_update().clone();
            let ev = if up {
                bootlane_core::events::NewEvent::new(
                    bootlane_core::events::EventKind::StoreConnected,
                    "the shared store is reachable again; this node caught up with it",
                )
            } else {
                let why = err.unwrap_or_default();
                bootlane_core::events::NewEvent::new(
                    bootlane_core::events::EventKind::StoreDisconnected,
                    format!("the shared store is unreachable ({why}); answering from the last state, writes fail"),
                )
                .with(&bootlane_core::events::StoreDisconnected { error: why })
            };
            events.publish(ev);
        }
    });
}

/// How long the relay waits after an event for more to send with it.
const RELAY_LINGER: std::time::Duration = std::time::Duration::from_millis(50);

/// Most own events waiting to be relayed; beyond that the newest are not relayed (they are
/// still in this node's stream).
const RELAY_QUEUE: usize = 8192;

/// Relays this node's events to the other nodes and takes theirs into its own stream,
/// until `token` is cancelled: published events go out in batches, packed into as few notifications as fit, through the shared store
/// ([`Store::announce_events`]); events heard from nodes of another name are given to
/// [`EventBus::ingest`], a node's own notifications are skipped unread. An event too long
/// for one notification goes without its `data` (marked `"truncated": true`). Nothing for
/// sled.
pub fn relay_events(store: &Store, bus: Arc<EventBus>, token: CancellationToken) {
    let Some(mut inbound) = store.remote_events() else {
        return;
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Arc<Event>>(RELAY_QUEUE);
    bus.relay_to(tx);
    let node = bus.node();
    let out = store.clone();
    let stop = token.clone();
    let node_out = node.clone();
    tokio::spawn(async move {
        let mut batch = Vec::new();
        loop {
            let n = tokio::select! {
                () = stop.cancelled() => return,
                n = rx.recv_many(&mut batch, 256) => n,
            };
            if n == 0 {
                return;
            }
            // Linger briefly so a flood's events share notifications and statements (a
            // statement per few events cost a DHCP flood on PostgreSQL half its rate).
            tokio::time::sleep(RELAY_LINGER).await;
            while batch.len() < 4096 {
                match rx.try_recv() {
                    Ok(e) => batch.push(e),
                    Err(_) => break,
                }
            }
            let payloads = relay_payloads(&node_out, &batch);
            batch.clear();
            if let Err(e) = out.announce_events(&payloads).await {
                tracing::debug!("relaying {} events to the other nodes failed: {e}", payloads.len());
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let r = tokio::select! {
                () = token.cancelled() => return,
                r = inbound.recv() => r,
            };
            match r {
                Ok(p) => {
                    let Some((from, events)) = p.split_once('\n') else {
                        continue;
                    };
                    if from == node {
                        continue;
                    }
                    match serde_json::from_str::<Vec<Event>>(events) {
                        Ok(events) => events.into_iter().for_each(|e| bus.ingest(e)),
                        Err(e) => tracing::debug!("unreadable events from node {from}: {e}"),
                    }
                }
                Err(RecvError::Lagged(n)) => tracing::warn!(n, "missed events of other nodes (this node fell behind)"),
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// `events` of node `node` as notification payloads: `<node>\n<JSON array of events>`,
/// each at most [`bootlane_core::store::pg::MAX_PAYLOAD`] bytes, as many events per payload as fit
/// (a DHCP flood's lease events cost a notification per few dozen, not one each). An event
/// too long alone goes without its `data`; one too long even so is dropped.
fn relay_payloads(node: &str, events: &[Arc<Event>]) -> Vec<String> {
    let room = MAX_PAYLOAD.saturating_sub(node.len() + 3);
    let mut payloads = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let mut size = 0;
    let mut flush = |items: &mut Vec<String>, size: &mut usize| {
        if !items.is_empty() {
            payloads.push(format!("{node}\n[{}]", items.join(",")));
            items.clear();
            *size = 0;
        }
    };
    for e in events {
        let Ok(mut one) = serde_json::to_string(&**e) else {
            continue;
        };
        if one.len() > room {
            let slim = Event {
                data: serde_json::to_value(bootlane_core::events::RelayTruncated::default()).unwrap_or_default(),
                ..(**e).clone()
            };
            match serde_json::to_string(&slim) {
                Ok(s) if s.len() <= room => one = s,
                _ => continue,
            }
        }
        if size + one.len() + 1 > room {
            flush(&mut items, &mut size);
        }
        size += one.len() + 1;
        items.push(one);
    }
    flush(&mut items, &mut size);
    payloads
}

/// Starts following other nodes' changes until `token` is cancelled (no task for sled).
/// A burst of changes is coalesced into one [`Burst`]: each follower it touches follows
/// once per burst; when the announcements overflowed, every follower rebuilds all.
pub fn follow(store: &Store, followers: Followers, token: CancellationToken) {
    let Some(mut rx) = store.remote_changes() else { return };
    tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                () = token.cancelled() => return,
                r = rx.recv() => r,
            };
            let mut burst = Burst::default();
            let mut take = |r: Result<RemoteChange, RecvError>| match r {
                Ok(change) => {
                    burst.add(&change);
                    true
                }
                Err(RecvError::Lagged(_)) => {
                    burst.lost_some();
                    true
                }
                Err(RecvError::Closed) => false,
            };
            if !take(first) {
                return;
            }
            loop {
                match rx.try_recv() {
                    Ok(t) => take(Ok(t)),
                    Err(TryRecvError::Lagged(n)) => take(Err(RecvError::Lagged(n))),
                    Err(_) => break,
                };
            }
            dispatch(&followers, &burst).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_packed_into_notifications_and_a_long_one_loses_its_data() {
        let bus = EventBus::in_memory();
        let short: Vec<Arc<Event>> = (0..300)
            .map(|i| {
                bus.publish(bootlane_core::events::NewEvent::new(
                    bootlane_core::events::EventKind::DhcpLeaseGranted,
                    format!("lease {i}"),
                ))
            })
            .collect();
        let long = bus.publish(bootlane_core::events::NewEvent::write(
            bootlane_core::events::EventKind::SettingsChanged,
            "settings",
            "general",
            "update",
            "s",
            None::<&()>,
            Some(&"x".repeat(9000)),
        ));
        let mut all = short.clone();
        all.push(long.clone());
        let payloads = relay_payloads("node-a", &all);
        assert!(payloads.len() < 30, "{} notifications for 301 events", payloads.len());
        let mut back = Vec::new();
        for p in &payloads {
            assert!(p.len() <= MAX_PAYLOAD, "{}", p.len());
            let (from, json) = p.split_once('\n').unwrap();
            assert_eq!(from, "node-a");
            back.extend(serde_json::from_str::<Vec<Event>>(json).unwrap());
        }
        assert_eq!(back.len(), 301);
        assert_eq!(
            back[..300].iter().collect::<Vec<_>>(),
            short.iter().map(|e| &**e).collect::<Vec<_>>()
        );
        assert_eq!(back[300].data, serde_json::json!({"truncated": true}));
        assert_eq!(back[300].kind, "settings.changed");
    }
}
