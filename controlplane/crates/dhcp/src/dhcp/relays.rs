//! What the DHCP server has seen of relay agents (RFC 2131 §4.1 `giaddr`): per relay
//! address, how many requests it forwarded, when last, and whether a configured subnet
//! contains it. Read by the boot doctor to find relays forwarding for subnets that are
//! not configured, and configured relayed subnets no relay ever reached.
//!
//! Bounded: at most [`MAX_RELAYS`] addresses are kept (the first seen win; a network
//! with more relays than that is reported as such by the count of the dropped ones).

use std::{
    collections::BTreeMap,
    net::Ipv4Addr,
    sync::{Arc, Mutex},
};

use serde::Serialize;
use utoipa::ToSchema;

/// The most relay addresses kept.
pub const MAX_RELAYS: usize = 1024;

/// One relay agent address as seen in `giaddr`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct RelaySeen {
    /// The relay's address (`giaddr`).
    #[schema(value_type = String)]
    pub giaddr: Ipv4Addr,
    /// The configured subnet containing it (its CIDR), when one does.
    pub subnet: Option<String>,
    /// Requests forwarded by it since the server started.
    pub requests: u64,
    /// When the last one arrived (Unix seconds).
    pub last_seen: u64,
}

/// The relay record shared by the DHCP handler (which writes) and the doctor (which
/// reads). Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct RelayLog {
    inner: Arc<Mutex<(BTreeMap<Ipv4Addr, RelaySeen>, u64)>>,
}

impl RelayLog {
    /// Records a request relayed by `giaddr`, which `subnet` (a CIDR) contains, or none.
    pub fn saw(&self, giaddr: Ipv4Addr, subnet: Option<&str>, now: u64) {
        let Ok(mut g) = self.inner.lock() else { return };
        let (map, dropped) = &mut *g;
        let full = map.len() >= MAX_RELAYS;
        match map.get_mut(&giaddr) {
            Some(r) => {
                r.requests += 1;
                r.last_seen = now;
                r.subnet = subnet.map(str::to_owned);
            }
            None if full => *dropped += 1,
            None => {
                map.insert(
                    giaddr,
                    RelaySeen {
                        giaddr,
                        subnet: subnet.map(str::to_owned),
                        requests: 1,
                        last_seen: now,
                    },
                );
            }
        }
    }

    /// Every relay seen, by address, and the count of requests from relays not kept.
    pub fn seen(&self) -> (Vec<RelaySeen>, u64) {
        self.inner
            .lock()
            .map(|g| (g.0.values().cloned().collect(), g.1))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_relay_and_stays_bounded() {
        let log = RelayLog::default();
        let a = Ipv4Addr::new(10, 9, 0, 1);
        log.saw(a, None, 5);
        log.saw(a, Some("10.9.0.0/24"), 7);
        let (seen, dropped) = log.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].requests, seen[0].last_seen, seen[0].subnet.as_deref()),
            (2, 7, Some("10.9.0.0/24"))
        );
        assert_eq!(dropped, 0);
        for i in 0..(MAX_RELAYS as u32 + 10) {
            log.saw(Ipv4Addr::from(0x0a00_0000 + i), None, 1);
        }
        let (seen, dropped) = log.seen();
        assert_eq!(seen.len(), MAX_RELAYS);
        assert!(dropped >= 10);
    }
}
