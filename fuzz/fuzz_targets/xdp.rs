//! The XDP program through `BPF_PROG_TEST_RUN` (needs root and the program built
//! into the binary). The first byte picks the mode:
//! - even: a well-formed Ethernet/IP/UDP frame (optional 802.1Q tag, IPv4 or IPv6, a
//!   client and server from the fixture) around the fuzzer's bytes as the DNS query;
//! - odd: the fuzzer's bytes are the whole frame.
//!
//! The verdict must be DROP, PASS or TX, never ABORTED. A TX frame must have the MACs,
//! addresses and ports swapped, consistent lengths and valid checksums, and its DNS
//! message must equal byte for byte what userspace (`DnsHandler`) answers for the same
//! query from the same client; a frame the kernel would not deliver to a UDP socket
//! (a fragment, IPv4 options, inconsistent lengths, another port) must never be answered.
#![no_main]

use std::{net::IpAddr, sync::OnceLock};

use bootlane::{
    dataplane::{xdp::XdpTable, DnsTable},
    dns::handler::{Outcome, Transport},
};
use bootlane_fuzz::{client_server, dns_handler, projection};
use bootlane_tests::xdp_frames::{frame, parse_any};
use libfuzzer_sys::fuzz_target;

fn table() -> &'static XdpTable {
    static T: OnceLock<XdpTable> = OnceLock::new();
    T.get_or_init(|| {
        let t = XdpTable::detached(bootlane_common::dns::DNS_MAP_CAPACITY)
            .expect("load the XDP program (root, and a binary built with the eBPF object)");
        t.apply(&projection()).expect("apply the projection");
        t
    })
}

/// A datagram as a socket on port 53 receives it.
struct Delivered<'a> {
    client: IpAddr,
    server: IpAddr,
    vlan: Option<u16>,
    sport: u16,
    query: &'a [u8],
}

/// What a UDP socket bound to port 53 would receive from `f`: the client and server
/// addresses, the 802.1Q tag, the client's port and the DNS payload. `None` for anything the kernel would not deliver as
/// one datagram to port 53 (UDP checksums are not checked here).
fn delivered(f: &[u8]) -> Option<Delivered<'_>> {
    let mut off = 12;
    let mut vlan = None;
    if f.get(off..off + 2)? == [0x81, 0x00] {
        vlan = Some(u16::from_be_bytes([*f.get(off + 2)?, *f.get(off + 3)?]));
        off += 4;
    }
    let et = u16::from_be_bytes([*f.get(off)?, *f.get(off + 1)?]);
    off += 2;
    let (src, dst, udp) = match et {
        0x0800 => {
            let ip = f.get(off..off + 20)?;
            let tot = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
            if ip[0] != 0x45 || frag != 0 || ip[9] != 17 || tot < 28 {
                return None;
            }
            let s: [u8; 4] = ip[12..16].try_into().ok()?;
            let d: [u8; 4] = ip[16..20].try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), f.get(off + 20..off + tot)?)
        }
        0x86dd => {
            let ip = f.get(off..off + 40)?;
            let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            if ip[0] >> 4 != 6 || ip[6] != 17 {
                return None;
            }
            let s: [u8; 16] = ip[8..24].try_into().ok()?;
            let d: [u8; 16] = ip[24..40].try_into().ok()?;
            (IpAddr::from(s), IpAddr::from(d), f.get(off + 40..off + 40 + plen)?)
        }
        _ => return None,
    };
    // Linux takes the UDP length as the datagram's and trims IP padding after it
    // (`__udp4_lib_rcv`, `__udp6_lib_rcv`); a UDP length past the IP payload is dropped.
    let ulen = usize::from(u16::from_be_bytes([*udp.get(4)?, *udp.get(5)?]));
    if u16::from_be_bytes([udp[2], udp[3]]) != 53 || ulen > udp.len() || ulen < 8 {
        return None;
    }
    let udp = &udp[..ulen];
    Some(Delivered {
        client: src,
        server: dst,
        vlan,
        sport: u16::from_be_bytes([udp[0], udp[1]]),
        query: &udp[8..],
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = if mode & 1 == 0 {
        let Some((&sel, payload)) = rest.split_first() else {
            return;
        };
        let (c, s) = client_server(sel);
        frame((sel & 0x40 != 0).then_some(100), c, s, 53, payload)
    } else {
        rest.to_vec()
    };
    // Frames larger than a page are refused by BPF_PROG_TEST_RUN itself.
    let Ok((action, out)) = table().test_run(&f) else {
        return;
    };
    match action {
        1 | 2 => return, // XDP_DROP, XDP_PASS
        3 => {}          // XDP_TX
        other => panic!("XDP action {other} (0 is XDP_ABORTED) for {f:02x?}"),
    }
    let Some(Delivered {
        client,
        server,
        vlan,
        sport,
        query,
    }) = delivered(&f)
    else {
        panic!("answered a frame no UDP socket on port 53 would receive: {f:02x?}");
    };
    assert_eq!(out[0..6], f[6..12], "destination MAC is the sender's");
    assert_eq!(out[6..12], f[0..6], "source MAC is the one the query was sent to");
    let r = parse_any(&out);
    assert_eq!(
        (r.src, r.dst, r.sport, r.dport, r.vlan),
        (server, client, 53, sport, vlan),
        "addresses, ports, tag swapped"
    );
    let Outcome::Reply(want) = dns_handler().handle(query, client, Transport::Udp) else {
        panic!("XDP answered a query userspace does not answer directly: {query:02x?}");
    };
    assert_eq!(
        r.dns, want,
        "XDP and userspace answers differ for {query:02x?} from {client}"
    );
});
