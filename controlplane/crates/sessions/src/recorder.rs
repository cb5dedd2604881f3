//! The recorder ([`Sessions`]): a thread of its own takes what the DHCP server handled
//! (through its bounded queue, `bootlane_dhcp::dhcp::trace`) and the boot path's events
//! (through the event bus), and the HTTP boot routes report files they did not have
//! ([`Sessions::http_missing`]). Each input becomes a step ([`crate::steps`]) of its
//! machine's open session, found by MAC, or by client address through the addresses
//! DHCP acknowledged (at most [`MAX_ADDRESSES`] remembered); a machine only known by its
//! address gets a session keyed by it, re-keyed to the MAC once one is seen for that
//! address.
//!
//! A new session begins with a firmware PXE DHCPDISCOVER once the open one got past DHCP
//! (an iPXE one once it got a script or menu), with a power-on or wake-on-LAN, or with a
//! boot request of a machine with no open session. An open session is judged when it is
//! read (lists, one session, the live stream), not at each step. A session ends after
//! `[boot_sessions] quiet_secs` without a step (`installer_wait_secs` once its installer
//! fetched the answer file); it is then judged once more ([`crate::judge`]), counted in
//! `bootlane_boot_sessions_total{verdict}` and appended to the `boot_sessions` journal,
//! whose retention is `retention_count` and `retention_days`. Bounded: [`MAX_OPEN`] open
//! sessions (the oldest ends first), [`crate::model::MAX_STEPS`] steps per session,
//! [`RECENT`] ended sessions in memory; an ended session's line is written when it ends
//! and reaches the journal with the others of the same second in one append. Live
//! subscribers get each change ([`Sessions::subscribe`]); a slow one lags, never slowing
//! the recorder.

use std::{
    collections::{HashMap, VecDeque},
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::Value;
use time::OffsetDateTime;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::{
    config::SessionsConfig,
    judge::{judge, judge_progress, progress},
    model::{BootSession, BootStep, SessionState, SessionUpdate, StoredSession, Verdict, MAX_STEPS},
    steps::{dhcp_opens, from_dhcp, from_event, http_missing, Names, Observed, Opens},
};
use bootlane_boot::{
    boot::catalog::{BootCatalog, EntryType},
    inventory::service::HostService,
};
use bootlane_core::{
    events::{Event, EventBus},
    net::types::MacAddr,
    store::{
        journal::{Batch, Journal},
        Store, StoreError, Table,
    },
};
use bootlane_dhcp::dhcp::trace::DhcpSeen;

/// The most open sessions.
pub const MAX_OPEN: usize = 4096;
/// The most address → MAC pairs remembered.
pub const MAX_ADDRESSES: usize = 65_536;
/// Ended sessions kept in memory (besides the journal).
pub const RECENT: usize = 256;
/// The recorder thread's nice value (0 is a normal thread's, 19 the lowest): recording
/// is background work and yields the CPU to the threads that answer DHCP, TFTP, HTTP
/// and DNS, so it never delays an answer. Its queue absorbs what comes in meanwhile; only
/// a server with no CPU to spare for more than a second fills it, and then DHCP messages are
/// left out of sessions and counted (`bootlane_boot_session_steps_dropped_total`).
pub const RECORDER_NICE: i32 = 10;

/// The largest journal batch buffer kept for reuse (bytes).
const KEEP_BATCH: usize = 16 << 20;
/// How often the recorder takes in what queued up (50 ms: live views lag at most this).
pub const DRAIN: Duration = Duration::from_millis(50);
/// Counter `{verdict}`: boot sessions ended, by verdict.
pub const SESSIONS_TOTAL: &str = "bootlane_boot_sessions_total";
/// Gauge: boot sessions open (as of the recorder's last [`DRAIN`]).
pub const SESSIONS_OPEN: &str = "bootlane_boot_sessions_open";

/// Which sessions a list asks for (every field optional; all given must match).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// The machine's MAC (lower-case colon form).
    pub mac: Option<String>,
    /// The registered host's name.
    pub host: Option<String>,
    /// Open or ended.
    pub state: Option<SessionState>,
    /// The verdict.
    pub verdict: Option<Verdict>,
    /// Sessions updated at or after this time.
    pub since: Option<OffsetDateTime>,
    /// Sessions started at or before this time.
    pub until: Option<OffsetDateTime>,
}

impl Filter {
    fn matches(&self, s: &BootSession) -> bool {
        self.mac.as_ref().is_none_or(|m| s.mac.as_deref() == Some(m.as_str()))
            && self.host.as_ref().is_none_or(|h| s.host.as_deref() == Some(h.as_str()))
            && self.state.is_none_or(|x| x == s.state)
            && self.verdict.is_none_or(|x| x == s.verdict)
            && self.since.is_none_or(|t| s.updated >= t)
            && self.until.is_none_or(|t| s.started <= t)
    }
}

/// What the profile's default entry will fetch: file names compared with TFTP and HTTP
/// requests to tell the kernel and the initrd.
#[derive(Debug, Clone, Default)]
struct Expect {
    kernel: Option<String>,
    initrds: Vec<String>,
}

/// What an open session is found by: its machine's MAC, or its address while no MAC is
/// known for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Mac(MacAddr),
    Ip(IpAddr),
}

struct Open {
    session: BootSession,
    expect: Expect,
    discover_at: Option<OffsetDateTime>,
    /// The installer fetched its answer file and has not reported an end.
    waiting_installer: bool,
}

#[derive(Default)]
struct State {
    /// Boxed: the table stays a few pages (looked up for every step) and a session is
    /// not copied as it enters and leaves it.
    open: HashMap<Key, Box<Open>>,
    /// Open sessions in the order they began (`(id, key)`; entries of sessions that ended
    /// meanwhile are skipped when met): the oldest ends first when [`MAX_OPEN`] are open.
    order: VecDeque<(u64, Key)>,
    ip_mac: HashMap<IpAddr, MacAddr>,
    recent: VecDeque<BootSession>,
    /// The journal lines of ended sessions not yet in the journal, each written when its
    /// session ended (appended each second, in one write).
    pending: Batch,
    /// The lines being appended to the journal now.
    in_flight: Arc<Batch>,
    /// The last appended batch, emptied, for the next one (its buffers kept).
    spare: Batch,
}

impl State {
    fn remember(&mut self, ip: IpAddr, mac: MacAddr) {
        if self.ip_mac.len() >= MAX_ADDRESSES && !self.ip_mac.contains_key(&ip) {
            self.ip_mac.clear();
        }
        self.ip_mac.insert(ip, mac);
    }
}

/// The recorder's meters, registered once when it opens (a registry lookup for each use
/// would cost every step).
struct Meters {
    open: metrics::Gauge,
    kernel: metrics::Histogram,
    /// [`SESSIONS_TOTAL`] by verdict, indexed by `Verdict as usize` ([`Verdict::ALL`]'s
    /// order).
    ended: [metrics::Counter; Verdict::ALL.len()],
}

/// The boot sessions: recorder, memory of the open ones and the journal of ended ones.
pub struct Sessions {
    meters: Meters,
    cfg: SessionsConfig,
    store: Store,
    journal: Journal<StoredSession>,
    hosts: Option<Arc<HostService>>,
    catalog: Option<Arc<BootCatalog>>,
    state: Mutex<State>,
    /// The DHCP steps' shared text (taken only by the recorder's thread).
    names: Mutex<Names>,
    updates: broadcast::Sender<Arc<SessionUpdate>>,
}

fn base(name: &str) -> &str {
    let name = name.split(['?', '#']).next().unwrap_or(name);
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// `kernel`, `initrd` or `None` for a file fetched during a boot: by the names in the
/// served profile's default entry, else by the usual names (`vmlinuz*`, `linux`,
/// `bzImage`, `kernel*`; `initrd*`, `initramfs*`).
fn role(file: &str, expect: &Expect) -> Option<&'static str> {
    let b = base(file);
    if expect.kernel.as_deref().is_some_and(|k| base(k) == b) {
        return Some("kernel");
    }
    if expect.initrds.iter().any(|i| base(i) == b) {
        return Some("initrd");
    }
    let l = b.to_ascii_lowercase();
    if l.starts_with("vmlinuz") || l == "linux" || l.contains("bzimage") || l.starts_with("kernel") {
        Some("kernel")
    } else if l.starts_with("initrd") || l.starts_with("initramfs") {
        Some("initrd")
    } else {
        None
    }
}

impl Sessions {
    /// Opens the `boot_sessions` journal of `store` (sessions a backup restored into the
    /// database move back into it) with `cfg`'s retention; `hosts` names machines and
    /// `catalog` tells what a profile's default entry fetches.
    ///
    /// # Errors
    /// Store errors opening the journal.
    pub fn open(
        store: &Store,
        cfg: SessionsConfig,
        hosts: Option<Arc<HostService>>,
        catalog: Option<Arc<BootCatalog>>,
    ) -> Result<Arc<Self>, StoreError> {
        metrics::describe_counter!(SESSIONS_TOTAL, "Boot sessions ended, by verdict.");
        metrics::describe_gauge!(SESSIONS_OPEN, "Boot sessions open.");
        metrics::describe_histogram!(
            bootlane_core::metrics::BOOT_KERNEL_SECONDS,
            metrics::Unit::Seconds,
            "Time from a boot session's first DHCPDISCOVER to its kernel sent."
        );
        metrics::describe_counter!(
            bootlane_dhcp::dhcp::trace::STEPS_DROPPED,
            "DHCP messages left out of boot sessions (the recorder's queue was full)."
        );
        let meters = Meters {
            open: metrics::gauge!(SESSIONS_OPEN),
            kernel: metrics::histogram!(bootlane_core::metrics::BOOT_KERNEL_SECONDS),
            // Each verdict's series starts at 0, so `increase()` sees the first session.
            ended: Verdict::ALL.map(|v| {
                let c = metrics::counter!(SESSIONS_TOTAL, "verdict" => v.as_str());
                c.increment(0);
                c
            }),
        };
        let journal: Journal<StoredSession> = store.journal(|s: &StoredSession| s.session.updated)?;
        let restored: Table<StoredSession> = store.table()?;
        if !restored.is_empty() {
            journal.append(&restored.list()?)?;
            restored.clear()?;
        }
        Ok(Arc::new(Self {
            meters,
            cfg,
            store: store.clone(),
            journal,
            hosts,
            catalog,
            state: Mutex::new(State::default()),
            names: Mutex::default(),
            updates: broadcast::channel(1024).0,
        }))
    }

    /// The settings it runs with.
    pub fn config(&self) -> &SessionsConfig {
        &self.cfg
    }

    /// Live changes: each new step with its session's summary, and each session ended.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SessionUpdate>> {
        self.updates.subscribe()
    }

    /// Runs the recorder on a thread of its own (`boot-sessions`, at nice
    /// [`RECORDER_NICE`]) until `token` is cancelled or the last other holder of the
    /// recorder drops it: every [`DRAIN`] it
    /// takes what queued up from `dhcp` (the DHCP server's trace queue) and `events`
    /// (polled, so a DHCP message or an event never wakes the recorder: publishers pay no
    /// wake-up), every second it ends quiet sessions and appends the lines of the ended
    /// ones to the journal (one write and a file sync), and every minute it applies the
    /// retention. Its own thread keeps that work and the sync off the async workers that
    /// answer DHCP, TFTP and HTTP. Open sessions are stored as they are when it stops.
    ///
    /// # Errors
    /// The operating system's error when it refuses a new thread.
    pub fn spawn(
        self: &Arc<Self>,
        events: &EventBus,
        mut dhcp: mpsc::Receiver<DhcpSeen>,
        token: CancellationToken,
    ) -> std::io::Result<()> {
        let me = Arc::downgrade(self);
        let mut rx = events.subscribe().rx;
        let per_sec = (1000 / DRAIN.as_millis()).max(1) as u64;
        std::thread::Builder::new()
            .name("boot-sessions".into())
            .spawn(move || {
                // SAFETY: setpriority(2) on this thread's own id; no memory is shared. A
                // failure (EACCES) leaves the thread at normal priority.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, RECORDER_NICE);
                }
                let mut n = 0u64;
                let mut next = std::time::Instant::now();
                loop {
                    next += DRAIN;
                    let now = std::time::Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        // Behind (a long sync): start the beat again from now.
                        next = now;
                    }
                    let Some(me) = me.upgrade() else { return };
                    if token.is_cancelled() {
                        me.end_all();
                        return;
                    }
                    while let Ok(s) = dhcp.try_recv() {
                        me.dhcp(s);
                    }
                    loop {
                        match rx.try_recv() {
                            Ok(e) => me.event(&e),
                            Err(broadcast::error::TryRecvError::Lagged(k)) => {
                                tracing::debug!("boot sessions missed {k} events");
                            }
                            Err(_) => break,
                        }
                    }
                    let open = me.state.lock().expect("sessions lock").open.len();
                    me.meters.open.set(open as f64);
                    n += 1;
                    if n.is_multiple_of(per_sec) {
                        me.tick(OffsetDateTime::now_utc());
                    }
                    if n.is_multiple_of(60 * per_sec) {
                        me.prune();
                    }
                }
            })
            .map(drop)
    }

    /// One DHCP message: a step when it may begin a session or its machine has one open
    /// (the step remembers the address an ACK gave); otherwise only that address is
    /// remembered (cheap: no step is built).
    fn dhcp(&self, s: DhcpSeen) {
        if dhcp_opens(&s) == Opens::No {
            let mut st = self.state.lock().expect("sessions lock");
            if !st.open.contains_key(&Key::Mac(s.mac)) {
                if let (Some("ack"), Some(ip)) = (s.reply, s.yiaddr) {
                    st.remember(IpAddr::V4(ip), s.mac);
                }
                return;
            }
        }
        let o = from_dhcp(s, &mut self.names.lock().expect("names lock"));
        self.observe(o);
    }

    /// One event of the boot path (DHCPv4 lease events are not read: the DHCP queue
    /// carries the same DHCPACKs).
    fn event(&self, e: &Event) {
        if let Some(o) = from_event(e) {
            self.observe(o);
        }
    }

    /// Records an HTTP boot request for a file the server does not have (a 404) from
    /// `ip`.
    pub fn http_missing(&self, ip: Option<IpAddr>, file: &str) {
        self.observe(http_missing(ip, file));
    }

    fn host_of(&self, mac: MacAddr) -> Option<String> {
        self.hosts.as_ref()?.by_mac(mac).ok().flatten().map(|h| h.name)
    }

    fn expect(&self, profile: &str) -> (Expect, bool) {
        let Some(p) = self
            .catalog
            .as_ref()
            .and_then(|c| c.profiles().ok())
            .and_then(|ps| ps.into_iter().find(|p| p.name == profile))
        else {
            return (Expect::default(), false);
        };
        let Some(e) = p.entries.iter().find(|e| e.is_default).or(p.entries.first()) else {
            return (Expect::default(), false);
        };
        (
            Expect {
                kernel: e.kernel.clone(),
                initrds: e.initrds.clone(),
            },
            e.kind == EntryType::Local,
        )
    }

    /// Adds one observed step to its machine's session (beginning one when it may).
    pub fn observe(&self, mut o: Observed) {
        if o.mac.is_none() {
            if let (Some(id), Some(h)) = (o.host_id, self.hosts.as_ref()) {
                o.mac = h.get(id).ok().and_then(|h| h.mac.parse().ok());
            }
        }
        let mut ended = Vec::new();
        let update = {
            let mut st = self.state.lock().expect("sessions lock");
            if let (Some(mac), Some(ip)) = (o.mac, o.ip) {
                st.remember(ip, mac);
            }
            let mac = o.mac.or_else(|| o.ip.and_then(|ip| st.ip_mac.get(&ip).copied()));
            let key = match (mac, o.ip) {
                (Some(m), _) => Key::Mac(m),
                (None, Some(ip)) => Key::Ip(ip),
                (None, None) => return,
            };
            if let (Some(m), Some(ip)) = (mac, o.ip) {
                if let Some(mut s) = st.open.remove(&Key::Ip(ip)) {
                    s.session.mac = Some(m.to_string());
                    s.session.host = self.host_of(m);
                    if let Some(old) = st.open.insert(key, s) {
                        ended.push(old);
                    }
                }
            }
            let begin = match (st.open.get(&key), o.opens) {
                (None, Opens::No) => return,
                (None, _) | (Some(_), Opens::Always) => true,
                (Some(s), Opens::Firmware) => progress(&s.session.steps).past_dhcp,
                (Some(s), Opens::Ipxe) => progress(&s.session.steps).script.is_some(),
                (Some(_), _) => false,
            };
            if begin {
                if let Some(old) = st.open.remove(&key) {
                    ended.push(old);
                }
                while st.open.len() >= MAX_OPEN {
                    let Some((id, k)) = st.order.pop_front() else { break };
                    if st.open.get(&k).is_some_and(|o| o.session.id == id) {
                        ended.extend(st.open.remove(&k));
                    }
                }
                let Ok(id) = self.store.next_id() else { return };
                if st.order.len() >= 2 * MAX_OPEN {
                    let State { order, open, .. } = &mut *st;
                    order.retain(|(id, k)| open.get(k).is_some_and(|o| o.session.id == *id));
                }
                st.order.push_back((id, key));
                let host = mac.and_then(|m| self.host_of(m));
                st.open.insert(
                    key,
                    Box::new(Open {
                        session: BootSession {
                            id,
                            mac: mac.map(|m| m.to_string()),
                            ip: None,
                            host,
                            started: o.at,
                            updated: o.at,
                            state: SessionState::Open,
                            verdict: Verdict::InProgress,
                            reason: String::new(),
                            kernel_ms: None,
                            step_count: 0,
                            steps_dropped: 0,
                            // Room for a DHCP exchange (a step is a few hundred bytes: the
                            // default first growth would be four).
                            steps: Vec::with_capacity(2),
                        },
                        expect: Expect::default(),
                        discover_at: None,
                        waiting_installer: false,
                    }),
                );
            }
            let Some(s) = st.open.get_mut(&key) else { return };
            if o.kind == "ipxe" || o.kind == "menu" {
                if let Some(p) = o.details.str("profile") {
                    let (expect, local) = self.expect(p);
                    s.expect = expect;
                    o.details.set("local", Value::Bool(local));
                    if local {
                        o.summary.push_str(" (default entry: the local disk)");
                    }
                }
                if let Some(h) = o.details.str("host") {
                    s.session.host = Some(h.to_string());
                }
            }
            if matches!(o.kind, "http" | "tftp") && o.ok {
                if let Some(r) = o.details.str("file").and_then(|f| role(f, &s.expect)) {
                    o.details.set("role", Value::String(r.into()));
                }
            }
            if o.kind == "dhcp" && o.details.dhcp().is_some_and(|d| d.message == "discover") {
                s.discover_at.get_or_insert(o.at);
            }
            if o.details.str("role") == Some("kernel") && s.session.kernel_ms.is_none() {
                if let Some(d) = s.discover_at {
                    let ms = (o.at - d).whole_milliseconds().max(0) as u64;
                    s.session.kernel_ms = Some(ms);
                    self.meters.kernel.record(ms as f64 / 1000.0);
                }
            }
            if let Some(ip) = o.ip {
                s.session.ip = Some(ip);
            }
            let start = o.at - time::Duration::milliseconds(o.duration_ms.unwrap_or(0) as i64);
            // Inputs reach the recorder by different paths (the DHCP queue, the event bus,
            // the HTTP routes) and not always in the order they happened: a step that began
            // before the session did moves its start, and every offset with it.
            if start < s.session.started {
                s.session.started = start;
                for st in &mut s.session.steps {
                    let b = st.at - time::Duration::milliseconds(st.duration_ms.unwrap_or(0) as i64);
                    st.offset_ms = (b - start).whole_milliseconds().max(0) as u64;
                }
            }
            let kind = o.kind;
            let step = BootStep {
                at: o.at,
                offset_ms: (start - s.session.started).whole_milliseconds().max(0) as u64,
                duration_ms: o.duration_ms,
                kind: o.kind.into(),
                ok: o.ok,
                summary: o.summary,
                details: o.details,
            };
            s.session.updated = s.session.updated.max(o.at);
            s.session.step_count += 1;
            // Live subscribers get a copy; without any, nothing is copied.
            let subscribed = self.updates.receiver_count() > 0;
            let copy = subscribed.then(|| {
                let mut c = step.clone();
                c.fill_summary();
                c
            });
            if s.session.steps.len() < MAX_STEPS {
                // In time order, so the verdict reads the steps as they happened.
                let at = s.session.steps.partition_point(|x| x.at <= step.at);
                s.session.steps.insert(at, step);
            } else {
                s.session.steps_dropped += 1;
            }
            // Only an installer step changes whether the session waits for the installer.
            // The verdict of an open session is judged when it is read ([`Self::judged`]),
            // and here only for live subscribers.
            if kind != "installer" && !subscribed {
                None
            } else {
                let p = progress(&s.session.steps);
                s.waiting_installer = p.answer && p.report.is_none();
                subscribed.then(|| {
                    (s.session.verdict, s.session.reason) = judge_progress(&p, false, self.wait_min(s));
                    Arc::new(SessionUpdate {
                        session: s.session.summary(),
                        step: copy,
                    })
                })
            }
        };
        if let Some(u) = update {
            let _ = self.updates.send(u);
        }
        self.finish(ended);
    }

    /// Open session `o` as of now, judged (its steps judge it when read, not as they
    /// come); with its steps or without (a summary).
    fn judged(&self, o: &Open, steps: bool) -> BootSession {
        let mut s = if steps { o.session.clone() } else { o.session.summary() };
        (s.verdict, s.reason) = judge(&o.session.steps, false, self.wait_min(o));
        s
    }

    fn wait_min(&self, s: &Open) -> u64 {
        (if s.waiting_installer {
            self.cfg.installer_wait_secs
        } else {
            self.cfg.quiet_secs
        })
        .div_ceil(60)
    }

    /// Ends the sessions quiet since before `now` less their wait and stores the ended
    /// ones.
    pub fn tick(&self, now: OffsetDateTime) {
        let ended: Vec<Box<Open>> = {
            let mut st = self.state.lock().expect("sessions lock");
            let due: Vec<Key> = st
                .open
                .iter()
                .filter(|(_, s)| {
                    let wait = if s.waiting_installer {
                        self.cfg.installer_wait_secs
                    } else {
                        self.cfg.quiet_secs
                    };
                    now - s.session.updated >= time::Duration::seconds(wait as i64)
                })
                .map(|(k, _)| *k)
                .collect();
            due.iter().filter_map(|k| st.open.remove(k)).collect()
        };
        self.finish(ended);
        self.flush();
    }

    fn end_all(&self) {
        let all: Vec<Box<Open>> = self
            .state
            .lock()
            .expect("sessions lock")
            .open
            .drain()
            .map(|(_, s)| s)
            .collect();
        self.finish(all);
        self.flush();
    }

    /// Judges `ended` as over, encodes each one's journal line into the pending batch
    /// while the session is in the cache, and keeps its summary in memory;
    /// [`Self::flush`] appends the batch.
    fn finish(&self, ended: impl IntoIterator<Item = Box<Open>>) {
        for o in ended {
            let Open {
                session: mut s,
                waiting_installer,
                ..
            } = *o;
            let wait = if waiting_installer {
                self.cfg.installer_wait_secs
            } else {
                self.cfg.quiet_secs
            };
            (s.verdict, s.reason) = judge(&s.steps, true, wait.div_ceil(60));
            s.state = SessionState::Ended;
            self.meters.ended[s.verdict as usize].increment(1);
            if self.updates.receiver_count() > 0 {
                let _ = self.updates.send(Arc::new(SessionUpdate {
                    session: s.summary(),
                    step: None,
                }));
            }
            let mut st = self.state.lock().expect("sessions lock");
            // Under the lock: lines enter the batch in the order of their ids.
            match self.store.next_id() {
                Ok(seq) => {
                    let stored = StoredSession { seq, session: s };
                    let line = st.pending.push(seq, stored.session.updated, |out| {
                        Ok(crate::stored::encode(&stored, out)?)
                    });
                    if let Err(e) = line {
                        tracing::warn!("boot session {} not stored: {e}", stored.session.id);
                    }
                    s = stored.session;
                }
                Err(e) => tracing::warn!("boot session {} not stored: {e}", s.id),
            }
            // The summary kept in memory is the session without its steps.
            s.steps = Vec::new();
            st.recent.push_front(s);
            st.recent.truncate(RECENT);
        }
    }

    /// Appends the lines of the ended sessions not stored yet to the journal (one write
    /// and sync); they stay readable ([`Sessions::get`]) while the write runs.
    fn flush(&self) {
        let batch = {
            let mut st = self.state.lock().expect("sessions lock");
            if st.pending.is_empty() {
                return;
            }
            let spare = std::mem::take(&mut st.spare);
            st.in_flight = Arc::new(std::mem::replace(&mut st.pending, spare));
            st.in_flight.clone()
        };
        if let Err(e) = self.journal.append_batch(&batch) {
            tracing::warn!("storing {} ended boot sessions failed: {e}", batch.len());
        }
        let mut st = self.state.lock().expect("sessions lock");
        st.in_flight = Arc::default();
        // The next batch reuses this one's buffers (a storm's batch of a few MB is not
        // allocated and faulted in anew each second), unless it grew past KEEP_BATCH.
        if let Ok(mut b) = Arc::try_unwrap(batch) {
            if b.capacity() <= KEEP_BATCH {
                b.clear();
                st.spare = b;
            }
        }
    }

    fn prune(&self) {
        let age = time::Duration::days(i64::from(self.cfg.retention_days));
        if let Err(e) = self.journal.prune(self.cfg.retention_count, age) {
            tracing::warn!("boot session retention failed: {e}");
        }
    }

    /// Up to `limit` sessions matching `f`, without their steps: the open ones first
    /// (newest first), then ended ones, newest ended first.
    ///
    /// # Errors
    /// I/O errors reading the journal.
    pub fn list(&self, f: &Filter, limit: usize) -> Result<Vec<BootSession>, StoreError> {
        let (mut out, recent) = {
            let st = self.state.lock().expect("sessions lock");
            let mut open: Vec<BootSession> = st
                .open
                .values()
                .map(|o| self.judged(o, false))
                .filter(|s| f.matches(s))
                .collect();
            open.sort_by_key(|s| std::cmp::Reverse(s.started));
            (open, st.recent.iter().map(BootSession::summary).collect::<Vec<_>>())
        };
        let mut seen: std::collections::HashSet<u64> = out.iter().map(|s| s.id).collect();
        let stored = self.journal.newest_first().map(|r| r.map(|s| s.session.summary()));
        for s in recent.into_iter().map(Ok).chain(stored) {
            if out.len() >= limit {
                break;
            }
            let s = s?;
            if f.matches(&s) && seen.insert(s.id) {
                out.push(s);
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// One session with its steps (every summary written).
    ///
    /// # Errors
    /// I/O errors reading the journal.
    pub fn get(&self, id: u64) -> Result<Option<BootSession>, StoreError> {
        let mut found = self.find(id)?;
        if let Some(s) = &mut found {
            s.fill_summaries();
        }
        Ok(found)
    }

    fn find(&self, id: u64) -> Result<Option<BootSession>, StoreError> {
        {
            let st = self.state.lock().expect("sessions lock");
            if let Some(o) = st.open.values().find(|o| o.session.id == id) {
                return Ok(Some(self.judged(o, true)));
            }
            let line = st
                .pending
                .lines()
                .chain(st.in_flight.lines())
                .find(|(_, l)| crate::stored::session_id(l) == Some(id));
            if let Some((_, l)) = line {
                return Ok(Some(serde_json::from_slice::<StoredSession>(l)?.session));
            }
        }
        for s in self.journal.newest_first() {
            let s = s?;
            if s.session.id == id {
                return Ok(Some(s.session));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
