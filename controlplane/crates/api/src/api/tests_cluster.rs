//! Two nodes on one shared PostgreSQL store: a change made through one node's API
//! reaches the other node's services (zone and XDP projection, Secure Boot MACs, access
//! gate) by `LISTEN/NOTIFY`, without polling; the machine-bound trees stay each node's own.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::test_support::{app_on, T};
use bootlane_boot::access::model::ListKind;
use bootlane_config::config::Config;
use bootlane_core::store::{pg, Store};

async fn node(cluster: &pg::throwaway::Cluster, url: &str, name: &str) -> T {
    let settings = pg::PgSettings {
        url: url.to_owned(),
        pool_size: 2,
        ..Default::default()
    };
    let dir = cluster.dir().join(name);
    let store = Store::open_postgres(&dir, &settings, tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    let mut config = Config::default();
    config.server.node_name = Some(name.into());
    let mut t = app_on(config, store).await;
    t.login().await;
    t
}

/// Waits up to 5 s for `cond`, returning how long it took.
async fn within(what: &str, cond: impl Fn() -> bool) -> Duration {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(5), "{what} never happened");
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    t0.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_node_reaches_the_other_nodes_services() {
    let cluster = pg::throwaway::Cluster::start().unwrap();
    let url = cluster.create_database("two").await.unwrap();
    let a = node(&cluster, &url, "node-a").await;
    let b = node(&cluster, &url, "node-b").await;

    // DNS: a record created through A is in B's zone projection (what B's XDP map gets).
    let mut delays = Vec::new();
    for i in 0..20u8 {
        let name = format!("web{i}");
        let (s, _, v) = a
            .call(
                Method::POST,
                "/api/v1/dns/records",
                Some(json!({"name": name, "type": "A", "value": format!("10.7.0.{i}")})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let mut wire = vec![name.len() as u8];
        wire.extend_from_slice(name.as_bytes());
        wire.extend_from_slice(b"\x03lab\x04test\x00");
        delays.push(
            within(&format!("{name} in node B's projection"), || {
                b.fake
                    .last
                    .lock()
                    .unwrap()
                    .entries
                    .iter()
                    .any(|(k, a)| k.qname[..k.qname_len as usize] == *wire && a.addrs[0][..4] == [10, 7, 0, i])
            })
            .await,
        );
    }
    delays.sort();
    println!(
        "record through A in B's projection after A answered: p50 {:?}, max {:?}",
        delays[10], delays[19]
    );
    assert!(delays[19] < Duration::from_millis(100), "{delays:?}");

    // Hosts: a Secure Boot host created through A is in the MACs B's DHCP handler reads.
    let (s, _, v) = a
        .call(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "sb1", "mac": "52:54:00:aa:0b:01", "secure_boot": true})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let sb = b.state.hosts.secure_boot_hosts();
    within("the Secure Boot MAC on node B", || {
        sb.borrow().iter().any(|m| m.to_string() == "52:54:00:aa:0b:01")
    })
    .await;

    // Access: a blacklist entry made through A is in B's gate; B's API lists it too.
    let (s, _, v) = a
        .call(
            Method::POST,
            "/api/v1/access/blacklist",
            Some(json!({"mac": "52:54:00:aa:0c:01"})),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let gate = b.state.access.gate();
    let mac = "52:54:00:aa:0c:01".parse().unwrap();
    within("the blacklist entry in node B's gate", || {
        gate.snapshot().find(ListKind::Blacklist, mac).is_some()
    })
    .await;
    let (_, _, v) = b.call(Method::GET, "/api/v1/access/blacklist", None).await;
    assert_eq!(v["data"]["total"], 1, "{v}");

    // The status names the node and its store.
    let (_, _, v) = b.call(Method::GET, "/api/v1/status", None).await;
    assert_eq!(
        (&v["data"]["node"], &v["data"]["store_backend"]),
        (&json!("node-b"), &json!("postgres")),
        "{v}"
    );
    assert_eq!(v["data"]["store_connected"], true, "{v}");

    // Both nodes wrote the auto-records: one row each all the same (fixed ids).
    let (_, _, v) = b.call(Method::GET, "/api/v1/dns/records?size=1000", None).await;
    let autos: Vec<_> = v["data"]["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["auto"] == true)
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut unique = autos.clone();
    unique.sort();
    unique.dedup();
    assert!(
        !autos.is_empty() && unique.len() == autos.len(),
        "auto-records twice: {autos:?}"
    );

    // Machine-bound settings are per node: A's API listen address is not B's.
    let (s, _, v) = a
        .call(
            Method::PUT,
            "/api/v1/settings/general",
            Some(json!({"api_listen": "10.7.0.1:8080"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, _, v) = b.call(Method::GET, "/api/v1/settings/general", None).await;
    assert_ne!(v["data"]["api_listen"], "10.7.0.1:8080", "{v}");
    let (_, _, v) = a.call(Method::GET, "/api/v1/settings/general", None).await;
    assert_eq!(v["data"]["api_listen"], "10.7.0.1:8080", "{v}");
    // ... in the store too: B's own settings tree (what B reads at its next start) does
    // not hold it, A's does.
    let stored = |t: &T| {
        t.state
            .store
            .kv("settings")
            .unwrap()
            .get::<serde_json::Value>("general")
            .unwrap()
            .map(|g| g["api_listen"].clone())
    };
    assert_eq!(stored(&a), Some(json!("10.7.0.1:8080")));
    assert_ne!(stored(&b), Some(json!("10.7.0.1:8080")));

    // Node B's event stream shows node A's events too, with A's name; `?node=` picks.
    let t0 = Instant::now();
    loop {
        let (_, _, v) = b
            .call(Method::GET, "/api/v1/events?kind=dns.record.created&node=node-a", None)
            .await;
        if v["data"]["total"].as_u64() == Some(20) {
            assert_eq!(v["data"]["events"][0]["actor"], "admin", "{v}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "node A's events are not in node B's: {v}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, _, v) = b
        .call(Method::GET, "/api/v1/events?kind=dns.record.created&node=node-b", None)
        .await;
    assert_eq!(v["data"]["total"], 0, "{v}");

    // The database lost and back: each node says so in its status and its events.
    cluster.stop().unwrap();
    let mut kinds = Vec::new();
    for (want_up, kind) in [(false, "store.disconnected"), (true, "store.connected")] {
        let t0 = Instant::now();
        loop {
            let (_, _, v) = b.call(Method::GET, "/api/v1/status", None).await;
            if v["data"]["store_connected"] == want_up {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "node B never reported {kind}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let t0 = Instant::now();
        loop {
            let (_, _, v) = b
                .call(Method::GET, &format!("/api/v1/events?kind={kind}&node=node-b"), None)
                .await;
            if v["data"]["total"].as_u64() == Some(1) {
                assert_eq!(v["data"]["events"][0]["node"], "node-b", "{v}");
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "no {kind} event: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        kinds.push(kind);
        if !want_up {
            cluster.restart().unwrap();
        }
    }
    assert_eq!(kinds, ["store.disconnected", "store.connected"]);
}

/// Every machine-bound tree is each node's own on one PostgreSQL database, as its owner
/// declares it (`node_tree!`): what node A writes there node B does not read, while a
/// shared tree written after them reaches B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_machine_bound_trees_are_each_nodes_own() {
    let cluster = pg::throwaway::Cluster::start().unwrap();
    let url = cluster.create_database("own").await.unwrap();
    let a = node(&cluster, &url, "node-a").await;
    let b = node(&cluster, &url, "node-b").await;
    let per_node = ["settings", "services", "dhcp_settings", "tftp_settings", "nfs"];
    for tree in per_node {
        a.state.store.kv(tree).unwrap().put("probe", &"a").await.unwrap();
    }
    a.state
        .store
        .kv("netboot_overlays")
        .unwrap()
        .put("probe", &"a")
        .await
        .unwrap();
    let shared = b.state.store.kv("netboot_overlays").unwrap();
    within("the shared tree's row on node B", || {
        shared.get::<String>("probe").unwrap().is_some()
    })
    .await;
    for tree in per_node {
        let on = |t: &T| t.state.store.kv(tree).unwrap().get::<String>("probe").unwrap();
        assert_eq!(on(&a).as_deref(), Some("a"), "{tree} on node A");
        assert_eq!(on(&b), None, "{tree} of node A is node B's too");
    }
}

/// The followers `app::build` registers derive from the trees they cache: a tree
/// dropped from a service's [`Follower::trees`] (or a service not registered) fails.
#[tokio::test]
async fn trees_map_to_the_parts_that_cache_them() {
    let (state, _fake) = super::test_support::state(Config::default()).await;
    let followers = super::test_support::followers(&state);
    assert_eq!(bootlane_cluster::followers_of(&followers, "dns_records"), ["dns"]);
    assert_eq!(
        bootlane_cluster::followers_of(&followers, "dhcp_reservations"),
        ["dhcp"]
    );
    assert_eq!(bootlane_cluster::followers_of(&followers, "dhcp_settings"), ["dhcp"]);
    assert_eq!(bootlane_cluster::followers_of(&followers, "dhcp_leases"), ["dhcp"]);
    assert_eq!(bootlane_cluster::followers_of(&followers, "dhcp6_leases"), ["dhcp"]);
    assert_eq!(bootlane_cluster::followers_of(&followers, "access_entries"), ["access"]);
    assert_eq!(bootlane_cluster::followers_of(&followers, "access"), ["access"]);
    assert_eq!(bootlane_cluster::followers_of(&followers, "hosts"), ["hosts"]);
    assert!(bootlane_cluster::followers_of(&followers, "profiles").is_empty());
}

/// The machine-bound trees are each node's own on a shared store, as their owners
/// declare them: a declaration dropped (or its crate no longer linked) fails.
#[test]
fn the_machine_bound_trees_are_declared_per_node() {
    let names: Vec<_> = bootlane_core::store::node_trees().iter().map(|t| t.name).collect();
    assert_eq!(names, ["dhcp_settings", "nfs", "services", "settings", "tftp_settings"]);
    assert!(bootlane_core::store::is_node_identity_key(
        "dhcp_settings",
        b"server_duid6"
    ));
    assert!(!bootlane_core::store::is_node_identity_key("settings", b"server_duid6"));
    assert!(!bootlane_core::store::is_node_tree("hosts"));
}
