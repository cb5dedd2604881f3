//! The access-control service: the single write path for the mode, both lists and the
//! unauthorized devices. Every write takes one async lock, validates, stores (moves from
//! the unauthorized list to a list are one store transaction each), publishes its event
//! (`access.mode.changed`, `access.entry.created|deleted`, `access.unauthorized.deleted`)
//! and then swaps a fresh [`Snapshot`] into the [`AccessGate`], so the protocols see the
//! change at their next packet.
//!
//! The recorder ([`AccessService::spawn_recorder`], one task ending with the server's
//! token) drains the gate's refusal queue: it upserts whitelist refusals into the
//! unauthorized list by MAC (at most [`MAX_UNAUTHORIZED`] devices; the one seen longest
//! ago makes room) and publishes `access.refused` at most once per device per
//! [`REFUSED_EVENT_INTERVAL`] with the count held back since the previous one.
//!
//! State: the tables, the stored mode (key `mode` of the `access` key-value tree), the gate,
//! the MAC → record index of the unauthorized list (under the write lock).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

use super::{
    gate::{AccessGate, Reason, RefusalLimiter, Sighting, Snapshot, QUEUE},
    model::{AccessEntry, ListKind, MacPattern, UnauthorizedDevice},
    AccessConfig, Mode,
};
use bootlane_core::{
    events::{wire_name, AccessRefused, EventBus, EventKind, NewEvent},
    leases::LeaseDb,
    net::types::MacAddr,
    service_error::{short_text, ServiceError},
    store::{Entity, Kv, Store, StoreError, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// The key-value tree of the access mode.
const KV_TREE: &str = "access";

/// Most entries on each list.
pub const MAX_ENTRIES: usize = 10_000;
/// Most unauthorized devices kept.
pub const MAX_UNAUTHORIZED: usize = 10_000;
/// Most ids in one move (`add-to-whitelist|blacklist`).
pub const MAX_MOVE: usize = 1000;
/// Longest note, in bytes.
pub const MAX_NOTE: usize = 256;
/// At most one `access.refused` event per device per this interval.
pub const REFUSED_EVENT_INTERVAL: Duration = Duration::from_secs(60);

const MODE_KEY: &str = "mode";

/// Body of `POST /access/blacklist` and `POST /access/whitelist`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntryInput {
    /// A full MAC (`52:54:00:77:00:42`, `52-54-00-77-00-42`, `525400770042`) or a prefix
    /// of 3-5 octets, usually the OUI (`52:54:00`, `52-54-00`, `525400`).
    #[schema(
        pattern = r"^[ \t\n\f\r]*([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){2,5}|[0-9A-Fa-f]{2}(-[0-9A-Fa-f]{2}){2,5}|([0-9A-Fa-f]{2}){3,6}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})[ \t\n\f\r]*$",
        example = "52:54:00"
    )]
    pub mac: String,
    /// Free text, at most 256 bytes, no control characters. Default empty.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub note: String,
}

/// The mode in force and where it comes from (`GET/PUT /access/mode`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
pub struct ModeView {
    /// The mode enforced now.
    pub mode: Mode,
    /// `[access] mode` from the configuration file (used until a mode is stored).
    pub file_default: Mode,
    /// True once a mode was set through the API (it then wins over the file).
    pub stored: bool,
}

/// One id's outcome in a move from the unauthorized list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MoveResult {
    /// The unauthorized device id asked for.
    pub id: u64,
    /// True when the entry was created and the device record removed.
    pub ok: bool,
    /// The new list entry.
    pub entry: Option<AccessEntry>,
    /// Why it failed (no such device, already listed, list full).
    pub error: Option<String>,
}

/// Access control. Share it as `Arc<AccessService>`.
pub struct AccessService {
    config: AccessConfig,
    store: Store,
    kv: Kv,
    entries: Table<AccessEntry>,
    devices: Table<UnauthorizedDevice>,
    gate: Arc<AccessGate>,
    events: Arc<EventBus>,
    // The write lock; holds the unauthorized list's MAC → id index.
    write: tokio::sync::Mutex<HashMap<MacAddr, u64>>,
    queue: Mutex<Option<mpsc::Receiver<Sighting>>>,
}

impl AccessService {
    /// Opens the tables and the stored mode, builds the gate (resolving addresses through
    /// `leases`, the DHCP lease table).
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        config: &AccessConfig,
        store: &Store,
        leases: Option<Arc<tokio::sync::Mutex<LeaseDb>>>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        let kv = store.kv(KV_TREE)?;
        let entries: Table<AccessEntry> = store.table()?;
        let devices: Table<UnauthorizedDevice> = store.table()?;
        let mode = kv.get::<Mode>(MODE_KEY)?.unwrap_or(config.mode);
        let mut index = HashMap::new();
        for d in devices.list()? {
            if let Ok(m) = bootlane_core::net::types::normalise_mac(&d.mac) {
                index.insert(m, d.id);
            }
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        let gate = Arc::new(AccessGate::new(Snapshot::build(mode, &entries.list()?), leases, tx));
        if mode != Mode::Off {
            tracing::info!(mode = mode.as_str(), "access control enforcing");
        }
        Ok(Arc::new(Self {
            config: config.clone(),
            store: store.clone(),
            kv,
            entries,
            devices,
            gate,
            events,
            write: tokio::sync::Mutex::new(index),
            queue: Mutex::new(Some(rx)),
        }))
    }

    /// The gate the protocols call.
    pub fn gate(&self) -> Arc<AccessGate> {
        self.gate.clone()
    }

    /// Rebuilds the gate from the stored entries and mode: called when another node
    /// changed them (see `bootlane::cluster`).
    ///
    /// # Errors
    /// Store errors.
    pub fn resync(&self) -> Result<()> {
        let mode = self.stored_mode()?.unwrap_or(self.config.mode);
        self.refresh(mode)
    }
}

/// Another node's entries or mode rebuild the gate ([`AccessService::resync`]).
impl bootlane_core::store::follow::Follower for AccessService {
    fn name(&self) -> &'static str {
        "access"
    }

    fn trees(&self) -> &'static [&'static str] {
        &[AccessEntry::TREE, KV_TREE]
    }

    fn follow<'a>(
        &'a self,
        _: &'a bootlane_core::store::follow::Burst,
    ) -> bootlane_core::store::follow::BoxFuture<'a, Result<(), bootlane_core::store::follow::FollowError>> {
        Box::pin(async move { Ok(self.resync()?) })
    }
}

impl AccessService {
    /// Rebuilds the gate's snapshot from the store (after every write, under the lock).
    fn refresh(&self, mode: Mode) -> Result<()> {
        self.gate.swap(Snapshot::build(mode, &self.entries.list()?));
        Ok(())
    }

    fn stored_mode(&self) -> Result<Option<Mode>> {
        Ok(self.kv.get::<Mode>(MODE_KEY)?)
    }

    /// The mode in force and where it comes from.
    ///
    /// # Errors
    /// Store errors.
    pub fn mode(&self) -> Result<ModeView> {
        let stored = self.stored_mode()?;
        Ok(ModeView {
            mode: self.gate.snapshot().mode(),
            file_default: self.config.mode,
            stored: stored.is_some(),
        })
    }

    /// Stores and applies `mode` (the next packet is judged by it); publishes
    /// `access.mode.changed` when it differs.
    ///
    /// # Errors
    /// Store errors.
    pub async fn set_mode(&self, mode: Mode) -> Result<ModeView> {
        let _w = self.write.lock().await;
        let before = self.gate.snapshot().mode();
        self.kv.put(MODE_KEY, &mode).await?;
        self.refresh(mode)?;
        if before != mode {
            tracing::info!(from = before.as_str(), to = mode.as_str(), "access mode changed");
            self.events.publish(NewEvent::write(
                EventKind::AccessModeChanged,
                "access_mode",
                "mode",
                "update",
                format!("access mode changed from {} to {}", before.as_str(), mode.as_str()),
                Some(&before),
                Some(&mode),
            ));
        }
        drop(_w);
        self.mode()
    }

    /// The entries of `list`, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn entries(&self, list: ListKind) -> Result<Vec<AccessEntry>> {
        Ok(self.entries.list()?.into_iter().filter(|e| e.list == list).collect())
    }

    /// The entry of `list` whose pattern is `p`, if any.
    fn duplicate(all: &[AccessEntry], list: ListKind, p: &MacPattern) -> Option<u64> {
        let text = p.to_string();
        all.iter().find(|e| e.list == list && e.mac == text).map(|e| e.id)
    }

    /// Adds an entry to `list`.
    ///
    /// # Errors
    /// Invalid (a bad `mac`, naming the field and the forms accepted; a bad `note`),
    /// Conflict (the same MAC or prefix is already on that list; the list is full), store
    /// errors.
    pub async fn add_entry(&self, list: ListKind, input: EntryInput) -> Result<AccessEntry> {
        let p = MacPattern::parse(&input.mac).map_err(|e| ServiceError::Invalid(format!("'mac': {e}")))?;
        let note = short_text("note", input.note.trim(), MAX_NOTE)?;
        let _w = self.write.lock().await;
        let all = self.entries.list()?;
        if let Some(id) = Self::duplicate(&all, list, &p) {
            return Err(ServiceError::Conflict(format!(
                "{p} is already on the {} (entry {id})",
                list.as_str()
            )));
        }
        if all.iter().filter(|e| e.list == list).count() >= MAX_ENTRIES {
            return Err(ServiceError::Conflict(format!(
                "the {} is full ({MAX_ENTRIES} entries); delete some or use prefixes",
                list.as_str()
            )));
        }
        let e = self
            .entries
            .insert(AccessEntry {
                id: 0,
                list,
                mac: p.to_string(),
                prefix: !p.is_full(),
                note,
                created: OffsetDateTime::now_utc(),
            })
            .await?;
        self.refresh(self.gate.snapshot().mode())?;
        self.entry_event(EventKind::AccessEntryCreated, "create", None, Some(&e));
        Ok(e)
    }

    fn entry_event(&self, kind: EventKind, action: &str, before: Option<&AccessEntry>, after: Option<&AccessEntry>) {
        let Some(e) = after.or(before) else { return };
        let verb = kind.verb();
        self.events.publish(NewEvent::write(
            kind,
            "access_entry",
            e.id,
            action,
            format!(
                "{} {} {verb} ({})",
                e.list.as_str(),
                if e.prefix { "prefix" } else { "MAC" },
                e.mac
            ),
            before,
            after,
        ));
    }

    /// Deletes entry `id` of `list`; answers it.
    ///
    /// # Errors
    /// NotFound (no such entry on that list), store errors.
    pub async fn delete_entry(&self, list: ListKind, id: u64) -> Result<AccessEntry> {
        let _w = self.write.lock().await;
        let not_found = || ServiceError::NotFound(format!("no {} entry {id}", list.as_str()));
        let e = self.entries.get(id)?.ok_or_else(not_found)?;
        if e.list != list {
            return Err(not_found());
        }
        self.entries.remove(id).await?;
        self.refresh(self.gate.snapshot().mode())?;
        self.entry_event(EventKind::AccessEntryDeleted, "delete", Some(&e), None);
        Ok(e)
    }

    /// Every unauthorized device, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn unauthorized(&self) -> Result<Vec<UnauthorizedDevice>> {
        Ok(self.devices.list()?)
    }

    /// Deletes unauthorized device record `id`; answers it. (The device is recorded again
    /// at its next refused request.)
    ///
    /// # Errors
    /// NotFound, store errors.
    pub async fn delete_unauthorized(&self, id: u64) -> Result<UnauthorizedDevice> {
        let mut index = self.write.lock().await;
        let d = self
            .devices
            .remove(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("no unauthorized device {id}")))?;
        index.retain(|_, v| *v != id);
        self.events.publish(NewEvent::write(
            EventKind::AccessUnauthorizedDeleted,
            "access_unauthorized",
            id,
            "delete",
            format!("unauthorized device {} deleted", d.mac),
            Some(&d),
            None::<&UnauthorizedDevice>,
        ));
        Ok(d)
    }

    /// Moves unauthorized devices `ids` to `list`: for each, one transaction creates the
    /// entry (its full MAC, with `note` or a note saying where it came from) and removes
    /// the device record. One result per id, in the order asked.
    ///
    /// # Errors
    /// Invalid: empty, more than 1000 or repeated ids, a bad note. Per-id failures (no such
    /// device, already on the list, list full) are in the results; store errors.
    pub async fn move_unauthorized(&self, ids: &[u64], list: ListKind, note: Option<&str>) -> Result<Vec<MoveResult>> {
        if ids.is_empty() || ids.len() > MAX_MOVE {
            return Err(ServiceError::Invalid(format!(
                "'ids' must hold 1-{MAX_MOVE} device ids"
            )));
        }
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(ServiceError::Invalid("'ids' must not repeat an id".into()));
        }
        let note = note.map(|n| short_text("note", n.trim(), MAX_NOTE)).transpose()?;
        let mut index = self.write.lock().await;
        let mut all = self.entries.list()?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let fail = |e: String| MoveResult {
                id,
                ok: false,
                entry: None,
                error: Some(e),
            };
            let Some(d) = self.devices.get(id)? else {
                out.push(fail(format!("no unauthorized device {id}")));
                continue;
            };
            let Ok(p) = MacPattern::parse(&d.mac) else {
                out.push(fail(format!("device {id} has no valid MAC ({:?})", d.mac)));
                continue;
            };
            if let Some(e) = Self::duplicate(&all, list, &p) {
                out.push(fail(format!("{p} is already on the {} (entry {e})", list.as_str())));
                continue;
            }
            if all.iter().filter(|e| e.list == list).count() >= MAX_ENTRIES {
                out.push(fail(format!("the {} is full ({MAX_ENTRIES} entries)", list.as_str())));
                continue;
            }
            let note = note.clone().unwrap_or_else(|| {
                format!(
                    "from unauthorized devices (first seen {}, {} requests)",
                    d.first_seen.date(),
                    d.count
                )
            });
            let new = AccessEntry {
                id: 0,
                list,
                mac: p.to_string(),
                prefix: false,
                note: note.chars().take(MAX_NOTE).collect(),
                created: OffsetDateTime::now_utc(),
            };
            let e = self
                .store
                .transaction(&[AccessEntry::TREE, UnauthorizedDevice::TREE], |tx| {
                    if tx.get::<UnauthorizedDevice>(id)?.is_none() {
                        return Err(StoreError::Conflict(format!("unauthorized device {id} vanished")).into());
                    }
                    tx.remove::<UnauthorizedDevice>(id)?;
                    tx.insert(new.clone())
                })
                .await?;
            index.retain(|_, v| *v != id);
            all.push(e.clone());
            self.entry_event(EventKind::AccessEntryCreated, "create", None, Some(&e));
            self.events.publish(NewEvent::write(
                EventKind::AccessUnauthorizedDeleted,
                "access_unauthorized",
                id,
                "delete",
                format!("unauthorized device {} moved to the {}", d.mac, list.as_str()),
                Some(&d),
                None::<&UnauthorizedDevice>,
            ));
            out.push(MoveResult {
                id,
                ok: true,
                entry: Some(e),
                error: None,
            });
        }
        self.refresh(self.gate.snapshot().mode())?;
        Ok(out)
    }

    /// Records one refusal: whitelist refusals of a known MAC are upserted into the
    /// unauthorized list (unless the MAC was listed meanwhile). Events are the caller's
    /// ([`AccessService::spawn_recorder`]).
    ///
    /// # Errors
    /// Store errors.
    pub async fn record(&self, s: &Sighting) -> Result<Option<UnauthorizedDevice>> {
        let (Reason::NotWhitelisted, Some(mac)) = (s.reason, s.mac) else {
            return Ok(None);
        };
        let mut index = self.write.lock().await;
        if !self.gate.snapshot().decide(Some(mac)).refused() {
            return Ok(None);
        }
        let existing = match index.get(&mac) {
            Some(id) => self.devices.get(*id)?,
            None => None,
        };
        let d = match existing {
            Some(mut d) => {
                d.last_seen = s.at;
                d.count = d.count.saturating_add(1);
                d.last_protocol = s.protocol;
                if let Some(ip) = s.ip {
                    d.last_ip = Some(ip.to_string());
                }
                if s.arch.is_some() {
                    d.arch = s.arch;
                }
                if s.vendor_class.is_some() {
                    d.vendor_class.clone_from(&s.vendor_class);
                }
                self.devices.put(&d).await?;
                d
            }
            None => {
                if self.devices.len() >= MAX_UNAUTHORIZED {
                    let oldest = self.devices.list()?.into_iter().min_by_key(|d| d.last_seen);
                    if let Some(o) = oldest {
                        self.devices.remove(o.id).await?;
                        index.retain(|_, v| *v != o.id);
                    }
                }
                let d = self
                    .devices
                    .insert(UnauthorizedDevice {
                        id: 0,
                        mac: mac.to_string(),
                        first_seen: s.at,
                        last_seen: s.at,
                        count: 1,
                        last_ip: s.ip.map(|i| i.to_string()),
                        arch: s.arch,
                        vendor_class: s.vendor_class.clone(),
                        last_protocol: s.protocol,
                    })
                    .await?;
                index.insert(mac, d.id);
                d
            }
        };
        Ok(Some(d))
    }

    /// Publishes `access.refused` for `s` unless `limiter` holds it back.
    fn refused_event(&self, s: &Sighting, limiter: &mut RefusalLimiter) {
        let key = match (s.mac, s.ip) {
            (Some(m), _) => m.to_string(),
            (None, Some(ip)) => ip.to_string(),
            (None, None) => "unknown".into(),
        };
        let Some(held) = limiter.admit(&key, Instant::now()) else {
            return;
        };
        let mut summary = format!(
            "{} request from {key} refused: {}",
            s.protocol.as_str(),
            s.reason.describe()
        );
        if held > 0 {
            summary.push_str(&format!(" ({held} more refusals since the last report)"));
        }
        let mut e = NewEvent::new(EventKind::AccessRefused, summary)
            .resource(if s.mac.is_some() { "device" } else { "address" }, &key)
            .with(&refused_data(s, held));
        if let Some(ip) = s.ip {
            e = e.remote(ip);
        }
        self.events.publish(e);
    }

    /// Starts the recorder (see the module docs); it ends with `token`. Calling it twice
    /// does nothing the second time.
    pub fn spawn_recorder(self: &Arc<Self>, token: CancellationToken) {
        let Some(mut rx) = self.queue.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let me = self.clone();
        tokio::spawn(async move {
            let mut limiter = RefusalLimiter::new(REFUSED_EVENT_INTERVAL);
            loop {
                let s = tokio::select! {
                    () = token.cancelled() => break,
                    s = rx.recv() => match s { Some(s) => s, None => break },
                };
                me.refused_event(&s, &mut limiter);
                if let Err(e) = me.record(&s).await {
                    tracing::error!("recording an unauthorized device failed: {e}");
                }
            }
        });
    }
}

/// The `data` of `access.refused` for `s`, with `held` refusals suppressed since the last.
fn refused_data(s: &Sighting, held: u64) -> AccessRefused {
    AccessRefused {
        mac: s.mac.map(|m| m.to_string()),
        ip: s.ip,
        protocol: wire_name(&s.protocol),
        arch: s.arch,
        vendor_class: s.vendor_class.clone(),
        suppressed: held,
        reason: s.reason.label().to_string(),
        entry: match s.reason {
            Reason::Blacklisted { entry } => Some(entry),
            Reason::NotWhitelisted | Reason::UnknownClient => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;
    use crate::access::{
        gate::{Decision, Seen},
        model::Protocol,
    };
    use bootlane_core::net::types::normalise_mac;

    fn mac(s: &str) -> MacAddr {
        normalise_mac(s).unwrap()
    }

    fn svc() -> (Arc<AccessService>, Arc<EventBus>) {
        let events = EventBus::in_memory();
        let s = AccessService::open(&AccessConfig::default(), &Store::temporary(), None, events.clone()).unwrap();
        (s, events)
    }

    fn input(m: &str) -> EntryInput {
        EntryInput {
            mac: m.into(),
            note: "n".into(),
        }
    }

    fn sighting(m: &str, ip: &str, protocol: Protocol) -> Sighting {
        Sighting {
            at: OffsetDateTime::now_utc(),
            protocol,
            mac: Some(mac(m)),
            ip: Some(ip.parse::<IpAddr>().unwrap()),
            arch: (protocol == Protocol::Dhcp).then_some(0),
            vendor_class: (protocol == Protocol::Dhcp).then(|| "PXEClient:Arch:00000:UNDI:002001".into()),
            reason: Reason::NotWhitelisted,
        }
    }

    #[tokio::test]
    async fn entries_validate_refuse_duplicates_and_apply_at_once() {
        let (s, _) = svc();
        let g = s.gate();
        let seen = Seen {
            mac: Some(mac("52:54:00:12:34:56")),
            ..Seen::new(Protocol::Dhcp)
        };
        s.set_mode(Mode::Blacklist).await.unwrap();
        assert_eq!(g.check(&seen), Decision::Allow);
        let e = s.add_entry(ListKind::Blacklist, input("52-54-00")).await.unwrap();
        assert_eq!(
            (e.mac.as_str(), e.prefix, e.list),
            ("52:54:00", true, ListKind::Blacklist)
        );
        assert!(g.check(&seen).refused(), "the next packet sees the new entry");
        let err = s.add_entry(ListKind::Blacklist, input("525400")).await.unwrap_err();
        assert!(
            matches!(err, ServiceError::Conflict(ref m) if m.contains("already on the blacklist")),
            "{err}"
        );
        // The same pattern on the other list is not a duplicate.
        s.add_entry(ListKind::Whitelist, input("52:54:00")).await.unwrap();
        let err = s.add_entry(ListKind::Whitelist, input("52:54")).await.unwrap_err();
        assert!(
            matches!(err, ServiceError::Invalid(ref m) if m.starts_with("'mac'") && m.contains("OUI")),
            "{err}"
        );
        let err = s
            .add_entry(
                ListKind::Whitelist,
                EntryInput {
                    mac: "02:00:00:00:00:01".into(),
                    note: "x".repeat(300),
                },
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("'note'"), "{err}");
        assert_eq!(s.entries(ListKind::Blacklist).unwrap().len(), 1);
        let err = s.delete_entry(ListKind::Whitelist, e.id).await.unwrap_err();
        assert!(matches!(err, ServiceError::NotFound(_)), "an id of the other list");
        s.delete_entry(ListKind::Blacklist, e.id).await.unwrap();
        assert_eq!(g.check(&seen), Decision::Allow, "deleted: served again");
    }

    #[tokio::test]
    async fn mode_is_stored_wins_over_the_file_and_publishes_a_change() {
        let store = Store::temporary();
        let events = EventBus::in_memory();
        let cfg = AccessConfig { mode: Mode::Blacklist };
        let s = AccessService::open(&cfg, &store, None, events.clone()).unwrap();
        assert_eq!(
            s.mode().unwrap(),
            ModeView {
                mode: Mode::Blacklist,
                file_default: Mode::Blacklist,
                stored: false
            }
        );
        let last = events.last_id();
        s.set_mode(Mode::Whitelist).await.unwrap();
        s.set_mode(Mode::Whitelist).await.unwrap();
        let kinds: Vec<String> = events.after(last, 10).unwrap().into_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["access.mode.changed"], "one event per actual change");
        drop(s);
        let s = AccessService::open(&cfg, &store, None, events).unwrap();
        assert_eq!(
            s.mode().unwrap().mode,
            Mode::Whitelist,
            "the stored mode survives a restart"
        );
        assert!(s.mode().unwrap().stored);
        assert!(s.gate().enforcing());
    }

    #[tokio::test]
    async fn refusals_upsert_by_mac_and_move_to_a_list() {
        let (s, _) = svc();
        s.set_mode(Mode::Whitelist).await.unwrap();
        let d = s
            .record(&sighting("52:54:00:77:00:42", "0.0.0.0", Protocol::Dhcp))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((d.count, d.arch), (1, Some(0)));
        let mut t = sighting("52:54:00:77:00:42", "10.77.0.100", Protocol::Tftp);
        t.at += time::Duration::seconds(5);
        let d2 = s.record(&t).await.unwrap().unwrap();
        assert_eq!(d2.id, d.id, "one record per MAC");
        assert_eq!(d2.count, 2);
        assert_eq!(d2.last_ip.as_deref(), Some("10.77.0.100"));
        assert_eq!(d2.last_protocol, Protocol::Tftp);
        assert_eq!((d2.arch, d2.vendor_class.is_some()), (Some(0), true), "kept from DHCP");
        assert!(d2.last_seen > d2.first_seen);
        // Blacklist refusals and unknown clients are not recorded.
        let mut b = sighting("02:00:00:00:00:09", "10.0.0.9", Protocol::Dhcp);
        b.reason = Reason::Blacklisted { entry: 1 };
        assert!(s.record(&b).await.unwrap().is_none());
        let other = s
            .record(&sighting("02:00:00:00:00:07", "10.0.0.7", Protocol::Http))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(s.unauthorized().unwrap().len(), 2);

        let seen = Seen {
            mac: Some(mac("52:54:00:77:00:42")),
            ..Seen::new(Protocol::Dhcp)
        };
        assert!(s.gate().check(&seen).refused());
        let r = s
            .move_unauthorized(&[d.id, 999, other.id], ListKind::Whitelist, None)
            .await
            .unwrap();
        assert!(r[0].ok && !r[1].ok && r[2].ok, "{r:?}");
        assert!(r[1].error.as_deref().unwrap().contains("no unauthorized device"));
        let e = r[0].entry.as_ref().unwrap();
        assert_eq!((e.mac.as_str(), e.prefix), ("52:54:00:77:00:42", false));
        assert!(e.note.contains("2 requests"), "{}", e.note);
        assert!(s.unauthorized().unwrap().is_empty());
        assert_eq!(s.gate().check(&seen), Decision::Allow, "whitelisted at once");
        // Recorded again while listed: nothing is stored.
        assert!(s
            .record(&sighting("52:54:00:77:00:42", "10.0.0.1", Protocol::Dhcp))
            .await
            .unwrap()
            .is_none());
        // Moving a MAC already on the target list is a per-id error; the record stays.
        s.set_mode(Mode::Whitelist).await.unwrap();
        s.delete_entry(ListKind::Whitelist, r[2].entry.as_ref().unwrap().id)
            .await
            .unwrap();
        let again = s
            .record(&sighting("02:00:00:00:00:07", "10.0.0.7", Protocol::Dhcp))
            .await
            .unwrap()
            .unwrap();
        s.add_entry(ListKind::Blacklist, input("02:00:00:00:00:07"))
            .await
            .unwrap();
        let r = s
            .move_unauthorized(&[again.id], ListKind::Blacklist, Some("lab"))
            .await
            .unwrap();
        assert!(!r[0].ok && r[0].error.as_deref().unwrap().contains("already on the blacklist"));
        assert_eq!(s.unauthorized().unwrap().len(), 1);
        for bad in [&[][..], &[1, 1][..]] {
            assert!(matches!(
                s.move_unauthorized(bad, ListKind::Whitelist, None).await,
                Err(ServiceError::Invalid(_))
            ));
        }
        s.delete_unauthorized(again.id).await.unwrap();
        assert!(matches!(
            s.delete_unauthorized(again.id).await,
            Err(ServiceError::NotFound(_))
        ));
        // Deleted from the list and the index: the next refusal makes a new record.
        let fresh = s
            .record(&sighting("02:00:00:00:00:07", "10.0.0.7", Protocol::Dhcp))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(fresh.count, 1);
    }

    #[tokio::test]
    async fn the_recorder_stores_and_reports_refusals_once_per_device() {
        let (s, events) = svc();
        s.spawn_recorder(CancellationToken::new());
        s.set_mode(Mode::Whitelist).await.unwrap();
        let last = events.last_id();
        let seen = Seen {
            mac: Some(mac("52:54:00:77:00:42")),
            arch: Some(0),
            vendor_class: Some(b"PXEClient:Arch:00000:UNDI:002001"),
            ..Seen::new(Protocol::Dhcp)
        };
        for _ in 0..5 {
            assert!(s.gate().check(&seen).refused());
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let d = s.unauthorized().unwrap();
            if d.first().is_some_and(|d| d.count == 5) {
                assert_eq!(d[0].vendor_class.as_deref(), Some("PXEClient:Arch:00000:UNDI:002001"));
                break;
            }
            assert!(Instant::now() < deadline, "not recorded: {d:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let refused: Vec<_> = events
            .after(last, 100)
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == "access.refused")
            .collect();
        assert_eq!(refused.len(), 1, "rate limited per device");
        assert_eq!(refused[0].data["reason"], "not_whitelisted");
        assert_eq!(refused[0].data["protocol"], "dhcp");
        assert_eq!(refused[0].data["mac"], "52:54:00:77:00:42");
    }

    /// What the service built before the data had a type.
    fn old_refused_data(s: &Sighting, held: u64) -> serde_json::Value {
        let mut data = serde_json::json!({
            "mac": s.mac.map(|m| m.to_string()),
            "ip": s.ip.map(|i| i.to_string()),
            "protocol": s.protocol,
            "arch": s.arch,
            "vendor_class": s.vendor_class,
            "suppressed": held,
        });
        if let (Some(d), Ok(serde_json::Value::Object(r))) = (data.as_object_mut(), serde_json::to_value(s.reason)) {
            d.extend(r);
        }
        data
    }

    #[test]
    fn the_refusal_data_is_what_it_was_for_every_reason_and_protocol() {
        for protocol in [
            Protocol::Dhcp,
            Protocol::ProxyDhcp,
            Protocol::Tftp,
            Protocol::Http,
            Protocol::Ipxe,
        ] {
            for reason in [
                Reason::Blacklisted { entry: 12 },
                Reason::NotWhitelisted,
                Reason::UnknownClient,
            ] {
                let mut s = sighting("52:54:00:aa:00:01", "10.0.0.7", protocol);
                s.reason = reason;
                if reason == Reason::UnknownClient {
                    s.mac = None;
                }
                for held in [0, 3] {
                    assert_eq!(
                        serde_json::to_value(refused_data(&s, held)).unwrap(),
                        old_refused_data(&s, held),
                        "{protocol:?} {reason:?}"
                    );
                }
            }
        }
    }
}
