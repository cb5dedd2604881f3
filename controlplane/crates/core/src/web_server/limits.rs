//! Connection admission for the HTTP listeners: a cap on the connections open at once
//! over every listener and a cap per client address, both checked when a connection is
//! accepted. A connection over a cap is closed at once, counted in
//! [`CONNECTIONS_REFUSED`] and logged at most once per [`LOG_EVERY`] (with the number
//! refused since the last line), so a flood cannot flood the log too.
//!
//! State: one [`ConnTracker`] per server process, shared by every listener; a
//! [`ConnGuard`] held by each connection's task gives its slot back when dropped, so a
//! panicking or cancelled task cannot leak a slot.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// Counter `{listener, reason}`: HTTP connections closed at accept because a cap was
/// reached; `reason` is `total` (`[api] max_connections`) or `per_client`
/// (`[api] max_connections_per_client`); `listener` is `api` or `boot`.
pub const CONNECTIONS_REFUSED: &str = "bootlane_http_connections_refused_total";
/// Gauge: HTTP connections open now, over every listener.
pub const CONNECTIONS_OPEN: &str = "bootlane_http_connections_open";

/// Least time between two "connection refused" log lines.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `[api] max_connections` connections are open.
    Total,
    /// `[api] max_connections_per_client` connections from this address are open.
    PerClient,
}

impl Refused {
    /// The metric label: `total` or `per_client`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Total => "total",
            Self::PerClient => "per_client",
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_client: HashMap<IpAddr, usize>,
    /// Refusals not yet logged, and when the last line was written.
    unlogged: u64,
    last_log: Option<Instant>,
}

/// Open-connection counts and their caps (see the module docs). Cheap to share (`Arc`).
#[derive(Debug)]
pub struct ConnTracker {
    max_total: usize,
    max_per_client: usize,
    counts: Mutex<Counts>,
}

impl ConnTracker {
    /// A tracker allowing `max_total` connections, at most `max_per_client` of them from
    /// one address (both at least 1).
    pub fn new(max_total: usize, max_per_client: usize) -> Arc<Self> {
        metrics::describe_counter!(
            CONNECTIONS_REFUSED,
            "HTTP connections closed at accept because a connection cap was reached."
        );
        metrics::describe_gauge!(CONNECTIONS_OPEN, "HTTP connections open now.");
        Arc::new(Self {
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            counts: Mutex::new(Counts::default()),
        })
    }

    /// Takes a slot for a connection from `peer`, or says which cap refuses it. The slot
    /// is given back when the guard is dropped.
    ///
    /// # Errors
    /// [`Refused::Total`] or [`Refused::PerClient`] when that cap is reached.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<ConnGuard, Refused> {
        let peer = peer.to_canonical();
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if c.total >= self.max_total {
            return Err(Refused::Total);
        }
        let n = c.per_client.entry(peer).or_insert(0);
        if *n >= self.max_per_client {
            return Err(Refused::PerClient);
        }
        *n += 1;
        c.total += 1;
        metrics::gauge!(CONNECTIONS_OPEN).set(c.total as f64);
        Ok(ConnGuard {
            tracker: self.clone(),
            peer,
        })
    }

    /// Counts a refusal in [`CONNECTIONS_REFUSED`] and logs it, at most once per
    /// [`LOG_EVERY`] (the line says how many were refused since the previous one).
    pub fn record_refusal(&self, listener: &'static str, peer: IpAddr, why: Refused) {
        metrics::counter!(CONNECTIONS_REFUSED, "listener" => listener, "reason" => why.label()).increment(1);
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.unlogged += 1;
        let now = Instant::now();
        if c.last_log.is_none_or(|t| now.duration_since(t) >= LOG_EVERY) {
            let refused = std::mem::take(&mut c.unlogged);
            c.last_log = Some(now);
            let (open, cap, per_client) = (c.total, self.max_total, self.max_per_client);
            drop(c);
            tracing::warn!(
                listener,
                %peer,
                reason = why.label(),
                refused,
                open,
                max_connections = cap,
                max_connections_per_client = per_client,
                "HTTP connections refused at a connection cap (this line at most every {} s)",
                LOG_EVERY.as_secs()
            );
        }
    }

    /// Connections open now (all listeners).
    pub fn open(&self) -> usize {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Connections open now from `peer`.
    pub fn open_from(&self, peer: IpAddr) -> usize {
        let c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.per_client.get(&peer.to_canonical()).copied().unwrap_or(0)
    }
}

/// One admitted connection's slot; dropping it frees the slot.
#[derive(Debug)]
pub struct ConnGuard {
    tracker: Arc<ConnTracker>,
    peer: IpAddr,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut c = self.tracker.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.per_client.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                // Keeps the map as small as the set of clients connected now.
                c.per_client.remove(&self.peer);
            }
        }
        metrics::gauge!(CONNECTIONS_OPEN).set(c.total as f64);
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use super::{ConnTracker, Refused};

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn per_client_cap_refuses_only_that_client() {
        let t = ConnTracker::new(10, 2);
        let a1 = t.admit(A).expect("first");
        let _a2 = t.admit(A).expect("second");
        assert_eq!(t.admit(A).unwrap_err(), Refused::PerClient);
        let _b1 = t.admit(B).expect("another address still gets in");
        assert_eq!((t.open(), t.open_from(A), t.open_from(B)), (3, 2, 1));
        drop(a1);
        assert_eq!(t.open_from(A), 1);
        let _a3 = t.admit(A).expect("a freed slot is reusable");
    }

    #[test]
    fn total_cap_refuses_everyone_until_a_slot_frees() {
        let t = ConnTracker::new(2, 2);
        let a = t.admit(A).expect("a");
        let _b = t.admit(B).expect("b");
        let c = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3));
        assert_eq!(t.admit(c).unwrap_err(), Refused::Total);
        drop(a);
        let _c = t.admit(c).expect("slot freed");
        assert_eq!(t.open(), 2);
    }

    #[test]
    fn ipv4_mapped_ipv6_counts_as_the_ipv4_address() {
        let t = ConnTracker::new(10, 1);
        let _a = t.admit(A).expect("v4");
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(t.admit(mapped).unwrap_err(), Refused::PerClient);
        let _v6 = t
            .admit(IpAddr::V6(Ipv6Addr::LOCALHOST))
            .expect("a real IPv6 address is its own client");
    }

    #[test]
    fn dropped_guards_leave_no_entries() {
        let t = ConnTracker::new(10, 5);
        let guards: Vec<_> = (0..5).map(|_| t.admit(A).expect("admit")).collect();
        drop(guards);
        assert_eq!(t.open(), 0);
        assert!(t.counts.lock().expect("lock").per_client.is_empty());
    }

    #[test]
    fn refusals_are_logged_at_most_once_per_period() {
        let t = ConnTracker::new(1, 1);
        for _ in 0..100 {
            t.record_refusal("api", A, Refused::Total);
        }
        let c = t.counts.lock().expect("lock");
        // The first refusal was logged; the next 99 wait for the next line.
        assert_eq!(c.unlogged, 99);
        assert!(c.last_log.is_some());
    }
}
