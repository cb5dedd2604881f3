//! Batched UDP I/O on a blocking [`UdpSocket`]: `recvmmsg(2)` and `sendmmsg(2)` (through
//! the `nix` crate) move up to [`BATCH`] datagrams per system call, where
//! `recv_from`/`send_to` move one. Used by the userspace DNS server's UDP threads, whose
//! queries and answers are small and arrive in bursts under load: a receive sleeps in the
//! kernel until the first datagram (`MSG_WAITFORONE`) and then takes whatever else is
//! queued, so at low load a batch is one datagram and costs what a `recv_from` costs, and no
//! event loop sits between the socket and the thread.

use std::{
    io::{self, IoSlice, IoSliceMut},
    net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket},
    os::fd::AsRawFd,
};

use nix::sys::socket::{recvmmsg, sendmmsg, sendto, ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage};

/// Most datagrams moved by one `recvmmsg`/`sendmmsg` call.
pub const BATCH: usize = 32;

/// Receive buffer per datagram, bytes. A DNS query is far smaller (a 255-byte name, an
/// OPT record, perhaps a cookie or TSIG); a datagram longer than this is reported as
/// truncated by [`RecvBatch::truncated`] and its bytes must not be trusted as a message.
pub const MAX_DATAGRAM: usize = 4096;

/// Buffers for one batch of received datagrams, reused across calls.
pub struct RecvBatch {
    bufs: Vec<Box<[u8; MAX_DATAGRAM]>>,
    lens: Vec<usize>,
    peers: Vec<SocketAddr>,
    truncated: Vec<bool>,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    /// Buffers for [`BATCH`] datagrams of up to [`MAX_DATAGRAM`] bytes (128 KiB).
    pub fn new() -> Self {
        Self {
            bufs: (0..BATCH).map(|_| Box::new([0u8; MAX_DATAGRAM])).collect(),
            lens: Vec::with_capacity(BATCH),
            peers: Vec::with_capacity(BATCH),
            truncated: Vec::with_capacity(BATCH),
        }
    }

    /// Receives up to [`BATCH`] datagrams from `sock` in one `recvmmsg` call: a blocking
    /// socket sleeps until the first one arrives (at most its `SO_RCVTIMEO`), then the call
    /// takes every datagram already queued without waiting more (`MSG_WAITFORONE`).
    /// Returns how many were received; read them with [`RecvBatch::get`]. 0 after
    /// `shutdown(SHUT_RD)` (how a receiving thread is woken to stop).
    ///
    /// # Errors
    /// `WouldBlock` when the timeout passed with nothing received (or a non-blocking
    /// socket had nothing); the socket's error (e.g. `ECONNREFUSED` after an ICMP error).
    /// The caller keeps receiving.
    pub fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let Self {
            bufs,
            lens,
            peers,
            truncated,
        } = self;
        lens.clear();
        peers.clear();
        truncated.clear();
        let mut iovs: Vec<[IoSliceMut<'_>; 1]> = bufs.iter_mut().map(|b| [IoSliceMut::new(&mut b[..])]).collect();
        let mut hdrs = MultiHeaders::<SockaddrStorage>::preallocate(iovs.len(), None);
        let got = recvmmsg(
            sock.as_raw_fd(),
            &mut hdrs,
            iovs.iter_mut(),
            MsgFlags::MSG_WAITFORONE,
            None,
        )?;
        for m in got {
            // A datagram without a usable source address cannot be answered; keep the
            // slot so indexes stay aligned, with an unspecified peer the caller drops.
            let peer = m
                .address
                .as_ref()
                .and_then(std_addr)
                .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
            lens.push(m.bytes);
            peers.push(peer);
            truncated.push(m.flags.contains(MsgFlags::MSG_TRUNC));
        }
        Ok(lens.len())
    }

    /// The `i`th datagram of the last [`RecvBatch::recv`]: its bytes and its source
    /// (port 0 when the kernel gave no usable address). Panics when `i` is not below the
    /// count `recv` returned.
    pub fn get(&self, i: usize) -> (&[u8], SocketAddr) {
        (&self.bufs[i][..self.lens[i].min(MAX_DATAGRAM)], self.peers[i])
    }

    /// True when the `i`th datagram was longer than [`MAX_DATAGRAM`] and was cut.
    pub fn truncated(&self, i: usize) -> bool {
        self.truncated[i]
    }
}

fn std_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddrV4::from(*v4).into());
    }
    a.as_sockaddr_in6().map(|v6| SocketAddrV6::from(*v6).into())
}

/// Sends every `(datagram, destination)` of `out` with as few `sendmmsg` calls as the
/// socket allows (a blocking socket waits while its send buffer is full). A datagram the
/// kernel refuses (e.g. `EHOSTUNREACH`, `EPERM` from a firewall) is skipped and the rest
/// are still sent, as a lost UDP answer would be; returns how many were refused.
pub fn send_batch(sock: &UdpSocket, out: &[(Vec<u8>, SocketAddr)]) -> usize {
    let (mut sent, mut refused) = (0, 0);
    while sent < out.len() {
        match send_now(sock, &out[sent..]) {
            Ok(n) => sent += n.max(1),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) => {
                tracing::debug!("UDP send to {} failed: {e}", out[sent].1);
                sent += 1;
                refused += 1;
            }
        }
    }
    refused
}

fn send_now(sock: &UdpSocket, out: &[(Vec<u8>, SocketAddr)]) -> io::Result<usize> {
    let out = &out[..out.len().min(BATCH)];
    let slices: Vec<[IoSlice<'_>; 1]> = out.iter().map(|(b, _)| [IoSlice::new(b)]).collect();
    let addrs: Vec<Option<SockaddrStorage>> = out.iter().map(|(_, a)| Some(SockaddrStorage::from(*a))).collect();
    let mut hdrs = MultiHeaders::<SockaddrStorage>::preallocate(out.len(), None);
    let none: [ControlMessage<'_>; 0] = [];
    let done = sendmmsg(sock.as_raw_fd(), &mut hdrs, &slices, &addrs, none, MsgFlags::empty())?;
    Ok(done.count())
}

/// Sends one datagram without ever waiting (`MSG_DONTWAIT`), from async code holding a
/// blocking socket: a full send buffer drops it, as UDP may.
///
/// # Errors
/// The kernel's refusal, `WouldBlock` included.
pub fn send_nowait(sock: &UdpSocket, buf: &[u8], to: SocketAddr) -> io::Result<usize> {
    Ok(sendto(
        sock.as_raw_fd(),
        buf,
        &SockaddrStorage::from(to),
        MsgFlags::MSG_DONTWAIT,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound() -> UdpSocket {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        s
    }

    /// A burst of datagrams from two peers is received in one batch with the right
    /// sources, and a batch of answers reaches each peer in order.
    #[test]
    fn a_burst_is_received_and_answered_in_batches() {
        let server = bound();
        let to = server.local_addr().unwrap();
        let a = bound();
        let b = bound();
        for i in 0..10u8 {
            a.send_to(&[b'a', i], to).unwrap();
            b.send_to(&[b'b', i], to).unwrap();
        }
        let mut batch = RecvBatch::new();
        let mut seen = Vec::new();
        while seen.len() < 20 {
            let n = batch.recv(&server).unwrap();
            assert!(n >= 1);
            for i in 0..n {
                let (bytes, peer) = batch.get(i);
                assert!(!batch.truncated(i));
                let want = if bytes[0] == b'a' {
                    a.local_addr().unwrap()
                } else {
                    b.local_addr().unwrap()
                };
                assert_eq!(peer, want);
                seen.push((bytes.to_vec(), peer));
            }
        }
        let out: Vec<(Vec<u8>, SocketAddr)> = seen.iter().map(|(m, p)| ([m.as_slice(), b"!"].concat(), *p)).collect();
        assert_eq!(send_batch(&server, &out), 0);
        let mut buf = [0u8; 8];
        for i in 0..10u8 {
            let n = a.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[b'a', i, b'!']);
            let n = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[b'b', i, b'!']);
        }
    }

    /// A datagram longer than the buffer is flagged, not passed off as whole.
    #[test]
    fn an_oversized_datagram_is_flagged_truncated() {
        let server = bound();
        let c = bound();
        c.send_to(&vec![7u8; MAX_DATAGRAM + 100], server.local_addr().unwrap())
            .unwrap();
        let mut batch = RecvBatch::new();
        assert_eq!(batch.recv(&server).unwrap(), 1);
        assert!(batch.truncated(0));
        assert_eq!(batch.get(0).0.len(), MAX_DATAGRAM);
    }

    /// A refused destination is skipped and the datagrams after it still go out.
    #[test]
    fn a_refused_datagram_does_not_stop_the_batch() {
        let server = bound();
        let c = bound();
        let bad: SocketAddr = "[::1]:53".parse().unwrap(); // an IPv6 peer on an IPv4 socket: EAFNOSUPPORT
        let out = vec![(b"x".to_vec(), bad), (b"y".to_vec(), c.local_addr().unwrap())];
        assert_eq!(send_batch(&server, &out), 1);
        let mut buf = [0u8; 4];
        let n = c.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"y");
    }

    /// A thread asleep in [`RecvBatch::recv`] wakes at once on `shutdown(SHUT_RD)` (how
    /// the DNS server stops its UDP threads), long before its receive timeout.
    #[test]
    fn shutdown_wakes_a_blocked_receive() {
        let server = std::sync::Arc::new(bound());
        let s = server.clone();
        let t0 = std::time::Instant::now();
        let waiter = std::thread::spawn(move || RecvBatch::new().recv(&s).map_err(|e| e.kind()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Linux answers ENOTCONN for an unconnected UDP socket, and wakes its readers all
        // the same (inet_shutdown).
        let _ = nix::sys::socket::shutdown(server.as_raw_fd(), nix::sys::socket::Shutdown::Read);
        let got = waiter.join().unwrap();
        assert!(t0.elapsed() < std::time::Duration::from_secs(4), "woken, not timed out");
        assert_ne!(got, Err(io::ErrorKind::WouldBlock), "{got:?}");
    }
}
