//! DHCPv4 leases: the persisted [`Lease`] table (one row per leased address, every
//! acknowledged write flushed) and the in-memory index the DHCP handler allocates from.
//! A foundation module (it needs only the store and the network types): DHCP writes it,
//! and the access gate and install tokens read who holds an address from it. The store is the
//! source of truth; [`LeaseDb::load`] rebuilds the index from it at start, so a restart
//! never hands out an address that is still leased (the peer lost its leases on restart).
//! Offers are held in memory only (RFC 2131 §4.3.1 lets a server reserve an offered
//! address; a restart simply forgets them), indexed both ways so holding and dropping one
//! costs the same with 50,000 outstanding as with one.
//!
//! [`LeaseDb`] is the lease core of [`table`] ([`LeaseTable`]) over [`Lease`] rows; DHCPv6's
//! `Lease6Db` is the same core over its own rows, so both servers share what follows.
//!
//! Group commit: with [`LeaseTable::set_group_commit`] on, the leases [`LeaseDb::bind`]
//! writes are visible in the index at once but queued for the store;
//! [`LeaseTable::commit`], which the DHCP receive loop calls once per batch of requests
//! before it sends any of that batch's replies, stores the queue as one atomic batch and
//! flushes it: every acknowledged lease is on disk, at one store batch and one `fsync` per
//! receive batch instead of a transaction and an `fsync` per lease (sled rolls and writes
//! its log buffer for every transaction: on a /16 flood that is two `sync_file_range`
//! calls per lease). The flush runs without the lease lock ([`LeaseTable::begin_commit`]),
//! so other sockets and the API are not held up by the disk. Every other write (releases,
//! declines, the API's deletes) stores the queue first, in order, and is then flushed at
//! once as before.
//!
//! Several nodes, one pool: a lease's id is its address ([`lease_id`]), so the store
//! holds at most one lease per address, and every lease write is checked against the row
//! the store holds at that moment ([`crate::store::Table::apply_guarded`], or a
//! transaction's read): an address leased to another client, active, is never
//! overwritten. With the shared PostgreSQL store that check runs in the database under
//! its write lock, so two nodes answering one pool can both offer an address but only one
//! can acknowledge it; the loser's DHCPACK is withheld ([`LeaseTable::take_refused`]) and
//! the client, retrying, is refused. Nodes follow each other's lease writes
//! ([`LeaseTable::follow`]), so a lease granted through one node is renewed through any.
//! The search for a fresh address starts at a point derived from the node's name
//! ([`LeaseTable::set_spread`]), so nodes rarely offer the same address at all. While the
//! shared store is unreachable ([`LeaseTable::store_reachable`]) the handler renews the
//! leases it knows from memory and allocates nothing new.
//!
//! Global state: none; the handler owns one [`LeaseDb`] behind a mutex.

pub mod table;

use std::{
    net::Ipv4Addr,
    ops::{Deref, DerefMut},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use crate::net::types::{normalise_mac, MacAddr};
use crate::store::{Store, StoreError};
pub use table::{LeaseRecord, LeaseTable, OFFER_HOLD};

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The id of the lease of `ip`: the address as a number (one lease row per address; see
/// the module docs).
pub fn lease_id(ip: Ipv4Addr) -> u64 {
    u64::from(u32::from(ip))
}

/// Whether a lease write `new` may replace `current`, the row the store holds for its
/// address: when there is none, when it is no longer in force at `now`, or when it is the
/// same client's (a renewal, a release, or its own decline; a client does not take back
/// an address it declined).
pub fn may_replace(current: Option<&Lease>, new: &Lease, now: u64) -> bool {
    match current {
        None => true,
        Some(c) => !c.active(now) || (mac_of(c) == mac_of(new) && (!c.declined || new.declined)),
    }
}

/// A lease as stored and listed by `GET /leases` (RFC 2131 §4.3.1 binding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lease {
    /// Row id: the address as a number ([`lease_id`]).
    pub id: u64,
    /// Client MAC, lower case with colons. For an address declined by a client
    /// (DHCPDECLINE, RFC 2131 §4.3.3) this is the declining client's MAC and
    /// `declined` is true.
    pub mac: String,
    /// The leased address.
    #[schema(value_type = String)]
    pub ip: Ipv4Addr,
    /// The subnet (CIDR) the lease belongs to.
    pub subnet: String,
    /// Host name the client sent (option 12) or its reservation's name.
    pub hostname: Option<String>,
    /// Client architecture (option 93), if it sent one.
    pub arch: Option<u16>,
    /// Expiry, seconds since the Unix epoch. A released lease expires at release time
    /// and is kept so the client gets the same address next time if it is still free.
    pub expires_at: u64,
    /// True when the address was declined as in use by someone else; it is kept out of
    /// the pool until `expires_at`.
    #[serde(default)]
    pub declined: bool,
}

crate::store::entity!(Lease, "dhcp_leases");

impl Lease {
    /// True while the lease (or the decline) is in force at `now`.
    pub fn active(&self, now: u64) -> bool {
        self.expires_at > now
    }
}

/// The DHCPv4 leases of every subnet, indexed for allocation: the lease core
/// ([`LeaseTable`]) over [`Lease`] rows, whose generic methods (commit, follow,
/// reachability, offers by MAC, ...) it derefs to, with the DHCPv4 spellings below.
pub struct LeaseDb(LeaseTable<Lease>);

impl Deref for LeaseDb {
    type Target = LeaseTable<Lease>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for LeaseDb {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl LeaseRecord for Lease {
    type Addr = Ipv4Addr;
    type Holder = MacAddr;
    type Client = (String, MacAddr);
    const KIND: &'static str = "DHCP";
    const WITHHELD: &'static str = "DHCPACK withheld: another node leased the address first";

    fn lease_id(addr: Ipv4Addr) -> u64 {
        lease_id(addr)
    }
    fn addr_of_id(id: u64) -> Option<Ipv4Addr> {
        u32::try_from(id).ok().map(Ipv4Addr::from)
    }
    fn addr_at(n: u128) -> Option<Ipv4Addr> {
        u32::try_from(n).ok().map(Ipv4Addr::from)
    }
    fn may_replace(current: Option<&Self>, new: &Self, now: u64) -> bool {
        may_replace(current, new, now)
    }
    fn addr(&self) -> Ipv4Addr {
        self.ip
    }
    fn holder(&self) -> MacAddr {
        mac_of(self)
    }
    fn client(&self) -> (String, MacAddr) {
        (self.subnet.clone(), mac_of(self))
    }
    fn expires_at(&self) -> u64 {
        self.expires_at
    }
    fn set_expires_at(&mut self, at: u64) {
        self.expires_at = at;
    }
    fn declined(&self) -> bool {
        self.declined
    }
    fn well_formed(&self) -> bool {
        normalise_mac(&self.mac).is_ok()
    }
}

impl LeaseDb {
    /// An empty database that persists nothing (unit tests of pure allocation).
    pub fn in_memory() -> Self {
        Self(LeaseTable::in_memory())
    }

    /// Loads every stored lease ([`LeaseTable::load`]): rows whose MAC no longer parses,
    /// or that conflict with a newer row for the same address, are deleted (logged).
    ///
    /// # Errors
    /// Store errors.
    pub async fn load(store: &Store) -> Result<Self, StoreError> {
        LeaseTable::load(store).await.map(Self)
    }

    /// The first never-used address of the pool `lo..=hi` of `subnet` for which `ok`
    /// holds, searching from where the last search stopped: amortised O(1) per DISCOVER
    /// while the pool has fresh addresses (a scan from the start would cost O(pool) each).
    /// Addresses passed over are leased or offered; one whose offer lapses unused is found
    /// again by the caller's full scan once no fresh address is left.
    pub fn fresh_address(
        &mut self,
        subnet: &str,
        lo: u32,
        hi: u32,
        ok: impl Fn(&Self, Ipv4Addr) -> bool,
    ) -> Option<Ipv4Addr> {
        let (found, next) = self
            .0
            .fresh_scan(subnet, u128::from(lo), u128::from(hi), |ip| ok(self, ip));
        self.0.resume_at(subnet, next);
        found
    }

    /// The lease on `ip`, if any (active or not).
    pub fn by_ip(&self, ip: Ipv4Addr) -> Option<&Lease> {
        self.0.get(ip)
    }

    /// The lease of `mac` in `subnet`, if any (active or not).
    pub fn by_mac(&self, subnet: &str, mac: MacAddr) -> Option<&Lease> {
        self.0.of_client(&(subnet.to_string(), mac))
    }

    /// Whether `mac` holds an active, not declined lease in any subnet at `now`.
    pub fn has_active_lease(&self, mac: MacAddr, now: u64) -> bool {
        self.0.bindings().any(|((_, m), l)| *m == mac && l.active(now))
    }

    /// Whether `mac` may decline `ip` (RFC 2131 §4.3.3): only an address this server gave
    /// that client — its lease, or an outstanding offer to it. Anything else would let any
    /// host on the segment knock other clients (or reserved hosts) off their addresses.
    pub fn may_decline(&self, subnet: &str, mac: MacAddr, ip: Ipv4Addr) -> bool {
        self.by_mac(subnet, mac).is_some_and(|l| l.ip == ip) || self.0.offer_on(ip).is_some_and(|(m, _)| *m == mac)
    }

    /// True when `ip` may be given to `mac` now: no active lease or decline of another
    /// client, no live offer to another client.
    pub fn free_for(&self, ip: Ipv4Addr, mac: MacAddr, now: u64) -> bool {
        self.0.free_for(ip, &mac, now)
    }

    /// Sets `ip` aside for `mac` for [`OFFER_HOLD`].
    pub fn hold_offer(&mut self, ip: Ipv4Addr, mac: MacAddr, now: u64) {
        self.0.hold_offer(ip, &mac, now);
    }

    /// The address held for `mac` by an offer still in force at `now`.
    pub fn offered_to(&self, mac: MacAddr, now: u64) -> Option<Ipv4Addr> {
        self.0.offered_to(&mac, now)
    }

    /// Forgets any offer to `mac` (it chose another server, or got its ACK).
    pub fn drop_offer(&mut self, mac: MacAddr) {
        self.0.drop_offer(&mac);
    }

    /// Records (creates or extends) the lease of `mac` on `ip` and persists it
    /// ([`LeaseTable::bind`]; `lease.mac` is `mac`).
    ///
    /// # Errors
    /// Store errors; [`StoreError::Conflict`] when another client's active lease holds
    /// the address in the store (another node's; the index then shows it). The in-memory
    /// state is updated only after the write succeeded (or was queued for the commit).
    pub async fn bind(&mut self, lease: Lease, mac: MacAddr) -> Result<Lease, StoreError> {
        debug_assert_eq!(mac_of(&lease), mac);
        self.0.bind(lease).await
    }

    /// Marks the lease of `mac` on `ip` as expired now (DHCPRELEASE). Returns false when
    /// `mac` holds no lease on `ip`.
    ///
    /// # Errors
    /// Store errors.
    pub async fn release(&mut self, subnet: &str, mac: MacAddr, ip: Ipv4Addr, now: u64) -> Result<bool, StoreError> {
        self.0.release(&(subnet.to_string(), mac), ip, now).await
    }

    /// Keeps `ip` out of the pool until `until` (DHCPDECLINE: the client found it in use).
    ///
    /// # Errors
    /// Store errors.
    pub async fn decline(&mut self, subnet: &str, mac: MacAddr, ip: Ipv4Addr, until: u64) -> Result<(), StoreError> {
        let lease = Lease {
            id: lease_id(ip),
            mac: mac.to_string(),
            ip,
            subnet: subnet.to_string(),
            hostname: None,
            arch: None,
            expires_at: until,
            declined: true,
        };
        self.0.decline(lease).await.map(|_| ())
    }

    /// Deletes every lease (and decline) held by `mac`, in all subnets, and its offer;
    /// the addresses become free at once. Returns the deleted leases.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_mac(&mut self, mac: MacAddr) -> Result<Vec<Lease>, StoreError> {
        self.0.remove_where(|l| mac_of(l) == mac, |m| *m == mac).await
    }
}

fn mac_of(l: &Lease) -> MacAddr {
    normalise_mac(&l.mac).unwrap_or(MacAddr([0; 6]))
}
