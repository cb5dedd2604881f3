//! ICMP echo on the wire through the `surge-ping` crate (RFC 792 echo / echo reply,
//! RFC 4443 §4 for IPv6): one client socket per run, a random identifier, 56 bytes of
//! payload as `ping` sends, one [`PingReply`] per sequence number. A reply that is an ICMP
//! error from a router (destination unreachable, ...) is an `error` line naming the router.

use std::time::{Duration, Instant};

use surge_ping::{Client, Config, IcmpPacket, PingIdentifier, PingSequence, SurgeError, ICMP};
use tokio::sync::mpsc;

use super::{socket_error, PingPlan, PingReply};

/// Payload size of each echo request in bytes (`ping`'s default: 64-byte ICMP messages).
pub const PAYLOAD_BYTES: usize = 56;

/// Sends `plan.count` echo requests `plan.interval` apart and reports each outcome.
///
/// # Errors
/// The socket could not be opened (typically: no `CAP_NET_RAW`); no line was sent.
pub async fn run(plan: PingPlan, tx: mpsc::Sender<PingReply>) -> Result<(), String> {
    let config = match plan.address {
        std::net::IpAddr::V4(_) => Config::default(),
        std::net::IpAddr::V6(_) => Config::builder().kind(ICMP::V6).build(),
    };
    let client = Client::new(&config).map_err(|e| socket_error(&e))?;
    let mut pinger = client.pinger(plan.address, PingIdentifier(rand::random())).await;
    pinger.timeout(plan.timeout);
    let payload = [0u8; PAYLOAD_BYTES];
    for seq in 0..plan.count {
        let started = Instant::now();
        let line = match pinger.ping(PingSequence(seq as u16), &payload).await {
            Ok((packet, rtt)) => reply_line(seq, &packet, rtt),
            Err(SurgeError::Timeout { .. }) => PingReply {
                seq,
                status: "timeout".into(),
                from: None,
                bytes: None,
                ttl: None,
                rtt_ms: None,
                error: None,
            },
            Err(e) => PingReply {
                seq,
                status: "error".into(),
                from: None,
                bytes: None,
                ttl: None,
                rtt_ms: None,
                error: Some(e.to_string()),
            },
        };
        if tx.send(line).await.is_err() {
            return Ok(()); // the client went away
        }
        if seq + 1 < plan.count {
            tokio::time::sleep(plan.interval.saturating_sub(started.elapsed())).await;
        }
    }
    Ok(())
}

fn reply_line(seq: u32, packet: &IcmpPacket, rtt: Duration) -> PingReply {
    let (from, bytes, ttl, echo_reply, kind) = match packet {
        IcmpPacket::V4(p) => {
            let t = p.get_icmp_type().0;
            (p.get_source().to_string(), p.get_size(), p.get_ttl(), t == 0, t)
        }
        IcmpPacket::V6(p) => {
            let t = p.get_icmpv6_type().0;
            (
                p.get_source().to_string(),
                p.get_size(),
                Some(p.get_max_hop_limit()),
                t == 129,
                t,
            )
        }
    };
    PingReply {
        seq,
        status: if echo_reply { "reply" } else { "error" }.into(),
        error: (!echo_reply).then(|| format!("ICMP type {kind} from {from} instead of an echo reply")),
        from: Some(from),
        bytes: Some(bytes),
        ttl,
        rtt_ms: Some(rtt.as_secs_f64() * 1000.0),
    }
}
