//! TFTP packet parsing, option negotiation and file resolution: any datagram is parsed;
//! an RRQ is negotiated (RFC 2347/2348/2349/7440 bounds, one OACK entry per option, the
//! OACK saying exactly what will be used) and resolved in a boot root holding symlinks
//! that point out of it, which must never be served (a served path is a regular file
//! under the root, reached without leaving it). Every parsed packet re-encodes to a
//! packet that parses to the same value.
#![no_main]

use std::{
    collections::HashSet,
    net::{Ipv4Addr, SocketAddr},
};

use bootlane::tftp::{
    handler::{negotiate, FsHandler, TftpHandler, MAX_BLKSIZE, MAX_WINDOW, MAX_WINDOW_BYTES},
    packet::{self, Packet},
};
use bootlane_fuzz::tftp_root;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Packet::parse(data) else {
        return;
    };
    let again = match &p {
        Packet::Request(r) if !r.write => {
            let opts: Vec<(&str, &str)> = r.options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            packet::rrq(&r.filename, &r.mode, &opts)
        }
        Packet::Request(_) => return,
        Packet::Data(n, b) => packet::data(*n, b),
        Packet::Ack(n) => packet::ack(*n),
        Packet::Error(c, m) => packet::error(*c, m),
        Packet::Oack(o) => packet::oack(o),
    };
    assert_eq!(Packet::parse(&again).as_ref(), Ok(&p), "re-encoded packet parses back");

    let Packet::Request(req) = p else {
        return;
    };
    let n = negotiate(&req, 3_300);
    assert!((8..=MAX_BLKSIZE).contains(&n.blksize), "blksize {}", n.blksize);
    assert!((1..=MAX_WINDOW).contains(&n.windowsize), "windowsize {}", n.windowsize);
    assert!(
        n.windowsize == 1 || n.blksize * usize::from(n.windowsize) <= MAX_WINDOW_BYTES,
        "window of {} x {} bytes",
        n.windowsize,
        n.blksize
    );
    let mut seen = HashSet::new();
    for (k, v) in &n.oack {
        assert!(seen.insert(k.as_str()), "option {k} twice in the OACK {:?}", n.oack);
        match k.as_str() {
            "blksize" => assert_eq!(v, &n.blksize.to_string(), "OACK blksize is the one used"),
            "windowsize" => assert_eq!(v, &n.windowsize.to_string(), "OACK windowsize is the one used"),
            "tsize" => assert_eq!(v, "3300"),
            _ => {}
        }
    }

    let root = tftp_root();
    let peer = SocketAddr::from((Ipv4Addr::new(10, 77, 0, 2), 2000));
    if let Ok(plan) = FsHandler::new(root.clone()).open_from(&req, peer) {
        assert!(plan.content.is_none(), "no generated files in this fixture");
        let real = plan.path.canonicalize().expect("a served path exists");
        assert!(
            real.starts_with(root),
            "{:?} served from outside the root ({real:?})",
            req.filename
        );
        assert_eq!(real, plan.path, "served path reached through a symlink");
    }
});
