//! DHCPv6 leases: the persisted [`Lease6`] table (one row per client DUID, IAID and
//! subnet; every write flushed, like the IPv4 leases beside it) and the in-memory
//! index the DHCPv6 handler allocates from. [`Lease6Db::load`] rebuilds the index at
//! start, so a restart never hands out an address that is still leased. Advertised
//! addresses are held in memory for [`bootlane_core::leases::OFFER_HOLD`] (RFC 8415 §18.3.9 lets a server set
//! aside what it advertised).
//!
//! The table is the lease core DHCPv4 uses too ([`LeaseTable`], in
//! [`bootlane_core::leases::table`]), so everything that keeps several nodes on one pool
//! honest is the same for both: a lease's id is derived from its address
//! ([`lease6_id`]), every write is checked against the row the store holds for that id
//! ([`may_replace6`]), so an address leased to another IA by another node is never
//! overwritten (the Reply then carries the IA with status NoAddrsAvail), nodes follow
//! each other's lease writes ([`LeaseTable::follow`]), group commit and withheld
//! replies ([`LeaseTable::take_refused`]) are available, and
//! [`LeaseTable::store_reachable`] tells the handler when to answer renewals from
//! memory (its degraded answers).
//!
//! Global state: none; the handler owns one [`Lease6Db`] behind a mutex.

use std::{
    net::Ipv6Addr,
    ops::{Deref, DerefMut},
};

use serde::{Deserialize, Serialize};

use bootlane_core::leases::{LeaseRecord, LeaseTable};
use bootlane_core::store::{Store, StoreError};

/// A DHCPv6 lease as stored and listed by `GET /leases6` (an RFC 8415 §4.2 binding of one
/// address in one IA_NA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lease6 {
    /// Row id, derived from the address ([`lease6_id`]).
    pub id: u64,
    /// The client's DUID (option 1), lower-case hex without separators.
    pub duid: String,
    /// The IA_NA's identity association id (RFC 8415 §21.4).
    pub iaid: u32,
    /// The leased address.
    #[schema(value_type = String)]
    pub ip: Ipv6Addr,
    /// The subnet (prefix) the lease belongs to, e.g. `fd00:77::/64`.
    pub subnet: String,
    /// The client's MAC when it can be told: from a DUID-LL/LLT (RFC 8415 §11.2, §11.4)
    /// or an EUI-64 link-local source address; lower case with colons.
    pub mac: Option<String>,
    /// Client architecture (RFC 5970 option 61), if it sent one.
    pub arch: Option<u16>,
    /// End of the valid lifetime, seconds since the Unix epoch. A released lease expires
    /// at release time and is kept so the client gets the same address next time.
    pub expires_at: u64,
    /// True when the client declined the address (RFC 8415 §18.3.8: in use elsewhere); it
    /// stays out of the pool until `expires_at`.
    #[serde(default)]
    pub declined: bool,
}

bootlane_core::store::entity!(Lease6, "dhcp6_leases");

impl Lease6 {
    /// True while the lease (or the decline) is in force at `now`.
    pub fn active(&self, now: u64) -> bool {
        self.expires_at > now
    }
}

/// The id of the lease of `ip`: 53 bits of the address's FNV-1a hash (exact in JavaScript
/// clients; never 0). Two addresses sharing an id is vanishingly rare, and safe: the
/// second is then refused by [`may_replace6`], not leased twice.
pub fn lease6_id(ip: Ipv6Addr) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in ip.octets() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h & ((1 << 53) - 1)).max(1)
}

/// Whether a lease write `new` may replace `current`, the row the store holds under its
/// id: none, another address (an id collision: refused), one no longer in force at
/// `now`, or the same IA's (a renewal, a release, its own decline).
pub fn may_replace6(current: Option<&Lease6>, new: &Lease6, now: u64) -> bool {
    match current {
        None => true,
        Some(c) if c.ip != new.ip => false,
        Some(c) => !c.active(now) || key_of(c) == key_of(new),
    }
}

/// A client's identity association: (subnet, DUID hex, IAID).
pub type IaKey = (String, String, u32);

fn key_of(l: &Lease6) -> IaKey {
    (l.subnet.clone(), l.duid.clone(), l.iaid)
}

/// The DHCPv6 leases of every subnet, indexed for allocation: the lease core
/// ([`LeaseTable`]) over [`Lease6`] rows, whose generic methods (bindings by IA, offers,
/// commit, follow, reachability, ...) it derefs to, with the DHCPv6 spellings below.
pub struct Lease6Db(LeaseTable<Lease6>);

impl Deref for Lease6Db {
    type Target = LeaseTable<Lease6>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Lease6Db {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl LeaseRecord for Lease6 {
    type Addr = Ipv6Addr;
    type Holder = IaKey;
    type Client = IaKey;
    const KIND: &'static str = "DHCPv6";
    const WITHHELD: &'static str = "DHCPv6 Reply withheld: another node leased the address first";

    fn lease_id(addr: Ipv6Addr) -> u64 {
        lease6_id(addr)
    }
    fn addr_at(n: u128) -> Option<Ipv6Addr> {
        Some(Ipv6Addr::from(n))
    }
    fn may_replace(current: Option<&Self>, new: &Self, now: u64) -> bool {
        may_replace6(current, new, now)
    }
    fn addr(&self) -> Ipv6Addr {
        self.ip
    }
    fn holder(&self) -> IaKey {
        key_of(self)
    }
    fn client(&self) -> IaKey {
        key_of(self)
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
}

impl Lease6Db {
    /// An empty database that persists nothing (unit tests).
    pub fn in_memory() -> Self {
        Self(LeaseTable::in_memory())
    }

    /// Loads every stored lease ([`LeaseTable::load`]); a row that conflicts with a newer
    /// one for the same address or IA is deleted (logged).
    ///
    /// # Errors
    /// Store errors.
    pub async fn load(store: &Store) -> Result<Self, StoreError> {
        LeaseTable::load(store).await.map(Self)
    }

    /// The lease of an IA (active or not; declines excluded).
    pub fn by_ia(&self, ia: &IaKey) -> Option<&Lease6> {
        self.0.of_client(ia)
    }

    /// The address advertised to `ia`, if the advertisement is still held.
    pub fn offered(&self, ia: &IaKey, now: u64) -> Option<Ipv6Addr> {
        self.0.offered_to(ia, now)
    }

    /// Keeps `ip` out of the pool until `until` (Decline). Only an address this IA holds or
    /// was advertised may be declined; false otherwise.
    ///
    /// # Errors
    /// Store errors.
    pub async fn decline(&mut self, ia: &IaKey, ip: Ipv6Addr, now: u64, until: u64) -> Result<bool, StoreError> {
        let held = self.by_ia(ia).is_some_and(|l| l.ip == ip) || self.offered(ia, now) == Some(ip);
        if !held {
            return Ok(false);
        }
        let mut l = self.0.get(ip).cloned().unwrap_or(Lease6 {
            id: 0,
            duid: ia.1.clone(),
            iaid: ia.2,
            ip,
            subnet: ia.0.clone(),
            mac: None,
            arch: None,
            expires_at: until,
            declined: true,
        });
        l.declined = true;
        l.expires_at = until;
        l.duid = ia.1.clone();
        l.iaid = ia.2;
        l.subnet = ia.0.clone();
        self.0.decline(l).await?;
        Ok(true)
    }

    /// Deletes every lease of the client `duid` (all IAs, all subnets) and its
    /// advertisements. Returns the deleted leases.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_duid(&mut self, duid: &str) -> Result<Vec<Lease6>, StoreError> {
        self.0.remove_where(|l| l.duid == duid, |k| k.1 == duid).await
    }
}
