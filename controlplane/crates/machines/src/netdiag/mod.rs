//! Network diagnostics (spec "Network diagnostics"): ICMP echo (ping) and traceroute run
//! from the server, so an operator sees what the server sees of a machine it cannot
//! reach. This module owns the request bounds and their validation ([`PingRequest`],
//! [`TracerouteRequest`]), target resolution (an address or a name; a target that is not
//! a unicast address is refused), the one-run-per-user rule ([`NetDiag::begin`]), the
//! per-reply and per-hop lines both the plain and the streamed endpoints produce, and
//! the summaries computed from them. The probing itself is behind [`Prober`]:
//! [`ping::run`] (the `surge-ping` crate) and [`trace::run`] (the `trippy-core` crate)
//! on the wire, a fake in router tests.
//!
//! No state survives a run: nothing is stored, nothing is published on the event bus
//! (diagnostics change nothing). Both need `CAP_NET_RAW` (raw ICMP sockets); without it
//! the run's first line is an error naming the capability.

pub mod ping;
pub mod trace;

use std::{
    collections::HashSet,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use utoipa::ToSchema;

use bootlane_core::service_error::ServiceError;

/// Most echo requests one ping run may send (at most 20 probes).
pub const MAX_PING_COUNT: u32 = 20;
/// Most hops a traceroute may probe.
pub const MAX_HOPS: u8 = 30;
/// Most probes per hop of a traceroute (each is one round over all hops).
pub const MAX_QUERIES: u8 = 3;
/// How long a name lookup of a target may take.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// `[diagnostics]`: what ping and traceroute may probe.
///
/// ```toml
/// [diagnostics]
/// allowed_targets = ["10.0.0.0/8", "fd00::/8"]  # default [] = any unicast address
/// resolve_names = true                          # default true
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DiagnosticsConfig {
    /// CIDRs ping and traceroute targets must fall in; empty: any unicast address.
    #[schemars(with = "Vec<String>")]
    pub allowed_targets: Vec<ipnet::IpNet>,
    /// Look host names up through the system resolver; `false`: addresses only.
    pub resolve_names: bool,
}

impl Default for DiagnosticsConfig {
    fn default() -> Self {
        Self {
            allowed_targets: Vec::new(),
            resolve_names: true,
        }
    }
}

impl DiagnosticsConfig {
    /// Checks the section (nothing can be wrong today: the networks are parsed by serde).
    ///
    /// # Errors
    /// None yet; kept for the shape every section has.
    pub fn validate(&self) -> anyhow::Result<()> {
        Ok(())
    }

    fn allows(&self, ip: IpAddr) -> Result<(), ServiceError> {
        if self.allowed_targets.is_empty() || self.allowed_targets.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        let nets: Vec<String> = self.allowed_targets.iter().map(ToString::to_string).collect();
        Err(ServiceError::Invalid(format!(
            "'target' {ip} is outside [diagnostics] allowed_targets ({}); probe an address in those networks",
            nets.join(", ")
        )))
    }
}

/// Body of `POST /network/ping` and `POST /network/ping/stream`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PingRequest {
    /// Address (IPv4 or IPv6) or host name of the target; must resolve to a unicast
    /// address (not multicast, broadcast, unspecified or a local subnet's broadcast).
    pub target: String,
    /// Echo requests to send, 1-20. Default 4.
    #[schema(minimum = 1, maximum = 20)]
    pub count: Option<u32>,
    /// How long to wait for each reply, in milliseconds, 100-5000. Default 1000.
    #[schema(minimum = 100, maximum = 5000)]
    pub timeout_ms: Option<u64>,
    /// Pause between requests, in milliseconds, 100-2000. Default 1000 (as `ping`).
    #[schema(minimum = 100, maximum = 2000)]
    pub interval_ms: Option<u64>,
}

/// Body of `POST /network/traceroute` and `POST /network/traceroute/stream`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TracerouteRequest {
    /// Address or host name of the target, as in [`PingRequest::target`].
    pub target: String,
    /// Largest TTL (hop limit) probed, 1-30. Default 30.
    #[schema(minimum = 1, maximum = 30)]
    pub max_hops: Option<u8>,
    /// Probes per hop, 1-3. Default 3 (as `traceroute`).
    #[schema(minimum = 1, maximum = 3)]
    pub queries: Option<u8>,
    /// How long one round of probes waits for its replies, in milliseconds, 100-5000.
    /// Default 1000.
    #[schema(minimum = 100, maximum = 5000)]
    pub timeout_ms: Option<u64>,
}

/// A ping request with its bounds checked and its target resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingPlan {
    /// The target as asked.
    pub target: String,
    /// The address probed.
    pub address: IpAddr,
    /// Echo requests to send (1-20).
    pub count: u32,
    /// Wait per reply.
    pub timeout: Duration,
    /// Pause between requests.
    pub interval: Duration,
}

/// A traceroute request with its bounds checked and its target resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracePlan {
    /// The target as asked.
    pub target: String,
    /// The address traced.
    pub address: IpAddr,
    /// Largest TTL probed (1-30).
    pub max_hops: u8,
    /// Probes per hop (1-3).
    pub queries: u8,
    /// Wait for the replies of one round.
    pub timeout: Duration,
}

/// One echo request's outcome: a line of the streamed ping and of the plain answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PingReply {
    /// Sequence number (0-based).
    pub seq: u32,
    /// `reply`, `timeout` or `error`.
    pub status: String,
    /// Who answered (the target, or a router reporting an error).
    pub from: Option<String>,
    /// ICMP message size in bytes.
    pub bytes: Option<usize>,
    /// TTL (IPv4) or hop limit (IPv6) of the reply, when the socket reports it.
    pub ttl: Option<u8>,
    /// Round-trip time in milliseconds.
    pub rtt_ms: Option<f64>,
    /// Why the request failed (`status` = `error`).
    pub error: Option<String>,
}

/// The closing line of a ping: counts and round-trip statistics (as `ping` prints them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PingSummary {
    /// The target as asked.
    pub target: String,
    /// The address probed.
    pub address: String,
    /// Requests sent.
    pub sent: u32,
    /// Replies received.
    pub received: u32,
    /// Lost share in percent (0-100).
    pub loss_pct: f64,
    /// Smallest round-trip time in milliseconds (none without replies).
    pub min_ms: Option<f64>,
    /// Mean round-trip time in milliseconds.
    pub avg_ms: Option<f64>,
    /// Largest round-trip time in milliseconds.
    pub max_ms: Option<f64>,
    /// Mean deviation of the round-trip times in milliseconds (`ping`'s mdev).
    pub mdev_ms: Option<f64>,
    /// Set when the run stopped early (e.g. no raw-socket permission).
    pub error: Option<String>,
}

/// `POST /network/ping` answer: every reply line, then the summary.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct PingResult {
    /// One line per echo request, in order.
    pub replies: Vec<PingReply>,
    /// Counts and statistics.
    pub summary: PingSummary,
}

/// One hop of a traceroute: a line of the streamed traceroute and of the plain answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TraceHop {
    /// TTL of the probes (hop number, from 1).
    pub ttl: u8,
    /// Addresses that answered at this TTL (empty: no answer, `*`).
    pub addresses: Vec<String>,
    /// Probes sent at this TTL so far.
    pub sent: usize,
    /// Answers received at this TTL so far.
    pub received: usize,
    /// Last round-trip time in milliseconds.
    pub last_ms: Option<f64>,
    /// Best round-trip time in milliseconds.
    pub best_ms: Option<f64>,
    /// Mean round-trip time in milliseconds.
    pub avg_ms: Option<f64>,
    /// True when the target itself answered at this TTL.
    pub reached: bool,
}

/// The closing line of a traceroute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TraceSummary {
    /// The target as asked.
    pub target: String,
    /// The address traced.
    pub address: String,
    /// True when the target answered.
    pub reached: bool,
    /// Hops up to the target (or up to `max_hops`), with their statistics over all rounds.
    pub hops: Vec<TraceHop>,
    /// Set when the run stopped early (e.g. no raw-socket permission).
    pub error: Option<String>,
}

/// What a [`Prober`] reports while a traceroute runs.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceEvent {
    /// A hop is settled (its first round answered or timed out); sent in TTL order, once.
    Hop(TraceHop),
    /// The trace ended; the hops with their final statistics over all rounds.
    Done(Vec<TraceHop>),
}

/// Sends the probes. Each run reports its lines through `tx` as they happen and returns
/// an error text when it had to stop early; a closed `tx` (the client went away) stops it.
pub trait Prober: Send + Sync {
    /// Runs `plan.count` echo requests, one [`PingReply`] per request.
    fn ping(&self, plan: PingPlan, tx: mpsc::Sender<PingReply>) -> BoxFuture<'static, Result<(), String>>;
    /// Traces the route to `plan.address`, [`TraceEvent::Hop`]s then one
    /// [`TraceEvent::Done`].
    fn traceroute(&self, plan: TracePlan, tx: mpsc::Sender<TraceEvent>) -> BoxFuture<'static, Result<(), String>>;
}

/// The diagnostics service: bounds, resolution, the per-user lock, summaries.
pub struct NetDiag {
    config: DiagnosticsConfig,
    prober: bootlane_core::swap::Swap<dyn Prober>,
    active: Arc<Mutex<HashSet<String>>>,
}

/// Held while a user's run lasts; dropping it lets the user start the next one.
#[derive(Debug)]
pub struct RunGuard {
    user: String,
    active: Arc<Mutex<HashSet<String>>>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let Ok(mut a) = self.active.lock() {
            a.remove(&self.user);
        }
    }
}

impl NetDiag {
    /// A service probing through `prober`, within `config`.
    pub fn new(config: DiagnosticsConfig, prober: Arc<dyn Prober>) -> Self {
        Self {
            config,
            prober: bootlane_core::swap::Swap::new(prober),
            active: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Replaces the prober (router tests probe through a fake; runs already started keep
    /// theirs).
    pub fn set_prober(&self, prober: Arc<dyn Prober>) {
        self.prober.set(prober);
    }

    fn prober(&self) -> Arc<dyn Prober> {
        self.prober.get()
    }

    /// The service on the wire: `surge-ping` and `trippy-core`.
    pub fn system(config: DiagnosticsConfig) -> Self {
        Self::new(config, Arc::new(SystemProber))
    }

    /// Starts a run for `user`.
    ///
    /// # Errors
    /// [`ServiceError::Conflict`] when `user` already has a ping or traceroute running
    /// (one run per user at a time).
    pub fn begin(&self, user: &str) -> Result<RunGuard, ServiceError> {
        let mut a = self
            .active
            .lock()
            .map_err(|_| ServiceError::Conflict("diagnostics are unavailable".into()))?;
        if !a.insert(user.to_string()) {
            return Err(ServiceError::Conflict(format!(
                "user '{user}' already has a ping or traceroute running; wait for it to finish (one run per user at a time)"
            )));
        }
        Ok(RunGuard {
            user: user.to_string(),
            active: self.active.clone(),
        })
    }

    /// Checks the bounds of `req` and resolves its target.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field out of bounds, or the target that is not
    /// a unicast address or does not resolve.
    pub async fn ping_plan(&self, req: PingRequest) -> Result<PingPlan, ServiceError> {
        let count = bounded("count", req.count.map(u64::from), 4, 1, u64::from(MAX_PING_COUNT))? as u32;
        let timeout = Duration::from_millis(bounded("timeout_ms", req.timeout_ms, 1000, 100, 5000)?);
        let interval = Duration::from_millis(bounded("interval_ms", req.interval_ms, 1000, 100, 2000)?);
        let address = self.target(&req.target).await?;
        Ok(PingPlan {
            target: req.target,
            address,
            count,
            timeout,
            interval,
        })
    }

    /// Checks the bounds of `req` and resolves its target.
    ///
    /// # Errors
    /// As [`NetDiag::ping_plan`].
    pub async fn trace_plan(&self, req: TracerouteRequest) -> Result<TracePlan, ServiceError> {
        let max_hops = bounded("max_hops", req.max_hops.map(u64::from), 30, 1, u64::from(MAX_HOPS))? as u8;
        let queries = bounded("queries", req.queries.map(u64::from), 3, 1, u64::from(MAX_QUERIES))? as u8;
        let timeout = Duration::from_millis(bounded("timeout_ms", req.timeout_ms, 1000, 100, 5000)?);
        let address = self.target(&req.target).await?;
        Ok(TracePlan {
            target: req.target,
            address,
            max_hops,
            queries,
            timeout,
        })
    }

    async fn target(&self, target: &str) -> Result<IpAddr, ServiceError> {
        let ip = resolve(target, self.config.resolve_names).await?;
        self.config.allows(ip)?;
        Ok(ip)
    }

    /// Starts a ping; lines arrive on the returned receiver, the task's result is the
    /// early-stop error if any.
    pub fn start_ping(
        &self,
        plan: PingPlan,
    ) -> (mpsc::Receiver<PingReply>, tokio::task::JoinHandle<Result<(), String>>) {
        let (tx, rx) = mpsc::channel(MAX_PING_COUNT as usize);
        (rx, tokio::spawn(self.prober().ping(plan, tx)))
    }

    /// Starts a traceroute; events arrive on the returned receiver.
    pub fn start_trace(
        &self,
        plan: TracePlan,
    ) -> (mpsc::Receiver<TraceEvent>, tokio::task::JoinHandle<Result<(), String>>) {
        let (tx, rx) = mpsc::channel(usize::from(MAX_HOPS) + 2);
        (rx, tokio::spawn(self.prober().traceroute(plan, tx)))
    }

    /// Runs a whole ping and answers every line with the summary.
    pub async fn ping(&self, plan: PingPlan) -> PingResult {
        let (mut rx, task) = self.start_ping(plan.clone());
        let mut replies = Vec::new();
        while let Some(r) = rx.recv().await {
            replies.push(r);
        }
        let error = join_error(task).await;
        let summary = ping_summary(&plan, &replies, error);
        PingResult { replies, summary }
    }

    /// Runs a whole traceroute and answers its summary (the hops with their statistics).
    pub async fn traceroute(&self, plan: TracePlan) -> TraceSummary {
        let (mut rx, task) = self.start_trace(plan.clone());
        let mut settled = Vec::new();
        let mut done = None;
        while let Some(e) = rx.recv().await {
            match e {
                TraceEvent::Hop(h) => settled.push(h),
                TraceEvent::Done(h) => done = Some(h),
            }
        }
        let error = join_error(task).await;
        trace_summary(&plan, done.unwrap_or(settled), error)
    }
}

/// The early-stop error of a finished run task (a panic counts as one).
pub async fn join_error(task: tokio::task::JoinHandle<Result<(), String>>) -> Option<String> {
    match task.await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(e) => Some(format!("the probe task failed: {e}")),
    }
}

fn bounded(field: &str, v: Option<u64>, default: u64, min: u64, max: u64) -> Result<u64, ServiceError> {
    match v {
        None => Ok(default),
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(ServiceError::Invalid(format!(
            "'{field}' must be {min}-{max} (got {v})"
        ))),
    }
}

/// Resolves a target to the address probed: an IP literal, else a host name looked up
/// through the system resolver (the first unicast answer, IPv4 first). Refuses
/// multicast, broadcast (limited, and the subnet-directed broadcast of a local
/// interface) and unspecified addresses. With `names` false only addresses are accepted.
///
/// # Errors
/// [`ServiceError::Invalid`] naming the problem.
pub async fn resolve(target: &str, names: bool) -> Result<IpAddr, ServiceError> {
    let t = target.trim();
    if t.is_empty() {
        return Err(ServiceError::Invalid(
            "'target' must be an IP address or a host name".into(),
        ));
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        check_unicast(ip)?;
        return Ok(ip);
    }
    bootlane_core::net::types::validate_domain_name(t.trim_end_matches('.'))
        .map_err(|e| ServiceError::Invalid(format!("'target' is neither an IP address nor a valid host name: {e}")))?;
    if !names {
        return Err(ServiceError::Invalid(format!(
            "'target': '{t}' is a name and [diagnostics] resolve_names is off; give an IP address"
        )));
    }
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((t, 0)))
        .await
        .map_err(|_| {
            ServiceError::Invalid(format!(
                "'target': looking up '{t}' took longer than {RESOLVE_TIMEOUT:?}"
            ))
        })?
        .map_err(|e| ServiceError::Invalid(format!("'target': '{t}' does not resolve: {e}")))?;
    let mut addrs: Vec<IpAddr> = found.map(|s| s.ip()).collect();
    addrs.sort_by_key(|a| a.is_ipv6());
    addrs
        .into_iter()
        .find(|a| check_unicast(*a).is_ok())
        .ok_or_else(|| ServiceError::Invalid(format!("'target': '{t}' resolves to no unicast address")))
}

/// Refuses addresses that are not unicast.
///
/// # Errors
/// [`ServiceError::Invalid`] saying which kind the address is.
pub fn check_unicast(ip: IpAddr) -> Result<(), ServiceError> {
    let kind = if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if matches!(ip, IpAddr::V4(v4) if v4.is_broadcast()) {
        Some("the limited broadcast address")
    } else if is_local_broadcast(ip) {
        Some("the broadcast address of a local subnet")
    } else {
        None
    };
    match kind {
        Some(k) => Err(ServiceError::Invalid(format!(
            "'target' {ip} is {k}; ping and traceroute need a unicast address"
        ))),
        None => Ok(()),
    }
}

fn is_local_broadcast(ip: IpAddr) -> bool {
    let IpAddr::V4(v4) = ip else { return false };
    bootlane_core::net::interface_addrs()
        .iter()
        .any(|a| matches!(a.net, ipnet::IpNet::V4(n) if n.prefix_len() < 31 && n.broadcast() == v4))
}

/// Counts and round-trip statistics of a ping's replies (`ping`'s summary: mdev is the
/// mean absolute deviation from the mean).
pub fn ping_summary(plan: &PingPlan, replies: &[PingReply], error: Option<String>) -> PingSummary {
    let rtts: Vec<f64> = replies
        .iter()
        .filter(|r| r.status == "reply")
        .filter_map(|r| r.rtt_ms)
        .collect();
    let sent = replies.len() as u32;
    let received = rtts.len() as u32;
    let avg = (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64);
    PingSummary {
        target: plan.target.clone(),
        address: plan.address.to_string(),
        sent,
        received,
        loss_pct: if sent == 0 {
            100.0
        } else {
            f64::from(sent - received) * 100.0 / f64::from(sent)
        },
        min_ms: rtts.iter().copied().reduce(f64::min),
        avg_ms: avg,
        max_ms: rtts.iter().copied().reduce(f64::max),
        mdev_ms: avg.map(|m| rtts.iter().map(|r| (r - m).abs()).sum::<f64>() / rtts.len() as f64),
        error,
    }
}

/// The closing line of a traceroute from its final hops: cut after the hop where the
/// target answered.
pub fn trace_summary(plan: &TracePlan, mut hops: Vec<TraceHop>, error: Option<String>) -> TraceSummary {
    hops.sort_by_key(|h| h.ttl);
    let reached = match hops.iter().position(|h| h.reached) {
        Some(i) => {
            hops.truncate(i + 1);
            true
        }
        None => false,
    };
    TraceSummary {
        target: plan.target.clone(),
        address: plan.address.to_string(),
        reached,
        hops,
        error,
    }
}

/// The prober on the wire.
struct SystemProber;

impl Prober for SystemProber {
    fn ping(&self, plan: PingPlan, tx: mpsc::Sender<PingReply>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(ping::run(plan, tx))
    }

    fn traceroute(&self, plan: TracePlan, tx: mpsc::Sender<TraceEvent>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(trace::run(plan, tx))
    }
}

/// Turns a raw-socket permission error into the text the API shows.
pub(crate) fn socket_error(e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        format!(
            "cannot open a raw ICMP socket ({e}): the server needs CAP_NET_RAW (run as root or grant the capability)"
        )
    } else {
        format!("cannot open an ICMP socket: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn reply(seq: u32, rtt: Option<f64>) -> PingReply {
        PingReply {
            seq,
            status: if rtt.is_some() { "reply" } else { "timeout" }.into(),
            from: rtt.map(|_| "192.0.2.1".into()),
            bytes: rtt.map(|_| 64),
            ttl: None,
            rtt_ms: rtt,
            error: None,
        }
    }

    fn plan() -> PingPlan {
        PingPlan {
            target: "x".into(),
            address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            count: 4,
            timeout: Duration::from_secs(1),
            interval: Duration::from_secs(1),
        }
    }

    #[test]
    fn summary_counts_loss_and_statistics() {
        let s = ping_summary(
            &plan(),
            &[
                reply(0, Some(1.0)),
                reply(1, None),
                reply(2, Some(3.0)),
                reply(3, Some(2.0)),
            ],
            None,
        );
        assert_eq!((s.sent, s.received), (4, 3));
        assert_eq!(s.loss_pct, 25.0);
        assert_eq!((s.min_ms, s.avg_ms, s.max_ms), (Some(1.0), Some(2.0), Some(3.0)));
        assert!((s.mdev_ms.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        let none = ping_summary(&plan(), &[reply(0, None)], Some("x".into()));
        assert_eq!(
            (none.loss_pct, none.avg_ms, none.error.as_deref()),
            (100.0, None, Some("x"))
        );
    }

    #[test]
    fn non_unicast_targets_are_refused_by_kind() {
        for (t, kind) in [
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "limited broadcast"),
        ] {
            let e = check_unicast(t.parse().unwrap()).unwrap_err().to_string();
            assert!(e.contains(kind) && e.contains(t), "{t}: {e}");
        }
        for ok in ["127.0.0.1", "192.0.2.7", "::1", "2001:db8::1"] {
            assert!(check_unicast(ok.parse().unwrap()).is_ok(), "{ok}");
        }
    }

    #[test]
    fn a_local_subnets_broadcast_is_refused() {
        // Every local IPv4 subnet wider than /31 has a directed broadcast; none may be a target.
        for a in bootlane_core::net::interface_addrs() {
            if let ipnet::IpNet::V4(n) = a.net {
                if n.prefix_len() < 31 {
                    let e = check_unicast(IpAddr::V4(n.broadcast())).unwrap_err().to_string();
                    assert!(e.contains("broadcast address of a local subnet"), "{e}");
                }
            }
        }
    }

    #[tokio::test]
    async fn bounds_and_targets_are_checked_before_anything_is_sent() {
        let d = NetDiag::system(DiagnosticsConfig::default());
        let req = |count, target: &str| PingRequest {
            target: target.into(),
            count,
            timeout_ms: None,
            interval_ms: None,
        };
        let e = d.ping_plan(req(Some(21), "127.0.0.1")).await.unwrap_err().to_string();
        assert!(e.contains("'count' must be 1-20"), "{e}");
        let e = d.ping_plan(req(Some(0), "127.0.0.1")).await.unwrap_err().to_string();
        assert!(e.contains("'count'"), "{e}");
        let e = d.ping_plan(req(None, "bad name!")).await.unwrap_err().to_string();
        assert!(e.contains("neither an IP address nor a valid host name"), "{e}");
        let p = d.ping_plan(req(None, "localhost")).await.unwrap();
        assert!(p.address.is_loopback() && p.count == 4, "{p:?}");
        let t = TracerouteRequest {
            target: "127.0.0.1".into(),
            max_hops: Some(31),
            queries: None,
            timeout_ms: None,
        };
        let e = d.trace_plan(t).await.unwrap_err().to_string();
        assert!(e.contains("'max_hops' must be 1-30"), "{e}");
        // The allow-list and the name switch.
        let d = NetDiag::system(DiagnosticsConfig {
            allowed_targets: vec!["10.0.0.0/8".parse().unwrap()],
            resolve_names: false,
        });
        let e = d.ping_plan(req(None, "192.0.2.1")).await.unwrap_err().to_string();
        assert!(e.contains("outside [diagnostics] allowed_targets (10.0.0.0/8)"), "{e}");
        assert_eq!(
            d.ping_plan(req(None, "10.1.2.3")).await.unwrap().address.to_string(),
            "10.1.2.3"
        );
        let e = d.ping_plan(req(None, "localhost")).await.unwrap_err().to_string();
        assert!(e.contains("resolve_names is off"), "{e}");
    }

    #[test]
    fn one_run_per_user() {
        let d = NetDiag::system(DiagnosticsConfig::default());
        let g = d.begin("alice").unwrap();
        assert!(d
            .begin("alice")
            .unwrap_err()
            .to_string()
            .contains("already has a ping or traceroute running"));
        let _b = d.begin("bob").unwrap();
        drop(g);
        assert!(d.begin("alice").is_ok());
    }

    #[test]
    fn trace_summary_cuts_after_the_target() {
        let hop = |ttl, reached| TraceHop {
            ttl,
            addresses: vec![],
            sent: 1,
            received: 1,
            last_ms: None,
            best_ms: None,
            avg_ms: None,
            reached,
        };
        let p = TracePlan {
            target: "t".into(),
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            max_hops: 30,
            queries: 1,
            timeout: Duration::from_secs(1),
        };
        let s = trace_summary(&p, vec![hop(2, true), hop(1, false), hop(3, true)], None);
        assert!(s.reached);
        assert_eq!(s.hops.iter().map(|h| h.ttl).collect::<Vec<_>>(), vec![1, 2]);
        assert!(!trace_summary(&p, vec![hop(1, false)], None).reached);
    }
}
