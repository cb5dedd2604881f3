//! Answer files: the variables an answer-file template is rendered with
//! ([`AnswerContext`]: the host, the install task, the server as the client reaches it,
//! the image), the formats ([`AnswerFormat`]), and the seam the install tasks render
//! through ([`AnswerSource`]). The template resource itself (CRUD, versions, presets,
//! validation, preview, site settings) lives in this module's submodules. Holds no global
//! state.

pub mod config;
pub mod presets;
pub mod render;
pub mod site;
pub mod templates;
pub mod validate;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use bootlane_core::service_error::ServiceError;

/// Format of an answer file: what the installer expects and which validator judges the
/// rendered output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerFormat {
    /// Debian installer preseed (`debconf` selections, one per line).
    Preseed,
    /// Anaconda kickstart (RHEL, Fedora, Rocky, Alma).
    Kickstart,
    /// Ubuntu autoinstall (cloud-init user-data with an `autoinstall:` key).
    Autoinstall,
    /// cloud-init `#cloud-config`.
    CloudConfig,
    /// SUSE AutoYaST (XML).
    Autoyast,
    /// Windows Setup `autounattend.xml`.
    Autounattend,
    /// Fedora CoreOS / Flatcar Ignition (JSON).
    Ignition,
}

impl AnswerFormat {
    /// The `Content-Type` the answer is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Autoyast | Self::Autounattend => "application/xml",
            Self::Ignition => "application/json",
            Self::Autoinstall | Self::CloudConfig => "text/cloud-config; charset=utf-8",
            Self::Preseed | Self::Kickstart => "text/plain; charset=utf-8",
        }
    }
}

/// `host` in a template: the machine being installed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct HostVars {
    /// Host name (the MAC with `-` when the task has no host).
    pub name: String,
    /// MAC address, lower-case `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
    /// Its address (reservation or current lease), when known.
    pub ip: Option<String>,
    /// Its boot profile's name, when it has one.
    pub profile: Option<String>,
}

/// `task` in a template: the install task being served.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct TaskVars {
    /// Task id.
    pub id: u64,
    /// The task's secret token (also inside the URLs below).
    pub token: String,
    /// Where the installer fetches this answer file (token included).
    pub answer_url: String,
    /// Where the installer reports (`/progress`, `/done`, `/failed` appended; token
    /// included as `?token=`): the report base URL.
    pub report_url: String,
    /// The machine's post-install bundle for Unix (`bundle.sh`; token included): fetch it
    /// and run it with `sh` at the end of the install.
    #[serde(default)]
    pub baseline_sh_url: String,
    /// The same for Windows (`bundle.ps1`), run with PowerShell.
    #[serde(default)]
    pub baseline_ps1_url: String,
}

/// `server` in a template: Bootlane as the installing machine reaches it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ServerVars {
    /// Host (and port when not 80) the client used, e.g. `10.0.0.1:8080`.
    pub address: String,
    /// Base URL without a trailing `/`, e.g. `http://10.0.0.1:8080`.
    pub base_url: String,
}

/// `image` in a template: the OS image the task installs, when it has one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ImageVars {
    /// Image id.
    pub id: u64,
    /// Detected family (`debian`, `rhel`, ...).
    pub family: String,
    /// Detected version, when known.
    pub version: Option<String>,
    /// Kernel URL.
    pub kernel: Option<String>,
    /// Initrd URLs.
    pub initrds: Vec<String>,
    /// URL of the image's tree when it is served (mounted or extracted): an install
    /// repository for families that install from their media.
    pub repo_url: Option<String>,
}

/// Everything a template is rendered with besides the site settings (which the template
/// service adds itself as `site`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct AnswerContext {
    /// The machine.
    pub host: HostVars,
    /// The task.
    pub task: TaskVars,
    /// The server.
    pub server: ServerVars,
    /// The image, if the task names one.
    pub image: Option<ImageVars>,
}

/// A rendered answer file.
#[derive(Debug, Clone)]
pub struct RenderedAnswer {
    /// The text served to the installer.
    pub body: String,
    /// Its format (gives the content type).
    pub format: AnswerFormat,
}

/// What install tasks render answers through (implemented by the template service; tests
/// use doubles).
pub trait AnswerSource: Send + Sync {
    /// Checks that template `id` exists.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] naming the template; the store.
    fn check(&self, id: u64) -> Result<AnswerFormat, ServiceError>;

    /// Renders template `id` with `ctx` (and the site settings).
    ///
    /// # Errors
    /// Not found; a render error (400-class [`ServiceError::Invalid`] with the line).
    fn render(&self, id: u64, ctx: &AnswerContext) -> Result<RenderedAnswer, ServiceError>;
}

/// The [`AnswerSource`] of a server without answer templates: every template is unknown.
#[derive(Debug, Default)]
pub struct NoTemplates;

impl AnswerSource for NoTemplates {
    fn check(&self, id: u64) -> Result<AnswerFormat, ServiceError> {
        Err(ServiceError::NotFound(format!("no answer template with id {id}")))
    }

    fn render(&self, id: u64, _: &AnswerContext) -> Result<RenderedAnswer, ServiceError> {
        self.check(id).map(|_| unreachable_answer())
    }
}

fn unreachable_answer() -> RenderedAnswer {
    RenderedAnswer {
        body: String::new(),
        format: AnswerFormat::Preseed,
    }
}
