//! API tests (house style level b) for hosts, profiles, script versions, the per-MAC
//! iPXE script and the DHCP APIs: through the router, a temporary store, no sockets.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::test_support::{self, T};
use bootlane_config::config::Config;

/// A logged-in client whose requests carry `Host: 10.77.0.1:8080` (script URLs).
async fn setup_with(config: Config) -> T {
    let mut t = test_support::app(config).await;
    t.host = Some("10.77.0.1:8080");
    t.login().await;
    t
}

async fn setup() -> T {
    setup_with(Config::default()).await
}

fn linux_profile(name: &str) -> Value {
    json!({
        "name": name,
        "timeout_secs": 10,
        "entries": [
            {"label": "Install Debian", "type": "linux", "kernel": "debian/linux",
             "initrds": ["debian/initrd.gz"], "cmdline": "auto=true priority=critical", "is_default": true},
            {"label": "Local disk", "type": "local"}
        ]
    })
}

#[tokio::test]
async fn boot_routes_need_a_session() {
    let mut t = setup().await;
    t.cookie = None;
    for p in [
        "/api/v1/hosts",
        "/api/v1/profiles",
        "/api/v1/services/ipxe-script",
        "/api/v1/leases",
    ] {
        let (s, _, _) = t.call(Method::GET, p, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{p}");
    }
    // The boot route itself is public.
    let (s, _, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:00:00:01", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn default_profile_is_seeded_and_protected() {
    let t = setup().await;
    let v = t
        .expect(Method::GET, "/api/v1/profiles", None, StatusCode::OK, "")
        .await;
    let list = v["data"]["profiles"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    let def = &list[0];
    assert_eq!((&def["name"], &def["is_default"]), (&json!("Default"), &json!(true)));
    assert_eq!(def["entries"][0]["type"], "local");
    assert_eq!(def["entries"][0]["label"], "Boot from local disk");
    let def_id = def["id"].as_u64().unwrap();

    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{def_id}"),
        None,
        StatusCode::CONFLICT,
        "default profile",
    )
    .await;
    t.expect(
        Method::PUT,
        &format!("/api/v1/profiles/{def_id}"),
        Some(json!({"is_default": false})),
        StatusCode::BAD_REQUEST,
        "another profile",
    )
    .await;

    // Making another profile default moves the flag.
    let mut body = linux_profile("Debian");
    body["is_default"] = json!(true);
    let v = t
        .expect(Method::POST, "/api/v1/profiles", Some(body), StatusCode::CREATED, "")
        .await;
    let deb = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(Method::GET, "/api/v1/profiles", None, StatusCode::OK, "")
        .await;
    let defaults: Vec<u64> = v["data"]["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["is_default"] == true)
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(defaults, vec![deb]);
    // The shared list contract: `q` over name and description, id order, paging.
    let v = t
        .expect(Method::GET, "/api/v1/profiles?q=DEB", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["profiles"][0]["id"]),
        (&json!(1), &json!(deb))
    );
    let v = t
        .expect(Method::GET, "/api/v1/profiles?size=1&page=2", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["profiles"][0]["id"]),
        (&json!(2), &json!(deb))
    );
    t.expect(
        Method::GET,
        "/api/v1/profiles?size=1001",
        None,
        StatusCode::BAD_REQUEST,
        "'size' must be 1-1000",
    )
    .await;
    // The old default can now be deleted; the new one cannot.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{def_id}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{deb}"),
        None,
        StatusCode::CONFLICT,
        "default",
    )
    .await;
}

#[tokio::test]
async fn profile_validation() {
    let t = setup().await;
    for (body, needle) in [
        (json!({"name": "x"}), "required"),
        (json!({"name": "x", "entries": []}), "1-50"),
        (
            json!({"name": "x", "entries": [{"label": "k", "type": "linux"}]}),
            "needs 'kernel'",
        ),
        (
            json!({"name": "x", "entries": [{"label": "c", "type": "chain", "url": "ftp://a/b"}]}),
            "http/https/tftp",
        ),
        (
            json!({"name": "x", "entries": [{"label": "c", "type": "chain"}]}),
            "needs 'url'",
        ),
        (
            json!({"name": "x", "entries": [{"label": "c", "type": "custom"}]}),
            "'script'",
        ),
        (
            json!({"name": "x", "entries": [{"label": "l", "type": "local", "url": "http://a"}]}),
            "does not apply",
        ),
        (
            json!({"name": "x", "entries": [{"label": "a\nb", "type": "local"}]}),
            "label",
        ),
        // Words iPXE would read as a command separator, comment, option or setting.
        (
            json!({"name": "x", "entries": [{"label": "Tools && Rescue", "type": "local"}]}),
            "\"&&\"",
        ),
        (
            json!({"name": "x", "entries": [{"label": "x ; chain http://e/x", "type": "local"}]}),
            "\";\"",
        ),
        (
            json!({"name": "x", "entries": [{"label": "Ubuntu #2", "type": "local"}]}),
            "\"#2\"",
        ),
        (
            json!({"name": "x", "entries": [{"label": "a ${x}", "type": "local"}]}),
            "'$'",
        ),
        (
            json!({"name": "x || y", "entries": [{"label": "a", "type": "local"}]}),
            "\"||\"",
        ),
        (
            json!({"name": "x", "entries": [{"label": "k", "type": "linux", "kernel": "k boot"}]}),
            "without spaces",
        ),
        (
            json!({"name": "x", "entries": [{"label": "k", "type": "linux", "kernel": "k", "cmdline": "a ; shell"}]}),
            "\";\"",
        ),
        (
            json!({"name": "x", "entries": [{"label": "k", "type": "linux", "kernel": "k", "cmdline": "a\nshell"}]}),
            "cmdline",
        ),
        (
            json!({"name": "x", "entries": [{"label": "l", "type": "floppy"}]}),
            "expected shape",
        ),
        (
            json!({"name": "x", "timeout_secs": 99999, "entries": [{"label": "l", "type": "local"}]}),
            "timeout_secs",
        ),
        (
            json!({"name": "x", "entries": [{"label": "a", "type": "local", "is_default": true}, {"label": "b", "type": "local", "is_default": true}]}),
            "at most one",
        ),
    ] {
        t.expect(
            Method::POST,
            "/api/v1/profiles",
            Some(body),
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    t.expect(
        Method::POST,
        "/api/v1/profiles",
        Some(linux_profile("Debian")),
        StatusCode::CREATED,
        "",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/profiles",
        Some(linux_profile("debian")),
        StatusCode::CONFLICT,
        "already used",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/profiles/999",
        None,
        StatusCode::NOT_FOUND,
        "no profile",
    )
    .await;
}

#[tokio::test]
async fn host_crud_and_conflicts() {
    let t = setup().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(linux_profile("Debian")),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "Node1", "mac": "52-54-00-AA-00-01", "ip": "10.77.0.21",
                "profile_id": pid, "bmc_user": "root", "bmc_password": "secret"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let h = &v["data"];
    let id = h["id"].as_u64().unwrap();
    assert_eq!(
        (&h["name"], &h["mac"], &h["ip"], &h["has_bmc_password"]),
        (
            &json!("node1"),
            &json!("52:54:00:aa:00:01"),
            &json!("10.77.0.21"),
            &json!(true)
        )
    );
    assert!(h.get("bmc_password").is_none(), "the password is write-only: {h}");

    for (body, status, needle) in [
        (
            json!({"name": "node1", "mac": "52:54:00:aa:00:02"}),
            StatusCode::CONFLICT,
            "node1",
        ),
        (
            json!({"name": "node2", "mac": "5254.00aa.0001"}),
            StatusCode::CONFLICT,
            "52:54:00:aa:00:01",
        ),
        (
            json!({"name": "node2", "mac": "zz"}),
            StatusCode::BAD_REQUEST,
            "not a MAC",
        ),
        (
            json!({"name": "-bad", "mac": "52:54:00:aa:00:02"}),
            StatusCode::BAD_REQUEST,
            "DNS label",
        ),
        (json!({"name": "node2"}), StatusCode::BAD_REQUEST, "required"),
        (
            json!({"name": "node2", "mac": "52:54:00:aa:00:02", "profile_id": 4242}),
            StatusCode::BAD_REQUEST,
            "no such profile",
        ),
        (
            json!({"name": "node2", "mac": "52:54:00:aa:00:02", "ip": "10.1"}),
            StatusCode::BAD_REQUEST,
            "not an IPv4",
        ),
    ] {
        t.expect(Method::POST, "/api/v1/hosts", Some(body), status, needle)
            .await;
    }

    // PUT merges: omitted fields keep their values; null clears.
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/hosts/{id}"),
            Some(json!({"description": "rack 3", "ip": null})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (
            &v["data"]["name"],
            &v["data"]["profile_id"],
            &v["data"]["ip"],
            &v["data"]["description"]
        ),
        (&json!("node1"), &json!(pid), &Value::Null, &json!("rack 3"))
    );
    assert_eq!(v["data"]["has_bmc_password"], true);

    // The profile in use cannot be deleted.
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{pid}"),
        None,
        StatusCode::CONFLICT,
        "node1",
    )
    .await;

    // Search and paging.
    t.expect(
        Method::POST,
        "/api/v1/hosts",
        Some(json!({"name": "node2", "mac": "525400aa0002"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    let v = t
        .expect(Method::GET, "/api/v1/hosts?q=AA-00-02", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["total"], 1);
    assert_eq!(v["data"]["hosts"][0]["name"], "node2");
    let v = t
        .expect(Method::GET, "/api/v1/hosts?size=1&page=2", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["total"], v["data"]["hosts"].as_array().unwrap().len()),
        (&json!(2), 1)
    );
    t.expect(
        Method::GET,
        "/api/v1/hosts?size=0",
        None,
        StatusCode::BAD_REQUEST,
        "size",
    )
    .await;

    t.expect(Method::GET, "/api/v1/hosts/999", None, StatusCode::NOT_FOUND, "no host")
        .await;
    t.expect(
        Method::PUT,
        "/api/v1/hosts/999",
        Some(json!({})),
        StatusCode::NOT_FOUND,
        "no host",
    )
    .await;
    t.expect(Method::GET, "/api/v1/hosts/abc", None, StatusCode::BAD_REQUEST, "path")
        .await;
    t.expect(Method::DELETE, &format!("/api/v1/hosts/{id}"), None, StatusCode::OK, "")
        .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/hosts/{id}"),
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
    t.state.events.settle().await;
    let audit: Vec<_> = t.state.events.audit_newest_first().map(Result::unwrap).collect();
    assert!(audit
        .iter()
        .any(|a| a.resource == "host" && a.action == "delete" && a.user == "admin"));
}

#[tokio::test]
async fn script_per_mac() {
    let t = setup().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(linux_profile("Debian")),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "node1", "mac": "52:54:00:aa:00:01", "profile_id": pid})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let hid = v["data"]["id"].as_u64().unwrap();

    let (s, _, v) = t.call(Method::GET, "/boot/ipxe?mac=52-54-00-AA-00-01", None).await;
    assert_eq!(s, StatusCode::OK);
    let script = v.as_str().unwrap();
    assert!(
        script.starts_with("#!ipxe\necho Bootlane: booting 52:54:00:aa:00:01\n"),
        "{script}"
    );
    assert!(
        script.contains("kernel http://10.77.0.1:8080/boot/debian/linux auto=true priority=critical\n"),
        "{script}"
    );
    assert!(
        script.contains("initrd http://10.77.0.1:8080/boot/debian/initrd.gz\n"),
        "{script}"
    );
    assert!(
        script.contains("choose --timeout 10000 --default e1 target"),
        "{script}"
    );
    assert!(script.contains("(node1)"), "{script}");

    // boot-config is the same script.
    let (s, _, v) = t
        .call(Method::GET, &format!("/api/v1/hosts/{hid}/boot-config"), None)
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v.as_str().unwrap(), script);
    t.expect(
        Method::GET,
        "/api/v1/hosts/999/boot-config",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;

    // An unknown MAC gets the default profile.
    let (_, _, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:09", None).await;
    let other = v.as_str().unwrap();
    assert!(other.contains("echo Bootlane: booting 52:54:00:aa:00:09\n"), "{other}");
    assert!(
        other.contains("item e1 Boot from local disk") && !other.contains("kernel"),
        "{other}"
    );

    // A host without profile also gets the default.
    t.expect(
        Method::PUT,
        &format!("/api/v1/hosts/{hid}"),
        Some(json!({"profile_id": null})),
        StatusCode::OK,
        "",
    )
    .await;
    let (_, _, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:01", None).await;
    assert!(v.as_str().unwrap().contains("Boot from local disk"));
}

#[tokio::test]
async fn ipxe_template_edit() {
    let t = setup().await;
    let v = t
        .expect(Method::GET, "/api/v1/services/ipxe-script", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["source"], "builtin");
    assert_eq!(v["data"]["template"], v["data"]["builtin_template"]);
    t.expect(
        Method::PUT,
        "/api/v1/services/ipxe-script",
        Some(json!({"template": "#!ipxe\n{% for i in items %}"})),
        StatusCode::BAD_REQUEST,
        "does not compile",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/services/ipxe-script",
        Some(json!({"template": "echo hi"})),
        StatusCode::BAD_REQUEST,
        "#!ipxe",
    )
    .await;
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/ipxe-script",
            Some(json!({"template": "#!ipxe\necho Bootlane: booting {{ mac }}\nchain {{ base_url }}/custom/{{ profile }}\n"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["source"], "stored");
    let (_, _, v) = t.call(Method::GET, "/boot/ipxe?mac=52:54:00:aa:00:09", None).await;
    assert_eq!(
        v.as_str().unwrap(),
        "#!ipxe\necho Bootlane: booting 52:54:00:aa:00:09\nchain http://10.77.0.1:8080/custom/Default\n"
    );
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/ipxe-script",
            Some(json!({"template": null})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["source"], "builtin");
}

#[tokio::test]
async fn script_versions_diff_and_rollback() {
    let t = setup().await;
    let body = json!({"name": "Tools", "entries": [
        {"label": "Shell", "type": "custom", "script": "echo one\nshell"}
    ]});
    let v = t
        .expect(Method::POST, "/api/v1/profiles", Some(body), StatusCode::CREATED, "")
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let base = format!("/api/v1/profiles/{pid}");
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-versions"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let first = v["data"]["versions"][0].clone();
    assert_eq!(v["data"]["versions"].as_array().unwrap().len(), 1);
    assert!(first["content"].as_str().unwrap().contains("echo one\nshell"));
    assert_eq!(first["checksum"].as_str().unwrap().len(), 64);
    let v1 = first["id"].as_u64().unwrap();

    // A change of the script stores a version; a change that leaves it alone does not.
    t.expect(
        Method::PUT,
        &base,
        Some(json!({"entries": [{"label": "Shell", "type": "custom", "script": "echo two\nshell"}], "comment": "two"})),
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::PUT,
        &base,
        Some(json!({"description": "no script change"})),
        StatusCode::OK,
        "",
    )
    .await;
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-versions"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["versions"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["data"]["versions"][0]["comment"], "two");

    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-diff/{v1}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let diff = v["data"]["diff"].as_str().unwrap();
    assert_eq!(v["data"]["identical"], false);
    assert!(diff.contains("--- version") && diff.contains("+++ current"), "{diff}");
    assert!(
        diff.contains("\n-echo one\n") && diff.contains("\n+echo two\n"),
        "{diff}"
    );

    let v = t
        .expect(
            Method::POST,
            &format!("{base}/script-rollback/{v1}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["entries"][0]["script"], "echo one\nshell");
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-versions"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["versions"].as_array().unwrap().len(), 3);
    assert!(v["data"]["versions"][0]["comment"]
        .as_str()
        .unwrap()
        .contains("rollback"));
    // Newest first across pages: the last page of one holds the first version.
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-versions?size=1&page=3"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["versions"][0]["id"]),
        (&json!(3), &json!(v1))
    );
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-versions?q=ROLLBACK"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["total"], 1, "{v}");
    let v = t
        .expect(
            Method::GET,
            &format!("{base}/script-diff/{v1}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["identical"], &v["data"]["diff"]),
        (&json!(true), &json!(""))
    );

    t.expect(
        Method::GET,
        &format!("{base}/script-versions/{v1}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::GET,
        &format!("{base}/script-versions/9999"),
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/profiles/9999/script-versions",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/profiles/9999/script-rollback/{v1}"),
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
}

// ---------------------------------------------------------------------------------------
// DHCP administration
// ---------------------------------------------------------------------------------------

const DHCP_TOML: &str = r#"
[[dhcp.subnets]]
mode = "server"
interface = "br0"
cidr = "10.77.0.0/24"
range_start = "10.77.0.100"
range_end = "10.77.0.109"
router = "10.77.0.1"
server_address = "10.77.0.1"
[[dhcp.subnets.reservations]]
mac = "52:54:00:77:00:99"
ip = "10.77.0.50"

[[dhcp.subnets]]
mode = "proxy"
interface = "eth1"
cidr = "192.168.5.0/24"
server_address = "192.168.5.2"
"#;

/// A state with two subnets and a DHCP handler following the control (no sockets), as
/// `run()` does.
async fn dhcp_setup() -> (T, Arc<bootlane_dhcp::dhcp::handler::BootHandler>) {
    let config: Config = toml::from_str(DHCP_TOML).unwrap();
    config.dhcp.validate().unwrap();
    let t = setup_with(config).await;
    let control = t.state.dhcp.clone();
    let subnets = control
        .effective_subnets()
        .unwrap()
        .iter()
        .map(|c| bootlane_dhcp::dhcp::handler::Subnet::resolve(c, &[]).unwrap())
        .collect();
    let h = Arc::new(
        bootlane_dhcp::dhcp::handler::BootHandler::new_shared(
            subnets,
            control.arch_map(),
            8080,
            Box::new(|| "lab.test".to_string()),
            control.leases(),
        )
        .following(control.subscribe()),
    );
    control.set_running(Some(bootlane_dhcp::dhcp::control::RunningServers {
        v4: h.subnets().iter().map(|s| (s.key.clone(), s.server)).collect(),
        v6: Default::default(),
    }));
    (t, h)
}

fn mac(s: &str) -> bootlane_core::net::types::MacAddr {
    bootlane_core::net::types::normalise_mac(s).unwrap()
}

#[tokio::test]
async fn reservations_crud_conflicts_and_live() {
    let (t, h) = dhcp_setup().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/dhcp/reservations",
            Some(json!({"mac": "52-54-00-77-00-01", "ip": "10.77.0.60", "hostname": "Fixed1"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let r = &v["data"];
    assert_eq!(
        (&r["mac"], &r["ip"], &r["hostname"], &r["subnet"]),
        (
            &json!("52:54:00:77:00:01"),
            &json!("10.77.0.60"),
            &json!("fixed1"),
            &json!("10.77.0.0/24")
        )
    );
    let id = r["id"].as_u64().unwrap();
    // The running handler sees it at once.
    assert_eq!(
        h.subnets()[0].reserved_ip(mac("52:54:00:77:00:01")),
        Some("10.77.0.60".parse().unwrap())
    );

    for (body, status, needle) in [
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.99.0.5"}),
            StatusCode::BAD_REQUEST,
            "not a host address of a configured subnet",
        ),
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.77.0.255"}),
            StatusCode::BAD_REQUEST,
            "configured subnet",
        ),
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.77.0.60"}),
            StatusCode::CONFLICT,
            "already reserved for 52:54:00:77:00:01",
        ),
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.77.0.50"}),
            StatusCode::CONFLICT,
            "configuration file",
        ),
        (
            json!({"mac": "52:54:00:77:00:01", "ip": "10.77.0.61"}),
            StatusCode::CONFLICT,
            "already has a reservation",
        ),
        (
            json!({"mac": "52:54:00:77:00:99", "ip": "10.77.0.61"}),
            StatusCode::CONFLICT,
            "configuration file",
        ),
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.77.0.61", "subnet": "192.168.5.0/24"}),
            StatusCode::BAD_REQUEST,
            "lies in subnet 10.77.0.0/24",
        ),
        (
            json!({"mac": "nope", "ip": "10.77.0.61"}),
            StatusCode::BAD_REQUEST,
            "not a MAC",
        ),
        (json!({"mac": "52:54:00:77:00:02"}), StatusCode::BAD_REQUEST, "required"),
        (
            json!({"mac": "52:54:00:77:00:02", "ip": "10.77.0.61", "hostname": "a b"}),
            StatusCode::BAD_REQUEST,
            "DNS label",
        ),
    ] {
        t.expect(Method::POST, "/api/v1/dhcp/reservations", Some(body), status, needle)
            .await;
    }

    // PUT merges and moves the reservation live.
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/dhcp/reservations/{id}"),
            Some(json!({"ip": "10.77.0.62", "description": "moved"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["hostname"], &v["data"]["description"]),
        (&json!("fixed1"), &json!("moved"))
    );
    assert_eq!(
        h.subnets()[0].reserved_ip(mac("52:54:00:77:00:01")),
        Some("10.77.0.62".parse().unwrap())
    );
    let v = t
        .expect(Method::GET, "/api/v1/dhcp/reservations", None, StatusCode::OK, "")
        .await;
    let sources: Vec<&str> = v["data"]["reservations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, vec!["config", "api"]);
    let v = t
        .expect(
            Method::GET,
            "/api/v1/dhcp/reservations?subnet=192.168.5.0/24",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert!(v["data"]["reservations"].as_array().unwrap().is_empty());
    // The shared list contract: `q`, paging (file entries first), a bad subnet is a 400.
    let v = t
        .expect(
            Method::GET,
            "/api/v1/dhcp/reservations?q=MOVED",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["reservations"][0]["id"]),
        (&json!(1), &json!(id))
    );
    let v = t
        .expect(
            Method::GET,
            "/api/v1/dhcp/reservations?size=1&page=2",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["reservations"][0]["source"]),
        (&json!(2), &json!("api"))
    );
    t.expect(
        Method::GET,
        "/api/v1/dhcp/reservations?subnet=nope",
        None,
        StatusCode::BAD_REQUEST,
        "'subnet'",
    )
    .await;

    t.expect(
        Method::GET,
        "/api/v1/dhcp/reservations/999",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/dhcp/reservations/{id}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    assert_eq!(h.subnets()[0].reserved_ip(mac("52:54:00:77:00:01")), None);
    assert_eq!(
        h.subnets()[0].reserved_ip(mac("52:54:00:77:00:99")),
        Some("10.77.0.50".parse().unwrap()),
        "the file's reservation stays"
    );
    t.expect(
        Method::DELETE,
        &format!("/api/v1/dhcp/reservations/{id}"),
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;
}

#[tokio::test]
async fn leases_list_stats_delete_prune() {
    let (t, _h) = dhcp_setup().await;
    let now = bootlane_dhcp::dhcp::leases::now_secs();
    {
        let db = t.state.dhcp.leases();
        let mut db = db.lock().await;
        for (m, ip, exp) in [
            ("52:54:00:00:00:01", "10.77.0.100", now + 600),
            ("52:54:00:00:00:02", "10.77.0.101", now + 600),
            ("52:54:00:00:00:03", "10.77.0.102", now.saturating_sub(10)),
        ] {
            let lease = bootlane_dhcp::dhcp::leases::Lease {
                id: 0,
                mac: m.into(),
                ip: ip.parse().unwrap(),
                subnet: "10.77.0.0/24".into(),
                hostname: None,
                arch: None,
                expires_at: exp,
                declined: false,
            };
            db.bind(lease, mac(m)).await.unwrap();
        }
    }
    let v = t.expect(Method::GET, "/api/v1/leases", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["total"], 3);
    let v = t
        .expect(Method::GET, "/api/v1/leases?state=active", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["total"], 2);
    let v = t
        .expect(Method::GET, "/api/v1/leases?state=expired", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["leases"][0]["state"]),
        (&json!(1), &json!("expired"))
    );
    let v = t
        .expect(
            Method::GET,
            "/api/v1/leases?mac=52-54-00-00-00-02&subnet=10.77.0.0/24",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["leases"][0]["ip"]),
        (&json!(1), &json!("10.77.0.101"))
    );
    let v = t
        .expect(Method::GET, "/api/v1/leases?size=2&page=2", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["leases"].as_array().unwrap().len(), 1);
    // `q` searches MAC and IP; items stay in id order.
    let v = t
        .expect(
            Method::GET,
            "/api/v1/leases?q=10.77.0.10&size=2",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["leases"][1]["mac"]),
        (&json!(3), &json!("52:54:00:00:00:02"))
    );
    let v = t
        .expect(Method::GET, "/api/v1/leases?q=00:03", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["total"], &v["data"]["leases"][0]["ip"]),
        (&json!(1), &json!("10.77.0.102"))
    );
    t.expect(
        Method::GET,
        "/api/v1/leases?state=bogus",
        None,
        StatusCode::BAD_REQUEST,
        "active or expired",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/leases?subnet=x",
        None,
        StatusCode::BAD_REQUEST,
        "CIDR",
    )
    .await;

    let v = t
        .expect(Method::GET, "/api/v1/leases/stats", None, StatusCode::OK, "")
        .await;
    let st = &v["data"][0];
    assert_eq!(
        (&st["subnet"], &st["size"], &st["used"], &st["reserved"], &st["free"]),
        (&json!("10.77.0.0/24"), &json!(10), &json!(2), &json!(1), &json!(8))
    );
    assert_eq!(
        (&v["data"][1]["mode"], &v["data"][1]["size"]),
        (&json!("proxy"), &json!(0))
    );
    // The same numbers as per-subnet gauges, computed at scrape time.
    let v = t.expect(Method::GET, "/api/v1/metrics", None, StatusCode::OK, "").await;
    let text = v.as_str().unwrap();
    for (series, want) in [
        (r#"bootlane_dhcp_leases_active{subnet="10.77.0.0/24"}"#, 2.0),
        (r#"bootlane_dhcp_leases_free{subnet="10.77.0.0/24"}"#, 8.0),
    ] {
        assert_eq!(
            bootlane_core::metrics::test_support::value(text, series),
            want,
            "{series}:\n{text}"
        );
    }

    t.expect(
        Method::DELETE,
        "/api/v1/leases/52-54-00-00-00-01",
        None,
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::DELETE,
        "/api/v1/leases/52:54:00:00:00:01",
        None,
        StatusCode::NOT_FOUND,
        "no lease",
    )
    .await;
    t.expect(
        Method::DELETE,
        "/api/v1/leases/zz",
        None,
        StatusCode::BAD_REQUEST,
        "not a MAC",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/leases/batch-delete",
            Some(json!({"macs": ["52:54:00:00:00:02", "52:54:00:00:00:01", "junk"]})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["deleted"], &v["data"]["not_found"], &v["data"]["invalid"]),
        (&json!(1), &json!(["52:54:00:00:00:01"]), &json!(["junk"]))
    );
    t.expect(
        Method::POST,
        "/api/v1/leases/batch-delete",
        Some(json!({"macs": []})),
        StatusCode::BAD_REQUEST,
        "1-1000",
    )
    .await;
    let v = t
        .expect(Method::POST, "/api/v1/leases/prune", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["removed"], 1);
    let v = t.expect(Method::GET, "/api/v1/leases", None, StatusCode::OK, "").await;
    assert_eq!(v["data"]["total"], 0);
    // The stored table follows the in-memory index.
    assert_eq!(
        bootlane_dhcp::dhcp::leases::LeaseDb::load(&t.state.store)
            .await
            .unwrap()
            .all()
            .count(),
        0
    );
}

#[tokio::test]
async fn archmap_validation_and_live() {
    let (t, h) = dhcp_setup().await;
    let v = t
        .expect(Method::GET, "/api/v1/services/archmap", None, StatusCode::OK, "")
        .await;
    let first = &v["data"]["entries"][0];
    assert_eq!(
        (&first["arch_code"], &first["boot_file"], &first["arch_name"]),
        (&json!(0), &json!("undionly.kpxe"), &json!("x86 BIOS"))
    );
    for (entries, needle) in [
        (json!([{"arch_code": 70000, "boot_file": "a.efi"}]), "0-65535"),
        (json!([{"arch_code": -1, "boot_file": "a.efi"}]), "expected shape"),
        (
            json!([{"arch_code": 7, "boot_file": "../etc/passwd"}]),
            "inside the boot directory",
        ),
        (
            json!([{"arch_code": 7, "boot_file": "/abs.efi"}]),
            "inside the boot directory",
        ),
        (
            json!([{"arch_code": 7, "boot_file": "ftp://x/a.efi"}]),
            "http:// or https://",
        ),
        (json!([{"arch_code": 7, "boot_file": "a b.efi"}]), "spaces"),
        (json!([{"arch_code": 7, "boot_file": ""}]), "1-255"),
        (
            json!([{"arch_code": 7, "boot_file": "a.efi"}, {"arch_code": 7, "boot_file": "b.efi"}]),
            "twice",
        ),
    ] {
        t.expect(
            Method::PUT,
            "/api/v1/services/archmap",
            Some(json!({ "entries": entries })),
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/archmap",
            Some(json!({"entries": [
                {"arch_code": 0, "boot_file": "undionly.kpxe"},
                {"arch_code": 7, "boot_file": "snponly.efi"},
                {"arch_code": 16, "boot_file": "http://{server}:{http_port}/boot/ipxe.efi"}
            ]})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["entries"].as_array().unwrap().len(), 3);
    let live = h.arch_map();
    assert_eq!((live.len(), live[&7].as_str()), (3, "snponly.efi"));
    let v = t
        .expect(
            Method::GET,
            "/api/v1/services/archmap/defaults",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert!(v["data"]["entries"].as_array().unwrap().len() > 3);
}

#[tokio::test]
async fn dhcp_and_tftp_settings() {
    let (t, h) = dhcp_setup().await;
    let v = t
        .expect(Method::GET, "/api/v1/services/dhcp", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["running"], true);
    assert_eq!(v["data"]["subnets"][0]["server"], "10.77.0.1");
    assert_eq!(v["data"]["subnets"][0]["lease_time_secs"], 3600);
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/dhcp",
            Some(
                json!({"subnets": [{"cidr": "10.77.0.0/24", "lease_time_secs": 120, "range_end": "10.77.0.120",
                "dns": ["10.77.0.53"], "mode": "server", "interface": "br0"}]}),
            ),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["subnets"][0]["lease_time_secs"], 120);
    let live = &h.subnets()[0];
    assert_eq!(
        (
            live.cfg.lease_time_secs,
            live.cfg.range_end,
            live.dns.clone(),
            live.server
        ),
        (
            120,
            Some("10.77.0.120".parse().unwrap()),
            vec!["10.77.0.53".parse().unwrap()],
            "10.77.0.1".parse().unwrap()
        )
    );
    for (body, needle) in [
        (
            json!({"subnets": [{"cidr": "10.77.0.0/24", "interface": "bad/name"}]}),
            "'interface'",
        ),
        (
            json!({"subnets": [{"cidr": "10.9.0.0/24", "lease_time_secs": 600}]}),
            "not in the configuration file",
        ),
        (
            json!({"subnets": [{"cidr": "10.77.0.0/24", "lease_time_secs": 5}]}),
            "at least 60",
        ),
        (
            json!({"subnets": [{"cidr": "10.77.0.0/24", "range_end": "10.78.0.5"}]}),
            "inside",
        ),
        (
            json!({"subnets": [{"cidr": "10.77.0.0/24", "bogus": 1}]}),
            "expected shape",
        ),
    ] {
        t.expect(
            Method::PUT,
            "/api/v1/services/dhcp",
            Some(body),
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    assert_eq!(
        h.subnets()[0].cfg.lease_time_secs,
        120,
        "a refused change leaves the live settings alone"
    );
    // Socket changes need neither the file nor a process restart: they are stored, and
    // the supervisor restarts DHCP when it runs (here it does not).
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/dhcp",
            Some(json!({"subnets": [{"cidr": "10.77.0.0/24", "interface": "eth9", "mode": "server"}]})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["subnets"][0]["interface"], "eth9", "{v}");
    assert!(v["data"]["applied"].as_str().unwrap().starts_with("stored"), "{v}");

    let v = t
        .expect(Method::GET, "/api/v1/services/tftp", None, StatusCode::OK, "")
        .await;
    assert_eq!((&v["data"]["enabled"], &v["data"]["port"]), (&json!(true), &json!(69)));
    let same = v["data"].clone();
    t.expect(Method::PUT, "/api/v1/services/tftp", Some(same), StatusCode::OK, "")
        .await;
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/tftp",
            Some(json!({"port": 6969, "max_transfers": 9, "retries": 9})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["port"], &v["data"]["max_transfers"]),
        (&json!(6969), &json!(9))
    );
    assert!(v["data"]["applied"].as_str().unwrap().starts_with("stored"), "{v}");
    t.expect(
        Method::PUT,
        "/api/v1/services/tftp",
        Some(json!({"port": 0})),
        StatusCode::BAD_REQUEST,
        "'port'",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/services/tftp",
        Some(json!({"timeout_ms": 1})),
        StatusCode::BAD_REQUEST,
        "10-60000",
    )
    .await;
    // timeout and retries are published to the running server (it follows them).
    let mut settings = t.state.tftp.subscribe();
    t.state.tftp.set_running(true);
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/tftp",
            Some(json!({"timeout_ms": 250, "retries": 2})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["timeout_ms"], &v["data"]["retries"], &v["data"]["running"]),
        (&json!(250), &json!(2), &json!(true))
    );
    assert!(settings.has_changed().unwrap());
    let l = settings.borrow_and_update().clone();
    assert_eq!((l.timeout_ms, l.retries), (250, 2));
}

#[tokio::test]
async fn openapi_lists_the_new_paths() {
    let t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/openapi.json", None).await;
    assert_eq!(s, StatusCode::OK);
    let paths = v["paths"]
        .as_object()
        .or_else(|| v["data"]["paths"].as_object())
        .unwrap();
    for p in [
        "/api/v1/hosts",
        "/api/v1/hosts/{id}/boot-config",
        "/api/v1/profiles/{profileId}/script-diff/{verId}",
        "/api/v1/services/ipxe-script",
        "/api/v1/leases/stats",
        "/api/v1/dhcp/reservations/{id}",
        "/api/v1/services/archmap/defaults",
        "/api/v1/services/tftp",
    ] {
        assert!(paths.contains_key(p), "{p} missing from the OpenAPI document");
    }
}

/// A DISCOVER from `mac` on br0, optionally as a BIOS PXE client (arch 0).
fn discover(m: [u8; 6], pxe: bool) -> bootlane_dhcp::dhcp::packet::DhcpRequest {
    use dhcproto::v4::{Architecture, DhcpOption, Message, MessageType};
    let unspecified = std::net::Ipv4Addr::UNSPECIFIED;
    let mut msg = Message::new(unspecified, unspecified, unspecified, unspecified, &m);
    msg.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    if pxe {
        msg.opts_mut().insert(DhcpOption::ClassIdentifier(
            b"PXEClient:Arch:00000:UNDI:002001".to_vec(),
        ));
        msg.opts_mut()
            .insert(DhcpOption::ClientSystemArchitecture(Architecture(0)));
    }
    let bytes = bootlane_dhcp::dhcp::packet::encode(&msg).unwrap();
    bootlane_dhcp::dhcp::packet::DhcpRequest::parse(&bytes).unwrap()
}

#[tokio::test]
async fn api_changes_reach_the_dhcp_handler() {
    use bootlane_dhcp::dhcp::handler::{DhcpHandler, RecvContext};
    let (t, h) = dhcp_setup().await;
    let ctx = || RecvContext {
        interface: "br0".into(),
        port: 67,
        src: std::net::SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 68),
    };
    let m = [0x52, 0x54, 0x00, 0x77, 0x00, 0x07];
    let r = h.handle(discover(m, true), ctx()).await.unwrap();
    assert!((100..=109).contains(&r.msg.yiaddr().octets()[3]), "pool address first");
    assert_eq!(r.msg.fname_str().and_then(Result::ok), Some("undionly.kpxe"));

    t.expect(
        Method::POST,
        "/api/v1/dhcp/reservations",
        Some(json!({"mac": "52:54:00:77:00:07", "ip": "10.77.0.70"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/services/archmap",
        Some(json!({"entries": [{"arch_code": 0, "boot_file": "bios/ipxe.pxe"}]})),
        StatusCode::OK,
        "",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/services/dhcp",
        Some(json!({"subnets": [{"cidr": "10.77.0.0/24", "lease_time_secs": 300}]})),
        StatusCode::OK,
        "",
    )
    .await;
    let r = h.handle(discover(m, true), ctx()).await.unwrap();
    assert_eq!(
        r.msg.yiaddr(),
        std::net::Ipv4Addr::new(10, 77, 0, 70),
        "the reservation wins at once"
    );
    assert_eq!(r.msg.fname_str().and_then(Result::ok), Some("bios/ipxe.pxe"));
    let lease_time = r.msg.opts().iter().find_map(|(_, o)| match o {
        dhcproto::v4::DhcpOption::AddressLeaseTime(t) => Some(*t),
        _ => None,
    });
    assert_eq!(lease_time, Some(300));
}

/// `GET /boot/<file>` streams the file's bytes through [`bootlane_boot::boot::file_body`]: whole,
/// a Range across its 256 KiB read chunks, a suffix range, HEAD (headers only), and 416
/// past the end; each with the length the headers announce.
#[tokio::test]
async fn boot_files_whole_ranged_head_and_unsatisfiable() {
    use axum::{body::Body, http::header, http::Request};
    let d = tempfile::tempdir().unwrap();
    let c = Config {
        data_dir: d.path().to_path_buf(),
        ..Default::default()
    };
    std::fs::create_dir_all(c.boot_root()).unwrap();
    let data: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(c.boot_root().join("initrd.img"), &data).unwrap();
    let t = test_support::app(c).await;
    let get = |method: Method, range: Option<&'static str>| {
        let mut r = Request::builder().method(method).uri("/boot/initrd.img");
        if let Some(v) = range {
            r = r.header(header::RANGE, v);
        }
        r.body(Body::empty()).unwrap()
    };
    let read = |resp: axum::response::Response| async move {
        let (s, h) = (resp.status(), resp.headers().clone());
        let b = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        let len: usize = h[header::CONTENT_LENGTH].to_str().unwrap().parse().unwrap();
        (s, h, b.to_vec(), len)
    };
    let (s, _, b, len) = read(t.send(get(Method::GET, None)).await).await;
    assert_eq!((s, len), (StatusCode::OK, data.len()));
    assert!(b == data, "whole file differs");
    for (range, lo, hi) in [
        ("bytes=262000-524300", 262_000, 524_301),
        ("bytes=-1000", 699_000, 700_000),
        ("bytes=5-5", 5, 6),
    ] {
        let (s, h, b, len) = read(t.send(get(Method::GET, Some(range))).await).await;
        assert_eq!(s, StatusCode::PARTIAL_CONTENT, "{range}");
        assert_eq!(len, hi - lo, "{range}");
        assert_eq!(
            h[header::CONTENT_RANGE],
            format!("bytes {lo}-{}/700000", hi - 1).as_str()
        );
        assert!(b == data[lo..hi], "{range}: bytes differ");
    }
    let (s, _, b, len) = read(t.send(get(Method::HEAD, Some("bytes=10-19"))).await).await;
    assert_eq!((s, len, b.len()), (StatusCode::PARTIAL_CONTENT, 10, 0));
    let resp = t.send(get(Method::GET, Some("bytes=800000-"))).await;
    assert_eq!(resp.status(), StatusCode::RANGE_NOT_SATISFIABLE);
}

/// A page uploaded to the boot root (or extracted from an image) was served as
/// `text/html` on the UI's origin, so its script ran with the admin's session. Boot files
/// now never render as documents with script: nosniff everywhere, HTML, SVG and XML as
/// sandboxed downloads; the UI has a strict CSP of its own.
#[tokio::test]
async fn regression_served_files_cannot_run_script_on_the_ui_origin() {
    use axum::http::header;
    let d = tempfile::tempdir().unwrap();
    let c = Config {
        data_dir: d.path().to_path_buf(),
        ..Default::default()
    };
    std::fs::create_dir_all(c.boot_root()).unwrap();
    let page = "<html><script>fetch('/api/v1/users')</script></html>";
    for f in ["x.html", "x.htm", "x.svg", "x.xml", "x.xhtml", "x.bin", "x.efi"] {
        std::fs::write(c.boot_root().join(f), page).unwrap();
    }
    let t = test_support::app(c).await;
    for f in ["x.html", "x.htm", "x.svg", "x.xml", "x.xhtml"] {
        let (s, h, _) = t.call(Method::GET, &format!("/boot/{f}"), None).await;
        assert_eq!(s, StatusCode::OK, "{f}");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{f}");
        assert_eq!(h[header::CONTENT_DISPOSITION], "attachment", "{f}");
        assert_eq!(h[header::CONTENT_SECURITY_POLICY], "sandbox", "{f}");
    }
    for f in ["x.bin", "x.efi", "ipxe?mac=52:54:00:00:00:01", "missing.html"] {
        let (_, h, _) = t.call(Method::GET, &format!("/boot/{f}"), None).await;
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{f}");
        assert!(h.get(header::CONTENT_DISPOSITION).is_none(), "{f}");
    }
    // The UI itself: a strict policy of its own.
    let (_, h, _) = t.call(Method::GET, "/", None).await;
    let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("script-src 'self' 'unsafe"), "{csp}");
    assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}
