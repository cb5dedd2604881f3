//! The enforcement point every protocol calls: [`AccessGate::check`] decides from an
//! in-memory [`Snapshot`] of the mode and both lists (swapped whole by the service after
//! each write, so a change applies to the next packet). With the mode `off` a check is one
//! atomic load; otherwise a read lock, an `Arc` clone and at most four hash lookups (the
//! full MAC, then its 5-, 4- and 3-octet prefixes). Refusals are handed to the service's
//! recorder through a bounded queue ([`QUEUE`]; when it is full the sighting is dropped,
//! never waited for), so the hot path never touches the store; each refusal is counted in
//! [`bootlane_core::metrics::ACCESS_REFUSED`].
//!
//! TFTP and HTTP boot know a client by its IP address only: [`AccessGate::mac_for_ip`]
//! answers the MAC from the DHCP lease table while the address's lease is in force, else
//! from the addresses DHCP clients announced (option 50 or `ciaddr` of any request
//! Bootlane saw, its own or, in proxy mode, the real server's; learned only while the mode
//! is not `off`, at most [`LEARNED_MAX`] addresses) or that an allowed iPXE script request
//! came from. A client whose MAC cannot be found is refused in whitelist mode (it is not known
//! to be listed) and served in blacklist mode (it is not known to be listed either).
//! MAC-based access control stops honest machines, not a spoofer: a MAC is whatever the
//! client sends.
//!
//! State: the snapshot, the learned addresses, the lease table handle and the queue's
//! sending half.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc, RwLock,
    },
    time::{Duration, Instant},
};

use serde::Serialize;
use time::OffsetDateTime;
use tokio::sync::mpsc;

use super::{
    model::{AccessEntry, ListKind, MacPattern, Protocol, MIN_PREFIX},
    Mode,
};
use bootlane_core::{leases::LeaseDb, net::types::MacAddr};

/// Capacity of the refusal queue between the hot paths and the recorder.
pub const QUEUE: usize = 1024;
/// Most IP → MAC pairs learned from DHCP requests.
pub const LEARNED_MAX: usize = 8192;
/// Learned pairs older than this are dropped when the table is full.
const LEARNED_TTL: Duration = Duration::from_secs(3600);

/// The entries of one list, indexed for matching: full MACs and prefixes by their
/// octets (zero-padded) and length, each to its entry id.
#[derive(Debug, Default)]
struct Matcher {
    full: HashMap<[u8; 6], u64>,
    prefixes: HashMap<(u8, [u8; 6]), u64>,
}

impl Matcher {
    fn insert(&mut self, p: MacPattern, id: u64) {
        let mut key = [0u8; 6];
        key[..p.len()].copy_from_slice(p.octets());
        if p.is_full() {
            self.full.insert(key, id);
        } else {
            self.prefixes.insert((p.len() as u8, key), id);
        }
    }

    /// The id of the entry matching `mac`: the full MAC first, then the longest prefix.
    fn find(&self, mac: MacAddr) -> Option<u64> {
        if let Some(id) = self.full.get(&mac.0) {
            return Some(*id);
        }
        if self.prefixes.is_empty() {
            return None;
        }
        (MIN_PREFIX..6).rev().find_map(|n| {
            let mut key = [0u8; 6];
            key[..n].copy_from_slice(&mac.0[..n]);
            self.prefixes.get(&(n as u8, key)).copied()
        })
    }
}

/// Why a client was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Reason {
    /// Blacklist mode and the MAC matches this blacklist entry.
    Blacklisted {
        /// The matching entry's id.
        entry: u64,
    },
    /// Whitelist mode and the MAC matches no whitelist entry.
    NotWhitelisted,
    /// Whitelist mode and the client's MAC is unknown (TFTP or HTTP from an address no
    /// DHCP lease or request names).
    UnknownClient,
}

impl Reason {
    /// The metrics label (`blacklisted`, `not_whitelisted`, `unknown_client`).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Blacklisted { .. } => "blacklisted",
            Self::NotWhitelisted => "not_whitelisted",
            Self::UnknownClient => "unknown_client",
        }
    }

    /// A short phrase for logs and event summaries.
    pub fn describe(&self) -> String {
        match self {
            Self::Blacklisted { entry } => format!("blacklisted (entry {entry})"),
            Self::NotWhitelisted => "not on the whitelist".into(),
            Self::UnknownClient => "MAC unknown (no DHCP lease for its address)".into(),
        }
    }
}

/// What to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Allow,
    /// Refuse it (see the module docs for what each protocol does).
    Refuse(Reason),
}

impl Decision {
    /// True for [`Decision::Refuse`].
    pub fn refused(&self) -> bool {
        matches!(self, Self::Refuse(_))
    }
}

/// The mode and both lists at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    mode: Mode,
    black: Matcher,
    white: Matcher,
}

impl Snapshot {
    /// Indexes `entries` (records whose pattern does not parse are skipped) under `mode`.
    pub fn build(mode: Mode, entries: &[AccessEntry]) -> Self {
        let mut s = Self {
            mode,
            ..Self::default()
        };
        for e in entries {
            let Some(p) = e.pattern() else { continue };
            match e.list {
                ListKind::Blacklist => s.black.insert(p, e.id),
                ListKind::Whitelist => s.white.insert(p, e.id),
            }
        }
        s
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The id of the `list` entry matching `mac`, if any.
    pub fn find(&self, list: ListKind, mac: MacAddr) -> Option<u64> {
        match list {
            ListKind::Blacklist => self.black.find(mac),
            ListKind::Whitelist => self.white.find(mac),
        }
    }

    /// The decision for a client with this MAC (`None`: unknown), by the rules in the
    /// module docs.
    pub fn decide(&self, mac: Option<MacAddr>) -> Decision {
        match (self.mode, mac) {
            (Mode::Off, _) | (Mode::Blacklist, None) => Decision::Allow,
            (Mode::Blacklist, Some(m)) => match self.black.find(m) {
                Some(entry) => Decision::Refuse(Reason::Blacklisted { entry }),
                None => Decision::Allow,
            },
            (Mode::Whitelist, Some(m)) => match self.white.find(m) {
                Some(_) => Decision::Allow,
                None => Decision::Refuse(Reason::NotWhitelisted),
            },
            (Mode::Whitelist, None) => Decision::Refuse(Reason::UnknownClient),
        }
    }
}

/// What a protocol knows about the client of one request. Borrowed, so an allowed
/// request allocates nothing.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The protocol.
    pub protocol: Protocol,
    /// The client's MAC, when known.
    pub mac: Option<MacAddr>,
    /// The client's address (or the one it asked for), when known.
    pub ip: Option<IpAddr>,
    /// DHCP option 93, when present.
    pub arch: Option<u16>,
    /// DHCP option 60, when present.
    pub vendor_class: Option<&'a [u8]>,
}

impl<'a> Seen<'a> {
    /// A request of `protocol` from a client known by nothing yet.
    pub fn new(protocol: Protocol) -> Self {
        Self {
            protocol,
            mac: None,
            ip: None,
            arch: None,
            vendor_class: None,
        }
    }
}

/// One refusal, queued for the recorder.
#[derive(Debug, Clone)]
pub struct Sighting {
    /// When.
    pub at: OffsetDateTime,
    /// The protocol.
    pub protocol: Protocol,
    /// The client's MAC, when known.
    pub mac: Option<MacAddr>,
    /// Its address, when known.
    pub ip: Option<IpAddr>,
    /// DHCP option 93.
    pub arch: Option<u16>,
    /// DHCP option 60 (lossy UTF-8, at most 255 bytes).
    pub vendor_class: Option<String>,
    /// Why it was refused.
    pub reason: Reason,
}

/// The enforcement point (see the module docs). Share it as `Arc<AccessGate>`.
pub struct AccessGate {
    // `Mode as u8`, so `off` is decided without the lock.
    mode: AtomicU8,
    snapshot: RwLock<Arc<Snapshot>>,
    learned: RwLock<HashMap<IpAddr, (MacAddr, Instant)>>,
    leases: Option<Arc<tokio::sync::Mutex<LeaseDb>>>,
    queue: mpsc::Sender<Sighting>,
}

fn mode_code(m: Mode) -> u8 {
    match m {
        Mode::Off => 0,
        Mode::Blacklist => 1,
        Mode::Whitelist => 2,
    }
}

impl AccessGate {
    /// A gate enforcing `snapshot`, resolving addresses through `leases` (the DHCP lease
    /// table, if any), queueing refusals on `queue`.
    pub fn new(
        snapshot: Snapshot,
        leases: Option<Arc<tokio::sync::Mutex<LeaseDb>>>,
        queue: mpsc::Sender<Sighting>,
    ) -> Self {
        Self {
            mode: AtomicU8::new(mode_code(snapshot.mode)),
            snapshot: RwLock::new(Arc::new(snapshot)),
            learned: RwLock::new(HashMap::new()),
            leases,
            queue,
        }
    }

    /// A gate that allows everything and records nothing (tests of the protocols).
    pub fn open_to_all() -> Arc<Self> {
        let (tx, _rx) = mpsc::channel(1);
        Arc::new(Self::new(Snapshot::default(), None, tx))
    }

    /// Replaces the snapshot; the next check uses it.
    pub fn swap(&self, snapshot: Snapshot) {
        let code = mode_code(snapshot.mode);
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(snapshot);
        self.mode.store(code, Ordering::Release);
    }

    /// The snapshot in force.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// True unless the mode is `off` (then every check allows and nothing is learned).
    pub fn enforcing(&self) -> bool {
        self.mode.load(Ordering::Acquire) != 0
    }

    /// Decides for `seen`; a refusal is queued for the recorder (dropped when the queue
    /// is full).
    pub fn check(&self, seen: &Seen<'_>) -> Decision {
        if !self.enforcing() {
            return Decision::Allow;
        }
        let d = self.snapshot().decide(seen.mac);
        if let Decision::Refuse(reason) = d {
            self.report(seen, reason);
        }
        d
    }

    /// [`AccessGate::check`] for a client known by its address (TFTP, HTTP boot): the
    /// MAC is `mac` when the request names one, else [`AccessGate::mac_for_ip`].
    pub async fn check_addr(&self, protocol: Protocol, ip: IpAddr, mac: Option<MacAddr>) -> Decision {
        if !self.enforcing() {
            return Decision::Allow;
        }
        let mac = match mac {
            Some(m) => Some(m),
            None => self.mac_for_ip(ip).await,
        };
        self.check(&Seen {
            protocol,
            mac,
            ip: Some(ip),
            arch: None,
            vendor_class: None,
        })
    }

    fn report(&self, seen: &Seen<'_>, reason: Reason) {
        metrics::counter!(bootlane_core::metrics::ACCESS_REFUSED, "protocol" => seen.protocol.as_str(), "reason" => reason.label())
            .increment(1);
        let vendor_class = seen.vendor_class.map(|v| {
            let v = &v[..v.len().min(255)];
            String::from_utf8_lossy(v).into_owned()
        });
        let s = Sighting {
            at: OffsetDateTime::now_utc(),
            protocol: seen.protocol,
            mac: seen.mac,
            ip: seen.ip,
            arch: seen.arch,
            vendor_class,
            reason,
        };
        tracing::debug!(mac = ?s.mac, ip = ?s.ip, protocol = s.protocol.as_str(), "access refused: {}", reason.describe());
        if self.queue.try_send(s).is_err() {
            tracing::debug!("access refusal queue full or closed; sighting dropped");
        }
    }

    /// Remembers that `mac` uses (or asked for) `ip` (called by DHCP for every request;
    /// nothing is learned while the mode is `off`, and an unchanged pair costs a read lock).
    /// IPv4 and IPv6 (DHCPv6 clients whose MAC can be told) alike.
    pub fn learn(&self, ip: impl Into<IpAddr>, mac: MacAddr) {
        let ip = ip.into().to_canonical();
        let bad = match ip {
            IpAddr::V4(v4) => v4.is_unspecified() || v4.is_broadcast(),
            IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast(),
        };
        if !self.enforcing() || bad {
            return;
        }
        let fresh = |t: &Instant| t.elapsed() < LEARNED_TTL / 2;
        if let Some((m, t)) = self.learned.read().unwrap_or_else(|e| e.into_inner()).get(&ip) {
            if *m == mac && fresh(t) {
                return;
            }
        }
        let mut w = self.learned.write().unwrap_or_else(|e| e.into_inner());
        if w.len() >= LEARNED_MAX && !w.contains_key(&ip) {
            w.retain(|_, (_, t)| t.elapsed() < LEARNED_TTL);
            if w.len() >= LEARNED_MAX {
                w.clear();
            }
        }
        w.insert(ip, (mac, Instant::now()));
    }

    /// The MAC of the client using `ip`: the DHCP lease of that address while it is in
    /// force, else the pair learned from DHCP requests, else an expired lease (declined
    /// addresses name nobody). IPv6 clients are known by what DHCPv6 learned.
    pub async fn mac_for_ip(&self, ip: IpAddr) -> Option<MacAddr> {
        // An IPv4 client of a dual-stack listener shows up as `::ffff:a.b.c.d`.
        let ip = ip.to_canonical();
        let learned = self
            .learned
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&ip)
            .map(|(m, _)| *m);
        let IpAddr::V4(v4) = ip else {
            return learned;
        };
        if let Some(leases) = &self.leases {
            let db = leases.lock().await;
            if let Some(l) = db.by_ip(v4).filter(|l| !l.declined) {
                // A lease in force is Bootlane's own record of who holds the address (a
                // client cannot change it by merely asking for the address); an expired
                // one only when nothing newer was seen.
                if l.active(bootlane_core::leases::now_secs()) || learned.is_none() {
                    return bootlane_core::net::types::normalise_mac(&l.mac).ok();
                }
            }
        }
        learned
    }
}

/// Keeps `access.refused` events to one per device per interval: [`RefusalLimiter::admit`]
/// says whether to publish now, and how many refusals of that device were held back since
/// its previous event. Owned by the recorder task (no lock).
#[derive(Debug)]
pub struct RefusalLimiter {
    interval: Duration,
    last: HashMap<String, (Instant, u64)>,
}

/// Devices tracked by the limiter before idle ones are forgotten.
const LIMITER_MAX: usize = 4096;

impl RefusalLimiter {
    /// At most one event per device per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: HashMap::new(),
        }
    }

    /// `Some(suppressed)` when an event for `key` (a MAC, or an address) may be published
    /// at `now`, with the number of refusals held back since the previous one; `None`
    /// when this refusal is held back (and counted).
    pub fn admit(&mut self, key: &str, now: Instant) -> Option<u64> {
        if let Some((t, n)) = self.last.get_mut(key) {
            if now.saturating_duration_since(*t) < self.interval {
                *n += 1;
                return None;
            }
            let held = *n;
            *t = now;
            *n = 0;
            return Some(held);
        }
        if self.last.len() >= LIMITER_MAX {
            let iv = self.interval;
            self.last.retain(|_, (t, _)| now.saturating_duration_since(*t) < iv);
        }
        self.last.insert(key.to_string(), (now, 0));
        Some(0)
    }
}

/// A gate for protocol tests: `mode` with the given blacklist and whitelist patterns, and
/// the receiving end of its refusal queue.
#[cfg(any(test, feature = "test-support"))]
pub fn test_gate(mode: Mode, black: &[&str], white: &[&str]) -> (Arc<AccessGate>, mpsc::Receiver<Sighting>) {
    let entries: Vec<AccessEntry> = black
        .iter()
        .map(|p| (ListKind::Blacklist, p))
        .chain(white.iter().map(|p| (ListKind::Whitelist, p)))
        .enumerate()
        .map(|(i, (list, p))| {
            let p = MacPattern::parse(p).expect("test pattern");
            AccessEntry {
                id: i as u64 + 1,
                list,
                mac: p.to_string(),
                prefix: !p.is_full(),
                note: String::new(),
                created: OffsetDateTime::UNIX_EPOCH,
            }
        })
        .collect();
    let (tx, rx) = mpsc::channel(QUEUE);
    (Arc::new(AccessGate::new(Snapshot::build(mode, &entries), None, tx)), rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_core::net::types::normalise_mac;
    use std::net::Ipv4Addr;

    fn mac(s: &str) -> MacAddr {
        normalise_mac(s).unwrap()
    }

    fn entry(id: u64, list: ListKind, pattern: &str) -> AccessEntry {
        let p = MacPattern::parse(pattern).unwrap();
        AccessEntry {
            id,
            list,
            mac: p.to_string(),
            prefix: !p.is_full(),
            note: String::new(),
            created: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn lists() -> Vec<AccessEntry> {
        vec![
            entry(1, ListKind::Blacklist, "52:54:00"),
            entry(2, ListKind::Blacklist, "aa:bb:cc:dd:ee:ff"),
            entry(3, ListKind::Whitelist, "52:54:00:77:00:42"),
            entry(4, ListKind::Whitelist, "02:00:00:00"),
            entry(5, ListKind::Blacklist, "52:54:00:77:00"),
        ]
    }

    #[test]
    fn off_allows_everyone_known_or_not() {
        let s = Snapshot::build(Mode::Off, &lists());
        for m in [Some(mac("52:54:00:01:02:03")), Some(mac("aa:bb:cc:dd:ee:ff")), None] {
            assert_eq!(s.decide(m), Decision::Allow);
        }
    }

    #[test]
    fn blacklist_refuses_by_full_mac_or_longest_prefix_and_allows_the_rest() {
        let s = Snapshot::build(Mode::Blacklist, &lists());
        assert_eq!(
            s.decide(Some(mac("aa:bb:cc:dd:ee:ff"))),
            Decision::Refuse(Reason::Blacklisted { entry: 2 })
        );
        assert_eq!(
            s.decide(Some(mac("52:54:00:01:02:03"))),
            Decision::Refuse(Reason::Blacklisted { entry: 1 }),
            "the OUI entry"
        );
        assert_eq!(
            s.decide(Some(mac("52:54:00:77:00:99"))),
            Decision::Refuse(Reason::Blacklisted { entry: 5 }),
            "the longest prefix wins"
        );
        assert_eq!(s.decide(Some(mac("aa:bb:cc:dd:ee:fe"))), Decision::Allow);
        assert_eq!(s.decide(Some(mac("52:54:01:00:00:00"))), Decision::Allow);
        assert_eq!(
            s.decide(None),
            Decision::Allow,
            "an unknown client is not known to be listed"
        );
        // Whitelist entries mean nothing in blacklist mode.
        assert_eq!(s.find(ListKind::Whitelist, mac("02:00:00:00:11:22")), Some(4));
        assert_eq!(s.decide(Some(mac("02:00:00:00:11:22"))), Decision::Allow);
    }

    #[test]
    fn whitelist_serves_only_listed_macs_and_refuses_unknown_clients() {
        let s = Snapshot::build(Mode::Whitelist, &lists());
        assert_eq!(s.decide(Some(mac("52:54:00:77:00:42"))), Decision::Allow);
        assert_eq!(
            s.decide(Some(mac("02:00:00:00:ab:cd"))),
            Decision::Allow,
            "a 4-octet prefix"
        );
        assert_eq!(
            s.decide(Some(mac("52:54:00:77:00:43"))),
            Decision::Refuse(Reason::NotWhitelisted),
            "blacklist entries do not allow, and a full MAC is not a prefix"
        );
        assert_eq!(
            s.decide(Some(mac("02:00:00:01:00:00"))),
            Decision::Refuse(Reason::NotWhitelisted)
        );
        assert_eq!(s.decide(None), Decision::Refuse(Reason::UnknownClient));
    }

    #[tokio::test]
    async fn check_queues_refusals_only_and_swap_applies_to_the_next_check() {
        let (tx, mut rx) = mpsc::channel(4);
        let g = AccessGate::new(Snapshot::default(), None, tx);
        let m = mac("aa:bb:cc:dd:ee:ff");
        let seen = Seen {
            mac: Some(m),
            arch: Some(7),
            vendor_class: Some(b"PXEClient:Arch:00007"),
            ..Seen::new(Protocol::Dhcp)
        };
        assert!(!g.enforcing());
        assert_eq!(g.check(&seen), Decision::Allow);
        g.swap(Snapshot::build(Mode::Blacklist, &lists()));
        use bootlane_core::metrics::{install, render, test_support::value};
        install();
        let series = r#"bootlane_access_refused_total{protocol="dhcp",reason="blacklisted"}"#;
        let before = value(&render(), series);
        assert!(g.check(&seen).refused());
        assert!(value(&render(), series) >= before + 1.0, "the refusal is counted");
        let s = rx.try_recv().unwrap();
        assert_eq!((s.mac, s.arch, s.protocol), (Some(m), Some(7), Protocol::Dhcp));
        assert_eq!(s.vendor_class.as_deref(), Some("PXEClient:Arch:00007"));
        assert_eq!(s.reason, Reason::Blacklisted { entry: 2 });
        g.swap(Snapshot::build(Mode::Whitelist, &lists()));
        assert!(g.check(&seen).refused());
        assert_eq!(rx.try_recv().unwrap().reason, Reason::NotWhitelisted);
        let ok = Seen {
            mac: Some(mac("52:54:00:77:00:42")),
            ..Seen::new(Protocol::Tftp)
        };
        assert_eq!(g.check(&ok), Decision::Allow);
        assert!(rx.try_recv().is_err(), "nothing queued for an allowed request");
        // A full queue drops sightings instead of blocking.
        for _ in 0..10 {
            assert!(g.check(&seen).refused());
        }
    }

    #[tokio::test]
    async fn addresses_resolve_through_learned_pairs_then_leases() {
        let leases = Arc::new(tokio::sync::Mutex::new(LeaseDb::in_memory()));
        let (tx, _rx) = mpsc::channel(4);
        let g = AccessGate::new(Snapshot::build(Mode::Whitelist, &lists()), Some(leases.clone()), tx);
        let ip: Ipv4Addr = "10.77.0.100".parse().unwrap();
        assert_eq!(g.mac_for_ip(ip.into()).await, None);
        assert_eq!(
            g.check_addr(Protocol::Tftp, ip.into(), None).await,
            Decision::Refuse(Reason::UnknownClient)
        );
        // A lease names the client.
        let l = bootlane_core::leases::Lease {
            id: 0,
            mac: "52:54:00:77:00:42".into(),
            ip,
            subnet: "10.77.0.0/24".into(),
            hostname: None,
            arch: None,
            expires_at: bootlane_core::leases::now_secs() + 600,
            declined: false,
        };
        leases.lock().await.bind(l, mac("52:54:00:77:00:42")).await.unwrap();
        assert_eq!(g.mac_for_ip(ip.into()).await, Some(mac("52:54:00:77:00:42")));
        assert_eq!(g.check_addr(Protocol::Tftp, ip.into(), None).await, Decision::Allow);
        // A lease in force wins over a client merely asking for its address...
        g.learn(ip, mac("02:00:00:01:00:01"));
        assert_eq!(g.mac_for_ip(ip.into()).await, Some(mac("52:54:00:77:00:42")));
        // ...and an address without a lease is known by what was learned.
        let proxied: Ipv4Addr = "10.77.0.200".parse().unwrap();
        g.learn(proxied, mac("02:00:00:01:00:01"));
        assert_eq!(g.mac_for_ip(proxied.into()).await, Some(mac("02:00:00:01:00:01")));
        assert!(g.check_addr(Protocol::Http, proxied.into(), None).await.refused());
        // A MAC given by the request is used as is.
        assert_eq!(
            g.check_addr(Protocol::Ipxe, ip.into(), Some(mac("52:54:00:77:00:42")))
                .await,
            Decision::Allow
        );
        // IPv6 clients are unknown; in blacklist mode unknown clients pass.
        assert_eq!(g.mac_for_ip("fd77::2".parse().unwrap()).await, None);
        g.swap(Snapshot::build(Mode::Blacklist, &lists()));
        assert_eq!(
            g.check_addr(Protocol::Http, "fd77::2".parse().unwrap(), None).await,
            Decision::Allow
        );
        // Nothing is learned while off.
        g.swap(Snapshot::build(Mode::Off, &lists()));
        let other: Ipv4Addr = "10.77.0.101".parse().unwrap();
        g.learn(other, mac("02:00:00:01:00:02"));
        assert_eq!(g.mac_for_ip(other.into()).await, None);
    }

    #[test]
    fn refusal_events_are_limited_per_device_with_a_held_back_count() {
        let mut l = RefusalLimiter::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(l.admit("aa", t0), Some(0));
        assert_eq!(l.admit("aa", t0 + Duration::from_secs(1)), None);
        assert_eq!(l.admit("bb", t0 + Duration::from_secs(1)), Some(0), "per device");
        assert_eq!(l.admit("aa", t0 + Duration::from_secs(59)), None);
        assert_eq!(l.admit("aa", t0 + Duration::from_secs(60)), Some(2));
        assert_eq!(l.admit("aa", t0 + Duration::from_secs(61)), None);
        assert_eq!(l.admit("aa", t0 + Duration::from_secs(130)), Some(1));
    }
}
