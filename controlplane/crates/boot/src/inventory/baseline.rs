//! Baselines as the machines' vocabulary: a host and a profile may name one
//! (`baseline_id`), so the record lives beside the hosts; what a baseline runs and how
//! it is rendered for a machine is the `scripts` domain's. Record types and their
//! checks only; no state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::service_error::ServiceError;

/// The OS a baseline applies to; an empty filter applies to every OS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OsFilter {
    /// OS family as image detection names it (`debian`, `ubuntu`, `rhel`, `fedora`,
    /// `suse`, `windows`, ...), case-insensitive; `null`: any.
    #[serde(default)]
    pub family: Option<String>,
    /// Version pattern, `*` matching any run of characters (`12*`, `22.04`); `null`:
    /// any.
    #[serde(default)]
    pub version: Option<String>,
}

/// A baseline: an ordered set of scripts for a class of machines.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Baseline {
    /// Id.
    pub id: u64,
    /// Name (1-100 characters), unique (case-insensitive).
    pub name: String,
    /// Free text.
    pub description: String,
    /// OS filter: a machine whose OS is known and does not match skips this baseline.
    pub os_filter: OsFilter,
    /// Variable values for its scripts (over each script's own defaults).
    pub variables: BTreeMap<String, String>,
    /// Its scripts, in run order, each once.
    pub script_ids: Vec<u64>,
    /// The site default baseline (applies to every machine after its host's and
    /// profile's); at most one.
    pub is_default: bool,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// Last change, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
}

bootlane_core::store::entity!(Baseline, "baselines");

/// `*` matches any run of characters; everything else literally, case-insensitive.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

impl OsFilter {
    /// Whether an OS of `family` and `version` passes (an unknown version passes a
    /// version pattern of `*` only).
    pub fn matches(&self, family: &str, version: Option<&str>) -> bool {
        self.family.as_deref().is_none_or(|f| f.eq_ignore_ascii_case(family))
            && self
                .version
                .as_deref()
                .is_none_or(|p| version.is_some_and(|v| glob(p, v)) || p.chars().all(|c| c == '*'))
    }

    /// Checks the patterns: each 1-64 characters without control characters.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] naming the field.
    pub fn check(&self) -> Result<(), ServiceError> {
        for (field, v) in [("os_filter.family", &self.family), ("os_filter.version", &self.version)] {
            if let Some(v) = v {
                if v.trim().is_empty() || v.len() > 64 || v.chars().any(char::is_control) {
                    return Err(ServiceError::Invalid(format!(
                        "'{field}' must be 1-64 characters (or null for any)"
                    )));
                }
            }
        }
        Ok(())
    }
}
