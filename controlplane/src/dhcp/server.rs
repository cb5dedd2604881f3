//! DHCP transport: [`bind_socket`] opens `0.0.0.0:<port>` with `SO_BROADCAST` and
//! `SO_BINDTODEVICE` (so replies to clients without an address leave by the right
//! interface, and each interface has its own socket on the shared port), and [`Server`]
//! runs one receive loop per registered socket, feeding a [`DhcpHandler`]. Sockets are
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
    handler::{DhcpHandler, RecvContext},
    packet::{encode, DhcpRequest},
};

/// Largest DHCP datagram accepted (RFC 2131 allows options beyond 576 bytes when the
/// client says so; nothing legitimate comes near 4 KiB).
const MAX_DATAGRAM: usize = 4096;

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
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, peer) = tokio::select! {
            _ = token.cancelled() => return,
            r = sock.recv_from(&mut buf) => match r {
                Ok(r) => r,
                Err(e) => { tracing::debug!("DHCP receive error: {e}"); continue; }
            },
        };
        let SocketAddr::V4(src) = peer else { continue };
        let req = match DhcpRequest::parse(&buf[..n]) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(%src, "dropping a DHCP datagram: {e}");
                metrics::counter!(crate::metrics::DHCP_MESSAGES, "type" => "invalid", "outcome" => "dropped")
                    .increment(1);
                continue;
            }
        };
        let ctx = RecvContext {
            interface: interface.clone(),
            port,
            src,
        };
        // Requests are handled in order on this socket; the handler's own lock makes
        // concurrency pointless, and ordering keeps DISCOVER before REQUEST.
        let Some(reply) = handler.handle(req, ctx).await else {
            continue;
        };
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
