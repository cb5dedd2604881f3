//! The install task service: the single path for creating, changing and ending tasks,
//! serving their answer files, taking the installers' reports, building the iPXE script of
//! a machine with a task (the loop guard), and failing tasks whose deadline passed.
//!
//! Security of the public side: the answer, report and post-install pull URLs carry the
//! task's token (256 random bits, compared in constant time). The token stops working
//! when the task ends (done, failed, cancelled), `token_ttl_hours` after the install
//! started (a late `done` report excepted), after `token_idle_hours` without use, and on a
//! retry (a new token). It is bound to the machine: with `answer_lease_check` (the
//! default) only the address holding the MAC's active DHCP lease may use it, or, when
//! Bootlane holds no lease of the MAC (proxyDHCP, another DHCP server), the address the
//! task's iPXE script was first served to. A wrong, expired, idle or revoked token, an
//! unknown or ended task and another address all get the same [`ServiceError::Forbidden`]
//! text and an `install.token.refused` event, so a refusal never says whether the task
//! exists. The public routes are rate-limited per client address ([`TaskService::allow`]).

use std::{net::IpAddr, sync::Arc};

use rand::RngCore;
use subtle::ConstantTimeEq;
use time::{Duration, OffsetDateTime};

use super::{
    InstallTask, InstallTasksConfig, Report, ReportKind, TaskInput, TaskSource, TaskState, TaskView, MAX_REPORTS,
    MAX_REPORT_BYTES,
};
use crate::answers::{
    AnswerContext, AnswerFormat, AnswerSource, HostVars, ImageVars, RenderedAnswer, ServerVars, TaskVars,
};
use bootlane_boot::{
    boot::catalog::{BootCatalog, EntryType, BASE_URL_VAR},
    inventory::service::HostService,
};
use bootlane_core::{
    events::{
        wire_name, EventBus, EventKind, InstallTaskChanged, InstallTaskReport, InstallTaskStateChanged,
        InstallTokenRefused, NewEvent,
    },
    net::types::{normalise_mac, MacAddr},
    service_error::{short_text, ServiceError},
    store::{Store, Table},
};
use bootlane_dhcp::dhcp::leases::LeaseDb;
use bootlane_media::media::images::OsImageService;

/// The one refusal text of the public routes.
pub const REFUSED: &str = "refused: the token is wrong, expired or revoked, or this address may not use it";

/// The public routes' per-address limiter.
pub type Limiter = governor::DefaultKeyedRateLimiter<IpAddr>;

/// Install tasks.
pub struct TaskService {
    table: Table<InstallTask>,
    events: Arc<EventBus>,
    hosts: Arc<HostService>,
    catalog: Arc<BootCatalog>,
    images: Arc<OsImageService>,
    answers: Arc<dyn AnswerSource>,
    leases: Arc<tokio::sync::Mutex<LeaseDb>>,
    config: InstallTasksConfig,
    limiter: Option<Arc<Limiter>>,
    lock: tokio::sync::Mutex<()>,
}

/// What the services of a task service are (the constructor's arguments).
pub struct TaskDeps {
    /// The store.
    pub store: Store,
    /// Events.
    pub events: Arc<EventBus>,
    /// Hosts (names, MACs, addresses).
    pub hosts: Arc<HostService>,
    /// Profiles.
    pub catalog: Arc<BootCatalog>,
    /// OS images.
    pub images: Arc<OsImageService>,
    /// Answer templates.
    pub answers: Arc<dyn AnswerSource>,
    /// The DHCP lease table (the answer's source check).
    pub leases: Arc<tokio::sync::Mutex<LeaseDb>>,
    /// `[install_tasks]`.
    pub config: InstallTasksConfig,
    /// Per-address rate of the public routes (requests per second, burst); `None`:
    /// unlimited.
    pub rate: Option<(u32, u32)>,
}

/// `GET /netboot/task/by-mac/{mac}`: what a booting machine needs, nothing more.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct MacTask {
    /// `install` (boot the installer), `local` (boot from the disk), `hold` (a failed
    /// install waits for a retry) or `none` (no task: the normal profile).
    pub action: &'static str,
    /// The task's state, when there is one.
    pub state: Option<TaskState>,
}

/// The answer of a report.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ReportOutcome {
    /// The task's state after the report.
    pub state: TaskState,
    /// True when the task had already ended and the report changed nothing.
    pub ignored: bool,
}

fn parse_mac(s: &str) -> Result<MacAddr, ServiceError> {
    normalise_mac(s).map_err(|e| ServiceError::Invalid(format!("'mac': {e}")))
}

fn not_found(id: u64) -> ServiceError {
    ServiceError::NotFound(format!(
        "no install task with id {id}; GET /api/v1/netboot/tasks lists them"
    ))
}

fn new_token() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

/// The tail of `s` of at most `max` bytes, cut on a character boundary.
fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut at = s.len() - max;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    s[at..].to_string()
}

/// Kernel arguments that point the installer of `format` at `answer_url`.
pub fn answer_args(format: AnswerFormat, answer_url: &str) -> String {
    match format {
        AnswerFormat::Preseed => format!("auto=true priority=critical url={answer_url}"),
        AnswerFormat::Kickstart => format!("inst.ks={answer_url}"),
        AnswerFormat::Autoyast => format!("autoyast={answer_url}"),
        AnswerFormat::Ignition => {
            format!("ignition.firstboot ignition.platform.id=metal ignition.config.url={answer_url}")
        }
        AnswerFormat::Autoinstall => format!("autoinstall cloud-config-url={answer_url}"),
        AnswerFormat::CloudConfig => format!("cloud-config-url={answer_url}"),
        // Windows Setup takes no kernel arguments: the answer reaches it through wimboot.
        AnswerFormat::Autounattend => String::new(),
    }
}

impl TaskService {
    /// The service over `deps.store`'s `install_tasks` table.
    ///
    /// # Errors
    /// The store.
    pub fn open(deps: TaskDeps) -> Result<Arc<Self>, ServiceError> {
        let limiter = deps.rate.and_then(|(per_sec, burst)| {
            let rate = std::num::NonZeroU32::new(per_sec)?;
            let burst = std::num::NonZeroU32::new(burst.max(1)).unwrap_or(rate);
            Some(Arc::new(governor::RateLimiter::keyed(
                governor::Quota::per_second(rate).allow_burst(burst),
            )))
        });
        Ok(Arc::new(Self {
            table: deps.store.table()?,
            events: deps.events,
            hosts: deps.hosts,
            catalog: deps.catalog,
            images: deps.images,
            answers: deps.answers,
            leases: deps.leases,
            config: deps.config,
            limiter,
            lock: tokio::sync::Mutex::new(()),
        }))
    }

    /// Whether a public request from `peer` may go on (the per-address rate).
    pub fn allow(&self, peer: Option<IpAddr>) -> bool {
        match (&self.limiter, peer) {
            (Some(l), Some(p)) => l.check_key(&p.to_canonical()).is_ok(),
            _ => true,
        }
    }

    fn view(&self, t: InstallTask) -> TaskView {
        let host_name = t.host_id.and_then(|h| self.hosts.get(h).ok()).map(|h| h.name);
        TaskView {
            id: t.id,
            mac: t.mac,
            host_id: t.host_id,
            host_name,
            source: t.source,
            template_id: t.template_id,
            extra_cmdline: t.extra_cmdline,
            comment: t.comment,
            state: t.state,
            reason: t.reason,
            token_expires_at: t.token_expires_at,
            bound_address: t.bound_address,
            deadline_at: t.deadline_at,
            answer_fetches: t.answer_fetches,
            reports: t.reports,
            created_at: t.created_at,
            updated_at: t.updated_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
        }
    }

    /// Every task, newest first, filtered by `state`, `host_id` and `mac` when given.
    ///
    /// # Errors
    /// A bad MAC (400), the store.
    pub fn list(
        &self,
        state: Option<TaskState>,
        host_id: Option<u64>,
        mac: Option<&str>,
    ) -> Result<Vec<TaskView>, ServiceError> {
        let mac = mac.map(parse_mac).transpose()?.map(|m| m.to_string());
        let mut all = self.table.list()?;
        all.reverse();
        Ok(all
            .into_iter()
            .filter(|t| state.is_none_or(|s| t.state == s))
            .filter(|t| host_id.is_none_or(|h| t.host_id == Some(h)))
            .filter(|t| mac.as_deref().is_none_or(|m| t.mac == m))
            .map(|t| self.view(t))
            .collect())
    }

    /// One task.
    ///
    /// # Errors
    /// 404, the store.
    pub fn get(&self, id: u64) -> Result<TaskView, ServiceError> {
        Ok(self.view(self.raw(id)?))
    }

    fn raw(&self, id: u64) -> Result<InstallTask, ServiceError> {
        self.table.get(id)?.ok_or_else(|| not_found(id))
    }

    /// The task that decides `mac`'s boot: its newest task that is not cancelled.
    ///
    /// # Errors
    /// The store.
    pub fn current_for(&self, mac: MacAddr) -> Result<Option<InstallTask>, ServiceError> {
        let m = mac.to_string();
        Ok(self
            .table
            .list()?
            .into_iter()
            .rev()
            .find(|t| t.mac == m && t.state != TaskState::Cancelled))
    }

    /// Checks the fields of `input` merged over `base`.
    fn checked(&self, base: Option<&InstallTask>, input: TaskInput) -> Result<InstallTask, ServiceError> {
        let now = OffsetDateTime::now_utc();
        let mut t = base.cloned().unwrap_or(InstallTask {
            id: 0,
            mac: String::new(),
            host_id: None,
            source: TaskSource::Image { image_id: 0 },
            template_id: 0,
            extra_cmdline: String::new(),
            comment: String::new(),
            state: TaskState::Pending,
            reason: None,
            token: new_token(),
            token_expires_at: None,
            token_used_at: Some(now),
            bound_address: None,
            deadline_at: None,
            answer_fetches: 0,
            reports: Vec::new(),
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
        });
        match (input.host_id, input.mac.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(ServiceError::Invalid(
                    "give either 'host_id' or 'mac', not both (a host's MAC is its own)".into(),
                ))
            }
            (Some(h), None) => {
                let host = self
                    .hosts
                    .get(h)
                    .map_err(|_| ServiceError::Invalid(format!("'host_id' {h} is not a host")))?;
                t.host_id = Some(h);
                t.mac = host.mac;
            }
            (None, Some(m)) => {
                let mac = normalise_mac(m).map_err(|e| ServiceError::Invalid(format!("'mac': {e}")))?;
                t.mac = mac.to_string();
                t.host_id = self.hosts.by_mac(mac)?.map(|h| h.id);
            }
            (None, None) if base.is_none() => {
                return Err(ServiceError::Invalid(
                    "give 'host_id' or 'mac': the machine to install".into(),
                ))
            }
            (None, None) => {}
        }
        if let Some(s) = input.source {
            t.source = s;
        } else if base.is_none() {
            return Err(ServiceError::Invalid(
                "give 'source': {\"type\":\"image\",\"image_id\":N} or {\"type\":\"profile\",\"profile_id\":N}".into(),
            ));
        }
        match &t.source {
            TaskSource::Image { image_id } => {
                let img = self
                    .images
                    .get(*image_id)
                    .map_err(|_| ServiceError::Invalid(format!("'source.image_id' {image_id} is not an OS image")))?;
                img.boot_files()
                    .map_err(|e| ServiceError::Invalid(format!("'source.image_id': {e}")))?;
            }
            TaskSource::Profile { profile_id, entry } => {
                let p = self
                    .catalog
                    .profile(*profile_id)
                    .map_err(|_| ServiceError::Invalid(format!("'source.profile_id' {profile_id} is not a profile")))?;
                linux_entry(&p, *entry).map_err(ServiceError::Invalid)?;
            }
        }
        if let Some(id) = input.template_id {
            t.template_id = id;
        } else if base.is_none() {
            return Err(ServiceError::Invalid("give 'template_id': the answer template".into()));
        }
        self.answers
            .check(t.template_id)
            .map_err(|_| ServiceError::Invalid(format!("'template_id' {} is not an answer template", t.template_id)))?;
        if let Some(c) = input.extra_cmdline {
            let c = short_text("extra_cmdline", &c, 1024)?;
            if c.split_whitespace()
                .any(|w| w.starts_with('#') || matches!(w, ";" | "&&" | "||"))
            {
                return Err(ServiceError::Invalid(
                    "'extra_cmdline' may not hold iPXE separators or comments (';', '&&', '||', '#')".into(),
                ));
            }
            t.extra_cmdline = c;
        }
        if let Some(c) = input.comment {
            t.comment = short_text("comment", &c, 1024)?;
        }
        Ok(t)
    }

    fn publish(&self, kind: EventKind, t: &InstallTask, summary: String) {
        self.events.publish(
            NewEvent::new(kind, summary)
                .resource("install_task", t.id)
                .with(&InstallTaskChanged {
                    id: t.id,
                    mac: t.mac.clone(),
                    state: wire_name(&t.state),
                    reason: t.reason.clone(),
                }),
        );
    }

    /// Creates a task (`pending`); publishes `install.task.created`.
    ///
    /// # Errors
    /// A bad or missing field (400 naming it); the machine already has a pending or
    /// installing task (409 naming it); the store.
    pub async fn create(&self, input: TaskInput) -> Result<TaskView, ServiceError> {
        let t = self.checked(None, input)?;
        let _g = self.lock.lock().await;
        if let Some(other) = self
            .table
            .list()?
            .into_iter()
            .find(|o| o.mac == t.mac && o.state.active())
        {
            return Err(ServiceError::Conflict(format!(
                "{} already has install task {} ({}); cancel it first",
                t.mac,
                other.id,
                other.state.as_str()
            )));
        }
        let t = self.table.insert(t).await?;
        self.publish(
            EventKind::InstallTaskCreated,
            &t,
            format!("install task {} created for {}", t.id, t.mac),
        );
        Ok(self.view(t))
    }

    /// Changes a `pending` or `failed` task; publishes `install.task.updated`.
    ///
    /// # Errors
    /// 400 naming a bad field, 404, 409 while installing or after, the store.
    pub async fn update(&self, id: u64, input: TaskInput) -> Result<TaskView, ServiceError> {
        let _g = self.lock.lock().await;
        let before = self.raw(id)?;
        if !matches!(before.state, TaskState::Pending | TaskState::Failed) {
            return Err(ServiceError::Conflict(format!(
                "install task {id} is {}; only a pending or failed task can be changed",
                before.state.as_str()
            )));
        }
        let mut t = self.checked(Some(&before), input)?;
        t.updated_at = OffsetDateTime::now_utc();
        self.table.put(&t).await?;
        self.publish(EventKind::InstallTaskUpdated, &t, format!("install task {id} updated"));
        Ok(self.view(t))
    }

    /// Deletes a task that is not installing; publishes `install.task.deleted`.
    ///
    /// # Errors
    /// 404, 409 while installing (cancel it first), the store.
    pub async fn delete(&self, id: u64) -> Result<TaskView, ServiceError> {
        let _g = self.lock.lock().await;
        let t = self.raw(id)?;
        if t.state == TaskState::Installing {
            return Err(ServiceError::Conflict(format!(
                "install task {id} is installing; cancel it first (POST /api/v1/netboot/tasks/{id}/cancel)"
            )));
        }
        self.table.remove(id).await?;
        self.publish(EventKind::InstallTaskDeleted, &t, format!("install task {id} deleted"));
        Ok(self.view(t))
    }

    /// Moves `t` to `to` (if allowed) with `reason`, stamps, stores and publishes
    /// `install.task.state`. The caller holds the lock.
    async fn transition(
        &self,
        mut t: InstallTask,
        to: TaskState,
        reason: Option<String>,
    ) -> Result<InstallTask, ServiceError> {
        if !t.state.can_become(to) {
            return Err(ServiceError::Conflict(format!(
                "install task {} is {}; it cannot become {}",
                t.id,
                t.state.as_str(),
                to.as_str()
            )));
        }
        let now = OffsetDateTime::now_utc();
        let from = t.state;
        t.state = to;
        t.reason = reason;
        t.updated_at = now;
        match to {
            TaskState::Installing => {
                t.started_at = Some(now);
                t.token_expires_at = Some(now + Duration::hours(self.config.token_ttl_hours as i64));
                t.deadline_at = Some(now + Duration::minutes(self.config.deadline_mins as i64));
            }
            TaskState::Pending => {
                // A retry: a fresh token, nothing started.
                t.token = new_token();
                t.token_expires_at = None;
                t.token_used_at = Some(now);
                t.bound_address = None;
                t.deadline_at = None;
                t.started_at = None;
                t.finished_at = None;
                t.answer_fetches = 0;
            }
            _ => {
                t.deadline_at = None;
                t.finished_at = Some(now);
            }
        }
        self.table.put(&t).await?;
        self.events.publish(
            NewEvent::new(
                EventKind::InstallTaskState,
                format!(
                    "install task {} for {}: {} -> {}{}",
                    t.id,
                    t.mac,
                    from.as_str(),
                    to.as_str(),
                    t.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                ),
            )
            .resource("install_task", t.id)
            .with(&InstallTaskStateChanged {
                id: t.id,
                mac: t.mac.clone(),
                from: wire_name(&from),
                state: wire_name(&to),
                reason: t.reason.clone(),
            }),
        );
        Ok(t)
    }

    /// Cancels a task that has not ended (its token is revoked).
    ///
    /// # Errors
    /// 404, 409 when it has ended, the store.
    pub async fn cancel(&self, id: u64) -> Result<TaskView, ServiceError> {
        let _g = self.lock.lock().await;
        let t = self.raw(id)?;
        let t = self
            .transition(t, TaskState::Cancelled, Some("cancelled by an operator".into()))
            .await?;
        Ok(self.view(t))
    }

    /// Retries a failed task: `pending` again with a new token.
    ///
    /// # Errors
    /// 404, 409 unless failed or when the machine has another active task, the store.
    pub async fn retry(&self, id: u64) -> Result<TaskView, ServiceError> {
        let _g = self.lock.lock().await;
        let t = self.raw(id)?;
        if let Some(o) = self
            .table
            .list()?
            .into_iter()
            .find(|o| o.id != id && o.mac == t.mac && o.state.active())
        {
            return Err(ServiceError::Conflict(format!(
                "{} has another active install task {}; cancel it first",
                t.mac, o.id
            )));
        }
        let t = self.transition(t, TaskState::Pending, None).await?;
        Ok(self.view(t))
    }

    /// Fails every `installing` task whose deadline is before `now`; returns how many.
    ///
    /// # Errors
    /// The store.
    pub async fn expire_overdue(&self, now: OffsetDateTime) -> Result<usize, ServiceError> {
        let _g = self.lock.lock().await;
        let mut n = 0;
        for t in self.table.list()? {
            if t.state == TaskState::Installing && t.deadline_at.is_some_and(|d| d < now) {
                let mins = self.config.deadline_mins;
                self.transition(
                    t,
                    TaskState::Failed,
                    Some(format!(
                        "no report from the installer for {mins} minutes (the deadline passed)"
                    )),
                )
                .await?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Checks the deadlines every `every` until `stop` is cancelled.
    pub fn spawn_deadlines(self: &Arc<Self>, every: std::time::Duration, stop: tokio_util::sync::CancellationToken) {
        let s = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = tick.tick() => {
                        if let Err(e) = s.expire_overdue(OffsetDateTime::now_utc()).await {
                            tracing::warn!(error = %e, "install task deadlines could not be checked");
                        }
                    }
                }
            }
        });
    }

    /// The one refusal: an event (with what was asked, never whether the task exists) and
    /// [`ServiceError::Forbidden`].
    fn refuse(&self, what: &str, id: u64, peer: Option<IpAddr>, why: &str) -> ServiceError {
        tracing::info!(task = id, ?peer, why, "install task request refused ({what})");
        let mut e = NewEvent::new(
            EventKind::InstallTokenRefused,
            format!("{what} for install task id {id} refused"),
        )
        .with(&InstallTokenRefused {
            what: what.to_string(),
            task_id: id,
        });
        if let Some(p) = peer {
            e = e.remote(p);
        }
        self.events.publish(e);
        ServiceError::Forbidden(REFUSED.into())
    }

    fn token_matches(t: &InstallTask, token: &str) -> bool {
        t.token.len() == token.len() && bool::from(t.token.as_bytes().ct_eq(token.as_bytes()))
    }

    /// Whether `peer` is the machine of `t` (always, without `answer_lease_check`): the
    /// holder of the MAC's active DHCP lease, or, when Bootlane holds no lease of the MAC
    /// (proxyDHCP, another DHCP server), the address `t` is bound to
    /// ([`InstallTask::bound_address`]).
    async fn is_machine(&self, t: &InstallTask, peer: Option<IpAddr>) -> bool {
        if !self.config.answer_lease_check {
            return true;
        }
        let Some(peer) = peer.map(|p| p.to_canonical()) else {
            return false;
        };
        let Ok(mac) = parse_mac(&t.mac) else {
            return false;
        };
        let now = bootlane_dhcp::dhcp::leases::now_secs();
        let leases = self.leases.lock().await;
        if let IpAddr::V4(ip) = peer {
            if leases
                .by_ip(ip)
                .is_some_and(|l| l.mac == t.mac && !l.declined && l.active(now))
            {
                return true;
            }
        }
        !leases.has_active_lease(mac, now) && t.bound_address == Some(peer)
    }

    /// Whether the MAC of `t` has no active lease here, so its token binds to the address
    /// that fetches the iPXE script first.
    async fn binds_by_address(&self, t: &InstallTask) -> bool {
        let Ok(mac) = parse_mac(&t.mac) else {
            return false;
        };
        let now = bootlane_dhcp::dhcp::leases::now_secs();
        !self.leases.lock().await.has_active_lease(mac, now)
    }

    /// The checks every public use of a task's token goes through, in this order: the
    /// task exists, the token matches, `state_ok` accepts the task's state, the token is
    /// within its lifetime (`token_ttl_hours` after the start; `ttl_exempt` skips this for
    /// a late `done` report) and was used within `token_idle_hours`, and `peer` is the
    /// machine ([`TaskService::is_machine`]). Marks the token used. The caller holds the
    /// lock.
    ///
    /// # Errors
    /// The one [`ServiceError::Forbidden`] (with an `install.token.refused` event) for
    /// every refusal; the store.
    async fn admit(
        &self,
        what: &str,
        id: u64,
        token: &str,
        peer: Option<IpAddr>,
        state_ok: impl Fn(TaskState) -> bool,
        ttl_exempt: bool,
    ) -> Result<InstallTask, ServiceError> {
        let now = OffsetDateTime::now_utc();
        let Some(mut t) = self.table.get(id)? else {
            return Err(self.refuse(what, id, peer, "no such task"));
        };
        if !Self::token_matches(&t, token) {
            return Err(self.refuse(what, id, peer, "wrong token"));
        }
        if !state_ok(t.state) {
            return Err(self.refuse(what, id, peer, "the task has ended or is not in a state for this"));
        }
        if !ttl_exempt && t.token_expires_at.is_some_and(|e| e < now) {
            return Err(self.refuse(what, id, peer, "the token expired"));
        }
        let idle = Duration::hours(self.config.token_idle_hours as i64);
        if t.token_used_at.unwrap_or(t.created_at) + idle < now {
            return Err(self.refuse(what, id, peer, "the token was not used for too long"));
        }
        if !self.is_machine(&t, peer).await {
            return Err(self.refuse(what, id, peer, "the address is not the task's machine"));
        }
        t.token_used_at = Some(now);
        self.table.put(&t).await?;
        Ok(t)
    }

    fn urls(base: &str, t: &InstallTask) -> (String, String) {
        (
            format!("{base}/api/v1/netboot/answer/{}?token={}", t.id, t.token),
            format!("{base}/api/v1/netboot/report/{}/{}", t.id, t.token),
        )
    }

    /// The post-install pull URL of `t` with `suffix` (`""` for the JSON,
    /// `/bundle.sh`, `/bundle.ps1`, `/report`), token included.
    pub fn baseline_url(base: &str, t: &InstallTask, suffix: &str) -> String {
        format!("{base}/api/v1/netboot/baseline/{}{suffix}?token={}", t.id, t.token)
    }

    /// Checks a machine's post-install pull or script report (public): the checks of
    /// every token use (see the module docs), with the task pending, installing or
    /// installed; a task that ended (done, failed, cancelled) takes no more pulls.
    /// Answers the task.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; the store.
    pub async fn authorize_pull(
        &self,
        id: u64,
        token: &str,
        peer: Option<IpAddr>,
        what: &str,
    ) -> Result<InstallTask, ServiceError> {
        let _g = self.lock.lock().await;
        self.admit(what, id, token, peer, |s| !s.is_final(), false).await
    }

    /// The OS family and version `t` installs, when it installs a detected OS image.
    pub fn os_of(&self, t: &InstallTask) -> Option<(String, Option<String>)> {
        let TaskSource::Image { image_id } = &t.source else {
            return None;
        };
        let det = self.images.get(*image_id).ok()?.detection?;
        let family = serde_json::to_value(det.family).ok()?.as_str()?.to_string();
        Some((family, det.version))
    }

    /// The OS of the MAC's current task (see [`TaskService::os_of`]).
    ///
    /// # Errors
    /// The store.
    pub fn os_for_mac(&self, mac: MacAddr) -> Result<Option<(String, Option<String>)>, ServiceError> {
        Ok(self.current_for(mac)?.and_then(|t| self.os_of(&t)))
    }

    /// The variables for `t`'s answer as seen by a client of `base` (`address`: its Host).
    fn context(&self, t: &InstallTask, address: &str, base: &str) -> Result<AnswerContext, ServiceError> {
        let mac: MacAddr = parse_mac(&t.mac)?;
        let host = self.hosts.by_mac(mac)?;
        let profile = host
            .as_ref()
            .and_then(|h| h.profile_id)
            .and_then(|p| self.catalog.profile(p).ok())
            .map(|p| p.name);
        let (answer_url, report_url) = Self::urls(base, t);
        let image = match &t.source {
            TaskSource::Image { image_id } => self.images.get(*image_id).ok().map(|img| {
                let det = img.detection.clone();
                let served = img.mounted || img.extracted.is_some();
                let files = img.boot_files().ok();
                ImageVars {
                    id: img.id,
                    family: det
                        .as_ref()
                        .and_then(|d| serde_json::to_value(d.family).ok())
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
                    version: det.as_ref().and_then(|d| d.version.clone()),
                    kernel: files.as_ref().map(|f| format!("{base}/boot/{}", f.kernel)),
                    initrds: files
                        .map(|f| f.initrds.iter().map(|i| format!("{base}/boot/{i}")).collect())
                        .unwrap_or_default(),
                    repo_url: served.then(|| format!("{base}/boot/{}", img.tree_path())),
                }
            }),
            TaskSource::Profile { .. } => None,
        };
        Ok(AnswerContext {
            host: HostVars {
                name: host
                    .as_ref()
                    .map_or_else(|| t.mac.replace(':', "-"), |h| h.name.clone()),
                mac: t.mac.clone(),
                ip: host.as_ref().and_then(|h| h.ip).map(|i| i.to_string()),
                profile,
            },
            task: TaskVars {
                id: t.id,
                token: t.token.clone(),
                answer_url,
                report_url,
                baseline_sh_url: Self::baseline_url(base, t, "/bundle.sh"),
                baseline_ps1_url: Self::baseline_url(base, t, "/bundle.ps1"),
            },
            server: ServerVars {
                address: address.to_string(),
                base_url: base.to_string(),
            },
            image,
        })
    }

    /// Renders the answer file of task `id` for the installer (public route): the token
    /// must match and be in force, the task pending or installing, and (with
    /// `answer_lease_check`) `peer` must hold the MAC's lease. The first fetch makes the
    /// task `installing`; every fetch counts and extends the deadline.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] for every refusal (see the module docs); a template
    /// that does not render (400), the store.
    pub async fn answer(
        &self,
        id: u64,
        token: &str,
        peer: Option<IpAddr>,
        address: &str,
        base: &str,
    ) -> Result<RenderedAnswer, ServiceError> {
        let _g = self.lock.lock().await;
        let now = OffsetDateTime::now_utc();
        let t = self.admit("answer", id, token, peer, TaskState::active, false).await?;
        let ctx = self.context(&t, address, base)?;
        let rendered = self.answers.render(t.template_id, &ctx)?;
        let mut t = if t.state == TaskState::Pending {
            self.transition(t, TaskState::Installing, None).await?
        } else {
            t
        };
        t.answer_fetches += 1;
        t.deadline_at = Some(now + Duration::minutes(self.config.deadline_mins as i64));
        t.updated_at = now;
        self.table.put(&t).await?;
        Ok(rendered)
    }

    /// Takes an installer's report (public route): the token must match; an expired one is
    /// accepted only for `done`; a task that has ended answers `ignored`. `progress`
    /// extends the deadline; `done` makes it `installed`; `failed` makes it `failed`
    /// with the body's tail as the reason's detail; `booted` makes an installed task
    /// `done`. Publishes `install.task.report` (and the state change).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] for every refusal; 409 for a report the state does not
    /// take (`booted` before `done`); the store.
    pub async fn report(
        &self,
        id: u64,
        token: &str,
        kind: ReportKind,
        body: &str,
        peer: Option<IpAddr>,
    ) -> Result<ReportOutcome, ServiceError> {
        let _g = self.lock.lock().await;
        let now = OffsetDateTime::now_utc();
        // A late `done` is still taken after the token's lifetime (the install may have
        // been slow); nothing is taken once the task has ended.
        let mut t = self
            .admit("report", id, token, peer, |s| !s.is_final(), kind == ReportKind::Done)
            .await?;
        if t.state == TaskState::Installed && kind != ReportKind::Booted {
            return Ok(ReportOutcome {
                state: t.state,
                ignored: true,
            });
        }
        let message = tail(body.trim(), MAX_REPORT_BYTES);
        t.reports.push(Report {
            kind,
            message: message.clone(),
            from: peer.map(|p| p.to_canonical().to_string()),
            at: now,
        });
        if t.reports.len() > MAX_REPORTS {
            let cut = t.reports.len() - MAX_REPORTS;
            t.reports.drain(..cut);
        }
        if t.state == TaskState::Installing {
            t.deadline_at = Some(now + Duration::minutes(self.config.deadline_mins as i64));
        }
        t.updated_at = now;
        let short: String = message.lines().last().unwrap_or_default().chars().take(200).collect();
        let mut e = NewEvent::new(
            EventKind::InstallTaskReport,
            format!("install task {} ({}) reported {:?}: {short}", t.id, t.mac, kind).to_lowercase(),
        )
        .resource("install_task", t.id)
        .with(&InstallTaskReport {
            id: t.id,
            mac: t.mac.clone(),
            kind: wire_name(&kind),
            message: short,
        });
        if let Some(p) = peer {
            e = e.remote(p);
        }
        self.events.publish(e);
        let t = match (kind, t.state) {
            (ReportKind::Progress, _) => {
                self.table.put(&t).await?;
                t
            }
            // A `done` before the answer was fetched (a manual install) still counts.
            (ReportKind::Done, TaskState::Pending) => {
                let t = self.transition(t, TaskState::Installing, None).await?;
                self.transition(t, TaskState::Installed, None).await?
            }
            (ReportKind::Done, _) => self.transition(t, TaskState::Installed, None).await?,
            (ReportKind::Failed, _) => {
                let last: String = message
                    .lines()
                    .last()
                    .unwrap_or("no log sent")
                    .chars()
                    .take(300)
                    .collect();
                self.transition(
                    t,
                    TaskState::Failed,
                    Some(format!("the installer reported a failure: {last}")),
                )
                .await?
            }
            (ReportKind::Booted, TaskState::Installed) => self.transition(t, TaskState::Done, None).await?,
            (ReportKind::Booted, s) => {
                self.table.put(&t).await?;
                return Err(ServiceError::Conflict(format!(
                    "install task {id} is {}; 'booted' is reported by the installed system after 'done'",
                    s.as_str()
                )));
            }
        };
        Ok(ReportOutcome {
            state: t.state,
            ignored: false,
        })
    }

    /// `GET /netboot/task/by-mac/{mac}` (public): what the machine will boot.
    ///
    /// # Errors
    /// A bad MAC (400), the store.
    pub fn by_mac(&self, mac: &str) -> Result<MacTask, ServiceError> {
        let mac = parse_mac(mac)?;
        Ok(match self.current_for(mac)? {
            None => MacTask {
                action: "none",
                state: None,
            },
            Some(t) => MacTask {
                action: match t.state {
                    TaskState::Pending | TaskState::Installing => "install",
                    TaskState::Installed | TaskState::Done => "local",
                    TaskState::Failed => "hold",
                    TaskState::Cancelled => "none",
                },
                state: Some(t.state),
            },
        })
    }

    /// The loop guard: the iPXE script of `mac` while it has a task, or `None` (the
    /// normal profile). `pending`/`installing`: the installer with the answer URL on its
    /// command line (only to the address holding the MAC's lease when
    /// `answer_lease_check` is on; others get a script that says so); `installed`/`done`:
    /// the local disk; `failed`: nothing is installed until the task is retried.
    ///
    /// # Errors
    /// The store; the task's image or profile entry is gone (the script says so).
    pub async fn boot_script(
        &self,
        mac: MacAddr,
        peer: Option<IpAddr>,
        base: &str,
    ) -> Result<Option<String>, ServiceError> {
        let Some(t) = self.current_for(mac)? else {
            return Ok(None);
        };
        let head = format!(
            "#!ipxe\necho Bootlane: install task {} for {mac} is {}\n",
            t.id,
            t.state.as_str()
        );
        Ok(Some(match t.state {
            TaskState::Cancelled => return Ok(None),
            TaskState::Installed | TaskState::Done => format!(
                "{head}echo Bootlane: booting from the local disk\nsanboot --no-describe --drive 0x80 || exit\n"
            ),
            // Fixed wording only: the reason may hold a machine's own report text, which
            // must never reach a script the firmware runs. The UI and API show it.
            TaskState::Failed => format!(
                "{head}echo Bootlane: the install failed, the reason is shown with install task {} in Bootlane\necho Bootlane: not reinstalled until the task is retried, booting the next device\nexit\n",
                t.id
            ),
            TaskState::Pending | TaskState::Installing => {
                let t = self.bind_if_unbound(t, peer).await?;
                if !self.is_machine(&t, peer).await {
                    format!(
                        "{head}echo Bootlane: this address is not the machine of {mac} (its DHCP lease or first address), the installer is not served\nexit\n"
                    )
                } else {
                    match self.install_entry(&t, base) {
                        Ok((kernel, initrds, cmdline)) => {
                            let mut s = format!("{head}kernel {kernel} {cmdline}\n");
                            for i in initrds {
                                s.push_str(&format!("initrd {i}\n"));
                            }
                            s.push_str("boot || goto failed\n:failed\necho Bootlane: the installer did not boot\nexit\n");
                            s
                        }
                        Err(e) => format!("{head}echo Bootlane: {}\nexit\n", bootlane_core::escape::ipxe_text(&e.to_string())),
                    }
                }
            }
        }))
    }

    /// Binds `t` to `peer` when Bootlane holds no lease of its MAC and it is not bound
    /// yet (the first address its iPXE script is served to; see
    /// [`InstallTask::bound_address`]). Answers the task as stored.
    ///
    /// # Errors
    /// The store.
    async fn bind_if_unbound(&self, t: InstallTask, peer: Option<IpAddr>) -> Result<InstallTask, ServiceError> {
        let Some(peer) = peer.map(|p| p.to_canonical()) else {
            return Ok(t);
        };
        if !self.config.answer_lease_check || t.bound_address.is_some() || !self.binds_by_address(&t).await {
            return Ok(t);
        }
        let _g = self.lock.lock().await;
        let Some(mut t) = self.table.get(t.id)? else {
            return Ok(t);
        };
        if t.bound_address.is_none() {
            t.bound_address = Some(peer);
            self.table.put(&t).await?;
            tracing::info!(task = t.id, mac = %t.mac, %peer, "install task bound to the address that fetched its script");
        }
        Ok(t)
    }

    /// Kernel URL, initrd URLs and command line of `t`'s installer as seen from `base`.
    fn install_entry(&self, t: &InstallTask, base: &str) -> Result<(String, Vec<String>, String), ServiceError> {
        let abs = |p: &str| {
            if p.contains("://") {
                p.to_string()
            } else {
                format!("{base}/boot/{}", p.trim_start_matches('/'))
            }
        };
        let (kernel, initrds, mut cmdline) = match &t.source {
            TaskSource::Image { image_id } => {
                let b = self
                    .images
                    .get(*image_id)?
                    .boot_files()
                    .map_err(ServiceError::Conflict)?;
                (b.kernel, b.initrds, b.cmdline)
            }
            TaskSource::Profile { profile_id, entry } => {
                let p = self.catalog.profile(*profile_id)?;
                let e = linux_entry(&p, *entry).map_err(ServiceError::Conflict)?;
                (
                    e.kernel.clone().unwrap_or_default(),
                    e.initrds.clone(),
                    e.cmdline.clone().unwrap_or_default(),
                )
            }
        };
        let format = self.answers.check(t.template_id)?;
        let (answer_url, _) = Self::urls(base, t);
        for part in [answer_args(format, &answer_url), t.extra_cmdline.clone()] {
            if !part.is_empty() {
                if !cmdline.is_empty() {
                    cmdline.push(' ');
                }
                cmdline.push_str(&part);
            }
        }
        let cmdline = cmdline.replace(BASE_URL_VAR, base);
        Ok((abs(&kernel), initrds.iter().map(|i| abs(i)).collect(), cmdline))
    }
}

/// Entry `entry` of `p`, or its first `linux` entry; it must be a `linux` entry.
fn linux_entry(
    p: &bootlane_boot::boot::catalog::Profile,
    entry: Option<usize>,
) -> Result<&bootlane_boot::boot::catalog::MenuEntry, String> {
    let e = match entry {
        Some(i) => p
            .entries
            .get(i)
            .ok_or_else(|| format!("profile {} has no entry {i}", p.name))?,
        None => p
            .entries
            .iter()
            .find(|e| e.kind == EntryType::Linux)
            .ok_or_else(|| format!("profile {} has no linux entry to install with", p.name))?,
    };
    if e.kind != EntryType::Linux {
        return Err(format!(
            "entry {:?} of profile {} is not a linux entry",
            e.label, p.name
        ));
    }
    Ok(e)
}
