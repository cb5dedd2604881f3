//! Frame and query builders for the XDP tests and the `xdp` fuzz target: raw DNS queries (exact case, EDNS with
//! DO/version/cookie), Ethernet frames with an optional 802.1Q tag around IPv4 or IPv6
//! UDP, and a parser for the program's output that checks the IPv4 header checksum and
//! the UDP checksum (RFC 1071/768/8200) before handing back the DNS payload.

use std::net::IpAddr;

use bootlane::dataplane::{xdp::XdpTable, Projection};
use bootlane_common::dns::{DnsAnswer, DnsKey, MAX_ADDRS, MAX_QNAME_LEN};

/// MAC of the crafted client.
pub const CLIENT_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// MAC of the crafted server.
pub const SERVER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

/// EDNS options of a crafted query.
#[derive(Clone, Copy, Debug)]
pub struct Edns {
    /// DO bit.
    pub dnssec_ok: bool,
    /// EDNS version (0 is the only one we answer).
    pub version: u8,
    /// Add an 8-byte client COOKIE option (RFC 7873).
    pub cookie: bool,
    /// Advertised UDP size.
    pub udp: u16,
}

/// A DNS query in wire format, the name written exactly as given (case preserved).
pub fn query(id: u16, name: &str, qtype: u16, rd: bool, edns: Option<Edns>) -> Vec<u8> {
    let mut q = Vec::new();
    q.extend(id.to_be_bytes());
    q.extend([if rd { 0x01 } else { 0x00 }, 0x00]);
    q.extend([0, 1, 0, 0, 0, 0, 0, u8::from(edns.is_some())]);
    for label in name.trim_end_matches('.').split('.').filter(|l| !l.is_empty()) {
        q.push(label.len() as u8);
        q.extend(label.as_bytes());
    }
    q.push(0);
    q.extend(qtype.to_be_bytes());
    q.extend(1u16.to_be_bytes());
    if let Some(e) = edns {
        q.push(0);
        q.extend(41u16.to_be_bytes());
        q.extend(e.udp.to_be_bytes());
        q.extend([0, e.version, if e.dnssec_ok { 0x80 } else { 0 }, 0]);
        if e.cookie {
            q.extend(12u16.to_be_bytes());
            q.extend(10u16.to_be_bytes());
            q.extend(8u16.to_be_bytes());
            q.extend([1, 2, 3, 4, 5, 6, 7, 8]);
        } else {
            q.extend([0, 0]);
        }
    }
    q
}

/// One's-complement sum of `b` (odd length padded with zero).
pub fn sum(mut acc: u32, b: &[u8]) -> u32 {
    for c in b.chunks(2) {
        acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    acc
}

/// Folds and complements.
pub fn finish(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn ip_bytes(a: IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

/// UDP checksum of `udp` (header with checksum field included) between `src` and `dst`.
pub fn udp_sum(src: IpAddr, dst: IpAddr, udp: &[u8]) -> u32 {
    let mut s = sum(0, &ip_bytes(src));
    s = sum(s, &ip_bytes(dst));
    s += 17 + udp.len() as u32;
    sum(s, udp)
}

/// An Ethernet frame (client → server) carrying `payload` over UDP.
pub fn frame(vlan: Option<u16>, src: IpAddr, dst: IpAddr, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(SERVER_MAC);
    f.extend(CLIENT_MAC);
    if let Some(tci) = vlan {
        f.extend(0x8100u16.to_be_bytes());
        f.extend(tci.to_be_bytes());
    }
    let mut udp = Vec::new();
    udp.extend(40000u16.to_be_bytes());
    udp.extend(dport.to_be_bytes());
    udp.extend(((8 + payload.len()) as u16).to_be_bytes());
    udp.extend([0, 0]);
    udp.extend(payload);
    let c = finish(udp_sum(src, dst, &udp));
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f.extend(0x0800u16.to_be_bytes());
            let mut ip = vec![0x45, 0];
            ip.extend(((20 + udp.len()) as u16).to_be_bytes());
            ip.extend([0x12, 0x34, 0x40, 0, 64, 17, 0, 0]);
            ip.extend(s.octets());
            ip.extend(d.octets());
            let c = finish(sum(0, &ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            f.extend(ip);
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            f.extend(0x86ddu16.to_be_bytes());
            f.extend([0x60, 0, 0, 0]);
            f.extend((udp.len() as u16).to_be_bytes());
            f.extend([17, 64]);
            f.extend(s.octets());
            f.extend(d.octets());
        }
        _ => panic!("mixed address families"),
    }
    f.extend(udp);
    f
}

/// What the program sent back.
#[derive(Debug)]
pub struct Reply {
    /// Source address of the answer.
    pub src: IpAddr,
    /// Destination address of the answer.
    pub dst: IpAddr,
    /// UDP source port.
    pub sport: u16,
    /// UDP destination port.
    pub dport: u16,
    /// 802.1Q TCI, if tagged.
    pub vlan: Option<u16>,
    /// The DNS message.
    pub dns: Vec<u8>,
}

/// Parses an answer frame, asserting MACs swapped, lengths consistent, IPv4 header
/// checksum and UDP checksum valid.
pub fn parse(f: &[u8]) -> Reply {
    assert_eq!(&f[0..6], &CLIENT_MAC, "destination MAC is the client's");
    assert_eq!(&f[6..12], &SERVER_MAC, "source MAC is the server's");
    parse_any(f)
}

/// [`parse`] without the MAC checks (frames whose MACs the caller chose).
pub fn parse_any(f: &[u8]) -> Reply {
    let mut off = 12;
    let mut vlan = None;
    if f[off..off + 2] == [0x81, 0x00] {
        vlan = Some(u16::from_be_bytes([f[off + 2], f[off + 3]]));
        off += 4;
    }
    let et = u16::from_be_bytes([f[off], f[off + 1]]);
    off += 2;
    let (src, dst, udp_off, ip_udp_len) = match et {
        0x0800 => {
            let ip = &f[off..off + 20];
            assert_eq!(finish(sum(0, ip)), 0, "IPv4 header checksum");
            let tot = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            assert_eq!(off + tot, f.len(), "IPv4 total length matches the frame");
            let s: [u8; 4] = ip[12..16].try_into().unwrap();
            let d: [u8; 4] = ip[16..20].try_into().unwrap();
            (IpAddr::from(s), IpAddr::from(d), off + 20, tot - 20)
        }
        0x86dd => {
            let ip = &f[off..off + 40];
            let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
            assert_eq!(off + 40 + plen, f.len(), "IPv6 payload length matches the frame");
            let s: [u8; 16] = ip[8..24].try_into().unwrap();
            let d: [u8; 16] = ip[24..40].try_into().unwrap();
            (IpAddr::from(s), IpAddr::from(d), off + 40, plen)
        }
        _ => panic!("unexpected ethertype {et:#x}"),
    };
    let udp = &f[udp_off..];
    assert_eq!(u16::from_be_bytes([udp[4], udp[5]]) as usize, ip_udp_len, "UDP length");
    assert_ne!(u16::from_be_bytes([udp[6], udp[7]]), 0, "UDP checksum present");
    assert_eq!(finish(udp_sum(src, dst, udp)), 0, "UDP checksum valid");
    Reply {
        src,
        dst,
        sport: u16::from_be_bytes([udp[0], udp[1]]),
        dport: u16::from_be_bytes([udp[2], udp[3]]),
        vlan,
        dns: udp[8..].to_vec(),
    }
}

/// A map key for `name` (dotted, any case) in `scope`.
pub fn key(name: &str, qtype: u16, scope: u32) -> DnsKey {
    let mut qname = [0u8; MAX_QNAME_LEN];
    let mut i = 0;
    for l in name.trim_end_matches('.').split('.') {
        qname[i] = l.len() as u8;
        qname[i + 1..i + 1 + l.len()].copy_from_slice(l.to_ascii_lowercase().as_bytes());
        i += 1 + l.len();
    }
    DnsKey {
        scope,
        qtype,
        qname_len: (i + 1) as u16,
        qname,
    }
}

/// An RRset value.
pub fn answer(ttl: u32, addrs: &[IpAddr]) -> DnsAnswer {
    let mut a = DnsAnswer {
        ttl,
        count: addrs.len() as u32,
        addrs: [[0; 16]; MAX_ADDRS],
    };
    for (slot, ip) in a.addrs.iter_mut().zip(addrs) {
        match ip {
            IpAddr::V4(x) => slot[..4].copy_from_slice(&x.octets()),
            IpAddr::V6(x) => *slot = x.octets(),
        }
    }
    a
}

/// Panics unless we run as root (the XDP tests need BPF_PROG_LOAD).
pub fn require_root() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "XDP tests need root: run `cargo xtask test`"
    );
}

/// Loads the program detached and applies `p`.
pub fn loaded(p: &Projection) -> XdpTable {
    require_root();
    let t = XdpTable::detached(bootlane_common::dns::DNS_MAP_CAPACITY).expect("load XDP program");
    bootlane::dataplane::DnsTable::apply(&t, p).expect("apply projection");
    t
}
