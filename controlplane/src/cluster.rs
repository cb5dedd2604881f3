//! Following other nodes (issue 16): with the shared PostgreSQL store, a write made
//! through another node's API reaches this node's store mirror by `LISTEN/NOTIFY`
//! ([`crate::store::pg`]), and [`follow`] then rebuilds what this node derived from the
//! changed trees: the DNS zone and XDP map (records), the DHCP handler (reservations,
//! DHCP settings), the access gate (entries, mode), the Secure Boot MACs (hosts) and the
//! DHCP lease index (leases, key by key: a lease granted through one node is renewed
//! through any).
//! iPXE scripts, profiles and answer files are rendered from the store per request and
//! need nothing. With sled there are no other nodes and [`follow`] does nothing.

use std::sync::Arc;

use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_util::sync::CancellationToken;

use crate::{
    access::{model::AccessEntry, service::AccessService},
    dhcp::{
        control::{DhcpControl, StoredReservation},
        leases::Lease,
    },
    dns::{records::DnsRecord, service::DnsService},
    inventory::{model::Host, service::HostService},
    store::{Entity, RemoteChange, Store},
};

/// What a node rebuilds when other nodes change the store.
#[derive(Clone)]
pub struct Followers {
    /// Zone and XDP map.
    pub dns: Arc<DnsService>,
    /// The DHCP handler's reservations and settings.
    pub dhcp: Arc<DhcpControl>,
    /// The access gate.
    pub access: Arc<AccessService>,
    /// Hosts (the Secure Boot MACs the DHCP handler reads).
    pub hosts: Arc<HostService>,
}

/// The parts of this node to rebuild after tree `tree` changed elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// [`DnsService::resync`].
    Dns,
    /// [`DhcpControl::resync`].
    Dhcp,
    /// [`AccessService::resync`].
    Access,
    /// [`HostService::resync`].
    Hosts,
}

/// Which part depends on `tree` (`None`: nothing cached from it).
pub fn part_of(tree: &str) -> Option<Part> {
    match tree {
        t if t == DnsRecord::TREE => Some(Part::Dns),
        t if t == StoredReservation::TREE || t == "dhcp_settings" => Some(Part::Dhcp),
        t if t == AccessEntry::TREE || t == "access" => Some(Part::Access),
        t if t == Host::TREE => Some(Part::Hosts),
        _ => None,
    }
}

impl Followers {
    fn resync(&self, part: Part) {
        let r = match part {
            Part::Dns => self.dns.resync(),
            Part::Dhcp => self.dhcp.resync(),
            Part::Access => self.access.resync(),
            Part::Hosts => self.hosts.resync(),
        };
        match r {
            Ok(()) => tracing::debug!(?part, "rebuilt after another node's change"),
            Err(e) => tracing::error!(?part, "rebuilding after another node's change failed: {e}"),
        }
    }

    fn resync_all(&self) {
        for p in [Part::Dns, Part::Dhcp, Part::Access, Part::Hosts] {
            self.resync(p);
        }
    }
}

/// Publishes `store.disconnected` (with the reason) when the shared store's connection
/// is lost and `store.connected` when it is back and caught up, until `token` is
/// cancelled (nothing for sled).
pub fn report_link(store: &Store, events: Arc<crate::events::EventBus>, token: CancellationToken) {
    let Some(mut link) = store.watch_link() else { return };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                r = link.changed() => if r.is_err() { return },
            }
            let (up, err) = link.borrow_and_update().clone();
            let ev = if up {
                crate::events::NewEvent::new(
                    "store.connected",
                    "the shared store is reachable again; this node caught up with it",
                )
            } else {
                let why = err.unwrap_or_default();
                crate::events::NewEvent::new(
                    "store.disconnected",
                    format!("the shared store is unreachable ({why}); answering from the last state, writes fail"),
                )
                .data(serde_json::json!({"error": why}))
            };
            events.publish(ev);
        }
    });
}

/// Starts following other nodes' changes until `token` is cancelled (no task for sled).
/// A burst of changes is coalesced: each part is rebuilt once per burst; when the
/// announcements overflowed, everything is rebuilt.
pub fn follow(store: &Store, followers: Followers, token: CancellationToken) {
    let Some(mut rx) = store.remote_changes() else { return };
    tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                () = token.cancelled() => return,
                r = rx.recv() => r,
            };
            let mut parts: Vec<Part> = Vec::new();
            let mut lease_ids: Vec<u64> = Vec::new();
            let mut all = false;
            let mut take = |r: Result<RemoteChange, RecvError>| match r {
                Ok(change) => {
                    if change.tree == Lease::TREE {
                        lease_ids.extend(change.ids());
                    }
                    if let Some(p) = part_of(&change.tree).filter(|p| !parts.contains(p)) {
                        parts.push(p);
                    }
                    true
                }
                Err(RecvError::Lagged(_)) => {
                    all = true;
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
            // `Some(None)`: reload every lease; `None`: no lease changed.
            let leases = if all {
                Some(None)
            } else if lease_ids.is_empty() {
                None
            } else {
                Some(Some(lease_ids))
            };
            if let Some(ids) = leases {
                if let Err(e) = followers.dhcp.follow_leases(ids).await {
                    tracing::error!("following another node's leases failed: {e}");
                }
            }
            if all {
                followers.resync_all();
            } else {
                for p in parts {
                    followers.resync(p);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_map_to_the_parts_that_cache_them() {
        assert_eq!(part_of("dns_records"), Some(Part::Dns));
        assert_eq!(part_of("dhcp_reservations"), Some(Part::Dhcp));
        assert_eq!(part_of("dhcp_settings"), Some(Part::Dhcp));
        assert_eq!(part_of("access_entries"), Some(Part::Access));
        assert_eq!(part_of("access"), Some(Part::Access));
        assert_eq!(part_of("hosts"), Some(Part::Hosts));
        assert_eq!(part_of("profiles"), None);
    }
}
