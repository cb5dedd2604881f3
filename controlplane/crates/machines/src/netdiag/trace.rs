//! Traceroute on the wire through the `trippy-core` crate: ICMP echo probes with TTLs
//! 1..=`max_hops` (RFC 792 time exceeded from each router, an echo reply from the target;
//! RFC 4443 for IPv6), `queries` rounds. Like `mtr` and `trippy`, each round probes every
//! TTL at once, so the hops of a round settle together: hop lines are sent in TTL order as
//! soon as the first round ends (at most `timeout` after the start, sooner when the target
//! answers), and the closing [`TraceEvent::Done`] carries every hop's statistics over all
//! rounds. The tracer runs on its own thread (trippy's blocking loop) and cannot be
//! cancelled; it is bounded by `queries` × `timeout` (at most 15 s).

use std::{net::IpAddr, time::Duration};

use tokio::sync::mpsc;
use trippy_core::{Builder, Hop, State};

use super::{TraceEvent, TraceHop, TracePlan};

/// How often the running tracer's state is read.
const POLL: Duration = Duration::from_millis(50);

/// Traces the route to `plan.address`, reporting hops then the final statistics.
///
/// # Errors
/// The tracer could not start or stopped with an error (typically: no `CAP_NET_RAW`).
pub async fn run(plan: TracePlan, tx: mpsc::Sender<TraceEvent>) -> Result<(), String> {
    let tracer = Builder::new(plan.address)
        .trace_identifier(rand::random::<u16>().max(1))
        .max_rounds(Some(usize::from(plan.queries)))
        .max_ttl(plan.max_hops)
        .max_round_duration(plan.timeout)
        .min_round_duration(plan.timeout.min(Duration::from_millis(100)))
        .build()
        .map_err(|e| explain(&e.to_string()))?;
    let (tracer, handle) = tracer.spawn().map_err(|e| explain(&e.to_string()))?;
    let mut emitted = 0u8;
    let mut reached = false;
    loop {
        let finished = handle.is_finished();
        let state = tracer.snapshot();
        if state.round_count(State::default_flow_id()) >= 1 {
            let pending: Vec<&Hop> = state.hops().iter().filter(|h| h.ttl() > emitted).collect();
            for hop in pending {
                if reached {
                    break;
                }
                let line = hop_line(hop, plan.address);
                emitted = hop.ttl();
                reached = line.reached;
                if tx.send(TraceEvent::Hop(line)).await.is_err() {
                    return Ok(()); // the client went away; the tracer ends on its own
                }
            }
        }
        if finished {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let result = tokio::task::spawn_blocking(move || handle.join())
        .await
        .map_err(|e| format!("the tracer task failed: {e}"))?
        .map_err(|_| "the tracer thread panicked".to_string())?;
    let state = tracer.snapshot();
    let hops = state.hops().iter().map(|h| hop_line(h, plan.address)).collect();
    // The summary goes out even when the tracer stopped with an error: what it saw is kept.
    let _ = tx.send(TraceEvent::Done(hops)).await;
    result.map_err(|e| explain(&e.to_string()))
}

fn hop_line(h: &Hop, target: IpAddr) -> TraceHop {
    let received = h.total_recv();
    TraceHop {
        ttl: h.ttl(),
        addresses: h.addrs().map(ToString::to_string).collect(),
        sent: h.total_sent(),
        received,
        last_ms: h.last_ms(),
        best_ms: h.best_ms(),
        avg_ms: (received > 0).then(|| h.avg_ms()),
        reached: h.addrs().any(|a| *a == target),
    }
}

/// Adds the capability hint to trippy's permission errors.
fn explain(e: &str) -> String {
    let l = e.to_ascii_lowercase();
    if l.contains("permission") || l.contains("not permitted") {
        format!("traceroute failed: {e}: the server needs CAP_NET_RAW (run as root or grant the capability)")
    } else {
        format!("traceroute failed: {e}")
    }
}
