//! Verified updates end to end: the real `bootlane` binary in a server namespace asks an
//! update source in a second namespace, across a veth link: `python3 -m http.server`
//! serving a manifest and artifacts whose update statements are signed by the real
//! `minisign` CLI with a freshly generated key, with the very commands of the book's
//! "Updates" chapter (another key, for the refused case, comes from the `minisign`
//! crate).
//!
//! The manifest lists four versions: `99.0.0` (good), `98.0.0` whose artifact was
//! tampered with after signing (wrong SHA-256), `97.0.0` signed with another key and
//! `96.0.0`, the good `99.0.0` file and signature relabelled (the signed statement names
//! 99.0.0). The test checks, in order: `POST /version/check` answers that 99.0.0 is newer, with its
//! notes and artifact; downloading it succeeds with progress events, and the file and its
//! `manifest.json` are stored under `<data_dir>/updates/99.0.0/`; the tampered and the
//! badly signed downloads are refused with a failure event naming why and nothing kept;
//! `bootlane update install 99.0.0 --target <copy>` re-verifies and replaces the copy,
//! which then runs as the new version; with the source stopped, a check is a 502 naming
//! its URL. Namespaces and processes are removed by `Drop` whatever happens.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use bootlane_tests::{spawn_in, veth, NetNs, Server};
use serde_json::{json, Value};
use sha2::Digest;

const SOURCE: &str = "http://10.93.0.2:8765";

/// Signs the update statement of `<dir>/<file>` (which must hold the announced bytes) as
/// `version` for `platform` with the `minisign` CLI and the secret key `<dir>/key`, with the
/// commands of the book's "Updates" chapter; answers the `.minisig` text.
fn cli_sign(dir: &Path, version: &str, platform: &str, file: &str) -> String {
    let out = std::process::Command::new("bash")
        .current_dir(dir)
        .args([
            "-euc",
            r#"V=$1 P=$2 F=$3
printf 'bootlane-update-v1\n%s\n%s\n%s\n%s\n' "$V" "$P" "$F" "$(sha256sum "$F" | cut -d' ' -f1)" > "$F.statement"
minisign -S -s key -m "$F.statement" -x "$F.minisig" </dev/null >/dev/null"#,
            "sign",
            version,
            platform,
            file,
        ])
        .output()
        .expect("run minisign (scripts/setup.sh installs it)");
    assert!(out.status.success(), "minisign -S: {out:?}");
    std::fs::read_to_string(dir.join(format!("{file}.minisig"))).expect("the .minisig file")
}

/// The signature by `kp` (the `minisign` crate) of the update statement of `data`.
fn crate_sign(kp: &minisign::KeyPair, version: &str, platform: &str, file: &str, data: &[u8]) -> String {
    let st = bootlane::updates::manifest::statement(version, platform, file, &hex::encode(sha2::Sha256::digest(data)));
    minisign::sign(Some(&kp.pk), &kp.sk, std::io::Cursor::new(st), None, None)
        .expect("sign")
        .into_string()
}

fn artifact(url: &str, announced: &[u8], signature: String) -> Value {
    json!({"url": url, "size": announced.len(), "sha256": hex::encode(sha2::Sha256::digest(announced)),
           "signature": signature})
}

/// Waits until `f` answers `Some`, panicking with `what` after `timeout`.
fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Downloads `version` and waits for the job's end; answers the job.
fn download(s: &Server, version: &str) -> Value {
    let (code, v) = s.api("POST", "/version/download", Some(&json!({"version": version})));
    assert_eq!(code, 202, "{v}");
    wait_for("the download to end", Duration::from_secs(30), || {
        let (code, v) = s.api("GET", "/version/download", None);
        assert_eq!(code, 200, "{v}");
        (v["data"]["version"] == version && v["data"]["state"] != "running").then(|| v["data"].clone())
    })
}

/// The `update.*` events' kinds and data, oldest first.
fn events(s: &Server) -> Vec<(String, Value)> {
    let (code, v) = s.api("GET", "/events?kind=update.&size=1000", None);
    assert_eq!(code, 200, "{v}");
    let mut out: Vec<(String, Value)> = v["data"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| (e["kind"].as_str().unwrap_or_default().to_string(), e["data"].clone()))
        .collect();
    out.reverse();
    out
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn update_check_download_verify_refuse_and_install() {
    let (srv, src) = (NetNs::new("upd"), NetNs::new("ups"));
    veth(&srv, &["10.93.0.1/24"], &src, &["10.93.0.2/24"]);
    let keys = tempfile::tempdir().expect("key dir");
    let out = std::process::Command::new("minisign")
        .args(["-G", "-W", "-p", "key.pub", "-s", "key"])
        .current_dir(keys.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run minisign -G (scripts/setup.sh installs it)");
    assert!(out.status.success(), "minisign -G: {out:?}");
    let public_key = std::fs::read_to_string(keys.path().join("key.pub")).expect("key.pub");
    let public_key = public_key.lines().nth(1).expect("the base64 line").to_string();
    let other = minisign::KeyPair::generate_unencrypted_keypair().expect("other key pair");

    // The "new binary": a script that says its version, padded so the transfer takes
    // several chunks and progress events.
    let mut good = b"#!/bin/sh\necho bootlane 99.0.0\nexit 0\n".to_vec();
    for i in 0..20_000u32 {
        good.extend_from_slice(format!("# {i:08}\n").as_bytes());
    }
    let mut tampered = good.clone();
    let at = tampered.len() / 2;
    tampered[at] ^= 0x01;
    let www = tempfile::tempdir().expect("www");
    std::fs::write(www.path().join("bootlane-99.0.0"), &good).expect("write");
    std::fs::write(www.path().join("bootlane-98.0.0"), &tampered).expect("write");
    std::fs::write(www.path().join("bootlane-97.0.0"), &good).expect("write");
    let platform = bootlane::updates::build_platform();
    // The publisher signs the good bytes under each name it lists them as.
    let (k, p) = (keys.path(), platform.as_str());
    std::fs::write(k.join("bootlane-99.0.0"), &good).expect("write");
    std::fs::write(k.join("bootlane-98.0.0"), &good).expect("write");
    let signed_99 = cli_sign(k, "99.0.0", p, "bootlane-99.0.0");
    assert!(signed_99.contains("file:bootlane-99.0.0.statement"), "{signed_99}");
    let manifest = json!({"versions": [
        {"version": "97.0.0", "notes": "signed by someone else",
         "artifacts": {&platform: artifact("bootlane-97.0.0", &good,
            crate_sign(&other, "97.0.0", p, "bootlane-97.0.0", &good))}},
        {"version": "99.0.0", "released": "2026-11-23", "notes": "the good one",
         "artifacts": {&platform: artifact("bootlane-99.0.0", &good, signed_99.clone())}},
        {"version": "98.0.0", "notes": "tampered after signing",
         "artifacts": {&platform: artifact("bootlane-98.0.0", &good, cli_sign(k, "98.0.0", p, "bootlane-98.0.0"))}},
        {"version": "96.0.0", "notes": "99.0.0's file and signature relabelled",
         "artifacts": {&platform: artifact("bootlane-99.0.0", &good, signed_99)}},
    ]});
    std::fs::write(www.path().join("manifest.json"), manifest.to_string()).expect("write");
    let www_dir = www.path().display().to_string();
    let http = spawn_in(
        &src,
        &[
            "python3",
            "-m",
            "http.server",
            "8765",
            "--bind",
            "10.93.0.2",
            "--directory",
            &www_dir,
        ],
    );
    wait_for("the update source to answer", Duration::from_secs(10), || {
        let out = srv.sh_out(&format!("curl -fsS -m 2 -o /dev/null {SOURCE}/manifest.json"));
        out.status.success().then_some(())
    });

    let mut s = Server::start(
        &srv,
        &format!(
            "[dns]\nenabled = false\n[updates]\nmanifest_url = \"{SOURCE}/manifest.json\"\npublic_key = \"{}\"\ntimeout_secs = 5\n",
            public_key
        ),
    );
    let updates = s.data_dir.join("updates");

    // ---- Check: 99.0.0 is newer --------------------------------------------------------
    let (code, v) = s.api("POST", "/version/check", None);
    assert_eq!(code, 200, "{v}");
    let d = &v["data"];
    assert_eq!(d["update_available"], true, "{v}");
    assert_eq!(d["newest"], "99.0.0");
    assert_eq!(d["notes"], "the good one");
    assert_eq!(d["source"], format!("{SOURCE}/manifest.json"));
    assert_eq!(d["artifact"]["url"], format!("{SOURCE}/bootlane-99.0.0"));
    assert_eq!(d["artifact"]["size"], good.len());
    assert_eq!(d["artifact"]["sha256"], hex::encode(sha2::Sha256::digest(&good)));

    // ---- Download 99.0.0: verified and stored ------------------------------------------
    let job = download(&s, "99.0.0");
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(std::fs::read(updates.join("99.0.0/bootlane")).expect("artifact"), good);
    let m: Value =
        serde_json::from_slice(&std::fs::read(updates.join("99.0.0/manifest.json")).expect("manifest")).expect("json");
    assert_eq!(
        (&m["version"], &m["size"], &m["sha256"]),
        (&json!("99.0.0"), &json!(good.len()), &d["artifact"]["sha256"])
    );
    assert_eq!(m["source"], format!("{SOURCE}/manifest.json"));
    assert!(m["downloaded_at"].is_string() && m["signature"].as_str().is_some_and(|x| x.contains("trusted comment")));
    let ev = events(&s);
    assert!(ev.iter().any(|e| e.0 == "update.download.progress"), "{ev:?}");
    assert_eq!(
        ev.last().map(|e| e.0.as_str()),
        Some("update.download.completed"),
        "{ev:?}"
    );
    let (_, v) = s.api("GET", "/version/downloads", None);
    assert_eq!(v["data"][0]["version"], "99.0.0", "{v}");

    // ---- Tampered, badly signed or relabelled artifacts: refused, nothing kept ----------
    for (version, why) in [
        ("98.0.0", "sha256 mismatch"),
        ("97.0.0", "another key"),
        ("96.0.0", "does not cover this artifact's statement"),
    ] {
        let job = download(&s, version);
        assert_eq!(job["state"], "failed", "{job}");
        let err = job["error"].as_str().unwrap_or_default();
        assert!(err.contains(why), "{version}: {err}");
        assert_eq!(entries(&updates), vec!["99.0.0".to_string()], "{version}: nothing kept");
        let ev = events(&s);
        let last = ev.last().expect("an event");
        assert_eq!(last.0, "update.download.failed", "{ev:?}");
        assert!(last.1["reason"].as_str().is_some_and(|r| r.contains(why)), "{last:?}");
    }

    // ---- Install 99.0.0 over a copy of the binary: re-verified, replaced, runs ---------
    let bin_dir = tempfile::tempdir().expect("bin dir");
    let target = bin_dir.path().join("bootlane");
    std::fs::copy(bootlane_tests::bootlane_bin(), &target).expect("copy binary");
    // The stored copy is checked again: a byte changed since the download is refused.
    let stored = updates.join("99.0.0/bootlane");
    std::fs::write(&stored, &tampered).expect("tamper");
    let install = |t: &Path| {
        std::process::Command::new(bootlane_tests::bootlane_bin())
            .args(["update", "install", "99.0.0", "--config"])
            .arg(&s.config)
            .arg("--target")
            .arg(t)
            .output()
            .expect("run bootlane update install")
    };
    let out = install(&target);
    assert!(!out.status.success(), "a tampered stored artifact must not install");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sha256 mismatch"),
        "{out:?}"
    );
    assert_ne!(std::fs::read(&target).expect("target"), good, "target unchanged");
    std::fs::write(&stored, &good).expect("restore");
    let out = install(&target);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("systemctl restart bootlane"),
        "{out:?}"
    );
    assert_eq!(std::fs::read(&target).expect("target"), good);
    assert_eq!(
        entries(bin_dir.path()),
        vec!["bootlane".to_string()],
        "no temporary file left"
    );
    let ran = std::process::Command::new(&target)
        .output()
        .expect("run the installed binary");
    assert_eq!(String::from_utf8_lossy(&ran.stdout).trim(), "bootlane 99.0.0");

    // ---- The source stopped: a 502 naming it --------------------------------------------
    drop(http);
    wait_for("the update source to stop", Duration::from_secs(10), || {
        let out = srv.sh_out(&format!("curl -fsS -m 2 -o /dev/null {SOURCE}/manifest.json"));
        (!out.status.success()).then_some(())
    });
    let (code, v) = s.api("POST", "/version/check", None);
    assert_eq!(code, 502, "{v}");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains(&format!("{SOURCE}/manifest.json"))),
        "{v}"
    );
    assert_eq!(v["success"], false);
    s.terminate(Duration::from_secs(10));
}
