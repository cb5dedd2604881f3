//! TFTP transport: [`Server`] reads requests from registered sockets and runs each
//! transfer in its own task on its own ephemeral socket (the RFC 1350 §4 transfer ID),
//! so slow or abandoned transfers never block others.
//!
//! A transfer sends a window of `windowsize` blocks (RFC 7440), then waits for an ACK:
//! an ACK inside the window slides it, an old or duplicate ACK is ignored (no
//! retransmission on duplicates, so no Sorcerer's Apprentice syndrome, RFC 1123
//! §4.2.3.1), a timeout resends the window with the timeout doubled (exponential
//! back-off, capped), and after [`TftpLimits::retries`] timeouts in a row the transfer is
//! abandoned quietly. That is also how the UEFI "tsize probe" ends: the client reads the
//! OACK and goes away (or sends ERROR 8), and its real request is a separate transfer.
//! Block numbers wrap from 65535 to 0, so files above 32 MiB at 512-byte blocks work.

use std::{collections::VecDeque, io, net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    io::AsyncReadExt,
    net::UdpSocket,
    sync::Semaphore,
    task::JoinSet,
    time::{timeout_at, Instant},
};
use tokio_util::sync::CancellationToken;

use super::{
    handler::{ReadPlan, TftpHandler},
    packet::{self, errcode, Packet},
};

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
}

impl Default for TftpLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(1),
            max_timeout: Duration::from_secs(8),
            retries: 5,
            max_transfers: 1024,
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
    limits: TftpLimits,
    tasks: JoinSet<()>,
    token: CancellationToken,
    slots: Arc<Semaphore>,
}

impl<H: TftpHandler> Server<H> {
    /// A server for `handler` that stops when `token` is cancelled.
    pub fn new(handler: Arc<H>, limits: TftpLimits, token: CancellationToken) -> Self {
        Self {
            handler,
            slots: Arc::new(Semaphore::new(limits.max_transfers.max(1))),
            limits,
            tasks: JoinSet::new(),
            token,
        }
    }

    /// Starts the request loop on a bound socket and returns its local address.
    ///
    /// # Errors
    /// When the socket cannot be registered with tokio.
    pub fn register_socket(&mut self, socket: std::net::UdpSocket) -> io::Result<SocketAddr> {
        socket.set_nonblocking(true)?;
        let local = socket.local_addr()?;
        let sock = UdpSocket::from_std(socket)?;
        self.tasks.spawn(listen(
            sock,
            self.handler.clone(),
            self.limits,
            self.token.clone(),
            self.slots.clone(),
        ));
        Ok(local)
    }

    /// Cancels the token and waits for the request loops (transfers stop at their next
    /// wait).
    pub async fn shutdown(mut self) {
        self.token.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

async fn listen<H: TftpHandler>(
    sock: UdpSocket,
    handler: Arc<H>,
    limits: TftpLimits,
    token: CancellationToken,
    slots: Arc<Semaphore>,
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
        let (handler, token) = (handler.clone(), token.clone());
        let permit = slots.clone().try_acquire_owned();
        tokio::spawn(async move {
            let tid = match UdpSocket::bind(SocketAddr::new(ip, 0)).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("TFTP: cannot open a transfer socket: {e}");
                    return;
                }
            };
            let Ok(_permit) = permit else {
                let _ = tid
                    .send_to(&packet::error(errcode::UNDEFINED, "server busy"), peer)
                    .await;
                return;
            };
            let plan = match handler.open(&req) {
                Ok(p) => p,
                Err(r) => {
                    tracing::info!(%peer, file = %req.filename, code = r.code, "TFTP refused: {}", r.message);
                    let _ = tid.send_to(&packet::error(r.code, &r.message), peer).await;
                    return;
                }
            };
            let file = req.filename.clone();
            let size = plan.size;
            let t0 = std::time::Instant::now();
            let outcome = send_file(&tid, peer, plan, limits, &token).await;
            tracing::info!(%peer, %file, size, ?outcome, ms = t0.elapsed().as_millis() as u64, "TFTP transfer ended");
        });
    }
}

/// Reads up to `n` bytes (short only at end of file).
async fn read_block(f: &mut tokio::fs::File, n: usize) -> io::Result<Vec<u8>> {
    let mut b = vec![0u8; n];
    let mut got = 0;
    while got < n {
        let k = f.read(&mut b[got..]).await?;
        if k == 0 {
            break;
        }
        got += k;
    }
    b.truncate(got);
    Ok(b)
}

/// What came back while waiting.
enum Reply {
    Ack(u16),
    Error,
    Timeout,
    Cancelled,
}

/// Waits until `deadline` for an ACK or ERROR from `peer`; packets from other
/// addresses get ERROR 5 (RFC 1350 §4) and are otherwise ignored, as is anything else.
async fn wait(
    sock: &UdpSocket,
    peer: SocketAddr,
    deadline: Instant,
    token: &CancellationToken,
) -> Reply {
    let mut buf = [0u8; 516];
    loop {
        let r = tokio::select! {
            _ = token.cancelled() => return Reply::Cancelled,
            r = timeout_at(deadline, sock.recv_from(&mut buf)) => r,
        };
        let (n, from) = match r {
            Err(_) => return Reply::Timeout,
            Ok(Err(_)) => continue,
            Ok(Ok(v)) => v,
        };
        if from != peer {
            let _ = sock
                .send_to(
                    &packet::error(errcode::UNKNOWN_TID, "unknown transfer ID"),
                    from,
                )
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

/// Runs one read transfer to `peer` over `sock`.
pub async fn send_file(
    sock: &UdpSocket,
    peer: SocketAddr,
    plan: ReadPlan,
    limits: TftpLimits,
    token: &CancellationToken,
) -> Outcome {
    let first_timeout = plan.opts.timeout.unwrap_or(limits.timeout);
    let mut rto = first_timeout;
    let mut misses = 0u32;
    let backoff = |rto: &mut Duration, misses: &mut u32| -> bool {
        *misses += 1;
        *rto = (*rto * 2).min(limits.max_timeout.max(first_timeout));
        *misses <= limits.retries
    };

    // Option acknowledgement: OACK, then ACK 0 (RFC 2347 §2).
    if !plan.opts.oack.is_empty() {
        let oack = packet::oack(&plan.opts.oack);
        loop {
            let _ = sock.send_to(&oack, peer).await;
            match wait(sock, peer, Instant::now() + rto, token).await {
                Reply::Ack(0) => break,
                Reply::Ack(_) => continue,
                Reply::Error => return Outcome::ClientError,
                Reply::Cancelled => return Outcome::Cancelled,
                Reply::Timeout => {
                    if !backoff(&mut rto, &mut misses) {
                        return Outcome::TimedOut;
                    }
                }
            }
        }
        rto = first_timeout;
        misses = 0;
    }

    let mut file = match tokio::fs::File::open(&plan.path).await {
        Ok(f) => f,
        Err(_) => {
            let _ = sock
                .send_to(&packet::error(errcode::NOT_FOUND, "file not found"), peer)
                .await;
            return Outcome::ClientError;
        }
    };
    let blk = plan.opts.blksize;
    let window = usize::from(plan.opts.windowsize.max(1));
    // Absolute number of the first unacknowledged block; wire numbers are its low 16 bits.
    let mut base: u64 = 1;
    let mut buffered: VecDeque<Vec<u8>> = VecDeque::with_capacity(window);
    let mut last: Option<u64> = None;
    loop {
        while buffered.len() < window && last.is_none_or(|l| base + (buffered.len() as u64) <= l) {
            let b = match read_block(&mut file, blk).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!("TFTP read error: {e}");
                    let _ = sock
                        .send_to(&packet::error(errcode::UNDEFINED, "read error"), peer)
                        .await;
                    return Outcome::ClientError;
                }
            };
            if b.len() < blk {
                last = Some(base + buffered.len() as u64);
            }
            buffered.push_back(b);
        }
        for (i, b) in buffered.iter().enumerate() {
            let num = ((base + i as u64) & 0xffff) as u16;
            let _ = sock.send_to(&packet::data(num, b), peer).await;
        }
        let deadline = Instant::now() + rto;
        loop {
            match wait(sock, peer, deadline, token).await {
                Reply::Ack(n) => {
                    // How many blocks past base-1 this ACK covers (wrap-safe).
                    let covered = u64::from(n.wrapping_sub(((base - 1) & 0xffff) as u16));
                    if covered == 0 || covered > buffered.len() as u64 {
                        continue; // duplicate or stale ACK: keep waiting.
                    }
                    for _ in 0..covered {
                        buffered.pop_front();
                    }
                    base += covered;
                    rto = first_timeout;
                    misses = 0;
                    if last.is_some_and(|l| base > l) {
                        return Outcome::Complete;
                    }
                    break;
                }
                Reply::Error => return Outcome::ClientError,
                Reply::Cancelled => return Outcome::Cancelled,
                Reply::Timeout => {
                    if !backoff(&mut rto, &mut misses) {
                        return Outcome::TimedOut;
                    }
                    break;
                }
            }
        }
    }
}
