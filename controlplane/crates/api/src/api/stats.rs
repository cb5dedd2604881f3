//! `GET /stats/activity` and `GET /stats/pools`: what the dashboard charts. Activity
//! comes from the sampled ring of [`bootlane_dns::stats::Activity`] (sub-state); pool usage
//! from the live DHCP administration.
#![allow(
    unused_qualifications,
    reason = "utoipa::path re-emits the Query extractor type with its full path"
)]

use std::sync::Arc;

use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    error::{ApiError, Result},
    extract::{ApiQuery, Envelope},
    AppState,
};
use bootlane_dhcp::dhcp::config::SubnetMode;
use bootlane_dns::stats::{Activity, ActivityHistory, MAX_MINUTES};

impl FromRef<AppState> for Arc<Activity> {
    fn from_ref(s: &AppState) -> Self {
        s.activity.clone()
    }
}

/// Query of `GET /stats/activity`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityQuery {
    /// Window in minutes, 1-1440. Default 60.
    #[param(minimum = 1, maximum = 1440)]
    pub minutes: Option<u32>,
}

/// Boot and DNS activity over the last `minutes`, as counts per interval (oldest first):
/// DHCP offers and acks, TFTP transfers completed, iPXE scripts served, DNS queries of
/// the userspace server and of the XDP fast path. Sampled every 10 s, kept 24 h in
/// memory (lost on restart).
#[utoipa::path(get, path = "/api/v1/stats/activity", extensions(("x-bootlane-role" = json!("viewer"))), tag = "stats", params(ActivityQuery),
    responses((status = 200, body = ActivityHistory), (status = 400, description = "minutes out of 1-1440"), (status = 401)))]
pub async fn activity(
    State(a): State<Arc<Activity>>,
    ApiQuery(q): ApiQuery<ActivityQuery>,
) -> Result<Envelope<ActivityHistory>> {
    let minutes = q.minutes.unwrap_or(60);
    if !(1..=MAX_MINUTES).contains(&minutes) {
        return Err(ApiError::BadRequest(format!(
            "'minutes' must be 1 to {MAX_MINUTES} (the server keeps 24 hours); got {minutes}"
        )));
    }
    Ok(Envelope::ok(a.history(minutes)))
}

/// Lease pool usage of one DHCP subnet.
#[derive(Debug, Serialize, ToSchema)]
pub struct PoolUsage {
    /// The subnet (CIDR).
    pub subnet: String,
    /// `server` or `proxy` (a proxy subnet has no pool: all counts 0).
    pub mode: SubnetMode,
    /// Addresses in the pool.
    pub total: u64,
    /// Pool addresses with an active lease or decline.
    pub used: u64,
    /// Reservations in the subnet (they may lie outside the pool).
    pub reserved: u64,
    /// Pool addresses neither used nor reserved.
    pub free: u64,
}

/// Lease pool usage per subnet (subnets in `server` or `proxy` mode).
#[utoipa::path(get, path = "/api/v1/stats/pools", extensions(("x-bootlane-role" = json!("viewer"))), tag = "stats",
    responses((status = 200, body = Vec<PoolUsage>), (status = 401)))]
pub async fn pools(State(s): State<AppState>) -> Result<Envelope<Vec<PoolUsage>>> {
    let stats = s.dhcp.stats().await?;
    Ok(Envelope::ok(
        stats
            .into_iter()
            .map(|st| PoolUsage {
                subnet: st.subnet,
                mode: st.mode,
                total: st.size,
                used: st.used,
                reserved: st.reserved,
                free: st.free,
            })
            .collect(),
    ))
}

/// The stats routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(activity)).routes(routes!(pools))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use axum::http::{Method, StatusCode};
    use serde_json::{json, Value};

    use crate::api::test_support::T;
    use bootlane_config::config::Config;

    /// A logged-in client over `config`.
    async fn client(config: Config) -> T {
        let mut t = crate::api::test_support::app(config).await;
        t.login().await;
        t
    }

    /// `(status, body)` of a GET, with the session cookie only when `auth`.
    async fn call(t: &mut T, auth: bool, path: &str) -> (StatusCode, Value) {
        let cookie = if auth { t.cookie.clone() } else { t.cookie.take() };
        let (s, _, v) = t.call(Method::GET, path, None).await;
        t.cookie = cookie;
        (s, v)
    }

    #[tokio::test]
    async fn activity_answers_deltas_since_the_previous_sample() {
        let mut t = client(Config::default()).await;
        let state = t.state.clone();
        state.activity.sample();
        // Activity between two samples: 2 offers, 1 ack, 1 TFTP transfer, 3 iPXE scripts
        // through the recorder (shared with other tests, hence `>=`), 4 userspace DNS
        // queries through the handler's own counters (this state's alone, hence `==`).
        bootlane_core::metrics::install();
        metrics::counter!(bootlane_core::metrics::DHCP_REPLIES, "type" => "offer").increment(2);
        metrics::counter!(bootlane_core::metrics::DHCP_REPLIES, "type" => "ack").increment(1);
        metrics::counter!(bootlane_core::metrics::TFTP_COMPLETED).increment(1);
        metrics::counter!(bootlane_core::metrics::IPXE_SCRIPTS).increment(3);
        let m = &state.dns.handler().shared.metrics;
        m.queries_udp.fetch_add(3, Relaxed);
        m.queries_tcp.fetch_add(1, Relaxed);
        state.activity.sample();

        let (s, v) = call(&mut t, true, "/api/v1/stats/activity?minutes=5").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let d = &v["data"];
        assert_eq!(
            (&d["minutes"], &d["sample_secs"], &d["step_secs"]),
            (&json!(5), &json!(10), &json!(10))
        );
        let last = d["points"].as_array().unwrap().last().unwrap();
        for (k, at_least) in [
            ("dhcp_offers", 2),
            ("dhcp_acks", 1),
            ("tftp_completed", 1),
            ("ipxe_scripts", 3),
        ] {
            assert!(last[k].as_u64().unwrap() >= at_least, "{k}: {last}");
        }
        assert_eq!(
            (&last["dns_userspace"], &last["dns_xdp"]),
            (&json!(4), &json!(0)),
            "{last}"
        );
        assert!(last["time"].as_i64().unwrap() > 1_700_000_000);

        // Default window, bounds, a non-number, and the session guard.
        let (s, v) = call(&mut t, true, "/api/v1/stats/activity").await;
        assert_eq!((s, &v["data"]["minutes"]), (StatusCode::OK, &json!(60)));
        for q in ["minutes=0", "minutes=1441"] {
            let (s, v) = call(&mut t, true, &format!("/api/v1/stats/activity?{q}")).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {v}");
            assert!(
                v["error"].as_str().unwrap().contains("'minutes' must be 1 to 1440"),
                "{v}"
            );
        }
        let (s, v) = call(&mut t, true, "/api/v1/stats/activity?minutes=x").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
        assert!(v["error"].as_str().unwrap().contains("minutes"), "{v}");
        let (s, _) = call(&mut t, false, "/api/v1/stats/activity").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn pools_report_usage_per_subnet() {
        let config: Config = toml::from_str(
            r#"
[[dhcp.subnets]]
mode = "server"
interface = "br0"
cidr = "10.78.0.0/24"
range_start = "10.78.0.100"
range_end = "10.78.0.149"
server_address = "10.78.0.1"
[[dhcp.subnets.reservations]]
mac = "52:54:00:78:00:99"
ip = "10.78.0.120"
"#,
        )
        .unwrap();
        let mut t = client(config).await;
        let (s, v) = call(&mut t, true, "/api/v1/stats/pools").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            v["data"],
            json!([{"subnet": "10.78.0.0/24", "mode": "server", "total": 50, "used": 0, "reserved": 1, "free": 49}])
        );
        let (s, _) = call(&mut t, false, "/api/v1/stats/pools").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn openapi_lists_the_stats_paths() {
        let doc = serde_json::to_value(crate::api::openapi_doc()).unwrap();
        for p in ["/api/v1/stats/activity", "/api/v1/stats/pools"] {
            assert!(doc["paths"].get(p).is_some(), "{p} missing");
        }
        let schema =
            &doc["paths"]["/api/v1/stats/activity"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        assert!(schema.to_string().contains("ActivityHistory"), "{schema}");
    }
}
