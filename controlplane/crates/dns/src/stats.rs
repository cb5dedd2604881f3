//! Activity history for the dashboard charts (boot activity over time and
//! DNS queries per second split XDP vs userspace). This module owns an in-memory ring
//! of counter samples taken every [`SAMPLE_INTERVAL`] (24 h of them, [`CAPACITY`]) and
//! turns it into per-interval deltas ([`Activity::history`]).
//!
//! It keeps no counters of its own: each sample reads what the services already count
//! ([`read_counters`]): DHCP offers and acks, TFTP transfers completed and iPXE scripts
//! served from the `metrics` recorder ([`bootlane_core::metrics::DHCP_REPLIES`],
//! [`bootlane_core::metrics::TFTP_COMPLETED`], [`bootlane_core::metrics::IPXE_SCRIPTS`]), DNS queries of
//! the userspace server from its handler's atomics, and queries answered by XDP from the
//! data plane's per-CPU counters. The history is lost on restart (Prometheus keeps the
//! long-term series, `GET /api/v1/metrics`).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use crate::dns::service::DnsService;

/// Time between two samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(10);
/// Samples kept: 24 h of [`SAMPLE_INTERVAL`]s plus the sample that opens the first one
/// (about 0.5 MB).
pub const CAPACITY: usize = 24 * 60 * 6 + 1;
/// Longest window [`Activity::history`] answers, in minutes (what the ring holds).
pub const MAX_MINUTES: u32 = 1440;
/// Most points [`Activity::history`] answers; longer windows are summed into wider steps.
pub const MAX_POINTS: u64 = 720;

/// Cumulative counter values at one instant (each counts since the process started,
/// except XDP's, which count since the program was loaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// DHCPOFFERs sent.
    pub dhcp_offers: u64,
    /// DHCPACKs sent.
    pub dhcp_acks: u64,
    /// TFTP transfers whose last block was acknowledged.
    pub tftp_completed: u64,
    /// iPXE scripts served (`GET /boot/ipxe` answered 200).
    pub ipxe_scripts: u64,
    /// DNS queries received by the userspace server (UDP and TCP).
    pub dns_userspace: u64,
    /// DNS queries answered by the XDP fast path.
    pub dns_xdp: u64,
}

impl Counters {
    /// `self - earlier`, field by field. A counter that went down was reset (the XDP
    /// program reloaded): its delta is its new value, as Prometheus' `rate` does.
    #[must_use]
    pub fn since(self, earlier: Self) -> Self {
        let d = |now: u64, then: u64| if now >= then { now - then } else { now };
        Self {
            dhcp_offers: d(self.dhcp_offers, earlier.dhcp_offers),
            dhcp_acks: d(self.dhcp_acks, earlier.dhcp_acks),
            tftp_completed: d(self.tftp_completed, earlier.tftp_completed),
            ipxe_scripts: d(self.ipxe_scripts, earlier.ipxe_scripts),
            dns_userspace: d(self.dns_userspace, earlier.dns_userspace),
            dns_xdp: d(self.dns_xdp, earlier.dns_xdp),
        }
    }

    fn add(&mut self, o: Self) {
        self.dhcp_offers += o.dhcp_offers;
        self.dhcp_acks += o.dhcp_acks;
        self.tftp_completed += o.tftp_completed;
        self.ipxe_scripts += o.ipxe_scripts;
        self.dns_userspace += o.dns_userspace;
        self.dns_xdp += o.dns_xdp;
    }
}

/// The sum of every sample of `name` in a Prometheus text exposition (`text`) whose
/// labels include `label` (`key="value"`), or of every sample of `name` when `label`
/// is `None`. Missing series count 0.
fn series_sum(text: &str, name: &str, label: Option<&str>) -> u64 {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(r) => r.split_once("} ")?,
                None => ("", rest.strip_prefix(' ')?),
            };
            if let Some(want) = label {
                if !labels.split(',').any(|kv| kv == want) {
                    return None;
                }
            }
            value.trim().parse::<f64>().ok()
        })
        // Counters are integers well inside f64's exact range.
        .map(|v| v.max(0.0) as u64)
        .sum()
}

/// Reads the counters of a running server: DHCP, TFTP and iPXE from the `metrics`
/// recorder's text ([`bootlane_core::metrics::render`]), DNS from the userspace handler and the
/// XDP data plane of `dns`.
pub fn read_counters(dns: &DnsService) -> Counters {
    use bootlane_core::metrics::{DHCP_REPLIES, IPXE_SCRIPTS, TFTP_COMPLETED};
    let text = bootlane_core::metrics::render();
    let d = dns.handler().shared.metrics.snapshot();
    Counters {
        dhcp_offers: series_sum(&text, DHCP_REPLIES, Some("type=\"offer\"")),
        dhcp_acks: series_sum(&text, DHCP_REPLIES, Some("type=\"ack\"")),
        tftp_completed: series_sum(&text, TFTP_COMPLETED, None),
        ipxe_scripts: series_sum(&text, IPXE_SCRIPTS, None),
        dns_userspace: d.queries_udp + d.queries_tcp,
        dns_xdp: dns.dataplane().status().counters.answered,
    }
}

/// One interval of [`ActivityHistory`]: how many of each thing happened in it.
/// Divide by `secs` for a rate per second.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ActivityPoint {
    /// End of the interval, Unix time in seconds.
    pub time: i64,
    /// Length of the interval in seconds (about `step_secs`; shorter at the start).
    pub secs: f64,
    /// DHCPOFFERs sent.
    pub dhcp_offers: u64,
    /// DHCPACKs sent.
    pub dhcp_acks: u64,
    /// TFTP transfers completed.
    pub tftp_completed: u64,
    /// iPXE scripts served.
    pub ipxe_scripts: u64,
    /// DNS queries received by the userspace server.
    pub dns_userspace: u64,
    /// DNS queries answered by the XDP fast path.
    pub dns_xdp: u64,
}

/// `GET /api/v1/stats/activity` answer: per-interval counts over the last `minutes`,
/// oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActivityHistory {
    /// The window asked for, in minutes.
    pub minutes: u32,
    /// Seconds between two samples on the server (10).
    pub sample_secs: u64,
    /// Width of one point in seconds: the sample interval, or a multiple of it so that
    /// the window has at most 720 points.
    pub step_secs: u64,
    /// The intervals, oldest first (empty until two samples were taken).
    pub points: Vec<ActivityPoint>,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: i64,
    counters: Counters,
}

/// Where samples come from ([`read_counters`] in the server).
pub type Source = Box<dyn Fn() -> Counters + Send + Sync>;

/// The activity ring. Shared by the sampling task ([`Activity::spawn`]) and the API.
pub struct Activity {
    ring: Mutex<VecDeque<Sample>>,
    source: Source,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Activity {
    /// An empty ring reading its samples from `source`.
    pub fn new(source: Source) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(VecDeque::with_capacity(CAPACITY)),
            source,
        })
    }

    /// Takes one sample now.
    pub fn sample(&self) {
        let c = (self.source)();
        self.push(now_ms(), c);
    }

    fn push(&self, at_ms: i64, counters: Counters) {
        let mut ring = self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if ring.len() == CAPACITY {
            ring.pop_front();
        }
        ring.push_back(Sample { at_ms, counters });
    }

    /// Samples every [`SAMPLE_INTERVAL`] (the first at once) until `token` is cancelled.
    pub fn spawn(self: &Arc<Self>, token: CancellationToken) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = token.cancelled() => break,
                    _ = tick.tick() => me.sample(),
                }
            }
        });
    }

    /// The last `minutes` (clamped to 1..=[`MAX_MINUTES`]) as per-interval deltas,
    /// oldest first. Each sample after the first closes an interval; intervals are
    /// summed into steps of `step_secs` (aligned to Unix time) when the window would
    /// have more than [`MAX_POINTS`] of them.
    pub fn history(&self, minutes: u32) -> ActivityHistory {
        self.history_at(minutes, now_ms())
    }

    fn history_at(&self, minutes: u32, now_ms: i64) -> ActivityHistory {
        let minutes = minutes.clamp(1, MAX_MINUTES);
        let sample_secs = SAMPLE_INTERVAL.as_secs();
        let window = u64::from(minutes) * 60;
        let step_secs = window.div_ceil(MAX_POINTS).div_ceil(sample_secs).max(1) * sample_secs;
        let from_ms = now_ms - i64::try_from(window * 1000).unwrap_or(i64::MAX);
        let step_ms = i64::try_from(step_secs * 1000).unwrap_or(i64::MAX);
        let ring = self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut points: Vec<ActivityPoint> = Vec::new();
        let mut bucket_of_last = None;
        for (a, b) in ring.iter().zip(ring.iter().skip(1)) {
            if b.at_ms <= from_ms {
                continue;
            }
            let d = b.counters.since(a.counters);
            let secs = (b.at_ms - a.at_ms) as f64 / 1000.0;
            let bucket = (b.at_ms - 1).div_euclid(step_ms);
            match points.last_mut() {
                Some(p) if step_secs > sample_secs && bucket_of_last == Some(bucket) => {
                    let mut c = Counters {
                        dhcp_offers: p.dhcp_offers,
                        dhcp_acks: p.dhcp_acks,
                        tftp_completed: p.tftp_completed,
                        ipxe_scripts: p.ipxe_scripts,
                        dns_userspace: p.dns_userspace,
                        dns_xdp: p.dns_xdp,
                    };
                    c.add(d);
                    *p = point(b.at_ms, p.secs + secs, c);
                }
                _ => points.push(point(b.at_ms, secs, d)),
            }
            bucket_of_last = Some(bucket);
        }
        ActivityHistory {
            minutes,
            sample_secs,
            step_secs,
            points,
        }
    }
}

fn point(at_ms: i64, secs: f64, c: Counters) -> ActivityPoint {
    ActivityPoint {
        time: at_ms.div_euclid(1000),
        secs,
        dhcp_offers: c.dhcp_offers,
        dhcp_acks: c.dhcp_acks,
        tftp_completed: c.tftp_completed,
        ipxe_scripts: c.ipxe_scripts,
        dns_userspace: c.dns_userspace,
        dns_xdp: c.dns_xdp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(offers: u64, xdp: u64) -> Counters {
        Counters {
            dhcp_offers: offers,
            dns_xdp: xdp,
            ..Counters::default()
        }
    }

    fn ring() -> Arc<Activity> {
        Activity::new(Box::new(Counters::default))
    }

    #[test]
    fn deltas_per_interval_and_counter_reset() {
        let a = ring();
        let t0 = 1_700_000_000_000;
        a.push(t0, c(5, 100));
        a.push(t0 + 10_000, c(8, 130));
        // XDP reloaded: its counter restarts at 7.
        a.push(t0 + 20_000, c(8, 7));
        let h = a.history_at(60, t0 + 20_000);
        assert_eq!((h.step_secs, h.points.len()), (10, 2));
        assert_eq!(
            (
                h.points[0].time,
                h.points[0].secs,
                h.points[0].dhcp_offers,
                h.points[0].dns_xdp
            ),
            (1_700_000_010, 10.0, 3, 30)
        );
        assert_eq!((h.points[1].dhcp_offers, h.points[1].dns_xdp), (0, 7));
    }

    #[test]
    fn window_excludes_old_intervals_and_long_windows_are_summed() {
        let a = ring();
        let t0: i64 = 1_700_000_000_000;
        // 3 hours of samples, one offer per interval.
        for i in 0..=1080 {
            a.push(t0 + i * 10_000, c(u64::try_from(i).unwrap(), 0));
        }
        let now = t0 + 1080 * 10_000;
        let h = a.history_at(1, now);
        assert_eq!(h.points.len(), 6);
        assert!(h.points.iter().all(|p| p.dhcp_offers == 1));
        // 1440 minutes: steps of 120 s, each point sums 12 intervals (first may be partial).
        let h = a.history_at(5000, now);
        assert_eq!((h.minutes, h.step_secs), (1440, 120));
        assert!(h.points.len() <= 720);
        let total: u64 = h.points.iter().map(|p| p.dhcp_offers).sum();
        assert_eq!(total, 1080);
        assert_eq!(h.points[5].dhcp_offers, 12);
        assert!((h.points[5].secs - 120.0).abs() < 1e-9);
    }

    #[test]
    fn ring_is_bounded() {
        let a = ring();
        for i in 0..(CAPACITY as i64 + 50) {
            a.push(i * 10_000, Counters::default());
        }
        assert_eq!(a.ring.lock().unwrap().len(), CAPACITY);
    }

    #[test]
    fn series_sum_reads_labels() {
        let text = "# TYPE bootlane_dhcp_replies_total counter\n\
            bootlane_dhcp_replies_total{type=\"offer\"} 4\n\
            bootlane_dhcp_replies_total{type=\"ack\"} 3\n\
            bootlane_dhcp_replies_total_other 9\n\
            bootlane_ipxe_scripts_served_total 2\n";
        assert_eq!(
            series_sum(text, "bootlane_dhcp_replies_total", Some("type=\"offer\"")),
            4
        );
        assert_eq!(series_sum(text, "bootlane_dhcp_replies_total", None), 7);
        assert_eq!(series_sum(text, "bootlane_ipxe_scripts_served_total", None), 2);
        assert_eq!(series_sum(text, "bootlane_tftp_transfers_completed_total", None), 0);
    }
}
