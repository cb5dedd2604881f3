//! Leases: the persisted [`Lease`] table (sled, one row per client MAC and subnet, every
//! write flushed) and the in-memory index the handler allocates from. The store is the
//! source of truth; [`LeaseDb::load`] rebuilds the index from it at start, so a restart
//! never hands out an address that is still leased (the peer lost its leases on restart).
//! Offers are held in memory only (RFC 2131 §4.3.1 lets a server reserve an offered
//! address; a restart simply forgets them), indexed both ways so holding and dropping one
//! costs the same with 50,000 outstanding as with one (issue 14).
//!
//! Group commit (issue 14): with [`LeaseDb::set_group_commit`] on, the leases
//! [`LeaseDb::bind`] writes are visible in the index at once but queued for the store;
//! [`LeaseDb::commit`], which the DHCP receive loop calls once per batch of requests
//! before it sends any of that batch's replies, stores the queue as one atomic batch and
//! flushes it: every acknowledged lease is on disk, at one store batch and one `fsync`
//! per receive batch instead of a transaction and an `fsync` per lease (sled rolls and
//! writes its log buffer for every transaction: on a /16 flood that was two
//! `sync_file_range` calls per lease). The flush runs without the lease lock
//! ([`LeaseDb::begin_commit`]), so other sockets and the API are not held up by the disk.
//! Every other write (releases, declines, the API's deletes) stores the queue first, in
//! order, and is then flushed at once as before.
//!
//! Global state: none; the handler owns one [`LeaseDb`] behind a mutex.

use std::{
    collections::HashMap,
    net::Ipv4Addr,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use crate::net::types::{normalise_mac, MacAddr};
use crate::store::{Store, StoreError, Table, Write};

/// How long an offered address stays set aside for the client it was offered to.
pub const OFFER_HOLD: Duration = Duration::from_secs(60);

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A lease as stored and listed by `GET /leases` (RFC 2131 §4.3.1 binding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lease {
    /// Row id.
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

/// The leases of every subnet, indexed for allocation.
pub struct LeaseDb {
    table: Option<Table<Lease>>,
    /// By address.
    by_ip: HashMap<Ipv4Addr, Lease>,
    /// Address of each (subnet, MAC) lease.
    by_mac: HashMap<(String, MacAddr), Ipv4Addr>,
    /// Outstanding offers: address → (MAC, until).
    offers: HashMap<Ipv4Addr, (MacAddr, u64)>,
    /// The address offered to each MAC (the other direction of `offers`).
    offer_of: HashMap<MacAddr, Ipv4Addr>,
    /// `offers` is purged of expired entries when it grows past this.
    purge_at: usize,
    /// Per subnet key: where the search for a never-used pool address resumes (every
    /// address below it was leased or offered since; see [`LeaseDb::fresh_address`]).
    cursor: HashMap<String, u32>,
    group_commit: bool,
    /// Group-commit writes not yet in the store, in order.
    pending: Vec<Write<Lease>>,
    /// Writes are in the store but not yet flushed.
    dirty: bool,
}

/// Smallest size at which expired offers are purged.
const PURGE_MIN: usize = 4096;

impl LeaseDb {
    /// An empty database that persists nothing (unit tests of pure allocation).
    pub fn in_memory() -> Self {
        Self {
            table: None,
            by_ip: HashMap::new(),
            by_mac: HashMap::new(),
            offers: HashMap::new(),
            offer_of: HashMap::new(),
            purge_at: PURGE_MIN,
            cursor: HashMap::new(),
            group_commit: false,
            pending: Vec::new(),
            dirty: false,
        }
    }

    /// Defers the flush of every write to [`LeaseDb::commit`] (see the module docs).
    pub fn set_group_commit(&mut self, on: bool) {
        self.group_commit = on;
    }

    /// Flushes the writes since the last commit (nothing to do when there were none).
    ///
    /// # Errors
    /// Store errors: then nothing written since the last commit may be acknowledged.
    pub async fn commit(&mut self) -> Result<(), StoreError> {
        if let Some(t) = self.begin_commit().await? {
            if let Err(e) = t.flush().await {
                self.commit_failed();
                return Err(e);
            }
        }
        Ok(())
    }

    /// The first half of [`LeaseDb::commit`], for a caller that flushes without holding
    /// the lease lock (the DHCP handler: requests on other interfaces and the API's lease
    /// reads go on while the disk works): stores the queued writes (one atomic batch) and
    /// returns the table to flush when writes are unflushed, `None` when none are. The
    /// unflushed flag is cleared; call [`LeaseDb::commit_failed`] when the flush fails, so
    /// the next commit flushes again.
    ///
    /// # Errors
    /// Store errors storing the queue; the queue is kept for the next commit, and nothing
    /// written since the last commit may be acknowledged.
    pub async fn begin_commit(&mut self) -> Result<Option<Table<Lease>>, StoreError> {
        self.store_pending().await?;
        let t = self.table.clone().filter(|_| self.dirty);
        self.dirty = false;
        Ok(t)
    }

    /// Stores the queued group-commit writes as one batch (unflushed).
    async fn store_pending(&mut self) -> Result<(), StoreError> {
        if let (Some(t), false) = (&self.table, self.pending.is_empty()) {
            t.apply_unflushed(&self.pending).await?;
            self.pending.clear();
            self.dirty = true;
        }
        Ok(())
    }

    /// Marks the writes as pending again after a failed flush (see
    /// [`LeaseDb::begin_commit`]).
    pub fn commit_failed(&mut self) {
        self.dirty = self.table.is_some();
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
        let start = self.cursor.get(subnet).copied().unwrap_or(lo).max(lo);
        let mut found = None;
        let mut next = start;
        for n in start..=hi {
            next = n.saturating_add(1);
            let ip = Ipv4Addr::from(n);
            if self.never_used(ip) && ok(self, ip) {
                found = Some(ip);
                break;
            }
        }
        self.cursor.insert(subnet.to_string(), next);
        found
    }

    /// Forgets every search position (addresses became never-used again).
    fn rewind(&mut self) {
        self.cursor.clear();
    }

    /// Loads every stored lease. Rows that no longer decode, or that conflict with a
    /// newer row for the same address, are deleted (logged).
    ///
    /// # Errors
    /// Store errors.
    pub async fn load(store: &Store) -> Result<Self, StoreError> {
        let table: Table<Lease> = store.table()?;
        let mut db = Self {
            table: None,
            ..Self::in_memory()
        };
        let mut stale = Vec::new();
        let mut rows = table.list()?;
        // Newest expiry last, so it wins below.
        rows.sort_by_key(|l| l.expires_at);
        for l in rows {
            let Ok(mac) = normalise_mac(&l.mac) else {
                stale.push(l.id);
                continue;
            };
            if let Some(old) = db.by_ip.get(&l.ip) {
                stale.push(old.id);
                db.by_mac.remove(&(old.subnet.clone(), mac_of(old)));
            }
            if let Some(old_ip) = db.by_mac.get(&(l.subnet.clone(), mac)).copied() {
                if let Some(old) = db.by_ip.remove(&old_ip) {
                    stale.push(old.id);
                }
            }
            if !l.declined {
                db.by_mac.insert((l.subnet.clone(), mac), l.ip);
            }
            db.by_ip.insert(l.ip, l);
        }
        for id in stale {
            tracing::info!(id, "removing a stale or duplicate stored lease");
            table.remove(id).await?;
        }
        tracing::info!(leases = db.by_ip.len(), "DHCP leases loaded");
        db.table = Some(table);
        Ok(db)
    }

    /// The lease on `ip`, if any (active or not).
    pub fn by_ip(&self, ip: Ipv4Addr) -> Option<&Lease> {
        self.by_ip.get(&ip)
    }

    /// The lease of `mac` in `subnet`, if any (active or not).
    pub fn by_mac(&self, subnet: &str, mac: MacAddr) -> Option<&Lease> {
        let ip = self.by_mac.get(&(subnet.to_string(), mac))?;
        self.by_ip.get(ip).filter(|l| !l.declined)
    }

    /// Whether `mac` may decline `ip` (RFC 2131 §4.3.3): only an address this server gave
    /// that client — its lease, or an outstanding offer to it. Anything else would let any
    /// host on the segment knock other clients (or reserved hosts) off their addresses.
    pub fn may_decline(&self, subnet: &str, mac: MacAddr, ip: Ipv4Addr) -> bool {
        self.by_mac(subnet, mac).is_some_and(|l| l.ip == ip) || self.offers.get(&ip).is_some_and(|(m, _)| *m == mac)
    }

    /// Every lease, for listings.
    pub fn all(&self) -> impl Iterator<Item = &Lease> {
        self.by_ip.values()
    }

    /// True when `ip` may be given to `mac` now: no active lease or decline of another
    /// client, no live offer to another client.
    pub fn free_for(&self, ip: Ipv4Addr, mac: MacAddr, now: u64) -> bool {
        if let Some(l) = self.by_ip.get(&ip) {
            if l.active(now) && (l.declined || mac_of(l) != mac) {
                return false;
            }
        }
        if let Some((m, until)) = self.offers.get(&ip) {
            if *m != mac && *until > now {
                return false;
            }
        }
        true
    }

    /// True when `ip` has never been leased or its lease ran out (used to prefer
    /// never-used addresses, so an expired client still finds its old address).
    pub fn never_used(&self, ip: Ipv4Addr) -> bool {
        !self.by_ip.contains_key(&ip)
    }

    /// Sets `ip` aside for `mac` for [`OFFER_HOLD`].
    pub fn hold_offer(&mut self, ip: Ipv4Addr, mac: MacAddr, now: u64) {
        self.drop_offer(mac);
        if self.offers.len() >= self.purge_at.max(PURGE_MIN) {
            self.offers.retain(|_, (_, until)| *until > now);
            let offers = &self.offers;
            self.offer_of
                .retain(|m, ip| offers.get(ip).is_some_and(|(o, _)| o == m));
            self.purge_at = (self.offers.len() * 2).max(PURGE_MIN);
        }
        self.offers.insert(ip, (mac, now + OFFER_HOLD.as_secs().max(1)));
        self.offer_of.insert(mac, ip);
    }

    /// The address held for `mac` by an offer still in force at `now`.
    pub fn offered_to(&self, mac: MacAddr, now: u64) -> Option<Ipv4Addr> {
        let ip = *self.offer_of.get(&mac)?;
        self.offers
            .get(&ip)
            .filter(|(m, until)| *m == mac && *until > now)
            .map(|_| ip)
    }

    /// Forgets any offer to `mac` (it chose another server, or got its ACK).
    pub fn drop_offer(&mut self, mac: MacAddr) {
        if let Some(ip) = self.offer_of.remove(&mac) {
            if self.offers.get(&ip).is_some_and(|(m, _)| *m == mac) {
                self.offers.remove(&ip);
            }
        }
    }

    /// Records (creates or extends) the lease of `mac` on `ip` and persists it.
    ///
    /// # Errors
    /// Store errors; the in-memory state is updated only after the write succeeded.
    pub async fn bind(&mut self, mut lease: Lease, mac: MacAddr) -> Result<Lease, StoreError> {
        // The same client may hold an older address in this subnet: drop it.
        let key = (lease.subnet.clone(), mac);
        let mut reuse_id = None;
        let mut old_row = None;
        if let Some(old_ip) = self.by_mac.get(&key).copied() {
            if old_ip != lease.ip {
                old_row = self.by_ip.get(&old_ip).cloned();
            } else if let Some(old) = self.by_ip.get(&old_ip) {
                reuse_id = Some(old.id);
            }
        }
        // Another (expired) client's row on this address is replaced.
        let other_row = match reuse_id {
            None => self.by_ip.get(&lease.ip).cloned(),
            Some(_) => None,
        };
        lease.id = reuse_id.unwrap_or(0);
        // Dropping the old rows and writing the lease: all or nothing in the store, and
        // the in-memory view changes only after the store did.
        let gone: Vec<u64> = old_row.iter().chain(other_row.iter()).map(|l| l.id).collect();
        // The DHCPACK path: deferred to the batch's commit in group-commit mode.
        let lease = self.write_replacing(&gone, lease, true).await?;
        if let Some(old) = old_row {
            self.by_ip.remove(&old.ip);
        }
        if let Some(other) = other_row {
            self.by_mac.remove(&(other.subnet.clone(), mac_of(&other)));
            self.by_ip.remove(&other.ip);
        }
        self.drop_offer(mac);
        self.by_mac.insert(key, lease.ip);
        self.by_ip.insert(lease.ip, lease.clone());
        Ok(lease)
    }

    /// Marks the lease of `mac` on `ip` as expired now (DHCPRELEASE). Returns false when
    /// `mac` holds no lease on `ip`.
    ///
    /// # Errors
    /// Store errors.
    pub async fn release(&mut self, subnet: &str, mac: MacAddr, ip: Ipv4Addr, now: u64) -> Result<bool, StoreError> {
        match self.by_mac(subnet, mac).cloned() {
            Some(mut l) if l.ip == ip && !l.declined => {
                l.expires_at = l.expires_at.min(now);
                let l = self.write(l).await?;
                self.by_ip.insert(ip, l);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Keeps `ip` out of the pool until `until` (DHCPDECLINE: the client found it in use).
    ///
    /// # Errors
    /// Store errors.
    pub async fn decline(&mut self, subnet: &str, mac: MacAddr, ip: Ipv4Addr, until: u64) -> Result<(), StoreError> {
        let mut lease = Lease {
            id: 0,
            mac: mac.to_string(),
            ip,
            subnet: subnet.to_string(),
            hostname: None,
            arch: None,
            expires_at: until,
            declined: true,
        };
        if let Some(old) = self.by_ip.get(&ip).cloned() {
            lease.id = old.id;
        }
        self.by_mac.remove(&(subnet.to_string(), mac));
        self.drop_offer(mac);
        let lease = self.write(lease).await?;
        self.by_ip.insert(ip, lease);
        Ok(())
    }

    /// Deletes every lease (and decline) held by `mac`, in all subnets, and its offer;
    /// the addresses become free at once. Returns the deleted leases.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_mac(&mut self, mac: MacAddr) -> Result<Vec<Lease>, StoreError> {
        let gone: Vec<Lease> = self.by_ip.values().filter(|l| mac_of(l) == mac).cloned().collect();
        self.remove_rows(&gone).await?;
        for l in &gone {
            self.by_ip.remove(&l.ip);
            self.by_mac.remove(&(l.subnet.clone(), mac));
        }
        self.drop_offer(mac);
        self.rewind();
        Ok(gone)
    }

    /// Deletes every lease and decline that expired before `now`. Returns how many.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn prune(&mut self, now: u64) -> Result<usize, StoreError> {
        let gone: Vec<Lease> = self.by_ip.values().filter(|l| !l.active(now)).cloned().collect();
        self.remove_rows(&gone).await?;
        for l in &gone {
            self.by_ip.remove(&l.ip);
            let key = (l.subnet.clone(), mac_of(l));
            if self.by_mac.get(&key) == Some(&l.ip) {
                self.by_mac.remove(&key);
            }
        }
        if !gone.is_empty() {
            self.rewind();
        }
        Ok(gone.len())
    }

    async fn write(&mut self, lease: Lease) -> Result<Lease, StoreError> {
        self.write_replacing(&[], lease, false).await
    }

    /// Removes the rows `gone` and stores `lease` (new when its id is 0) in one
    /// transaction, flushed now unless `defer` and group commit are on (then at the next
    /// [`LeaseDb::commit`]).
    async fn write_replacing(&mut self, gone: &[u64], mut lease: Lease, defer: bool) -> Result<Lease, StoreError> {
        let defer = defer && self.group_commit;
        let Some(t) = &self.table else {
            if lease.id == 0 {
                lease.id = self.by_ip.values().map(|l| l.id).max().unwrap_or(0) + 1;
            }
            return Ok(lease);
        };
        if defer {
            // Queued for the batch's commit (see the module docs).
            if lease.id == 0 {
                lease.id = t.next_id()?;
            }
            self.pending.extend(gone.iter().map(|id| Write::Remove(*id)));
            self.pending.push(Write::Put(lease.clone()));
            return Ok(lease);
        }
        let t = t.clone();
        // Queued writes go first, so the store sees every write in order.
        self.store_pending().await?;
        t.transaction(|tx| {
            for id in gone {
                tx.remove::<Lease>(*id)?;
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

    /// Removes the rows of `gone` in one transaction (flushed), after the queued writes.
    async fn remove_rows(&mut self, gone: &[Lease]) -> Result<(), StoreError> {
        self.store_pending().await?;
        if let (Some(t), false) = (&self.table, gone.is_empty()) {
            t.transaction(|tx| {
                for l in gone {
                    tx.remove::<Lease>(l.id)?;
                }
                Ok(())
            })
            .await?;
        }
        Ok(())
    }
}

fn mac_of(l: &Lease) -> MacAddr {
    normalise_mac(&l.mac).unwrap_or(MacAddr([0; 6]))
}
