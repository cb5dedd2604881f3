//! Backup and restore end to end: the real `bootlane` binary in a server namespace with
//! a DHCP subnet on a veth to a client namespace.
//!
//! 1. State is made through real clients: a host, a profile and a DNS record through the
//!    API, a lease through `udhcpc`, and a user with `bootlane user add` while the server
//!    runs (the CLI goes through the API).
//! 2. `bootlane backup` while the server runs (it holds the database, so the command logs
//!    in and uses `GET /api/v1/system/backup`) writes a file with a manifest.
//! 3. The host and the record are deleted through the API; the server is stopped.
//! 4. `bootlane restore` without `--force` refuses (a database is there); a damaged copy
//!    of the file is refused; `--force` moves the database aside and restores.
//! 5. The server starts on the restored directory: the host, the profile, the record (dig
//!    answers it), the lease and both users (each logs in) are back.

use bootlane_tests::{bootlane_bin, dig, udhcpc, veth, NetNs, Server, ADMIN_PASSWORD};
use serde_json::{json, Value};

fn data(s: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let (code, v) = s.api(method, path, body);
    assert!((200..300).contains(&code), "{method} {path}: {code} {v}");
    v["data"].clone()
}

fn run(ns: &NetNs, args: &str, stdin: &str) -> (bool, String) {
    let out = ns.sh_out(&format!(
        "printf '%s\\n' '{stdin}' | {} {args} 2>&1",
        bootlane_bin().display()
    ));
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn backup_while_running_then_restore_brings_everything_back() {
    let (srv, cli) = (NetNs::new("bks"), NetNs::new("bkc"));
    let (srv_if, cli_if) = veth(&srv, &["10.95.0.1/24"], &cli, &[]);
    let config = format!(
        "[dns]\nport = 53\nlocal_domain = \"lab.test\"\n[dns.xdp]\nmode = \"off\"\n\
         [[dhcp.subnets]]\nmode = \"server\"\ninterface = \"{srv_if}\"\ncidr = \"10.95.0.0/24\"\n\
         range_start = \"10.95.0.100\"\nrange_end = \"10.95.0.150\"\nlease_time_secs = 600\n"
    );
    let mut s = Server::start(&srv, &config);
    let cfg = s.config.display().to_string();

    // 1. State from real clients.
    let host = data(
        &s,
        "POST",
        "/hosts",
        Some(&json!({"name": "keep1", "mac": "52:54:00:95:00:01", "ip": "10.95.0.20"})),
    );
    let profile = data(
        &s,
        "POST",
        "/profiles",
        Some(&json!({"name": "backup-profile", "entries": [{"label": "Local disk", "type": "local"}]})),
    );
    let rec = s.add_record(json!({"name": "saved", "type": "A", "value": "10.95.0.7"}));
    let lease = udhcpc(&cli, &cli_if, &s.data_dir).expect("a lease");
    let leased = lease["ip"].clone();
    assert!(dig(&srv, "@127.0.0.1 saved.lab.test A +short").contains("10.95.0.7"));

    // A user added with the CLI while the server runs goes through the API (logged in as
    // admin: the new password is the first line, admin's the second).
    let (ok, out) = run(
        &srv,
        &format!("user add ops --config {cfg} --password-stdin"),
        &format!("ops-pw-Yb6sF3nZ' '{ADMIN_PASSWORD}"),
    );
    assert!(ok && out.contains("through http://127.0.0.1:8080"), "{out}");
    let (code, _) = s.api(
        "POST",
        "/auth/login",
        Some(&json!({"username": "ops", "password": "ops-pw-Yb6sF3nZ"})),
    );
    assert_eq!(code, 200, "the user added through the API logs in");
    s.api(
        "POST",
        "/auth/login",
        Some(&json!({"username": "admin", "password": ADMIN_PASSWORD})),
    );

    // `config show` while the server runs: the file, then the settings in force from its API.
    let (ok, out) = run(
        &srv,
        &format!("config show --config {cfg} --password-stdin"),
        ADMIN_PASSWORD,
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("not read from the store: the running server holds it"),
        "{out}"
    );
    assert!(
        out.contains("# The running server's settings in force") && out.contains("# settings.dns = {"),
        "{out}"
    );
    assert!(
        out.contains("# access.mode = \"off\"") && !out.contains(ADMIN_PASSWORD),
        "{out}"
    );

    // 2. Backup while the server runs: through the API, with an API token instead of a
    // password (a viewer's token is refused: backups are admin-only).
    let token = |name: &str, role: &str| {
        data(
            &s,
            "POST",
            "/tokens",
            Some(&json!({"name": name, "role": role, "expires_in_days": 1})),
        )["secret"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (admin_token, viewer_token) = (token("backup job", "admin"), token("reader", "viewer"));
    let file = s.data_dir.join("backup.jsonl");
    let (ok, out) = run(
        &srv,
        &format!(
            "backup --config {cfg} --output {} --token {viewer_token}",
            file.display()
        ),
        "",
    );
    assert!(!ok && out.contains("needs the admin role"), "{out}");
    let (ok, out) = run(&srv, &format!("user list --config {cfg} --token {admin_token}"), "");
    assert!(ok && out.contains("ops\tviewer"), "{out}");
    // The token from the environment, standard input empty: no password is asked for.
    let out = srv.sh_out(&format!(
        "BOOTLANE_TOKEN={admin_token} {} backup --config {cfg} --output {} 2>&1 </dev/null",
        bootlane_bin().display(),
        file.display()
    ));
    let (ok, out) = (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned());
    assert!(ok, "backup failed: {out}");
    let used = data(&s, "GET", "/tokens", None);
    assert!(
        used["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "backup job" && t["last_used_at"].is_string()),
        "{used}"
    );
    assert!(out.contains("records in"), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    let manifest: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(manifest["kind"], "bootlane-backup", "{manifest}");
    assert!(manifest["trees"]["hosts"].as_u64() >= Some(1), "{manifest}");

    // 3. Changes after the backup, then stop.
    data(&s, "DELETE", &format!("/hosts/{}", host["id"]), None);
    data(&s, "DELETE", &format!("/dns/records/{}", rec["id"]), None);
    s.kill9();
    // A second user, added with the server stopped (after the backup: the restore drops it).
    let (ok, out) = run(
        &srv,
        &format!("user add later --config {cfg} --password-stdin"),
        "later-user-Gd2hV8cR",
    );
    assert!(ok, "{out}");

    // 4. Refusals, then the restore.
    let (ok, out) = run(&srv, &format!("restore {} --config {cfg}", file.display()), "");
    assert!(!ok && out.contains("already holds a database"), "{out}");
    let damaged = s.data_dir.join("damaged.jsonl");
    std::fs::write(&damaged, text.replacen("\"t\":\"hosts\"", "\"t\":\"hostz\"", 1)).unwrap();
    let (ok, out) = run(
        &srv,
        &format!("restore {} --config {cfg} --force", damaged.display()),
        "",
    );
    assert!(!ok && out.contains("damaged or incomplete"), "{out}");
    let (ok, out) = run(&srv, &format!("restore {} --config {cfg} --force", file.display()), "");
    assert!(ok, "restore failed: {out}");
    assert!(out.contains("previous store is in"), "{out}");

    // 5. Everything from the backup is back.
    s.spawn();
    let hosts = data(&s, "GET", "/hosts", None);
    assert!(hosts.to_string().contains("keep1"), "{hosts}");
    let profiles = data(&s, "GET", "/profiles", None);
    assert!(
        profiles.to_string().contains(profile["name"].as_str().unwrap()),
        "{profiles}"
    );
    assert!(
        dig(&srv, "@127.0.0.1 saved.lab.test A +short").contains("10.95.0.7"),
        "the record answers again"
    );
    let leases = data(&s, "GET", "/leases", None);
    assert!(leases.to_string().contains(&leased), "lease {leased} in {leases}");
    // The event history (a journal beside the database) came back too.
    let events = data(&s, "GET", "/events?kind=host.created", None);
    assert!(events.to_string().contains("keep1"), "{events}");
    let (code, _) = s.api(
        "POST",
        "/auth/login",
        Some(&json!({"username": "later", "password": "later-user-Gd2hV8cR"})),
    );
    assert_eq!(code, 401, "the user added after the backup is gone");
    let (code, _) = s.api(
        "POST",
        "/auth/login",
        Some(&json!({"username": "ops", "password": "ops-pw-Yb6sF3nZ"})),
    );
    assert_eq!(code, 200, "the user added before the backup is back");
    s.api(
        "POST",
        "/auth/login",
        Some(&json!({"username": "admin", "password": ADMIN_PASSWORD})),
    );
    // `spawn` logged in as admin again: the admin's password came back with the store.
    let (code, v) = s.api("GET", "/auth/session", None);
    assert_eq!((code, v["data"]["authenticated"].as_bool()), (200, Some(true)), "{v}");
}
