//! DHCP transport: [`bind_socket`] opens `0.0.0.0:<port>` with `SO_BROADCAST` and
//! `SO_BINDTODEVICE` (so replies to clients without an address leave by the right
//! interface, and each interface has its own socket on the shared port), and [`Server`]
//! runs one receive loop per registered socket, feeding a [`DhcpHandler`] in batches:
//! what is queued is handled, the lease writes are flushed once, then the replies go out. Sockets are
//! bound by the caller, so tests use `127.0.0.1:0`. Every task stops when the
//! cancellation token fires; [`Server::shutdown`] waits for them.

use std::{
    io,
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::{net::UdpSocket, task::JoinSet};
use tokio_util::sync::CancellationToken;

use super::{
    handler::{DhcpHandler, DhcpReply, RecvContext},
    packet::{encode, DhcpRequest},
};

/// Largest DHCP datagram accepted (RFC 2131 allows options beyond 576 bytes when the
/// client says so; nothing legitimate comes near 4 KiB).
const MAX_DATAGRAM: usize = 4096;
/// Most datagrams handled before their lease writes are flushed and their replies sent.
const BATCH: usize = 256;
/// How long a batch holding a DHCPACK waits for more requests before its flush.
const LINGER: std::time::Duration = std::time::Duration::from_micros(500);
/// Datagrams queued between the reader and the handler; beyond it new ones are dropped
/// (and counted as `type="queued", outcome="dropped"`), as a full kernel buffer would.
const QUEUE: usize = 16384;

/// Binds a DHCP socket on `0.0.0.0:port`, bound to `interface` (`SO_BINDTODEVICE`,
/// needs `CAP_NET_RAW`), with `SO_BROADCAST` and `SO_REUSEADDR` (one socket per
/// interface share the port).
///
/// # Errors
/// Socket errors, with the interface and port in the message.
pub fn bind_socket(interface: &str, port: u16) -> io::Result<std::net::UdpSocket> {
    let ctx = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("cannot bind DHCP socket 0.0.0.0:{port} on {interface}: {e}"),
        )
    };
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(ctx)?;
    s.set_reuse_address(true).map_err(ctx)?;
    s.set_broadcast(true).map_err(ctx)?;
    s.bind_device(Some(interface.as_bytes())).map_err(ctx)?;
    s.set_nonblocking(true).map_err(ctx)?;
    s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)).into())
        .map_err(ctx)?;
    Ok(s.into())
}

/// Runs receive loops for registered sockets.
pub struct Server<H> {
    handler: Arc<H>,
    tasks: JoinSet<()>,
    token: CancellationToken,
}

impl<H: DhcpHandler> Server<H> {
    /// A server for `handler` that stops when `token` is cancelled.
    pub fn new(handler: Arc<H>, token: CancellationToken) -> Self {
        Self {
            handler,
            tasks: JoinSet::new(),
            token,
        }
    }

    /// Starts a receive loop on a bound socket. `interface` names the interface the
    /// socket serves (it selects the subnets); replies go out of the same socket.
    ///
    /// # Errors
    /// When the socket cannot be registered with tokio or has no local address.
    pub fn register_socket(&mut self, socket: std::net::UdpSocket, interface: &str) -> io::Result<SocketAddr> {
        socket.set_nonblocking(true)?;
        let local = socket.local_addr()?;
        let sock = Arc::new(UdpSocket::from_std(socket)?);
        let (h, t, iface) = (self.handler.clone(), self.token.clone(), interface.to_string());
        self.tasks.spawn(recv_loop(sock, h, t, iface, local.port()));
        Ok(local)
    }

    /// Cancels the token and waits for every loop to end.
    pub async fn shutdown(mut self) {
        self.token.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

async fn recv_loop<H: DhcpHandler>(
    sock: Arc<UdpSocket>,
    handler: Arc<H>,
    token: CancellationToken,
    interface: String,
    port: u16,
) {
    // A reader task drains the socket into a queue while the handler works (and while a
    // batch's flush waits on the disk): the kernel's receive buffer, a few hundred
    // datagrams, would otherwise overflow under a flood during every fsync.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(Vec<u8>, SocketAddr)>(QUEUE);
    let reader = {
        let (sock, token) = (sock.clone(), token.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            loop {
                let r = tokio::select! {
                    _ = token.cancelled() => return,
                    r = sock.recv_from(&mut buf) => r,
                };
                match r {
                    Ok((n, peer)) => {
                        if tx.try_send((buf[..n].to_vec(), peer)).is_err() {
                            metrics::counter!(bootlane_core::metrics::DHCP_MESSAGES, "type" => "queued", "outcome" => "dropped")
                                .increment(1);
                        }
                    }
                    Err(e) => tracing::debug!("DHCP receive error: {e}"),
                }
            }
        })
    };
    let mut batch = Vec::with_capacity(BATCH);
    let mut replies = Vec::with_capacity(BATCH);
    loop {
        // Whatever is queued (up to BATCH) is one batch: under load it grows, and its lease
        // writes share one flush (group commit).
        let n = tokio::select! {
            _ = token.cancelled() => break,
            n = rx.recv_many(&mut batch, BATCH) => n,
        };
        if n == 0 {
            break;
        }
        for (datagram, peer) in batch.drain(..) {
            if let Some(reply) = handle_one(&*handler, &datagram, peer, &interface, port).await {
                replies.push(reply);
            }
        }
        if replies.is_empty() {
            continue;
        }
        // A batch that will flush lingers briefly for more requests, so that one fsync
        // covers more leases under load (a lone request waits LINGER at most).
        let is_ack = |r: &DhcpReply| r.msg.opts().msg_type() == Some(dhcproto::v4::MessageType::Ack);
        if replies.iter().any(is_ack) {
            let until = tokio::time::Instant::now() + LINGER;
            while replies.len() < BATCH {
                match tokio::time::timeout_at(until, rx.recv_many(&mut batch, BATCH - replies.len())).await {
                    Ok(n) if n > 0 => {
                        for (datagram, peer) in batch.drain(..) {
                            if let Some(reply) = handle_one(&*handler, &datagram, peer, &interface, port).await {
                                replies.push(reply);
                            }
                        }
                    }
                    _ => break,
                }
            }
        }
        // Every lease acknowledged below is on disk first.
        let committed = handler.commit().await;
        if committed != super::handler::Committed::All {
            replies.retain(|r: &DhcpReply| committed.allows(r));
        }
        for reply in replies.drain(..) {
            let bytes = match encode(&reply.msg) {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("encoding a DHCP reply failed: {e}");
                    continue;
                }
            };
            let dest = reply.dest;
            if let Err(e) = sock.send_to(&bytes, dest).await {
                tracing::debug!(%dest, "sending a DHCP reply failed: {e}");
            }
        }
    }
    reader.abort();
}

/// Parses and handles one datagram; `None` when it is dropped or needs no reply.
async fn handle_one<H: DhcpHandler>(
    handler: &H,
    datagram: &[u8],
    peer: SocketAddr,
    interface: &str,
    port: u16,
) -> Option<DhcpReply> {
    let SocketAddr::V4(src) = peer else { return None };
    let req = match DhcpRequest::parse(datagram) {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(%src, "dropping a DHCP datagram: {e}");
            metrics::counter!(bootlane_core::metrics::DHCP_MESSAGES, "type" => "invalid", "outcome" => "dropped")
                .increment(1);
            return None;
        }
    };
    let ctx = RecvContext {
        interface: interface.to_string(),
        port,
        src,
    };
    // Requests are handled in order on this socket; the handler's own lock makes
    // concurrency pointless, and ordering keeps DISCOVER before REQUEST.
    handler.handle(req, ctx).await
}
