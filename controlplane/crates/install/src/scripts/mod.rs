//! Post-install scripts and baselines (spec "Baselines", "Scripts"): what a machine runs
//! after its install. A [`Script`] is a versioned program of one [`ScriptType`] (a
//! minijinja template unless `render` is off); a [`Baseline`] is an ordered list of
//! scripts with an OS filter and variable defaults, assigned to hosts, profiles, or as
//! the site default. A machine pulls its baselines' scripts (as JSON or as one bundle per
//! platform, see [`bundle`]) with its install task's token and reports each result
//! ([`ScriptReport`], the last 100 per machine). This file holds the stored shapes and
//! inputs; [`service::ScriptService`] is the single write path.

pub mod bundle;
pub mod service;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// Largest script (bytes).
pub const MAX_SCRIPT: usize = 256 * 1024;
/// Output kept per report (bytes, the tail).
pub const MAX_REPORT_OUTPUT: usize = 4096;
/// Reports kept per machine (the oldest are dropped).
pub const MAX_REPORTS_PER_HOST: usize = 100;

/// The interpreter a script is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScriptType {
    /// POSIX `sh`.
    Sh,
    /// GNU bash.
    Bash,
    /// Python 3 (`python3`).
    Python,
    /// PowerShell (`powershell.exe` on Windows, `pwsh` elsewhere).
    Powershell,
    /// Windows `cmd.exe` batch.
    Cmd,
}

impl ScriptType {
    /// True for types the Unix bundle (`bundle.sh`) runs; the others run from
    /// `bundle.ps1`.
    pub fn unix(self) -> bool {
        matches!(self, Self::Sh | Self::Bash | Self::Python)
    }

    /// The file extension scripts of this type are written with.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Sh | Self::Bash => "sh",
            Self::Python => "py",
            Self::Powershell => "ps1",
            Self::Cmd => "cmd",
        }
    }

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sh => "sh",
            Self::Bash => "bash",
            Self::Python => "python",
            Self::Powershell => "powershell",
            Self::Cmd => "cmd",
        }
    }
}

/// A variable a script expects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptVariable {
    /// Name: a template identifier (`[A-Za-z_][A-Za-z0-9_]*`, at most 64), not `host`,
    /// `server` or `baseline`.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// Value when neither the baseline nor anything else sets it; `null`: required.
    #[serde(default)]
    pub default: Option<String>,
}

/// A post-install script.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Script {
    /// Id.
    pub id: u64,
    /// Name (1-100 characters), unique (case-insensitive).
    pub name: String,
    /// Interpreter.
    #[serde(rename = "type")]
    pub kind: ScriptType,
    /// Program text (up to 256 KiB).
    pub content: String,
    /// Free text (up to 1000 bytes).
    pub description: String,
    /// Variables it expects (rendered into `content` as `{{ name }}`).
    pub variables: Vec<ScriptVariable>,
    /// True: `content` is a minijinja template (strict undefined, fuel-limited) rendered
    /// per machine with `host`, `server`, `baseline` and the variables; false: served as
    /// written (for programs that use `{{`, `{%` or `{#` themselves).
    pub render: bool,
    /// Current version (1 on creation, +1 on every type, content, variables or render
    /// change).
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

bootlane_core::store::entity!(Script, "scripts");

/// A stored version of a script.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScriptRevision {
    /// Record id (internal, increasing).
    pub id: u64,
    /// The script.
    pub script_id: u64,
    /// Version number.
    pub version: u32,
    /// Interpreter at this version.
    #[serde(rename = "type")]
    pub kind: ScriptType,
    /// Content at this version.
    pub content: String,
    /// Variables at this version.
    pub variables: Vec<ScriptVariable>,
    /// Render flag at this version.
    pub render: bool,
    /// Why it was stored.
    pub comment: String,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

impl bootlane_core::store::versions::Revision for ScriptRevision {
    fn document(&self) -> u64 {
        self.script_id
    }
    fn ordinal(&self) -> u64 {
        u64::from(self.version)
    }
}

bootlane_core::store::entity!(ScriptRevision, "script_versions");

/// Body of `POST /scripts` (name, type and content required) and `PUT /scripts/{id}`
/// (any subset; omitted fields keep their values).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptInput {
    /// Name.
    pub name: Option<String>,
    /// Interpreter: `sh`, `bash`, `python`, `powershell` or `cmd`.
    #[serde(rename = "type")]
    pub kind: Option<ScriptType>,
    /// Program text.
    pub content: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// Variables it expects (full replace).
    pub variables: Option<Vec<ScriptVariable>>,
    /// Render `content` as a template (default true).
    pub render: Option<bool>,
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

pub use bootlane_boot::inventory::baseline::{Baseline, OsFilter};

/// Body of `POST /baselines` (name required) and `PUT /baselines/{id}` (any subset).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselineInput {
    /// Name.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// OS filter.
    pub os_filter: Option<OsFilter>,
    /// Variable values (full replace).
    pub variables: Option<BTreeMap<String, String>>,
    /// Scripts in run order (full replace; also `PUT /baselines/{id}/scripts`).
    pub script_ids: Option<Vec<u64>>,
    /// Make it the site default (the previous default stops being one).
    pub is_default: Option<bool>,
    /// Read-only fields of the GET answer, accepted and ignored so it can be PUT back.
    pub id: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub created_at: Option<serde_json::Value>,
    /// Read-only, ignored.
    pub updated_at: Option<serde_json::Value>,
}

/// A script's result as a machine reported it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScriptReport {
    /// Record id.
    pub id: u64,
    /// The machine's MAC.
    pub mac: String,
    /// Its host, when registered.
    pub host_id: Option<u64>,
    /// The install task whose token was used.
    pub task_id: u64,
    /// The script.
    pub script_id: u64,
    /// Its name at report time.
    pub script: String,
    /// Exit code (`0`: success).
    pub exit_code: i32,
    /// Run time in milliseconds.
    pub duration_ms: u64,
    /// The last 4 KiB of its output (stdout and stderr).
    pub output: String,
    /// Where the report came from.
    pub from: Option<String>,
    /// When, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
}

bootlane_core::store::entity!(ScriptReport, "script_reports");

/// One script run as a machine reports it (the report route's parameters and body).
#[derive(Debug, Clone, Copy)]
pub struct ScriptRun<'a> {
    /// The script.
    pub script_id: u64,
    /// Its exit code (0: success).
    pub exit_code: i32,
    /// Its run time in milliseconds.
    pub duration_ms: u64,
    /// Its output (the last [`MAX_REPORT_OUTPUT`] bytes are kept).
    pub output: &'a str,
}

/// One script as a machine gets it: rendered for it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssignedScript {
    /// Script id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Interpreter.
    #[serde(rename = "type")]
    pub kind: ScriptType,
    /// Version served.
    pub version: u32,
    /// The baseline it comes from.
    pub baseline_id: u64,
    /// The rendered program; `null` when it does not render (see `error`).
    pub content: Option<String>,
    /// Why it does not render (an undefined variable, a template error with its line).
    pub error: Option<String>,
}

/// A baseline that applies to a machine.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssignedBaseline {
    /// Baseline id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Why it applies: `host`, `profile` or `default`.
    pub via: String,
}

/// `GET /baselines/assigned` and the pull answer: the baselines for a machine and their
/// scripts in run order (a script in several baselines runs once, at its first place).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Assignment {
    /// The machine's MAC.
    pub mac: String,
    /// Its host, when registered.
    pub host_id: Option<u64>,
    /// The OS used for the baselines' filters (`family version`), when known.
    pub os: Option<String>,
    /// The baselines that apply, in order (host's, profile's, default).
    pub baselines: Vec<AssignedBaseline>,
    /// Baselines assigned but skipped, with why (the OS filter).
    pub skipped: Vec<String>,
    /// The scripts, in run order.
    pub scripts: Vec<AssignedScript>,
}
