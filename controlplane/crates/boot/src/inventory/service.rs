//! The host service: the single write path for hosts (lock, validate, check uniqueness,
//! store, publish `host.created|updated|deleted` on the [`EventBus`]) and the reads every
//! other part uses (the API, the boot catalog's per-MAC script choice and its "profile in
//! use" check).
//!
//! State: the `hosts` table, a read-only view of whether a profile id exists (handed in by
//! the wiring, so inventory does not depend on the boot module), and one async mutex that
//! serialises host writes so the uniqueness check cannot race; the Secure Boot MACs,
//! published on a `watch` channel DHCP subscribes to.

use std::sync::Arc;

use time::OffsetDateTime;

use super::model::{Host, HostInput, HostView};
use bootlane_core::{
    events::{EventBus, EventKind, NewEvent},
    net::types::MacAddr,
    service_error::ServiceError,
    store::{Entity, Store, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// Answers whether a boot profile with this id exists (checked when a host names one).
pub type ProfileExists = Arc<dyn Fn(u64) -> Result<bool> + Send + Sync>;

/// Seals a host's BMC password before it is stored (passwords are stored encrypted with
/// the data directory's key). Implemented by the BMC module's key box and handed in by
/// the wiring, so inventory does not depend on it.
pub trait PasswordSealer: Send + Sync {
    /// The stored form of `plain`.
    fn seal(&self, plain: &str) -> String;
    /// True when `stored` is already a sealed value (not a plain password stored before
    /// sealing existed).
    fn is_sealed(&self, stored: &str) -> bool;
}

/// Hosts: reads and the one write path. Cheap to share behind an `Arc`.
pub struct HostService {
    hosts: Table<Host>,
    sealer: std::sync::OnceLock<Arc<dyn PasswordSealer>>,
    profile_exists: ProfileExists,
    baselines: Table<super::baseline::Baseline>,
    write: tokio::sync::Mutex<()>,
    events: Arc<EventBus>,
    /// The Secure Boot MACs, published to DHCP ([`HostService::secure_boot_hosts`]).
    secure_boot: tokio::sync::watch::Sender<std::collections::HashSet<MacAddr>>,
    /// MAC → host id, so [`HostService::by_mac`] reads one host instead of all: kept by
    /// every write here and rebuilt by [`HostService::resync`].
    by_mac: std::sync::RwLock<std::collections::HashMap<MacAddr, u64>>,
}

impl HostService {
    /// Opens the `hosts` table. `profile_exists` backs the `profile_id` check.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(store: &Store, profile_exists: ProfileExists, events: Arc<EventBus>) -> Result<Arc<Self>> {
        let s = Self {
            hosts: store.table()?,
            sealer: std::sync::OnceLock::new(),
            profile_exists,
            baselines: store.table()?,
            write: tokio::sync::Mutex::new(()),
            events,
            secure_boot: Default::default(),
            by_mac: Default::default(),
        };
        s.resync()?;
        Ok(Arc::new(s))
    }

    /// A receiver of the MACs of hosts with `secure_boot` set, republished by every host
    /// write that moves a flag or a flagged MAC (the DHCP handler reads it per request).
    pub fn secure_boot_hosts(&self) -> super::SecureBootHosts {
        self.secure_boot.subscribe()
    }

    /// Re-reads what the DHCP handler takes from hosts (the Secure Boot MACs): called
    /// when another node changed hosts (see `bootlane::cluster`).
    ///
    /// # Errors
    /// Store errors.
    pub fn resync(&self) -> Result<()> {
        let hosts = self.hosts.list()?;
        *self.by_mac.write().expect("host MAC index lock") =
            hosts.iter().filter_map(|h| Some((h.mac.parse().ok()?, h.id))).collect();
        self.refresh_secure_boot_from(&hosts);
        Ok(())
    }
}

/// Another node's host changes re-read the MAC index and the Secure Boot MACs
/// ([`HostService::resync`]).
impl bootlane_core::store::follow::Follower for HostService {
    fn name(&self) -> &'static str {
        "hosts"
    }

    fn trees(&self) -> &'static [&'static str] {
        &[Host::TREE]
    }

    fn follow<'a>(
        &'a self,
        _: &'a bootlane_core::store::follow::Burst,
    ) -> bootlane_core::store::follow::BoxFuture<'a, Result<(), bootlane_core::store::follow::FollowError>> {
        Box::pin(async move { Ok(self.resync()?) })
    }
}

impl HostService {
    fn refresh_secure_boot(&self) -> Result<()> {
        self.refresh_secure_boot_from(&self.hosts.list()?);
        Ok(())
    }

    fn refresh_secure_boot_from(&self, hosts: &[Host]) {
        let macs = hosts
            .iter()
            .filter(|h| h.secure_boot)
            .filter_map(|h| h.mac.parse().ok())
            .collect();
        self.secure_boot.send_if_modified(|g| {
            let changed = *g != macs;
            *g = macs;
            changed
        });
    }

    /// Sets the sealer of BMC passwords (once, at wiring) and seals the passwords stored
    /// in plain text before it existed; answers how many were sealed.
    ///
    /// # Errors
    /// Store errors.
    pub async fn set_password_sealer(&self, sealer: Arc<dyn PasswordSealer>) -> Result<usize> {
        let sealer = self.sealer.get_or_init(|| sealer).clone();
        let _w = self.write.lock().await;
        let mut n = 0;
        for mut h in self.hosts.list()? {
            if let Some(p) = h
                .bmc_password
                .as_deref()
                .filter(|p| !p.is_empty() && !sealer.is_sealed(p))
            {
                h.bmc_password = Some(sealer.seal(p));
                self.hosts.put(&h).await?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Seals a password just set from the API input.
    fn seal_new_password(&self, h: &mut Host) {
        if let (Some(s), Some(p)) = (self.sealer.get(), h.bmc_password.as_deref().filter(|p| !p.is_empty())) {
            h.bmc_password = Some(s.seal(p));
        }
    }

    /// Every host, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self) -> Result<Vec<Host>> {
        Ok(self.hosts.list()?)
    }

    /// One host.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], store errors.
    pub fn get(&self, id: u64) -> Result<Host> {
        self.hosts
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no host with id {id}")))
    }

    /// The host with this MAC, if registered.
    ///
    /// # Errors
    /// Store errors.
    pub fn by_mac(&self, mac: MacAddr) -> Result<Option<Host>> {
        let id = self.by_mac.read().expect("host MAC index lock").get(&mac).copied();
        match id {
            // The stored host is read again, so a write between the two reads is seen.
            Some(id) => Ok(self
                .hosts
                .get(id)?
                .filter(|h| h.mac.parse::<MacAddr>().ok() == Some(mac))),
            None => Ok(None),
        }
    }

    /// Holds host writes still while the guard lives, for a caller that checks hosts'
    /// references and then acts on the answer (deleting a profile no host uses), so no
    /// host can take the reference in between. Lock order: the caller's own lock first,
    /// then this one; host writes never take another service's lock.
    pub async fn hold_writes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.write.lock().await
    }

    fn check_unique(&self, h: &Host) -> Result<()> {
        for o in self.hosts.list()? {
            if o.id == h.id {
                continue;
            }
            if o.name == h.name {
                return Err(ServiceError::Conflict(format!(
                    "host name {:?} is already used by host {}",
                    h.name, o.id
                )));
            }
            if o.mac == h.mac {
                return Err(ServiceError::Conflict(format!(
                    "MAC {} is already registered to host {} ({})",
                    h.mac, o.id, o.name
                )));
            }
        }
        Ok(())
    }

    /// A `baseline_id` must name a stored baseline.
    fn check_baseline(&self, input: &HostInput) -> Result<()> {
        if let Some(Some(b)) = input.baseline_id {
            if self.baselines.get(b)?.is_none() {
                return Err(ServiceError::Invalid(format!(
                    "baseline_id {b}: no such baseline (GET /api/v1/baselines lists them)"
                )));
            }
        }
        Ok(())
    }

    /// Creates a host (`name` and `mac` required).
    ///
    /// # Errors
    /// Invalid (400), Conflict (409: name or MAC taken), store errors.
    pub async fn create(&self, input: HostInput) -> Result<Host> {
        if input.name.is_none() || input.mac.is_none() {
            return Err(ServiceError::Invalid("'name' and 'mac' are required".into()));
        }
        let _w = self.write.lock().await;
        let mut h = Host::blank(OffsetDateTime::now_utc());
        let new_password = matches!(input.bmc_password, Some(Some(_)));
        self.check_baseline(&input)?;
        h.apply(input, &*self.profile_exists)?;
        if new_password {
            self.seal_new_password(&mut h);
        }
        self.check_unique(&h)?;
        let h = self.hosts.insert(h).await?;
        self.event(EventKind::HostCreated, "create", None, Some(&h));
        Ok(h)
    }

    /// Merges `input` into host `id`.
    ///
    /// # Errors
    /// NotFound, Invalid, Conflict, store errors.
    pub async fn update(&self, id: u64, input: HostInput) -> Result<Host> {
        let _w = self.write.lock().await;
        let mut h = self.get(id)?;
        let before = h.clone();
        let new_password = matches!(input.bmc_password, Some(Some(_)));
        self.check_baseline(&input)?;
        h.apply(input, &*self.profile_exists)?;
        if new_password {
            self.seal_new_password(&mut h);
        }
        self.check_unique(&h)?;
        h.updated_at = OffsetDateTime::now_utc();
        self.hosts.put(&h).await?;
        self.event(EventKind::HostUpdated, "update", Some(&before), Some(&h));
        Ok(h)
    }

    /// Deletes host `id`, answering the deleted host.
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete(&self, id: u64) -> Result<Host> {
        let _w = self.write.lock().await;
        let h = self
            .hosts
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no host with id {id}")))?;
        self.event(EventKind::HostDeleted, "delete", Some(&h), None);
        Ok(h)
    }

    /// `host.*`; the payloads are [`HostView`]s (no BMC password). Called after every
    /// write, so it also moves the host in the MAC index and refreshes the Secure Boot
    /// MACs when a flag or MAC may have moved.
    fn event(&self, kind: EventKind, action: &str, before: Option<&Host>, after: Option<&Host>) {
        {
            let mut index = self.by_mac.write().expect("host MAC index lock");
            if let Some(m) = before.and_then(|b| b.mac.parse().ok()) {
                index.remove(&m);
            }
            if let Some((m, id)) = after.and_then(|a| Some((a.mac.parse().ok()?, a.id))) {
                index.insert(m, id);
            }
        }
        let sb = |h: Option<&Host>| h.map(|h| (h.secure_boot, h.mac.clone()));
        let touched = before.is_some_and(|h| h.secure_boot) || after.is_some_and(|h| h.secure_boot);
        if touched && sb(before) != sb(after) {
            if let Err(e) = self.refresh_secure_boot() {
                tracing::error!(error = %e, "refreshing the Secure Boot hosts failed");
            }
        }
        let Some(h) = after.or(before) else { return };
        let verb = kind.verb();
        self.events.publish(NewEvent::write(
            kind,
            "host",
            h.id,
            action,
            format!("host {} ({}) {verb}", h.name, h.mac),
            before.map(HostView::from).as_ref(),
            after.map(HostView::from).as_ref(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, mac: &str) -> HostInput {
        HostInput {
            name: Some(name.into()),
            mac: Some(mac.into()),
            ..Default::default()
        }
    }

    fn service(events: Arc<EventBus>) -> Arc<HostService> {
        HostService::open(&Store::temporary(), Arc::new(|id| Ok(id == 1)), events).unwrap()
    }

    #[tokio::test]
    async fn secure_boot_macs_are_published_to_subscribers() {
        let s = service(EventBus::in_memory());
        let mut rx = s.secure_boot_hosts();
        let h = s.create(input("plain", "52:54:00:00:00:01")).await.unwrap();
        assert!(!rx.has_changed().unwrap(), "no flag set: nothing published");
        let sb = s
            .create(HostInput {
                secure_boot: Some(true),
                ..input("sb", "52:54:00:00:00:02")
            })
            .await
            .unwrap();
        assert!(rx.has_changed().unwrap());
        let mac: MacAddr = "52:54:00:00:00:02".parse().unwrap();
        assert_eq!(*rx.borrow_and_update(), [mac].into_iter().collect());
        s.update(
            h.id,
            HostInput {
                secure_boot: Some(true),
                ..input("plain", "52:54:00:00:00:01")
            },
        )
        .await
        .unwrap();
        assert_eq!(
            rx.borrow_and_update().len(),
            2,
            "the second flag reaches the subscriber"
        );
        s.delete(sb.id).await.unwrap();
        assert!(!rx.borrow().contains(&mac), "a deleted host's MAC leaves the set");
    }

    /// Reverses the text behind a `sealed:` prefix: visibly not the plain password.
    struct Rev;
    impl PasswordSealer for Rev {
        fn seal(&self, plain: &str) -> String {
            format!("sealed:{}", plain.chars().rev().collect::<String>())
        }
        fn is_sealed(&self, stored: &str) -> bool {
            stored.starts_with("sealed:")
        }
    }

    #[tokio::test]
    async fn bmc_passwords_are_sealed_on_write_and_legacy_ones_at_wiring() {
        let s = service(EventBus::in_memory());
        let with_pw = |pw: &str| HostInput {
            bmc_password: Some(Some(pw.into())),
            ..input("n1", "52:54:00:00:00:09")
        };
        // Before a sealer exists (an earlier version): stored as given.
        let h = s.create(with_pw("old-pw")).await.unwrap();
        assert_eq!(h.bmc_password.as_deref(), Some("old-pw"));
        assert_eq!(s.set_password_sealer(Arc::new(Rev)).await.unwrap(), 1);
        assert_eq!(s.get(h.id).unwrap().bmc_password.as_deref(), Some("sealed:wp-dlo"));
        // Set again: nothing left to seal.
        assert_eq!(s.set_password_sealer(Arc::new(Rev)).await.unwrap(), 0);
        // New passwords are sealed on update; other updates leave the stored one alone.
        let pw = HostInput {
            bmc_password: Some(Some("new".into())),
            ..Default::default()
        };
        assert_eq!(
            s.update(h.id, pw).await.unwrap().bmc_password.as_deref(),
            Some("sealed:wen")
        );
        let desc = HostInput {
            description: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(
            s.update(h.id, desc).await.unwrap().bmc_password.as_deref(),
            Some("sealed:wen")
        );
    }

    #[tokio::test]
    async fn writes_check_uniqueness_and_publish_events() {
        let events = EventBus::in_memory();
        let mut sub = events.subscribe();
        let s = service(events.clone());
        let h = s.create(input("node1", "52:54:00:00:00:01")).await.unwrap();
        assert!(matches!(
            s.create(input("NODE1", "52:54:00:00:00:02")).await,
            Err(ServiceError::Conflict(_))
        ));
        assert!(matches!(
            s.create(input("node2", "52-54-00-00-00-01")).await,
            Err(ServiceError::Conflict(_))
        ));
        let with_profile = HostInput {
            profile_id: Some(Some(1)),
            ..Default::default()
        };
        assert_eq!(s.update(h.id, with_profile).await.unwrap().profile_id, Some(1));
        let mac = bootlane_core::net::types::normalise_mac("52:54:00:00:00:01").unwrap();
        assert_eq!(s.by_mac(mac).unwrap().map(|h| h.id), Some(h.id));
        // The MAC index follows a MAC change and a delete.
        let moved = HostInput {
            mac: Some("52:54:00:00:00:03".into()),
            ..Default::default()
        };
        s.update(h.id, moved).await.unwrap();
        let mac3 = bootlane_core::net::types::normalise_mac("52:54:00:00:00:03").unwrap();
        assert!(s.by_mac(mac).unwrap().is_none());
        assert_eq!(s.by_mac(mac3).unwrap().map(|h| h.id), Some(h.id));
        s.delete(h.id).await.unwrap();
        assert!(s.by_mac(mac3).unwrap().is_none());
        assert!(matches!(s.get(h.id), Err(ServiceError::NotFound(_))));
        let kinds: Vec<String> = std::iter::from_fn(|| sub.rx.try_recv().ok())
            .map(|e| e.kind.clone())
            .collect();
        assert_eq!(kinds, ["host.created", "host.updated", "host.updated", "host.deleted"]);
    }
}
