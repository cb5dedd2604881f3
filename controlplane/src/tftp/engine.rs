//! The shared-socket TFTP transport (issue 14, "TFTP at scale"): every transfer of a file
//! held in memory runs on one UDP socket per listening address, driven by one thread that
//! takes the ACKs of many transfers in one `recvmmsg(2)` and sends their next blocks in one
//! `sendmmsg(2)`. A transfer task per socket cost two system calls per block plus a
//! wake-up through tokio's scheduler and timer; at 500 parallel lock-step downloads the
//! server's CPU, not the clients', was what it could save.
//!
//! The transfer ID (RFC 1350 §4) is the pair of ports: the server's side is this socket's
//! port (never 69), and transfers are told apart by the client's address and port. A
//! packet from an address with no transfer gets ERROR 5 "unknown transfer ID" (at most
//! [`UNKNOWN_TID_PER_SEC`] a second, so the socket cannot be used to reflect a flood) and
//! changes nothing. A second read request from the same address and port replaces that
//! address's transfer (the client has given the first one up, or repeated its request
//! because the first answer was lost). The protocol itself is [`Session`]'s; the thread
//! checks retransmission deadlines every [`TICK`].

use std::{
    collections::HashMap,
    io,
    net::{IpAddr, SocketAddr, UdpSocket},
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::{sync::oneshot, time::Instant};
use tokio_util::sync::CancellationToken;

use super::{
    packet::{self, errcode, Packet},
    server::Outcome,
    session::{data_into, Pending, Session, Step},
};
use crate::{metrics::TFTP_BYTES_SENT, net::mmsg};

/// How often the thread checks retransmission deadlines while transfers run (it also
/// wakes this often when no packet comes).
pub const TICK: Duration = Duration::from_millis(10);

/// How long the thread sleeps in one receive when no transfer runs (how soon it sees a
/// cancellation then).
const IDLE_WAIT: Duration = Duration::from_millis(250);

/// Most ERROR 5 "unknown transfer ID" replies a second.
pub const UNKNOWN_TID_PER_SEC: u32 = 100;

/// One running transfer.
struct Slot {
    session: Session,
    bytes: Arc<[u8]>,
    done: oneshot::Sender<Outcome>,
}

type Slots = Arc<Mutex<HashMap<SocketAddr, Slot>>>;

/// The shared socket of one listening address and the transfers running on it.
pub struct Engine {
    sock: Arc<UdpSocket>,
    slots: Slots,
}

impl Engine {
    /// Binds the shared socket on `local` (port chosen by the kernel) and starts its
    /// thread, which ends every transfer as [`Outcome::Cancelled`] and exits once `token`
    /// is cancelled.
    ///
    /// # Errors
    /// The bind, a socket option, or the thread's creation failed.
    pub fn start(local: IpAddr, token: CancellationToken) -> io::Result<Self> {
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(SocketAddr::new(local, 0)),
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )?;
        if local.is_ipv6() {
            // As a socket bound with std: IPv4 clients of a `[::]` listener are served too.
            let _ = sock.set_only_v6(false);
        }
        // The ACKs of every running transfer can arrive between two receives.
        crate::dns::server::size_buffers(&sock);
        sock.bind(&SocketAddr::new(local, 0).into())?;
        sock.set_read_timeout(Some(IDLE_WAIT))?;
        let sock: Arc<UdpSocket> = Arc::new(sock.into());
        let slots: Slots = Arc::default();
        let (s, t) = (sock.clone(), slots.clone());
        std::thread::Builder::new()
            .name("tftp-engine".into())
            .spawn(move || run(&s, &t, &token))?;
        Ok(Self { sock, slots })
    }

    /// The shared socket's address (the server's transfer ID).
    ///
    /// # Errors
    /// As `getsockname(2)`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Sends one datagram (an ERROR refusing a request) from the shared socket without
    /// waiting; a full send buffer drops it, as UDP may.
    pub fn send(&self, pkt: &[u8], to: SocketAddr) {
        let _ = mmsg::send_nowait(&self.sock, pkt, to);
    }

    /// Runs the transfer `session` of `bytes` to `peer` and returns how it ended. The
    /// first OACK or window leaves at once from the caller's thread; the engine's thread
    /// does the rest.
    pub async fn transfer(&self, peer: SocketAddr, session: Session, bytes: Arc<[u8]>) -> Outcome {
        let (done, ended) = oneshot::channel();
        let mut slot = Slot { session, bytes, done };
        let mut first = Vec::new();
        queue(&mut slot, peer, Instant::now(), &mut first, &mut Vec::new());
        // In the table before the first datagram leaves: the answer finds its transfer.
        let old = self.slots.lock().unwrap_or_else(PoisonError::into_inner).insert(peer, slot);
        if let Some(old) = old {
            // The client asked again from the same port: its first transfer is over.
            let _ = old.done.send(Outcome::ClientError);
        }
        for (p, to) in &first {
            let _ = mmsg::send_nowait(&self.sock, p, *to);
        }
        ended.await.unwrap_or(Outcome::Cancelled)
    }
}

/// Queues what `slot` has pending into `out` (reusing spent buffers from `spare`) and
/// arms its timer.
fn queue(slot: &mut Slot, peer: SocketAddr, now: Instant, out: &mut Vec<(Vec<u8>, SocketAddr)>, spare: &mut Vec<Vec<u8>>) {
    match slot.session.pending() {
        Pending::Oack(o) => {
            let mut b = spare.pop().unwrap_or_default();
            b.clear();
            b.extend_from_slice(o);
            out.push((b, peer));
        }
        Pending::Blocks(r) => {
            let bytes_sent = metrics::counter!(TFTP_BYTES_SENT);
            for n in r {
                let range = slot.session.block_bytes(n, slot.bytes.len());
                bytes_sent.increment(range.len() as u64);
                let mut b = spare.pop().unwrap_or_default();
                data_into(&mut b, n, &slot.bytes[range]);
                out.push((b, peer));
            }
        }
    }
    slot.session.sent(now);
}

/// The engine's thread: receive a batch, act on each packet, send what that produced,
/// check deadlines every [`TICK`].
fn run(sock: &UdpSocket, slots: &Mutex<HashMap<SocketAddr, Slot>>, token: &CancellationToken) {
    let mut batch = mmsg::RecvBatch::new();
    let mut out: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut ended: Vec<(oneshot::Sender<Outcome>, Outcome)> = Vec::new();
    let mut next_tick = Instant::now() + TICK;
    let mut idle = true;
    let (mut tid_errors, mut tid_second) = (0u32, Instant::now());
    loop {
        if token.is_cancelled() {
            let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
            for (_, slot) in slots.drain() {
                let _ = slot.done.send(Outcome::Cancelled);
            }
            return;
        }
        let got = match batch.recv(sock) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => 0,
            Err(e) => {
                // ECONNREFUSED and the like: an ICMP error about an earlier datagram.
                tracing::debug!("TFTP engine receive: {e}");
                0
            }
        };
        let now = Instant::now();
        {
            let mut slots = slots.lock().unwrap_or_else(PoisonError::into_inner);
            for i in 0..got {
                let (bytes, from) = batch.get(i);
                let packet = Packet::parse(bytes);
                let Some(slot) = slots.get_mut(&from) else {
                    // RFC 1350 §4: answer a stranger with ERROR 5, never an ERROR (no
                    // error loops), and not more than the budget allows.
                    if !matches!(packet, Ok(Packet::Error(..))) && from.port() != 0 {
                        if now.duration_since(tid_second) >= Duration::from_secs(1) {
                            (tid_errors, tid_second) = (0, now);
                        }
                        if tid_errors < UNKNOWN_TID_PER_SEC {
                            tid_errors += 1;
                            super::server::count_error("unknown_tid");
                            out.push((packet::error(errcode::UNKNOWN_TID, "unknown transfer ID"), from));
                        }
                    }
                    continue;
                };
                let step = match packet {
                    Ok(Packet::Ack(n)) => slot.session.on_ack(n),
                    Ok(Packet::Error(..)) => Step::Done(Outcome::ClientError),
                    _ => Step::Wait,
                };
                match step {
                    Step::Wait => {}
                    Step::Send => queue(slot, from, now, &mut out, &mut spare),
                    Step::Done(o) => {
                        if let Some(slot) = slots.remove(&from) {
                            ended.push((slot.done, o));
                        }
                    }
                }
            }
            if now >= next_tick {
                next_tick = now + TICK;
                let mut gone = Vec::new();
                for (peer, slot) in slots.iter_mut().filter(|(_, s)| s.session.deadline() <= now) {
                    match slot.session.on_timeout() {
                        Step::Send => queue(slot, *peer, now, &mut out, &mut spare),
                        _ => gone.push(*peer),
                    }
                }
                for peer in gone {
                    if let Some(slot) = slots.remove(&peer) {
                        ended.push((slot.done, Outcome::TimedOut));
                    }
                }
            }
            // Sleep long in a receive only while nothing runs.
            if slots.is_empty() != idle {
                idle = slots.is_empty();
                let _ = sock.set_read_timeout(Some(if idle { IDLE_WAIT } else { TICK }));
            }
        }
        if !out.is_empty() {
            mmsg::send_batch(sock, &out);
            spare.extend(out.drain(..).map(|(b, _)| b));
        }
        for (done, o) in ended.drain(..) {
            let _ = done.send(o);
        }
    }
}
