//! Router tests of `/store`: the built-in catalog, filters, details, imports with
//! clash/rename/overwrite, the sha256 check (nothing written on a mismatch), local
//! bundles, and failing and working HTTP sources.

use std::path::Path;

use axum::http::{header, Method, StatusCode};
use serde_json::{json, Value};

use super::test_support::{is_error, setup, setup_with, T};
use bootlane_install::community::{format::content_sha256, SourceConfig};

async fn logged_in(t: T) -> T {
    let mut t = t;
    t.login().await;
    t
}

fn item_json(kind: &str, id: &str, name: &str, content: Value) -> Value {
    json!({"type": kind, "id": id, "name": name, "version": "1", "description": "test item",
           "author": "tests", "tags": ["test"], "sha256": content_sha256(&content), "content": content})
}

/// Writes a source directory holding `items` (index from their metadata).
fn write_source(dir: &Path, items: &[Value]) {
    let mut entries = Vec::new();
    for i in items {
        let p = dir.join(format!(
            "items/{}/{}.json",
            i["type"].as_str().unwrap(),
            i["id"].as_str().unwrap()
        ));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, i.to_string()).unwrap();
        let mut e = i.clone();
        e.as_object_mut().unwrap().remove("content");
        entries.push(e);
    }
    std::fs::write(
        dir.join("index.json"),
        json!({"format": 1, "items": entries}).to_string(),
    )
    .unwrap();
}

fn kickstart(text: &str) -> Value {
    json!({"format": "kickstart", "template": text})
}

async fn template_names(t: &T) -> Vec<String> {
    let (_, _, v) = t.call(Method::GET, "/api/v1/netboot/answer-templates", None).await;
    v["data"]["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn the_builtin_catalog_lists_filters_and_pages() {
    let t = logged_in(setup().await).await;
    let v = t
        .expect(Method::GET, "/api/v1/store/catalog", None, StatusCode::OK, "")
        .await;
    let d = &v["data"];
    assert!(d["total"].as_u64().unwrap() >= 20, "{d}");
    assert_eq!(d["sources"][0]["name"], "builtin");
    assert_eq!(d["sources"][0]["ok"], true);
    let first = &d["items"][0];
    for k in [
        "type",
        "id",
        "name",
        "version",
        "description",
        "author",
        "tags",
        "source",
        "sha256",
    ] {
        assert!(!first[k].is_null(), "missing {k} in {first}");
    }
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/catalog?type=script",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let items = v["data"]["items"].as_array().unwrap();
    assert!(items.len() >= 5 && items.iter().all(|i| i["type"] == "script"), "{v}");
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/catalog?tag=windows",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let ids: Vec<&str> = v["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"winrm-enable") && ids.contains(&"windows-base") && ids.contains(&"windows"),
        "{ids:?}"
    );
    let v = t
        .expect(Method::GET, "/api/v1/store/catalog?q=NTP", None, StatusCode::OK, "")
        .await;
    assert!(
        v["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == "timezone-ntp"),
        "{v}"
    );
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/catalog?size=2&page=2",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"]["page"], 2);
    t.expect(
        Method::GET,
        "/api/v1/store/catalog?type=bogus",
        None,
        StatusCode::BAD_REQUEST,
        "'type'",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/store/catalog?source=nope",
        None,
        StatusCode::NOT_FOUND,
        "nope",
    )
    .await;
}

#[tokio::test]
async fn item_details_carry_the_content_and_unknowns_are_404() {
    let t = logged_in(setup().await).await;
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/items/answer-template/debian",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["content"]["format"], "preseed");
    assert_eq!(
        v["data"]["content"]["template"],
        bootlane_install::answers::presets::find("debian").unwrap().content
    );
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/items/baseline/debian-base",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["content"]["scripts"][0]["id"], "ssh-authorized-keys");
    t.expect(
        Method::GET,
        "/api/v1/store/items/widget/debian",
        None,
        StatusCode::NOT_FOUND,
        "widget",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/store/items/script/nope",
        None,
        StatusCode::NOT_FOUND,
        "nope",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "widget", "id": "x"})),
        StatusCode::NOT_FOUND,
        "widget",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "profile", "id": "nope"})),
        StatusCode::NOT_FOUND,
        "nope",
    )
    .await;
}

#[tokio::test]
async fn import_clash_rename_and_overwrite() {
    let t = logged_in(setup().await).await;
    let body = json!({"type": "answer-template", "id": "rocky"});
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(body.clone()),
            StatusCode::CREATED,
            "",
        )
        .await;
    let inst = &v["data"]["installed"][0];
    assert_eq!(inst["kind"], "answer_template");
    assert_eq!(inst["action"], "created");
    assert_eq!(inst["name"], "Rocky Linux / RHEL 9 (kickstart)");
    let id = inst["id"].as_u64().unwrap();
    // Same name again: a 409 naming the clash, nothing added.
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(body.clone()),
        StatusCode::CONFLICT,
        "\"Rocky Linux / RHEL 9 (kickstart)\" exists already",
    )
    .await;
    assert_eq!(template_names(&t).await.len(), 1);
    // Rename: a second template.
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "answer-template", "id": "rocky", "rename": "Rocky (lab)"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    assert_eq!(v["data"]["installed"][0]["name"], "Rocky (lab)");
    assert_eq!(template_names(&t).await.len(), 2);
    // Overwrite: the first one is replaced in place (same id).
    t.expect(
        Method::PUT,
        &format!("/api/v1/netboot/answer-templates/{id}"),
        Some(json!({"content": "text\n"})),
        StatusCode::OK,
        "",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "answer-template", "id": "rocky", "overwrite": true})),
            StatusCode::CREATED,
            "",
        )
        .await;
    assert_eq!(v["data"]["installed"][0]["action"], "replaced");
    assert_eq!(v["data"]["installed"][0]["id"], id);
    let (_, _, tpl) = t
        .call(Method::GET, &format!("/api/v1/netboot/answer-templates/{id}"), None)
        .await;
    assert_eq!(
        tpl["data"]["content"],
        bootlane_install::answers::presets::find("rocky").unwrap().content
    );
    assert_eq!(tpl["data"]["version"], 3);
    // The import is an event.
    let (_, _, ev) = t.call(Method::GET, "/api/v1/events", None).await;
    assert!(ev.to_string().contains("store.item.imported"), "{ev}");
}

#[tokio::test]
async fn profiles_and_netboot_overlays_import() {
    let t = logged_in(setup().await).await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "profile", "id": "local-disk-netbootxyz"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["installed"][0]["id"].as_u64().unwrap();
    let (_, _, p) = t.call(Method::GET, &format!("/api/v1/profiles/{pid}"), None).await;
    assert_eq!(p["data"]["entries"][1]["url"], "https://boot.netboot.xyz");
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "profile", "id": "local-disk-netbootxyz"})),
        StatusCode::CONFLICT,
        "exists already",
    )
    .await;
    let body = json!({"type": "netboot", "id": "debian-serial-console"});
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(body.clone()),
        StatusCode::CREATED,
        "",
    )
    .await;
    let (_, _, o) = t.call(Method::GET, "/api/v1/netboot/overlays/debian", None).await;
    assert_eq!(o["data"]["extra_args"], "console=ttyS0,115200n8", "{o}");
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(body.clone()),
        StatusCode::CONFLICT,
        "overlay already",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "netboot", "id": "debian-serial-console", "rename": "x"})),
        StatusCode::BAD_REQUEST,
        "'rename'",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "netboot", "id": "debian-serial-console", "overwrite": true})),
            StatusCode::CREATED,
            "",
        )
        .await;
    assert_eq!(v["data"]["installed"][0]["action"], "replaced");
}

#[tokio::test]
async fn a_changed_item_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = item_json("answer-template", "ks", "KS", kickstart("text\n"));
    let mut tampered = item_json("answer-template", "tampered", "Tampered", kickstart("text\n"));
    write_source(dir.path(), &[good.clone(), tampered.clone()]);
    // The item file changes after the index was written (its own sha256 updated too).
    tampered["content"]["template"] = "text\nrootpw --plaintext evil\n".into();
    tampered["sha256"] = content_sha256(&tampered["content"]).into();
    std::fs::write(
        dir.path().join("items/answer-template/tampered.json"),
        tampered.to_string(),
    )
    .unwrap();
    let d = dir.path().to_path_buf();
    let t = logged_in(setup_with(move |c| c.community.dir = Some(d)).await).await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "answer-template", "id": "tampered"})),
        StatusCode::BAD_GATEWAY,
        "the index says",
    )
    .await;
    // The item's own sha256 left stale: refused as well.
    tampered["sha256"] = good["sha256"].clone();
    std::fs::write(
        dir.path().join("items/answer-template/tampered.json"),
        tampered.to_string(),
    )
    .unwrap();
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "answer-template", "id": "tampered"})),
        StatusCode::BAD_GATEWAY,
        "changed or corrupted",
    )
    .await;
    assert!(template_names(&t).await.is_empty());
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "answer-template", "id": "ks", "source": "builtin"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    assert_eq!(template_names(&t).await, ["KS"]);
}

fn multipart(parts: &[(&str, &str)]) -> (String, String) {
    let b = "XbOuNdArYx";
    let mut body = String::new();
    for (name, value) in parts {
        body.push_str(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"{name}\"{}\r\n\r\n{value}\r\n",
            if *name == "file" {
                "; filename=\"item.json\""
            } else {
                ""
            }
        ));
    }
    body.push_str(&format!("--{b}--\r\n"));
    (format!("multipart/form-data; boundary={b}"), body)
}

async fn upload(t: &T, parts: &[(&str, &str)]) -> (StatusCode, Value) {
    let (ct, body) = multipart(parts);
    let mut req = t.request(Method::POST, "/api/v1/store/import-local", None);
    *req.body_mut() = body.into();
    req.headers_mut().insert(header::CONTENT_TYPE, ct.parse().unwrap());
    let (s, _, v) = t.raw(req).await;
    (s, v)
}

#[tokio::test]
async fn local_bundles_get_the_same_checks() {
    let t = logged_in(setup().await).await;
    let good = item_json("answer-template", "mine", "Mine", kickstart("text\n"));
    let mut bad = good.clone();
    bad["content"]["template"] = "other\n".into();
    let (s, v) = upload(&t, &[("file", &bad.to_string())]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(is_error(&v, "sha256"), "{v}");
    assert!(template_names(&t).await.is_empty());
    let (s, v) = upload(&t, &[("file", "not json")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = upload(&t, &[("file", &good.to_string())]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["data"]["source"], "local");
    let (s, v) = upload(&t, &[("file", &good.to_string())]).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (s, v) = upload(&t, &[("rename", "Mine 2"), ("file", &good.to_string())]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = upload(&t, &[("overwrite", "true"), ("file", &good.to_string())]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["data"]["installed"][0]["action"], "replaced");
    assert_eq!(template_names(&t).await, ["Mine", "Mine 2"]);
    let (s, v) = upload(&t, &[("rename", "x")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(is_error(&v, "'file'"), "{v}");
}

#[tokio::test]
async fn a_failing_http_source_is_reported_and_hides_nothing() {
    let t = logged_in(
        setup_with(|c| {
            c.community.sources.push(SourceConfig {
                name: "down".into(),
                url: "http://127.0.0.1:9/catalog".into(),
            });
            // A loopback port nobody listens on: allowed, so the source is really down.
            c.outbound.allow_loopback = true;
        })
        .await,
    )
    .await;
    let v = t
        .expect(Method::GET, "/api/v1/store/catalog", None, StatusCode::OK, "")
        .await;
    let d = &v["data"];
    assert!(d["total"].as_u64().unwrap() >= 20, "{d}");
    assert_eq!(d["sources"][1]["name"], "down");
    assert_eq!(d["sources"][1]["ok"], false);
    assert!(
        d["sources"][1]["error"].as_str().unwrap().contains("127.0.0.1:9"),
        "{d}"
    );
    t.expect(
        Method::GET,
        "/api/v1/store/catalog?source=down",
        None,
        StatusCode::BAD_GATEWAY,
        "\"down\"",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "profile", "id": "x", "source": "down"})),
        StatusCode::BAD_GATEWAY,
        "\"down\"",
    )
    .await;
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "profile", "id": "local-disk-netbootxyz"})),
        StatusCode::CREATED,
        "",
    )
    .await;
}

#[tokio::test]
async fn an_http_source_serves_imports_and_its_index_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    write_source(
        dir.path(),
        &[item_json("answer-template", "remote", "Remote", kickstart("text\n"))],
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().nest_service("/cat", tower_http::services::ServeDir::new(dir.path()));
    let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let t = logged_in(
        setup_with(move |c| {
            c.community.sources.push(SourceConfig {
                name: "lab".into(),
                url: format!("http://{addr}/cat"),
            });
            // The test source is on loopback.
            c.outbound.allow_loopback = true;
        })
        .await,
    )
    .await;
    let v = t
        .expect(
            Method::GET,
            "/api/v1/store/catalog?source=lab",
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["items"][0]["id"], "remote");
    assert_eq!(v["data"]["items"][0]["source"], "lab");
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "answer-template", "id": "remote"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    assert_eq!(v["data"]["source"], "lab");
    // The index is cached: with the server gone the listing still has the source...
    server.abort();
    let _ = server.await;
    let v = t
        .expect(Method::GET, "/api/v1/store/catalog", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["sources"][1]["ok"], true, "{v}");
    // ...but items are fetched fresh: a 502 naming the source.
    t.expect(
        Method::GET,
        "/api/v1/store/items/answer-template/remote",
        None,
        StatusCode::BAD_GATEWAY,
        "\"lab\"",
    )
    .await;
}

#[tokio::test]
async fn store_routes_need_a_session() {
    let t = setup().await;
    let (s, _, v) = t.call(Method::GET, "/api/v1/store/catalog", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{v}");
}

/// Every built-in item installs on a fresh server (templates render, scripts compile as
/// templates, profiles validate, overlays name real distributions); baselines reuse the
/// identical scripts imported before them.
#[tokio::test]
async fn every_builtin_item_imports() {
    let t = logged_in(setup().await).await;
    let v = t
        .expect(Method::GET, "/api/v1/store/catalog?size=1000", None, StatusCode::OK, "")
        .await;
    for i in v["data"]["items"].as_array().unwrap() {
        let (s, _, r) = t
            .call(
                Method::POST,
                "/api/v1/store/import",
                Some(json!({"type": i["type"], "id": i["id"]})),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{}/{}: {r}", i["type"], i["id"]);
        if i["type"] == "baseline" {
            let inst = r["data"]["installed"].as_array().unwrap();
            assert_eq!(inst.last().unwrap()["kind"], "baseline");
            assert!(inst[..inst.len() - 1].iter().all(|x| x["action"] == "reused"), "{r}");
        }
    }
    let (_, _, b) = t.call(Method::GET, "/api/v1/baselines", None).await;
    assert!(b.to_string().contains("Debian base"), "{b}");
}

#[tokio::test]
async fn baselines_bring_their_scripts_and_clashes_write_nothing() {
    let t = logged_in(setup().await).await;
    // A different script under the name the baseline's first script uses.
    t.expect(
        Method::POST,
        "/api/v1/scripts",
        Some(json!({"name": "Install SSH authorized keys", "type": "sh", "content": "echo mine\n"})),
        StatusCode::CREATED,
        "",
    )
    .await;
    let body = json!({"type": "baseline", "id": "rhel-base"});
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(body.clone()),
        StatusCode::CONFLICT,
        "\"Install SSH authorized keys\"",
    )
    .await;
    let (_, _, s) = t.call(Method::GET, "/api/v1/scripts", None).await;
    assert_eq!(s["data"]["total"], 1, "nothing written: {s}");
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "baseline", "id": "rhel-base", "overwrite": true, "rename": "RHEL (lab)"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let inst = v["data"]["installed"].as_array().unwrap();
    assert_eq!(inst.len(), 4, "{v}");
    assert_eq!(inst[0]["action"], "replaced");
    assert_eq!(inst[1]["action"], "created");
    assert_eq!(inst[3]["name"], "RHEL (lab)");
    let bid = inst[3]["id"].as_u64().unwrap();
    let (_, _, b) = t.call(Method::GET, &format!("/api/v1/baselines/{bid}"), None).await;
    assert_eq!(b["data"]["os_filter"]["family"], "rhel", "{b}");
    assert_eq!(b["data"]["variables"]["timezone"], "Etc/UTC", "{b}");
    let ids: Vec<u64> = inst[..3].iter().map(|x| x["id"].as_u64().unwrap()).collect();
    assert_eq!(b["data"]["script_ids"], json!(ids));
    // A script alone: clash, then rename.
    t.expect(
        Method::POST,
        "/api/v1/store/import",
        Some(json!({"type": "script", "id": "dnf-upgrade"})),
        StatusCode::CONFLICT,
        "exists already",
    )
    .await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/store/import",
            Some(json!({"type": "script", "id": "dnf-upgrade", "rename": "dnf upgrade (copy)"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    assert_eq!(v["data"]["installed"][0]["kind"], "script");
}
