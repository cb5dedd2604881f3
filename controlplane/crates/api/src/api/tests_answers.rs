//! Router tests of the answer templates: CRUD with the name clash, versions and
//! rollback, validation without storing, preview for a host or the sample values, the
//! site settings (the root password never answered in plain text), and 400s naming the
//! field.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::test_support::{setup, T};

const BASE: &str = "/api/v1/netboot/answer-templates";

async fn logged_in() -> T {
    let mut t = setup().await;
    t.login().await;
    t
}

async fn create(t: &T, body: Value) -> Value {
    t.expect(Method::POST, BASE, Some(body), StatusCode::CREATED, "").await["data"].clone()
}

#[tokio::test]
async fn crud_with_a_name_clash_and_a_list_filter() {
    let t = logged_in().await;
    let a = create(
        &t,
        json!({"name": "Lab Debian", "preset": "debian", "description": "d"}),
    )
    .await;
    assert_eq!(a["format"], "preseed");
    assert_eq!(a["version"], 1);
    assert!(a["content"].as_str().unwrap().contains("d-i "));
    let id = a["id"].as_u64().unwrap();
    // Same name in another case: 409.
    t.expect(
        Method::POST,
        BASE,
        Some(json!({"name": "lab debian", "preset": "ubuntu"})),
        StatusCode::CONFLICT,
        "exists already",
    )
    .await;
    let b = create(
        &t,
        json!({"name": "ks", "format": "kickstart", "content": "text\nlang {{ site.locale }}\n"}),
    )
    .await;
    let (s, _, v) = t.call(Method::GET, &format!("{BASE}?format=kickstart"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["data"]["total"], 1);
    assert_eq!(v["data"]["templates"][0]["id"], b["id"]);
    let v = t
        .expect(Method::GET, &format!("{BASE}?q=LAB"), None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["templates"][0]["id"], id);
    // GET, PUT (rename into a clash: 409), PUT back the GET answer, DELETE.
    let got = t
        .expect(Method::GET, &format!("{BASE}/{id}"), None, StatusCode::OK, "")
        .await["data"]
        .clone();
    t.expect(
        Method::PUT,
        &format!("{BASE}/{id}"),
        Some(json!({"name": "KS"})),
        StatusCode::CONFLICT,
        "exists already",
    )
    .await;
    let same = t
        .expect(
            Method::PUT,
            &format!("{BASE}/{id}"),
            Some(got.clone()),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(same["data"]["version"], 1, "no content change, no version");
    t.expect(Method::DELETE, &format!("{BASE}/{id}"), None, StatusCode::OK, "")
        .await;
    t.expect(
        Method::GET,
        &format!("{BASE}/{id}"),
        None,
        StatusCode::NOT_FOUND,
        "no answer template",
    )
    .await;
    t.expect(
        Method::GET,
        &format!("{BASE}/{id}/versions"),
        None,
        StatusCode::NOT_FOUND,
        "no answer template",
    )
    .await;
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field() {
    let t = logged_in().await;
    for (body, needle) in [
        (json!({"format": "preseed", "content": "x"}), "'name'"),
        (json!({"name": "n", "content": "x"}), "'format'"),
        (json!({"name": "n", "format": "preseed"}), "'content'"),
        (json!({"name": "n", "format": "nope", "content": "x"}), "format"),
        (json!({"name": "n", "preset": "nope"}), "'preset'"),
        (
            json!({"name": "n", "format": "preseed", "content": "x", "extra": 1}),
            "extra",
        ),
        (json!({"name": "", "format": "preseed", "content": "x"}), "'name'"),
        // A template error is refused with its line.
        (
            json!({"name": "n", "format": "preseed", "content": "ok\n{% if %}\n"}),
            "line 2",
        ),
        (
            json!({"name": "n", "format": "preseed", "content": "ok\n\n{{ host.nosuch }}\n"}),
            "line 3",
        ),
    ] {
        t.expect(Method::POST, BASE, Some(body), StatusCode::BAD_REQUEST, needle)
            .await;
    }
    t.expect(Method::GET, &format!("{BASE}/abc"), None, StatusCode::BAD_REQUEST, "")
        .await;
    t.expect(
        Method::GET,
        &format!("{BASE}?size=0"),
        None,
        StatusCode::BAD_REQUEST,
        "'size'",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("{BASE}/validate"),
        Some(json!({"content": "x"})),
        StatusCode::BAD_REQUEST,
        "format",
    )
    .await;
    let id = create(&t, json!({"name": "p", "preset": "debian"})).await["id"]
        .as_u64()
        .unwrap();
    t.expect(
        Method::POST,
        &format!("{BASE}/{id}/preview"),
        Some(json!({"mac": "zz"})),
        StatusCode::BAD_REQUEST,
        "'mac'",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("{BASE}/{id}/preview"),
        Some(json!({"host_id": 999})),
        StatusCode::NOT_FOUND,
        "no host",
    )
    .await;
    t.expect(
        Method::PUT,
        "/api/v1/netboot/answer-settings",
        Some(json!({"timezone": "no such/../zone"})),
        StatusCode::BAD_REQUEST,
        "'timezone'",
    )
    .await;
    // Without a session: 401.
    let anon = setup().await;
    anon.expect(Method::GET, BASE, None, StatusCode::UNAUTHORIZED, "").await;
}

#[tokio::test]
async fn every_content_change_is_a_version_and_rollback_stores_a_new_one() {
    let t = logged_in().await;
    let id = create(
        &t,
        json!({"name": "v", "format": "preseed", "content": "d-i a/b string one\n"}),
    )
    .await["id"]
        .as_u64()
        .unwrap();
    let put = |c: &'static str| json!({"content": c, "comment": format!("to {}", c.trim())});
    let v2 = t
        .expect(
            Method::PUT,
            &format!("{BASE}/{id}"),
            Some(put("d-i a/b string two\n")),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v2["data"]["version"], 2);
    // A description change alone stores no version.
    let d = t
        .expect(
            Method::PUT,
            &format!("{BASE}/{id}"),
            Some(json!({"description": "x"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(d["data"]["version"], 2);
    let list = t
        .expect(Method::GET, &format!("{BASE}/{id}/versions"), None, StatusCode::OK, "")
        .await;
    let versions: Vec<u64> = list["data"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(versions, vec![2, 1], "newest first");
    let v1 = t
        .expect(
            Method::GET,
            &format!("{BASE}/{id}/versions/1"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v1["data"]["content"], "d-i a/b string one\n");
    t.expect(
        Method::GET,
        &format!("{BASE}/{id}/versions/9"),
        None,
        StatusCode::NOT_FOUND,
        "no version 9",
    )
    .await;
    let back = t
        .expect(
            Method::POST,
            &format!("{BASE}/{id}/rollback/1"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(back["data"]["version"], 3);
    assert_eq!(back["data"]["content"], "d-i a/b string one\n");
    let v3 = t
        .expect(
            Method::GET,
            &format!("{BASE}/{id}/versions/3"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v3["data"]["comment"], "rollback to version 1");
    t.expect(
        Method::POST,
        &format!("{BASE}/{id}/rollback/7"),
        None,
        StatusCode::NOT_FOUND,
        "no version 7",
    )
    .await;
}

#[tokio::test]
async fn validate_stores_nothing_and_reports_both_steps_with_lines() {
    let t = logged_in().await;
    // Step 1: a template error.
    let v = t
        .expect(
            Method::POST,
            &format!("{BASE}/validate"),
            Some(json!({"format": "preseed", "content": "d-i a/b string x\n{{ task.nope }}\n"})),
            StatusCode::OK,
            "",
        )
        .await["data"]
        .clone();
    assert_eq!(v["status"], "invalid");
    assert_eq!(v["template_errors"][0]["line"], 2, "{v}");
    // Step 2: the output judged by the preseed parser.
    let v = t
        .expect(
            Method::POST,
            &format!("{BASE}/validate"),
            Some(json!({"format": "preseed", "content": "d-i a/b string x\nd-i c/d boolean maybe\n"})),
            StatusCode::OK,
            "",
        )
        .await["data"]
        .clone();
    assert_eq!(v["status"], "invalid");
    assert_eq!(v["validator"], "preseed parser");
    assert_eq!(v["output_errors"][0]["line"], 2, "{v}");
    let v = t
        .expect(
            Method::POST,
            &format!("{BASE}/validate"),
            Some(json!({"format": "preseed", "content": "d-i a/b string {{ host.name }}\n"})),
            StatusCode::OK,
            "",
        )
        .await["data"]
        .clone();
    assert_eq!(v["status"], "valid");
    assert_eq!(v["valid"], true);
    let list = t.expect(Method::GET, BASE, None, StatusCode::OK, "").await;
    assert_eq!(list["data"]["total"], 0, "validate stores nothing");
    // A stored preset validates with its format's validator (or says it could not).
    let id = create(&t, json!({"name": "x", "preset": "opensuse"})).await["id"]
        .as_u64()
        .unwrap();
    let v = t
        .expect(Method::POST, &format!("{BASE}/{id}/validate"), None, StatusCode::OK, "")
        .await["data"]
        .clone();
    match v["status"].as_str().unwrap() {
        "valid" => assert_eq!(v["validator"], "xmllint"),
        "syntax-checked-only" => eprintln!("SKIPPED: xmllint not installed: {}", v["note"]),
        _ => panic!("{v}"),
    }
}

#[tokio::test]
async fn preview_renders_for_a_host_or_sample_values_with_the_site_settings() {
    let t = logged_in().await;
    let s = t
        .expect(
            Method::PUT,
            "/api/v1/netboot/answer-settings",
            Some(json!({"timezone": "Europe/Berlin", "root_password": "s3cret-pass", "mirror": "http://mirror.lab/debian",
                "ssh_authorized_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG6cY0qg2b1yQ6m1f1v3 me@lab"]})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(s["data"]["has_root_password"], true);
    let hash = s["data"]["root_password_hash"].as_str().unwrap().to_string();
    assert!(hash.starts_with("$6$"));
    assert!(!s.to_string().contains("s3cret-pass"));
    let got = t
        .expect(Method::GET, "/api/v1/netboot/answer-settings", None, StatusCode::OK, "")
        .await;
    assert_eq!(got["data"]["timezone"], "Europe/Berlin");
    let host = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "node7", "mac": "52:54:00:aa:bb:07", "ip": "10.0.0.7"})),
            StatusCode::CREATED,
            "",
        )
        .await["data"]
        .clone();
    let id = create(&t, json!({"name": "deb", "preset": "debian"})).await["id"]
        .as_u64()
        .unwrap();
    // No body: sample values.
    let p = t
        .expect(Method::POST, &format!("{BASE}/{id}/preview"), None, StatusCode::OK, "")
        .await["data"]
        .clone();
    let out = p["output"].as_str().unwrap();
    assert!(out.contains("d-i netcfg/get_hostname string sample-host"), "{out}");
    assert!(out.contains(&format!("d-i passwd/root-password-crypted password {hash}")));
    assert!(out.contains("d-i time/zone string Europe/Berlin"));
    assert!(out.contains("d-i mirror/http/hostname string mirror.lab"));
    assert!(!out.contains("s3cret-pass"));
    assert_eq!(p["validation"]["status"], "valid", "{}", p["validation"]);
    assert_eq!(p["content_type"], "text/plain; charset=utf-8");
    // A host by MAC, and task values.
    let body = json!({"mac": "52-54-00-AA-BB-07", "task": {"id": 42, "report_url": "http://10.0.0.1:8080/r/42/tok"}});
    let p = t
        .expect(
            Method::POST,
            &format!("{BASE}/{id}/preview"),
            Some(body),
            StatusCode::OK,
            "",
        )
        .await["data"]
        .clone();
    let out = p["output"].as_str().unwrap();
    assert!(out.contains("d-i netcfg/get_hostname string node7"), "{out}");
    assert!(
        out.contains("'http://10.0.0.1:8080/r/42/tok/progress?stage=early_command'"),
        "{out}"
    );
    assert_eq!(p["context"]["host"]["ip"], "10.0.0.7");
    // By host id.
    let body = json!({"host_id": host["id"]});
    let p = t
        .expect(
            Method::POST,
            &format!("{BASE}/{id}/preview"),
            Some(body),
            StatusCode::OK,
            "",
        )
        .await["data"]
        .clone();
    assert_eq!(p["context"]["host"]["name"], "node7");
    // Removing the password.
    let s = t
        .expect(
            Method::PUT,
            "/api/v1/netboot/answer-settings",
            Some(json!({"root_password": ""})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(s["data"]["has_root_password"], false);
}

#[tokio::test]
async fn presets_are_listed_and_the_answer_source_renders_stored_templates() {
    let t = logged_in().await;
    let v = t
        .expect(Method::GET, &format!("{BASE}/presets"), None, StatusCode::OK, "")
        .await;
    let keys: Vec<&str> = v["data"]["presets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    for k in [
        "debian",
        "ubuntu",
        "rocky",
        "opensuse",
        "windows",
        "fcos",
        "cloud-config",
    ] {
        assert!(keys.contains(&k), "{keys:?}");
    }
    let id = create(&t, json!({"name": "ign", "preset": "fcos"})).await["id"]
        .as_u64()
        .unwrap();
    use bootlane_install::answers::AnswerSource;
    let src: &dyn AnswerSource = t.state.answers.as_ref();
    assert_eq!(
        src.check(id).unwrap(),
        bootlane_install::answers::AnswerFormat::Ignition
    );
    let mut ctx = bootlane_install::answers::render::sample_context();
    ctx.host.name = "fcos-1".into();
    let r = src.render(id, &ctx).unwrap();
    let doc: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(doc["ignition"]["version"], "3.3.0");
    assert_eq!(doc["storage"]["files"][0]["contents"]["source"], "data:,fcos-1");
    assert!(matches!(
        src.check(999_999),
        Err(bootlane_core::service_error::ServiceError::NotFound(_))
    ));
}
