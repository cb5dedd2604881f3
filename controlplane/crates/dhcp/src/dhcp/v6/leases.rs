//! DHCPv6 leases: the persisted [`Lease6`] table (one row per client DUID, IAID and
//! subnet; every write flushed, like the IPv4 leases beside it) and the in-memory
//! index the DHCPv6 handler allocates from. [`Lease6Db::load`] rebuilds the index at
//! start, so a restart never hands out an address that is still leased. Advertised
//! addresses are held in memory for [`OFFER_HOLD`] (RFC 8415 §18.3.9 lets a server set
//! aside what it advertised).
//!
//! Several nodes, one pool, as for IPv4 ([`crate::dhcp::leases`]): a lease's id is
//! derived from its address ([`lease6_id`]), every write is checked in a store
//! transaction against the row the store holds for that id ([`may_replace6`]), so an
//! address leased to another IA by another node is never overwritten, and nodes follow
//! each other's lease writes ([`Lease6Db::follow`]).
//!
//! Global state: none; the handler owns one [`Lease6Db`] behind a mutex.

use std::{collections::HashMap, net::Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::dhcp::leases::{now_secs, OFFER_HOLD};
use bootlane_core::store::{Store, StoreError, Table};

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

/// The DHCPv6 leases of every subnet, indexed for allocation.
#[derive(Default)]
pub struct Lease6Db {
    table: Option<Table<Lease6>>,
    by_ip: HashMap<Ipv6Addr, Lease6>,
    by_ia: HashMap<IaKey, Ipv6Addr>,
    /// Outstanding advertisements: address → (IA, until).
    offers: HashMap<Ipv6Addr, (IaKey, u64)>,
    /// The address advertised to each IA (the other direction of `offers`), so holding
    /// and finding an advertisement costs the same under a Solicit flood.
    offer_of: HashMap<IaKey, Ipv6Addr>,
    /// `offers` is purged of lapsed entries when it grows past this.
    purge_at: usize,
}

/// Smallest size at which lapsed advertisements are purged.
const PURGE_MIN: usize = 4096;

impl Lease6Db {
    /// An empty database that persists nothing (unit tests).
    pub fn in_memory() -> Self {
        Self {
            purge_at: PURGE_MIN,
            ..Self::default()
        }
    }

    /// Loads every stored lease; a row that conflicts with a newer one for the same address
    /// or IA is deleted (logged).
    ///
    /// # Errors
    /// Store errors.
    pub async fn load(store: &Store) -> Result<Self, StoreError> {
        let table: Table<Lease6> = store.table()?;
        let mut db = Self::in_memory();
        let mut rows = table.list()?;
        rows.sort_by_key(|l| l.expires_at);
        let mut stale = Vec::new();
        for l in rows {
            if let Some(old) = db.by_ip.remove(&l.ip) {
                stale.push(old.id);
                db.by_ia.remove(&key_of(&old));
            }
            if let Some(old_ip) = db.by_ia.get(&key_of(&l)).copied() {
                if let Some(old) = db.by_ip.remove(&old_ip) {
                    stale.push(old.id);
                }
            }
            if !l.declined {
                db.by_ia.insert(key_of(&l), l.ip);
            }
            db.by_ip.insert(l.ip, l);
        }
        for id in stale {
            tracing::info!(id, "removing a stale or duplicate stored DHCPv6 lease");
            table.remove(id).await?;
        }
        // Rows stored before leases were keyed by address move to their address's id.
        let moved: Vec<Lease6> = db.by_ip.values().filter(|l| l.id != lease6_id(l.ip)).cloned().collect();
        if !moved.is_empty() {
            tracing::info!(leases = moved.len(), "re-keying stored DHCPv6 leases by address");
            table
                .transaction(|tx| {
                    for l in &moved {
                        tx.remove::<Lease6>(l.id)?;
                        tx.put(&Lease6 {
                            id: lease6_id(l.ip),
                            ..l.clone()
                        })?;
                    }
                    Ok(())
                })
                .await?;
            for l in moved {
                if let Some(row) = db.by_ip.get_mut(&l.ip) {
                    row.id = lease6_id(l.ip);
                }
            }
        }
        tracing::info!(leases = db.by_ip.len(), "DHCPv6 leases loaded");
        db.table = Some(table);
        Ok(db)
    }

    /// Every lease, for listings.
    pub fn all(&self) -> impl Iterator<Item = &Lease6> {
        self.by_ip.values()
    }

    /// The lease of an IA (active or not; declines excluded).
    pub fn by_ia(&self, ia: &IaKey) -> Option<&Lease6> {
        self.by_ia
            .get(ia)
            .and_then(|ip| self.by_ip.get(ip))
            .filter(|l| !l.declined)
    }

    /// True when `ip` may be given to `ia` at `now`: no active lease or decline of another
    /// IA on it, no live advertisement of it to another IA.
    pub fn free_for(&self, ip: Ipv6Addr, ia: &IaKey, now: u64) -> bool {
        if let Some(l) = self.by_ip.get(&ip) {
            if l.active(now) && (l.declined || key_of(l) != *ia) {
                return false;
            }
        }
        !self.offers.get(&ip).is_some_and(|(k, until)| k != ia && *until > now)
    }

    /// True when `ip` has never been leased (preferred, so an expired client still finds
    /// its old address).
    pub fn never_used(&self, ip: Ipv6Addr) -> bool {
        !self.by_ip.contains_key(&ip)
    }

    /// Sets `ip` aside for `ia` (an Advertise) for `OFFER_HOLD`.
    pub fn hold_offer(&mut self, ip: Ipv6Addr, ia: &IaKey, now: u64) {
        self.drop_offer(ia);
        if self.offers.len() >= self.purge_at.max(PURGE_MIN) {
            self.offers.retain(|_, (_, until)| *until > now);
            let offers = &self.offers;
            self.offer_of
                .retain(|k, ip| offers.get(ip).is_some_and(|(o, _)| o == k));
            self.purge_at = (self.offers.len() * 2).max(PURGE_MIN);
        }
        self.offers.insert(ip, (ia.clone(), now + OFFER_HOLD.as_secs().max(1)));
        self.offer_of.insert(ia.clone(), ip);
    }

    fn drop_offer(&mut self, ia: &IaKey) {
        if let Some(ip) = self.offer_of.remove(ia) {
            if self.offers.get(&ip).is_some_and(|(k, _)| k == ia) {
                self.offers.remove(&ip);
            }
        }
    }

    /// The address advertised to `ia`, if the advertisement is still held.
    pub fn offered(&self, ia: &IaKey, now: u64) -> Option<Ipv6Addr> {
        let ip = *self.offer_of.get(ia)?;
        self.offers
            .get(&ip)
            .filter(|(k, until)| k == ia && *until > now)
            .map(|_| ip)
    }

    /// Records (creates or extends) `lease` for its IA and persists it; an older address of
    /// the same IA is dropped and an expired row of another IA on the same address is
    /// replaced, in one transaction.
    ///
    /// # Errors
    /// Store errors; [`StoreError::Conflict`] when another IA's active lease holds the
    /// address in the store (another node's; the index then shows it). The in-memory state
    /// changes only after the write succeeded.
    pub async fn bind(&mut self, lease: Lease6) -> Result<Lease6, StoreError> {
        let ia = key_of(&lease);
        let old = self
            .by_ia
            .get(&ia)
            .copied()
            .filter(|ip| *ip != lease.ip)
            .and_then(|ip| self.by_ip.get(&ip).cloned());
        let ids: Vec<u64> = old.iter().map(|l| l.id).collect();
        let lease = self.write_replacing(&ids, lease).await?;
        if let Some(g) = &old {
            self.set_row(g.ip, None);
        }
        self.set_row(lease.ip, Some(lease.clone()));
        self.drop_offer(&ia);
        if let Some((other, _)) = self.offers.remove(&lease.ip) {
            self.offer_of.remove(&other);
        }
        Ok(lease)
    }

    /// Makes the index hold `row` for `ip` (`None`: no lease), whatever it held before.
    fn set_row(&mut self, ip: Ipv6Addr, row: Option<Lease6>) {
        if let Some(old) = self.by_ip.remove(&ip) {
            if self.by_ia.get(&key_of(&old)) == Some(&ip) {
                self.by_ia.remove(&key_of(&old));
            }
        }
        if let Some(l) = row {
            if !l.declined {
                self.by_ia.insert(key_of(&l), ip);
            }
            self.by_ip.insert(ip, l);
        }
    }

    /// Applies other nodes' writes to the leases with these ids: each is read from the
    /// store's mirror; an id whose row is gone drops the lease indexed under it.
    ///
    /// # Errors
    /// Store or codec errors reading the mirror.
    pub fn follow(&mut self, ids: impl IntoIterator<Item = u64>) -> Result<(), StoreError> {
        let Some(t) = self.table.clone() else { return Ok(()) };
        for id in ids {
            match t.get(id)? {
                Some(l) => self.set_row(l.ip, Some(l)),
                None => {
                    let gone: Vec<Ipv6Addr> = self.by_ip.values().filter(|l| l.id == id).map(|l| l.ip).collect();
                    for ip in gone {
                        self.set_row(ip, None);
                    }
                }
            }
        }
        Ok(())
    }

    /// Rebuilds the index from the store (after other nodes' changes were missed).
    ///
    /// # Errors
    /// Store or codec errors.
    pub fn reload(&mut self) -> Result<(), StoreError> {
        let Some(t) = self.table.clone() else { return Ok(()) };
        let ids: Vec<u64> = t
            .list()?
            .iter()
            .map(|l| l.id)
            .chain(self.by_ip.values().map(|l| l.id))
            .collect();
        self.follow(ids)
    }

    /// Ends the lease of `ia` on `ip` now (Release). False when `ia` holds no lease on `ip`.
    ///
    /// # Errors
    /// Store errors.
    pub async fn release(&mut self, ia: &IaKey, ip: Ipv6Addr, now: u64) -> Result<bool, StoreError> {
        match self.by_ia(ia).cloned() {
            Some(mut l) if l.ip == ip => {
                l.expires_at = l.expires_at.min(now);
                let l = self.write_replacing(&[], l).await?;
                self.set_row(ip, Some(l));
                Ok(true)
            }
            _ => Ok(false),
        }
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
        let mut l = self.by_ip.get(&ip).cloned().unwrap_or(Lease6 {
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
        let l = self.write_replacing(&[], l).await?;
        self.by_ia.remove(ia);
        self.drop_offer(ia);
        self.set_row(ip, Some(l));
        Ok(true)
    }

    /// Deletes every lease of the client `duid` (all IAs, all subnets). Returns them.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_duid(&mut self, duid: &str) -> Result<Vec<Lease6>, StoreError> {
        let gone: Vec<Lease6> = self.by_ip.values().filter(|l| l.duid == duid).cloned().collect();
        let gone = self.forget(gone, |l| l.duid == duid).await?;
        self.offers.retain(|_, (k, _)| k.1 != duid);
        self.offer_of.retain(|k, _| k.1 != duid);
        Ok(gone)
    }

    /// Deletes every lease and decline that ended before `now`. Returns how many.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn prune(&mut self, now: u64) -> Result<usize, StoreError> {
        let gone: Vec<Lease6> = self.by_ip.values().filter(|l| !l.active(now)).cloned().collect();
        Ok(self.forget(gone, |l| !l.active(now)).await?.len())
    }

    /// Removes each row of `gone` that, as the store holds it now, still satisfies `still`
    /// (a row another node renewed meanwhile stays), in one transaction; updates the index
    /// either way. Returns the removed rows.
    async fn forget(&mut self, gone: Vec<Lease6>, still: impl Fn(&Lease6) -> bool) -> Result<Vec<Lease6>, StoreError> {
        let Some(t) = self.table.clone() else {
            for l in &gone {
                self.set_row(l.ip, None);
            }
            return Ok(gone);
        };
        if gone.is_empty() {
            return Ok(gone);
        }
        let removed = t
            .transaction(|tx| {
                let mut removed = Vec::new();
                for l in &gone {
                    if let Some(cur) = tx.get::<Lease6>(l.id)?.filter(|c| c.ip == l.ip && still(c)) {
                        tx.remove::<Lease6>(l.id)?;
                        removed.push(cur);
                    }
                }
                Ok(removed)
            })
            .await?;
        for l in &gone {
            let row = t.get(l.id)?.filter(|r| r.ip == l.ip);
            self.set_row(l.ip, row);
        }
        Ok(removed)
    }

    /// Removes the rows `gone` and stores `lease` under its address's id in one
    /// transaction, checked against the store's row for that id ([`may_replace6`]).
    async fn write_replacing(&mut self, gone: &[u64], mut lease: Lease6) -> Result<Lease6, StoreError> {
        lease.id = lease6_id(lease.ip);
        let Some(t) = self.table.clone() else { return Ok(lease) };
        let now = now_secs();
        let r = t
            .transaction(|tx| {
                for id in gone {
                    tx.remove::<Lease6>(*id)?;
                }
                let current = tx.get::<Lease6>(lease.id)?;
                if !may_replace6(current.as_ref(), &lease, now) {
                    return Err(StoreError::Conflict(format!("{} is leased to another client", lease.ip)).into());
                }
                tx.put(&lease)?;
                Ok(lease.clone())
            })
            .await;
        if let Err(StoreError::Conflict(_)) = &r {
            // Another node's lease won: the index takes it.
            if let Some(row) = t.get(lease.id)?.filter(|row| row.ip == lease.ip) {
                self.set_row(lease.ip, Some(row));
            }
        }
        r
    }
}
