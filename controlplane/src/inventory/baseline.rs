//! Baselines as the machines' vocabulary: a host and a profile may name one
//! (`baseline_id`), so the record lives beside the hosts; what a baseline runs and how
//! it is rendered for a machine is [`crate::scripts`]'. A record type only; no state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

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

crate::store::entity!(Baseline, "baselines");
