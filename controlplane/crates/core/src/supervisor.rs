//! Service lifecycle: one [`Supervisor`] owns every network service (DNS, DHCP, TFTP,
//! HTTP boot, and every later one) through the small [`Service`] trait, keeps each one's
//! state (`running`, `stopped`, `failed` with the reason, since when, where it listens),
//! persists each one's `auto_start` flag and publishes `service.started`,
//! `service.stopped` and `service.failed` events. Each service owns its sockets and tasks
//! behind its own child cancellation token, so stop really stops and start/restart binds
//! anew with the settings in effect then: restart is how a settings change that needs new
//! sockets (DHCP interface, TFTP port) is applied without a process restart.
//!
//! Operations on services are serialised by one async mutex (a start and a stop of the
//! same service never interleave). State: the status table and the stored flags.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::{
    events::{EventBus, EventKind, NewEvent, ServiceFailed, ServiceStarted},
    service_error::ServiceError,
    store::{Kv, Store, StoreError},
};

/// One supervised network service.
pub trait Service: Send + Sync + 'static {
    /// Its name in the API (`dns`, `dhcp`, `tftp`, `http-boot`).
    fn name(&self) -> &'static str;
    /// Binds its sockets and starts its tasks with the settings in effect now; answers
    /// where it listens (`ip:port`, or `interface:port`). Starting a running service is
    /// a no-op that answers the same.
    fn start(&self) -> BoxFuture<'_, anyhow::Result<Vec<String>>>;
    /// Cancels its tasks and closes its sockets; waits until they are gone.
    fn stop(&self) -> BoxFuture<'_, ()>;
    /// Whether it starts with the server when no `auto_start` flag is stored.
    fn default_auto_start(&self) -> bool;
    /// Where it listens if it is serving now, `None` if not: the supervisor reconciles
    /// its recorded state with this (a service's own settings, such as DNS `enabled`,
    /// may start or stop it too).
    fn serving(&self) -> Option<Vec<String>>;
}

/// Lifecycle state of a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceState {
    /// Sockets bound, serving.
    Running,
    /// Not serving (never started, or stopped).
    Stopped,
    /// The last start failed; `reason` says why.
    Failed,
}

/// `GET /services` entry.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ServiceStatus {
    /// Service name.
    pub name: String,
    /// Current state.
    pub state: ServiceState,
    /// Why it failed (state `failed`), else null.
    pub reason: Option<String>,
    /// When it entered this state, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub since: OffsetDateTime,
    /// Starts with the server.
    pub auto_start: bool,
    /// Where it listens while running (`ip:port` or `interface:port`).
    pub listen: Vec<String>,
}

/// A lifecycle action (`POST /services/{name}/{action}`, `/services/batch/{action}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Start.
    Start,
    /// Stop.
    Stop,
    /// Stop then start.
    Restart,
}

impl Action {
    /// Every action's name, for error messages.
    pub const NAMES: &'static str = "start, stop, restart";

    /// Parses `start`, `stop` or `restart`.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] listing the valid actions.
    pub fn parse(s: &str) -> Result<Self, ServiceError> {
        match s {
            "start" => Ok(Self::Start),
            "stop" => Ok(Self::Stop),
            "restart" => Ok(Self::Restart),
            other => Err(ServiceError::Invalid(format!(
                "unknown action {other:?}: use one of {}",
                Self::NAMES
            ))),
        }
    }
}

const AUTO_KEY: &str = "auto_start";
/// The tree of the `auto_start` flags: which services run is each machine's own.
const SERVICES_TREE: &str = "services";
crate::store::node_tree!(SERVICES_TREE);

/// The supervisor. Share as `Arc<Supervisor>`.
pub struct Supervisor {
    services: Vec<Arc<dyn Service>>,
    status: Mutex<BTreeMap<&'static str, ServiceStatus>>,
    kv: Kv,
    ops: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
}

impl Supervisor {
    /// A supervisor over `services` (in start order), every one `stopped`.
    ///
    /// # Errors
    /// Store errors reading the `auto_start` flags.
    pub fn new(store: &Store, events: Arc<EventBus>, services: Vec<Arc<dyn Service>>) -> Result<Arc<Self>, StoreError> {
        let kv = store.kv(SERVICES_TREE)?;
        let flags: BTreeMap<String, bool> = kv.get(AUTO_KEY)?.unwrap_or_default();
        let now = OffsetDateTime::now_utc();
        let status = services
            .iter()
            .map(|s| {
                (
                    s.name(),
                    ServiceStatus {
                        name: s.name().into(),
                        state: ServiceState::Stopped,
                        reason: None,
                        since: now,
                        auto_start: flags.get(s.name()).copied().unwrap_or_else(|| s.default_auto_start()),
                        listen: Vec::new(),
                    },
                )
            })
            .collect();
        Ok(Arc::new(Self {
            services,
            status: Mutex::new(status),
            kv,
            ops: tokio::sync::Mutex::new(()),
            events,
        }))
    }

    /// The service names, in start order.
    pub fn names(&self) -> Vec<&'static str> {
        self.services.iter().map(|s| s.name()).collect()
    }

    fn find(&self, name: &str) -> Result<Arc<dyn Service>, ServiceError> {
        self.services.iter().find(|s| s.name() == name).cloned().ok_or_else(|| {
            ServiceError::Invalid(format!(
                "unknown service {name:?}: use one of {}",
                self.names().join(", ")
            ))
        })
    }

    /// Every service's status, in start order.
    pub fn list(&self) -> Vec<ServiceStatus> {
        self.services.iter().map(|s| self.reconciled(s)).collect()
    }

    /// The recorded status, corrected by what the service reports now.
    fn reconciled(&self, svc: &Arc<dyn Service>) -> ServiceStatus {
        let now = svc.serving();
        let cur = self.status.lock().expect("status lock")[svc.name()].clone();
        match (cur.state, now) {
            (ServiceState::Running, None) => self.set(svc.name(), ServiceState::Stopped, None, Vec::new()),
            (ServiceState::Running, Some(l)) if l != cur.listen => self.set(svc.name(), ServiceState::Running, None, l),
            (ServiceState::Stopped | ServiceState::Failed, Some(l)) => {
                self.set(svc.name(), ServiceState::Running, None, l)
            }
            _ => cur,
        }
    }

    /// One service's status.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for an unknown name (listing the valid ones).
    pub fn get(&self, name: &str) -> Result<ServiceStatus, ServiceError> {
        let s = self.find(name)?;
        Ok(self.reconciled(&s))
    }

    /// True when `name` is running.
    pub fn is_running(&self, name: &str) -> bool {
        self.get(name).is_ok_and(|s| s.state == ServiceState::Running)
    }

    fn set(
        &self,
        name: &'static str,
        state: ServiceState,
        reason: Option<String>,
        listen: Vec<String>,
    ) -> ServiceStatus {
        let mut st = self.status.lock().expect("status lock");
        let e = st.get_mut(name).expect("known service");
        if e.state != state || e.reason != reason {
            e.since = OffsetDateTime::now_utc();
        }
        e.state = state;
        e.reason = reason;
        e.listen = listen;
        metrics::gauge!(crate::metrics::SERVICE_UP, "service" => name)
            .set(f64::from(u8::from(state == ServiceState::Running)));
        metrics::gauge!(crate::metrics::SERVICE_FAILED, "service" => name)
            .set(f64::from(u8::from(state == ServiceState::Failed)));
        e.clone()
    }

    async fn start_locked(&self, svc: &Arc<dyn Service>) -> ServiceStatus {
        let name = svc.name();
        let was = self.status.lock().expect("status lock")[name].state;
        match svc.start().await {
            Ok(listen) => {
                let was = Some(was);
                let st = self.set(name, ServiceState::Running, None, listen.clone());
                if was != Some(ServiceState::Running) {
                    tracing::info!(service = name, ?listen, "service started");
                    self.events.publish(
                        NewEvent::new(EventKind::ServiceStarted, format!("service {name} started"))
                            .resource("service", name)
                            .with(&ServiceStarted { listen: listen.clone() }),
                    );
                }
                st
            }
            Err(e) => {
                let reason = format!("{e:#}");
                tracing::error!(service = name, "service failed to start: {reason}");
                self.events.publish(
                    NewEvent::new(EventKind::ServiceFailed, format!("service {name} failed: {reason}"))
                        .resource("service", name)
                        .with(&ServiceFailed { reason: reason.clone() }),
                );
                self.set(name, ServiceState::Failed, Some(reason), Vec::new())
            }
        }
    }

    async fn stop_locked(&self, svc: &Arc<dyn Service>) -> ServiceStatus {
        let name = svc.name();
        let was = self.get(name).map(|s| s.state).ok();
        svc.stop().await;
        let st = self.set(name, ServiceState::Stopped, None, Vec::new());
        if was == Some(ServiceState::Running) {
            tracing::info!(service = name, "service stopped");
            self.events.publish(
                NewEvent::new(EventKind::ServiceStopped, format!("service {name} stopped")).resource("service", name),
            );
        }
        st
    }

    /// Runs `action` on `name`. A failed start is not an error here: the answer's state
    /// is `failed` with the reason.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for an unknown name.
    pub async fn act(&self, name: &str, action: Action) -> Result<ServiceStatus, ServiceError> {
        let svc = self.find(name)?;
        let _g = self.ops.lock().await;
        Ok(match action {
            Action::Start => self.start_locked(&svc).await,
            Action::Stop => self.stop_locked(&svc).await,
            Action::Restart => {
                self.stop_locked(&svc).await;
                self.start_locked(&svc).await
            }
        })
    }

    /// Restarts `name` if it is running (a settings change that needs new sockets);
    /// answers whether it did.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for an unknown name.
    pub async fn restart_if_running(&self, name: &str) -> Result<bool, ServiceError> {
        if !self.is_running(name) {
            return Ok(false);
        }
        self.act(name, Action::Restart).await?;
        Ok(true)
    }

    /// Sets and stores whether `name` starts with the server.
    ///
    /// # Errors
    /// Unknown name, store errors.
    pub async fn set_auto_start(&self, name: &str, on: bool) -> Result<ServiceStatus, ServiceError> {
        let svc = self.find(name)?;
        let _g = self.ops.lock().await;
        let mut flags: BTreeMap<String, bool> = self.kv.get(AUTO_KEY)?.unwrap_or_default();
        let before = self.get(name)?.auto_start;
        flags.insert(name.to_string(), on);
        self.kv.put(AUTO_KEY, &flags).await?;
        let st = {
            let mut st = self.status.lock().expect("status lock");
            let e = st.get_mut(svc.name()).expect("known service");
            e.auto_start = on;
            e.clone()
        };
        if before != on {
            self.events.publish(NewEvent::write(
                EventKind::ServiceAutoStartChanged,
                "service",
                name,
                "update",
                format!("service {name} auto_start set to {on}"),
                Some(&serde_json::json!({ "auto_start": before })),
                Some(&serde_json::json!({ "auto_start": on })),
            ));
        }
        Ok(st)
    }

    /// Starts every service whose `auto_start` is set, in order. Failures are recorded
    /// (state `failed`) and logged; the others still start.
    pub async fn start_auto(&self) {
        let _g = self.ops.lock().await;
        for svc in &self.services {
            let auto = self.get(svc.name()).is_ok_and(|s| s.auto_start);
            if auto {
                self.start_locked(svc).await;
            } else {
                tracing::info!(service = svc.name(), "not started (auto_start is off)");
            }
        }
    }

    /// Stops every service, in reverse order (shutdown).
    pub async fn stop_all(&self) {
        let _g = self.ops.lock().await;
        for svc in self.services.iter().rev() {
            self.stop_locked(svc).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    use super::*;

    struct Fake {
        up: AtomicBool,
        fail: AtomicBool,
        starts: AtomicU32,
    }

    impl Service for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn start(&self) -> BoxFuture<'_, anyhow::Result<Vec<String>>> {
            Box::pin(async {
                if self.fail.load(Ordering::SeqCst) {
                    anyhow::bail!("port in use");
                }
                self.starts.fetch_add(1, Ordering::SeqCst);
                self.up.store(true, Ordering::SeqCst);
                Ok(vec!["127.0.0.1:1".into()])
            })
        }
        fn stop(&self) -> BoxFuture<'_, ()> {
            Box::pin(async { self.up.store(false, Ordering::SeqCst) })
        }
        fn default_auto_start(&self) -> bool {
            true
        }
        fn serving(&self) -> Option<Vec<String>> {
            self.up.load(Ordering::SeqCst).then(|| vec!["127.0.0.1:1".into()])
        }
    }

    fn fake() -> Arc<Fake> {
        Arc::new(Fake {
            up: AtomicBool::new(false),
            fail: AtomicBool::new(false),
            starts: AtomicU32::new(0),
        })
    }

    #[tokio::test]
    async fn start_stop_restart_and_events() {
        let store = Store::temporary();
        let bus = EventBus::in_memory();
        let f = fake();
        let sup = Supervisor::new(&store, bus.clone(), vec![f.clone() as Arc<dyn Service>]).unwrap();
        sup.start_auto().await;
        assert_eq!(sup.get("fake").unwrap().state, ServiceState::Running);
        assert!(f.up.load(Ordering::SeqCst));
        let st = sup.act("fake", Action::Stop).await.unwrap();
        assert_eq!(st.state, ServiceState::Stopped);
        assert!(!f.up.load(Ordering::SeqCst));
        sup.act("fake", Action::Restart).await.unwrap();
        assert_eq!(f.starts.load(Ordering::SeqCst), 2);
        let kinds: Vec<String> = bus.newest_first().map(|e| e.unwrap().kind).collect();
        assert_eq!(kinds, ["service.started", "service.stopped", "service.started"]);
    }

    #[tokio::test]
    async fn a_failed_start_is_a_state_with_a_reason() {
        let store = Store::temporary();
        let f = fake();
        f.fail.store(true, Ordering::SeqCst);
        let sup = Supervisor::new(&store, EventBus::in_memory(), vec![f as Arc<dyn Service>]).unwrap();
        let st = sup.act("fake", Action::Start).await.unwrap();
        assert_eq!(st.state, ServiceState::Failed);
        assert!(st.reason.unwrap().contains("port in use"));
    }

    #[tokio::test]
    async fn unknown_names_and_actions_list_the_valid_ones() {
        let store = Store::temporary();
        let sup = Supervisor::new(&store, EventBus::in_memory(), vec![fake() as Arc<dyn Service>]).unwrap();
        let e = sup.act("nope", Action::Start).await.unwrap_err().to_string();
        assert!(e.contains("fake"), "{e}");
        let e = Action::parse("reload").unwrap_err().to_string();
        assert!(e.contains("start, stop, restart"), "{e}");
    }

    #[tokio::test]
    async fn auto_start_is_persisted_and_honoured() {
        let store = Store::temporary();
        let f = fake();
        let sup = Supervisor::new(&store, EventBus::in_memory(), vec![f.clone() as Arc<dyn Service>]).unwrap();
        sup.set_auto_start("fake", false).await.unwrap();
        let sup2 = Supervisor::new(&store, EventBus::in_memory(), vec![f.clone() as Arc<dyn Service>]).unwrap();
        assert!(!sup2.get("fake").unwrap().auto_start);
        sup2.start_auto().await;
        assert_eq!(sup2.get("fake").unwrap().state, ServiceState::Stopped);
    }
}
