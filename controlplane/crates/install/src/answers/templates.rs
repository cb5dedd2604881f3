//! The answer-template service: the single write path for templates and their versions
//! (`store` tables `answer_templates` and `answer_template_versions`) and for the site
//! install settings (`answer_settings`), validation in two steps, previews, and the
//! [`AnswerSource`] the install tasks render through.
//!
//! Rules kept here: names are unique (case-insensitive; a clash is a 409); a stored
//! template must compile and render against the sample values (400 with the line); a
//! version (format and content) is stored on creation and on every change of either; a
//! rollback restores a version's format and content and itself stores a new version.
//!
//! State: the tables, the effective site settings, and one async mutex serialising
//! writes so the name check cannot race.

use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    config::AnswersConfig,
    presets,
    render::{self, Problem},
    site::{self, SitePatch, SiteSettings, SiteVars, StoredSite},
    validate::{self, Validation},
    AnswerContext, AnswerFormat, AnswerSource, HostVars, ImageVars, RenderedAnswer, ServerVars,
};
use bootlane_boot::{boot::catalog::BootCatalog, inventory::service::HostService};
use bootlane_core::{
    events::{wire_name, AnswerSettingsUpdated, AnswerTemplateChanged, EventBus, EventKind, NewEvent},
    net::types::normalise_mac,
    service_error::{short_text, ServiceError},
    store::{Entity, Kv, Store, Table},
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// Largest template (bytes).
pub const MAX_CONTENT: usize = 256 * 1024;

/// An answer template.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AnswerTemplate {
    /// Id.
    pub id: u64,
    /// Name (1-100 characters), unique (case-insensitive).
    pub name: String,
    /// Format.
    pub format: AnswerFormat,
    /// The minijinja template text (up to 256 KiB).
    pub content: String,
    /// Free text (up to 1000 bytes).
    pub description: String,
    /// Current version number (1 on creation, +1 on every format or content change).
    pub version: u32,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(AnswerTemplate, "answer_templates");

/// A stored version of a template.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TemplateVersion {
    /// Record id (internal, increasing).
    pub id: u64,
    /// The template.
    pub template_id: u64,
    /// Version number (1, 2, ...).
    pub version: u32,
    /// Format at this version.
    pub format: AnswerFormat,
    /// Content at this version.
    pub content: String,
    /// Why it was stored (the change's `comment`, or a generated note).
    pub comment: String,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

bootlane_core::store::entity!(TemplateVersion, "answer_template_versions");

impl bootlane_core::store::versions::Revision for TemplateVersion {
    fn document(&self) -> u64 {
        self.template_id
    }
    fn ordinal(&self) -> u64 {
        u64::from(self.version)
    }
}

/// Body of `POST /netboot/answer-templates` (name and format required, and content or a
/// preset) and `PUT /netboot/answer-templates/{id}` (any subset; omitted fields keep
/// their values).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateInput {
    /// Name.
    pub name: Option<String>,
    /// Format (`preseed`, `kickstart`, `autoinstall`, `cloud-config`, `autoyast`,
    /// `autounattend`, `ignition`); on creation from a preset, the preset's by default.
    pub format: Option<AnswerFormat>,
    /// Template text.
    pub content: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// Creation only: start from this preset (a key of `GET .../presets`) when `content`
    /// is absent.
    pub preset: Option<String>,
    /// Comment stored with the version this change creates (if it creates one).
    pub comment: Option<String>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub version: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

/// What a preview is rendered for: a host (by id or MAC) and task values, or nothing for
/// the sample values.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewRequest {
    /// A registered host.
    pub host_id: Option<u64>,
    /// A MAC (a registered host's, or any: then the host is that MAC alone).
    pub mac: Option<String>,
    /// Task values (each optional; the sample values fill the rest).
    pub task: Option<PreviewTask>,
    /// Server values (default: the sample server).
    pub server: Option<ServerVars>,
    /// Image values (default: the sample Debian image); `null` renders without an image.
    #[serde(default, deserialize_with = "bootlane_core::service_error::double_option")]
    pub image: Option<Option<ImageVars>>,
}

/// Task values of a preview.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewTask {
    /// Task id.
    pub id: Option<u64>,
    /// Token.
    pub token: Option<String>,
    /// Answer URL.
    pub answer_url: Option<String>,
    /// Report base URL.
    pub report_url: Option<String>,
}

/// `POST /netboot/answer-templates/{id}/preview` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Preview {
    /// The rendered answer file, `null` when the template does not render.
    pub output: Option<String>,
    /// Format.
    pub format: AnswerFormat,
    /// The `Content-Type` it would be served with.
    pub content_type: String,
    /// The values it was rendered with (`site` as the template sees it).
    #[schema(value_type = Object)]
    pub context: serde_json::Value,
    /// Both validation steps for this rendering.
    pub validation: Validation,
}

const SITE_KEY: &str = "site";
const TABLES: &[&str] = &[<AnswerTemplate as Entity>::TREE, <TemplateVersion as Entity>::TREE];

/// The service.
pub struct AnswerTemplates {
    store: Store,
    templates: Table<AnswerTemplate>,
    versions: Table<TemplateVersion>,
    kv: Kv,
    config: AnswersConfig,
    site: RwLock<StoredSite>,
    write: tokio::sync::Mutex<()>,
    hosts: Arc<HostService>,
    catalog: Arc<BootCatalog>,
    events: Arc<EventBus>,
}

fn template_name(n: &str) -> Result<String> {
    let n = n.trim();
    if n.is_empty() || n.chars().count() > 100 || n.chars().any(char::is_control) {
        return Err(ServiceError::Invalid(
            "'name' must be 1-100 characters without control characters".into(),
        ));
    }
    Ok(n.to_string())
}

fn check_content(c: &str) -> Result<()> {
    if c.trim().is_empty() || c.len() > MAX_CONTENT || c.contains('\0') {
        return Err(ServiceError::Invalid(format!(
            "'content' must be a non-empty template of at most {MAX_CONTENT} bytes"
        )));
    }
    Ok(())
}

impl AnswerTemplates {
    /// Opens the tables and the stored site settings.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(
        config: &AnswersConfig,
        store: &Store,
        hosts: Arc<HostService>,
        catalog: Arc<BootCatalog>,
        events: Arc<EventBus>,
    ) -> Result<Arc<Self>> {
        let kv = store.kv("answer_settings")?;
        let site = kv.get::<StoredSite>(SITE_KEY)?.unwrap_or_default();
        Ok(Arc::new(Self {
            store: store.clone(),
            templates: store.table()?,
            versions: store.table()?,
            kv,
            config: config.clone(),
            site: RwLock::new(site),
            write: tokio::sync::Mutex::new(()),
            hosts,
            catalog,
            events,
        }))
    }

    /// The `[answers]` section it runs with.
    pub fn config(&self) -> &AnswersConfig {
        &self.config
    }

    // ----- site settings -------------------------------------------------------------

    /// The effective site settings (stored values over the `[answers]` defaults).
    pub fn site(&self) -> SiteSettings {
        let s = self.site.read().unwrap_or_else(|e| e.into_inner()).clone();
        let mirror = match s.mirror {
            Some(m) if m.is_empty() => None,
            Some(m) => Some(m),
            None => Some(self.config.mirror.clone()).filter(|m| !m.is_empty()),
        };
        SiteSettings {
            timezone: s.timezone.unwrap_or_else(|| self.config.timezone.clone()),
            locale: s.locale.unwrap_or_else(|| self.config.locale.clone()),
            keyboard: s.keyboard.unwrap_or_else(|| self.config.keyboard.clone()),
            ssh_authorized_keys: s.ssh_authorized_keys,
            has_root_password: s.root_password_hash.is_some(),
            root_password_hash: s.root_password_hash,
            mirror,
        }
    }

    /// `site` as templates see it.
    pub fn site_vars(&self) -> SiteVars {
        self.site().vars()
    }

    /// Changes the site settings (a plain root password is hashed here and never
    /// stored); answers the effective settings.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the key; store errors.
    pub async fn update_site(&self, patch: SitePatch) -> Result<SiteSettings> {
        let _w = self.write.lock().await;
        let password_changed = patch.root_password.is_some() || patch.root_password_hash.is_some();
        let current = self.site.read().unwrap_or_else(|e| e.into_inner()).clone();
        let next = site::apply(&current, patch)?;
        self.kv.put(SITE_KEY, &next).await?;
        *self.site.write().unwrap_or_else(|e| e.into_inner()) = next;
        let view = self.site();
        self.events.publish(
            NewEvent::new(EventKind::AnswerSettingsUpdated, "site install settings changed")
                .resource("answer_settings", "site")
                .with(&AnswerSettingsUpdated {
                    timezone: view.timezone.clone(),
                    locale: view.locale.clone(),
                    keyboard: view.keyboard.clone(),
                    ssh_keys: view.ssh_authorized_keys.len() as u64,
                    mirror: view.mirror.clone(),
                    root_password_changed: password_changed,
                }),
        );
        Ok(view)
    }

    // ----- templates -----------------------------------------------------------------

    /// Every template, in id order.
    ///
    /// # Errors
    /// Store errors.
    pub fn list(&self) -> Result<Vec<AnswerTemplate>> {
        Ok(self.templates.list()?)
    }

    /// One template.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub fn get(&self, id: u64) -> Result<AnswerTemplate> {
        self.templates
            .get(id)?
            .ok_or_else(|| ServiceError::NotFound(format!("no answer template with id {id}")))
    }

    fn name_free(&self, name: &str, except: u64) -> Result<()> {
        let lower = name.to_lowercase();
        if let Some(o) = self
            .templates
            .list()?
            .into_iter()
            .find(|t| t.id != except && t.name.to_lowercase() == lower)
        {
            return Err(ServiceError::Conflict(format!(
                "an answer template named {:?} exists already (id {}); choose another name",
                o.name, o.id
            )));
        }
        Ok(())
    }

    /// A stored template must compile and render against the sample values.
    fn storable(&self, content: &str) -> Result<()> {
        check_content(content)?;
        let (_, problems) =
            render::check_template(content, &render::sample_context(), &self.site_vars(), self.config.fuel);
        if let Some(p) = problems.first() {
            return Err(ServiceError::Invalid(format!(
                "'content' does not render with the sample values: {p}{}",
                if problems.len() > 1 {
                    format!(" (and {} more; POST .../validate lists them)", problems.len() - 1)
                } else {
                    String::new()
                }
            )));
        }
        Ok(())
    }

    /// Creates a template (and its version 1).
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field; [`ServiceError::Conflict`] for a name in
    /// use; store errors.
    pub async fn create(&self, input: TemplateInput) -> Result<AnswerTemplate> {
        let name = template_name(
            input
                .name
                .as_deref()
                .ok_or_else(|| ServiceError::Invalid("'name' is required".into()))?,
        )?;
        let preset = match input.preset.as_deref() {
            None => None,
            Some(k) => Some(presets::find(k).ok_or_else(|| {
                ServiceError::Invalid(format!(
                    "'preset' {k:?} is not one of {}",
                    presets::PRESETS.iter().map(|p| p.key).collect::<Vec<_>>().join(", ")
                ))
            })?),
        };
        let format = input
            .format
            .or(preset.map(|p| p.format))
            .ok_or_else(|| ServiceError::Invalid("'format' is required".into()))?;
        let content = input
            .content
            .or(preset.map(|p| p.content.to_string()))
            .ok_or_else(|| ServiceError::Invalid("'content' (or 'preset') is required".into()))?;
        let description = short_text("description", input.description.as_deref().unwrap_or(""), 1000)?;
        let comment = short_text("comment", input.comment.as_deref().unwrap_or("created"), 500)?;
        self.storable(&content)?;
        let _w = self.write.lock().await;
        self.name_free(&name, 0)?;
        let now = OffsetDateTime::now_utc();
        let t = AnswerTemplate {
            id: 0,
            name,
            format,
            content,
            description,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        let t = self
            .store
            .transaction(TABLES, |tx| {
                let t = tx.insert(t.clone())?;
                tx.insert(TemplateVersion {
                    id: 0,
                    template_id: t.id,
                    version: 1,
                    format: t.format,
                    content: t.content.clone(),
                    comment: comment.clone(),
                    created_at: now,
                })?;
                Ok(t)
            })
            .await?;
        self.publish(EventKind::AnswerTemplateCreated, &t);
        Ok(t)
    }

    fn publish(&self, kind: EventKind, t: &AnswerTemplate) {
        let action = kind.verb();
        self.events.publish(
            NewEvent::new(
                kind,
                format!("answer template {:?} {action} (version {})", t.name, t.version),
            )
            .resource("answer_template", t.id)
            .with(&AnswerTemplateChanged {
                name: t.name.clone(),
                format: wire_name(&t.format),
                version: t.version,
            }),
        );
    }

    /// Stores `next` over the current template; a format or content change stores a
    /// new version with `comment`.
    async fn save(
        &self,
        current: &AnswerTemplate,
        mut next: AnswerTemplate,
        comment: String,
    ) -> Result<AnswerTemplate> {
        let changed = next.content != current.content || next.format != current.format;
        next.updated_at = OffsetDateTime::now_utc();
        if changed {
            next.version = current.version + 1;
        }
        self.store
            .transaction(TABLES, |tx| {
                tx.put(&next)?;
                if changed {
                    tx.insert(TemplateVersion {
                        id: 0,
                        template_id: next.id,
                        version: next.version,
                        format: next.format,
                        content: next.content.clone(),
                        comment: comment.clone(),
                        created_at: next.updated_at,
                    })?;
                }
                Ok(())
            })
            .await?;
        Ok(next)
    }

    /// Changes a template; a new format or content stores a new version.
    ///
    /// # Errors
    /// As [`AnswerTemplates::create`]; [`ServiceError::NotFound`].
    pub async fn update(&self, id: u64, input: TemplateInput) -> Result<AnswerTemplate> {
        if input.preset.is_some() {
            return Err(ServiceError::Invalid(
                "'preset' applies to creation only; PUT the preset's 'content' instead".into(),
            ));
        }
        let name = input.name.as_deref().map(template_name).transpose()?;
        let description = input
            .description
            .as_deref()
            .map(|d| short_text("description", d, 1000))
            .transpose()?;
        let comment = short_text("comment", input.comment.as_deref().unwrap_or("updated"), 500)?;
        if let Some(c) = &input.content {
            self.storable(c)?;
        }
        let _w = self.write.lock().await;
        let current = self.get(id)?;
        if let Some(n) = &name {
            self.name_free(n, id)?;
        }
        let next = AnswerTemplate {
            name: name.unwrap_or_else(|| current.name.clone()),
            format: input.format.unwrap_or(current.format),
            content: input.content.unwrap_or_else(|| current.content.clone()),
            description: description.unwrap_or_else(|| current.description.clone()),
            ..current.clone()
        };
        let t = self.save(&current, next, comment).await?;
        self.publish(EventKind::AnswerTemplateUpdated, &t);
        Ok(t)
    }

    /// Deletes a template and its versions; answers it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub async fn delete(&self, id: u64) -> Result<AnswerTemplate> {
        let _w = self.write.lock().await;
        let t = self.get(id)?;
        let versions: Vec<u64> = self.versions_of(id)?.into_iter().map(|v| v.id).collect();
        self.store
            .transaction(TABLES, |tx| {
                tx.remove::<AnswerTemplate>(id)?;
                for v in &versions {
                    tx.remove::<TemplateVersion>(*v)?;
                }
                Ok(())
            })
            .await?;
        self.publish(EventKind::AnswerTemplateDeleted, &t);
        Ok(t)
    }

    fn versions_of(&self, id: u64) -> Result<Vec<TemplateVersion>> {
        Ok(bootlane_core::store::versions::history(&self.versions, id)?)
    }

    /// The template's versions, newest first.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for the template; store errors.
    pub fn versions(&self, id: u64) -> Result<Vec<TemplateVersion>> {
        self.get(id)?;
        self.versions_of(id)
    }

    /// One version.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for the template or the version; store errors.
    pub fn version(&self, id: u64, version: u32) -> Result<TemplateVersion> {
        self.versions(id)?
            .into_iter()
            .find(|v| v.version == version)
            .ok_or_else(|| ServiceError::NotFound(format!("answer template {id} has no version {version}")))
    }

    /// Restores a version's format and content, storing them as a new version.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; store errors.
    pub async fn rollback(&self, id: u64, version: u32) -> Result<AnswerTemplate> {
        let _w = self.write.lock().await;
        let current = self.get(id)?;
        let v = self.version(id, version)?;
        let next = AnswerTemplate {
            format: v.format,
            content: v.content.clone(),
            ..current.clone()
        };
        // Rolling back to identical content still records the rollback.
        let mut t = self
            .save(&current, next.clone(), format!("rollback to version {version}"))
            .await?;
        if t.version == current.version {
            let forced = AnswerTemplate {
                version: current.version + 1,
                ..t.clone()
            };
            self.store
                .transaction(TABLES, |tx| {
                    tx.put(&forced)?;
                    tx.insert(TemplateVersion {
                        id: 0,
                        template_id: id,
                        version: forced.version,
                        format: forced.format,
                        content: forced.content.clone(),
                        comment: format!("rollback to version {version}"),
                        created_at: forced.updated_at,
                    })?;
                    Ok(())
                })
                .await?;
            t = forced;
        }
        self.publish(EventKind::AnswerTemplateRolledBack, &t);
        Ok(t)
    }

    // ----- validation and preview ----------------------------------------------------

    /// Both validation steps for `content` of `format`, rendered with `ctx` (default: the
    /// sample values) and the site settings; answers the validation and the rendered
    /// text.
    pub async fn validate(
        &self,
        format: AnswerFormat,
        content: &str,
        ctx: Option<&AnswerContext>,
    ) -> (Validation, Option<String>) {
        if let Err(ServiceError::Invalid(m)) = check_content(content) {
            return (Validation::new(vec![Problem::at(None, m)], None), None);
        }
        let sample = render::sample_context();
        let (out, problems) =
            render::check_template(content, ctx.unwrap_or(&sample), &self.site_vars(), self.config.fuel);
        let verdict = match (&out, problems.is_empty()) {
            (Some(o), true) => Some(validate::check_output(format, o, &self.config).await),
            _ => None,
        };
        (Validation::new(problems, verdict), out)
    }

    /// The context for a preview: a host by id or MAC (or the sample host), the given
    /// task, server and image values over the sample ones.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for an unknown host id; [`ServiceError::Invalid`] for a
    /// bad MAC or both given.
    pub fn preview_context(&self, req: &PreviewRequest) -> Result<AnswerContext> {
        let mut ctx = render::sample_context();
        let host = match (req.host_id, req.mac.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(ServiceError::Invalid("give 'host_id' or 'mac', not both".into()));
            }
            (Some(id), None) => Some(
                self.hosts
                    .get(id)
                    .map_err(|_| ServiceError::NotFound(format!("no host with id {id}")))?,
            ),
            (None, Some(m)) => {
                let mac = normalise_mac(m).map_err(|e| ServiceError::Invalid(format!("'mac': {e}")))?;
                match self.hosts.by_mac(mac)? {
                    Some(h) => Some(h),
                    None => {
                        ctx.host = HostVars {
                            name: mac.to_string().replace(':', "-"),
                            mac: mac.to_string(),
                            ip: None,
                            profile: None,
                        };
                        None
                    }
                }
            }
            (None, None) => None,
        };
        if let Some(h) = host {
            ctx.host = HostVars {
                profile: h.profile_id.and_then(|p| self.catalog.profile(p).ok()).map(|p| p.name),
                name: h.name,
                mac: h.mac,
                ip: h.ip.map(|i| i.to_string()),
            };
        }
        if let Some(t) = &req.task {
            if let Some(v) = t.id {
                ctx.task.id = v;
            }
            for (field, value, slot) in [
                ("task.token", &t.token, &mut ctx.task.token),
                ("task.answer_url", &t.answer_url, &mut ctx.task.answer_url),
                ("task.report_url", &t.report_url, &mut ctx.task.report_url),
            ] {
                if let Some(v) = value {
                    *slot = short_text(field, v, 2048)?;
                }
            }
        }
        if let Some(s) = &req.server {
            ctx.server = ServerVars {
                address: short_text("server.address", &s.address, 256)?,
                base_url: short_text("server.base_url", &s.base_url, 2048)?,
            };
        }
        if let Some(i) = &req.image {
            ctx.image = i.clone();
        }
        Ok(ctx)
    }

    /// Renders template `id` for a preview and validates the result.
    ///
    /// # Errors
    /// As [`AnswerTemplates::preview_context`]; [`ServiceError::NotFound`] for the template.
    pub async fn preview(&self, id: u64, req: &PreviewRequest) -> Result<Preview> {
        let t = self.get(id)?;
        let ctx = self.preview_context(req)?;
        let (validation, output) = self.validate(t.format, &t.content, Some(&ctx)).await;
        let mut context = serde_json::to_value(&ctx).unwrap_or_default();
        context["site"] = serde_json::to_value(self.site_vars()).unwrap_or_default();
        Ok(Preview {
            output,
            format: t.format,
            content_type: t.format.content_type().to_string(),
            context,
            validation,
        })
    }
}

impl AnswerSource for AnswerTemplates {
    fn check(&self, id: u64) -> Result<AnswerFormat, ServiceError> {
        Ok(self.get(id)?.format)
    }

    fn render(&self, id: u64, ctx: &AnswerContext) -> Result<RenderedAnswer, ServiceError> {
        let t = self.get(id)?;
        let body = render::render(&t.content, ctx, &self.site_vars(), self.config.fuel).map_err(|p| {
            ServiceError::Invalid(format!("answer template {:?} (id {id}) does not render: {p}", t.name))
        })?;
        Ok(RenderedAnswer { body, format: t.format })
    }
}
