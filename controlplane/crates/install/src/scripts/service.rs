//! The script and baseline service: the single write path for scripts and their versions
//! (`scripts`, `script_versions`), baselines (`baselines`) and the machines' reports
//! (`script_reports`), and the resolution of which baselines and scripts apply to a
//! machine ([`ScriptService::assignment`]).
//!
//! Rules kept here: names are unique per kind (case-insensitive; 409); a stored script
//! that renders must compile (400 with the line); a version is stored on creation and on
//! every change of type, content, variables or render flag; a rollback stores a new
//! version; a script a baseline uses and a baseline a host or profile uses cannot be
//! deleted (409 naming the users); a baseline lists each script once; at most one
//! baseline is the default. Reports keep the last [`MAX_REPORTS_PER_HOST`] per machine;
//! each is an event (`script.run.succeeded` / `script.run.failed`).
//!
//! State: the tables and one async mutex serialising writes (the name and use checks
//! cannot race).

use std::{collections::BTreeMap, net::IpAddr, sync::Arc};

use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    AssignedBaseline, AssignedScript, Assignment, Baseline, BaselineInput, OsFilter, Script, ScriptInput, ScriptReport,
    ScriptRevision, ScriptRun, ScriptVariable, MAX_REPORTS_PER_HOST, MAX_REPORT_OUTPUT, MAX_SCRIPT,
};
use crate::answers::render;
use bootlane_boot::{
    boot::catalog::BootCatalog,
    inventory::{model::Host, service::HostService},
};
use bootlane_core::{
    events::{wire_name, BaselineChanged, EventBus, EventData, EventKind, NewEvent, ScriptChanged, ScriptRunReported},
    net::types::{normalise_mac, MacAddr},
    service_error::{short_text, ServiceError},
    store::{Entity, Store, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// Names a script cannot use for its variables (the template's own objects).
pub const RESERVED_VARS: &[&str] = &["host", "server", "baseline"];

/// Fuel for rendering one script (minijinja instructions).
pub const SCRIPT_FUEL: u64 = 200_000;

const SCRIPT_TABLES: &[&str] = &[<Script as Entity>::TREE, <ScriptRevision as Entity>::TREE];

const VARS_HINT: &str = "host (name, mac, ip), server (base_url), baseline (name) and the script's variables";

/// `GET /scripts/{id}/diff/{version}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ScriptVersionDiff)]
pub struct ScriptDiff {
    /// The version compared with the current content.
    pub version: u32,
    /// The current version.
    pub current: u32,
    /// True when the contents are the same.
    pub identical: bool,
    /// Unified diff from the version to the current content (3 lines of context).
    pub diff: String,
}

/// `host` in a script template.
#[derive(Debug, Clone, Serialize)]
struct HostVars {
    name: String,
    mac: String,
    ip: Option<String>,
}

/// What a machine is, for resolving its baselines.
#[derive(Debug, Clone, Default)]
pub struct Machine {
    /// Its MAC.
    pub mac: String,
    /// Its OS family and version when known (from its install task's image, or asked).
    pub os: Option<(String, Option<String>)>,
    /// The server's base URL as the machine reaches it (`server.base_url`).
    pub base_url: String,
}

/// Scripts, baselines and reports.
pub struct ScriptService {
    store: Store,
    scripts: Table<Script>,
    versions: Table<ScriptRevision>,
    baselines: Table<Baseline>,
    reports: Table<ScriptReport>,
    hosts: Arc<HostService>,
    catalog: Arc<BootCatalog>,
    events: Arc<EventBus>,
    write: tokio::sync::Mutex<()>,
}

fn name_rule(field: &str, n: &str) -> Result<String> {
    let n = n.trim();
    if n.is_empty() || n.chars().count() > 100 || n.chars().any(char::is_control) {
        return Err(ServiceError::Invalid(format!(
            "'{field}' must be 1-100 characters without control characters"
        )));
    }
    Ok(n.to_string())
}

fn var_name(field: &str, n: &str) -> Result<()> {
    let mut c = n.chars();
    let ok = n.len() <= 64
        && c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    if !ok {
        return Err(ServiceError::Invalid(format!(
            "{field} {n:?} is not a variable name (a letter or _, then letters, digits or _; at most 64)"
        )));
    }
    if RESERVED_VARS.contains(&n) {
        return Err(ServiceError::Invalid(format!(
            "{field} {n:?} is reserved (host, server and baseline are given to every script)"
        )));
    }
    Ok(())
}

fn check_variables(vars: &[ScriptVariable]) -> Result<()> {
    if vars.len() > 64 {
        return Err(ServiceError::Invalid(
            "'variables' may list at most 64 variables".into(),
        ));
    }
    for (i, v) in vars.iter().enumerate() {
        var_name("variable", &v.name)?;
        if vars[..i].iter().any(|o| o.name == v.name) {
            return Err(ServiceError::Invalid(format!("variable {:?} is listed twice", v.name)));
        }
        short_text("variables[].description", &v.description, 500)?;
        if let Some(d) = &v.default {
            short_text("variables[].default", d, 4096)?;
        }
    }
    Ok(())
}

fn check_content(c: &str, render_it: bool) -> Result<()> {
    if c.trim().is_empty() || c.len() > MAX_SCRIPT || c.contains('\0') {
        return Err(ServiceError::Invalid(format!(
            "'content' must be a non-empty program of at most {MAX_SCRIPT} bytes without NUL"
        )));
    }
    if render_it {
        render::compile(c).map_err(|p| {
            ServiceError::Invalid(format!(
                "'content' is not a valid template: {p}; set 'render': false to serve it exactly as written"
            ))
        })?;
    }
    Ok(())
}

impl ScriptService {
    /// Opens the tables.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        store: &Store,
        hosts: Arc<HostService>,
        catalog: Arc<BootCatalog>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            store: store.clone(),
            scripts: store.table()?,
            versions: store.table()?,
            baselines: store.table()?,
            reports: store.table()?,
            hosts,
            catalog,
            events,
            write: tokio::sync::Mutex::new(()),
        }))
    }

    fn publish<D: EventData>(&self, kind: EventKind, resource: &str, id: u64, message: String, data: &D) {
        self.events
            .publish(NewEvent::new(kind, message).resource(resource, id).with(data));
    }

    // ----- scripts -------------------------------------------------------------------

    /// Every script, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self) -> Result<Vec<Script>> {
        Ok(self.scripts.list()?)
    }

    /// One script.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub fn get(&self, id: u64) -> Result<Script> {
        self.scripts
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no script with id {id}; GET /api/v1/scripts lists them")))
    }

    /// The script named `name` (case-insensitive), if any.
    ///
    /// # Errors
    /// Store errors.
    pub fn script_named(&self, name: &str) -> Result<Option<Script>> {
        let lower = name.trim().to_lowercase();
        Ok(self
            .scripts
            .list()?
            .into_iter()
            .find(|s| s.name.to_lowercase() == lower))
    }

    fn script_name_free(&self, name: &str, except: u64) -> Result<()> {
        match self.script_named(name)? {
            Some(o) if o.id != except => Err(ServiceError::Conflict(format!(
                "a script named {:?} exists already (id {}); choose another name",
                o.name, o.id
            ))),
            _ => Ok(()),
        }
    }

    fn revision(s: &Script, comment: &str) -> ScriptRevision {
        ScriptRevision {
            id: 0,
            script_id: s.id,
            version: s.version,
            kind: s.kind,
            content: s.content.clone(),
            variables: s.variables.clone(),
            render: s.render,
            comment: comment.to_string(),
            created_at: s.updated_at,
        }
    }

    /// Creates a script (and its version 1).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field; [`ServiceError::Conflict`] for a name
    /// in use; store errors.
    pub async fn create(&self, input: ScriptInput) -> Result<Script> {
        let name = name_rule(
            "name",
            input
                .name
                .as_deref()
                .ok_or_else(|| ServiceError::Invalid("'name' is required".into()))?,
        )?;
        let kind = input
            .kind
            .ok_or_else(|| ServiceError::Invalid("'type' is required: sh, bash, python, powershell or cmd".into()))?;
        let content = input
            .content
            .ok_or_else(|| ServiceError::Invalid("'content' is required".into()))?;
        let render_it = input.render.unwrap_or(true);
        check_content(&content, render_it)?;
        let variables = input.variables.unwrap_or_default();
        check_variables(&variables)?;
        let description = short_text("description", input.description.as_deref().unwrap_or(""), 1000)?;
        let comment = short_text("comment", input.comment.as_deref().unwrap_or("created"), 500)?;
        let _w = self.write.lock().await;
        self.script_name_free(&name, 0)?;
        let now = OffsetDateTime::now_utc();
        let s = Script {
            id: 0,
            name,
            kind,
            content,
            description,
            variables,
            render: render_it,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        let s = self
            .store
            .transaction(SCRIPT_TABLES, |tx| {
                let s = tx.insert(s.clone())?;
                tx.insert(Self::revision(&s, &comment))?;
                Ok(s)
            })
            .await?;
        self.script_event(EventKind::ScriptCreated, &s);
        Ok(s)
    }

    fn script_event(&self, kind: EventKind, s: &Script) {
        let action = kind.verb();
        self.publish(
            kind,
            "script",
            s.id,
            format!("script {:?} {action} (version {})", s.name, s.version),
            &ScriptChanged {
                name: s.name.clone(),
                kind: wire_name(&s.kind),
                version: s.version,
            },
        );
    }

    /// Stores `next`; a change of type, content, variables or render stores a version.
    async fn save_script(&self, current: &Script, mut next: Script, comment: &str, force: bool) -> Result<Script> {
        let changed = force
            || next.kind != current.kind
            || next.content != current.content
            || next.variables != current.variables
            || next.render != current.render;
        next.updated_at = OffsetDateTime::now_utc();
        if changed {
            next.version = current.version + 1;
        }
        self.store
            .transaction(SCRIPT_TABLES, |tx| {
                tx.put(&next)?;
                if changed {
                    tx.insert(Self::revision(&next, comment))?;
                }
                Ok(())
            })
            .await?;
        Ok(next)
    }

    /// Changes a script (omitted fields keep their values).
    ///
    /// # Errors
    /// As [`ScriptService::create`]; [`ServiceError::NotFound`].
    pub async fn update(&self, id: u64, input: ScriptInput) -> Result<Script> {
        let name = input.name.as_deref().map(|n| name_rule("name", n)).transpose()?;
        let description = input
            .description
            .as_deref()
            .map(|d| short_text("description", d, 1000))
            .transpose()?;
        if let Some(v) = &input.variables {
            check_variables(v)?;
        }
        let comment = short_text("comment", input.comment.as_deref().unwrap_or("updated"), 500)?;
        let _w = self.write.lock().await;
        let current = self.get(id)?;
        if let Some(n) = &name {
            self.script_name_free(n, id)?;
        }
        let next = Script {
            name: name.unwrap_or_else(|| current.name.clone()),
            kind: input.kind.unwrap_or(current.kind),
            content: input.content.unwrap_or_else(|| current.content.clone()),
            description: description.unwrap_or_else(|| current.description.clone()),
            variables: input.variables.unwrap_or_else(|| current.variables.clone()),
            render: input.render.unwrap_or(current.render),
            ..current.clone()
        };
        check_content(&next.content, next.render)?;
        let s = self.save_script(&current, next, &comment, false).await?;
        self.script_event(EventKind::ScriptUpdated, &s);
        Ok(s)
    }

    /// Deletes a script and its versions; refused while a baseline lists it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::Conflict`] naming the baselines; store.
    pub async fn delete(&self, id: u64) -> Result<Script> {
        let _w = self.write.lock().await;
        let s = self.get(id)?;
        let users: Vec<String> = self
            .baselines
            .list()?
            .into_iter()
            .filter(|b| b.script_ids.contains(&id))
            .map(|b| format!("{:?} (id {})", b.name, b.id))
            .collect();
        if !users.is_empty() {
            return Err(ServiceError::Conflict(format!(
                "script {:?} is used by baseline{} {}; remove it from them first (PUT /api/v1/baselines/{{id}}/scripts)",
                s.name,
                if users.len() > 1 { "s" } else { "" },
                users.join(", ")
            )));
        }
        let versions: Vec<u64> = self.versions_of(id)?.into_iter().map(|v| v.id).collect();
        self.store
            .transaction(SCRIPT_TABLES, |tx| {
                tx.remove::<Script>(id)?;
                for v in &versions {
                    tx.remove::<ScriptRevision>(*v)?;
                }
                Ok(())
            })
            .await?;
        self.script_event(EventKind::ScriptDeleted, &s);
        Ok(s)
    }

    fn versions_of(&self, id: u64) -> Result<Vec<ScriptRevision>> {
        Ok(bootlane_core::store::versions::history(&self.versions, id)?)
    }

    /// A script's versions, newest first.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub fn versions(&self, id: u64) -> Result<Vec<ScriptRevision>> {
        self.get(id)?;
        self.versions_of(id)
    }

    /// One version of a script.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for the script or the version; store errors.
    pub fn version(&self, id: u64, version: u32) -> Result<ScriptRevision> {
        self.versions(id)?
            .into_iter()
            .find(|v| v.version == version)
            .ok_or_else(|| ServiceError::NotFound(format!("script {id} has no version {version}")))
    }

    /// The unified diff from `version` to the current content.
    ///
    /// # Errors
    /// As [`ScriptService::version`].
    pub fn diff(&self, id: u64, version: u32) -> Result<ScriptDiff> {
        let s = self.get(id)?;
        let v = self.version(id, version)?;
        let diff = bootlane_core::store::versions::unified_diff(
            &v.content,
            &s.content,
            &format!("version {version}"),
            &format!("version {} (current)", s.version),
        );
        Ok(ScriptDiff {
            version,
            current: s.version,
            identical: v.content == s.content,
            diff,
        })
    }

    /// Restores a version (type, content, variables, render flag) as a new version.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub async fn rollback(&self, id: u64, version: u32) -> Result<Script> {
        let _w = self.write.lock().await;
        let current = self.get(id)?;
        let v = self.version(id, version)?;
        let next = Script {
            kind: v.kind,
            content: v.content.clone(),
            variables: v.variables.clone(),
            render: v.render,
            ..current.clone()
        };
        let s = self
            .save_script(&current, next, &format!("rollback to version {version}"), true)
            .await?;
        self.script_event(EventKind::ScriptRolledBack, &s);
        Ok(s)
    }

    // ----- baselines -----------------------------------------------------------------

    /// Every baseline, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn baselines(&self) -> Result<Vec<Baseline>> {
        Ok(self.baselines.list()?)
    }

    /// One baseline.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub fn baseline(&self, id: u64) -> Result<Baseline> {
        self.baselines.get(id)?.ok_or_else(|| {
            ServiceError::NotFound(format!("no baseline with id {id}; GET /api/v1/baselines lists them"))
        })
    }

    /// The baseline named `name` (case-insensitive), if any.
    ///
    /// # Errors
    /// Store errors.
    pub fn baseline_named(&self, name: &str) -> Result<Option<Baseline>> {
        let lower = name.trim().to_lowercase();
        Ok(self
            .baselines
            .list()?
            .into_iter()
            .find(|b| b.name.to_lowercase() == lower))
    }

    fn check_script_ids(&self, ids: &[u64]) -> Result<()> {
        if ids.len() > 200 {
            return Err(ServiceError::Invalid("a baseline lists at most 200 scripts".into()));
        }
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                return Err(ServiceError::Invalid(format!(
                    "script {id} is listed twice; a baseline runs each script once"
                )));
            }
            if self.scripts.get(*id)?.is_none() {
                return Err(ServiceError::Invalid(format!(
                    "script_ids: no script with id {id} (GET /api/v1/scripts lists them)"
                )));
            }
        }
        Ok(())
    }

    fn check_baseline_vars(vars: &BTreeMap<String, String>) -> Result<()> {
        if vars.len() > 64 {
            return Err(ServiceError::Invalid("'variables' may set at most 64 variables".into()));
        }
        for (k, v) in vars {
            var_name("variable", k)?;
            short_text("variables value", v, 4096)?;
        }
        Ok(())
    }

    /// Inside a baseline write: the default flag moves to `keep`.
    async fn clear_other_defaults(&self, keep: u64) -> Result<()> {
        for mut o in self
            .baselines
            .list()?
            .into_iter()
            .filter(|b| b.id != keep && b.is_default)
        {
            o.is_default = false;
            o.updated_at = OffsetDateTime::now_utc();
            self.baselines.put(&o).await?;
        }
        Ok(())
    }

    fn baseline_event(&self, kind: EventKind, b: &Baseline) {
        let action = kind.verb();
        self.publish(
            kind,
            "baseline",
            b.id,
            format!("baseline {:?} {action} ({} scripts)", b.name, b.script_ids.len()),
            &BaselineChanged {
                name: b.name.clone(),
                script_ids: b.script_ids.clone(),
                is_default: b.is_default,
            },
        );
    }

    fn apply_baseline(&self, b: &mut Baseline, input: BaselineInput) -> Result<()> {
        if let Some(n) = input.name {
            b.name = name_rule("name", &n)?;
        }
        if let Some(d) = input.description {
            b.description = short_text("description", &d, 1000)?;
        }
        if let Some(f) = input.os_filter {
            f.check()?;
            b.os_filter = f;
        }
        if let Some(v) = input.variables {
            Self::check_baseline_vars(&v)?;
            b.variables = v;
        }
        if let Some(ids) = input.script_ids {
            self.check_script_ids(&ids)?;
            b.script_ids = ids;
        }
        if let Some(d) = input.is_default {
            b.is_default = d;
        }
        Ok(())
    }

    fn baseline_name_free(&self, name: &str, except: u64) -> Result<()> {
        match self.baseline_named(name)? {
            Some(o) if o.id != except => Err(ServiceError::Conflict(format!(
                "a baseline named {:?} exists already (id {}); choose another name",
                o.name, o.id
            ))),
            _ => Ok(()),
        }
    }

    /// Creates a baseline (`name` required).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field (an unknown or repeated script);
    /// [`ServiceError::Conflict`] for a name in use; store errors.
    pub async fn create_baseline(&self, input: BaselineInput) -> Result<Baseline> {
        if input.name.is_none() {
            return Err(ServiceError::Invalid("'name' is required".into()));
        }
        let _w = self.write.lock().await;
        let now = OffsetDateTime::now_utc();
        let mut b = Baseline {
            id: 0,
            name: String::new(),
            description: String::new(),
            os_filter: OsFilter::default(),
            variables: BTreeMap::new(),
            script_ids: Vec::new(),
            is_default: false,
            created_at: now,
            updated_at: now,
        };
        self.apply_baseline(&mut b, input)?;
        self.baseline_name_free(&b.name, 0)?;
        let b = self.baselines.insert(b).await?;
        if b.is_default {
            self.clear_other_defaults(b.id).await?;
        }
        self.baseline_event(EventKind::BaselineCreated, &b);
        Ok(b)
    }

    /// Changes a baseline (omitted fields keep their values).
    ///
    /// # Errors
    /// As [`ScriptService::create_baseline`]; [`ServiceError::NotFound`].
    pub async fn update_baseline(&self, id: u64, input: BaselineInput) -> Result<Baseline> {
        let _w = self.write.lock().await;
        let mut b = self.baseline(id)?;
        self.apply_baseline(&mut b, input)?;
        self.baseline_name_free(&b.name, id)?;
        b.updated_at = OffsetDateTime::now_utc();
        self.baselines.put(&b).await?;
        if b.is_default {
            self.clear_other_defaults(b.id).await?;
        }
        self.baseline_event(EventKind::BaselineUpdated, &b);
        Ok(b)
    }

    /// Replaces a baseline's scripts (ordered, each once).
    ///
    /// # Errors
    /// As [`ScriptService::update_baseline`].
    pub async fn set_scripts(&self, id: u64, script_ids: Vec<u64>) -> Result<Baseline> {
        self.update_baseline(
            id,
            BaselineInput {
                script_ids: Some(script_ids),
                ..Default::default()
            },
        )
        .await
    }

    /// A baseline's scripts, in run order.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub fn baseline_scripts(&self, id: u64) -> Result<Vec<Script>> {
        let b = self.baseline(id)?;
        let mut out = Vec::with_capacity(b.script_ids.len());
        for s in &b.script_ids {
            out.extend(self.scripts.get(*s)?);
        }
        Ok(out)
    }

    /// Deletes a baseline; refused while a host or profile is assigned it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; [`ServiceError::Conflict`] naming the users; store.
    pub async fn delete_baseline(&self, id: u64) -> Result<Baseline> {
        let _w = self.write.lock().await;
        let b = self.baseline(id)?;
        let mut users: Vec<String> = self
            .hosts
            .list()?
            .into_iter()
            .filter(|h| h.baseline_id == Some(id))
            .map(|h| format!("host {:?} (id {})", h.name, h.id))
            .collect();
        users.extend(
            self.catalog
                .profiles()?
                .into_iter()
                .filter(|p| p.baseline_id == Some(id))
                .map(|p| format!("profile {:?} (id {})", p.name, p.id)),
        );
        if !users.is_empty() {
            return Err(ServiceError::Conflict(format!(
                "baseline {:?} is assigned to {}; assign them another baseline (or null) first",
                b.name,
                users.join(", ")
            )));
        }
        self.baselines.remove(id).await?;
        self.baseline_event(EventKind::BaselineDeleted, &b);
        Ok(b)
    }

    // ----- resolution ----------------------------------------------------------------

    /// The baselines and scripts for `m`: its host's baseline, its profile's (its host's
    /// profile, else the default profile), then the default baseline; deduplicated, in
    /// that order, skipping those whose OS filter the known OS fails; each script
    /// rendered with `host`, `server`, `baseline` and the variables (the script's
    /// defaults under the baseline's values).
    ///
    /// # Errors
    /// Store errors.
    pub fn assignment(&self, m: &Machine) -> Result<Assignment> {
        let mac: MacAddr = normalise_mac(&m.mac).map_err(|e| ServiceError::Invalid(format!("'mac': {e}")))?;
        let host = self.hosts.by_mac(mac)?;
        let profile = match host.as_ref().and_then(|h| h.profile_id) {
            Some(p) => self.catalog.profile(p).ok(),
            None => self.catalog.default_profile().ok(),
        };
        let mut chain: Vec<(u64, &str)> = Vec::new();
        if let Some(b) = host.as_ref().and_then(|h| h.baseline_id) {
            chain.push((b, "host"));
        }
        if let Some(b) = profile.as_ref().and_then(|p| p.baseline_id) {
            chain.push((b, "profile"));
        }
        let all = self.baselines.list()?;
        if let Some(d) = all.iter().find(|b| b.is_default) {
            chain.push((d.id, "default"));
        }
        let mut out = Assignment {
            mac: mac.to_string(),
            host_id: host.as_ref().map(|h| h.id),
            os: m
                .os
                .as_ref()
                .map(|(f, v)| format!("{f} {}", v.as_deref().unwrap_or("")).trim().to_string()),
            baselines: Vec::new(),
            skipped: Vec::new(),
            scripts: Vec::new(),
        };
        for (id, via) in chain {
            let Some(b) = all.iter().find(|b| b.id == id) else {
                continue;
            };
            if out.baselines.iter().any(|a| a.id == id) {
                continue;
            }
            if let Some((family, version)) = &m.os {
                if !b.os_filter.matches(family, version.as_deref()) {
                    out.skipped.push(format!(
                        "baseline {:?} ({via}): its OS filter {}{} does not match {}",
                        b.name,
                        b.os_filter.family.as_deref().unwrap_or("any"),
                        b.os_filter
                            .version
                            .as_deref()
                            .map(|v| format!(" {v}"))
                            .unwrap_or_default(),
                        out.os.as_deref().unwrap_or_default()
                    ));
                    continue;
                }
            }
            out.baselines.push(AssignedBaseline {
                id: b.id,
                name: b.name.clone(),
                via: via.to_string(),
            });
            for sid in &b.script_ids {
                if out.scripts.iter().any(|s| s.id == *sid) {
                    continue;
                }
                let Some(s) = self.scripts.get(*sid)? else { continue };
                out.scripts
                    .push(self.render_script(&s, b, host.as_ref(), &mac, &m.base_url));
            }
        }
        Ok(out)
    }

    fn render_script(
        &self,
        s: &Script,
        b: &Baseline,
        host: Option<&Host>,
        mac: &MacAddr,
        base: &str,
    ) -> AssignedScript {
        let (content, error) = if s.render {
            let mut vars = serde_json::Map::new();
            for v in &s.variables {
                let value = b.variables.get(&v.name).or(v.default.as_ref());
                if let Some(value) = value {
                    vars.insert(v.name.clone(), value.clone().into());
                }
            }
            for (k, v) in &b.variables {
                vars.entry(k.clone()).or_insert_with(|| v.clone().into());
            }
            vars.insert(
                "host".into(),
                serde_json::to_value(HostVars {
                    name: host.map_or_else(|| mac.to_string().replace(':', "-"), |h| h.name.clone()),
                    mac: mac.to_string(),
                    ip: host.and_then(|h| h.ip).map(|i| i.to_string()),
                })
                .unwrap_or_default(),
            );
            vars.insert("server".into(), serde_json::json!({"base_url": base}));
            vars.insert("baseline".into(), serde_json::json!({"id": b.id, "name": b.name}));
            match render::render_with(&s.content, &vars, SCRIPT_FUEL, VARS_HINT) {
                Ok(c) => (Some(c), None),
                Err(p) => (None, Some(format!("script {:?} does not render: {p}", s.name))),
            }
        } else {
            (Some(s.content.clone()), None)
        };
        AssignedScript {
            id: s.id,
            name: s.name.clone(),
            kind: s.kind,
            version: s.version,
            baseline_id: b.id,
            content,
            error,
        }
    }

    // ----- reports -------------------------------------------------------------------

    /// Stores a machine's report of one script run (the output's last 4 KiB), keeps the
    /// last [`MAX_REPORTS_PER_HOST`] of the machine, and publishes
    /// `script.run.succeeded` or `script.run.failed`.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for a script that is not in the machine's assignment;
    /// store errors.
    pub async fn report(
        &self,
        task_id: u64,
        assignment: &Assignment,
        run: ScriptRun<'_>,
        peer: Option<IpAddr>,
    ) -> Result<ScriptReport> {
        let ScriptRun {
            script_id,
            exit_code,
            duration_ms,
            output,
        } = run;
        let Some(s) = assignment.scripts.iter().find(|s| s.id == script_id) else {
            return Err(ServiceError::Invalid(format!(
                "'script' {script_id} is not one of this machine's scripts"
            )));
        };
        let mut at = output.len().saturating_sub(MAX_REPORT_OUTPUT);
        while !output.is_char_boundary(at) {
            at += 1;
        }
        let r = ScriptReport {
            id: 0,
            mac: assignment.mac.clone(),
            host_id: assignment.host_id,
            task_id,
            script_id,
            script: s.name.clone(),
            exit_code,
            duration_ms,
            output: output[at..].to_string(),
            from: peer.map(|p| p.to_canonical().to_string()),
            at: OffsetDateTime::now_utc(),
        };
        let r = {
            let _w = self.write.lock().await;
            let r = self.reports.insert(r).await?;
            let mut mine: Vec<u64> = self
                .reports
                .list()?
                .into_iter()
                .filter(|o| o.mac == r.mac)
                .map(|o| o.id)
                .collect();
            if mine.len() > MAX_REPORTS_PER_HOST {
                mine.sort_unstable();
                for old in &mine[..mine.len() - MAX_REPORTS_PER_HOST] {
                    self.reports.remove(*old).await?;
                }
            }
            r
        };
        let ok = exit_code == 0;
        let last: String = r.output.lines().last().unwrap_or_default().chars().take(200).collect();
        let mut e = NewEvent::new(
            if ok {
                EventKind::ScriptRunSucceeded
            } else {
                EventKind::ScriptRunFailed
            },
            format!(
                "{} ran script {:?}: exit {exit_code} after {duration_ms} ms{}",
                r.mac,
                r.script,
                if ok || last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            ),
        )
        .resource("script", script_id)
        .with(&ScriptRunReported {
            mac: r.mac.clone(),
            host_id: r.host_id,
            task_id,
            script: r.script.clone(),
            exit_code,
            duration_ms,
            report_id: r.id,
        });
        if let Some(p) = peer {
            e = e.remote(p);
        }
        self.events.publish(e);
        Ok(r)
    }

    /// A machine's reports, newest first.
    ///
    /// # Errors
    /// Store errors.
    pub fn reports_for(&self, mac: &str) -> Result<Vec<ScriptReport>> {
        let mut r: Vec<ScriptReport> = self.reports.list()?.into_iter().filter(|r| r.mac == mac).collect();
        r.sort_by_key(|r| std::cmp::Reverse(r.id));
        Ok(r)
    }
}
