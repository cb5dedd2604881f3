//! The store service: lists the items of every source, answers one item with its
//! content, and imports items into this server's resources through their own services
//! (answer templates, boot profiles, netboot overlays, scripts, baselines with their
//! scripts), so every rule of those resources (validation, versions, events) applies
//! to imported items too.
//!
//! Import rules kept here: the item's content hash is checked against the item's own
//! `sha256` and the index's before anything is written; the installed name is the
//! item's `name` or `rename`; a name already in use is a 409 naming the clash unless
//! `overwrite` (which updates the existing resource, storing a new version where the
//! resource keeps versions); each import is an event (`store.item.imported`).
//!
//! A failing source never hides the others: the listing reports it under `sources`; a
//! request that names it (`source=`) is a 502 naming it. State: the sources (with their
//! index caches) and one async mutex serialising imports, so a clash check and the
//! write that follows cannot interleave with another import.

use std::{sync::Arc, time::Duration};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    format::{
        self, AnswerTemplateContent, BaselineContent, Item, ItemType, Meta, NetbootContent, ProfileContent,
        ScriptContent,
    },
    source::{Fetcher, Location, Source, BUILTIN},
    CommunityConfig,
};
use crate::{
    answers::templates::{AnswerTemplates, TemplateInput},
    netboot::{NetbootService, Overlay},
    scripts::{
        service::ScriptService, BaselineInput, OsFilter as ScriptsOsFilter, ScriptInput, ScriptType,
        ScriptVariable as ScriptsVariable,
    },
};
use bootlane_boot::boot::catalog::{BootCatalog, ProfileInput};
use bootlane_core::{
    events::{wire_name, EventBus, EventKind, ImportedId, ImportedResource, NewEvent, StoreItemImported},
    net::outbound::OutboundConfig,
    service_error::ServiceError,
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// One item of `GET /store/catalog`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = StoreItem)]
pub struct CatalogItem {
    /// Its metadata (type, id, name, version, description, author, tags, sha256).
    #[serde(flatten)]
    pub meta: Meta,
    /// The source it comes from (`builtin` or a configured name).
    pub source: String,
}

/// How one source answered a listing.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SourceStatus {
    /// Source name.
    pub name: String,
    /// `builtin`, `directory` or `http`.
    pub kind: String,
    /// Its URL or directory (absent for the embedded set).
    pub address: Option<String>,
    /// True when its index was read.
    pub ok: bool,
    /// Items it lists (0 when it failed).
    pub items: usize,
    /// Why it failed.
    pub error: Option<String>,
}

/// `GET /store/items/{type}/{id}` answer: the item with its content.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ItemDetail {
    /// Metadata and source.
    #[serde(flatten)]
    pub item: CatalogItem,
    /// The type-specific content (see the catalog format in the book's store chapter).
    #[schema(value_type = Object)]
    pub content: serde_json::Value,
}

/// Body of `POST /store/import`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StoreImportRequest)]
pub struct ImportRequest {
    /// Item type (`answer-template`, `profile`, `netboot`, `script`, `baseline`).
    #[serde(rename = "type")]
    pub kind: String,
    /// Item id.
    pub id: String,
    /// Source name; default: the first source (built-in first) that lists the item.
    #[serde(default)]
    pub source: Option<String>,
    /// Install under this name instead of the item's.
    #[serde(default)]
    pub rename: Option<String>,
    /// Replace a resource of the same name (default false: a clash is a 409).
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// One resource an import created or replaced.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Installed {
    /// Resource kind: `answer_template`, `profile`, `netboot_overlay`, `script`, `baseline`.
    pub kind: String,
    /// Its id (a number, or the distribution id of an overlay).
    #[schema(value_type = Object)]
    pub id: ImportedId,
    /// The name it is installed under.
    pub name: String,
    /// `created` or `replaced`.
    pub action: String,
}

/// `POST /store/import` and `/store/import-local` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImportResult {
    /// Item type.
    #[serde(rename = "type")]
    pub kind: ItemType,
    /// Item id.
    pub id: String,
    /// Source name (`local` for an uploaded bundle).
    pub source: String,
    /// The item's sha256 (checked).
    pub sha256: String,
    /// What was installed (a baseline: its scripts, then itself).
    pub installed: Vec<Installed>,
}

/// Where an item being imported came from, which decides the status of a bad item: a
/// source's is its fault (502 naming it), an upload is the client's (400).
enum Origin<'a> {
    Source(&'a str),
    Local,
}

impl Origin<'_> {
    fn bad(&self, msg: String) -> ServiceError {
        match self {
            Origin::Source(s) => ServiceError::Upstream(format!("catalog source {s:?}: {msg}; nothing was installed")),
            Origin::Local => ServiceError::Invalid(format!("the bundle is refused: {msg}; nothing was installed")),
        }
    }
    fn name(&self) -> String {
        match self {
            Origin::Source(s) => (*s).to_string(),
            Origin::Local => "local".into(),
        }
    }
}

/// How a clash is resolved: the name to install under, and whether to replace.
struct Target {
    name: String,
    overwrite: bool,
}

/// The store service.
pub struct CommunityService {
    sources: Vec<Source>,
    fetcher: Fetcher,
    answers: Arc<AnswerTemplates>,
    catalog: Arc<BootCatalog>,
    netboot: Arc<NetbootService>,
    scripts: Arc<ScriptService>,
    events: Arc<EventBus>,
    write: tokio::sync::Mutex<()>,
}

/// The resources imports install into.
pub struct Targets {
    /// Answer templates.
    pub answers: Arc<AnswerTemplates>,
    /// Boot profiles.
    pub catalog: Arc<BootCatalog>,
    /// Netboot overlays.
    pub netboot: Arc<NetbootService>,
    /// Scripts and baselines.
    pub scripts: Arc<ScriptService>,
    /// The event bus.
    pub events: Arc<EventBus>,
}

impl CommunityService {
    /// The built-in source (or `[community] dir`) then the configured HTTP sources, fetched
    /// under the `[outbound]` rules of `outbound`.
    ///
    /// # Errors
    /// An HTTP client that cannot be built; a source URL that does not parse (the
    /// configuration's validation refuses those first).
    pub fn open(config: &CommunityConfig, outbound: &OutboundConfig, targets: Targets) -> Result<Arc<Self>> {
        let client = bootlane_core::net::outbound::client_builder(outbound)
            .connect_timeout(Duration::from_secs(config.connect_timeout_secs))
            .timeout(Duration::from_secs(config.timeout_secs))
            .build()
            .map_err(|e| ServiceError::Invalid(format!("cannot build the HTTP client: {e}")))?;
        let builtin = match &config.dir {
            Some(d) => Location::Dir(d.clone()),
            None => Location::Embedded,
        };
        let mut sources = vec![Source::new(BUILTIN, builtin)];
        for s in &config.sources {
            sources.push(
                Source::http(&s.name, &s.url)
                    .map_err(|e| ServiceError::Invalid(format!("[[community.sources]] {}: {e}", s.name)))?,
            );
        }
        Ok(Arc::new(Self {
            sources,
            fetcher: Fetcher {
                client,
                outbound: *outbound,
                ttl: Duration::from_secs(config.cache_ttl_secs),
                max_bytes: config.max_bytes,
            },
            answers: targets.answers,
            catalog: targets.catalog,
            netboot: targets.netboot,
            scripts: targets.scripts,
            events: targets.events,
            write: tokio::sync::Mutex::new(()),
        }))
    }

    /// Largest local bundle, in bytes (`[community] max_bytes`).
    pub fn max_bytes(&self) -> u64 {
        self.fetcher.max_bytes
    }

    fn source(&self, name: &str) -> Result<&Source> {
        self.sources.iter().find(|s| s.name == name).ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no catalog source {name:?}; the sources are {}",
                self.sources
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    fn failed(s: &Source, e: &str) -> ServiceError {
        ServiceError::Upstream(format!("catalog source {:?} failed: {e}", s.name))
    }

    /// Every item of every source (or of `only`), with each source's status. The sources
    /// are asked concurrently; a failing one is reported in its status and hides nothing.
    ///
    /// # Errors
    /// `only` unknown (404) or failing (502 naming it).
    pub async fn catalog(&self, only: Option<&str>) -> Result<(Vec<CatalogItem>, Vec<SourceStatus>)> {
        let chosen: Vec<&Source> = match only {
            Some(n) => vec![self.source(n)?],
            None => self.sources.iter().collect(),
        };
        let answers = futures::future::join_all(chosen.iter().map(|s| s.index(&self.fetcher))).await;
        let mut items = Vec::new();
        let mut status = Vec::new();
        for (s, r) in chosen.iter().zip(answers) {
            let mut st = SourceStatus {
                name: s.name.clone(),
                kind: s.kind().into(),
                address: s.address(),
                ok: true,
                items: 0,
                error: None,
            };
            match r {
                Ok(idx) => {
                    st.items = idx.items.len();
                    items.extend(idx.items.iter().map(|m| CatalogItem {
                        meta: m.clone(),
                        source: s.name.clone(),
                    }));
                }
                Err(e) => {
                    if only.is_some() {
                        return Err(Self::failed(s, &e));
                    }
                    tracing::warn!(source = %s.name, error = %e, "catalog source failed");
                    st.ok = false;
                    st.error = Some(e);
                }
            }
            status.push(st);
        }
        Ok((items, status))
    }

    /// Finds `kind`/`id`: in `source` when given, else in the first source listing it.
    async fn locate(&self, kind: ItemType, id: &str, source: Option<&str>) -> Result<(&Source, Meta)> {
        let candidates: Vec<&Source> = match source {
            Some(n) => vec![self.source(n)?],
            None => self.sources.iter().collect(),
        };
        let mut failures = Vec::new();
        for s in candidates {
            match s.index(&self.fetcher).await {
                Ok(idx) => {
                    if let Some(m) = idx.items.iter().find(|m| m.kind == kind && m.id == id) {
                        return Ok((s, m.clone()));
                    }
                }
                Err(e) if source.is_some() => return Err(Self::failed(s, &e)),
                Err(e) => failures.push(format!("{:?} failed: {e}", s.name)),
            }
        }
        let where_ = source.map_or_else(|| "any catalog source".to_string(), |s| format!("catalog source {s:?}"));
        let mut msg = format!("no {} item {id:?} in {where_}", kind.as_str());
        if !failures.is_empty() {
            msg.push_str(&format!(" (not asked: {})", failures.join("; ")));
        }
        Err(ServiceError::NotFound(msg))
    }

    /// Item `kind`/`id` fetched and verified: its file parses, its content's sha256 is
    /// its own and the index's.
    async fn fetch_verified(&self, kind: ItemType, id: &str, source: Option<&str>) -> Result<(String, Item)> {
        let (s, meta) = self.locate(kind, id, source).await?;
        let origin = Origin::Source(&s.name);
        let item = s.item(&self.fetcher, kind, id).await.map_err(|e| origin.bad(e))?;
        if !item.meta.sha256.eq_ignore_ascii_case(&meta.sha256) {
            return Err(origin.bad(format!(
                "item {}/{id} has the sha256 {}, but the index says {}; it was changed after the index was written",
                kind.as_str(),
                item.meta.sha256,
                meta.sha256
            )));
        }
        Ok((s.name.clone(), item))
    }

    /// Item `type`/`id` with its content (`source`: from that source only).
    ///
    /// # Errors
    /// Unknown type or item (404); the source failing or serving a changed item (502).
    pub async fn item(&self, kind: &str, id: &str, source: Option<&str>) -> Result<ItemDetail> {
        let kind = parse_kind(kind)?;
        let (source, item) = self.fetch_verified(kind, id, source).await?;
        Ok(ItemDetail {
            item: CatalogItem {
                meta: item.meta,
                source,
            },
            content: item.content,
        })
    }

    /// Imports an item of a source.
    ///
    /// # Errors
    /// Unknown type or item (404); a failing source or a changed item (502, nothing
    /// written); a malformed content (502); a name clash without `rename`/`overwrite`
    /// (409 naming it); the target resource's own refusals (400, 409).
    pub async fn import(&self, req: ImportRequest) -> Result<ImportResult> {
        let kind = parse_kind(&req.kind)?;
        let (source, item) = self.fetch_verified(kind, &req.id, req.source.as_deref()).await?;
        self.install(
            item,
            Origin::Source(&source),
            req.rename,
            req.overwrite.unwrap_or(false),
        )
        .await
    }

    /// Imports an uploaded bundle (an item file: same format and checks as a source's).
    ///
    /// # Errors
    /// A bundle that is not an item or whose sha256 is not its content's (400, nothing
    /// written); as [`CommunityService::import`] otherwise.
    pub async fn import_local(&self, bytes: &[u8], rename: Option<String>, overwrite: bool) -> Result<ImportResult> {
        let item = format::parse_item(bytes).map_err(|e| Origin::Local.bad(e))?;
        self.install(item, Origin::Local, rename, overwrite).await
    }

    async fn install(
        &self,
        item: Item,
        origin: Origin<'_>,
        rename: Option<String>,
        overwrite: bool,
    ) -> Result<ImportResult> {
        let name = match rename {
            Some(r) if r.trim().is_empty() => {
                return Err(ServiceError::Invalid("'rename' must not be blank".into()));
            }
            Some(r) => r.trim().to_string(),
            None => item.meta.name.clone(),
        };
        let target = Target { name, overwrite };
        let bad = |e: serde_json::Error| {
            origin.bad(format!(
                "the content of {}/{} is not a {} item: {e}",
                item.meta.kind.as_str(),
                item.meta.id,
                item.meta.kind.as_str()
            ))
        };
        let _w = self.write.lock().await;
        let c = item.content.clone();
        let installed = match item.meta.kind {
            ItemType::AnswerTemplate => {
                vec![
                    self.import_answer_template(&item.meta, serde_json::from_value(c).map_err(bad)?, &target)
                        .await?,
                ]
            }
            ItemType::Profile => vec![
                self.import_profile(&item.meta, serde_json::from_value(c).map_err(bad)?, &target)
                    .await?,
            ],
            ItemType::Netboot => vec![
                self.import_netboot(&item.meta, serde_json::from_value(c).map_err(bad)?, &target)
                    .await?,
            ],
            ItemType::Script => vec![
                self.import_script(&item.meta, serde_json::from_value(c).map_err(bad)?, &target)
                    .await?,
            ],
            ItemType::Baseline => {
                self.import_baseline(&item.meta, serde_json::from_value(c).map_err(bad)?, &target)
                    .await?
            }
        };
        let result = ImportResult {
            kind: item.meta.kind,
            id: item.meta.id.clone(),
            source: origin.name(),
            sha256: item.meta.sha256.to_lowercase(),
            installed,
        };
        self.events.publish(
            NewEvent::new(
                EventKind::StoreItemImported,
                format!(
                    "catalog item {}/{} (version {}) imported from {}",
                    result.kind.as_str(),
                    result.id,
                    item.meta.version,
                    result.source
                ),
            )
            .resource("store_item", format!("{}/{}", result.kind.as_str(), result.id))
            .with(&imported_data(&result)),
        );
        Ok(result)
    }

    fn comment(meta: &Meta) -> String {
        let mut c = format!(
            "imported from the catalog: {}/{} {}",
            meta.kind.as_str(),
            meta.id,
            meta.version
        );
        c.truncate(400);
        c
    }

    /// Installs an `answer-template` item as an answer template.
    async fn import_answer_template(&self, meta: &Meta, c: AnswerTemplateContent, t: &Target) -> Result<Installed> {
        let lower = t.name.to_lowercase();
        let existing = self
            .answers
            .list()?
            .into_iter()
            .find(|x| x.name.to_lowercase() == lower);
        let input = TemplateInput {
            format: Some(c.format),
            content: Some(c.template),
            description: Some(meta.description.clone()),
            comment: Some(Self::comment(meta)),
            ..Default::default()
        };
        let (tpl, action) = match existing {
            Some(x) if !t.overwrite => return Err(clash("an answer template", &x.name, x.id)),
            Some(x) => (self.answers.update(x.id, input).await?, "replaced"),
            None => (
                self.answers
                    .create(TemplateInput {
                        name: Some(t.name.clone()),
                        ..input
                    })
                    .await?,
                "created",
            ),
        };
        Ok(installed("answer_template", tpl.id.into(), &tpl.name, action))
    }

    /// Installs a `profile` item as a boot profile (never the default one; overwriting
    /// keeps the existing profile's default flag).
    async fn import_profile(&self, meta: &Meta, c: ProfileContent, t: &Target) -> Result<Installed> {
        let lower = t.name.to_lowercase();
        let existing = self
            .catalog
            .profiles()?
            .into_iter()
            .find(|x| x.name.to_lowercase() == lower);
        let description = if c.description.is_empty() {
            meta.description.clone()
        } else {
            c.description
        };
        let input = ProfileInput {
            description: Some(description),
            timeout_secs: c.timeout_secs,
            entries: Some(c.entries),
            comment: Some(Self::comment(meta)),
            ..Default::default()
        };
        let (p, action) = match existing {
            Some(x) if !t.overwrite => return Err(clash("a boot profile", &x.name, x.id)),
            Some(x) => (self.catalog.update_profile(x.id, input).await?, "replaced"),
            None => (
                self.catalog
                    .create_profile(ProfileInput {
                        name: Some(t.name.clone()),
                        ..input
                    })
                    .await?,
                "created",
            ),
        };
        Ok(installed("profile", p.id.into(), &p.name, action))
    }

    /// Installs a `netboot` item as the overlay of its distribution. An overlay is stored
    /// under its distribution, so `rename` does not apply; an existing overlay of that
    /// distribution is the clash.
    async fn import_netboot(&self, meta: &Meta, c: NetbootContent, t: &Target) -> Result<Installed> {
        if t.name != meta.name {
            return Err(ServiceError::Invalid(format!(
                "'rename' does not apply to netboot items: an overlay is stored under its distribution ({:?}); use 'overwrite' to replace the existing one",
                c.distro
            )));
        }
        self.netboot.distro(&c.distro)?;
        let action = match self.netboot.overlay(&c.distro)? {
            Some(_) if !t.overwrite => {
                return Err(ServiceError::Conflict(format!(
                    "distribution {:?} has a netboot overlay already; import with \"overwrite\": true to replace it",
                    c.distro
                )));
            }
            Some(_) => "replaced",
            None => "created",
        };
        let o = Overlay {
            mirror: c.mirror,
            extra_args: c.extra_args,
            extra_initrds: c.extra_initrds,
        };
        self.netboot.put_overlay(&c.distro, o).await?;
        Ok(installed("netboot_overlay", c.distro.clone().into(), &c.distro, action))
    }

    /// Installs a `script` item as a script (rendered as a template: its variables are
    /// `{{ name }}` placeholders).
    async fn import_script(&self, meta: &Meta, c: ScriptContent, t: &Target) -> Result<Installed> {
        let input = script_input(&c, meta)?;
        let (s, action) = match self.scripts.script_named(&t.name)? {
            Some(x) if !t.overwrite => return Err(clash("a script", &x.name, x.id)),
            Some(x) => (self.scripts.update(x.id, input).await?, "replaced"),
            None => (
                self.scripts
                    .create(ScriptInput {
                        name: Some(t.name.clone()),
                        ..input
                    })
                    .await?,
                "created",
            ),
        };
        Ok(installed("script", s.id.into(), &s.name, action))
    }

    /// Installs a `baseline` item: its scripts (by their names), then the baseline
    /// listing them in order. A script of the same name with the same type, content and
    /// variables is reused (baselines share scripts); a different one is a clash unless
    /// `overwrite`. Every clash is checked before anything is written. `rename` names the
    /// baseline only.
    async fn import_baseline(&self, meta: &Meta, c: BaselineContent, t: &Target) -> Result<Vec<Installed>> {
        let existing = self.scripts.baseline_named(&t.name)?;
        if let Some(x) = existing.as_ref().filter(|_| !t.overwrite) {
            return Err(clash("a baseline", &x.name, x.id));
        }
        // Plan every script first: reuse, replace or create; refuse a clash here.
        let mut plan = Vec::new();
        for bs in &c.scripts {
            let content = ScriptContent {
                kind: bs.kind.clone(),
                description: bs.description.clone(),
                content: bs.content.clone(),
                variables: bs.variables.clone(),
            };
            let input = script_input(&content, meta)?;
            let current = self.scripts.script_named(&bs.name)?;
            let same = current.as_ref().is_some_and(|x| {
                Some(x.kind) == input.kind
                    && Some(&x.content) == input.content.as_ref()
                    && Some(&x.variables) == input.variables.as_ref()
                    && x.render
            });
            match current {
                Some(x) if !same && !t.overwrite => {
                    return Err(ServiceError::Conflict(format!(
                        "baseline {:?} needs the script {:?}, but a different script of that name exists (id {}); import with \"overwrite\": true to replace it, or rename that script",
                        meta.id, x.name, x.id
                    )));
                }
                x => plan.push((bs.name.clone(), x.map(|x| (x.id, same)), input)),
            }
        }
        let mut out = Vec::new();
        let mut ids = Vec::new();
        for (name, current, input) in plan {
            let (s, action) = match current {
                Some((id, true)) => (self.scripts.get(id)?, "reused"),
                Some((id, false)) => (self.scripts.update(id, input).await?, "replaced"),
                None => (
                    self.scripts
                        .create(ScriptInput {
                            name: Some(name),
                            ..input
                        })
                        .await?,
                    "created",
                ),
            };
            ids.push(s.id);
            out.push(installed("script", s.id.into(), &s.name, action));
        }
        let description = if c.description.is_empty() {
            meta.description.clone()
        } else {
            c.description
        };
        let input = BaselineInput {
            description: Some(description),
            os_filter: Some(ScriptsOsFilter {
                family: c.os_filter.family.filter(|f| !f.is_empty() && f != "*"),
                version: c.os_filter.version.filter(|v| !v.is_empty() && v != "*"),
            }),
            variables: Some(c.variables),
            script_ids: Some(ids),
            ..Default::default()
        };
        let (b, action) = match existing {
            Some(x) => (self.scripts.update_baseline(x.id, input).await?, "replaced"),
            None => (
                self.scripts
                    .create_baseline(BaselineInput {
                        name: Some(t.name.clone()),
                        ..input
                    })
                    .await?,
                "created",
            ),
        };
        out.push(installed("baseline", b.id.into(), &b.name, action));
        Ok(out)
    }
}

/// The `/scripts` input for a script item's content (type checked here: an unknown
/// interpreter is a 400 naming it).
fn script_input(c: &ScriptContent, meta: &Meta) -> Result<ScriptInput> {
    let kind: ScriptType = serde_json::from_value(serde_json::Value::String(c.kind.clone())).map_err(|_| {
        ServiceError::Invalid(format!(
            "item {}/{}: script type {:?} is not sh, bash, python, powershell or cmd",
            meta.kind.as_str(),
            meta.id,
            c.kind
        ))
    })?;
    Ok(ScriptInput {
        kind: Some(kind),
        content: Some(c.content.clone()),
        description: Some(if c.description.is_empty() {
            meta.description.clone()
        } else {
            c.description.clone()
        }),
        variables: Some(
            c.variables
                .iter()
                .map(|v| ScriptsVariable {
                    name: v.name.clone(),
                    description: v.description.clone(),
                    default: v.default.clone(),
                })
                .collect(),
        ),
        render: Some(true),
        comment: Some(CommunityService::comment(meta)),
        ..Default::default()
    })
}

fn clash(what: &str, name: &str, id: u64) -> ServiceError {
    ServiceError::Conflict(format!(
        "{what} named {name:?} exists already (id {id}); import with \"rename\": \"<new name>\" or \"overwrite\": true"
    ))
}

/// The `data` of `store.item.imported`: the import's answer.
fn imported_data(r: &ImportResult) -> StoreItemImported {
    StoreItemImported {
        kind: wire_name(&r.kind),
        id: r.id.clone(),
        source: r.source.clone(),
        sha256: r.sha256.clone(),
        installed: r
            .installed
            .iter()
            .map(|i| ImportedResource {
                kind: i.kind.clone(),
                id: i.id.clone(),
                name: i.name.clone(),
                action: i.action.clone(),
            })
            .collect(),
    }
}

fn installed(kind: &str, id: ImportedId, name: &str, action: &str) -> Installed {
    Installed {
        kind: kind.into(),
        id,
        name: name.into(),
        action: action.into(),
    }
}

/// The item type named `s`, or a 404 listing the types.
///
/// # Errors
/// [`ServiceError::NotFound`] naming the types.
pub fn parse_kind(s: &str) -> Result<ItemType> {
    ItemType::parse(s).ok_or_else(|| {
        ServiceError::NotFound(format!(
            "no catalog item type {s:?}; the types are {}",
            ItemType::names()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_event_data_is_the_answer_as_it_was_serialised() {
        for kind in ItemType::ALL {
            let result = ImportResult {
                kind,
                id: "web".into(),
                source: "local".into(),
                sha256: "ab".repeat(32),
                installed: vec![
                    installed("script", 4.into(), "motd", "created"),
                    installed(
                        "netboot_overlay",
                        "debian-12".to_string().into(),
                        "debian-12",
                        "replaced",
                    ),
                ],
            };
            assert_eq!(
                serde_json::to_value(imported_data(&result)).unwrap(),
                serde_json::to_value(&result).unwrap()
            );
        }
    }
}
