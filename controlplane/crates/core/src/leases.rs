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
//! Group commit: with [`LeaseDb::set_group_commit`] on, the leases [`LeaseDb::bind`]
//! writes are visible in the index at once but queued for the store; [`LeaseDb::commit`],
//! which the DHCP receive loop calls once per batch of requests before it sends any of
//! that batch's replies, stores the queue as one atomic batch and flushes it: every
//! acknowledged lease is on disk, at one store batch and one `fsync` per receive batch
//! instead of a transaction and an `fsync` per lease (sled rolls and writes its log
//! buffer for every transaction: on a /16 flood that is two `sync_file_range` calls per
//! lease). The flush runs without the lease lock ([`LeaseDb::begin_commit`]), so other
//! sockets and the API are not held up by the disk. Every other write (releases,
//! declines, the API's deletes) stores the queue first, in order, and is then flushed at
//! once as before.
//!
//! Several nodes, one pool: a lease's id is its address ([`lease_id`]), so the store
//! holds at most one lease per address, and every lease write is checked against the row
//! the store holds at that moment ([`crate::store::Table::apply_guarded`], or a
//! transaction's read): an address leased to another client, active, is never
//! overwritten. With the shared PostgreSQL store that check runs in the database under
//! its write lock, so two nodes answering one pool can both offer an address but only one
//! can acknowledge it; the loser's DHCPACK is withheld ([`LeaseDb::take_refused`]) and
//! the client, retrying, is refused. Nodes follow each other's lease writes
//! ([`LeaseDb::follow`]), so a lease granted through one node is renewed through any. The
//! search for a fresh address starts at a point derived from the node's name
//! ([`LeaseDb::set_spread`]), so nodes rarely offer the same address at all.
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
    /// Per subnet key: the position where the search for a never-used pool address
    /// resumes (every address before it was leased or offered since; see
    /// [`LeaseDb::fresh_address`]).
    cursor: HashMap<String, u32>,
    /// Where in each pool this node's search for a fresh address begins (an offset,
    /// wrapping; 0 with one node). See [`LeaseDb::set_spread`].
    spread: u32,
    /// DHCPACKs whose lease the store refused at the last commit: `(MAC, address)`.
    refused: Vec<(MacAddr, Ipv4Addr)>,
    /// The shared store's link, when there is one (see [`LeaseDb::store_reachable`]).
    link: Option<tokio::sync::watch::Receiver<(bool, Option<String>)>>,
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
            spread: 0,
            refused: Vec::new(),
            link: None,
            group_commit: false,
            pending: Vec::new(),
            dirty: false,
        }
    }

    /// Starts this node's searches for fresh addresses at a point of each pool derived
    /// from `node` (its `[server] node_name`), wrapping round: two nodes serving one pool
    /// then take addresses from different parts of it and rarely race for one. Only for a
    /// shared store; a single node hands addresses out from the pool's start.
    pub fn set_spread(&mut self, node: &str) {
        // FNV-1a: stable across builds and platforms (the std hasher is not).
        let mut h: u32 = 0x811c_9dc5;
        for b in node.bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
        self.spread = h;
        self.rewind();
    }

    /// False while the shared store is unreachable: held leases are then renewed without
    /// a write, and no address is newly allocated (see the handler). Always true for sled.
    pub fn store_reachable(&self) -> bool {
        self.link.as_ref().is_none_or(|l| l.borrow().0)
    }

    /// The DHCPACKs to withhold after [`LeaseDb::begin_commit`]: `(MAC, address)` of each
    /// lease the store refused because another client holds the address.
    pub fn take_refused(&mut self) -> Vec<(MacAddr, Ipv4Addr)> {
        std::mem::take(&mut self.refused)
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

    /// Stores the queued group-commit writes as one batch (unflushed), each lease checked
    /// against the stored row of its address ([`may_replace`]). A refused lease is
    /// replaced in the index by the row that won, and noted for [`LeaseDb::take_refused`].
    async fn store_pending(&mut self) -> Result<(), StoreError> {
        if let (Some(t), false) = (&self.table, self.pending.is_empty()) {
            let now = now_secs();
            let refused = t
                .apply_guarded(&self.pending, |cur, new| may_replace(cur, new, now))
                .await?;
            for (id, current) in refused {
                let Some(ip) = u32::try_from(id).ok().map(Ipv4Addr::from) else {
                    continue;
                };
                if let Some(mine) = self.by_ip.get(&ip) {
                    self.refused.push((mac_of(mine), ip));
                    tracing::warn!(mac = %mine.mac, %ip, "DHCPACK withheld: another node leased the address first");
                }
                self.set_row(ip, current);
            }
            self.pending.clear();
            self.dirty = true;
        }
        Ok(())
    }

    /// Makes the index hold `row` for `ip` (`None`: no lease), whatever it held before.
    fn set_row(&mut self, ip: Ipv4Addr, row: Option<Lease>) {
        if let Some(old) = self.by_ip.remove(&ip) {
            let key = (old.subnet.clone(), mac_of(&old));
            if self.by_mac.get(&key) == Some(&ip) {
                self.by_mac.remove(&key);
            }
        }
        match row {
            Some(l) => {
                if !l.declined {
                    let key = (l.subnet.clone(), mac_of(&l));
                    // The client's previous address in this subnet, if the index still
                    // has one, is another row's business (its own change, or stale).
                    self.by_mac.insert(key, ip);
                }
                self.by_ip.insert(ip, l);
            }
            // A freed address can be found by the fresh-address search again.
            None => self.rewind(),
        }
    }

    /// Applies other nodes' writes to the leases with these ids (from the store's mirror,
    /// which already holds them). An address with a write of this node's still queued is
    /// skipped: that write's check decides it at the next commit.
    ///
    /// # Errors
    /// Store or codec errors reading the mirror.
    pub fn follow(&mut self, ids: impl IntoIterator<Item = u64>) -> Result<(), StoreError> {
        let Some(t) = self.table.clone() else { return Ok(()) };
        for id in ids {
            let Some(ip) = u32::try_from(id).ok().map(Ipv4Addr::from) else {
                continue;
            };
            let queued = self.pending.iter().any(|w| match w {
                Write::Put(l) => l.ip == ip,
                Write::Remove(r) => *r == id,
            });
            if queued {
                continue;
            }
            let row = t.get(id)?.filter(|l| l.ip == ip);
            self.set_row(ip, row);
        }
        Ok(())
    }

    /// Rebuilds the index from the store (after other nodes' changes were missed), keeping
    /// the offers and the queued writes.
    ///
    /// # Errors
    /// Store or codec errors.
    pub fn reload(&mut self) -> Result<(), StoreError> {
        let Some(t) = self.table.clone() else { return Ok(()) };
        let ids: Vec<u64> = t
            .list()?
            .iter()
            .map(|l| l.id)
            .chain(self.by_ip.keys().map(|ip| lease_id(*ip)))
            .collect();
        self.follow(ids)
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
        if hi < lo {
            return None;
        }
        // Positions 0..size walk the pool from the node's origin, wrapping at its end.
        let size = u64::from(hi - lo) + 1;
        let origin = u64::from(self.spread) % size;
        let start = self.cursor.get(subnet).copied().unwrap_or(0);
        let mut found = None;
        let mut next = start;
        for i in u64::from(start)..size {
            next = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let n = lo + u32::try_from((origin + i) % size).unwrap_or(0);
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
        // Rows stored before leases were keyed by address move to their address's id.
        let moved: Vec<Lease> = db.by_ip.values().filter(|l| l.id != lease_id(l.ip)).cloned().collect();
        if !moved.is_empty() {
            tracing::info!(leases = moved.len(), "re-keying stored leases by address");
            table
                .transaction(|tx| {
                    for l in &moved {
                        tx.remove::<Lease>(l.id)?;
                        tx.put(&Lease {
                            id: lease_id(l.ip),
                            ..l.clone()
                        })?;
                    }
                    Ok(())
                })
                .await?;
            for l in moved {
                if let Some(row) = db.by_ip.get_mut(&l.ip) {
                    row.id = lease_id(l.ip);
                }
            }
        }
        tracing::info!(leases = db.by_ip.len(), "DHCP leases loaded");
        db.table = Some(table);
        db.link = store.watch_link();
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

    /// Whether `mac` holds an active, not declined lease in any subnet at `now`.
    pub fn has_active_lease(&self, mac: MacAddr, now: u64) -> bool {
        self.by_mac
            .iter()
            .filter(|((_, m), _)| *m == mac)
            .any(|(_, ip)| self.by_ip.get(ip).is_some_and(|l| !l.declined && l.active(now)))
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
    /// Store errors; [`StoreError::Conflict`] when another client's active lease holds
    /// the address in the store (another node's; the index then shows it). The in-memory
    /// state is updated only after the write succeeded (or was queued for the commit).
    pub async fn bind(&mut self, lease: Lease, mac: MacAddr) -> Result<Lease, StoreError> {
        // The same client may hold an older address in this subnet: drop it, in the same
        // write (all or nothing in the store).
        let key = (lease.subnet.clone(), mac);
        let old_row = self
            .by_mac
            .get(&key)
            .copied()
            .filter(|ip| *ip != lease.ip)
            .and_then(|ip| self.by_ip.get(&ip).cloned());
        let gone: Vec<u64> = old_row.iter().map(|l| l.id).collect();
        // The DHCPACK path: deferred to the batch's commit in group-commit mode.
        let lease = self.write_replacing(&gone, lease, true).await?;
        if let Some(old) = old_row {
            self.by_ip.remove(&old.ip);
        }
        // Another (expired) client's row on this address is replaced.
        self.set_row(lease.ip, Some(lease.clone()));
        self.drop_offer(mac);
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
        self.by_mac.remove(&(subnet.to_string(), mac));
        self.drop_offer(mac);
        let lease = self.write(lease).await?;
        self.set_row(ip, Some(lease));
        Ok(())
    }

    /// Deletes every lease (and decline) held by `mac`, in all subnets, and its offer;
    /// the addresses become free at once. Returns the deleted leases.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_mac(&mut self, mac: MacAddr) -> Result<Vec<Lease>, StoreError> {
        let gone: Vec<Lease> = self.by_ip.values().filter(|l| mac_of(l) == mac).cloned().collect();
        let gone = self.remove_rows(gone, |l| mac_of(l) == mac).await?;
        self.drop_offer(mac);
        Ok(gone)
    }

    /// Deletes every lease and decline that expired before `now`. Returns how many.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn prune(&mut self, now: u64) -> Result<usize, StoreError> {
        let gone: Vec<Lease> = self.by_ip.values().filter(|l| !l.active(now)).cloned().collect();
        Ok(self.remove_rows(gone, |l| !l.active(now)).await?.len())
    }

    async fn write(&mut self, lease: Lease) -> Result<Lease, StoreError> {
        self.write_replacing(&[], lease, false).await
    }

    /// Removes the rows `gone` and stores `lease` under its address's id in one
    /// transaction, flushed now unless `defer` and group commit are on (then at the next
    /// [`LeaseDb::commit`], checked there). Checked now otherwise: the store's row for the
    /// address must allow it ([`may_replace`]).
    async fn write_replacing(&mut self, gone: &[u64], mut lease: Lease, defer: bool) -> Result<Lease, StoreError> {
        let defer = defer && self.group_commit;
        lease.id = lease_id(lease.ip);
        let Some(t) = self.table.clone() else { return Ok(lease) };
        if defer {
            // Queued for the batch's commit (see the module docs).
            self.pending.extend(gone.iter().map(|id| Write::Remove(*id)));
            self.pending.push(Write::Put(lease.clone()));
            return Ok(lease);
        }
        // Queued writes go first, so the store sees every write in order.
        self.store_pending().await?;
        let now = now_secs();
        let r = t
            .transaction(|tx| {
                for id in gone {
                    tx.remove::<Lease>(*id)?;
                }
                let current = tx.get::<Lease>(lease.id)?;
                if !may_replace(current.as_ref(), &lease, now) {
                    return Err(StoreError::Conflict(format!("{} is leased to another client", lease.ip)).into());
                }
                tx.put(&lease)?;
                Ok(lease.clone())
            })
            .await;
        if let Err(StoreError::Conflict(_)) = &r {
            // Another node's lease won: the index takes it.
            let row = t.get(lease.id)?;
            self.set_row(lease.ip, row);
        }
        r
    }

    /// Removes each row of `gone` that, as the store holds it now, still satisfies
    /// `still` (a row another node renewed meanwhile stays), in one transaction (flushed),
    /// after the queued writes; updates the index either way. Returns the removed rows.
    async fn remove_rows(
        &mut self,
        gone: Vec<Lease>,
        still: impl Fn(&Lease) -> bool,
    ) -> Result<Vec<Lease>, StoreError> {
        self.store_pending().await?;
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
                    if let Some(cur) = tx.get::<Lease>(l.id)?.filter(|c| still(c)) {
                        tx.remove::<Lease>(l.id)?;
                        removed.push(cur);
                    }
                }
                Ok(removed)
            })
            .await?;
        for l in &gone {
            let row = t.get(l.id)?;
            self.set_row(l.ip, row);
        }
        Ok(removed)
    }
}

fn mac_of(l: &Lease) -> MacAddr {
    normalise_mac(&l.mac).unwrap_or(MacAddr([0; 6]))
}
