//! DHCPv6 leases (issue 12 "IPv6"): the persisted [`Lease6`] table (one row per client
//! DUID, IAID and subnet; every write flushed, like the IPv4 leases beside it) and the
//! in-memory index the DHCPv6 handler allocates from. [`Lease6Db::load`] rebuilds the
//! index at start, so a restart never hands out an address that is still leased.
//! Advertised addresses are held in memory for
//! [`OFFER_HOLD`] (RFC 8415 §18.3.9 lets a server set aside what it advertised).
//!
//! Global state: none; the handler owns one [`Lease6Db`] behind a mutex.

use std::{collections::HashMap, net::Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::dhcp::leases::OFFER_HOLD;
use crate::store::{Store, StoreError, Table};

/// A DHCPv6 lease as stored and listed by `GET /leases6` (an RFC 8415 §4.2 binding of one
/// address in one IA_NA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lease6 {
    /// Row id.
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

crate::store::entity!(Lease6, "dhcp6_leases");

impl Lease6 {
    /// True while the lease (or the decline) is in force at `now`.
    pub fn active(&self, now: u64) -> bool {
        self.expires_at > now
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
    /// the same IA and an expired row of another IA on the same address are replaced.
    ///
    /// # Errors
    /// Store errors; the in-memory state changes only after the write succeeded.
    pub async fn bind(&mut self, mut lease: Lease6) -> Result<Lease6, StoreError> {
        let ia = key_of(&lease);
        let mut gone = Vec::new();
        lease.id = 0;
        if let Some(old_ip) = self.by_ia.get(&ia).copied() {
            match self.by_ip.get(&old_ip) {
                Some(old) if old_ip == lease.ip => lease.id = old.id,
                Some(old) => gone.push(old.clone()),
                None => {}
            }
        }
        if lease.id == 0 {
            if let Some(other) = self.by_ip.get(&lease.ip) {
                gone.push(other.clone());
            }
        }
        let ids: Vec<u64> = gone.iter().map(|l| l.id).collect();
        let lease = self.write_replacing(&ids, lease).await?;
        for g in &gone {
            self.by_ip.remove(&g.ip);
            if self.by_ia.get(&key_of(g)) == Some(&g.ip) {
                self.by_ia.remove(&key_of(g));
            }
        }
        self.drop_offer(&ia);
        if let Some((other, _)) = self.offers.remove(&lease.ip) {
            self.offer_of.remove(&other);
        }
        self.by_ia.insert(ia, lease.ip);
        self.by_ip.insert(lease.ip, lease.clone());
        Ok(lease)
    }

    /// Ends the lease of `ia` on `ip` now (Release). False when `ia` holds no lease on `ip`.
    ///
    /// # Errors
    /// Store errors.
    pub async fn release(&mut self, ia: &IaKey, ip: Ipv6Addr, now: u64) -> Result<bool, StoreError> {
        match self.by_ia(ia).cloned() {
            Some(mut l) if l.ip == ip => {
                l.expires_at = l.expires_at.min(now);
                let l = self.write(l).await?;
                self.by_ip.insert(ip, l);
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
        let l = self.write(l).await?;
        self.by_ia.remove(ia);
        self.drop_offer(ia);
        self.by_ip.insert(ip, l);
        Ok(true)
    }

    /// Deletes every lease of the client `duid` (all IAs, all subnets). Returns them.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_duid(&mut self, duid: &str) -> Result<Vec<Lease6>, StoreError> {
        let gone: Vec<Lease6> = self.by_ip.values().filter(|l| l.duid == duid).cloned().collect();
        self.forget(&gone).await?;
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
        self.forget(&gone).await?;
        Ok(gone.len())
    }

    async fn forget(&mut self, gone: &[Lease6]) -> Result<(), StoreError> {
        if let (Some(t), false) = (&self.table, gone.is_empty()) {
            t.transaction(|tx| {
                for l in gone {
                    tx.remove::<Lease6>(l.id)?;
                }
                Ok(())
            })
            .await?;
        }
        for l in gone {
            self.by_ip.remove(&l.ip);
            if self.by_ia.get(&key_of(l)) == Some(&l.ip) {
                self.by_ia.remove(&key_of(l));
            }
        }
        Ok(())
    }

    async fn write(&self, mut lease: Lease6) -> Result<Lease6, StoreError> {
        if let Some(t) = &self.table {
            if lease.id == 0 {
                lease = t.insert(lease).await?;
            } else {
                t.put(&lease).await?;
            }
        } else if lease.id == 0 {
            lease.id = self.by_ip.values().map(|l| l.id).max().unwrap_or(0) + 1;
        }
        Ok(lease)
    }

    async fn write_replacing(&self, gone: &[u64], lease: Lease6) -> Result<Lease6, StoreError> {
        let Some(t) = &self.table else {
            return self.write(lease).await;
        };
        t.transaction(|tx| {
            for id in gone {
                tx.remove::<Lease6>(*id)?;
            }
            if lease.id == 0 {
                tx.insert(lease.clone())
            } else {
                tx.put(&lease)?;
                Ok(lease.clone())
            }
        })
        .await
    }
}
