//! DNS transport: binds UDP and TCP sockets for a listen list and port, and runs the
//! receive loops that feed [`DnsHandler`]. Several UDP sockets per address share the
//! port through `SO_REUSEPORT` (one per core), each served by a thread of its own that
//! sleeps in `recvmmsg` and moves queries and answers in batches of up to 32
//! (`recvmmsg`/`sendmmsg`, [`mmsg`]): no event loop between socket and handler, so a
//! query costs no epoll round and no hand-over between runtime threads. Forwarded queries
//! continue on the tokio runtime. TCP follows RFC 7766 (length-prefixed messages, several
//! per connection, idle timeout). Sockets are bound by [`bind`] before anything is torn
//! down, so a live rebind that fails leaves the old sockets serving. Every task and
//! thread stops when its cancellation token fires (a UDP thread is woken by
//! `shutdown(SHUT_RD)` on its socket).

use std::{
    io,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
};
use tokio_util::sync::CancellationToken;

use super::handler::{DnsHandler, Outcome, Transport};
use bootlane_core::net::mmsg::{self, RecvBatch};

/// Idle timeout of a TCP connection (RFC 7766 §6.2.3 recommends seconds, not minutes).
pub const TCP_IDLE: Duration = Duration::from_secs(10);
/// Most concurrent TCP connections.
pub const MAX_TCP_CONNS: usize = 512;
/// How long a UDP thread sleeps in `recvmmsg` before it looks at its cancellation token
/// again (a fallback: cancelling wakes it at once).
pub const UDP_WAKE: Duration = Duration::from_secs(1);
/// Receive buffer asked for each UDP socket, in bytes (the kernel doubles it for its own
/// bookkeeping). Linux's default (`net.core.rmem_default`, 208 KiB) holds about 900
/// queries: a burst from many resolvers at once overflows it and the kernel drops the
/// rest silently. Set with `SO_RCVBUFFORCE` when the process may (root or
/// `CAP_NET_ADMIN`), else with `SO_RCVBUF` (capped at `net.core.rmem_max`).
pub const UDP_RCVBUF: usize = 4 << 20;
/// Send buffer asked for each UDP socket, in bytes (same rules as [`UDP_RCVBUF`]): a full
/// send buffer drops a forwarded answer, which is sent without waiting.
pub const UDP_SNDBUF: usize = 1 << 20;

/// Sockets bound for one (listen list, port) setting.
pub struct Bound {
    udp: Vec<std::net::UdpSocket>,
    tcp: Vec<std::net::TcpListener>,
    /// The addresses actually bound (with the real port when 0 was asked).
    pub addrs: Vec<SocketAddr>,
}

fn socket(addr: SocketAddr, ty: Type, proto: Protocol) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), ty, Some(proto))?;
    if addr.is_ipv6() {
        // Bind IPv6 separately from IPv4 so "0.0.0.0" and "::" can both be listed.
        s.set_only_v6(true)?;
    }
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    if ty == Type::DGRAM {
        size_buffers(&s);
    }
    s.bind(&addr.into())?;
    Ok(s)
}

/// Sizes a UDP socket's buffers to [`UDP_RCVBUF`] and [`UDP_SNDBUF`]: forced past the
/// system's maximum when the process may, else as large as the maximum allows. Never
/// fails: a smaller buffer only means drops under bursts.
fn size_buffers(s: &Socket) {
    use nix::sys::socket::{setsockopt, sockopt};
    if setsockopt(s, sockopt::RcvBufForce, &UDP_RCVBUF).is_err() {
        let _ = s.set_recv_buffer_size(UDP_RCVBUF);
    }
    if setsockopt(s, sockopt::SndBufForce, &UDP_SNDBUF).is_err() {
        let _ = s.set_send_buffer_size(UDP_SNDBUF);
    }
}

/// Binds UDP (`workers` sockets per address) and TCP on every address of `listen` at
/// `port`. Port 0 picks one free port, shared by all addresses.
///
/// # Errors
/// The first bind error, with the address in the message (e.g. port already in use).
pub fn bind(listen: &[IpAddr], port: u16, workers: usize) -> io::Result<Bound> {
    let mut port = port;
    let mut out = Bound {
        udp: Vec::new(),
        tcp: Vec::new(),
        addrs: Vec::new(),
    };
    let ctx = |addr: SocketAddr, e: io::Error| io::Error::new(e.kind(), format!("cannot bind DNS socket {addr}: {e}"));
    for ip in listen {
        let addr = SocketAddr::new(*ip, port);
        let first = socket(addr, Type::DGRAM, Protocol::UDP).map_err(|e| ctx(addr, e))?;
        let local = first.local_addr()?.as_socket().unwrap_or(addr);
        port = local.port();
        let addr = SocketAddr::new(*ip, port);
        out.udp.push(first.into());
        for _ in 1..workers.max(1) {
            out.udp.push(
                socket(addr, Type::DGRAM, Protocol::UDP)
                    .map_err(|e| ctx(addr, e))?
                    .into(),
            );
        }
        let t = socket(addr, Type::STREAM, Protocol::TCP).map_err(|e| ctx(addr, e))?;
        t.listen(1024)?;
        out.tcp.push(t.into());
        out.addrs.push(addr);
    }
    Ok(out)
}

/// Starts a thread per UDP socket of `bound` and the TCP accept loops on the current
/// tokio runtime (which also runs forwarded queries).
///
/// # Errors
/// When a socket cannot be made blocking or registered with tokio, or a thread cannot
/// be started.
pub fn spawn(bound: Bound, handler: DnsHandler, token: CancellationToken) -> io::Result<()> {
    let rt = tokio::runtime::Handle::current();
    for s in bound.udp {
        s.set_nonblocking(false)?;
        s.set_read_timeout(Some(UDP_WAKE))?;
        let sock = Arc::new(s);
        let (h, t, r, sk) = (handler.clone(), token.clone(), rt.clone(), sock.clone());
        std::thread::Builder::new()
            .name("bootlane-dns-udp".into())
            .spawn(move || udp_thread(&sk, &h, &t, &r))?;
        // Wakes the thread when the token fires (Linux answers ENOTCONN for an unconnected
        // UDP socket and wakes its readers all the same); holding a clone keeps the
        // descriptor open (and its number not reused) until the shutdown is done.
        let t = token.clone();
        tokio::spawn(async move {
            t.cancelled().await;
            let _ = nix::sys::socket::shutdown(
                std::os::fd::AsRawFd::as_raw_fd(&*sock),
                nix::sys::socket::Shutdown::Read,
            );
        });
    }
    let conns = Arc::new(Semaphore::new(MAX_TCP_CONNS));
    for l in bound.tcp {
        let l = TcpListener::from_std(l)?;
        tokio::spawn(tcp_accept(l, handler.clone(), token.clone(), conns.clone()));
    }
    Ok(())
}

/// One UDP socket's thread: receive a batch, answer each query, send the answers in one
/// batch; forwarded queries are completed on the runtime `rt` and answered from there.
fn udp_thread(
    sock: &Arc<std::net::UdpSocket>,
    handler: &DnsHandler,
    token: &CancellationToken,
    rt: &tokio::runtime::Handle,
) {
    // The handler may spawn tasks (events, statistics): give it the runtime's context.
    let _rt = rt.enter();
    let mut batch = RecvBatch::new();
    let mut replies: Vec<(Vec<u8>, SocketAddr)> = Vec::with_capacity(mmsg::BATCH);
    while !token.is_cancelled() {
        let n = match batch.recv(sock) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => continue,
            Err(e) => {
                tracing::debug!("DNS UDP receive error: {e}");
                continue;
            }
        };
        if token.is_cancelled() {
            return;
        }
        replies.clear();
        for i in 0..n {
            let (query, peer) = batch.get(i);
            if peer.port() == 0 || batch.truncated(i) {
                // No way to answer, or longer than any DNS query has reason to be
                // (4096 bytes): counted as received and dropped.
                let m = &handler.shared.metrics;
                m.queries_udp.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                m.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                continue;
            }
            // Every UDP answer goes through response rate limiting (`[dns.rrl]`).
            match handler.handle(query, peer.ip(), Transport::Udp) {
                Outcome::Reply(out) => replies.extend(handler.limit_udp(peer.ip(), out).map(|o| (o, peer))),
                Outcome::Forward(job) => {
                    let (h, s) = (handler.clone(), sock.clone());
                    rt.spawn(async move {
                        if let Some(out) = h.complete(job).await.and_then(|o| h.limit_udp(peer.ip(), o)) {
                            let _ = mmsg::send_nowait(&s, &out, peer);
                        }
                    });
                }
                Outcome::Drop => {}
            }
        }
        mmsg::send_batch(sock, &replies);
    }
}

async fn tcp_accept(l: TcpListener, handler: DnsHandler, token: CancellationToken, conns: Arc<Semaphore>) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = token.cancelled() => return,
            r = l.accept() => match r { Ok(r) => r, Err(_) => continue },
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            continue;
        };
        let (h, t) = (handler.clone(), token.clone());
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                _ = t.cancelled() => {}
                _ = tcp_conn(stream, peer.ip(), h) => {}
            }
        });
    }
}

async fn tcp_conn(mut s: TcpStream, peer: IpAddr, handler: DnsHandler) {
    loop {
        let len = match tokio::time::timeout(TCP_IDLE, s.read_u16()).await {
            Ok(Ok(l)) => l as usize,
            _ => return,
        };
        let mut buf = vec![0u8; len];
        if tokio::time::timeout(TCP_IDLE, s.read_exact(&mut buf))
            .await
            .map_or(true, |r| r.is_err())
        {
            return;
        }
        let out = match handler.handle(&buf, peer, Transport::Tcp) {
            Outcome::Reply(o) => o,
            Outcome::Forward(job) => match handler.complete(job).await {
                Some(o) => o,
                None => continue,
            },
            Outcome::Drop => continue,
        };
        let mut framed = (out.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&out);
        if s.write_all(&framed).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_sockets_get_large_buffers() {
        let bound = bind(&["127.0.0.1".parse().unwrap()], 0, 2).unwrap();
        assert_eq!(bound.udp.len(), 2);
        for s in &bound.udp {
            let s = socket2::SockRef::from(s);
            let (rcv, snd) = (s.recv_buffer_size().unwrap(), s.send_buffer_size().unwrap());
            if nix::unistd::geteuid().is_root() {
                // Forced: the kernel reports twice the size asked.
                assert!(rcv >= UDP_RCVBUF, "receive buffer {rcv}");
                assert!(snd >= UDP_SNDBUF, "send buffer {snd}");
            } else {
                assert!(rcv > 0 && snd > 0);
            }
        }
    }
}
