//! DHCPv4 packet parsing and the handler: the first byte picks server or proxyDHCP
//! mode, port 67 or 4011, and a direct or relayed source; the rest is the datagram.
//! Whatever the handler answers must encode, decode back with dhcproto, be a BOOTREPLY
//! for the same `xid` and `chaddr`, and offer only addresses of a configured pool or
//! the client's own reservation (RFC 2131 §4.3).
#![no_main]

use std::net::{Ipv4Addr, SocketAddrV4};

use bootlane::dhcp::{
    handler::{DhcpHandler, RecvContext},
    packet::{encode, DhcpRequest},
};
use bootlane_fuzz::{dhcp4_handler, runtime, tolerate_dhcproto_asserts};
use dhcproto::{
    v4::{Message, Opcode},
    Decodable, Decoder,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tolerate_dhcproto_asserts();
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let Ok(req) = DhcpRequest::parse(bytes) else {
        return;
    };
    let (xid, chaddr, mac) = (req.msg.xid(), req.msg.chaddr().to_vec(), req.mac);
    let ctx = RecvContext {
        interface: "eth0".into(),
        port: if sel & 2 != 0 { 4011 } else { 67 },
        src: if sel & 4 != 0 {
            SocketAddrV4::new(Ipv4Addr::new(10, 88, 0, 1), 67)
        } else {
            SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 68)
        },
    };
    let h = dhcp4_handler(sel & 1 != 0);
    let reply = runtime().block_on(async {
        let r = h.handle(req, ctx).await;
        assert_eq!(
            h.commit().await,
            bootlane::dhcp::handler::Committed::All,
            "an in-memory commit cannot fail"
        );
        r
    });
    let Some(reply) = reply else {
        return;
    };
    let wire = encode(&reply.msg).unwrap_or_else(|e| panic!("the reply does not encode: {e}"));
    let back = Message::decode(&mut Decoder::new(&wire)).unwrap_or_else(|e| panic!("the reply does not decode: {e}"));
    assert_eq!(back.opcode(), Opcode::BootReply);
    assert_eq!(back.xid(), xid, "xid echoed");
    assert_eq!(back.chaddr(), &chaddr[..], "chaddr echoed");
    let yi = back.yiaddr();
    if !yi.is_unspecified() {
        let subnets = h.subnets();
        assert!(
            subnets.iter().any(|s| s.in_pool(yi) || s.reserved_ip(mac) == Some(yi)),
            "yiaddr {yi} is in no pool and not {mac}'s reservation"
        );
    }
});
