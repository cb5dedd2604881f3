//! The lease core both DHCP servers instantiate: [`LeaseTable`] holds one persisted
//! table of [`LeaseRecord`] rows (one row per leased address, its id derived from the
//! address) and the in-memory indexes a handler allocates from — by address, by client,
//! the outstanding offers both ways — together with everything that keeps several nodes
//! on one pool honest: every write checked against the stored row of its address
//! ([`LeaseRecord::may_replace`]), refused replies noted for the caller
//! ([`LeaseTable::take_refused`]), other nodes' writes followed ([`LeaseTable::follow`]),
//! group commit ([`LeaseTable::set_group_commit`]), the spread start point of the search
//! for fresh addresses ([`LeaseTable::set_spread`]) and the shared store's reachability
//! ([`LeaseTable::store_reachable`], which the handlers' degraded answers read).
//! DHCPv4 ([`crate::leases::LeaseDb`]) and DHCPv6 (`bootlane_dhcp`'s `Lease6Db`) are thin
//! wrappers over it; the rows they store are theirs ([`crate::leases::Lease`], `Lease6`).
//!
//! Global state: none; each server owns one table behind a mutex.

use std::{collections::HashMap, fmt, hash::Hash, time::Duration};

use crate::store::{Entity, Store, StoreError, Table, Write};

/// How long an offered address stays set aside for the client it was offered to.
pub const OFFER_HOLD: Duration = Duration::from_secs(60);

/// Smallest size at which expired offers are purged.
const PURGE_MIN: usize = 4096;

/// What a lease row tells the core: its address, who holds it, until when. Implemented
/// by DHCPv4's [`crate::leases::Lease`] and DHCPv6's `Lease6`.
pub trait LeaseRecord: Entity {
    /// The leased address.
    type Addr: Copy + Eq + Hash + fmt::Display + fmt::Debug + Send + Sync + 'static;
    /// Who an address is offered to and compared with (DHCPv4: the MAC; DHCPv6: the IA).
    type Holder: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static;
    /// The key a client's binding is found by (DHCPv4: subnet and MAC; DHCPv6: subnet,
    /// DUID and IAID). A client holds at most one (not declined) address per key.
    type Client: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static;
    /// The protocol's name in log lines (`DHCP`, `DHCPv6`).
    const KIND: &'static str;
    /// The warning logged when a reply is withheld because the store refused its lease
    /// at a group commit (another node leased the address first).
    const WITHHELD: &'static str;

    /// The id of the row of `addr` (one row per address).
    fn lease_id(addr: Self::Addr) -> u64;
    /// The address whose row has `id`, when ids can be turned back into addresses
    /// (DHCPv4's can; DHCPv6's are hashes). Default: `None`.
    fn addr_of_id(_id: u64) -> Option<Self::Addr> {
        None
    }
    /// The address at position `n` of the address space (for the fresh-address search);
    /// `None` outside it.
    fn addr_at(n: u128) -> Option<Self::Addr>;
    /// Whether a write `new` may replace `current`, the row the store holds under its id
    /// at `now`. Checked for every write, in the store (see the module docs).
    fn may_replace(current: Option<&Self>, new: &Self, now: u64) -> bool;

    /// The leased address.
    fn addr(&self) -> Self::Addr;
    /// Who holds it.
    fn holder(&self) -> Self::Holder;
    /// The client key of the binding.
    fn client(&self) -> Self::Client;
    /// End of the lease (or of the decline), seconds since the Unix epoch.
    fn expires_at(&self) -> u64;
    /// Sets the end of the lease.
    fn set_expires_at(&mut self, at: u64);
    /// True for an address declined as in use elsewhere (kept out of the pool).
    fn declined(&self) -> bool;
    /// False for a stored row the core cannot use (deleted at load). Default: true.
    fn well_formed(&self) -> bool {
        true
    }
    /// True while the lease (or the decline) is in force at `now`.
    fn in_force(&self, now: u64) -> bool {
        self.expires_at() > now
    }
}

/// The leases of one protocol, persisted and indexed for allocation (see the module docs).
pub struct LeaseTable<R: LeaseRecord> {
    table: Option<Table<R>>,
    by_addr: HashMap<R::Addr, R>,
    /// The address of each client's (not declined) binding.
    by_client: HashMap<R::Client, R::Addr>,
    /// Outstanding offers: address → (holder, until).
    offers: HashMap<R::Addr, (R::Holder, u64)>,
    /// The address offered to each holder (the other direction of `offers`), so holding
    /// and dropping one costs the same with 50,000 outstanding as with one.
    offer_of: HashMap<R::Holder, R::Addr>,
    /// `offers` is purged of expired entries when it grows past this.
    purge_at: usize,
    /// Per subnet key: the position where the search for a never-used pool address
    /// resumes (see [`LeaseTable::fresh_scan`]).
    cursor: HashMap<String, u128>,
    /// Where in each pool this node's search for a fresh address begins (an offset,
    /// wrapping; 0 with one node). See [`LeaseTable::set_spread`].
    spread: u32,
    /// Replies whose lease the store refused at the last commit: `(holder, address)`.
    refused: Vec<(R::Holder, R::Addr)>,
    /// The shared store's link, when there is one (see [`LeaseTable::store_reachable`]).
    link: Option<tokio::sync::watch::Receiver<(bool, Option<String>)>>,
    group_commit: bool,
    /// Group-commit writes not yet in the store, in order.
    pending: Vec<Write<R>>,
    /// Writes are in the store but not yet flushed.
    dirty: bool,
}

impl<R: LeaseRecord> LeaseTable<R> {
    /// An empty table that persists nothing (unit tests of pure allocation).
    pub fn in_memory() -> Self {
        Self {
            table: None,
            by_addr: HashMap::new(),
            by_client: HashMap::new(),
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

    /// Loads every stored row. Rows that are not well formed, or that conflict with a
    /// newer row for the same address or client, are deleted (logged); rows stored under
    /// another id than their address's move to it.
    ///
    /// # Errors
    /// Store errors.
    pub async fn load(store: &Store) -> Result<Self, StoreError> {
        let table: Table<R> = store.table()?;
        let mut db = Self::in_memory();
        let mut stale = Vec::new();
        let mut rows = table.list()?;
        // Newest expiry last, so it wins below.
        rows.sort_by_key(R::expires_at);
        for l in rows {
            if !l.well_formed() {
                stale.push(l.id());
                continue;
            }
            let addr = l.addr();
            if let Some(old) = db.by_addr.remove(&addr) {
                stale.push(old.id());
                if db.by_client.get(&old.client()) == Some(&addr) {
                    db.by_client.remove(&old.client());
                }
            }
            if let Some(old_addr) = db.by_client.get(&l.client()).copied() {
                if let Some(old) = db.by_addr.remove(&old_addr) {
                    stale.push(old.id());
                }
            }
            if !l.declined() {
                db.by_client.insert(l.client(), addr);
            }
            db.by_addr.insert(addr, l);
        }
        for id in stale {
            tracing::info!(id, "removing a stale or duplicate stored {} lease", R::KIND);
            table.remove(id).await?;
        }
        // Rows stored before leases were keyed by address move to their address's id.
        let moved: Vec<R> = db
            .by_addr
            .values()
            .filter(|l| l.id() != R::lease_id(l.addr()))
            .cloned()
            .collect();
        if !moved.is_empty() {
            tracing::info!(leases = moved.len(), "re-keying stored {} leases by address", R::KIND);
            table
                .transaction(|tx| {
                    for l in &moved {
                        tx.remove::<R>(l.id())?;
                        let mut row = l.clone();
                        row.set_id(R::lease_id(l.addr()));
                        tx.put(&row)?;
                    }
                    Ok(())
                })
                .await?;
            for l in moved {
                if let Some(row) = db.by_addr.get_mut(&l.addr()) {
                    row.set_id(R::lease_id(l.addr()));
                }
            }
        }
        tracing::info!(leases = db.by_addr.len(), "{} leases loaded", R::KIND);
        db.table = Some(table);
        db.link = store.watch_link();
        Ok(db)
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
        self.cursor.clear();
    }

    /// The offset set by [`LeaseTable::set_spread`] (0 when never set).
    pub fn spread(&self) -> u32 {
        self.spread
    }

    /// False while the shared store is unreachable: a handler then renews the leases it
    /// holds without a write and allocates nothing new (the degraded answers). Always
    /// true for sled.
    pub fn store_reachable(&self) -> bool {
        self.link.as_ref().is_none_or(|l| l.borrow().0)
    }

    /// The replies to withhold after [`LeaseTable::begin_commit`]: `(holder, address)` of
    /// each lease the store refused because another client holds the address.
    pub fn take_refused(&mut self) -> Vec<(R::Holder, R::Addr)> {
        std::mem::take(&mut self.refused)
    }

    /// Defers the flush of every [`LeaseTable::bind`] write to [`LeaseTable::commit`].
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

    /// The first half of [`LeaseTable::commit`], for a caller that flushes without
    /// holding the lease lock: stores the queued writes (one atomic batch) and returns the
    /// table to flush when writes are unflushed, `None` when none are. The unflushed flag
    /// is cleared; call [`LeaseTable::commit_failed`] when the flush fails, so the next
    /// commit flushes again.
    ///
    /// # Errors
    /// Store errors storing the queue; the queue is kept for the next commit, and nothing
    /// written since the last commit may be acknowledged.
    pub async fn begin_commit(&mut self) -> Result<Option<Table<R>>, StoreError> {
        self.store_pending().await?;
        let t = self.table.clone().filter(|_| self.dirty);
        self.dirty = false;
        Ok(t)
    }

    /// Marks the writes as pending again after a failed flush (see
    /// [`LeaseTable::begin_commit`]).
    pub fn commit_failed(&mut self) {
        self.dirty = self.table.is_some();
    }

    /// Stores the queued group-commit writes as one batch (unflushed), each checked
    /// against the stored row of its address ([`LeaseRecord::may_replace`]). A refused
    /// lease is replaced in the index by the row that won, and noted for
    /// [`LeaseTable::take_refused`].
    async fn store_pending(&mut self) -> Result<(), StoreError> {
        if let (Some(t), false) = (&self.table, self.pending.is_empty()) {
            let now = crate::leases::now_secs();
            let refused = t
                .apply_guarded(&self.pending, |cur, new| R::may_replace(cur, new, now))
                .await?;
            for (id, current) in refused {
                let addr = self.pending.iter().find_map(|w| match w {
                    Write::Put(l) if l.id() == id => Some(l.addr()),
                    _ => None,
                });
                let Some(addr) = addr else { continue };
                if let Some(mine) = self.by_addr.get(&addr) {
                    self.refused.push((mine.holder(), addr));
                    tracing::warn!(holder = ?mine.holder(), %addr, "{}", R::WITHHELD);
                }
                self.set_row(addr, current.filter(|c| c.addr() == addr));
            }
            self.pending.clear();
            self.dirty = true;
        }
        Ok(())
    }

    /// Makes the index hold `row` for `addr` (`None`: no lease), whatever it held before.
    fn set_row(&mut self, addr: R::Addr, row: Option<R>) {
        if let Some(old) = self.by_addr.remove(&addr) {
            let key = old.client();
            if self.by_client.get(&key) == Some(&addr) {
                self.by_client.remove(&key);
            }
        }
        match row {
            Some(l) => {
                if !l.declined() {
                    // The client's previous address, if the index still has one, is
                    // another row's business (its own change, or stale).
                    self.by_client.insert(l.client(), addr);
                }
                self.by_addr.insert(addr, l);
            }
            // A freed address can be found by the fresh-address search again.
            None => self.cursor.clear(),
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
            let row = t.get(id)?.filter(|l| R::lease_id(l.addr()) == id);
            let addrs: Vec<R::Addr> = match (&row, R::addr_of_id(id)) {
                (Some(l), _) => vec![l.addr()],
                (None, Some(addr)) => vec![addr],
                (None, None) => self.by_addr.values().filter(|l| l.id() == id).map(R::addr).collect(),
            };
            for addr in addrs {
                let queued = self.pending.iter().any(|w| match w {
                    Write::Put(l) => l.addr() == addr,
                    Write::Remove(r) => *r == id,
                });
                if !queued {
                    self.set_row(addr, row.clone());
                }
            }
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
            .map(Entity::id)
            .chain(self.by_addr.keys().map(|a| R::lease_id(*a)))
            .collect();
        self.follow(ids)
    }

    /// Scans for the first never-used address of the pool `lo..=hi` (positions in the
    /// address space, [`LeaseRecord::addr_at`]) of `subnet` for which `ok` holds,
    /// starting where the last search of that subnet stopped and from this node's spread
    /// origin: amortised O(1) per request while the pool has fresh addresses. Returns
    /// the address found and the position to resume at; store it with
    /// [`LeaseTable::resume_at`]. Addresses passed over are leased or offered; one whose
    /// offer lapses unused is found again by the caller's full scan once no fresh
    /// address is left.
    pub fn fresh_scan(
        &self,
        subnet: &str,
        lo: u128,
        hi: u128,
        ok: impl Fn(R::Addr) -> bool,
    ) -> (Option<R::Addr>, u128) {
        let start = self.cursor.get(subnet).copied().unwrap_or(0);
        if hi < lo {
            return (None, start);
        }
        // Positions 0..size walk the pool from the node's origin, wrapping at its end.
        let size = (hi - lo).saturating_add(1);
        let origin = u128::from(self.spread) % size;
        let mut next = start;
        for i in start..size {
            next = i + 1;
            let Some(addr) = R::addr_at(lo + (origin + i) % size) else {
                continue;
            };
            if self.never_used(addr) && ok(addr) {
                return (Some(addr), next);
            }
        }
        (None, next)
    }

    /// Stores where the next [`LeaseTable::fresh_scan`] of `subnet` resumes.
    pub fn resume_at(&mut self, subnet: &str, next: u128) {
        self.cursor.insert(subnet.to_string(), next);
    }

    /// The lease on `addr`, if any (active or not, declines included).
    pub fn get(&self, addr: R::Addr) -> Option<&R> {
        self.by_addr.get(&addr)
    }

    /// The binding of `client`, if any (active or not; declines excluded).
    pub fn of_client(&self, client: &R::Client) -> Option<&R> {
        let addr = self.by_client.get(client)?;
        self.by_addr.get(addr).filter(|l| !l.declined())
    }

    /// Every client's binding (declines excluded), with its key.
    pub fn bindings(&self) -> impl Iterator<Item = (&R::Client, &R)> {
        self.by_client
            .iter()
            .filter_map(|(c, a)| self.by_addr.get(a).filter(|l| !l.declined()).map(|l| (c, l)))
    }

    /// Seconds the active binding of `client` on `addr` still runs at `now` (`None`: no
    /// such binding): what a degraded answer may give without a write.
    pub fn held(&self, client: &R::Client, addr: R::Addr, now: u64) -> Option<u64> {
        self.of_client(client)
            .filter(|l| l.addr() == addr && l.in_force(now))
            .map(|l| l.expires_at() - now)
    }

    /// Every lease, for listings.
    pub fn all(&self) -> impl Iterator<Item = &R> {
        self.by_addr.values()
    }

    /// True when `addr` may be given to `holder` at `now`: no active lease or decline of
    /// another holder on it, no live offer of it to another holder.
    pub fn free_for(&self, addr: R::Addr, holder: &R::Holder, now: u64) -> bool {
        if let Some(l) = self.by_addr.get(&addr) {
            if l.in_force(now) && (l.declined() || l.holder() != *holder) {
                return false;
            }
        }
        !self
            .offers
            .get(&addr)
            .is_some_and(|(h, until)| h != holder && *until > now)
    }

    /// True when `addr` has never been leased or its row was deleted (preferred, so an
    /// expired client still finds its old address).
    pub fn never_used(&self, addr: R::Addr) -> bool {
        !self.by_addr.contains_key(&addr)
    }

    /// Sets `addr` aside for `holder` for [`OFFER_HOLD`].
    pub fn hold_offer(&mut self, addr: R::Addr, holder: &R::Holder, now: u64) {
        self.drop_offer(holder);
        if self.offers.len() >= self.purge_at.max(PURGE_MIN) {
            self.offers.retain(|_, (_, until)| *until > now);
            let offers = &self.offers;
            self.offer_of.retain(|h, a| offers.get(a).is_some_and(|(o, _)| o == h));
            self.purge_at = (self.offers.len() * 2).max(PURGE_MIN);
        }
        self.offers
            .insert(addr, (holder.clone(), now + OFFER_HOLD.as_secs().max(1)));
        self.offer_of.insert(holder.clone(), addr);
    }

    /// The address held for `holder` by an offer still in force at `now`.
    pub fn offered_to(&self, holder: &R::Holder, now: u64) -> Option<R::Addr> {
        let addr = *self.offer_of.get(holder)?;
        self.offers
            .get(&addr)
            .filter(|(h, until)| h == holder && *until > now)
            .map(|_| addr)
    }

    /// The holder `addr` is offered to, and until when (lapsed offers included).
    pub fn offer_on(&self, addr: R::Addr) -> Option<(&R::Holder, u64)> {
        self.offers.get(&addr).map(|(h, until)| (h, *until))
    }

    /// Forgets any offer to `holder` (it chose another server, or got its lease).
    pub fn drop_offer(&mut self, holder: &R::Holder) {
        if let Some(addr) = self.offer_of.remove(holder) {
            if self.offers.get(&addr).is_some_and(|(h, _)| h == holder) {
                self.offers.remove(&addr);
            }
        }
    }

    /// Records (creates or extends) `lease` for its client and persists it; the client's
    /// older address is dropped and an expired row of another client on the same address
    /// replaced, in the same write. With group commit on, the write is queued for
    /// [`LeaseTable::commit`] (checked there; a refusal shows in
    /// [`LeaseTable::take_refused`]).
    ///
    /// # Errors
    /// Store errors; [`StoreError::Conflict`] when another client's active lease holds
    /// the address in the store (another node's; the index then shows it). The in-memory
    /// state is updated only after the write succeeded (or was queued).
    pub async fn bind(&mut self, lease: R) -> Result<R, StoreError> {
        let old_row = self
            .by_client
            .get(&lease.client())
            .copied()
            .filter(|a| *a != lease.addr())
            .and_then(|a| self.by_addr.get(&a).cloned());
        let gone: Vec<u64> = old_row.iter().map(Entity::id).collect();
        let lease = self.write_replacing(&gone, lease, true).await?;
        if let Some(old) = old_row {
            self.by_addr.remove(&old.addr());
        }
        // Another (expired) client's row on this address is replaced.
        self.set_row(lease.addr(), Some(lease.clone()));
        self.drop_offer(&lease.holder());
        if let Some((other, _)) = self.offers.remove(&lease.addr()) {
            self.offer_of.remove(&other);
        }
        Ok(lease)
    }

    /// Ends the binding of `client` on `addr` at `now` (a release); the row is kept so
    /// the client gets the same address next time. False when `client` holds no lease
    /// on `addr`.
    ///
    /// # Errors
    /// Store errors.
    pub async fn release(&mut self, client: &R::Client, addr: R::Addr, now: u64) -> Result<bool, StoreError> {
        match self.of_client(client).cloned() {
            Some(mut l) if l.addr() == addr => {
                l.set_expires_at(l.expires_at().min(now));
                let l = self.write_replacing(&[], l, false).await?;
                self.set_row(addr, Some(l));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Stores `row`, a decline (the client found its address in use), keeping the
    /// address out of the pool until the row expires; the client's binding and offer are
    /// forgotten.
    ///
    /// # Errors
    /// Store errors; [`StoreError::Conflict`] as for [`LeaseTable::bind`].
    pub async fn decline(&mut self, row: R) -> Result<R, StoreError> {
        let l = self.write_replacing(&[], row, false).await?;
        self.by_client.remove(&l.client());
        self.drop_offer(&l.holder());
        self.set_row(l.addr(), Some(l.clone()));
        Ok(l)
    }

    /// Deletes every lease (and decline) for which `row` holds, and every offer to a
    /// holder for which `holder` holds; the addresses become free at once. Returns the
    /// deleted leases.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn remove_where(
        &mut self,
        row: impl Fn(&R) -> bool,
        holder: impl Fn(&R::Holder) -> bool,
    ) -> Result<Vec<R>, StoreError> {
        let gone: Vec<R> = self.by_addr.values().filter(|l| row(l)).cloned().collect();
        let gone = self.remove_rows(gone, &row).await?;
        self.offers.retain(|_, (h, _)| !holder(h));
        self.offer_of.retain(|h, _| !holder(h));
        Ok(gone)
    }

    /// Deletes every lease and decline that ended before `now`. Returns how many.
    ///
    /// # Errors
    /// Store errors (then nothing is deleted).
    pub async fn prune(&mut self, now: u64) -> Result<usize, StoreError> {
        let gone: Vec<R> = self.by_addr.values().filter(|l| !l.in_force(now)).cloned().collect();
        Ok(self.remove_rows(gone, |l| !l.in_force(now)).await?.len())
    }

    /// Removes the rows `gone` and stores `lease` under its address's id in one
    /// transaction, flushed now unless `defer` and group commit are on (then at the next
    /// [`LeaseTable::commit`], checked there). Checked now otherwise: the store's row for
    /// the id must allow it ([`LeaseRecord::may_replace`]).
    async fn write_replacing(&mut self, gone: &[u64], mut lease: R, defer: bool) -> Result<R, StoreError> {
        let defer = defer && self.group_commit;
        let addr = lease.addr();
        lease.set_id(R::lease_id(addr));
        let Some(t) = self.table.clone() else { return Ok(lease) };
        if defer {
            self.pending.extend(gone.iter().map(|id| Write::Remove(*id)));
            self.pending.push(Write::Put(lease.clone()));
            return Ok(lease);
        }
        // Queued writes go first, so the store sees every write in order.
        self.store_pending().await?;
        let now = crate::leases::now_secs();
        let r = t
            .transaction(|tx| {
                for id in gone {
                    tx.remove::<R>(*id)?;
                }
                let current = tx.get::<R>(lease.id())?;
                if !R::may_replace(current.as_ref(), &lease, now) {
                    return Err(StoreError::Conflict(format!("{addr} is leased to another client")).into());
                }
                tx.put(&lease)?;
                Ok(lease.clone())
            })
            .await;
        if let Err(StoreError::Conflict(_)) = &r {
            // Another node's lease won: the index takes it.
            let row = t.get(R::lease_id(addr))?.filter(|row| row.addr() == addr);
            self.set_row(addr, row);
        }
        r
    }

    /// Removes each row of `gone` that, as the store holds it now, is still that address's
    /// and satisfies `still` (a row another node renewed meanwhile stays), in one
    /// transaction (flushed), after the queued writes; updates the index either way.
    /// Returns the removed rows.
    async fn remove_rows(&mut self, gone: Vec<R>, still: impl Fn(&R) -> bool) -> Result<Vec<R>, StoreError> {
        self.store_pending().await?;
        let Some(t) = self.table.clone() else {
            for l in &gone {
                self.set_row(l.addr(), None);
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
                    if let Some(cur) = tx.get::<R>(l.id())?.filter(|c| c.addr() == l.addr() && still(c)) {
                        tx.remove::<R>(l.id())?;
                        removed.push(cur);
                    }
                }
                Ok(removed)
            })
            .await?;
        for l in &gone {
            let row = t.get(l.id())?.filter(|r| r.addr() == l.addr());
            self.set_row(l.addr(), row);
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::{LeaseRecord, LeaseTable};
    use crate::store::{Store, StoreError};

    /// A row keyed like DHCPv6's: its id cannot be turned back into its address.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Row {
        id: u64,
        addr: u32,
        who: String,
        expires_at: u64,
        declined: bool,
    }

    crate::store::entity!(Row, "test_lease_rows");

    impl LeaseRecord for Row {
        type Addr = u32;
        type Holder = String;
        type Client = String;
        const KIND: &'static str = "test";
        const WITHHELD: &'static str = "test reply withheld";

        fn lease_id(addr: u32) -> u64 {
            u64::from(addr) * 7 + 1
        }
        fn addr_at(n: u128) -> Option<u32> {
            u32::try_from(n).ok()
        }
        fn may_replace(current: Option<&Self>, new: &Self, now: u64) -> bool {
            current.is_none_or(|c| c.addr == new.addr && (!c.in_force(now) || c.who == new.who))
        }
        fn addr(&self) -> u32 {
            self.addr
        }
        fn holder(&self) -> String {
            self.who.clone()
        }
        fn client(&self) -> String {
            self.who.clone()
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

    fn row(addr: u32, who: &str, expires_at: u64) -> Row {
        Row {
            id: 0,
            addr,
            who: who.into(),
            expires_at,
            declined: false,
        }
    }

    const LATER: u64 = u64::MAX / 2;

    /// Rows are stored under their address's id; a client's new address replaces its old
    /// one in the same write; another client's active address is refused; a deleted row
    /// another table follows leaves that table's index (found without an inverse id).
    #[tokio::test]
    async fn binds_replace_refuse_and_are_followed() {
        let store = Store::temporary();
        let mut a = LeaseTable::<Row>::load(&store).await.unwrap();
        let mut b = LeaseTable::<Row>::load(&store).await.unwrap();
        a.bind(row(10, "x", LATER)).await.unwrap();
        a.bind(row(11, "x", LATER)).await.unwrap();
        let stored = store.table::<Row>().unwrap().list().unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!((stored[0].id, stored[0].addr), (Row::lease_id(11), 11));
        assert!(a.never_used(10) && a.of_client(&"x".into()).unwrap().addr == 11);

        let e = b.bind(row(11, "y", LATER)).await.unwrap_err();
        assert!(matches!(e, StoreError::Conflict(_)), "{e}");
        assert_eq!(b.get(11).unwrap().who, "x", "the loser's index takes the stored row");
        assert_eq!(b.held(&"x".into(), 11, 0), Some(LATER));
        assert_eq!(b.held(&"x".into(), 10, 0), None);

        assert_eq!(a.remove_where(|r| r.who == "x", |h| h == "x").await.unwrap().len(), 1);
        b.follow([Row::lease_id(11)]).unwrap();
        assert!(b.get(11).is_none() && b.of_client(&"x".into()).is_none());
        b.bind(row(11, "y", LATER)).await.unwrap();
    }

    /// The fresh-address search starts at the node's spread point, wraps round the pool
    /// and resumes where it stopped; a freed address is found again.
    #[tokio::test]
    async fn the_fresh_search_starts_at_the_spread_and_resumes() {
        let mut t = LeaseTable::<Row>::in_memory();
        let (found, next) = t.fresh_scan("s", 100, 109, |_| true);
        assert_eq!((found, next), (Some(100), 1), "no spread: from the pool's start");
        t.set_spread("node-b");
        let origin = u32::try_from(u128::from(t.spread()) % 10).unwrap();
        let mut got = Vec::new();
        for _ in 0..10 {
            let (found, next) = t.fresh_scan("s", 100, 109, |_| true);
            let ip = found.unwrap();
            t.resume_at("s", next);
            t.bind(row(ip, &format!("c{ip}"), LATER)).await.unwrap();
            got.push(ip);
        }
        assert_eq!(got[0], 100 + origin);
        got.sort_unstable();
        assert_eq!(got, (100..110).collect::<Vec<_>>(), "every address once, wrapping");
        assert_eq!(t.fresh_scan("s", 100, 109, |_| true).0, None);
        t.prune(LATER + 1).await.unwrap();
        assert!(
            t.fresh_scan("s", 100, 109, |_| true).0.is_some(),
            "pruned addresses are fresh again"
        );
    }
}
