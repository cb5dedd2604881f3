//! The one path settings take from the configuration file and the API to the services.
//! Each settings group (DNS, TFTP, ...) declares its type as a [`Group`]: a serde struct
//! whose top-level fields are its keys, a validation that names every bad key, and per key
//! whether a change applies live, needs a restart of the group's service, or waits for the
//! next start of Bootlane ([`Effect`]). A [`Layer`] applies any group the same way:
//!
//! * the configuration file gives the base (the group's value built from the file);
//! * values stored through the API override it key by key. The group's document in
//!   `store.kv(G::TREE)` under `G::KEY` stays whole (every key, the shape older versions
//!   read, so a downgrade or an older node reads it as before), and the names of the keys
//!   set through the API are stored beside it under `<G::KEY>.api_keys` ([`api_keys_key`];
//!   groups whose older versions stored only the overrides keep doing so:
//!   [`Group::WHOLE_DOCUMENT`]).
//!   Only those keys override the file, and only where their value differs from the
//!   file's. A document without that list (written by an older version: the DNS document
//!   was seeded as a full copy of the file on the first start) is read key by key the same
//!   way, every key a candidate: the keys changed through the API keep their values, the
//!   others follow the file from now on;
//! * the effective value is published through a [`tokio::sync::watch`] channel: readers
//!   take the current value without a lock held across an await
//!   ([`Layer::get`]), and a service that must act on a change (rebind a socket) can
//!   await [`watch::Receiver::changed`] on [`Layer::subscribe`]. `watch` rather than
//!   `arc-swap` because it comes with tokio (no new dependency) and carries the change
//!   notification, not only the value;
//! * [`Layer::sources`] says for every key where its value came from ([`Source`]).
//!
//! Merging is per top-level key: a nested object (a list of subnets, a table) is one key
//! and is replaced whole. A key whose file value equals its default is reported as
//! `default`. A stored document that no longer fits (a value the group's validation now
//! refuses, a key the group no longer has) is read as far as it fits: the unfit keys are
//! dropped with a warning and the file's value serves. State: the stored overrides and the
//! effective value, per layer.

use std::{collections::BTreeMap, fmt, sync::Mutex};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;
use utoipa::ToSchema;

use crate::{
    service_error::ServiceError,
    store::{Kv, Store},
};

/// How a settings change took effect.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq)]
pub struct Applied {
    /// Keys applied at once.
    pub live: Vec<String>,
    /// Services restarted to apply the change.
    pub restarted: Vec<String>,
    /// Keys stored that apply at the next start of Bootlane.
    pub next_start: Vec<String>,
}

/// When a changed key takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// At once, in the running service.
    Live,
    /// When the group's service ([`Group::SERVICE`]) is restarted.
    Restart,
    /// At the next start of Bootlane.
    NextStart,
}

/// Where a key's effective value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The built-in default (the file does not set it, or sets it to the default).
    Default,
    /// The configuration file.
    File,
    /// A value stored through the API.
    Api,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::File => "file",
            Self::Api => "api",
        })
    }
}

/// One problem of a settings value: the key and a message that names it (what the API's
/// 400 answer says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The top-level key.
    pub key: String,
    /// The whole message, e.g. `'port' 0 is out of range: use 1-65535`.
    pub message: String,
}

impl Problem {
    /// A problem of `key`.
    pub fn new(key: &str, message: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A settings group: its type, where it is stored, how it is checked and how its keys
/// apply. The type must serialize to a JSON object (its keys are the group's keys).
pub trait Group: Serialize + DeserializeOwned + Clone + PartialEq + Send + Sync + 'static {
    /// The store tree of the stored document (`settings` for most groups).
    const TREE: &'static str;
    /// The key of the stored document in [`Group::TREE`] (e.g. `dns`).
    const KEY: &'static str;
    /// The supervisor's name of the service restarted for [`Effect::Restart`] keys.
    const SERVICE: &'static str;
    /// Whether the stored document holds every key, with the keys set through the API
    /// listed beside it ([`api_keys_key`]): for groups whose older versions stored and read
    /// the document whole (DNS, general), so a downgrade reads it as before. `false` (the
    /// default): the document holds only the overrides, as older versions of those groups
    /// (TFTP) wrote it.
    const WHOLE_DOCUMENT: bool = false;

    /// Every problem of the value, each naming its key; empty when it is valid.
    fn validate(&self) -> Vec<Problem>;

    /// When a change of `key` takes effect.
    fn effect(key: &str) -> Effect;

    /// The overrides a stored document holds, in this group's key names. The default reads
    /// the document's keys as they are; a group whose older documents used another shape
    /// (e.g. `null` for "not set") translates here.
    fn stored_overrides(doc: Map<String, Value>) -> Map<String, Value> {
        doc
    }

    /// The document stored for these overrides (only for groups that store the overrides
    /// alone, not [`Group::WHOLE_DOCUMENT`]): the inverse of [`Group::stored_overrides`].
    /// The default stores the overrides as they are; a group whose older versions read
    /// another shape writes that shape here, so they still read it.
    fn stored_document(overrides: &Map<String, Value>) -> Value {
        Value::Object(overrides.clone())
    }
}

/// The answer of [`Layer::set`]: the value before and after, the keys that changed and
/// how each applies (restarts named by service, not yet done: the caller restarts).
#[derive(Debug, Clone)]
pub struct Change<G> {
    /// The effective value before.
    pub before: G,
    /// The effective value now.
    pub after: G,
    /// The top-level keys whose value changed, in key order.
    pub changed: Vec<String>,
    /// `live` and `next_start` list the changed keys; `restarted` holds
    /// [`Group::SERVICE`] when a changed key needs it (the caller restarts the service if
    /// it runs and moves the name to `next_start` otherwise, as the answers say today).
    pub applied: Applied,
}

/// Serializes a group value to its object of keys.
fn object<G: Serialize>(v: &G) -> Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The effective value and the overrides that hold, from the file base, a stored
/// document and the list of keys set through the API (`None` for a document written
/// before the list existed; see the module doc for the rules). Pure: [`Layer::open`] and `bootlane config
/// show` use it.
///
/// # Errors
/// Never for a value built from the file; a file value that does not deserialize back into
/// the group (a bug of the group's type) is an error naming it.
pub fn resolve<G: Group>(
    file: &G,
    stored: Option<Value>,
    api_keys: Option<Vec<String>>,
) -> Result<(G, Map<String, Value>), String> {
    resolve_checked(file, stored, api_keys, &|_| Vec::new())
}

/// [`resolve`] with a further check of the merged value beside [`Group::validate`], for
/// rules that need more than the value (e.g. the netboot root against the data directory):
/// a stored key it names is dropped for the file's value like one validation refuses.
///
/// # Errors
/// As [`resolve`].
pub fn resolve_checked<G: Group>(
    file: &G,
    stored: Option<Value>,
    api_keys: Option<Vec<String>>,
    check: &dyn Fn(&G) -> Vec<Problem>,
) -> Result<(G, Map<String, Value>), String> {
    let base = object(file);
    let doc = match stored {
        Some(Value::Object(m)) => {
            let mut m = G::stored_overrides(m);
            if let Some(keys) = api_keys {
                m.retain(|k, _| keys.contains(k));
            }
            m
        }
        Some(Value::Null) | None => Map::new(),
        Some(other) => {
            tracing::warn!(
                "the stored {} settings are not an object ({other}); using the file",
                G::KEY
            );
            Map::new()
        }
    };
    let mut overrides = Map::new();
    let mut merged = base.clone();
    for (k, v) in doc {
        match base.get(&k) {
            None => tracing::warn!("the stored {} setting '{k}' is no longer a setting; ignored", G::KEY),
            Some(f) if *f == v => {}
            Some(_) => {
                let mut trial = merged.clone();
                trial.insert(k.clone(), v.clone());
                if serde_json::from_value::<G>(Value::Object(trial.clone())).is_ok() {
                    merged = trial;
                    overrides.insert(k, v);
                } else {
                    tracing::warn!(
                        "the stored {} setting '{k}' = {v} does not fit; using the file's",
                        G::KEY
                    );
                }
            }
        }
    }
    let mut value: G = serde_json::from_value(Value::Object(merged.clone()))
        .map_err(|e| format!("the {} settings from the file do not read back: {e}", G::KEY))?;
    let bad: Vec<String> = value
        .validate()
        .into_iter()
        .chain(check(&value))
        .filter(|p| overrides.contains_key(&p.key))
        .map(|p| {
            tracing::warn!("the stored {} setting is refused ({p}); using the file's", G::KEY);
            p.key
        })
        .collect();
    if !bad.is_empty() {
        for k in bad {
            overrides.remove(&k);
            if let Some(f) = base.get(&k) {
                merged.insert(k, f.clone());
            }
        }
        value = serde_json::from_value(Value::Object(merged))
            .map_err(|e| format!("the {} settings from the file do not read back: {e}", G::KEY))?;
    }
    Ok((value, overrides))
}

/// The key, beside the group's document, of the list of keys set through the API:
/// `<G::KEY>.api_keys` (e.g. `dns.api_keys` in the `settings` tree).
pub fn api_keys_key<G: Group>() -> String {
    format!("{}.api_keys", G::KEY)
}

/// Where each key's value came from, given the defaults, the file and the overrides.
pub fn sources<G: Group>(defaults: &G, file: &G, overrides: &Map<String, Value>) -> BTreeMap<String, Source> {
    let (d, f) = (object(defaults), object(file));
    f.iter()
        .map(|(k, v)| {
            let s = if overrides.contains_key(k) {
                Source::Api
            } else if d.get(k) == Some(v) {
                Source::Default
            } else {
                Source::File
            };
            (k.clone(), s)
        })
        .collect()
}

/// One group's settings: file base, stored overrides, the published effective value.
pub struct Layer<G: Group> {
    kv: Kv,
    defaults: G,
    file: G,
    overrides: Mutex<Map<String, Value>>,
    tx: watch::Sender<G>,
    write: tokio::sync::Mutex<()>,
}

impl<G: Group> Layer<G> {
    /// Reads the stored overrides of the group over `file` (the group's value from the
    /// configuration file); `defaults` is the value with no file (for [`Layer::sources`]).
    ///
    /// # Errors
    /// Store errors; [`ServiceError::Invalid`] when the file's value does not read back
    /// (see [`resolve`]).
    pub fn open(store: &Store, defaults: G, file: G) -> Result<Self, ServiceError> {
        Self::open_checked(store, defaults, file, &|_| Vec::new())
    }

    /// [`Layer::open`] with a further check of the stored keys (see [`resolve_checked`]).
    ///
    /// # Errors
    /// As [`Layer::open`].
    pub fn open_checked(
        store: &Store,
        defaults: G,
        file: G,
        check: &dyn Fn(&G) -> Vec<Problem>,
    ) -> Result<Self, ServiceError> {
        let kv = store.kv(G::TREE)?;
        let stored = kv.get::<Value>(G::KEY)?;
        let api_keys = if G::WHOLE_DOCUMENT {
            kv.get::<Vec<String>>(&api_keys_key::<G>())?
        } else {
            None
        };
        let (value, overrides) = resolve_checked(&file, stored, api_keys, check).map_err(ServiceError::Invalid)?;
        Ok(Self {
            kv,
            defaults,
            file,
            overrides: Mutex::new(overrides),
            tx: watch::Sender::new(value),
            write: tokio::sync::Mutex::new(()),
        })
    }

    /// The effective value now.
    pub fn get(&self) -> G {
        self.tx.borrow().clone()
    }

    /// A receiver of the effective value: sees every later change.
    pub fn subscribe(&self) -> watch::Receiver<G> {
        self.tx.subscribe()
    }

    /// The group's value from the configuration file (the base).
    pub fn file(&self) -> &G {
        &self.file
    }

    /// Where each key's effective value came from.
    pub fn sources(&self) -> BTreeMap<String, Source> {
        sources(
            &self.defaults,
            &self.file,
            &self.overrides.lock().unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Changes the effective value to `new`: validates it (every problem, each naming its
    /// key; a message several keys share is given once), stores the keys that differ from the file as the overrides (removing the
    /// document when none do), publishes it and answers what changed and how it applies.
    /// Setting the value it already has stores and publishes nothing. Calls are
    /// serialised; a caller that builds `new` from [`Layer::get`] and acts on it (binds
    /// sockets) first serialises that read-modify-write itself.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] with every problem (joined by `; `); store errors.
    pub async fn set(&self, new: G) -> Result<Change<G>, ServiceError> {
        let problems = new.validate();
        if !problems.is_empty() {
            // A problem of several keys (a pool's two ends) is named once per key.
            let mut all: Vec<String> = Vec::new();
            for p in problems.iter().map(ToString::to_string) {
                if !all.contains(&p) {
                    all.push(p);
                }
            }
            return Err(ServiceError::Invalid(all.join("; ")));
        }
        let _w = self.write.lock().await;
        let before = self.get();
        let (b, a) = (object(&before), object(&new));
        let changed: Vec<String> = a
            .iter()
            .filter(|(k, v)| b.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        let mut applied = Applied::default();
        for k in &changed {
            match G::effect(k) {
                Effect::Live => applied.live.push(k.clone()),
                Effect::NextStart => applied.next_start.push(k.clone()),
                Effect::Restart => {
                    if applied.restarted.is_empty() {
                        applied.restarted.push(G::SERVICE.to_owned());
                    }
                }
            }
        }
        if !changed.is_empty() {
            let file = object(&self.file);
            let overrides: Map<String, Value> = a
                .iter()
                .filter(|(k, v)| file.get(*k) != Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if overrides.is_empty() {
                self.kv.remove(G::KEY).await?;
                if G::WHOLE_DOCUMENT {
                    self.kv.remove(&api_keys_key::<G>()).await?;
                }
            } else if G::WHOLE_DOCUMENT {
                // The list first: a crash between the two writes leaves the older whole
                // document read through the newer list, never a key taken as set that was not.
                let keys: Vec<&String> = overrides.keys().collect();
                self.kv.put(&api_keys_key::<G>(), &keys).await?;
                self.kv.put(G::KEY, &a).await?;
            } else {
                self.kv.put(G::KEY, &G::stored_document(&overrides)).await?;
            }
            *self.overrides.lock().unwrap_or_else(|e| e.into_inner()) = overrides;
            self.tx.send_replace(new.clone());
        }
        Ok(Change {
            before,
            after: new,
            changed,
            applied,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Demo {
        port: u16,
        name: String,
        list: Vec<String>,
    }

    impl Group for Demo {
        const TREE: &'static str = "settings";
        const KEY: &'static str = "demo";
        const SERVICE: &'static str = "demo";
        const WHOLE_DOCUMENT: bool = true;
        fn validate(&self) -> Vec<Problem> {
            let mut p = Vec::new();
            if self.port == 0 {
                p.push(Problem::new("port", "'port' must be 1-65535"));
            }
            if self.name.is_empty() {
                p.push(Problem::new("name", "'name' must not be empty"));
            }
            p
        }
        fn effect(key: &str) -> Effect {
            match key {
                "port" => Effect::Restart,
                "name" => Effect::NextStart,
                _ => Effect::Live,
            }
        }
    }

    fn defaults() -> Demo {
        Demo {
            port: 53,
            name: "pxe".into(),
            list: vec!["a".into()],
        }
    }

    fn file() -> Demo {
        Demo {
            port: 5353,
            ..defaults()
        }
    }

    #[test]
    fn the_file_is_the_base_and_a_stored_key_overrides_it_key_by_key() {
        let (v, o) = resolve(&file(), Some(json!({"name": "lab"})), None).unwrap();
        assert_eq!(v.port, 5353, "the file's port");
        assert_eq!(v.name, "lab", "the stored name");
        assert_eq!(v.list, vec!["a".to_string()]);
        assert_eq!(o, json!({"name": "lab"}).as_object().unwrap().clone());
        let s = sources(&defaults(), &file(), &o);
        assert_eq!(s["port"], Source::File);
        assert_eq!(s["name"], Source::Api);
        assert_eq!(s["list"], Source::Default);
    }

    #[test]
    fn a_legacy_full_copy_overrides_only_where_it_differs_from_the_file() {
        // Seeded whole from an older file (port 53), then the name changed through the API.
        let legacy = json!({"port": 5353, "name": "lab", "list": ["a"]});
        let (v, o) = resolve(&file(), Some(legacy), None).unwrap();
        assert_eq!(
            v,
            Demo {
                name: "lab".into(),
                ..file()
            },
            "same value as before the upgrade"
        );
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            vec!["name"],
            "equal keys are not overrides"
        );
        // The file's next change of a key never changed through the API now applies.
        let newer = Demo { port: 5300, ..file() };
        let (v, _) = resolve(&newer, Some(json!({"port": 5353, "name": "lab", "list": ["a"]})), None).unwrap();
        assert_eq!(
            v.port, 5353,
            "a key differing from the new file still reads as an override"
        );
    }

    #[test]
    fn with_the_list_only_keys_set_through_the_api_override() {
        // A whole document as this version writes it: the name set through the API, the
        // port as the file said when it was written.
        let whole = json!({"port": 5353, "name": "lab", "list": ["a"]});
        let newer = Demo { port: 5300, ..file() };
        let (v, o) = resolve(&newer, Some(whole), Some(vec!["name".into()])).unwrap();
        assert_eq!(
            v.port, 5300,
            "the file's new port: the port was never set through the API"
        );
        assert_eq!(v.name, "lab");
        assert_eq!(o.keys().collect::<Vec<_>>(), vec!["name"]);
    }

    #[test]
    fn stored_keys_that_no_longer_fit_are_dropped_for_the_files() {
        let (v, o) = resolve(
            &file(),
            Some(json!({"port": 0, "name": 7, "gone": 1, "list": ["b"]})),
            None,
        )
        .unwrap();
        assert_eq!(v.port, 5353, "refused by validation");
        assert_eq!(v.name, "pxe", "wrong type");
        assert_eq!(v.list, vec!["b".to_string()]);
        assert_eq!(o.keys().collect::<Vec<_>>(), vec!["list"]);
    }

    #[test]
    fn a_further_check_drops_the_stored_keys_it_names() {
        let check = |d: &Demo| {
            if d.list.iter().any(|x| x == "bad") {
                vec![Problem::new("list", "'list' holds bad")]
            } else {
                Vec::new()
            }
        };
        let (v, o) = resolve_checked(&file(), Some(json!({"list": ["bad"], "name": "lab"})), None, &check).unwrap();
        assert_eq!(v.list, vec!["a".to_string()], "the file's list");
        assert_eq!(v.name, "lab");
        assert_eq!(o.keys().collect::<Vec<_>>(), vec!["name"]);
    }

    #[tokio::test]
    async fn set_validates_naming_every_key_stores_overrides_and_publishes() {
        let store = Store::temporary();
        let layer = Layer::open(&store, defaults(), file()).unwrap();
        let mut rx = layer.subscribe();
        let err = layer
            .set(Demo {
                port: 0,
                name: String::new(),
                ..file()
            })
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("'port'") && err.contains("'name'"), "{err}");
        assert!(!rx.has_changed().unwrap(), "nothing published for a refused value");

        let c = layer
            .set(Demo {
                port: 69,
                list: vec!["x".into()],
                ..file()
            })
            .await
            .unwrap();
        assert_eq!(c.changed, vec!["list", "port"]);
        assert_eq!(c.applied.live, vec!["list"]);
        assert_eq!(c.applied.restarted, vec!["demo"]);
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().port, 69, "the subscriber sees the new value");
        let kv = store.kv("settings").unwrap();
        let stored: Value = kv.get("demo").unwrap().unwrap();
        assert_eq!(
            stored,
            json!({"list": ["x"], "name": "pxe", "port": 69}),
            "the document stays whole, as older versions read it"
        );
        let keys: Vec<String> = kv.get("demo.api_keys").unwrap().unwrap();
        assert_eq!(keys, vec!["list", "port"], "the keys set through the API");
        assert_eq!(layer.sources()["port"], Source::Api);

        // Back to the file's values: no overrides left, the document goes.
        let c = layer.set(file()).await.unwrap();
        assert_eq!(c.applied.live, vec!["list"]);
        assert!(store.kv("settings").unwrap().get::<Value>("demo").unwrap().is_none());
        assert!(store
            .kv("settings")
            .unwrap()
            .get::<Value>("demo.api_keys")
            .unwrap()
            .is_none());
        assert_eq!(layer.sources()["port"], Source::File);
        // A value equal to the current one changes nothing.
        let c = layer.set(file()).await.unwrap();
        assert!(c.changed.is_empty());

        // Reopened: the stored overrides are read back over the file.
        layer
            .set(Demo {
                name: "lab".into(),
                ..file()
            })
            .await
            .unwrap();
        let again = Layer::open(&store, defaults(), file()).unwrap();
        assert_eq!(again.get().name, "lab");
        assert_eq!(again.get().port, 5353);
    }
}
