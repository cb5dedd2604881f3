//! Router tests of the NFS routes with the shared client of [`super::test_support`].
//! `exportfs` is a shell script that records its arguments (and prints a kernel table
//! for `-v`, or fails, as a test needs); the exports file lives in a temporary
//! directory, so nothing on the machine changes.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::test_support::{setup_with, T};

/// A client whose `[nfs]` points into `dir`, with `exportfs` running `body`, logged in.
/// The boot root gets `images/ubuntu/casper/` and `images/plain/`.
async fn client(dir: &Path, body: &str) -> T {
    let bin = dir.join("exportfs");
    std::fs::write(
        &bin,
        format!("#!/bin/sh\necho \"$@\" >> {}/calls\n{body}\n", dir.display()),
    )
    .unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.join("exports.d/bootlane.exports");
    let mut t = setup_with(|c| {
        c.nfs.exports_file = file;
        c.nfs.exportfs = bin;
    })
    .await;
    t.login().await;
    let root = t.state.settings.boot_root();
    std::fs::create_dir_all(root.join("images/ubuntu/casper")).unwrap();
    std::fs::create_dir_all(root.join("images/plain")).unwrap();
    t
}

const KERNEL_TABLE: &str = r#"case "$1" in -v) printf '/srv/boot/images/ubuntu\n\t\t10.0.0.0/24(sync,wdelay,hide,no_subtree_check,sec=sys,ro,secure,root_squash,no_all_squash)\n';; esac"#;

fn calls(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("calls")).unwrap_or_default()
}

fn exports_file(dir: &Path) -> PathBuf {
    dir.join("exports.d/bootlane.exports")
}

async fn event_kinds(t: &T) -> Vec<String> {
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?kind=nfs.", None).await;
    v["data"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn put_writes_the_exports_file_runs_exportfs_and_disabling_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = client(dir.path(), KERNEL_TABLE).await;
    let v = t
        .expect(Method::GET, "/api/v1/services/nfs", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["enabled"], json!(false));
    assert_eq!(v["data"]["status"]["exportfs_available"], json!(true));
    assert_eq!(v["data"]["status"]["file_in_sync"], json!(true), "{v}");
    assert_eq!(v["data"]["status"]["kernel_exports"][0]["client"], "10.0.0.0/24", "{v}");

    let root = t.state.settings.boot_root().canonicalize().unwrap();
    let body = json!({"enabled": true, "exports": [{
        "path": format!("{}/images/ubuntu/", root.display()),
        "clients": ["10.0.0.0/24", "10.1.0.7"],
        "options": ["no_root_squash"],
        "comment": "ubuntu live"
    }]});
    let v = t
        .expect(Method::PUT, "/api/v1/services/nfs", Some(body), StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["applied"], json!(true), "{v}");
    assert_eq!(v["data"]["exports"][0]["path"], "images/ubuntu");
    assert_eq!(
        v["data"]["exports"][0]["options"],
        json!(["ro", "no_root_squash", "no_subtree_check"])
    );
    let text = std::fs::read_to_string(exports_file(dir.path())).unwrap();
    let line = format!(
        "{}/images/ubuntu 10.0.0.0/24(ro,no_root_squash,no_subtree_check) 10.1.0.7(ro,no_root_squash,no_subtree_check)",
        root.display()
    );
    assert!(text.contains("# ubuntu live\n") && text.contains(&line), "{text}");
    assert!(calls(dir.path()).lines().any(|l| l == "-ra"), "{}", calls(dir.path()));

    // The GET answer can be PUT back unchanged; the file is in sync.
    let got = t
        .expect(Method::GET, "/api/v1/services/nfs", None, StatusCode::OK, "")
        .await;
    assert_eq!(got["data"]["status"]["file_in_sync"], json!(true), "{got}");
    t.expect(
        Method::PUT,
        "/api/v1/services/nfs",
        Some(got["data"].clone()),
        StatusCode::OK,
        "",
    )
    .await;
    assert_eq!(std::fs::read_to_string(exports_file(dir.path())).unwrap(), text);

    // Disabling removes the file and reloads; the exports stay stored.
    let before = calls(dir.path()).lines().filter(|l| *l == "-ra").count();
    let v = t
        .expect(
            Method::PUT,
            "/api/v1/services/nfs",
            Some(json!({"enabled": false})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(
        (&v["data"]["applied"], &v["data"]["exports"][0]["path"]),
        (&json!(true), &json!("images/ubuntu"))
    );
    assert!(!exports_file(dir.path()).exists());
    assert_eq!(calls(dir.path()).lines().filter(|l| *l == "-ra").count(), before + 1);
    let kinds = event_kinds(&t).await;
    assert_eq!(kinds.iter().filter(|k| *k == "nfs.updated").count(), 3, "{kinds:?}");

    // Sessions are required.
    let mut anon = t;
    anon.cookie = None;
    anon.expect(Method::GET, "/api/v1/services/nfs", None, StatusCode::UNAUTHORIZED, "")
        .await;
}

#[tokio::test]
async fn bad_settings_are_400_naming_the_key_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let t = client(dir.path(), "").await;
    let put = |export: Value| json!({"enabled": true, "exports": [export]});
    let ex = |path: &str| json!({"path": path, "clients": ["10.0.0.0/24"]});
    for (body, needle) in [
        (put(ex("../..")), "exports[0].path"),
        (put(ex("/etc")), "exports[0].path"),
        (put(ex("images/%2e%2e/..")), "exports[0].path"),
        (put(ex("missing")), "exports[0].path"),
        (
            put(json!({"path": "images/ubuntu", "clients": ["*"]})),
            "exports[0].clients[0]",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": ["10.0.0.1/24"]})),
            "10.0.0.0/24",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": []})),
            "exports[0].clients",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": ["10.0.0.0/24"], "options": ["rw"]})),
            "allow_rw",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": ["10.0.0.0/24"], "options": ["ro,rw"]})),
            "not accepted",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": ["10.0.0.0/24"], "options": ["sync", "async"]})),
            "contradict",
        ),
        (
            put(json!({"path": "images/ubuntu", "clients": ["10.0.0.0/24"], "comment": "a\nb"})),
            "comment",
        ),
        (
            json!({"enabled": true, "exports": [ex("images/ubuntu"), ex("images/ubuntu/")]}),
            "exports[1].path",
        ),
        (json!({"enabled": "yes"}), "enabled"),
        (json!({"nope": 1}), "nope"),
    ] {
        t.expect(
            Method::PUT,
            "/api/v1/services/nfs",
            Some(body.clone()),
            StatusCode::BAD_REQUEST,
            needle,
        )
        .await;
    }
    assert!(!exports_file(dir.path()).exists());
    assert_eq!(calls(dir.path()), "", "exportfs is not run for refused settings");
    assert!(event_kinds(&t).await.is_empty());
}

#[tokio::test]
async fn an_exportfs_refusal_is_502_with_its_stderr_and_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    // Refuses anything once a "fail" marker exists.
    let t = client(
        dir.path(),
        &format!(
            "if [ -e {}/fail ]; then echo 'exportfs: Failed to stat /x: No such file or directory' >&2; exit 1; fi",
            dir.path().display()
        ),
    )
    .await;
    let body = json!({"enabled": true, "exports": [{"path": "images/ubuntu", "clients": ["10.0.0.0/24"]}]});
    t.expect(Method::PUT, "/api/v1/services/nfs", Some(body), StatusCode::OK, "")
        .await;
    let good = std::fs::read_to_string(exports_file(dir.path())).unwrap();
    std::fs::write(dir.path().join("fail"), "").unwrap();
    let body = json!({"exports": [{"path": "images/plain", "clients": ["10.0.0.0/24"]}]});
    t.expect(
        Method::PUT,
        "/api/v1/services/nfs",
        Some(body),
        StatusCode::BAD_GATEWAY,
        "Failed to stat /x",
    )
    .await;
    assert_eq!(std::fs::read_to_string(exports_file(dir.path())).unwrap(), good);
    let v = t
        .expect(Method::GET, "/api/v1/services/nfs", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["exports"][0]["path"], "images/ubuntu", "nothing stored: {v}");
    assert!(event_kinds(&t).await.contains(&"nfs.apply.failed".to_owned()));
}

#[tokio::test]
async fn without_exportfs_settings_are_stored_and_applied_is_false() {
    let dir = tempfile::tempdir().unwrap();
    let t = client(dir.path(), "").await;
    std::fs::remove_file(dir.path().join("exportfs")).unwrap();
    let body = json!({"enabled": true, "exports": [{"path": "images/ubuntu", "clients": ["10.0.0.0/24"]}]});
    let v = t
        .expect(Method::PUT, "/api/v1/services/nfs", Some(body), StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["applied"], json!(false));
    assert!(
        v["data"]["reason"].as_str().unwrap().contains("nfs-kernel-server"),
        "{v}"
    );
    assert!(!exports_file(dir.path()).exists());
    let v = t
        .expect(Method::GET, "/api/v1/services/nfs", None, StatusCode::OK, "")
        .await;
    assert_eq!(
        (&v["data"]["enabled"], &v["data"]["status"]["exportfs_available"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(v["data"]["status"]["file_in_sync"], json!(false));
}

#[tokio::test]
async fn validate_and_browse_stay_inside_the_boot_root() {
    let dir = tempfile::tempdir().unwrap();
    let t = client(dir.path(), "").await;
    let root = t.state.settings.boot_root();
    std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
    std::os::unix::fs::symlink("images/ubuntu", root.join("ubuntu-link")).unwrap();
    std::fs::write(root.join("images/a.iso"), b"x").unwrap();

    let check = |path: &str| {
        let path = path.to_owned();
        let t = &t;
        async move {
            t.expect(
                Method::POST,
                "/api/v1/services/nfs/validate-path",
                Some(json!({ "path": path })),
                StatusCode::OK,
                "",
            )
            .await["data"]
                .clone()
        }
    };
    let v = check("images/ubuntu").await;
    assert_eq!(
        (&v["ok"], &v["image_tree"], &v["relative"]),
        (&json!(true), &json!("ubuntu-casper"), &json!("images/ubuntu")),
        "{v}"
    );
    let canon = root.canonicalize().unwrap();
    assert_eq!(v["absolute"], json!(canon.join("images/ubuntu").display().to_string()));
    let v = check("images/plain").await;
    assert_eq!((&v["ok"], &v["image_tree"]), (&json!(true), &Value::Null));
    assert!(!v["warnings"].as_array().unwrap().is_empty());
    for (p, needle) in [
        ("../", "'..'"),
        ("/etc", "not under the boot root"),
        ("etc-link", "symlink"),
        ("images/a.iso", "not a directory"),
        ("images/%2e%2e", "percent"),
        ("nope", "no such"),
    ] {
        let v = check(p).await;
        assert_eq!(v["ok"], json!(false), "{p}: {v}");
        assert!(v["problems"][0].as_str().unwrap().contains(needle), "{p}: {v}");
    }
    t.expect(
        Method::POST,
        "/api/v1/services/nfs/validate-path",
        Some(json!({})),
        StatusCode::BAD_REQUEST,
        "path",
    )
    .await;

    let v = t
        .expect(
            Method::GET,
            "/api/v1/services/nfs/browse-path",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let names: Vec<&str> = v["data"]["directories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"images") && names.contains(&"ubuntu-link"), "{v}");
    assert!(!names.contains(&"etc-link"), "symlinks out are left out: {v}");
    assert_eq!(v["data"]["parent"], Value::Null);
    let v = t
        .expect(
            Method::GET,
            "/api/v1/services/nfs/browse-path?path=images",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["parent"], json!(""));
    let dirs = v["data"]["directories"].as_array().unwrap();
    assert_eq!(dirs.len(), 2, "the .iso is not listed: {v}");
    assert_eq!(
        (&dirs[1]["path"], &dirs[1]["image_tree"]),
        (&json!("images/ubuntu"), &json!("ubuntu-casper"))
    );
    for (q, status, needle) in [
        ("..", StatusCode::BAD_REQUEST, "'..'"),
        ("%2Fetc", StatusCode::BAD_REQUEST, "boot root"),
        ("etc-link", StatusCode::BAD_REQUEST, "symlink"),
        ("images/a.iso", StatusCode::BAD_REQUEST, "not a directory"),
        ("nope", StatusCode::NOT_FOUND, "no such"),
    ] {
        t.expect(
            Method::GET,
            &format!("/api/v1/services/nfs/browse-path?path={q}"),
            None,
            status,
            needle,
        )
        .await;
    }
}
