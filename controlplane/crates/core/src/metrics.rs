//! Prometheus metrics: this module owns the process's metrics recorder
//! (`metrics-exporter-prometheus`, installed as the `metrics` crate's global recorder),
//! its render handle, the name of every series with its description, and the `[metrics]`
//! config section (who may scrape `GET /api/v1/metrics`).
//!
//! Any module may emit through the `metrics` macros (`counter!`, `gauge!`,
//! `histogram!`) with a name constant from here: the series appears in [`render`]'s
//! output with no other wiring. Add the constant and its `describe_*!` line in
//! `describe()` (and the book's metrics reference) so the series carries `# HELP` text; the event
//! bus (`bootlane_events_published_total`, `bootlane_event_subscribers`) and the
//! service supervisor (`bootlane_service_up{service}`) emit this way. Emitting
//! before [`install`] has run is a silent no-op (the `metrics` crate's default
//! recorder), so `bootlane::run`, the API router and every test that looks at metrics
//! call [`install`] first.
//!
//! Hot paths that keep their own atomic counters (the DNS handler, the XDP per-CPU
//! map) are copied into the recorder at scrape time with `counter!(..).absolute(v)`
//! and gauges, by the owning module, just before [`render`].
//!
//! Global state: the recorder and its handle, created once per process ([`install`],
//! a `OnceLock`), because the `metrics` facade itself has exactly one global recorder;
//! this also lets every unit test in one test binary share it. The exporter opens no
//! HTTP listener of its own: the API serves the text.

use std::sync::OnceLock;

use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

// ---- Logins ----
/// Counter: failed logins not published as `auth.login_failed` events because their
/// source network was over its event budget (or the budget table was full).
pub const LOGIN_FAILED_EVENTS_SUPPRESSED: &str = "bootlane_auth_login_failed_events_suppressed_total";

// ---- DHCP ----
/// Counter `{type, outcome}`: DHCP messages received, by message type (`discover`,
/// `request`, `decline`, `release`, `inform`, ...; `invalid` for undecodable datagrams)
/// and outcome (`offered`, `acked`, `naked`, `replied` for other replies,
/// `no_reply_due` for DECLINE and RELEASE, `ignored` when another message got no reply,
/// `dropped` when undecodable).
pub const DHCP_MESSAGES: &str = "bootlane_dhcp_messages_total";
/// Counter `{type}`: DHCP replies sent, by message type (`offer`, `ack`, `nak`).
pub const DHCP_REPLIES: &str = "bootlane_dhcp_replies_total";
/// Gauge `{subnet}`: addresses in the pool with an active lease or decline.
pub const DHCP_LEASES_ACTIVE: &str = "bootlane_dhcp_leases_active";
/// Gauge `{subnet}`: pool addresses neither leased nor reserved.
pub const DHCP_LEASES_FREE: &str = "bootlane_dhcp_leases_free";

// ---- TFTP ----
/// Counter: TFTP read transfers started (the request was accepted).
pub const TFTP_STARTED: &str = "bootlane_tftp_transfers_started_total";
/// Counter: TFTP transfers whose last block was acknowledged.
pub const TFTP_COMPLETED: &str = "bootlane_tftp_transfers_completed_total";
/// Counter `{reason}`: TFTP transfers that ended without completing (`client_error`,
/// `timed_out`, `cancelled`).
pub const TFTP_FAILED: &str = "bootlane_tftp_transfers_failed_total";
/// Counter: file bytes sent in DATA packets, retransmissions included.
pub const TFTP_BYTES_SENT: &str = "bootlane_tftp_bytes_sent_total";
/// Counter `{kind}`: TFTP errors: ERROR packets sent, by kind (`not_found`, `access`,
/// `illegal`, `option_refused`, `unknown_tid`, `busy`, `read_error`, `undefined`), and
/// `socket` when no transfer socket could be opened.
pub const TFTP_ERRORS: &str = "bootlane_tftp_errors_total";
/// Gauge: TFTP transfers in progress.
pub const TFTP_ACTIVE: &str = "bootlane_tftp_active_transfers";

// ---- HTTP boot ----
/// Counter `{kind, status}`: requests to `/boot/...` (`kind` = `script` for
/// `/boot/ipxe`, `file` otherwise) by HTTP status code.
pub const HTTP_BOOT_REQUESTS: &str = "bootlane_http_boot_requests_total";
/// Counter `{status}`: body bytes of `/boot/...` file answers (their `Content-Length`)
/// by HTTP status code.
pub const HTTP_BOOT_BYTES: &str = "bootlane_http_boot_bytes_total";
/// Counter: iPXE scripts served (`GET /boot/ipxe` answered 200).
pub const IPXE_SCRIPTS: &str = "bootlane_ipxe_scripts_served_total";

// ---- API ----
/// Counter `{method, route, status}`: HTTP requests by matched route template (e.g.
/// `/api/v1/dns/records/{id}`; `unmatched` for unknown paths) and status code.
pub const API_REQUESTS: &str = "bootlane_api_requests_total";
/// Histogram `{method, route}`: request latency in seconds (buckets [`API_BUCKETS`]).
pub const API_DURATION: &str = "bootlane_api_request_duration_seconds";
/// Upper bounds (seconds) of the [`API_DURATION`] histogram buckets.
pub const API_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Histogram: seconds from a boot session's first DHCPDISCOVER to its kernel handed over
/// (buckets [`BOOT_BUCKETS`]; described by `bootlane-sessions`).
pub const BOOT_KERNEL_SECONDS: &str = "bootlane_boot_session_kernel_seconds";
/// Upper bounds (seconds) of the [`BOOT_KERNEL_SECONDS`] histogram buckets.
pub const BOOT_BUCKETS: &[f64] = &[1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0];

// ---- Store ----
/// Gauge: bytes the store uses on disk.
pub const STORE_SIZE: &str = "bootlane_store_size_bytes";
/// Gauge `{backend}` (`sled`, `postgres`): 1 while the store answers (the shared
/// PostgreSQL store's link as its listener sees it; the embedded sled store is always 1),
/// set at scrape time.
pub const STORE_UP: &str = "bootlane_store_up";

// ---- Services and the management listener ----
/// Gauge `{service}` (`dns`, `dhcp`, `tftp`, `http-boot`): 1 while the service runs.
pub const SERVICE_UP: &str = "bootlane_service_up";
/// Gauge `{service}`: 1 when the service's last start failed (0 when it runs or an
/// operator stopped it).
pub const SERVICE_FAILED: &str = "bootlane_service_failed";
/// Gauge: end of validity of the management listener's TLS certificate (`[api] tls`),
/// in seconds since the Unix epoch, set at scrape time; absent without TLS.
pub const TLS_CERT_EXPIRY: &str = "bootlane_tls_certificate_expiry_timestamp_seconds";

// ---- DNS and XDP (stable names) ----
/// Counter `{transport}` (`udp`, `tcp`): queries received by the userspace DNS server.
pub const DNS_QUERIES: &str = "bootlane_dns_queries_total";
/// Counter `{outcome}`: outcomes of the userspace DNS server (`local`, `forwarded`,
/// `nxdomain`, `refused`, `servfail`, `error`, `dropped`, `truncated`, `recursion_refused`:
/// REFUSED to a client outside `[dns] allow_recursion`).
pub const DNS_RESPONSES: &str = "bootlane_dns_responses_total";
/// Counter: queries answered by the XDP fast path.
pub const XDP_ANSWERED: &str = "bootlane_dns_xdp_answered_total";
/// Counter `{reason}`: packets the XDP program passed to the kernel stack (`not_dns`,
/// `miss`, `unsupported`, `too_long`, `malformed`).
pub const XDP_PASSED: &str = "bootlane_dns_xdp_passed_total";
/// Counter `{action}`: answers of the XDP fast path over the response rate limit
/// (`[dns.rrl]`), `dropped` or `slipped` (sent truncated, TC=1).
pub const XDP_RRL: &str = "bootlane_dns_xdp_rrl_total";
/// Gauge: 1 when the XDP fast path is attached, else 0.
pub const XDP_ACTIVE: &str = "bootlane_dns_xdp_active";
/// Gauge: 1 when the XDP fast path is configured (`[dns.xdp] mode` other than `off`),
/// else 0; with [`XDP_ACTIVE`] it tells a detached fast path from one turned off.
pub const XDP_CONFIGURED: &str = "bootlane_dns_xdp_configured";
/// Gauge: entries in the XDP answer map.
pub const XDP_MAP_ENTRIES: &str = "bootlane_dns_xdp_map_entries";
/// Counter `{protocol, reason}`: requests refused by access control; protocol `dhcp`,
/// `proxydhcp`, `tftp`, `http`, `ipxe`; reason `blacklisted`, `not_whitelisted`,
/// `unknown_client`.
pub const ACCESS_REFUSED: &str = "bootlane_access_refused_total";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the Prometheus recorder as the global `metrics` recorder (first call only)
/// and returns its handle. Idempotent and cheap after the first call.
///
/// If another recorder was installed first (by an embedding program), this one is not,
/// a warning is logged, and [`render`] shows only what that recorder does not take:
/// nothing.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(API_DURATION.into()), API_BUCKETS)
            .expect("API_BUCKETS is not empty")
            .set_buckets_for_metric(Matcher::Full(BOOT_KERNEL_SECONDS.into()), BOOT_BUCKETS)
            .expect("BOOT_BUCKETS is not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics will be empty");
        }
        describe();
        zero_series();
        handle
    })
}

/// Starts the counters whose labels are known in advance at 0, so each series exists
/// from the first scrape: `rate()` and `increase()` then see its first event, and the
/// shipped dashboard and alerting rules (`integrations/`) find every series they name.
/// The label values are the ones the emitting modules use (TFTP outcomes, access
/// refusals, connection caps).
fn zero_series() {
    for name in [TFTP_STARTED, TFTP_COMPLETED, TFTP_BYTES_SENT, IPXE_SCRIPTS] {
        metrics::counter!(name).increment(0);
    }
    metrics::gauge!(TFTP_ACTIVE).increment(0.0);
    for reason in ["client_error", "timed_out", "cancelled"] {
        metrics::counter!(TFTP_FAILED, "reason" => reason).increment(0);
    }
    for protocol in ["dhcp", "proxydhcp", "tftp", "http", "ipxe"] {
        for reason in ["blacklisted", "not_whitelisted", "unknown_client"] {
            metrics::counter!(ACCESS_REFUSED, "protocol" => protocol, "reason" => reason).increment(0);
        }
    }
    for listener in ["api", "boot"] {
        for reason in ["total", "per_client"] {
            metrics::counter!(crate::web_server::limits::CONNECTIONS_REFUSED, "listener" => listener, "reason" => reason)
                .increment(0);
        }
    }
}

/// Registers the `# HELP` text (and unit) of every series named in this module.
fn describe() {
    describe_counter!(DHCP_MESSAGES, "DHCP messages received, by message type and outcome.");
    describe_counter!(DHCP_REPLIES, "DHCP replies sent, by message type.");
    describe_gauge!(
        DHCP_LEASES_ACTIVE,
        "Pool addresses with an active lease or decline, per subnet."
    );
    describe_gauge!(
        DHCP_LEASES_FREE,
        "Pool addresses neither leased nor reserved, per subnet."
    );
    describe_counter!(TFTP_STARTED, "TFTP read transfers started.");
    describe_counter!(TFTP_COMPLETED, "TFTP transfers whose last block was acknowledged.");
    describe_counter!(TFTP_FAILED, "TFTP transfers that did not complete, by reason.");
    describe_counter!(
        TFTP_BYTES_SENT,
        Unit::Bytes,
        "File bytes sent in TFTP DATA packets, retransmissions included."
    );
    describe_counter!(
        TFTP_ERRORS,
        "TFTP errors (ERROR packets sent, socket failures), by kind."
    );
    describe_gauge!(TFTP_ACTIVE, "TFTP transfers in progress.");
    describe_counter!(
        HTTP_BOOT_REQUESTS,
        "HTTP boot requests (/boot/...), by kind and status."
    );
    describe_counter!(
        HTTP_BOOT_BYTES,
        Unit::Bytes,
        "Body bytes of HTTP boot file answers, by status."
    );
    describe_counter!(IPXE_SCRIPTS, "iPXE scripts served.");
    describe_counter!(
        ACCESS_REFUSED,
        "Requests refused by access control, by protocol and reason."
    );
    describe_counter!(API_REQUESTS, "HTTP requests, by method, matched route and status.");
    describe_histogram!(
        API_DURATION,
        Unit::Seconds,
        "HTTP request latency, by method and matched route."
    );
    describe_gauge!(STORE_SIZE, Unit::Bytes, "Bytes the store uses on disk.");
    describe_gauge!(STORE_UP, "1 while the store answers, by backend.");
    describe_gauge!(SERVICE_UP, "1 while the service runs.");
    describe_gauge!(SERVICE_FAILED, "1 when the service's last start failed.");
    describe_gauge!(
        TLS_CERT_EXPIRY,
        Unit::Seconds,
        "End of validity of the management listener's TLS certificate, Unix time."
    );
    describe_counter!(DNS_QUERIES, "DNS queries received by the userspace server.");
    describe_counter!(DNS_RESPONSES, "DNS outcomes of the userspace server.");
    describe_counter!(XDP_ANSWERED, "DNS queries answered by the XDP fast path.");
    describe_counter!(
        XDP_PASSED,
        "Packets the XDP program passed to the kernel stack, by reason."
    );
    describe_counter!(
        XDP_RRL,
        "XDP fast-path answers over the response rate limit, dropped or slipped."
    );
    describe_gauge!(XDP_ACTIVE, "Whether the XDP fast path is attached.");
    describe_gauge!(XDP_MAP_ENTRIES, "Entries in the XDP answer map.");
    describe_gauge!(
        XDP_CONFIGURED,
        "Whether the XDP fast path is configured (mode other than off)."
    );
    describe_counter!(
        LOGIN_FAILED_EVENTS_SUPPRESSED,
        "Failed logins not published as auth.login_failed events (source network over its event budget)."
    );
    describe_counter!(
        crate::audit::SYSLOG_FAILED,
        "Audit entries whose syslog copy could not be sent."
    );
}

/// Every series in the Prometheus text exposition format (version 0.0.4). Installs the
/// recorder if needed. Scrape-time values (DNS, XDP, leases, store size) must be set
/// by their owners before the call; the API's `/metrics` handler does that.
pub fn render() -> String {
    let handle = install();
    // Drains histogram samples into their buckets; render does it too, but upkeep also
    // bounds memory between scrapes.
    handle.run_upkeep();
    handle.render()
}

/// How often [`upkeep`] drains histogram samples (5 s).
pub const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Drains histogram samples into their buckets every [`UPKEEP_EVERY`] until `token`
/// fires. The recorder keeps every sample until a render or an upkeep drains it, so a
/// server nobody scrapes would otherwise hold one sample per API request forever.
pub async fn upkeep(token: tokio_util::sync::CancellationToken) {
    let handle = install();
    let mut tick = tokio::time::interval(UPKEEP_EVERY);
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => handle.run_upkeep(),
        }
    }
}

/// `[metrics]`: who may scrape `GET /api/v1/metrics` besides a logged-in session.
/// Prometheus scrapes with a static config, so it gets a bearer token (or the endpoint
/// is made public explicitly).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Accepted as `Authorization: Bearer <token>` on `/api/v1/metrics` only (compared in
    /// constant time).
    pub bearer_token: Option<String>,
    /// `true`: `/api/v1/metrics` needs no authentication at all.
    pub public: bool,
}

impl MetricsConfig {
    /// Checks the section.
    ///
    /// # Errors
    /// An empty or whitespace-padded `bearer_token` (the message names the key).
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(t) = &self.bearer_token {
            if t.is_empty() || t.trim() != t {
                anyhow::bail!(
                    "[metrics] bearer_token must be a non-empty string without surrounding spaces (omit the key to disable token scraping)"
                );
            }
        }
        Ok(())
    }

    /// True when `presented` equals the configured token. Both sides are hashed first
    /// and compared in constant time, so neither the content nor the length of the
    /// token leaks through timing. Always false without a configured token.
    pub fn token_matches(&self, presented: &str) -> bool {
        let Some(expected) = &self.bearer_token else {
            return false;
        };
        let a = Sha256::digest(expected.as_bytes());
        let b = Sha256::digest(presented.as_bytes());
        a.ct_eq(&b).into()
    }
}

#[cfg(any(test, feature = "test-support"))]
pub mod test_support {
    //! Reading values back from the rendered text, for tests in other modules.

    /// The value of the sample whose line starts with `series` (name plus exact label
    /// set as rendered, e.g. `bootlane_x_total{kind="a"}`), or 0 when absent. Tests
    /// compare before/after values because every test in the binary shares the recorder.
    pub fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emitted_series_render_with_help_and_labels() {
        install();
        // A gauge no other test touches, so its value is exactly what was set here.
        metrics::gauge!("bootlane_test_only_gauge").set(4096.0);
        let before = test_support::value(&render(), "bootlane_tftp_errors_total{kind=\"busy\"}");
        metrics::counter!(TFTP_ERRORS, "kind" => "busy").increment(1);
        let text = render();
        assert!(
            text.contains(
                "# HELP bootlane_tftp_errors_total TFTP errors (ERROR packets sent, socket failures), by kind."
            ),
            "{text}"
        );
        assert!(text.contains("# TYPE bootlane_tftp_errors_total counter"), "{text}");
        assert_eq!(test_support::value(&text, "bootlane_test_only_gauge"), 4096.0);
        assert!(test_support::value(&text, "bootlane_tftp_errors_total{kind=\"busy\"}") >= before + 1.0);
    }

    #[test]
    fn token_compare() {
        let none = MetricsConfig::default();
        assert!(!none.token_matches(""));
        let c = MetricsConfig {
            bearer_token: Some("s3cret-token".into()),
            public: false,
        };
        assert!(c.token_matches("s3cret-token"));
        assert!(!c.token_matches("s3cret-toke"));
        assert!(!c.token_matches(""));
        assert!(c.validate().is_ok());
        let bad = MetricsConfig {
            bearer_token: Some(" x".into()),
            public: false,
        };
        assert!(bad.validate().unwrap_err().to_string().contains("bearer_token"));
    }
}
