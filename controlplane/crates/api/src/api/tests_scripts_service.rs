//! Tests of [`bootlane_install::scripts::ScriptService`] over a test state's real hosts and profiles:
//! names, versions and rollback, the use checks (409), baseline script lists, the
//! resolution order (host, profile, default; deduplicated; OS filters), rendering with
//! variables, reports (kept per machine, events), and the bundles run by a real `sh`.

use std::collections::BTreeMap;

use std::sync::Arc;

use bootlane_boot::inventory::baseline::glob;
use bootlane_core::service_error::ServiceError;
use bootlane_install::scripts::{service::*, *};

type Result<T, E = ServiceError> = std::result::Result<T, E>;
use bootlane_boot::inventory::model::HostInput;
use bootlane_install::scripts::{bundle, BaselineInput, ScriptInput, ScriptType, ScriptVariable};

const MAC: &str = "52:54:00:13:00:01";

fn run(script_id: u64, exit_code: i32, duration_ms: u64, output: &str) -> ScriptRun<'_> {
    ScriptRun {
        script_id,
        exit_code,
        duration_ms,
        output,
    }
}

fn script(name: &str, content: &str) -> ScriptInput {
    ScriptInput {
        name: Some(name.into()),
        kind: Some(ScriptType::Sh),
        content: Some(content.into()),
        ..Default::default()
    }
}

async fn svc() -> (super::test_support::T, Arc<ScriptService>) {
    let t = super::test_support::setup().await;
    let s = t.state.scripts.clone();
    (t, s)
}

fn machine(os: Option<(&str, Option<&str>)>) -> Machine {
    Machine {
        mac: MAC.into(),
        os: os.map(|(f, v)| (f.to_string(), v.map(String::from))),
        base_url: "http://10.0.0.1:8080".into(),
    }
}

#[tokio::test]
async fn names_are_unique_and_versions_follow_changes() {
    let (_t, s) = svc().await;
    let a = s.create(script("ntp", "echo 1\n")).await.unwrap();
    assert_eq!(a.version, 1);
    let clash = s.create(script("NTP", "echo 2\n")).await.unwrap_err();
    assert!(matches!(clash, ServiceError::Conflict(m) if m.contains("ntp")));
    // A description change stores no version; a content change does.
    let b = s
        .update(
            a.id,
            ScriptInput {
                description: Some("time".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(b.version, 1);
    let c = s
        .update(
            a.id,
            ScriptInput {
                content: Some("echo 3\n".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(c.version, 2);
    let d = s.diff(a.id, 1).unwrap();
    assert!(
        !d.identical && d.diff.contains("-echo 1") && d.diff.contains("+echo 3"),
        "{}",
        d.diff
    );
    let r = s.rollback(a.id, 1).await.unwrap();
    assert_eq!((r.version, r.content.as_str()), (3, "echo 1\n"));
    let v: Vec<u32> = s.versions(a.id).unwrap().iter().map(|v| v.version).collect();
    assert_eq!(v, vec![3, 2, 1]);
    assert!(s.versions(a.id).unwrap()[0].comment.contains("rollback to version 1"));
    assert!(matches!(s.version(a.id, 9), Err(ServiceError::NotFound(_))));
}

#[tokio::test]
async fn bad_input_is_named() {
    let (_t, s) = svc().await;
    let e = |r: Result<Script>| match r {
        Err(ServiceError::Invalid(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(e(s
        .create(ScriptInput {
            kind: None,
            ..script("x", "a")
        })
        .await)
    .contains("'type'"));
    assert!(e(s.create(script("x", "echo {{ x")).await).contains("not a valid template"));
    let mut bad_var = script("x", "echo");
    bad_var.variables = Some(vec![ScriptVariable {
        name: "host".into(),
        description: String::new(),
        default: None,
    }]);
    assert!(e(s.create(bad_var).await).contains("reserved"));
    let mut bad_var = script("x", "echo");
    bad_var.variables = Some(vec![ScriptVariable {
        name: "1x".into(),
        description: String::new(),
        default: None,
    }]);
    assert!(e(s.create(bad_var).await).contains("not a variable name"));
    // A program that uses `{#` itself is stored verbatim with render off.
    let raw = ScriptInput {
        render: Some(false),
        ..script("raw", "echo ${#HOME}\n")
    };
    assert!(s.create(raw).await.is_ok());
}

#[tokio::test]
async fn baselines_list_scripts_once_and_guard_deletes() {
    let (t, s) = svc().await;
    let a = s.create(script("a", "echo a\n")).await.unwrap();
    let dup = s
        .create_baseline(BaselineInput {
            name: Some("base".into()),
            script_ids: Some(vec![a.id, a.id]),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(dup, ServiceError::Invalid(m) if m.contains("twice")));
    let unknown = s
        .create_baseline(BaselineInput {
            name: Some("base".into()),
            script_ids: Some(vec![999]),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(unknown, ServiceError::Invalid(m) if m.contains("999")));
    let b = s
        .create_baseline(BaselineInput {
            name: Some("base".into()),
            script_ids: Some(vec![a.id]),
            ..Default::default()
        })
        .await
        .unwrap();
    let used = s.delete(a.id).await.unwrap_err();
    assert!(matches!(used, ServiceError::Conflict(m) if m.contains("\"base\"")));
    let h = t
        .state
        .hosts
        .create(HostInput {
            name: Some("web1".into()),
            mac: Some(MAC.into()),
            baseline_id: Some(Some(b.id)),
            ..Default::default()
        })
        .await
        .unwrap();
    let assigned = s.delete_baseline(b.id).await.unwrap_err();
    assert!(matches!(assigned, ServiceError::Conflict(m) if m.contains("host \"web1\"")));
    t.state
        .hosts
        .update(
            h.id,
            HostInput {
                baseline_id: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    s.set_scripts(b.id, vec![]).await.unwrap();
    s.delete_baseline(b.id).await.unwrap();
    s.delete(a.id).await.unwrap();
    // A host cannot name a baseline that does not exist.
    let e = t
        .state
        .hosts
        .update(
            h.id,
            HostInput {
                baseline_id: Some(Some(4242)),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::Invalid(m) if m.contains("4242")));
}

#[tokio::test]
async fn a_machine_gets_host_then_profile_then_default_deduplicated_and_filtered() {
    let (t, s) = svc().await;
    let one = s.create(script("one", "echo one {{ host.name }}\n")).await.unwrap();
    let two = s.create(script("two", "echo two\n")).await.unwrap();
    let mut three = script("three", "echo {{ greeting }} from {{ baseline.name }}\n");
    three.variables = Some(vec![ScriptVariable {
        name: "greeting".into(),
        description: "what to say".into(),
        default: Some("hello".into()),
    }]);
    let three = s.create(three).await.unwrap();
    let mk = |name: &str, ids: Vec<u64>, vars: &[(&str, &str)], family: Option<&str>, default: bool| BaselineInput {
        name: Some(name.into()),
        script_ids: Some(ids),
        variables: Some(
            vars.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        os_filter: Some(OsFilter {
            family: family.map(String::from),
            version: family.map(|_| "12*".into()),
        }),
        is_default: Some(default),
        ..Default::default()
    };
    let hb = s
        .create_baseline(mk("host-b", vec![one.id, two.id], &[], None, false))
        .await
        .unwrap();
    let pb = s
        .create_baseline(mk(
            "prof-b",
            vec![two.id, three.id],
            &[("greeting", "hi")],
            Some("debian"),
            false,
        ))
        .await
        .unwrap();
    let db = s
        .create_baseline(mk("site", vec![three.id], &[], None, true))
        .await
        .unwrap();
    let prof = t.state.catalog.default_profile().unwrap();
    t.state
        .catalog
        .update_profile(
            prof.id,
            bootlane_boot::boot::catalog::ProfileInput {
                baseline_id: Some(Some(pb.id)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    t.state
        .hosts
        .create(HostInput {
            name: Some("web1".into()),
            mac: Some(MAC.into()),
            baseline_id: Some(Some(hb.id)),
            ..Default::default()
        })
        .await
        .unwrap();
    let a = s.assignment(&machine(Some(("debian", Some("12.5"))))).unwrap();
    let via: Vec<(&str, &str)> = a.baselines.iter().map(|b| (b.name.as_str(), b.via.as_str())).collect();
    assert_eq!(
        via,
        vec![("host-b", "host"), ("prof-b", "profile"), ("site", "default")]
    );
    let names: Vec<&str> = a.scripts.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["one", "two", "three"],
        "each script once, at its first place"
    );
    assert_eq!(a.scripts[0].content.as_deref(), Some("echo one web1\n"));
    // `three` comes from the profile's baseline: its variable value wins over the default.
    assert_eq!(a.scripts[2].content.as_deref(), Some("echo hi from prof-b\n"));
    // Another OS skips the Debian-only baseline; `three` then comes from the default.
    let a = s.assignment(&machine(Some(("rhel", Some("9.3"))))).unwrap();
    let via: Vec<&str> = a.baselines.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(via, vec!["host-b", "site"]);
    assert_eq!(a.skipped.len(), 1, "{:?}", a.skipped);
    assert!(
        a.skipped[0].contains("prof-b") && a.skipped[0].contains("rhel 9.3"),
        "{:?}",
        a.skipped
    );
    assert_eq!(
        a.scripts[2].content.as_deref(),
        Some(
            "echo hello from site
"
        )
    );
    // The default baseline moves: only one is default.
    s.update_baseline(
        hb.id,
        BaselineInput {
            is_default: Some(true),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(!s.baseline(db.id).unwrap().is_default);
}

#[tokio::test]
async fn a_script_that_does_not_render_says_why_and_fails_its_bundle_step() {
    let (_t, s) = svc().await;
    let bad = s.create(script("needs-x", "echo {{ ntp_server }}\n")).await.unwrap();
    s.create_baseline(BaselineInput {
        name: Some("site".into()),
        script_ids: Some(vec![bad.id]),
        is_default: Some(true),
        ..Default::default()
    })
    .await
    .unwrap();
    let a = s.assignment(&machine(None)).unwrap();
    assert!(a.scripts[0].content.is_none());
    let err = a.scripts[0].error.clone().unwrap();
    assert!(err.contains("undefined") && err.contains("needs-x"), "{err}");
    let sh = bundle::shell(&a, "http://127.0.0.1:9/report?token=x");
    assert!(sh.contains("exit 1") && sh.contains("undefined"));
}

#[tokio::test]
async fn reports_are_kept_per_machine_and_published() {
    let (t, s) = svc().await;
    let sc = s.create(script("a", "echo a\n")).await.unwrap();
    s.create_baseline(BaselineInput {
        name: Some("site".into()),
        script_ids: Some(vec![sc.id]),
        is_default: Some(true),
        ..Default::default()
    })
    .await
    .unwrap();
    let a = s.assignment(&machine(None)).unwrap();
    let mut sub = t.state.events.subscribe();
    let long = "x".repeat(10_000) + "\nlast line";
    let r = s.report(3, &a, run(sc.id, 2, 150, &long), None).await.unwrap();
    assert_eq!(r.output.len(), MAX_REPORT_OUTPUT);
    assert!(r.output.ends_with("last line"));
    let e = sub.rx.recv().await.unwrap();
    assert_eq!(e.kind, "script.run.failed");
    assert!(
        e.summary.contains("exit 2") && e.summary.contains("last line"),
        "{}",
        e.summary
    );
    let not_mine = s.report(3, &a, run(999, 0, 1, ""), None).await.unwrap_err();
    assert!(matches!(not_mine, ServiceError::Invalid(_)));
    for i in 0..105 {
        s.report(3, &a, run(sc.id, 0, i, "ok"), None).await.unwrap();
    }
    let kept = s.reports_for(MAC).unwrap();
    assert_eq!(kept.len(), MAX_REPORTS_PER_HOST);
    assert_eq!(kept[0].duration_ms, 104, "newest first");
}

#[test]
fn os_filter_patterns() {
    let f = OsFilter {
        family: Some("Debian".into()),
        version: Some("12*".into()),
    };
    assert!(f.matches("debian", Some("12.5")));
    assert!(!f.matches("debian", Some("11.9")));
    assert!(!f.matches("ubuntu", Some("12.04")));
    assert!(!f.matches("debian", None), "an unknown version fails a version pattern");
    assert!(OsFilter::default().matches("windows", None));
    assert!(glob("*.04", "22.04") && glob("2*4", "22.04") && !glob("22", "22.04"));
}

/// The bundle is run by a real `sh`: scripts in order, here-documents intact (content
/// with quotes, `$`, and a line that looks like a delimiter), stop at the first failure,
/// and one report per script run (the reporter is replaced by a local log).
#[tokio::test]
async fn the_shell_bundle_runs_in_order_and_stops_at_the_first_failure() {
    let (_t, s) = svc().await;
    let a1 = s
        .create(script("first", "echo \"first $((1+1))\" 'q'\necho EOF\n"))
        .await
        .unwrap();
    let mut py = script("second", "import sys\nprint('second')\n");
    py.kind = Some(ScriptType::Python);
    let a2 = s.create(py).await.unwrap();
    let a3 = s
        .create(script("fails", "echo about to fail >&2\nexit 7\n"))
        .await
        .unwrap();
    let a4 = s.create(script("never", "echo never\n")).await.unwrap();
    let mut ps = script("win", "Write-Output hi\n");
    ps.kind = Some(ScriptType::Powershell);
    let a5 = s.create(ps).await.unwrap();
    s.create_baseline(BaselineInput {
        name: Some("site".into()),
        script_ids: Some(vec![a1.id, a2.id, a3.id, a4.id, a5.id]),
        is_default: Some(true),
        ..Default::default()
    })
    .await
    .unwrap();
    let a = s.assignment(&machine(None)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("reports");
    // Replace the HTTP reporter with one that appends its arguments to a file.
    let sh = bundle::shell(&a, "http://127.0.0.1:9/r?token=t").replace(
        "bl_run() {",
        &format!("bl_report() {{ echo \"$1 $2\" >>{}; }}\nbl_run() {{", log.display()),
    );
    assert!(!sh.contains("Write-Output"), "the Unix bundle skips PowerShell scripts");
    let out = std::process::Command::new("sh").arg("-c").arg(&sh).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{stdout}");
    assert!(
        stdout.contains("first 2 q\nEOF") && stdout.contains("second") && stdout.contains("about to fail"),
        "{stdout}"
    );
    assert!(!stdout.contains("never"));
    let reports = std::fs::read_to_string(&log).unwrap();
    assert_eq!(reports, format!("{} 0\n{} 0\n{} 7\n", a1.id, a2.id, a3.id));
    let ps1 = bundle::powershell(&a, "http://127.0.0.1:9/r?token=t");
    assert!(ps1.contains(&format!("Invoke-BlScript {} 'win' 'powershell'", a5.id)));
    assert!(!ps1.contains("'first'"), "the Windows bundle skips Unix scripts");
}
