//! The PostgreSQL backend of the store: several Bootlane nodes share one database, and
//! each keeps an in-memory mirror of every tree, so reads stay synchronous and local
//! exactly as with sled while writes go to PostgreSQL.
//!
//! - **Layout** (schema version [`SCHEMA_VERSION`]): one table `bootlane_kv (tree, key,
//!   value, rev)` holding the same trees, keys and serde-JSON values as sled, a removed key
//!   kept as a tombstone (`value IS NULL`) so other nodes learn of the removal;
//!   `bootlane_meta` holds `schema_version`; the sequences `bootlane_rev` (commit order)
//!   and `bootlane_id_blocks` (ids, handed to nodes in blocks of [`ID_BLOCK`]).
//! - **Writes** are one PostgreSQL transaction each: it takes a transaction-level advisory
//!   lock, so revisions are assigned in commit order, writes its rows with the next
//!   `rev`, sends `NOTIFY bootlane_changes` (delivered at commit), commits, and then
//!   updates this node's mirror before the caller is answered (reads see their own
//!   writes).
//! - **Other nodes** hear the notification on a dedicated connection and fetch every row
//!   with a higher `rev` than they hold (a node skips the notifications of its own commits
//!   once nothing lies between them and what it holds); a lost connection is
//!   re-established with back-off and followed by the same catch-up before the node
//!   reports itself connected again.
//! - **Transactions** ([`super::Store::transaction`]) run their closure against the
//!   mirror, remember the revision of every key they read, and commit only if none of
//!   those keys changed in the database meanwhile (checked under the write lock);
//!   otherwise the closure runs once more while the node holds the write lock, on a
//!   mirror brought up to date under it ([`Pg::locked`]), which cannot lose again.
//! - **Schema**: created and migrated at start under an advisory lock; a database whose
//!   schema is newer than this build's is refused with a message saying so.

use std::{
    collections::{BTreeMap, HashMap},
    ops::Bound,
    sync::{
        atomic::{AtomicI64, Ordering},
        Arc, Mutex, RwLock,
    },
    time::Duration,
};

use tokio_postgres::AsyncMessage;

use super::{Result, StoreError};

/// The schema version this build writes and reads (the `schema_version` row of
/// `bootlane_meta`). A newer one is refused at start.
pub const SCHEMA_VERSION: i64 = 1;

/// Ids handed to a node at a time from the shared `bootlane_id_blocks` sequence: ids stay
/// unique across nodes without a round trip per id.
pub const ID_BLOCK: u64 = 10_000;

/// The channel the nodes `LISTEN` on; the payload is the committed `rev`.
pub const CHANNEL: &str = "bootlane_changes";

/// The `NOTIFY` channel carrying each node's events to the others (payload: the node's
/// name, a newline, a JSON array of events; see [`Pg::announce_events`]).
pub const EVENTS_CHANNEL: &str = "bootlane_events";

/// Longest notification payload PostgreSQL takes (8000 bytes), less some headroom.
pub const MAX_PAYLOAD: usize = 7900;

/// Advisory lock key serialising writers (so `rev` order is commit order).
const WRITE_LOCK: i64 = 0x626f_6f74_6c61_6e65; // "bootlane"
/// Advisory lock key serialising schema migrations between starting nodes.
const MIGRATE_LOCK: i64 = 0x626f_6f74_6d69_6772; // "bootmigr"

/// Schema migrations: index `n` brings a database from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &["CREATE TABLE bootlane_kv (
         tree text NOT NULL,
         key bytea NOT NULL,
         value bytea,
         rev bigint NOT NULL,
         PRIMARY KEY (tree, key)
     );
     CREATE INDEX bootlane_kv_rev ON bootlane_kv (rev);
     CREATE SEQUENCE bootlane_rev;
     CREATE SEQUENCE bootlane_id_blocks;"];

/// `[store]` settings for the PostgreSQL backend, checked by [`super::StoreConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PgSettings {
    /// `postgres://user:password@host:port/database` (libpq's URL form).
    pub url: String,
    /// Connections for writes (the listener has one more of its own).
    pub pool_size: usize,
    /// TLS to the database (`[store] tls`); wins over an `sslmode` in the URL.
    pub tls: TlsMode,
    /// PEM file of the certificate authorities `VerifyFull` trusts (`[store] tls_ca_file`);
    /// `None`: Mozilla's roots (webpki-roots).
    pub ca_file: Option<std::path::PathBuf>,
}

/// `[store] tls`: how the connections to PostgreSQL are protected (libpq's `sslmode`
/// names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// `"disable"`: plain TCP (a database on the same host or a trusted network).
    #[default]
    Disable,
    /// `"require"`: encrypted; the server's certificate is not checked (as libpq's
    /// `require` without a root certificate).
    Require,
    /// `"verify-full"`: encrypted; the certificate must chain to a trusted authority
    /// (`tls_ca_file`, else Mozilla's roots) and name the host of the URL.
    VerifyFull,
}

impl TlsMode {
    /// Parses `"disable"`, `"require"` or `"verify-full"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "disable" => Some(Self::Disable),
            "require" => Some(Self::Require),
            "verify-full" => Some(Self::VerifyFull),
            _ => None,
        }
    }

    /// The mode a bare URL asks for (`sslmode=require` → `Require`; anything else,
    /// `verify-*` included, which tokio-postgres does not parse, → `Disable`). For
    /// `bootlane store migrate`, which takes URLs only.
    pub fn from_url(url: &str) -> Self {
        match url.parse::<tokio_postgres::Config>().map(|c| c.get_ssl_mode()) {
            Ok(tokio_postgres::config::SslMode::Require) => Self::Require,
            _ => Self::Disable,
        }
    }
}

/// The stream of a connection made by [`Connector`] (TLS or not).
type TlsStream =
    <tokio_postgres_rustls::MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>>::Stream;

/// How this node opens connections: the parsed URL with its TLS mode set, and the TLS
/// connector (used only when the mode is not `Disable`).
#[derive(Clone)]
struct Connector {
    config: tokio_postgres::Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
}

impl Connector {
    fn new(settings: &PgSettings) -> Result<Self> {
        use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
        /// `Require`: encryption without checking whom we talk to (libpq's `require`).
        #[derive(Debug)]
        struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);
        impl ServerCertVerifier for AnyCertificate {
            fn verify_server_cert(
                &self,
                _: &rustls_pki_types::CertificateDer<'_>,
                _: &[rustls_pki_types::CertificateDer<'_>],
                _: &rustls_pki_types::ServerName<'_>,
                _: &[u8],
                _: rustls_pki_types::UnixTime,
            ) -> std::result::Result<ServerCertVerified, rustls::Error> {
                Ok(ServerCertVerified::assertion())
            }
            fn verify_tls12_signature(
                &self,
                message: &[u8],
                cert: &rustls_pki_types::CertificateDer<'_>,
                dss: &rustls::DigitallySignedStruct,
            ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
                rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
            }
            fn verify_tls13_signature(
                &self,
                message: &[u8],
                cert: &rustls_pki_types::CertificateDer<'_>,
                dss: &rustls::DigitallySignedStruct,
            ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
                rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
            }
            fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
                self.0.signature_verification_algorithms.supported_schemes()
            }
        }
        let mut config: tokio_postgres::Config = settings.url.parse().map_err(|e| pg_err("the [store] url", e))?;
        config.ssl_mode(match settings.tls {
            TlsMode::Disable => tokio_postgres::config::SslMode::Disable,
            TlsMode::Require | TlsMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        });
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| pg_err("TLS", e))?;
        let client = match settings.tls {
            TlsMode::VerifyFull => {
                let mut roots = rustls::RootCertStore::empty();
                match &settings.ca_file {
                    Some(path) => {
                        use rustls_pki_types::pem::PemObject;
                        let certs = rustls_pki_types::CertificateDer::pem_file_iter(path)
                            .map_err(|e| pg_err(&format!("[store] tls_ca_file {}", path.display()), e))?;
                        for c in certs {
                            let c = c.map_err(|e| pg_err(&format!("[store] tls_ca_file {}", path.display()), e))?;
                            roots
                                .add(c)
                                .map_err(|e| pg_err(&format!("[store] tls_ca_file {}", path.display()), e))?;
                        }
                        if roots.is_empty() {
                            return Err(pg_err(
                                &format!("[store] tls_ca_file {}", path.display()),
                                "no certificate in the file",
                            ));
                        }
                    }
                    None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            _ => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth(),
        };
        Ok(Self {
            config,
            tls: tokio_postgres_rustls::MakeRustlsConnect::new(client),
        })
    }

    /// One new connection: the client, and its connection future (to be spawned).
    async fn connect(
        &self,
    ) -> Result<(
        tokio_postgres::Client,
        tokio_postgres::Connection<tokio_postgres::Socket, TlsStream>,
    )> {
        tokio::time::timeout(Duration::from_secs(5), self.config.connect(self.tls.clone()))
            .await
            .map_err(|e| pg_err("connecting", e))?
            .map_err(|e| pg_err("connecting", full(&e)))
    }
}

/// One key in the mirror: its value (`None`: removed) and the `rev` that wrote it.
#[derive(Debug, Clone)]
struct Row {
    value: Option<Vec<u8>>,
    rev: i64,
}

/// Every tree of the database as this node last saw it.
#[derive(Default)]
struct Mirror {
    trees: HashMap<String, BTreeMap<Vec<u8>, Row>>,
}

impl Mirror {
    /// Applies a row unless the mirror already holds a newer revision of the key. Returns
    /// whether anything changed.
    fn apply(&mut self, tree: &str, key: Vec<u8>, value: Option<Vec<u8>>, rev: i64) -> bool {
        let t = self.trees.entry(tree.to_owned()).or_default();
        match t.get(&key) {
            Some(r) if r.rev >= rev => false,
            _ => {
                t.insert(key, Row { value, rev });
                true
            }
        }
    }
}

/// One write of a batch: `(tree, key, value)`, `None` removing the key.
pub type RawWrite = (String, Vec<u8>, Option<Vec<u8>>);

/// Whether the write to a key may replace its current value: `(key, current) -> keep`.
pub type Guard<'a> = dyn Fn(&[u8], Option<&[u8]>) -> bool + Sync + 'a;

/// A key a transaction read, and the revision it saw (`None`: absent).
pub type ReadMark = (String, Vec<u8>, Option<i64>);

/// Longest wait for a pooled connection (to get one, open one, or check one).
const POOL_TIMEOUT: Duration = Duration::from_secs(3);

/// The open PostgreSQL store of one node.
pub struct Pg {
    pool: deadpool_postgres::Pool,
    mirror: RwLock<Mirror>,
    /// The highest `rev` fully applied from the database.
    seen: AtomicI64,
    /// Serialises catch-ups (the listener's and a transaction's retry).
    catching_up: tokio::sync::Mutex<()>,
    /// Ids left in this node's block: `(next, end)`.
    ids: Mutex<(u64, u64)>,
    connector: Connector,
    /// Keys changed by other nodes, per tree (fed by catch-ups).
    changes: tokio::sync::broadcast::Sender<super::RemoteChange>,
    /// Payloads heard on [`EVENTS_CHANNEL`] (every node's, this one's included).
    events: tokio::sync::broadcast::Sender<String>,
    /// Connected or not, with the error when not (for `/status` and events).
    link: tokio::sync::watch::Sender<(bool, Option<String>)>,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg").field("seen", &self.seen).finish_non_exhaustive()
    }
}

fn pg_err(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("PostgreSQL: {what}: {e}"))
}

/// `e` with its causes (a pool error's "db error" alone would hide the server's reason,
/// e.g. "no pg_hba.conf entry ... no encryption").
fn full(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !s.contains(&c_text) {
            s.push_str(": ");
            s.push_str(&c_text);
        }
        cause = c.source();
    }
    s
}

impl Pg {
    /// Connects, creates or migrates the schema, loads the mirror and starts the listener
    /// (which lives until `token` is cancelled).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database cannot be reached or its schema cannot be
    /// created; [`StoreError::Format`] when its schema is newer than this build's.
    pub async fn open(settings: &PgSettings, token: tokio_util::sync::CancellationToken) -> Result<Arc<Self>> {
        let connector = Connector::new(settings)?;
        let manager = deadpool_postgres::Manager::from_config(
            connector.config.clone(),
            connector.tls.clone(),
            deadpool_postgres::ManagerConfig {
                recycling_method: deadpool_postgres::RecyclingMethod::Fast,
            },
        );
        // Bounded waits: with the database gone a write fails within seconds (and the DHCP
        // loop, which must not stall, learns it) instead of waiting on a dead connection.
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(settings.pool_size.max(1))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(POOL_TIMEOUT))
            .create_timeout(Some(POOL_TIMEOUT))
            .recycle_timeout(Some(POOL_TIMEOUT))
            .build()
            .map_err(|e| pg_err("the [store] url", e))?;
        migrate(&pool, &settings.url).await?;
        let (tx, _) = tokio::sync::broadcast::channel(1024);
        let pg = Arc::new(Self {
            pool,
            mirror: RwLock::new(Mirror::default()),
            seen: AtomicI64::new(0),
            catching_up: tokio::sync::Mutex::new(()),
            ids: Mutex::new((0, 0)),
            connector: connector.clone(),
            changes: tx,
            events: tokio::sync::broadcast::channel(4096).0,
            link: tokio::sync::watch::Sender::new((false, None)),
        });
        // The listener is up before the first load, so no commit falls between them.
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(listen(Arc::downgrade(&pg), connector, token, Some(ready_tx)));
        match tokio::time::timeout(Duration::from_secs(10), ready_rx).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(e),
            _ => return Err(pg_err("listening for changes", "the listener did not start")),
        }
        Ok(pg)
    }

    /// True while the node's connection to the database works (the listener's view).
    pub fn connected(&self) -> bool {
        self.link.borrow().0
    }

    /// Why the node is not connected (the error that began the outage), if so.
    pub fn last_error(&self) -> Option<String> {
        self.link.borrow().1.clone()
    }

    /// The connection's state as it changes: `(connected, error when not)`.
    pub fn watch_link(&self) -> tokio::sync::watch::Receiver<(bool, Option<String>)> {
        self.link.subscribe()
    }

    /// The keys other nodes changed, per tree, as they arrive.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<super::RemoteChange> {
        self.changes.subscribe()
    }

    /// Event payloads heard on [`EVENTS_CHANNEL`], as they arrive (this node's own too:
    /// the receiver tells them apart by the node name inside).
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.events.subscribe()
    }

    /// Sends each payload (at most [`MAX_PAYLOAD`] bytes; longer ones are skipped) as one
    /// notification on [`EVENTS_CHANNEL`], all in one statement.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails or is unreachable.
    pub async fn announce_events(&self, payloads: &[String]) -> Result<()> {
        let payloads: Vec<&str> = payloads
            .iter()
            .map(String::as_str)
            .filter(|p| p.len() <= MAX_PAYLOAD)
            .collect();
        if payloads.is_empty() {
            return Ok(());
        }
        let client = self.pool.get().await.map_err(|e| pg_err("a connection", full(&e)))?;
        client
            .execute(
                "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
                &[&EVENTS_CHANNEL, &payloads],
            )
            .await
            .map_err(|e| pg_err("announcing events", e))?;
        Ok(())
    }

    /// The value of `key` in `tree`.
    pub fn get(&self, tree: &str, key: &[u8]) -> Option<Vec<u8>> {
        let m = self.mirror.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        m.trees.get(tree)?.get(key)?.value.clone()
    }

    /// `key`'s value and the revision seen (for a transaction's read set).
    pub fn get_marked(&self, tree: &str, key: &[u8]) -> (Option<Vec<u8>>, Option<i64>) {
        let m = self.mirror.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        match m.trees.get(tree).and_then(|t| t.get(key)) {
            Some(Row { value: Some(v), rev }) => (Some(v.clone()), Some(*rev)),
            _ => (None, None),
        }
    }

    /// The live pairs of `tree` from `from` on, in key order (reversed when `rev`).
    pub fn range(&self, tree: &str, from: Bound<Vec<u8>>, to: Bound<Vec<u8>>, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        let m = self.mirror.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(t) = m.trees.get(tree) else { return Vec::new() };
        let live = t
            .range((from, to))
            .filter_map(|(k, r)| r.value.as_ref().map(|v| (k.clone(), v.clone())));
        if rev {
            let mut v: Vec<_> = live.collect();
            v.reverse();
            v
        } else {
            live.collect()
        }
    }

    /// Live keys in `tree`.
    pub fn len(&self, tree: &str) -> usize {
        let m = self.mirror.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        m.trees
            .get(tree)
            .map_or(0, |t| t.values().filter(|r| r.value.is_some()).count())
    }

    /// Names of the trees holding at least one live key, sorted.
    pub fn tree_names(&self) -> Vec<String> {
        let m = self.mirror.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut names: Vec<String> = m
            .trees
            .iter()
            .filter(|(_, t)| t.values().any(|r| r.value.is_some()))
            .map(|(n, _)| n.clone())
            .collect();
        names.sort();
        names
    }

    /// A new id, unique across every node of the database. Takes a block of [`ID_BLOCK`]
    /// ids from the database when this node's block is used up (one short blocking round
    /// trip on a thread of its own, so it works from synchronous code).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when a new block is needed and the database is unreachable.
    pub fn next_id(&self) -> Result<u64> {
        let mut ids = self.ids.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if ids.0 >= ids.1 {
            let block = self.fetch_block()?;
            *ids = (block * ID_BLOCK + 1, (block + 1) * ID_BLOCK + 1);
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(id)
    }

    /// Moves the shared id sequence past `next`, so ids handed out from now on (by any
    /// node) are above it; used when data with its own ids is loaded.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails.
    pub async fn advance_ids(&self, next: u64) -> Result<()> {
        let block = i64::try_from(next / ID_BLOCK + 1).unwrap_or(i64::MAX);
        let client = self.pool.get().await.map_err(|e| pg_err("a connection", full(&e)))?;
        client
            .execute(
                "SELECT setval('bootlane_id_blocks', GREATEST($1, (SELECT last_value FROM bootlane_id_blocks)))",
                &[&block],
            )
            .await
            .map_err(|e| pg_err("advancing the id sequence", e))?;
        *self.ids.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (0, 0);
        Ok(())
    }

    /// The next block number, fetched on a thread with its own runtime and connection.
    fn fetch_block(&self) -> Result<u64> {
        let connector = self.connector.clone();
        std::thread::spawn(move || -> Result<u64> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| pg_err("an id block", e))?;
            rt.block_on(async move {
                let (client, conn) = connector.connect().await?;
                tokio::spawn(conn);
                let row = client
                    .query_one("SELECT nextval('bootlane_id_blocks')", &[])
                    .await
                    .map_err(|e| pg_err("an id block", e))?;
                Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
            })
        })
        .join()
        .map_err(|_| pg_err("an id block", "the id thread panicked"))?
    }

    /// Writes `writes` in one database transaction (a later write to a key wins), after
    /// checking that every key in `reads` still has the revision recorded there. Returns
    /// `false`, writing nothing, when one changed.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails or is unreachable (then nothing is
    /// written).
    pub async fn commit(&self, writes: Vec<RawWrite>, reads: &[ReadMark]) -> Result<bool> {
        if writes.is_empty() && reads.is_empty() {
            return Ok(true);
        }
        // The last write to a key wins (one row per key in the statement).
        let mut last: BTreeMap<(String, Vec<u8>), Option<Vec<u8>>> = BTreeMap::new();
        for (t, k, v) in writes {
            last.insert((t, k), v);
        }
        let mut client = self.pool.get().await.map_err(|e| pg_err("a connection", full(&e)))?;
        let tx = client.transaction().await.map_err(|e| pg_err("begin", e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await
            .map_err(|e| pg_err("the write lock", e))?;
        for (tree, key, seen) in reads {
            let row = tx
                .query_opt(
                    "SELECT rev FROM bootlane_kv WHERE tree = $1 AND key = $2 AND value IS NOT NULL",
                    &[tree, key],
                )
                .await
                .map_err(|e| pg_err("checking a read", e))?;
            if row.map(|r| r.get::<_, i64>(0)) != *seen {
                return Ok(false); // dropped: rolled back
            }
        }
        if last.is_empty() {
            return Ok(true);
        }
        self.write_and_commit(tx, last).await?;
        Ok(true)
    }

    /// Writes `writes` to `tree` in one database transaction, except each write whose key's
    /// current value in the database `keep(key, current)` refuses (a value another node
    /// stored meanwhile: the DHCP leases' uniqueness check). Removals (`None`) are always
    /// written. Returns the refused keys with their current values.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database fails or is unreachable (then nothing is
    /// written).
    pub async fn commit_guarded(
        &self,
        tree: &str,
        writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        keep: &Guard<'_>,
    ) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>> {
        let mut last: BTreeMap<(String, Vec<u8>), Option<Vec<u8>>> = BTreeMap::new();
        for (k, v) in writes {
            last.insert((tree.to_owned(), k), v);
        }
        if last.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.pool.get().await.map_err(|e| pg_err("a connection", full(&e)))?;
        let tx = client.transaction().await.map_err(|e| pg_err("begin", e))?;
        let puts: Vec<&[u8]> = last
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|((_, k), _)| k.as_slice())
            .collect();
        // The lock and the read go out together (one round trip; the server runs them in
        // order, so the read sees the rows as of the lock).
        let lock_params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&WRITE_LOCK];
        let read_params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&tree, &puts];
        let (locked, rows) = tokio::join!(
            tx.execute("SELECT pg_advisory_xact_lock($1)", &lock_params),
            tx.query(
                "SELECT key, value FROM bootlane_kv WHERE tree = $1 AND key = ANY($2) AND value IS NOT NULL",
                &read_params,
            )
        );
        locked.map_err(|e| pg_err("the write lock", e))?;
        let rows = rows.map_err(|e| pg_err("checking current values", e))?;
        let current: HashMap<Vec<u8>, Vec<u8>> = rows.into_iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut refused = Vec::new();
        last.retain(|(_, k), v| match v {
            Some(_) if !keep(k, current.get(k).map(Vec::as_slice)) => {
                refused.push((k.clone(), current.get(k).cloned()));
                false
            }
            _ => true,
        });
        if !last.is_empty() {
            self.write_and_commit(tx, last).await?;
        }
        Ok(refused)
    }

    /// Runs `f` with the database's writers held off: takes the write lock, brings the
    /// mirror up to date under it, runs `f` (which reads the mirror and returns what to
    /// write), writes and commits. Nothing can change in between, so this always
    /// succeeds where [`Pg::commit`] can lose to other nodes again and again.
    ///
    /// # Errors
    /// `f`'s error (nothing written); [`StoreError::Backend`] when the database fails.
    pub async fn locked<R>(&self, f: impl FnOnce() -> (Result<R>, Vec<RawWrite>)) -> Result<R> {
        let mut client = self.pool.get().await.map_err(|e| pg_err("a connection", full(&e)))?;
        let tx = client.transaction().await.map_err(|e| pg_err("begin", e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await
            .map_err(|e| pg_err("the write lock", e))?;
        self.catch_up_with(&*tx).await?;
        let (r, writes) = f();
        let r = r?;
        let mut last: BTreeMap<(String, Vec<u8>), Option<Vec<u8>>> = BTreeMap::new();
        for (t, k, v) in writes {
            last.insert((t, k), v);
        }
        if !last.is_empty() {
            self.write_and_commit(tx, last).await?;
        }
        Ok(r)
    }

    /// Writes `last` under a new revision in `tx` (which holds the write lock), notifies,
    /// commits, and applies the rows to the mirror.
    async fn write_and_commit(
        &self,
        tx: deadpool_postgres::Transaction<'_>,
        last: BTreeMap<(String, Vec<u8>), Option<Vec<u8>>>,
    ) -> Result<()> {
        let rev: i64 = tx
            .query_one("SELECT nextval('bootlane_rev')", &[])
            .await
            .map_err(|e| pg_err("a revision", e))?
            .get(0);
        let trees: Vec<&str> = last.keys().map(|(t, _)| t.as_str()).collect();
        let keys: Vec<&[u8]> = last.keys().map(|(_, k)| k.as_slice()).collect();
        let values: Vec<Option<&[u8]>> = last.values().map(|v| v.as_deref()).collect();
        tx.execute(
            "INSERT INTO bootlane_kv (tree, key, value, rev)
             SELECT t, k, v, $4 FROM unnest($1::text[], $2::bytea[], $3::bytea[]) AS u(t, k, v)
             ON CONFLICT (tree, key) DO UPDATE SET value = excluded.value, rev = excluded.rev",
            &[&trees, &keys, &values, &rev],
        )
        .await
        .map_err(|e| pg_err("writing", e))?;
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &rev.to_string()])
            .await
            .map_err(|e| pg_err("notifying", e))?;
        tx.commit().await.map_err(|e| pg_err("commit", e))?;
        let mut m = self.mirror.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        for ((t, k), v) in last {
            m.apply(&t, k, v, rev);
        }
        // Writers are serialised, so when this revision directly follows what the mirror
        // holds, nothing lies between them: the listener need not fetch this node's own
        // rows back (a DHCP group commit would otherwise cost a second query each).
        let _ = self
            .seen
            .compare_exchange(rev - 1, rev, Ordering::AcqRel, Ordering::Acquire);
        Ok(())
    }

    /// Fetches every row newer than the mirror's revision through `client` and applies it;
    /// announces the trees that changed. Used by the listener and by [`Pg::locked`].
    async fn catch_up_with(&self, client: &impl tokio_postgres::GenericClient) -> Result<()> {
        let _one = self.catching_up.lock().await;
        let since = self.seen.load(Ordering::Acquire);
        let rows = client
            .query(
                "SELECT tree, key, value, rev FROM bootlane_kv WHERE rev > $1 ORDER BY rev",
                &[&since],
            )
            .await
            .map_err(|e| pg_err("catching up", e))?;
        let mut changed: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
        let mut top = since;
        {
            let mut m = self.mirror.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            for r in rows {
                let (tree, key, value, rev): (String, Vec<u8>, Option<Vec<u8>>, i64) =
                    (r.get(0), r.get(1), r.get(2), r.get(3));
                top = top.max(rev);
                if m.apply(&tree, key.clone(), value, rev) {
                    changed.entry(tree).or_default().push(key);
                }
            }
            // Tombstones at or below `top` can go: later catch-ups only bring newer rows.
            for t in m.trees.values_mut() {
                t.retain(|_, r| r.value.is_some() || r.rev > top);
            }
        }
        // `fetch_max`: a commit of this node's may have moved it further meanwhile.
        self.seen.fetch_max(top, Ordering::AcqRel);
        for (tree, keys) in changed {
            let _ = self.changes.send(super::RemoteChange {
                tree,
                keys: Arc::new(keys),
            });
        }
        Ok(())
    }

    /// Records a change of the link (a retry failing again changes nothing, so watchers
    /// hear of each outage once, with the error that began it).
    fn set_connected(&self, ok: bool, err: Option<String>) {
        let changed = self.link.send_if_modified(|state| {
            let changed = state.0 != ok;
            if changed {
                *state = (ok, err.clone());
            }
            changed
        });
        match (changed, ok) {
            (true, false) => tracing::warn!("PostgreSQL store: connection lost: {}", err.unwrap_or_default()),
            (true, true) => tracing::info!(
                "PostgreSQL store: connected, caught up to revision {}",
                self.seen.load(Ordering::Acquire)
            ),
            _ => {}
        }
    }
}

/// Creates or migrates the schema (under [`MIGRATE_LOCK`]); refuses a newer one.
async fn migrate(pool: &deadpool_postgres::Pool, url: &str) -> Result<()> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| pg_err(&format!("connecting to {}", redact(url)), full(&e)))?;
    let tx = client.transaction().await.map_err(|e| pg_err("begin", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
        .await
        .map_err(|e| pg_err("the migration lock", e))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS bootlane_meta (key text PRIMARY KEY, value text NOT NULL)")
        .await
        .map_err(|e| pg_err("creating bootlane_meta", e))?;
    let found: i64 = tx
        .query_opt("SELECT value FROM bootlane_meta WHERE key = 'schema_version'", &[])
        .await
        .map_err(|e| pg_err("reading the schema version", e))?
        .and_then(|r| r.get::<_, String>(0).parse().ok())
        .unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::Format(format!(
            "the PostgreSQL database at {} holds Bootlane schema version {found}, written by a newer Bootlane; \
             this build knows version {SCHEMA_VERSION} at most. Upgrade this node to the version the other \
             nodes run",
            redact(url)
        )));
    }
    for (i, step) in MIGRATIONS.iter().enumerate().skip(usize::try_from(found).unwrap_or(0)) {
        tx.batch_execute(step)
            .await
            .map_err(|e| pg_err(&format!("schema migration {} to {}", i, i + 1), e))?;
    }
    tx.execute(
        "INSERT INTO bootlane_meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&SCHEMA_VERSION.max(found).to_string()],
    )
    .await
    .map_err(|e| pg_err("recording the schema version", e))?;
    tx.commit().await.map_err(|e| pg_err("commit", e))?;
    Ok(())
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..s + 3], user, &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// The listener: `LISTEN`s on its own connection, catches up on every notification, and
/// after a lost connection reconnects with back-off (1 s doubling to 5 s, from 1 s again
/// at each new outage) and catches up before reporting itself connected. `ready` gets the outcome of the first connection.
async fn listen(
    pg: std::sync::Weak<Pg>,
    connector: Connector,
    token: tokio_util::sync::CancellationToken,
    mut ready: Option<tokio::sync::oneshot::Sender<Result<()>>>,
) {
    let mut delay = Duration::from_secs(1);
    loop {
        let outcome = listen_once(&pg, &connector, &token, &mut ready).await;
        let Some(p) = pg.upgrade() else { return };
        if token.is_cancelled() {
            return;
        }
        let err = match outcome {
            Ok(()) => "the connection closed".to_owned(),
            Err(e) => e.to_string(),
        };
        if let Some(r) = ready.take() {
            let _ = r.send(Err(pg_err("listening for changes", &err)));
            return;
        }
        // A connection that worked until now starts a new outage: retry soon.
        if p.connected() {
            delay = Duration::from_secs(1);
        }
        p.set_connected(false, Some(err));
        drop(p);
        tokio::select! {
            () = token.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

async fn listen_once(
    pg: &std::sync::Weak<Pg>,
    connector: &Connector,
    token: &tokio_util::sync::CancellationToken,
    ready: &mut Option<tokio::sync::oneshot::Sender<Result<()>>>,
) -> Result<()> {
    let (client, mut conn) = connector.connect().await?;
    // The committed revision each notification announces (unreadable: fetch anyway).
    let (note_tx, mut note_rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let Some(events) = pg.upgrade().map(|p| p.events.clone()) else {
        return Ok(());
    };
    let driver = tokio::spawn(async move {
        loop {
            match futures::future::poll_fn(|cx| conn.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) if n.channel() == EVENTS_CHANNEL => {
                    let _ = events.send(n.payload().to_owned());
                }
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let _ = note_tx.send(n.payload().parse().unwrap_or(i64::MAX));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}; LISTEN {EVENTS_CHANNEL}"))
        .await
        .map_err(|e| pg_err("LISTEN", e))?;
    {
        let Some(p) = pg.upgrade() else { return Ok(()) };
        p.catch_up_with(&client).await?;
        p.set_connected(true, None);
    }
    if let Some(r) = ready.take() {
        let _ = r.send(Ok(()));
    }
    let mut driver = driver;
    loop {
        tokio::select! {
            () = token.cancelled() => return Ok(()),
            r = &mut driver => {
                return match r {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(pg_err("the listening connection", e)),
                    Err(e) => Err(pg_err("the listening connection", e)),
                };
            }
            n = note_rx.recv() => {
                let Some(mut newest) = n else { return Ok(()) };
                // Coalesce a burst of notifications into one catch-up.
                while let Ok(r) = note_rx.try_recv() {
                    newest = newest.max(r);
                }
                let Some(p) = pg.upgrade() else { return Ok(()) };
                // This node's own commits are in its mirror already.
                if newest > p.seen.load(Ordering::Acquire) {
                    p.catch_up_with(&client).await?;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[store] tls`: plain connections are refused by a database that requires TLS,
    /// `require` encrypts, `verify-full` accepts the server only with the right CA.
    #[tokio::test]
    async fn tls_modes_connect_as_libpq_would() {
        let cluster = throwaway::Cluster::start().unwrap();
        let url = cluster.create_database("t").await.unwrap();
        let ca = cluster.enable_tls().unwrap();
        let open = |tls: TlsMode, ca_file: Option<std::path::PathBuf>| {
            let settings = PgSettings {
                url: url.clone(),
                pool_size: 1,
                tls,
                ca_file,
            };
            async move { Pg::open(&settings, tokio_util::sync::CancellationToken::new()).await }
        };
        let e = open(TlsMode::Disable, None).await.unwrap_err();
        assert!(e.to_string().contains("no encryption"), "{e}");
        let pg = open(TlsMode::Require, None)
            .await
            .expect("TLS without checking the certificate");
        assert!(pg.connected());
        let pg = open(TlsMode::VerifyFull, Some(ca)).await.expect("TLS with the test CA");
        assert!(pg.connected());
        let e = open(TlsMode::VerifyFull, None).await.unwrap_err();
        assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    }

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(
            redact("postgres://bl:secret@db:5432/bootlane"),
            "postgres://bl@db:5432/bootlane"
        );
        assert_eq!(redact("postgres://db/bootlane"), "postgres://db/bootlane");
    }

    #[test]
    fn the_mirror_keeps_the_newer_revision() {
        let mut m = Mirror::default();
        assert!(m.apply("t", b"k".to_vec(), Some(b"2".to_vec()), 2));
        assert!(
            !m.apply("t", b"k".to_vec(), Some(b"1".to_vec()), 1),
            "an older row is ignored"
        );
        assert!(m.apply("t", b"k".to_vec(), None, 3));
        assert!(
            !m.apply("t", b"k".to_vec(), Some(b"2".to_vec()), 2),
            "a removal is not undone by a stale row"
        );
    }
}

/// Throwaway PostgreSQL clusters for tests: `initdb` into a temporary directory, a
/// server on a free loopback port with its socket in that directory, stopped and removed
/// on drop. As root the server runs as the `postgres` user (PostgreSQL refuses root).
/// Compiled only for tests: it starts server processes and calls `geteuid` (`unsafe`),
/// neither of which belongs in the shipped binary.
#[cfg(any(test, feature = "test-support"))]
pub mod throwaway {
    use std::{
        path::{Path, PathBuf},
        process::Command,
    };

    /// A running cluster; dropping it stops the server and removes its directory.
    #[derive(Debug)]
    pub struct Cluster {
        dir: PathBuf,
        bin: PathBuf,
        port: u16,
        as_postgres: bool,
    }

    /// The newest installed PostgreSQL's `bin` directory (`/usr/lib/postgresql/<n>/bin`).
    pub fn bin_dir() -> Option<PathBuf> {
        let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .filter_map(|d| {
                let v: u32 = d.file_name().to_str()?.parse().ok()?;
                let bin = d.path().join("bin");
                bin.join("initdb").exists().then_some((v, bin))
            })
            .collect();
        found.sort();
        found.pop().map(|(_, b)| b)
    }

    fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{what} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// A TCP port of 127.0.0.1 free at the time of asking.
    fn free_port() -> Result<u16, String> {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())
    }

    impl Cluster {
        /// Creates and starts a cluster with the superuser `bootlane` (trust auth on
        /// loopback; fsync off: a test's data need not survive a crash).
        ///
        /// # Errors
        /// PostgreSQL is not installed, or `initdb`/`pg_ctl` failed (their output is in
        /// the message).
        pub fn start() -> Result<Self, String> {
            let bin = bin_dir().ok_or("PostgreSQL is not installed (/usr/lib/postgresql/<n>/bin/initdb)")?;
            let dir =
                std::env::temp_dir().join(format!("bootlane-pg-{}-{}", std::process::id(), rand::random::<u64>()));
            std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let as_postgres = nix_is_root();
            if as_postgres {
                run(Command::new("chown").arg("postgres:").arg(&dir), "chown")?;
            }
            let mut c = Self {
                dir,
                bin,
                port: free_port()?,
                as_postgres,
            };
            let data = c.dir.join("data");
            run(
                c.cmd("initdb")
                    .args(["-U", "bootlane", "--auth=trust", "-E", "UTF8", "--no-sync", "-D"])
                    .arg(&data),
                "initdb",
            )?;
            // The port was free when asked for; another process (a parallel test's cluster)
            // may take it before the server binds it, so a failed start tries another.
            let mut attempt = 0;
            loop {
                match c.restart() {
                    Ok(()) => return Ok(c),
                    Err(e) if attempt >= 2 => return Err(e),
                    Err(e) => {
                        attempt += 1;
                        tracing::warn!(
                            "the throwaway PostgreSQL did not start on port {} ({e}); another port",
                            c.port
                        );
                        c.port = free_port()?;
                    }
                }
            }
        }

        fn cmd(&self, tool: &str) -> Command {
            let path = self.bin.join(tool);
            if self.as_postgres {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(path).current_dir(&self.dir);
                c
            } else {
                Command::new(path)
            }
        }

        /// The server's port on 127.0.0.1.
        pub fn port(&self) -> u16 {
            self.port
        }

        /// The cluster's directory (the server log is `log` in it).
        pub fn dir(&self) -> &Path {
            &self.dir
        }

        /// The URL of database `db` (created by [`Cluster::create_database`]).
        pub fn url(&self, db: &str) -> String {
            format!("postgres://bootlane@127.0.0.1:{}/{db}", self.port)
        }

        /// Creates a new empty database and returns its URL.
        ///
        /// # Errors
        /// The server refused (the message says why).
        pub async fn create_database(&self, db: &str) -> Result<String, String> {
            let (client, conn) = tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
                .await
                .map_err(|e| e.to_string())?;
            let driver = tokio::spawn(conn);
            client
                .batch_execute(&format!("CREATE DATABASE \"{db}\""))
                .await
                .map_err(|e| e.to_string())?;
            drop(client);
            let _ = driver.await;
            Ok(self.url(db))
        }

        /// Stops the server at once (`pg_ctl -m immediate`), as a crash would.
        ///
        /// # Errors
        /// `pg_ctl` failed.
        pub fn stop(&self) -> Result<(), String> {
            run(
                self.cmd("pg_ctl")
                    .arg("-D")
                    .arg(self.dir.join("data"))
                    .args(["-m", "immediate", "-w", "stop"]),
                "pg_ctl stop",
            )
        }

        /// Turns TLS on (a test CA and a server certificate for `localhost` and 127.0.0.1,
        /// made with `openssl`), makes database `t` refuse connections without TLS, and
        /// restarts the server. Returns the CA certificate's path.
        ///
        /// # Errors
        /// `openssl` or `pg_ctl` failed; the configuration could not be written.
        pub fn enable_tls(&self) -> Result<PathBuf, String> {
            let data = self.dir.join("data");
            let tls = self.dir.join("tls");
            std::fs::create_dir_all(&tls).map_err(|e| e.to_string())?;
            let script = "set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=bootlane-test-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile ext 2>/dev/null
chmod 600 server.key";
            run(Command::new("sh").args(["-c", script]).current_dir(&tls), "openssl")?;
            if self.as_postgres {
                run(Command::new("chown").arg("-R").arg("postgres:").arg(&tls), "chown")?;
            }
            let mut conf = std::fs::OpenOptions::new()
                .append(true)
                .open(data.join("postgresql.conf"))
                .map_err(|e| e.to_string())?;
            std::io::Write::write_all(
                &mut conf,
                format!(
                    "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                    tls.join("server.crt").display(),
                    tls.join("server.key").display()
                )
                .as_bytes(),
            )
            .map_err(|e| e.to_string())?;
            let hba = data.join("pg_hba.conf");
            let old = std::fs::read_to_string(&hba).map_err(|e| e.to_string())?;
            std::fs::write(&hba, format!("hostnossl t all 127.0.0.1/32 reject\n{old}")).map_err(|e| e.to_string())?;
            self.stop()?;
            self.restart()?;
            Ok(tls.join("ca.crt"))
        }

        /// Starts the server (again, after [`Cluster::stop`]) on the same port.
        ///
        /// # Errors
        /// `pg_ctl` failed.
        pub fn restart(&self) -> Result<(), String> {
            let opts = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
                self.port,
                self.dir.display()
            );
            run(
                self.cmd("pg_ctl")
                    .arg("-D")
                    .arg(self.dir.join("data"))
                    .args(["-w", "-t", "30", "-l"])
                    .arg(self.dir.join("log"))
                    .args(["-o", &opts, "start"]),
                "pg_ctl start",
            )
        }
    }

    impl Drop for Cluster {
        fn drop(&mut self) {
            let _ = self.stop();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn nix_is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
}
