//! DHCPv6 message parsing and the handler: the first byte picks server or
//! information-only (proxy) mode, the rest is the datagram from a link-local client.
//! Whatever the handler answers must decode with dhcproto, carry the request's
//! transaction ID, and be a server message type (Advertise or Reply; RFC 8415 §7.3).
#![no_main]

use std::net::SocketAddrV6;

use bootlane::dhcp::v6::handler::RecvContext6;
use bootlane_fuzz::{dhcp6_handler, runtime, tolerate_dhcproto_asserts};
use dhcproto::{
    v6::{Message, MessageType},
    Decodable, Decoder,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tolerate_dhcproto_asserts();
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let ctx = RecvContext6 {
        interface: "lab0".into(),
        src: SocketAddrV6::new("fe80::5054:ff:fe12:3456".parse().expect("address"), 546, 0, 2),
    };
    let h = dhcp6_handler(sel & 1 != 0);
    let Some(out) = runtime().block_on(h.handle(bytes, &ctx)) else {
        return;
    };
    let m = std::panic::catch_unwind(|| Message::decode(&mut Decoder::new(&out)))
        .unwrap_or_else(|_| panic!("dhcproto panicked decoding our reply {out:02x?}"))
        .unwrap_or_else(|e| panic!("the reply does not decode: {e}\n{out:02x?}"));
    assert!(bytes.len() >= 4, "a reply to a message too short for a transaction ID");
    assert_eq!(out[1..4], bytes[1..4], "transaction ID echoed");
    assert!(
        matches!(m.msg_type(), MessageType::Advertise | MessageType::Reply),
        "server message type, got {:?}",
        m.msg_type()
    );
});
