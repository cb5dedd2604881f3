//! TFTP transport: [`Server`] reads requests from registered sockets and runs each
//! transfer in its own task on its own ephemeral socket (the RFC 1350 §4 transfer ID),
//! so slow or abandoned transfers never block others.
//!
//! What a transfer sends when is [`Session`]'s: a window of `windowsize` blocks (RFC
//! 7440), then an ACK inside the window slides it, an old or duplicate ACK is ignored (no
//! retransmission on duplicates, so no Sorcerer's Apprentice syndrome, RFC 1123
//! §4.2.3.1), a timeout resends the window with the timeout doubled (exponential
//! back-off, capped), and after [`TftpLimits::retries`] timeouts in a row the transfer is
//! abandoned quietly. That is also how the UEFI "tsize probe" ends: the client reads the
//! OACK and goes away (or sends ERROR 8), and its real request is a separate transfer.
//! Block numbers wrap from 65535 to 0, so files above 32 MiB at 512-byte blocks work.

use std::{
    collections::{HashMap, VecDeque},
    io,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Weak},
    time::{Duration, SystemTime},
};

use tokio::{
    net::UdpSocket,
    sync::{watch, Semaphore},
    task::JoinSet,
    time::{timeout_at, Instant},
};
use tokio_util::sync::CancellationToken;

use bootlane_core::events::{EventKind, NewEvent, TftpRefused, TftpTransfer};

use super::{
    handler::{ReadPlan, TftpHandler},
    packet::{self, errcode, Packet},
    session::{data_into, Pending, Session, Step},
};
use bootlane_core::metrics::{TFTP_ACTIVE, TFTP_BYTES_SENT, TFTP_COMPLETED, TFTP_ERRORS, TFTP_FAILED, TFTP_STARTED};

/// Label of a TFTP error code for [`TFTP_ERRORS`].
fn error_kind(code: u16) -> &'static str {
    match code {
        errcode::NOT_FOUND => "not_found",
        errcode::ACCESS => "access",
        errcode::ILLEGAL => "illegal",
        errcode::UNKNOWN_TID => "unknown_tid",
        errcode::OPTION_REFUSED => "option_refused",
        _ => "undefined",
    }
}

/// Counts one error of `kind` in [`TFTP_ERRORS`].
fn count_error(kind: &'static str) {
    metrics::counter!(TFTP_ERRORS, "kind" => kind).increment(1);
}

/// Holds one unit of the [`TFTP_ACTIVE`] gauge for the life of a transfer (released on
/// every exit path, cancellation and panics included).
struct ActiveTransfer;

impl ActiveTransfer {
    fn start() -> Self {
        metrics::counter!(TFTP_STARTED).increment(1);
        metrics::gauge!(TFTP_ACTIVE).increment(1.0);
        Self
    }
}

impl Drop for ActiveTransfer {
    fn drop(&mut self) {
        metrics::gauge!(TFTP_ACTIVE).decrement(1.0);
    }
}

/// Timers and limits of the transport.
#[derive(Debug, Clone, Copy)]
pub struct TftpLimits {
    /// First retransmission timeout (unless the client negotiated `timeout`).
    pub timeout: Duration,
    /// Longest retransmission timeout reached by back-off.
    pub max_timeout: Duration,
    /// Timeouts in a row before a transfer is abandoned.
    pub retries: u32,
    /// Most concurrent transfers; more are refused with "server busy".
    pub max_transfers: usize,
    /// Most concurrent transfers to one client address; more are refused the same way.
    pub max_per_client: usize,
}

impl Default for TftpLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(1),
            max_timeout: Duration::from_secs(8),
            retries: 5,
            max_transfers: 1024,
            max_per_client: 16,
        }
    }
}

/// How a transfer ended (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The last block was acknowledged.
    Complete,
    /// The client sent an ERROR (e.g. after a tsize probe).
    ClientError,
    /// Retries ran out.
    TimedOut,
    /// The server is shutting down.
    Cancelled,
}

/// The TFTP server.
pub struct Server<H> {
    handler: Arc<H>,
    // Read per transfer, so `timeout` and `retries` can change live (`PUT /services/tftp`).
    limits: watch::Sender<TftpLimits>,
    tasks: JoinSet<()>,
    token: CancellationToken,
    slots: Arc<Slots>,
    cache: Arc<FileCache>,
    events: Option<Arc<bootlane_core::events::EventBus>>,
    access: Option<Arc<bootlane_boot::access::gate::AccessGate>>,
}

/// Transfer slots: at most `max_transfers` in all and `max_per_client` per client address,
/// both taken when a request arrives, before a transfer socket is bound, so a flood of
/// requests costs no sockets beyond the caps. The per-address map holds an entry only
/// while that address has a transfer, so it never outgrows `max_transfers`.
pub struct Slots {
    total: Arc<Semaphore>,
    per_client: std::sync::Mutex<HashMap<std::net::IpAddr, usize>>,
    max_per_client: usize,
}

/// One transfer's slot (see [`Slots`]); given back when dropped.
pub struct Slot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    slots: Arc<Slots>,
    ip: std::net::IpAddr,
}

impl Slots {
    /// Slots for `max_transfers` in all (at least 1) and `max_per_client` per address (at
    /// least 1).
    pub fn new(max_transfers: usize, max_per_client: usize) -> Arc<Self> {
        Arc::new(Self {
            total: Arc::new(Semaphore::new(max_transfers.max(1))),
            per_client: std::sync::Mutex::new(HashMap::new()),
            max_per_client: max_per_client.max(1),
        })
    }

    /// A slot for a transfer to `ip`, or `None` when either cap is reached.
    pub fn try_take(self: &Arc<Self>, ip: std::net::IpAddr) -> Option<Slot> {
        let permit = self.total.clone().try_acquire_owned().ok()?;
        let mut m = self
            .per_client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = m.entry(ip).or_insert(0);
        if *n >= self.max_per_client {
            return None;
        }
        *n += 1;
        Some(Slot {
            _permit: permit,
            slots: self.clone(),
            ip,
        })
    }

    /// Transfers running now to `ip`.
    pub fn held_by(&self, ip: std::net::IpAddr) -> usize {
        let m = self
            .per_client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.get(&ip).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut m = self
            .slots
            .per_client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = m.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

impl<H: TftpHandler> Server<H> {
    /// Enforces access control through `gate`: a read request from a refused client
    /// (known by its lease) gets ERROR 2, access violation (RFC 1350 §5).
    pub fn with_access(mut self, gate: Arc<bootlane_boot::access::gate::AccessGate>) -> Self {
        self.access = Some(gate);
        self
    }

    /// Publishes `tftp.transfer.completed|aborted|failed` on `events`.
    pub fn with_events(mut self, events: Arc<bootlane_core::events::EventBus>) -> Self {
        self.events = Some(events);
        self
    }

    /// A server for `handler` that stops when `token` is cancelled.
    pub fn new(handler: Arc<H>, limits: TftpLimits, token: CancellationToken) -> Self {
        Self {
            handler,
            slots: Slots::new(limits.max_transfers, limits.max_per_client),
            cache: Arc::new(FileCache::default()),
            limits: watch::Sender::new(limits),
            tasks: JoinSet::new(),
            token,
            events: None,
            access: None,
        }
    }

    /// Starts the request loop on a bound socket and returns its local address; transfers
    /// run on the TFTP transfer runtime (see [`TRANSFER_NICE`]).
    ///
    /// # Errors
    /// When the socket cannot be registered with tokio, or the transfer runtime cannot be
    /// created.
    pub fn register_socket(&mut self, socket: std::net::UdpSocket) -> io::Result<SocketAddr> {
        socket.set_nonblocking(true)?;
        let local = socket.local_addr()?;
        let sock = UdpSocket::from_std(socket)?;
        let transfers = transfer_runtime()?;
        self.tasks.spawn(listen(
            sock,
            self.handler.clone(),
            self.limits.subscribe(),
            self.token.clone(),
            self.slots.clone(),
            self.cache.clone(),
            self.events.clone(),
            self.access.clone(),
            transfers,
        ));
        Ok(local)
    }

    /// The limits' sender: new transfers take the value it last sent when they start
    /// (`max_transfers` and `max_per_client` are fixed at creation).
    pub fn limits(&self) -> watch::Sender<TftpLimits> {
        self.limits.clone()
    }

    /// Cancels the token and waits for the request loops (transfers stop at their next
    /// wait).
    pub async fn shutdown(mut self) {
        self.token.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the request loop's shared parts, each handed to every transfer task"
)]
async fn listen<H: TftpHandler>(
    sock: UdpSocket,
    handler: Arc<H>,
    published: watch::Receiver<TftpLimits>,
    token: CancellationToken,
    slots: Arc<Slots>,
    cache: Arc<FileCache>,
    events: Option<Arc<bootlane_core::events::EventBus>>,
    access: Option<Arc<bootlane_boot::access::gate::AccessGate>>,
    transfers: tokio::runtime::Handle,
) {
    let local_ip = sock.local_addr().map(|a| a.ip()).ok();
    let mut buf = vec![0u8; 2048];
    loop {
        let (n, peer) = tokio::select! {
            _ = token.cancelled() => return,
            r = sock.recv_from(&mut buf) => match r {
                Ok(r) => r,
                Err(e) => { tracing::debug!("TFTP receive error: {e}"); continue; }
            },
        };
        let Ok(Packet::Request(req)) = Packet::parse(&buf[..n]) else {
            // Stray DATA/ACK on the listening port, or garbage: nothing to answer.
            continue;
        };
        let Some(ip) = local_ip else { continue };
        let (handler, token, cache, events) = (handler.clone(), token.clone(), cache.clone(), events.clone());
        let access = access.clone();
        let limits = *published.borrow();
        // Both caps before anything is bound: a refused request costs one datagram,
        // answered from the listening socket.
        let Some(slot) = slots.try_take(peer.ip()) else {
            count_error("busy");
            let _ = sock
                .send_to(&packet::error(errcode::UNDEFINED, "server busy"), peer)
                .await;
            continue;
        };
        transfers.spawn(async move {
            let _slot = slot;
            let tid = match UdpSocket::bind(SocketAddr::new(ip, 0)).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("TFTP: cannot open a transfer socket: {e}");
                    count_error("socket");
                    return;
                }
            };
            if let Some(gate) = access.as_ref().filter(|g| g.enforcing()) {
                let d = gate
                    .check_addr(bootlane_boot::access::model::Protocol::Tftp, peer.ip(), None)
                    .await;
                if d.refused() {
                    tracing::info!(%peer, file = %req.filename, "TFTP refused: access control");
                    count_error("access");
                    let _ = tid
                        .send_to(
                            &packet::error(
                                errcode::ACCESS,
                                "access denied: this machine may not boot from this server",
                            ),
                            peer,
                        )
                        .await;
                    return;
                }
            }
            let plan = match handler.open_from(&req, peer) {
                Ok(p) => p,
                Err(r) => {
                    tracing::info!(%peer, file = %req.filename, code = r.code, "TFTP refused: {}", r.message);
                    if let Some(ev) = &events {
                        ev.publish(
                            NewEvent::new(
                                EventKind::TftpTransferFailed,
                                format!("TFTP {} refused to {peer}: {}", req.filename, r.message),
                            )
                            .resource("file", &req.filename)
                            .remote(peer)
                            .with(&TftpRefused {
                                file: req.filename.clone(),
                                client: peer.to_string(),
                                error: r.message.clone(),
                                code: r.code,
                            }),
                        );
                    }
                    count_error(error_kind(r.code));
                    let _ = tid.send_to(&packet::error(r.code, &r.message), peer).await;
                    return;
                }
            };
            let file = req.filename.clone();
            let size = plan.size;
            let t0 = std::time::Instant::now();
            let active = ActiveTransfer::start();
            let outcome = send_file(&tid, peer, plan, &cache, limits, &token).await;
            drop(active);
            match outcome {
                Outcome::Complete => metrics::counter!(TFTP_COMPLETED).increment(1),
                Outcome::ClientError => metrics::counter!(TFTP_FAILED, "reason" => "client_error").increment(1),
                Outcome::TimedOut => metrics::counter!(TFTP_FAILED, "reason" => "timed_out").increment(1),
                Outcome::Cancelled => metrics::counter!(TFTP_FAILED, "reason" => "cancelled").increment(1),
            }
            let ms = t0.elapsed().as_millis() as u64;
            tracing::info!(%peer, %file, size, ?outcome, ms, "TFTP transfer ended");
            let kind = match outcome {
                Outcome::Complete => EventKind::TftpTransferCompleted,
                // UEFI firmware asks for `tsize` and then aborts on purpose: not a failure.
                Outcome::ClientError => EventKind::TftpTransferAborted,
                Outcome::TimedOut => EventKind::TftpTransferFailed,
                Outcome::Cancelled => return,
            };
            let verb = kind.verb();
            if let Some(ev) = &events {
                ev.publish(
                    NewEvent::new(kind, format!("TFTP {file} to {peer} {verb} ({size} bytes, {ms} ms)"))
                        .resource("file", &file)
                        .remote(peer)
                        .with(&TftpTransfer {
                            file: file.clone(),
                            client: peer.to_string(),
                            bytes: size,
                            duration_ms: ms,
                            outcome: format!("{outcome:?}"),
                        }),
                );
            }
        });
    }
}

/// Nice value of the threads that run TFTP transfers (`setpriority(2)`; 0 is a normal
/// thread's, 19 the lowest). Bulk transfers yield the CPU to DHCP, DNS, the API and
/// anything else at normal priority, so a rack powering on never slows their answers.
/// Lock-step TFTP gains from it too: a transfer thread that is not preempted by every
/// client it wakes answers the ACKs that arrived meanwhile in one run (500 parallel
/// downloads with their clients on the same two cores: 12.2-12.6 s at 5 against 15.4-16.7 s
/// at 0, see the book's performance chapter).
pub const TRANSFER_NICE: i32 = 5;

/// The runtime that runs every TFTP transfer: one worker per core (at most 8), each at
/// [`TRANSFER_NICE`], created on first use and kept for the life of the process (a
/// restarted TFTP service reuses it). Requests are read, and transfers accepted, on the
/// caller's runtime.
///
/// # Errors
/// The runtime could not be created (no threads, no epoll instance); tried again on the
/// next call.
fn transfer_runtime() -> io::Result<tokio::runtime::Handle> {
    static RUNTIME: std::sync::Mutex<Option<tokio::runtime::Runtime>> = std::sync::Mutex::new(None);
    let mut rt = RUNTIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(rt) = rt.as_ref() {
        return Ok(rt.handle().clone());
    }
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("tftp-transfer")
        .on_thread_start(|| {
            // SAFETY: setpriority(2) on this thread's own id; no memory is shared. A
            // failure (EACCES) leaves the thread at normal priority.
            unsafe {
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, TRANSFER_NICE);
            }
        })
        .enable_all()
        .build()?;
    Ok(rt.insert(built).handle().clone())
}

/// Largest file kept in memory and shared between concurrent transfers; larger files
/// are read from disk a window at a time.
pub const CACHE_MAX_FILE: u64 = 64 << 20;

/// The bytes of a file being sent.
#[derive(Clone)]
pub enum Source {
    /// The whole file, shared by every transfer of the same version of it.
    Mem(Arc<[u8]>),
    /// A large file, read with positional reads on the blocking pool.
    Disk(Arc<std::fs::File>),
}

impl Source {
    /// Up to `len` bytes at `offset` (fewer at the end of the file).
    async fn read(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        match self {
            Self::Mem(b) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
                let end = start.saturating_add(len).min(b.len());
                Ok(b[start..end].to_vec())
            }
            Self::Disk(f) => {
                let f = f.clone();
                tokio::task::spawn_blocking(move || {
                    use std::os::unix::fs::FileExt;
                    let mut out = vec![0u8; len];
                    let mut got = 0;
                    while got < len {
                        let k = f.read_at(&mut out[got..], offset + got as u64)?;
                        if k == 0 {
                            break;
                        }
                        got += k;
                    }
                    out.truncate(got);
                    Ok(out)
                })
                .await
                .map_err(io::Error::other)?
            }
        }
    }
}

/// Modification time and size the bytes were read at, and the bytes (weakly held).
type CacheEntry = (SystemTime, u64, Weak<[u8]>);

/// Files in memory, keyed by path and validated by size and modification time, held
/// weakly: an entry lives as long as a transfer uses it, so 500 clients fetching
/// `ipxe.efi` share one copy and one read, and nothing stays cached when idle. Reading
/// every block through the blocking pool instead made each transfer several times
/// slower.
#[derive(Default)]
pub struct FileCache {
    map: std::sync::Mutex<HashMap<PathBuf, CacheEntry>>,
    /// Serialises reads on a miss, so N clients asking for the same file at once (a rack
    /// powering on) cause one read, not N.
    loading: tokio::sync::Mutex<()>,
}

impl FileCache {
    /// The contents of `path` (as checked by the handler).
    ///
    /// # Errors
    /// I/O errors opening or reading the file.
    pub async fn get(&self, path: &Path) -> io::Result<Source> {
        let meta = tokio::fs::metadata(path).await?;
        let (mtime, size) = (meta.modified()?, meta.len());
        if size > CACHE_MAX_FILE {
            let f = std::fs::File::open(path)?;
            return Ok(Source::Disk(Arc::new(f)));
        }
        let cached = || -> Option<Arc<[u8]>> {
            let map = self.map.lock().ok()?;
            let (t, n, w) = map.get(path)?;
            (*t == mtime && *n == size).then(|| w.upgrade()).flatten()
        };
        if let Some(b) = cached() {
            return Ok(Source::Mem(b));
        }
        let _loading = self.loading.lock().await;
        // Another transfer may have read it while this one waited.
        if let Some(b) = cached() {
            return Ok(Source::Mem(b));
        }
        let bytes: Arc<[u8]> = tokio::fs::read(path).await?.into();
        if let Ok(mut map) = self.map.lock() {
            map.retain(|_, (_, _, w)| w.strong_count() > 0);
            map.insert(path.to_path_buf(), (mtime, size, Arc::downgrade(&bytes)));
        }
        Ok(Source::Mem(bytes))
    }
}

/// A transfer's cancellation, pinned for the life of the transfer.
type Cancelled<'a, 'b> = std::pin::Pin<&'a mut tokio_util::sync::WaitForCancellationFuture<'b>>;

/// What came back while waiting.
enum Reply {
    Ack(u16),
    Error,
    Timeout,
    Cancelled,
}

/// Waits until `deadline` for an ACK or ERROR from `peer`; packets from other
/// addresses get ERROR 5 (RFC 1350 §4) and are otherwise ignored, as is anything else.
/// `cancelled` is the transfer's one cancellation future (registered once, not per
/// block).
async fn wait(sock: &UdpSocket, peer: SocketAddr, deadline: Instant, cancelled: &mut Cancelled<'_, '_>) -> Reply {
    let mut buf = [0u8; 516];
    loop {
        let r = tokio::select! {
            _ = cancelled.as_mut() => return Reply::Cancelled,
            r = timeout_at(deadline, sock.recv_from(&mut buf)) => r,
        };
        let (n, from) = match r {
            Err(_) => return Reply::Timeout,
            Ok(Err(_)) => continue,
            Ok(Ok(v)) => v,
        };
        if from != peer {
            count_error("unknown_tid");
            let _ = sock
                .send_to(&packet::error(errcode::UNKNOWN_TID, "unknown transfer ID"), from)
                .await;
            continue;
        }
        match Packet::parse(&buf[..n]) {
            Ok(Packet::Ack(b)) => return Reply::Ack(b),
            Ok(Packet::Error(..)) => return Reply::Error,
            _ => continue,
        }
    }
}

/// Sends blocks `blocks` of `src` to `peer`. A disk file's window is read first, keeping
/// the blocks already read (`buffered` holds the blocks from `blocks.start` on); `Err`
/// when that read failed (ERROR 0 was sent).
async fn send_blocks(
    sock: &UdpSocket,
    peer: SocketAddr,
    session: &Session,
    blocks: std::ops::Range<u64>,
    src: &Source,
    buffered: &mut VecDeque<Vec<u8>>,
    pkt: &mut Vec<u8>,
) -> Result<(), ()> {
    let blk = session.blksize();
    let count = (blocks.end - blocks.start) as usize;
    if matches!(src, Source::Disk(_)) && buffered.len() < count {
        let have = blocks.start + buffered.len() as u64;
        let want = count - buffered.len();
        match src.read((have - 1) * blk as u64, want * blk).await {
            Ok(bytes) => {
                for i in 0..want {
                    let (start, end) = ((i * blk).min(bytes.len()), ((i + 1) * blk).min(bytes.len()));
                    buffered.push_back(bytes[start..end].to_vec());
                }
            }
            Err(e) => {
                tracing::warn!("TFTP read error: {e}");
                count_error("read_error");
                let _ = sock
                    .send_to(&packet::error(errcode::UNDEFINED, "read error"), peer)
                    .await;
                return Err(());
            }
        }
    }
    let bytes_sent = metrics::counter!(TFTP_BYTES_SENT);
    for (i, n) in blocks.enumerate() {
        let payload: &[u8] = match src {
            Source::Mem(b) => &b[session.block_bytes(n, b.len())],
            Source::Disk(_) => &buffered[i],
        };
        data_into(pkt, n, payload);
        if sock.send_to(pkt, peer).await.is_ok() {
            bytes_sent.increment(payload.len() as u64);
        }
    }
    Ok(())
}

/// Runs one read transfer to `peer` over its own `sock` (the transfer ID); [`Session`]
/// decides what is sent when, and the file is read once the options are agreed.
pub async fn send_file(
    sock: &UdpSocket,
    peer: SocketAddr,
    plan: ReadPlan,
    cache: &FileCache,
    limits: TftpLimits,
    token: &CancellationToken,
) -> Outcome {
    let mut session = Session::new(&plan.opts, plan.size, limits);
    let mut src: Option<Source> = None;
    // A disk file's blocks from the window's first on.
    let mut buffered: VecDeque<Vec<u8>> = VecDeque::new();
    // One DATA packet, rebuilt in place for every block sent.
    let mut pkt: Vec<u8> = Vec::with_capacity(4 + session.blksize());
    let cancelled = token.cancelled();
    tokio::pin!(cancelled);
    loop {
        let blocks = match session.pending() {
            Pending::Oack(o) => {
                let _ = sock.send_to(o, peer).await;
                None
            }
            Pending::Blocks(r) => Some(r),
        };
        if let Some(blocks) = blocks.clone() {
            // The file is opened once the options are agreed (a tsize probe never reads it).
            let source = match src {
                Some(ref s) => s,
                None => {
                    let opened = match &plan.content {
                        Some(bytes) => Ok(Source::Mem(bytes.clone())),
                        None => cache.get(&plan.path).await,
                    };
                    let Ok(opened) = opened else {
                        count_error("not_found");
                        let _ = sock
                            .send_to(&packet::error(errcode::NOT_FOUND, "file not found"), peer)
                            .await;
                        return Outcome::ClientError;
                    };
                    src.insert(opened)
                }
            };
            if send_blocks(sock, peer, &session, blocks, source, &mut buffered, &mut pkt)
                .await
                .is_err()
            {
                return Outcome::ClientError;
            }
        }
        session.sent(Instant::now());
        if let Some(o) = wait_step(sock, peer, &mut session, &mut cancelled).await {
            return o;
        }
        if let (Some(before), Pending::Blocks(now)) = (blocks, session.pending()) {
            let acked = (now.start - before.start).min(buffered.len() as u64);
            buffered.drain(..acked as usize);
        }
    }
}

/// Waits for the packet or timeout that makes `session` send again (`None`), or for the
/// end of the transfer (`Some`).
async fn wait_step(
    sock: &UdpSocket,
    peer: SocketAddr,
    session: &mut Session,
    cancelled: &mut Cancelled<'_, '_>,
) -> Option<Outcome> {
    loop {
        let step = match wait(sock, peer, session.deadline(), cancelled).await {
            Reply::Ack(n) => session.on_ack(n),
            Reply::Error => Step::Done(Outcome::ClientError),
            Reply::Cancelled => Step::Done(Outcome::Cancelled),
            Reply::Timeout => session.on_timeout(),
        };
        match step {
            Step::Wait => continue,
            Step::Send => return None,
            Step::Done(o) => return Some(o),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_and_disk_sources_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let mem = FileCache::default().get(&path).await.unwrap();
        assert!(matches!(mem, Source::Mem(_)));
        let disk = Source::Disk(Arc::new(std::fs::File::open(&path).unwrap()));
        for (off, len) in [(0u64, 512usize), (9_728, 512), (9_999, 10), (10_000, 512), (20_000, 8)] {
            let a = mem.read(off, len).await.unwrap();
            let b = disk.read(off, len).await.unwrap();
            assert_eq!(a, b, "offset {off}");
            let end = (off as usize + len).min(data.len());
            assert_eq!(a, data[(off as usize).min(end)..end]);
        }
        // A second transfer of the same file shares the same bytes.
        let cache = FileCache::default();
        let (Source::Mem(x), Source::Mem(y)) = (cache.get(&path).await.unwrap(), cache.get(&path).await.unwrap())
        else {
            panic!("small files are cached")
        };
        assert!(Arc::ptr_eq(&x, &y));
    }

    #[tokio::test]
    async fn transfers_run_at_the_transfer_nice() {
        // SAFETY: getpriority(2) on the calling thread's own id.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let ours = nice();
        let rt = transfer_runtime().unwrap();
        let theirs = rt.spawn(async move { nice() }).await.unwrap();
        if ours <= TRANSFER_NICE {
            assert_eq!(theirs, TRANSFER_NICE, "a transfer thread runs at TRANSFER_NICE");
        } else {
            // A test run already below that priority cannot be raised without privilege.
            assert!(theirs >= TRANSFER_NICE, "{theirs}");
        }
        assert_eq!(nice(), ours, "the caller's own thread is left alone");
        // One runtime for the process: a second server (a restarted service) reuses it.
        let again = transfer_runtime().unwrap();
        assert_eq!(again.id(), rt.id());
    }
}
