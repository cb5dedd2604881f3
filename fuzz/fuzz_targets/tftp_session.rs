//! A TFTP read transfer driven by a hostile client. The input is a list of
//! length-prefixed client datagrams: the first must be an RRQ for the fixture file
//! (options as the fuzzer likes), each later one is sent to the transfer's port, an
//! empty one means "stay silent for a minute". Time is tokio's paused clock, so
//! timeouts cost nothing and runs are repeatable. Checked:
//! - every DATA block carries exactly the file's bytes for its number and blksize;
//! - an ACK that cannot advance the transfer (a duplicate, one for a block not yet
//!   sent, a stray one before the OACK is acknowledged) gets no packet at all: no
//!   Sorcerer's Apprentice retransmission (RFC 1350 is silent, RFC 1123 §4.2.3.1 names it);
//! - the transfer ends by itself once the client goes quiet, and ends `Complete` when
//!   the client acknowledged the last block.
#![no_main]

use std::{collections::BTreeSet, net::UdpSocket as StdSocket, sync::Arc, time::Duration};

use bootlane::tftp::{
    handler::{FsHandler, TftpHandler},
    packet::Packet,
    server::{send_file, FileCache, Outcome, TftpLimits},
};
use bootlane_fuzz::{tftp_byte, tftp_root, TFTP_FILE_SIZE};
use libfuzzer_sys::fuzz_target;
use tokio_util::sync::CancellationToken;

fn records(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let len = usize::from(len).min(rest.len());
        out.push(&rest[..len]);
        data = &rest[len..];
        if out.len() >= 64 {
            break;
        }
    }
    out
}

fn paused_runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("tokio runtime")
    })
}

/// Lets the server task run until it is waiting again, then reads every datagram it sent.
async fn drain(client: &StdSocket) -> Vec<Vec<u8>> {
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_micros(1)).await;
        tokio::task::yield_now().await;
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 70_000];
    while let Ok((n, _)) = client.recv_from(&mut buf) {
        out.push(buf[..n].to_vec());
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let recs = records(data);
    let Some(Ok(Packet::Request(req))) = recs.first().map(|r| Packet::parse(r)) else {
        return;
    };
    let client = StdSocket::bind("127.0.0.1:0").expect("client socket");
    client.set_nonblocking(true).expect("non-blocking");
    let peer = client.local_addr().expect("client address");
    let Ok(mut plan) = FsHandler::new(tftp_root().clone()).open_from(&req, peer) else {
        return;
    };
    if plan.size != TFTP_FILE_SIZE as u64 {
        return;
    }
    let file: Vec<u8> = (0..TFTP_FILE_SIZE).map(tftp_byte).collect();
    plan.content = Some(Arc::from(file.clone()));
    let blk = plan.opts.blksize;
    let last_block = (TFTP_FILE_SIZE / blk + 1) as u16;
    let oack_expected = !plan.opts.oack.is_empty();
    let limits = TftpLimits {
        timeout: Duration::from_secs(1),
        max_timeout: Duration::from_secs(4),
        retries: 3,
        max_transfers: 1,
        max_per_client: 1,
    };

    paused_runtime().block_on(async move {
        let server = tokio::net::UdpSocket::bind("127.0.0.1:0").await.expect("server socket");
        let server_addr = server.local_addr().expect("server address");
        let token = CancellationToken::new();
        let task = tokio::spawn(async move {
            let cache = FileCache::default();
            send_file(&server, peer, plan, &cache, limits, &token).await
        });
        // What the client has seen and what the server has acted on.
        let mut received: BTreeSet<u16> = BTreeSet::new();
        let mut oack_seen = false;
        let mut progress: Option<u16> = None; // highest ACK the server acted on
        let check = |pkts: &[Vec<u8>], received: &mut BTreeSet<u16>, oack_seen: &mut bool| {
            for p in pkts {
                match Packet::parse(p) {
                    Ok(Packet::Data(n, payload)) => {
                        assert!(n >= 1 && n <= last_block, "DATA {n} beyond the last block {last_block}");
                        let start = (usize::from(n) - 1) * blk;
                        let end = (start + blk).min(TFTP_FILE_SIZE);
                        assert_eq!(payload, file[start..end], "DATA {n} carries the file's bytes");
                        received.insert(n);
                    }
                    Ok(Packet::Oack(_)) => {
                        assert!(oack_expected, "an OACK without options to acknowledge");
                        *oack_seen = true;
                    }
                    Ok(Packet::Error(..)) => {}
                    other => panic!("the server sent {other:?}"),
                }
            }
        };
        let first = drain(&client).await;
        check(&first, &mut received, &mut oack_seen);
        let mut acked_last = false;
        for rec in &recs[1..] {
            if task.is_finished() {
                break;
            }
            if rec.is_empty() {
                tokio::time::sleep(Duration::from_secs(60)).await;
                let pkts = drain(&client).await;
                check(&pkts, &mut received, &mut oack_seen);
                continue;
            }
            let _ = client.send_to(rec, server_addr);
            // Whether this ACK lets the server move on.
            let advancing = match Packet::parse(rec) {
                Ok(Packet::Ack(0)) => oack_expected && oack_seen && progress.is_none() && received.is_empty(),
                Ok(Packet::Ack(n)) => received.contains(&n) && progress.is_none_or(|p| n > p),
                _ => false,
            };
            let is_ack = matches!(Packet::parse(rec), Ok(Packet::Ack(_)));
            let pkts = drain(&client).await;
            if is_ack && !advancing && !task.is_finished() {
                assert!(
                    pkts.is_empty(),
                    "ACK {rec:02x?} cannot advance the transfer (progress {progress:?}, received {:?}) but the server answered {} packet(s): {:02x?}",
                    received.last(),
                    pkts.len(),
                    pkts.first()
                );
            }
            if advancing {
                if let Ok(Packet::Ack(n)) = Packet::parse(rec) {
                    progress = Some(n);
                    acked_last |= n == last_block;
                }
            }
            check(&pkts, &mut received, &mut oack_seen);
        }
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(task.is_finished(), "the transfer outlived an hour of client silence");
        let outcome = task.await.expect("transfer task");
        if acked_last {
            assert!(matches!(outcome, Outcome::Complete), "last block acknowledged, outcome {outcome:?}");
        }
    });
});
