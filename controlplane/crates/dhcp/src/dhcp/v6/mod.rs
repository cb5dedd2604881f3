//! DHCPv6 for network boot: RFC 8415 server and proxy modes on the
//! `[[dhcp.subnets6]]` links, with the boot-file URL of RFC 5970. Started and stopped
//! with the IPv4 DHCP service (one `dhcp` service, one set of settings).
//!
//! Layout: [`handler`] (pure request → reply logic), [`leases`] (the persisted lease
//! table), and here the transport: [`bind_socket`] opens `[::]:547` on one interface and
//! joins `ff02::1:2`; [`spawn_loop`] answers on it until cancelled; [`server_duid`] keeps
//! the server's DUID stable across restarts.

pub mod control;
pub mod handler;
pub mod leases;

use std::{
    io,
    net::{Ipv6Addr, SocketAddr, SocketAddrV6},
    sync::Arc,
};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;

use self::handler::{Dhcp6Handler, RecvContext6};
use bootlane_core::store::Kv;

/// DHCPv6 server/relay port (RFC 8415 §7.2).
pub const SERVER_PORT: u16 = 547;
/// All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1).
pub const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);
/// Largest DHCPv6 datagram accepted.
const MAX_DATAGRAM: usize = 4096;
/// A node identity key of the DHCP settings tree ([`bootlane_core::store::NodeTree`]): each
/// node of a shared store has its own.
pub(crate) const DUID_KEY: &str = "server_duid6";

/// Binds `[::]:port` on `interface` (`SO_BINDTODEVICE`, IPv6 only, `SO_REUSEADDR` so
/// each interface has its own socket on the shared port) and joins `ff02::1:2` there.
///
/// # Errors
/// Socket errors (unknown interface, port in use, missing privileges, IPv6 disabled),
/// with the interface and port in the message.
pub fn bind_socket(interface: &str, port: u16) -> io::Result<std::net::UdpSocket> {
    let ctx = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("cannot bind DHCPv6 socket [::]:{port} on {interface}: {e}"),
        )
    };
    let index = bootlane_core::net::ifindex(interface)
        .ok_or_else(|| ctx(io::Error::new(io::ErrorKind::NotFound, "no such interface")))?;
    let s = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP)).map_err(ctx)?;
    s.set_only_v6(true).map_err(ctx)?;
    s.set_reuse_address(true).map_err(ctx)?;
    s.bind_device(Some(interface.as_bytes())).map_err(ctx)?;
    s.set_nonblocking(true).map_err(ctx)?;
    s.bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, port)).into())
        .map_err(ctx)?;
    s.join_multicast_v6(&ALL_SERVERS, index).map_err(ctx)?;
    Ok(s.into())
}

/// Answers DHCPv6 on `socket` (serving `interface`) until `token` is cancelled.
///
/// # Errors
/// When the socket cannot be registered with tokio.
pub fn spawn_loop(
    socket: std::net::UdpSocket,
    interface: &str,
    handler: Arc<Dhcp6Handler>,
    token: CancellationToken,
) -> io::Result<tokio::task::JoinHandle<()>> {
    socket.set_nonblocking(true)?;
    let sock = UdpSocket::from_std(socket)?;
    let interface = interface.to_string();
    Ok(tokio::spawn(async move {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        loop {
            let (n, peer) = tokio::select! {
                _ = token.cancelled() => return,
                r = sock.recv_from(&mut buf) => match r {
                    Ok(r) => r,
                    Err(e) => { tracing::debug!("DHCPv6 receive error: {e}"); continue; }
                },
            };
            let SocketAddr::V6(src) = peer else { continue };
            let ctx = RecvContext6 {
                interface: interface.clone(),
                src,
            };
            let Some(reply) = handler.handle(&buf[..n], &ctx).await else {
                continue;
            };
            // RFC 8415 §18.3: the reply goes to the source address and port of the request.
            if let Err(e) = sock
                .send_to(&reply, SocketAddrV6::new(*src.ip(), src.port(), 0, src.scope_id()))
                .await
            {
                tracing::debug!(%src, "sending a DHCPv6 reply failed: {e}");
            }
        }
    }))
}

/// The server's DUID (RFC 8415 §11.5, DUID-UUID): made once from random bytes and stored
/// in `kv`, so clients see the same Server Identifier after a restart.
///
/// # Errors
/// Store errors.
pub async fn server_duid(kv: &Kv) -> Result<Vec<u8>, bootlane_core::store::StoreError> {
    if let Some(d) = kv.get::<Vec<u8>>(DUID_KEY)? {
        if d.len() == 18 {
            return Ok(d);
        }
    }
    let mut d = vec![0u8, 4];
    d.extend_from_slice(&rand::random::<[u8; 16]>());
    kv.put(DUID_KEY, &d).await?;
    Ok(d)
}

#[cfg(test)]
mod tests;
