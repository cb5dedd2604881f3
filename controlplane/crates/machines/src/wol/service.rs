//! The WOL service: the single path for every wake (API, batch, schedule) and every
//! schedule write. A wake resolves the target (a registered host, or a bare MAC), picks
//! the interfaces (the one asked for; else those whose subnet holds the host's address —
//! its `ip`, or else its newest DHCP lease; else every allowed broadcast-capable one),
//! sends the magic packet to each interface's subnet-directed broadcast and to
//! `255.255.255.255` on every `[wol] ports` port, `repeat` times, records a
//! [`WolRecord`] and publishes `wol.sent` (or `wol.failed` when nothing went out).
//!
//! Schedules are checked once a second by [`WolService::spawn_scheduler`] (a task that
//! ends with the server's cancellation token) through [`WolService::tick`], which applies
//! [`schedules::due`] with an injectable clock. The slot is stored before the wakes go
//! out, so a crash mid-run never fires that slot again.
//!
//! State: the `wol_history` and `wol_schedules` tables, the network behind a lock (tests
//! swap in a fake), the clock, the scheduler's start time, and one async mutex that
//! serialises schedule writes.

use std::{
    net::{IpAddr, Ipv4Addr},
    sync::Arc,
    time::Duration,
};

use jiff::Timestamp;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use super::{
    history::{History, WolRecord},
    packet::{magic_packet, SecureOn},
    schedules::{self, Due, ScheduleInput, ScheduleView, WolSchedule, MAX_SCHEDULES},
    sender::{BroadcastIface, Network, SystemNetwork},
    WolConfig, MAX_REPEAT, MAX_STAGGER_MS,
};
use bootlane_boot::inventory::{model::Host, service::HostService};
use bootlane_core::{
    events::{
        current_actor, EventBus, EventKind, NewEvent, WolHistoryCleared, WolScheduleFired, WolScheduleMissed, WolWake,
    },
    net::types::{normalise_mac, MacAddr},
    service_error::ServiceError,
    store::{Store, Table},
};
use bootlane_dhcp::dhcp::control::DhcpControl;

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The time source of the scheduler (tests drive it by hand).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Pause between the repeats of one wake, so a switch dropping a burst drops one copy.
const REPEAT_GAP: Duration = Duration::from_millis(50);
/// Longest error text kept in a history record.
const MAX_ERROR_LEN: usize = 1000;
/// Most hosts in one batch wake.
pub const MAX_BATCH: usize = 1000;

/// `errors` joined with `; `, cut to [`MAX_ERROR_LEN`] bytes; `None` when empty.
fn clip(errors: &[String]) -> Option<String> {
    if errors.is_empty() {
        return None;
    }
    let mut e = errors.join("; ");
    if e.len() > MAX_ERROR_LEN {
        let mut cut = MAX_ERROR_LEN;
        while !e.is_char_boundary(cut) {
            cut -= 1;
        }
        e.truncate(cut);
        e.push('…');
    }
    Some(e)
}

/// How to send one wake.
#[derive(Debug, Clone, Default)]
pub struct WakeOptions {
    /// Send only out of this interface (400 when it cannot broadcast or is not allowed).
    pub interface: Option<String>,
    /// Packets per destination (1-10); `None`: `[wol] repeat`.
    pub repeat: Option<u8>,
    /// SecureOn password appended to the packet.
    pub password: Option<SecureOn>,
}

/// One host's outcome in a batch wake.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct WakeResult {
    /// The host id asked for.
    pub id: u64,
    /// True when the packet went out on every chosen interface.
    pub ok: bool,
    /// The history record (absent when the host was not found or the request was refused).
    pub record: Option<WolRecord>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// Wake-on-LAN: wakes, history, schedules. Share it as `Arc<WolService>`.
pub struct WolService {
    config: WolConfig,
    network: bootlane_core::swap::Swap<dyn Network>,
    history: History,
    schedules: Table<WolSchedule>,
    hosts: Arc<HostService>,
    dhcp: Arc<DhcpControl>,
    events: Arc<EventBus>,
    clock: Clock,
    started: Timestamp,
    write: tokio::sync::Mutex<()>,
}

impl WolService {
    /// Opens the tables with the machine's network and clock; the scheduler's start is now.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        config: &WolConfig,
        store: &Store,
        hosts: Arc<HostService>,
        dhcp: Arc<DhcpControl>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        Self::with_parts(
            config,
            store,
            hosts,
            dhcp,
            events,
            Arc::new(SystemNetwork),
            Arc::new(Timestamp::now),
        )
    }

    /// As [`WolService::open`] with a given network and clock (tests).
    ///
    /// # Errors
    /// Store errors.
    pub fn with_parts(
        config: &WolConfig,
        store: &Store,
        hosts: Arc<HostService>,
        dhcp: Arc<DhcpControl>,
        events: Arc<EventBus>,
        network: Arc<dyn Network>,
        clock: Clock,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            config: config.clone(),
            network: bootlane_core::swap::Swap::new(network),
            history: History::open(store)?,
            schedules: store.table()?,
            hosts,
            dhcp,
            events,
            started: clock(),
            clock,
            write: tokio::sync::Mutex::new(()),
        }))
    }

    /// Replaces the network (router tests put a recording fake here so no packet leaves).
    pub fn set_network(&self, network: Arc<dyn Network>) {
        self.network.set(network);
    }

    fn net(&self) -> Arc<dyn Network> {
        self.network.get()
    }

    /// The `[wol]` section in force.
    pub fn config(&self) -> &WolConfig {
        &self.config
    }

    /// Interfaces able to broadcast that `[wol] interfaces` allows, by name.
    pub fn interfaces(&self) -> Vec<BroadcastIface> {
        let allow = &self.config.interfaces;
        let mut v: Vec<BroadcastIface> = self
            .net()
            .interfaces()
            .into_iter()
            .filter(|i| allow.is_empty() || allow.contains(&i.name))
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The interfaces a wake goes out of (see the module docs).
    fn choose(&self, interface: Option<&str>, addr: Option<Ipv4Addr>) -> Result<Vec<BroadcastIface>> {
        let all = self.interfaces();
        if let Some(name) = interface {
            let one: Vec<_> = all.into_iter().filter(|i| i.name == name).collect();
            if one.is_empty() {
                return Err(ServiceError::Invalid(format!(
                    "'interface': {name:?} is not an interface WOL can broadcast on; GET /api/v1/wol/interfaces lists them"
                )));
            }
            return Ok(one);
        }
        if all.is_empty() {
            return Err(ServiceError::Conflict(
                "no interface able to broadcast (up, with IFF_BROADCAST, allowed by [wol] interfaces); see GET /api/v1/wol/interfaces".into(),
            ));
        }
        if let Some(ip) = addr {
            let holding: Vec<_> = all.iter().filter(|i| i.holds(ip)).cloned().collect();
            if !holding.is_empty() {
                return Ok(holding);
            }
        }
        Ok(all)
    }

    /// The host's IPv4 address: its own `ip`, else its newest DHCP lease.
    async fn host_addr(&self, h: &Host) -> Option<Ipv4Addr> {
        if let Some(IpAddr::V4(ip)) = h.ip {
            return Some(ip);
        }
        self.dhcp
            .all_leases()
            .await
            .into_iter()
            .filter(|l| l.mac == h.mac && !l.declined)
            .max_by_key(|l| l.expires_at)
            .map(|l| l.ip)
    }

    /// Wakes registered host `id`.
    ///
    /// # Errors
    /// NotFound (no such host), Invalid (a bad option, naming it), Conflict (no
    /// interface can broadcast, or nothing could be sent: the record is kept all the
    /// same), store errors.
    pub async fn wake_host(&self, id: u64, opts: &WakeOptions, source: &str) -> Result<WolRecord> {
        let h = self.hosts.get(id)?;
        let mac = normalise_mac(&h.mac).map_err(|e| ServiceError::Invalid(e.to_string()))?;
        self.wake(mac, Some(&h), opts, source).await
    }

    /// Wakes `mac` (the registered host with that MAC, if any, is named in the record and
    /// its address picks the interfaces).
    ///
    /// # Errors
    /// As [`WolService::wake_host`], without NotFound.
    pub async fn wake_mac(&self, mac: MacAddr, opts: &WakeOptions, source: &str) -> Result<WolRecord> {
        let h = self.hosts.by_mac(mac)?;
        self.wake(mac, h.as_ref(), opts, source).await
    }

    async fn wake(&self, mac: MacAddr, host: Option<&Host>, opts: &WakeOptions, source: &str) -> Result<WolRecord> {
        let repeat = opts.repeat.unwrap_or(self.config.repeat);
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(ServiceError::Invalid(format!("'repeat' must be 1-{MAX_REPEAT}")));
        }
        let addr = match host {
            Some(h) => self.host_addr(h).await,
            None => None,
        };
        let ifaces = self.choose(opts.interface.as_deref(), addr)?;
        let packet = magic_packet(mac, opts.password);
        let net = self.net();
        let mut sent = 0u32;
        let mut errors = Vec::new();
        let mut broadcasts = Vec::new();
        let mut ok = true;
        let plan: Vec<_> = ifaces
            .iter()
            .map(|i| (i.name.clone(), i.destinations(&self.config.ports)))
            .collect();
        let mut per_iface = vec![0u32; plan.len()];
        for r in 0..repeat {
            if r > 0 {
                tokio::time::sleep(REPEAT_GAP).await;
            }
            for (k, (name, dests)) in plan.iter().enumerate() {
                for d in dests {
                    match net.send(name, *d, &packet) {
                        Ok(()) => {
                            sent += 1;
                            per_iface[k] += 1;
                        }
                        Err(e) if r == 0 => errors.push(format!("{name} -> {d}: {e}")),
                        Err(_) => {}
                    }
                }
            }
        }
        for (k, (name, dests)) in plan.iter().enumerate() {
            ok &= per_iface[k] > 0;
            broadcasts.extend(dests.iter().map(|d| format!("{name}:{d}")));
        }
        let error = clip(&errors);
        let rec = self
            .history
            .record(WolRecord {
                id: 0,
                time: OffsetDateTime::now_utc(),
                mac: mac.to_string(),
                host_id: host.map(|h| h.id),
                host_name: host.map(|h| h.name.clone()),
                interfaces: plan.iter().map(|(n, _)| n.clone()).collect(),
                broadcasts,
                repeat,
                secureon: opts.password.is_some(),
                packets_sent: sent,
                actor: current_actor().user,
                source: source.to_string(),
                ok,
                error,
            })
            .await?;
        let (rkind, rid) = match host {
            Some(h) => ("host", h.id.to_string()),
            None => ("mac", rec.mac.clone()),
        };
        let who = host.map_or_else(|| rec.mac.clone(), |h| format!("host {} ({})", h.name, h.mac));
        let data = wake_data(&rec);
        if sent == 0 {
            self.events.publish(
                NewEvent::new(
                    EventKind::WolFailed,
                    format!("wake of {who} failed: nothing could be sent"),
                )
                .resource(rkind, &rid)
                .with(&data),
            );
            return Err(ServiceError::Conflict(format!(
                "the magic packet could not be sent (history record {}): {}",
                rec.id,
                rec.error.clone().unwrap_or_default()
            )));
        }
        self.events.publish(
            NewEvent::new(
                EventKind::WolSent,
                format!(
                    "magic packet for {who} sent on {} ({sent} datagrams)",
                    rec.interfaces.join(", ")
                ),
            )
            .resource(rkind, &rid)
            .with(&data),
        );
        Ok(rec)
    }

    /// Wakes hosts `ids` in order, pausing `stagger_ms` (default `[wol] stagger_ms`)
    /// between hosts whose wake was attempted; one result per id.
    ///
    /// # Errors
    /// Invalid: empty, more than 1000 or duplicate ids, a stagger above 60000 ms, a bad
    /// repeat. Per-host failures are in the results.
    pub async fn wake_batch(
        &self,
        ids: &[u64],
        stagger_ms: Option<u64>,
        opts: &WakeOptions,
    ) -> Result<Vec<WakeResult>> {
        if ids.is_empty() || ids.len() > MAX_BATCH {
            return Err(ServiceError::Invalid(format!("'ids' must hold 1-{MAX_BATCH} host ids")));
        }
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(ServiceError::Invalid("'ids' must not repeat a host id".into()));
        }
        let stagger = stagger_ms.unwrap_or(self.config.stagger_ms);
        if stagger > MAX_STAGGER_MS {
            return Err(ServiceError::Invalid(format!(
                "'stagger_ms' must be 0-{MAX_STAGGER_MS}"
            )));
        }
        if let Some(r) = opts.repeat {
            if !(1..=MAX_REPEAT).contains(&r) {
                return Err(ServiceError::Invalid(format!("'repeat' must be 1-{MAX_REPEAT}")));
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        let mut attempted = false;
        for &id in ids {
            let host = match self.hosts.get(id) {
                Ok(h) => h,
                Err(e) => {
                    out.push(WakeResult {
                        id,
                        ok: false,
                        record: None,
                        error: Some(e.to_string()),
                    });
                    continue;
                }
            };
            if attempted && stagger > 0 {
                tokio::time::sleep(Duration::from_millis(stagger)).await;
            }
            attempted = true;
            let mac = match normalise_mac(&host.mac) {
                Ok(m) => m,
                Err(e) => {
                    out.push(WakeResult {
                        id,
                        ok: false,
                        record: None,
                        error: Some(e.to_string()),
                    });
                    continue;
                }
            };
            out.push(match self.wake(mac, Some(&host), opts, "batch").await {
                Ok(rec) => WakeResult {
                    id,
                    ok: rec.ok,
                    error: rec.error.clone(),
                    record: Some(rec),
                },
                Err(ServiceError::Store(e)) => return Err(ServiceError::Store(e)),
                Err(e) => WakeResult {
                    id,
                    ok: false,
                    record: None,
                    error: Some(e.to_string()),
                },
            });
        }
        Ok(out)
    }

    // ---- history ----

    /// Every history record, newest first.
    ///
    /// # Errors
    /// Store errors.
    pub fn history(&self) -> Result<Vec<WolRecord>> {
        Ok(self.history.newest_first()?)
    }

    /// Deletes one history record, answering it.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete_record(&self, id: u64) -> Result<WolRecord> {
        self.history
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no WOL history record with id {id}")))
    }

    /// Deletes the whole history; answers how many records went.
    ///
    /// # Errors
    /// Store errors.
    pub async fn clear_history(&self) -> Result<usize> {
        let n = self.history.clear().await?;
        self.events.publish(
            NewEvent::new(
                EventKind::WolHistoryCleared,
                format!("WOL history cleared ({n} records)"),
            )
            .resource("wol_history", "")
            .with(&WolHistoryCleared::new(n as u64)),
        );
        Ok(n)
    }

    // ---- schedules ----

    /// Every schedule as the API shows it (with its next run), in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn schedules(&self) -> Result<Vec<ScheduleView>> {
        let now = (self.clock)();
        Ok(self
            .schedules
            .list()?
            .iter()
            .map(|s| ScheduleView::new(s, now))
            .collect())
    }

    /// Creates a schedule.
    ///
    /// # Errors
    /// Invalid (naming the field; every host id must exist), Conflict (already
    /// [`MAX_SCHEDULES`]), store errors.
    pub async fn create_schedule(&self, input: ScheduleInput) -> Result<ScheduleView> {
        let now = (self.clock)();
        let s = schedules::build(input, now)?;
        for id in &s.host_ids {
            if self.hosts.get(*id).is_err() {
                return Err(ServiceError::Invalid(format!("'host_ids': no host with id {id}")));
            }
        }
        let _w = self.write.lock().await;
        if self.schedules.len() >= MAX_SCHEDULES {
            return Err(ServiceError::Conflict(format!(
                "there are already {MAX_SCHEDULES} WOL schedules; delete one first"
            )));
        }
        let s = self.schedules.insert(s).await?;
        let v = ScheduleView::new(&s, now);
        self.events.publish(NewEvent::write(
            EventKind::WolScheduleCreated,
            "wol_schedule",
            s.id,
            "create",
            format!("WOL schedule {} ({:?}, {}) created", s.name, s.cron, s.timezone),
            None::<&ScheduleView>,
            Some(&v),
        ));
        Ok(v)
    }

    /// Deletes a schedule, answering it.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete_schedule(&self, id: u64) -> Result<ScheduleView> {
        let _w = self.write.lock().await;
        let s = self
            .schedules
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no WOL schedule with id {id}")))?;
        let v = ScheduleView::new(&s, (self.clock)());
        self.events.publish(NewEvent::write(
            EventKind::WolScheduleDeleted,
            "wol_schedule",
            s.id,
            "delete",
            format!("WOL schedule {} deleted", s.name),
            Some(&v),
            None::<&ScheduleView>,
        ));
        Ok(v)
    }

    /// Checks every schedule once at the clock's now: records missed slots, fires due
    /// ones. Returns how many fired.
    ///
    /// # Errors
    /// Store errors.
    pub async fn tick(&self) -> Result<usize> {
        let now = (self.clock)();
        let mut fired = 0;
        for s in self.schedules.list()? {
            match schedules::due(&s, self.started, now) {
                Due::Nothing => {}
                Due::Missed { last, count } => {
                    let _w = self.write.lock().await;
                    let Some(mut cur) = self.schedules.get(s.id)? else {
                        continue;
                    };
                    cur.last_slot = Some(last);
                    cur.missed += count;
                    cur.last_status = Some("missed".into());
                    let at = schedules::to_time(Timestamp::from_second(last).unwrap_or(now));
                    let msg = format!(
                        "{count} run(s) missed while the server was down, the last at {}",
                        at.format(&time::format_description::well_known::Rfc3339)
                            .unwrap_or_default()
                    );
                    cur.last_error = Some(msg.clone());
                    self.schedules.put(&cur).await?;
                    self.events.publish(
                        NewEvent::new(
                            EventKind::WolScheduleMissed,
                            format!("WOL schedule {}: {msg}", cur.name),
                        )
                        .resource("wol_schedule", cur.id)
                        .with(&WolScheduleMissed {
                            missed: count,
                            last_slot: last,
                        }),
                    );
                }
                Due::Fire(slot) => {
                    {
                        // The slot is stored first: never fired twice, even after a crash.
                        let _w = self.write.lock().await;
                        let Some(mut cur) = self.schedules.get(s.id)? else {
                            continue;
                        };
                        cur.last_slot = Some(slot);
                        self.schedules.put(&cur).await?;
                    }
                    fired += 1;
                    let (status, error) = self.run(&s).await?;
                    let _w = self.write.lock().await;
                    let Some(mut cur) = self.schedules.get(s.id)? else {
                        continue;
                    };
                    cur.last_run = Some(schedules::to_time(now));
                    cur.last_status = Some(status.into());
                    cur.last_error = error.clone();
                    self.schedules.put(&cur).await?;
                    self.events.publish(
                        NewEvent::new(
                            EventKind::WolScheduleFired,
                            format!("WOL schedule {} ran: {status}", cur.name),
                        )
                        .resource("wol_schedule", cur.id)
                        .with(&WolScheduleFired {
                            slot,
                            status: status.to_string(),
                            error,
                        }),
                    );
                }
            }
        }
        Ok(fired)
    }

    /// Wakes a schedule's targets (hosts, then MACs) with the default stagger; answers
    /// the status (`ok`, `partial`, `failed`) and the errors.
    async fn run(&self, s: &WolSchedule) -> Result<(&'static str, Option<String>)> {
        let source = format!("schedule:{}", s.id);
        let opts = WakeOptions::default();
        let stagger = Duration::from_millis(self.config.stagger_ms);
        let (mut good, mut errors) = (0usize, Vec::new());
        let total = s.host_ids.len() + s.macs.len();
        let mut first = true;
        let mut pause = || {
            let wait = !first && !stagger.is_zero();
            first = false;
            wait
        };
        for id in &s.host_ids {
            if pause() {
                tokio::time::sleep(stagger).await;
            }
            match self.wake_host(*id, &opts, &source).await {
                Ok(r) if r.ok => good += 1,
                Ok(r) => errors.push(format!("host {id}: {}", r.error.unwrap_or_default())),
                Err(ServiceError::Store(e)) => return Err(e.into()),
                Err(e) => errors.push(format!("host {id}: {e}")),
            }
        }
        for m in &s.macs {
            if pause() {
                tokio::time::sleep(stagger).await;
            }
            let Ok(mac) = normalise_mac(m) else {
                errors.push(format!("{m}: not a MAC"));
                continue;
            };
            match self.wake_mac(mac, &opts, &source).await {
                Ok(r) if r.ok => good += 1,
                Ok(r) => errors.push(format!("{m}: {}", r.error.unwrap_or_default())),
                Err(ServiceError::Store(e)) => return Err(e.into()),
                Err(e) => errors.push(format!("{m}: {e}")),
            }
        }
        let status = match good {
            g if g == total => "ok",
            0 => "failed",
            _ => "partial",
        };
        Ok((status, clip(&errors)))
    }

    /// Runs [`WolService::tick`] at the start of every second until `token` is cancelled.
    pub fn spawn_scheduler(self: &Arc<Self>, token: CancellationToken) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = me.tick().await {
                    tracing::error!("WOL schedule check failed: {e}");
                }
                let into = u64::from(Timestamp::now().subsec_nanosecond().unsigned_abs()) / 1_000_000;
                let wait = Duration::from_millis(1000 - into.min(999) + 5);
                tokio::select! {
                    () = token.cancelled() => break,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        });
    }
}

/// The `data` of `wol.sent` and `wol.failed`: the history record.
fn wake_data(rec: &WolRecord) -> WolWake {
    WolWake {
        id: rec.id,
        time: rec.time,
        mac: rec.mac.clone(),
        host_id: rec.host_id,
        host_name: rec.host_name.clone(),
        interfaces: rec.interfaces.clone(),
        broadcasts: rec.broadcasts.clone(),
        repeat: rec.repeat,
        secureon: rec.secureon,
        packets_sent: rec.packets_sent,
        actor: rec.actor.clone(),
        source: rec.source.clone(),
        ok: rec.ok,
        error: rec.error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::wol::{packet::MAGIC_LEN, sender::fake::FakeNetwork};
    use bootlane_boot::inventory::model::HostInput;
    use bootlane_dhcp::dhcp::leases::{now_secs, Lease};

    struct Lab {
        wol: Arc<WolService>,
        net: Arc<FakeNetwork>,
        hosts: Arc<HostService>,
        dhcp: Arc<DhcpControl>,
        events: Arc<EventBus>,
        store: Store,
        now: Arc<Mutex<Timestamp>>,
    }

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    async fn lab_with(config: WolConfig, net: FakeNetwork, start: &str) -> Lab {
        let store = Store::temporary();
        let events = EventBus::in_memory();
        let hosts = HostService::open(&store, Arc::new(|_| Ok(false)), events.clone()).unwrap();
        let dhcp = DhcpControl::open(&store, &Default::default(), events.clone())
            .await
            .unwrap();
        let net = Arc::new(net);
        let now = Arc::new(Mutex::new(ts(start)));
        let clock_now = now.clone();
        let wol = WolService::with_parts(
            &config,
            &store,
            hosts.clone(),
            dhcp.clone(),
            events.clone(),
            net.clone(),
            Arc::new(move || *clock_now.lock().unwrap()),
        )
        .unwrap();
        Lab {
            wol,
            net,
            hosts,
            dhcp,
            events,
            store,
            now,
        }
    }

    fn quick() -> WolConfig {
        WolConfig {
            repeat: 1,
            stagger_ms: 0,
            ..WolConfig::default()
        }
    }

    async fn host(l: &Lab, name: &str, mac: &str, ip: Option<&str>) -> Host {
        l.hosts
            .create(HostInput {
                name: Some(name.into()),
                mac: Some(mac.into()),
                ip: ip.map(|i| Some(i.to_string())),
                ..Default::default()
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn wake_goes_out_of_the_interface_holding_the_host_address() {
        let l = lab_with(quick(), FakeNetwork::new(), "2026-01-10T00:00:00Z").await;
        let mut sub = l.events.subscribe();
        let h = host(&l, "node1", "52:54:00:aa:bb:01", Some("192.168.7.40")).await;
        let opts = WakeOptions {
            repeat: Some(2),
            ..Default::default()
        };
        let rec = l.wol.wake_host(h.id, &opts, "api").await.unwrap();
        assert!(rec.ok);
        assert_eq!(rec.interfaces, ["eth1"]);
        assert_eq!(rec.broadcasts, ["eth1:192.168.7.255:9", "eth1:255.255.255.255:9"]);
        assert_eq!(rec.packets_sent, 4, "two destinations, twice");
        assert_eq!((rec.host_id, rec.host_name.as_deref()), (Some(h.id), Some("node1")));
        let sent = l.net.sent();
        assert_eq!(sent.len(), 4);
        assert!(sent.iter().all(|s| s.iface == "eth1" && s.payload.len() == MAGIC_LEN));
        assert_eq!(sent[0].payload, magic_packet(normalise_mac(&h.mac).unwrap(), None));
        assert_eq!(l.wol.history().unwrap(), std::slice::from_ref(&rec));
        let e = std::iter::from_fn(|| sub.rx.try_recv().ok())
            .find(|e| e.kind == "wol.sent")
            .expect("a wol.sent event");
        assert_eq!(
            (e.resource.as_deref(), e.resource_id.clone()),
            (Some("host"), Some(h.id.to_string()))
        );
        assert_eq!(e.data["mac"], "52:54:00:aa:bb:01");
    }

    #[tokio::test]
    async fn lease_address_then_all_interfaces_then_the_named_one() {
        let l = lab_with(quick(), FakeNetwork::new(), "2026-01-10T00:00:00Z").await;
        // No ip on the host: its DHCP lease (10.0.0.77) picks eth0.
        let h = host(&l, "node2", "52:54:00:aa:bb:02", None).await;
        let mac = normalise_mac(&h.mac).unwrap();
        let lease = Lease {
            id: 0,
            mac: h.mac.clone(),
            ip: "10.0.0.77".parse().unwrap(),
            subnet: "10.0.0.0/24".into(),
            hostname: None,
            arch: None,
            expires_at: now_secs() + 600,
            declined: false,
        };
        l.dhcp.leases().lock().await.bind(lease, mac).await.unwrap();
        let rec = l.wol.wake_host(h.id, &WakeOptions::default(), "api").await.unwrap();
        assert_eq!(rec.interfaces, ["eth0"]);
        // A bare MAC nobody knows: every interface.
        let other = normalise_mac("52:54:00:aa:bb:99").unwrap();
        let rec = l.wol.wake_mac(other, &WakeOptions::default(), "api").await.unwrap();
        assert_eq!(rec.interfaces, ["eth0", "eth1"]);
        assert_eq!(rec.host_id, None);
        // A named interface wins; an unknown one is a 400 naming the field.
        let opts = WakeOptions {
            interface: Some("eth1".into()),
            password: Some(SecureOn([1, 2, 3, 4, 5, 6])),
            ..Default::default()
        };
        let rec = l.wol.wake_host(h.id, &opts, "api").await.unwrap();
        assert_eq!(rec.interfaces, ["eth1"]);
        assert!(rec.secureon);
        assert_eq!(&l.net.sent().last().unwrap().payload[102..], &[1, 2, 3, 4, 5, 6]);
        let bad = WakeOptions {
            interface: Some("wlan9".into()),
            ..Default::default()
        };
        match l.wol.wake_host(h.id, &bad, "api").await {
            Err(ServiceError::Invalid(m)) => assert!(m.contains("'interface'"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            l.wol.wake_host(9999, &WakeOptions::default(), "api").await,
            Err(ServiceError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn allow_list_ports_and_failures() {
        let mut net = FakeNetwork::new();
        net.failing = vec!["eth0".into()];
        let config = WolConfig {
            ports: vec![9, 7],
            interfaces: vec!["eth0".into()],
            ..quick()
        };
        let l = lab_with(config, net, "2026-01-10T00:00:00Z").await;
        assert_eq!(
            l.wol.interfaces().iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["eth0"]
        );
        let mut sub = l.events.subscribe();
        let mac = normalise_mac("52:54:00:aa:bb:03").unwrap();
        match l.wol.wake_mac(mac, &WakeOptions::default(), "api").await {
            Err(ServiceError::Conflict(m)) => assert!(m.contains("Operation not permitted"), "{m}"),
            other => panic!("{other:?}"),
        }
        // The failure is in the history with the four destinations it tried.
        let h = l.wol.history().unwrap();
        assert_eq!(h.len(), 1);
        assert!(!h[0].ok);
        assert_eq!(h[0].broadcasts.len(), 4);
        assert!(std::iter::from_fn(|| sub.rx.try_recv().ok()).any(|e| e.kind == "wol.failed"));
        assert_eq!(l.wol.clear_history().await.unwrap(), 1);
        assert!(l.wol.history().unwrap().is_empty());
    }

    #[tokio::test]
    async fn batch_wakes_in_order_with_the_stagger() {
        let l = lab_with(quick(), FakeNetwork::new(), "2026-01-10T00:00:00Z").await;
        let a = host(&l, "a", "52:54:00:00:0a:01", Some("10.0.0.11")).await;
        let b = host(&l, "b", "52:54:00:00:0a:02", Some("10.0.0.12")).await;
        let t0 = std::time::Instant::now();
        let r = l
            .wol
            .wake_batch(&[b.id, 4242, a.id], Some(120), &WakeOptions::default())
            .await
            .unwrap();
        assert_eq!(
            r.iter().map(|i| (i.id, i.ok)).collect::<Vec<_>>(),
            [(b.id, true), (4242, false), (a.id, true)]
        );
        assert!(r[1].error.as_deref().unwrap().contains("no host with id 4242"));
        assert!(t0.elapsed() >= Duration::from_millis(120));
        let sent = l.net.sent();
        let first_b = sent
            .iter()
            .find(|s| s.payload[6..12] == [0x52, 0x54, 0, 0, 0x0a, 2])
            .unwrap();
        let first_a = sent
            .iter()
            .find(|s| s.payload[6..12] == [0x52, 0x54, 0, 0, 0x0a, 1])
            .unwrap();
        assert!(first_a.at.duration_since(first_b.at) >= Duration::from_millis(120));
        for (ids, st, field) in [
            (&[][..], None, "'ids'"),
            (&[1, 1][..], None, "'ids'"),
            (&[1][..], Some(60_001), "'stagger_ms'"),
        ] {
            match l.wol.wake_batch(ids, st, &WakeOptions::default()).await {
                Err(ServiceError::Invalid(m)) => assert!(m.contains(field), "{m}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn schedule_fires_once_per_slot_and_reports_missed_runs_after_a_restart() {
        let l = lab_with(quick(), FakeNetwork::new(), "2026-01-10T10:00:00Z").await;
        let h = host(&l, "sched", "52:54:00:00:0b:01", Some("10.0.0.30")).await;
        let v = l
            .wol
            .create_schedule(ScheduleInput {
                name: "morning".into(),
                cron: "0 * * * * *".into(),
                timezone: Some("UTC".into()),
                host_ids: vec![h.id],
                macs: vec!["52:54:00:00:0b:02".into()],
                enabled: None,
            })
            .await
            .unwrap();
        assert_eq!(v.next_run.as_deref(), Some("2026-01-10T10:01:00+00:00"));
        let set = |t: &str| *l.now.lock().unwrap() = ts(t);
        set("2026-01-10T10:00:59Z");
        assert_eq!(l.wol.tick().await.unwrap(), 0);
        set("2026-01-10T10:01:00Z");
        assert_eq!(l.wol.tick().await.unwrap(), 1);
        set("2026-01-10T10:01:01Z");
        assert_eq!(l.wol.tick().await.unwrap(), 0, "never twice for one slot");
        let hist = l.wol.history().unwrap();
        assert_eq!(hist.len(), 2, "the host and the MAC");
        assert!(hist
            .iter()
            .all(|r| r.source == format!("schedule:{}", v.id) && r.actor == "system"));
        let s = &l.wol.schedules().unwrap()[0];
        assert_eq!(s.last_status.as_deref(), Some("ok"));
        assert_eq!(s.next_run.as_deref(), Some("2026-01-10T10:02:00+00:00"));

        // "Restart" at 10:05:30 on the same store: 10:02-10:05 were missed, not fired.
        let now = Arc::new(Mutex::new(ts("2026-01-10T10:05:30Z")));
        let clock_now = now.clone();
        let wol2 = WolService::with_parts(
            &quick(),
            &l.store,
            l.hosts.clone(),
            l.dhcp.clone(),
            l.events.clone(),
            l.net.clone(),
            Arc::new(move || *clock_now.lock().unwrap()),
        )
        .unwrap();
        let before = l.net.sent().len();
        assert_eq!(wol2.tick().await.unwrap(), 0);
        assert_eq!(l.net.sent().len(), before, "nothing fired late");
        let s = &wol2.schedules().unwrap()[0];
        assert_eq!(s.last_status.as_deref(), Some("missed"));
        assert_eq!(s.missed, 4);
        assert!(s.last_error.as_deref().unwrap().contains("4 run(s) missed"));
        *now.lock().unwrap() = ts("2026-01-10T10:06:00Z");
        assert_eq!(wol2.tick().await.unwrap(), 1);
        assert_eq!(wol2.schedules().unwrap()[0].last_status.as_deref(), Some("ok"));
        // Deleted schedules stop firing.
        wol2.delete_schedule(v.id).await.unwrap();
        *now.lock().unwrap() = ts("2026-01-10T10:07:00Z");
        assert_eq!(wol2.tick().await.unwrap(), 0);
        assert!(matches!(
            wol2.delete_schedule(v.id).await,
            Err(ServiceError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn schedule_checks_host_ids_and_the_limit() {
        let l = lab_with(quick(), FakeNetwork::new(), "2026-01-10T10:00:00Z").await;
        let input = |host_ids: Vec<u64>| ScheduleInput {
            name: "x".into(),
            cron: "0 6 * * *".into(),
            host_ids,
            macs: vec!["52:54:00:00:0c:01".into()],
            ..Default::default()
        };
        match l.wol.create_schedule(input(vec![77])).await {
            Err(ServiceError::Invalid(m)) => assert!(m.contains("'host_ids'"), "{m}"),
            other => panic!("{other:?}"),
        }
        for _ in 0..MAX_SCHEDULES {
            l.wol.create_schedule(input(vec![])).await.unwrap();
        }
        assert!(matches!(
            l.wol.create_schedule(input(vec![])).await,
            Err(ServiceError::Conflict(_))
        ));
    }

    #[test]
    fn the_wake_data_is_the_history_record_as_it_was_serialised() {
        for (host, error) in [
            (Some((3u64, "pc3")), None),
            (None, Some("eth1 -> 10.0.1.255:9: no route")),
        ] {
            let rec = WolRecord {
                id: 41,
                time: OffsetDateTime::now_utc(),
                mac: "52:54:00:77:00:07".into(),
                host_id: host.map(|h| h.0),
                host_name: host.map(|h| h.1.to_string()),
                interfaces: vec!["eth0".into(), "eth1".into()],
                broadcasts: vec!["eth0:10.0.0.255:9".into()],
                repeat: 3,
                secureon: true,
                packets_sent: 3,
                actor: "admin".into(),
                source: "schedule:2".into(),
                ok: error.is_none(),
                error: error.map(String::from),
            };
            assert_eq!(
                serde_json::to_value(wake_data(&rec)).unwrap(),
                serde_json::to_value(&rec).unwrap()
            );
        }
    }
}
