//! The store: sled is Bootlane's source of truth (every BPF map and in-memory index is a
//! projection of it). All sled access goes through this module's typed tables:
//! values are serde-JSON encoded, ids are `u64` keys in big-endian (so iteration is in
//! id order), and every acknowledged write is flushed to disk before the caller answers
//! (without the flush sled loses acknowledged writes on `kill -9`; see issue 2).
//!
//! Writes that touch several records (a profile and its script versions, say) go through
//! [`Store::transaction`]: a closure over a [`Tx`] whose reads and writes commit together
//! or not at all (sled's multi-tree transactions underneath; no sled type appears in this
//! module's public interface, so another backend can implement the same contract).
//!
//! Histories that only grow at one end (events, audit) are not sled trees but
//! [`journal::Journal`]s in `<data_dir>/journal/`, opened through [`Store::journal`].
//!
//! Global state: none besides the open sled database held by [`Store`].

pub mod journal;

use std::{
    marker::PhantomData,
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::{de::DeserializeOwned, Serialize};

/// Errors from the store. The source error is kept, never flattened into a string.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// sled failed (I/O, corruption).
    #[error("database error: {0}")]
    Sled(#[from] sled::Error),
    /// A stored value could not be encoded or decoded.
    #[error("stored value could not be (de)serialised: {0}")]
    Codec(#[from] serde_json::Error),
    /// A transaction was aborted by a conflict check.
    #[error("{0}")]
    Conflict(String),
    /// A transaction touched a table it did not declare (a programming error).
    #[error("table {0:?} was not declared for this transaction")]
    Undeclared(&'static str),
    /// The data directory's store format is one this build cannot read (written by a
    /// newer Bootlane, or unreadable); the message says which and what to do.
    #[error("{0}")]
    Format(String),
    /// Reading or writing the format file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The store format this build writes and reads (issue 15: "a store format version
/// written in the data directory, checked at start"). Format 1: sled trees of serde-JSON
/// values, `u64` big-endian ids (the layout since the first release). A change of layout
/// bumps it and adds a migration step (run by [`Store::open`]).
pub const FORMAT_VERSION: u32 = 1;

/// The file in the data directory holding the store format (one decimal number).
pub const FORMAT_FILE: &str = "store-format";

/// Migrations from format `n` to `n + 1`, in order (index 0 migrates format 1 to 2).
/// Empty: there is only format 1.
const MIGRATIONS: &[fn(&sled::Db) -> Result<()>] = &[];

/// Checks `<data_dir>/store-format` before the database is opened: absent (a new data
/// directory, or one from before the file existed, which is format 1) or at most
/// [`FORMAT_VERSION`] is fine; a newer or unreadable one is refused, never misread.
fn check_format(data_dir: &Path) -> Result<Option<u32>> {
    let found = stored_format(data_dir)?;
    match found {
        Some(v) if v > FORMAT_VERSION => Err(StoreError::Format(format!(
            "the data directory {} holds store format {v}, written by a newer Bootlane; this build reads \
             format {FORMAT_VERSION} at most. Run the newer version, or restore a backup made for this one",
            data_dir.display()
        ))),
        Some(0) => Err(StoreError::Format(format!(
            "{} says store format 0, which does not exist; the file is damaged",
            data_dir.join(FORMAT_FILE).display()
        ))),
        _ => Ok(found),
    }
}

/// Runs the [`MIGRATIONS`] from format `from` (a directory without a format file is
/// format 1) up to [`FORMAT_VERSION`].
fn migrate(db: &sled::Db, from: Option<u32>) -> Result<()> {
    let from = from.unwrap_or(1);
    for step in MIGRATIONS.iter().skip(from.saturating_sub(1) as usize) {
        step(db)?;
    }
    Ok(())
}

/// The format recorded in `data_dir`, `None` when there is no format file.
///
/// # Errors
/// [`StoreError::Format`] for a file that does not hold a number; I/O errors.
pub fn stored_format(data_dir: &Path) -> Result<Option<u32>> {
    let path = data_dir.join(FORMAT_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => {
            s.trim().parse().map(Some).map_err(|_| {
                StoreError::Format(format!("{} does not hold a store format number: {s:?}", path.display()))
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io {
            what: format!("reading {}", path.display()),
            source,
        }),
    }
}

/// Migrates an opened older store up to [`FORMAT_VERSION`], then records it.
fn write_format(data_dir: &Path) -> Result<()> {
    let path = data_dir.join(FORMAT_FILE);
    if stored_format(data_dir)? == Some(FORMAT_VERSION) {
        return Ok(());
    }
    let tmp = data_dir.join(format!("{FORMAT_FILE}.tmp"));
    std::fs::write(&tmp, format!("{FORMAT_VERSION}\n"))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| StoreError::Io {
            what: format!("writing {}", path.display()),
            source,
        })
}

/// Holds back writes while [`Store::snapshot`] reads: every write path takes it shared,
/// the snapshot takes it exclusively, so a snapshot never sees half of a multi-record
/// change.
type Gate = Arc<tokio::sync::RwLock<()>>;

/// How long [`Store::open`] retries a database whose lock is still held (1 s).
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A tree's raw `(key, value)` pairs, in key order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every tree of a store with its raw `(key, value)` pairs: what a backup holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// `(tree name, pairs in key order)`, trees in name order.
    pub trees: Vec<(String, Pairs)>,
}

impl StoreError {
    /// True when [`Store::open`] failed because another process holds the database's
    /// lock (normally a running `bootlane serve`).
    pub fn is_locked(&self) -> bool {
        matches!(self, Self::Sled(e) if lock_held(e))
    }
}

/// True when sled could not take the database's file lock.
fn lock_held(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(e) if e.to_string().contains("could not acquire lock"))
}

/// Result with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A record stored in an id-keyed table.
pub trait Entity: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// The sled tree holding this entity.
    const TREE: &'static str;
    /// The entity's id.
    fn id(&self) -> u64;
    /// Sets the id (called by [`Table::insert`]).
    fn set_id(&mut self, id: u64);
}

/// Implements [`Entity`] for a struct whose `pub id: u64` field is its id, stored in the
/// sled tree named `$tree`: `entity!(DnsRecord, "dns_records");`.
macro_rules! entity {
    ($t:ty, $tree:literal) => {
        impl $crate::store::Entity for $t {
            const TREE: &'static str = $tree;
            fn id(&self) -> u64 {
                self.id
            }
            fn set_id(&mut self, id: u64) {
                self.id = id;
            }
        }
    };
}
pub(crate) use entity;

/// The open database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    gate: Gate,
    /// Where [`Store::journal`] keeps its journals (`<data_dir>/journal`).
    journals: PathBuf,
    // Keeps a temporary directory alive for the life of a test store.
    _temp: Option<Arc<TempDirGuard>>,
}

struct TempDirGuard(PathBuf);
impl Drop for TempDirGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `[store]`: the embedded database (issue 14, soak).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Most memory sled's page cache may hold, in MiB (sled's own default is 1024): a
    /// guard against sled's default, pages beyond it are read from disk. Default 64; at
    /// least 8. (The event history and audit log are journals, not sled pages.)
    pub cache_mb: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { cache_mb: 64 }
    }
}

impl StoreConfig {
    /// Checks the section.
    ///
    /// # Errors
    /// `cache_mb` below 8 (the message names the key).
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.cache_mb < 8 {
            anyhow::bail!("[store] cache_mb must be at least 8 (MiB), got {}", self.cache_mb);
        }
        Ok(())
    }
}

impl Store {
    /// Opens (or creates) the database at `<data_dir>/db` with the default
    /// [`StoreConfig`]; see [`Store::open_with`].
    ///
    /// # Errors
    /// As [`Store::open_with`].
    pub fn open(data_dir: &Path) -> Result<Self> {
        Self::open_with(data_dir, &StoreConfig::default())
    }

    /// Opens (or creates) the database at `<data_dir>/db`, its page cache bounded by
    /// `cfg.cache_mb`.
    ///
    /// A database just closed by this process can still be locked for a moment (sled's
    /// background threads drop their handles after the last `Store` clone), so a held lock
    /// is retried for up to [`LOCK_WAIT`] before it is reported.
    ///
    /// # Errors
    /// sled errors, e.g. the directory is not writable or another process holds the lock
    /// ([`StoreError::is_locked`]).
    pub fn open_with(data_dir: &Path, cfg: &StoreConfig) -> Result<Self> {
        let from = check_format(data_dir)?;
        let started = std::time::Instant::now();
        let db = loop {
            let opened = sled::Config::new()
                .path(data_dir.join("db"))
                .mode(sled::Mode::HighThroughput)
                .cache_capacity(cfg.cache_mb.saturating_mul(1 << 20))
                .open();
            match opened {
                Err(e) if started.elapsed() < LOCK_WAIT && lock_held(&e) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        };
        migrate(&db, from)?;
        write_format(data_dir)?;
        Ok(Self {
            db,
            gate: Gate::default(),
            journals: data_dir.join("journal"),
            _temp: None,
        })
    }

    /// A store in a fresh temporary directory, removed when the last clone drops. For tests.
    ///
    /// # Panics
    /// If the temporary directory cannot be created.
    pub fn temporary() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "bootlane-test-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        let db = sled::Config::new()
            .path(dir.join("db"))
            .open()
            .expect("temporary sled database");
        Self {
            db,
            gate: Gate::default(),
            journals: dir.join("journal"),
            _temp: Some(Arc::new(TempDirGuard(dir))),
        }
    }

    /// The typed table for `T`.
    ///
    /// # Errors
    /// sled errors opening the tree.
    pub fn table<T: Entity>(&self) -> Result<Table<T>> {
        Ok(Table {
            tree: self.db.open_tree(T::TREE)?,
            db: self.db.clone(),
            gate: self.gate.clone(),
            _t: PhantomData,
        })
    }

    /// The journal of `T` values (the directory `<data_dir>/journal/<T::TREE>`), `time`
    /// giving a value's age for retention. [`Store::snapshot`] carries it as the tree
    /// `T::TREE`, and [`Store::load`] writes that into sled, from where the journal's owner
    /// moves it back on start (see [`crate::events::EventBus::open`]).
    ///
    /// # Errors
    /// I/O errors creating or reading the directory.
    pub fn journal<T: Entity>(&self, time: fn(&T) -> time::OffsetDateTime) -> Result<journal::Journal<T>> {
        journal::Journal::open(&self.journals.join(T::TREE), time)
    }

    /// A key-value tree for singleton documents (settings) and small indexes.
    ///
    /// # Errors
    /// sled errors.
    pub fn kv(&self, name: &str) -> Result<Kv> {
        Ok(Kv {
            tree: self.db.open_tree(name)?,
            db: self.db.clone(),
            gate: self.gate.clone(),
        })
    }

    /// Flushes every pending write to disk. Called after each acknowledged write.
    ///
    /// # Errors
    /// I/O errors from sled.
    pub async fn flush(&self) -> Result<()> {
        self.db.flush_async().await?;
        Ok(())
    }

    /// Bytes the database occupies on disk (for the `bootlane_store_size_bytes` gauge).
    ///
    /// # Errors
    /// I/O errors reading the database files' sizes.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }

    /// Runs `f` as one atomic transaction over the tables (entity `TREE` names, e.g.
    /// `&[Profile::TREE, ScriptVersion::TREE]`) it declares, then flushes: either every
    /// write `f` made is stored, or (when `f` returns an error, or the store fails) none
    /// is. `f` may be run more than once when a concurrent write conflicts, so it must not
    /// have side effects besides its [`Tx`] calls. Transactions cannot scan: read lists
    /// before, under the caller's write lock.
    ///
    /// # Errors
    /// The error `f` returned (a [`StoreError`] given to [`TxError::from`]); sled errors.
    pub async fn transaction<R, F>(&self, tables: &[&'static str], f: F) -> Result<R>
    where
        F: Fn(&Tx<'_>) -> Result<R, TxError>,
    {
        let _w = self.gate.read().await;
        let r = run_transaction(&self.db, tables, f)?;
        self.db.flush_async().await?;
        Ok(r)
    }

    /// A consistent copy of every tree (writes wait while it is taken; reads do not).
    ///
    /// # Errors
    /// sled errors.
    pub async fn snapshot(&self) -> Result<Snapshot> {
        let _all = self.gate.write().await;
        let mut names: Vec<Vec<u8>> = self.db.tree_names().into_iter().map(|n| n.to_vec()).collect();
        names.sort();
        let mut trees = Vec::new();
        for name in names {
            let tree = self.db.open_tree(&name)?;
            let pairs = tree
                .iter()
                .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())))
                .collect::<Result<Vec<_>, _>>()?;
            trees.push((String::from_utf8_lossy(&name).into_owned(), pairs));
        }
        // Journals, as trees of the same name (merged with a leftover sled tree of it).
        if let Ok(dirs) = std::fs::read_dir(&self.journals) {
            for d in dirs.flatten().filter(|d| d.path().is_dir()) {
                let name = d.file_name().to_string_lossy().into_owned();
                let pairs = journal::raw_pairs(&d.path())?;
                match trees.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, p)) => {
                        p.extend(pairs);
                        p.sort();
                        p.dedup_by(|a, b| a.0 == b.0);
                    }
                    None => trees.push((name, pairs)),
                }
            }
        }
        trees.sort_by(|a, b| a.0.cmp(&b.0));
        // The id generator is not a tree: keep it ahead of every restored id.
        trees.push((
            ID_TREE.into(),
            vec![(b"next".to_vec(), self.db.generate_id()?.to_be_bytes().to_vec())],
        ));
        Ok(Snapshot { trees })
    }

    /// Writes `snapshot` into this (empty) store, then flushes. The id generator is moved
    /// past the snapshot's, so new ids never reuse restored ones.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when the store already holds data; sled errors.
    pub async fn load(&self, snapshot: &Snapshot) -> Result<()> {
        let _all = self.gate.write().await;
        let holds_data = self
            .db
            .tree_names()
            .iter()
            .any(|n| self.db.open_tree(n).map(|t| !t.is_empty()).unwrap_or(true));
        if holds_data {
            return Err(StoreError::Conflict("the store is not empty".into()));
        }
        for (name, pairs) in &snapshot.trees {
            if name == ID_TREE {
                let next = pairs
                    .iter()
                    .find(|(k, _)| k == b"next")
                    .and_then(|(_, v)| <[u8; 8]>::try_from(v.as_slice()).ok())
                    .map_or(0, u64::from_be_bytes);
                while self.db.generate_id()? < next {}
                continue;
            }
            let tree = self.db.open_tree(name)?;
            let mut batch = sled::Batch::default();
            for (k, v) in pairs {
                batch.insert(k.as_slice(), v.as_slice());
            }
            tree.apply_batch(batch)?;
        }
        self.db.flush_async().await?;
        Ok(())
    }

    /// A new unique id (monotonic across restarts).
    ///
    /// # Errors
    /// sled errors.
    pub fn next_id(&self) -> Result<u64> {
        // generate_id starts at 0; ids start at 1 so 0 never names a record.
        Ok(self.db.generate_id()? + 1)
    }
}

/// Runs `f` in one sled transaction over the trees named `tables` (no flush).
fn run_transaction<R, F>(db: &sled::Db, tables: &[&'static str], f: F) -> Result<R>
where
    F: Fn(&Tx<'_>) -> Result<R, TxError>,
{
    use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
    let trees = tables
        .iter()
        .map(|t| db.open_tree(t))
        .collect::<Result<Vec<sled::Tree>, sled::Error>>()?;
    let r = <[sled::Tree] as Transactional<StoreError>>::transaction(&trees[..], |view| {
        f(&Tx {
            trees: view,
            names: tables,
        })
        .map_err(|e| match e.0 {
            TxErrorKind::Abort(e) => ConflictableTransactionError::Abort(e),
            TxErrorKind::Sled(e) => e.into(),
        })
    });
    match r {
        Ok(r) => Ok(r),
        Err(TransactionError::Abort(e)) => Err(e),
        Err(TransactionError::Storage(e)) => Err(e.into()),
    }
}

/// Pseudo-tree name under which a [`Snapshot`] carries the id generator's position.
pub const ID_TREE: &str = "__id_generator";

/// One write of a batch given to [`Table::apply_unflushed`].
#[derive(Debug, Clone, PartialEq)]
pub enum Write<T> {
    /// Store the value under its id (replacing any value there).
    Put(T),
    /// Remove the value with this id (nothing when there is none).
    Remove(u64),
}

/// A typed, id-keyed table.
#[derive(Clone)]
pub struct Table<T> {
    tree: sled::Tree,
    db: sled::Db,
    gate: Gate,
    _t: PhantomData<fn() -> T>,
}

impl<T: Entity> Table<T> {
    /// Stores `value` under a new id and returns it with the id set. Flushes.
    ///
    /// # Errors
    /// sled or codec errors.
    pub async fn insert(&self, mut value: T) -> Result<T> {
        let _w = self.gate.read().await;
        value.set_id(self.db.generate_id()? + 1);
        self.tree
            .insert(value.id().to_be_bytes(), serde_json::to_vec(&value)?)?;
        self.db.flush_async().await?;
        Ok(value)
    }

    /// Replaces the value with id `value.id()` (or creates it). Flushes.
    ///
    /// # Errors
    /// sled or codec errors.
    pub async fn put(&self, value: &T) -> Result<()> {
        let _w = self.gate.read().await;
        self.tree.insert(value.id().to_be_bytes(), serde_json::to_vec(value)?)?;
        self.db.flush_async().await?;
        Ok(())
    }

    /// The value with this id.
    ///
    /// # Errors
    /// sled or codec errors.
    pub fn get(&self, id: u64) -> Result<Option<T>> {
        self.tree
            .get(id.to_be_bytes())?
            .map(|v| serde_json::from_slice(&v))
            .transpose()
            .map_err(Into::into)
    }

    /// Removes and returns the value with this id. Flushes.
    ///
    /// # Errors
    /// sled or codec errors.
    pub async fn remove(&self, id: u64) -> Result<Option<T>> {
        let _w = self.gate.read().await;
        let old = self.tree.remove(id.to_be_bytes())?;
        self.db.flush_async().await?;
        old.map(|v| serde_json::from_slice(&v)).transpose().map_err(Into::into)
    }

    /// Makes every write so far durable (one `fsync` of the database's log).
    ///
    /// # Errors
    /// sled errors.
    pub async fn flush(&self) -> Result<()> {
        self.db.flush_async().await?;
        Ok(())
    }

    /// Runs `f` as one atomic transaction over this table alone (see
    /// [`Store::transaction`]), then flushes.
    ///
    /// # Errors
    /// As [`Store::transaction`].
    pub async fn transaction<R, F>(&self, f: F) -> Result<R>
    where
        F: Fn(&Tx<'_>) -> Result<R, TxError>,
    {
        let _w = self.gate.read().await;
        let r = run_transaction(&self.db, &[T::TREE], f)?;
        self.db.flush_async().await?;
        Ok(r)
    }

    /// Every value, in id order.
    ///
    /// # Errors
    /// sled or codec errors (a single undecodable value fails the whole listing).
    pub fn list(&self) -> Result<Vec<T>> {
        self.tree
            .iter()
            .values()
            .map(|v| Ok(serde_json::from_slice(&v?)?))
            .collect()
    }

    /// Stores every value under its own id (ids already set, e.g. event ids) in one
    /// atomic batch, then flushes once. Used where many small records arrive at once.
    ///
    /// # Errors
    /// sled or codec errors; on error nothing of the batch is stored.
    pub async fn put_many(&self, values: &[T]) -> Result<()> {
        let _w = self.gate.read().await;
        let mut batch = sled::Batch::default();
        for v in values {
            batch.insert(&v.id().to_be_bytes(), serde_json::to_vec(v)?);
        }
        self.tree.apply_batch(batch)?;
        self.db.flush_async().await?;
        Ok(())
    }

    /// A new id from the same sequence as [`Table::insert`] and [`Tx::insert`], for a
    /// value written later by [`Table::apply_unflushed`].
    ///
    /// # Errors
    /// sled errors.
    pub fn next_id(&self) -> Result<u64> {
        Ok(self.db.generate_id()? + 1)
    }

    /// Applies `writes` in order as one atomic batch (all or none; a later write to an id
    /// wins over an earlier one), without flushing: the caller makes them durable with
    /// [`Table::flush`]. One batch costs the store one log reservation, where a
    /// transaction per value costs one each (the DHCP group commit, issue 14).
    ///
    /// # Errors
    /// sled or codec errors; then nothing of the batch is stored.
    pub async fn apply_unflushed(&self, writes: &[Write<T>]) -> Result<()> {
        let _w = self.gate.read().await;
        let mut batch = sled::Batch::default();
        for w in writes {
            match w {
                Write::Put(v) => batch.insert(&v.id().to_be_bytes(), serde_json::to_vec(v)?),
                Write::Remove(id) => batch.remove(&id.to_be_bytes()),
            }
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Up to `limit` values with an id greater than `after`, in ascending id order.
    ///
    /// # Errors
    /// sled or codec errors.
    pub fn after(&self, after: u64, limit: usize) -> Result<Vec<T>> {
        let start = after.saturating_add(1).to_be_bytes();
        self.tree
            .range(start..)
            .values()
            .take(limit)
            .map(|v| Ok(serde_json::from_slice::<T>(&v?)?))
            .collect()
    }

    /// Every value, newest (highest id) first, decoded lazily: callers filter and page
    /// without decoding the whole table.
    pub fn newest_first(&self) -> impl Iterator<Item = Result<T>> + '_ {
        self.tree.iter().rev().map(|kv| {
            let (_, v) = kv?;
            Ok(serde_json::from_slice::<T>(&v)?)
        })
    }

    /// Every value, oldest (lowest id) first, decoded lazily.
    pub fn oldest_first(&self) -> impl Iterator<Item = Result<T>> + '_ {
        self.tree.iter().values().map(|v| Ok(serde_json::from_slice::<T>(&v?)?))
    }

    /// Removes every value with an id below `id` in one batch; returns how many. Flushes.
    ///
    /// # Errors
    /// sled errors.
    pub async fn remove_below(&self, id: u64) -> Result<usize> {
        let _w = self.gate.read().await;
        let mut batch = sled::Batch::default();
        let mut n = 0;
        for k in self.tree.range(..id.to_be_bytes()).keys() {
            batch.remove(k?);
            n += 1;
        }
        if n > 0 {
            self.tree.apply_batch(batch)?;
            self.db.flush_async().await?;
        }
        Ok(n)
    }

    /// The id of the `n`-th oldest value (0-based), if there are that many.
    ///
    /// # Errors
    /// sled errors.
    pub fn nth_oldest_id(&self, n: usize) -> Result<Option<u64>> {
        match self.tree.iter().keys().nth(n) {
            Some(k) => {
                let k = k?;
                let mut b = [0u8; 8];
                b.copy_from_slice(&k[..8.min(k.len())]);
                Ok(Some(u64::from_be_bytes(b)))
            }
            None => Ok(None),
        }
    }

    /// Removes every value at once (sync; no flush). Returns how many there were.
    ///
    /// # Errors
    /// sled errors.
    pub fn clear(&self) -> Result<usize> {
        let n = self.tree.len();
        self.tree.clear()?;
        Ok(n)
    }

    /// Number of stored values.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// True when the table holds no value.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}

/// The view of a running [`Store::transaction`]: typed reads and writes on the declared
/// tables. Writes become visible to other readers only when the transaction commits.
pub struct Tx<'a> {
    trees: &'a [sled::transaction::TransactionalTree],
    names: &'a [&'static str],
}

/// Why a transaction closure stopped. Built from a [`StoreError`] (`?` on one, or
/// `Err(StoreError::Conflict(..).into())` to abort on purpose); the store's own failures
/// and conflict retries travel in it too. Opaque so that no backend type leaks.
#[derive(Debug)]
pub struct TxError(TxErrorKind);

#[derive(Debug)]
enum TxErrorKind {
    Abort(StoreError),
    Sled(sled::transaction::UnabortableTransactionError),
}

impl From<StoreError> for TxError {
    fn from(e: StoreError) -> Self {
        Self(TxErrorKind::Abort(e))
    }
}

impl From<serde_json::Error> for TxError {
    fn from(e: serde_json::Error) -> Self {
        Self(TxErrorKind::Abort(StoreError::Codec(e)))
    }
}

impl From<sled::transaction::UnabortableTransactionError> for TxError {
    fn from(e: sled::transaction::UnabortableTransactionError) -> Self {
        Self(TxErrorKind::Sled(e))
    }
}

impl Tx<'_> {
    fn tree<T: Entity>(&self) -> Result<&sled::transaction::TransactionalTree, TxError> {
        self.names
            .iter()
            .position(|n| *n == T::TREE)
            .map(|i| &self.trees[i])
            .ok_or(TxError(TxErrorKind::Abort(StoreError::Undeclared(T::TREE))))
    }

    /// The value with this id, as this transaction sees it.
    ///
    /// # Errors
    /// Store or codec errors; an undeclared table.
    pub fn get<T: Entity>(&self, id: u64) -> Result<Option<T>, TxError> {
        match self.tree::<T>()?.get(id.to_be_bytes())? {
            Some(v) => Ok(Some(serde_json::from_slice(&v)?)),
            None => Ok(None),
        }
    }

    /// Stores `value` under a new id (same id sequence as [`Table::insert`]) and returns it
    /// with the id set.
    ///
    /// # Errors
    /// Store or codec errors; an undeclared table.
    pub fn insert<T: Entity>(&self, mut value: T) -> Result<T, TxError> {
        let tree = self.tree::<T>()?;
        value.set_id(tree.generate_id().map_err(StoreError::from)? + 1);
        tree.insert(&value.id().to_be_bytes(), serde_json::to_vec(&value)?)?;
        Ok(value)
    }

    /// Replaces (or creates) the value with id `value.id()`.
    ///
    /// # Errors
    /// Store or codec errors; an undeclared table.
    pub fn put<T: Entity>(&self, value: &T) -> Result<(), TxError> {
        self.tree::<T>()?
            .insert(&value.id().to_be_bytes(), serde_json::to_vec(value)?)?;
        Ok(())
    }

    /// Removes and returns the value with this id.
    ///
    /// # Errors
    /// Store or codec errors; an undeclared table.
    pub fn remove<T: Entity>(&self, id: u64) -> Result<Option<T>, TxError> {
        match self.tree::<T>()?.remove(&id.to_be_bytes())? {
            Some(v) => Ok(Some(serde_json::from_slice(&v)?)),
            None => Ok(None),
        }
    }
}

/// A string-keyed tree of JSON documents.
#[derive(Clone)]
pub struct Kv {
    tree: sled::Tree,
    db: sled::Db,
    gate: Gate,
}

impl Kv {
    /// The document under `key`.
    ///
    /// # Errors
    /// sled or codec errors.
    pub fn get<V: DeserializeOwned>(&self, key: &str) -> Result<Option<V>> {
        self.tree
            .get(key)?
            .map(|v| serde_json::from_slice(&v))
            .transpose()
            .map_err(Into::into)
    }

    /// Stores `value` under `key`. Flushes.
    ///
    /// # Errors
    /// sled or codec errors.
    pub async fn put<V: Serialize>(&self, key: &str, value: &V) -> Result<()> {
        let _w = self.gate.read().await;
        self.tree.insert(key, serde_json::to_vec(value)?)?;
        self.db.flush_async().await?;
        Ok(())
    }

    /// Removes `key`. Flushes.
    ///
    /// # Errors
    /// sled errors.
    pub async fn remove(&self, key: &str) -> Result<()> {
        let _w = self.gate.read().await;
        self.tree.remove(key)?;
        self.db.flush_async().await?;
        Ok(())
    }

    /// Every `(key, value)` pair, in key order; undecodable values are skipped.
    ///
    /// # Errors
    /// sled errors.
    pub fn iter<V: DeserializeOwned>(&self) -> Result<Vec<(String, V)>> {
        let mut out = Vec::new();
        for kv in self.tree.iter() {
            let (k, v) = kv?;
            if let Ok(v) = serde_json::from_slice(&v) {
                out.push((String::from_utf8_lossy(&k).into_owned(), v));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
    struct Thing {
        id: u64,
        v: String,
    }
    impl Entity for Thing {
        const TREE: &'static str = "things";
        fn id(&self) -> u64 {
            self.id
        }
        fn set_id(&mut self, id: u64) {
            self.id = id;
        }
    }

    #[tokio::test]
    async fn insert_get_list_remove() {
        let s = Store::temporary();
        let t = s.table::<Thing>().unwrap();
        let a = t.insert(Thing { id: 0, v: "a".into() }).await.unwrap();
        let b = t.insert(Thing { id: 0, v: "b".into() }).await.unwrap();
        assert!(a.id >= 1 && b.id > a.id);
        assert_eq!(t.get(a.id).unwrap().unwrap(), a);
        assert_eq!(t.list().unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(t.remove(a.id).await.unwrap().unwrap(), a);
        assert_eq!(t.list().unwrap(), vec![b]);
        assert!(t.get(a.id).unwrap().is_none());
    }

    /// A batch applies in order (the later write to an id wins) and only together.
    #[tokio::test]
    async fn a_write_batch_applies_in_order() {
        let s = Store::temporary();
        let t = s.table::<Thing>().unwrap();
        let a = t.insert(Thing { id: 0, v: "a".into() }).await.unwrap();
        let id = t.next_id().unwrap();
        assert!(id > a.id);
        let b = Thing { id, v: "b".into() };
        let b2 = Thing { id, v: "b2".into() };
        t.apply_unflushed(&[Write::Put(b), Write::Remove(a.id), Write::Put(b2.clone())])
            .await
            .unwrap();
        t.flush().await.unwrap();
        assert_eq!(t.list().unwrap(), vec![b2]);
        // A later id is still fresh.
        assert!(t.next_id().unwrap() > id);
    }

    #[derive(Clone, Serialize, Deserialize, PartialEq, Debug)]
    struct Other {
        id: u64,
        of: u64,
    }
    entity!(Other, "others");

    #[tokio::test]
    async fn a_transaction_writes_several_tables_together() {
        let s = Store::temporary();
        let (t, o) = (s.table::<Thing>().unwrap(), s.table::<Other>().unwrap());
        let (a, b) = s
            .transaction(&[Thing::TREE, Other::TREE], |tx| {
                let a = tx.insert(Thing { id: 0, v: "a".into() })?;
                let b = tx.insert(Other { id: 0, of: a.id })?;
                assert_eq!(tx.get::<Thing>(a.id)?, Some(a.clone()), "reads see own writes");
                Ok((a, b))
            })
            .await
            .unwrap();
        assert_eq!(
            (t.list().unwrap(), o.list().unwrap()),
            (vec![a.clone()], vec![b.clone()])
        );
        s.transaction(&[Thing::TREE, Other::TREE], |tx| {
            tx.remove::<Other>(b.id)?;
            tx.put(&Thing {
                id: a.id,
                v: "a2".into(),
            })
        })
        .await
        .unwrap();
        assert_eq!(t.get(a.id).unwrap().unwrap().v, "a2");
        assert!(o.is_empty());
    }

    #[tokio::test]
    async fn a_failing_transaction_leaves_nothing_written() {
        let s = Store::temporary();
        let (t, o) = (s.table::<Thing>().unwrap(), s.table::<Other>().unwrap());
        let kept = t
            .insert(Thing {
                id: 0,
                v: "kept".into(),
            })
            .await
            .unwrap();
        let r: Result<()> = s
            .transaction(&[Thing::TREE, Other::TREE], |tx| {
                let a = tx.insert(Thing { id: 0, v: "new".into() })?;
                tx.insert(Other { id: 0, of: a.id })?;
                tx.put(&Thing {
                    id: kept.id,
                    v: "changed".into(),
                })?;
                tx.remove::<Thing>(kept.id)?;
                Err(StoreError::Conflict("refused".into()).into())
            })
            .await;
        assert!(matches!(r, Err(StoreError::Conflict(m)) if m == "refused"));
        assert_eq!(t.list().unwrap(), vec![kept.clone()]);
        assert!(o.is_empty());

        // A write to an undeclared table fails the whole transaction too.
        let r = s
            .transaction(&[Thing::TREE], |tx| {
                tx.put(&Thing {
                    id: kept.id,
                    v: "changed".into(),
                })?;
                tx.insert(Other { id: 0, of: 1 })
            })
            .await;
        assert!(matches!(r, Err(StoreError::Undeclared("others"))));
        assert_eq!(t.list().unwrap(), vec![kept]);
        assert!(o.is_empty());
    }
}
