//! The doctor's report: [`Finding`]s (check, severity, interface, summary, fix, details)
//! in a [`Report`], the shape `POST /api/v1/doctor` answers.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

/// How bad a finding is; findings sort most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DoctorSeverity)]
pub enum Severity {
    /// The check passed.
    Ok,
    /// Worth knowing, nothing to fix.
    Info,
    /// Some clients may fail to boot.
    Warning,
    /// Clients will fail to boot, or may boot from another server.
    Error,
}

/// Which check made a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DoctorCheck)]
pub enum Check {
    /// Other DHCP servers answering PXE-flavoured DHCPDISCOVERs on the link.
    RivalDhcp,
    /// Port 4011 answers a PXE boot-server request (proxyDHCP subnets).
    ProxyDhcp,
    /// Relay agents (`giaddr`) against the configured subnets.
    Relay,
    /// Every architecture of the arch map has a file of the right kind.
    BootFile,
    /// TFTP on the interface's address serves the boot file with blksize and windowsize.
    Tftp,
    /// The interface MTU against the largest blksize clients ask for.
    Mtu,
    /// The HTTP base URL handed to iPXE answers from the interface's address.
    Http,
    /// The server's own name resolves through Bootlane's DNS.
    Dns,
    /// Secure Boot clients have the signed shim and GRUB to load.
    SecureBoot,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = DoctorFinding)]
pub struct Finding {
    /// The check that made it.
    pub check: Check,
    /// How bad it is.
    pub severity: Severity,
    /// The interface it is about (none for server-wide checks).
    pub interface: Option<String>,
    /// What was found, in words.
    pub summary: String,
    /// What to do about it (none when nothing needs doing).
    pub fix: Option<String>,
    /// What was measured (offers seen, negotiated options, addresses...), per check.
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

impl Finding {
    /// A finding without fix or details.
    pub fn new(check: Check, severity: Severity, interface: Option<&str>, summary: impl Into<String>) -> Self {
        Self {
            check,
            severity,
            interface: interface.map(str::to_owned),
            summary: summary.into(),
            fix: None,
            details: None,
        }
    }

    /// With the fix.
    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// With details.
    pub fn details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// One doctor run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = DoctorReport)]
pub struct Report {
    /// When the run started (RFC 3339).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started_at: OffsetDateTime,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// The interfaces checked (those the DHCP server serves).
    pub interfaces: Vec<String>,
    /// Every finding, most severe first.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The number of findings of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }
}

/// Sorts findings most severe first, then by check and interface (stable otherwise).
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.check.cmp(&b.check))
            .then(a.interface.cmp(&b.interface))
    });
}
