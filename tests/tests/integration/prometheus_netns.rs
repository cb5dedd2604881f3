//! The shipped Prometheus alerting rules and Grafana dashboard against the real tools:
//! `scripts/e2e-prometheus.sh` checks and unit-tests the rules with `promtool`, runs
//! Bootlane in a namespace with DHCP, TFTP, HTTP boot and DNS traffic from real clients,
//! checks that every metric name the rules and the dashboard use is on its `/metrics`,
//! then has a real Prometheus scrape it over HTTPS with a static configuration: the
//! target is up, the rules evaluate cleanly with nothing firing, and every dashboard
//! query runs. About twenty seconds, in the light lane.

use bootlane_tests::run_e2e;

/// Rules, dashboard and a real Prometheus scrape.
#[test]
fn prometheus_scrapes_and_the_shipped_rules_and_dashboard_match_the_metrics() {
    run_e2e("e2e-prometheus.sh", "e2e-prometheus");
}
