//! The whole DNS request handler, bytes in, reply out: the first byte picks the client
//! address and the transport (UDP or TCP), the rest is the query. A reply must parse
//! as a DNS message, echo the query's ID with QR set, and over UDP fit the size the
//! client may receive (512 bytes, or its EDNS size; RFC 1035 §4.2.1, RFC 6891 §6.2.5).
#![no_main]

use bootlane::dns::handler::{Outcome, Transport};
use bootlane_fuzz::{client_server, dns_handler};
use hickory_proto::op::Message;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, query)) = data.split_first() else {
        return;
    };
    let (client, _) = client_server(sel);
    let transport = if sel & 0x80 != 0 {
        Transport::Tcp
    } else {
        Transport::Udp
    };
    let out = match dns_handler().handle(query, client, transport) {
        Outcome::Reply(out) => out,
        // No upstream is configured: nothing may be forwarded.
        Outcome::Forward(_) => panic!("forwarded without an upstream"),
        Outcome::Drop => return,
    };
    if let Err(e) = Message::from_vec(&out) {
        panic!("the reply does not parse: {e}\n{out:02x?}");
    }
    assert!(query.len() >= 2, "a reply to a query too short to carry an ID");
    assert_eq!(out[..2], query[..2], "reply ID");
    assert!(out[2] & 0x80 != 0, "QR set in the reply");
    // The size check needs the query's EDNS size, so it applies to queries hickory reads.
    if let (Transport::Udp, Ok(q)) = (transport, Message::from_vec(query)) {
        let limit = q.max_payload();
        assert!(
            out.len() <= usize::from(limit),
            "UDP reply of {} bytes over the client's limit {limit}",
            out.len()
        );
    }
});
