//! Router tests of the OS image API (issue 9 "OS images"): a Debian-netinst-shaped ISO
//! (built with xorriso by [`crate::media::iso::tests::debian_iso`]; skipped with a message
//! when xorriso is missing) uploaded through `POST /os-images/upload`, polled until
//! `ready` with its kernel and initrd, with its progress events; list, edit, delete.

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};
use serde_json::{json, Value};

use super::test_support::{setup, T};
use super::tests_media::{multipart, BOUNDARY};

async fn upload(t: &T, texts: &[(&str, &str)], name: &str, data: &[u8]) -> (StatusCode, Value) {
    let body = multipart(texts, Some((name, data)));
    let len = body.len();
    // Streamed in 8 KiB chunks, as a client sends it.
    let chunks: Vec<Result<axum::body::Bytes, std::io::Error>> = body
        .chunks(8 << 10)
        .map(|c| Ok(axum::body::Bytes::copy_from_slice(c)))
        .collect();
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/os-images/upload")
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .header(header::CONTENT_LENGTH, len)
        .header(header::COOKIE, t.cookie.clone().unwrap())
        // A pause between chunks, as over a network: the multipart parser hands on what
        // has arrived, so an in-memory body would come out as one chunk.
        .body(Body::from_stream(futures::StreamExt::then(
            futures::stream::iter(chunks),
            |c| async move {
                tokio::task::yield_now().await;
                c
            },
        )))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    (s, v)
}

async fn wait_settled(t: &T, id: u64) -> Value {
    for _ in 0..500 {
        let (s, _, v) = t.call(Method::GET, &format!("/api/v1/os-images/{id}"), None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if matches!(v["data"]["state"].as_str(), Some("ready" | "failed")) {
            return v["data"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("image {id} never settled");
}

#[tokio::test]
async fn an_uploaded_debian_iso_becomes_ready_with_its_kernel_and_initrd() {
    let dir = tempfile::tempdir().unwrap();
    let Some(iso) = crate::media::iso::tests::debian_iso(dir.path()) else {
        return;
    };
    let data = std::fs::read(&iso).unwrap();
    let mut t = setup().await;
    t.login().await;
    let mut sub = t.state.events.subscribe();
    let (s, v) = upload(
        &t,
        &[("name", "Debian 12 netinst")],
        "debian-12.5.0-amd64-netinst.iso",
        &data,
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let img = &v["data"];
    assert!(
        matches!(img["state"].as_str(), Some("uploaded" | "inspecting")),
        "{img}"
    );
    assert_eq!(img["name"], "Debian 12 netinst");
    assert_eq!(img["file_name"], "debian-12.5.0-amd64-netinst.iso");
    assert_eq!(img["size"], data.len());
    let want = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
    assert_eq!(img["sha256"], want.as_str());
    let id = img["id"].as_u64().unwrap();

    let img = wait_settled(&t, id).await;
    assert_eq!(img["state"], "ready", "{img}");
    let d = &img["detection"];
    assert_eq!(d["family"], "debian");
    assert_eq!(d["version"], "12.5.0");
    assert_eq!(d["arch"], "x86_64");
    assert_eq!(d["kernel"], "install.amd/vmlinuz");
    assert_eq!(d["initrds"], json!(["install.amd/initrd.gz"]));
    assert_eq!(d["generic"], false);
    // The ISO is on disk under the boot root.
    let (_, _, root) = t.call(Method::GET, "/api/v1/files/root", None).await;
    let path = std::path::Path::new(root["data"]["path"].as_str().unwrap()).join(img["path"].as_str().unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), data);
    // Downloadable whole and by range.
    let (s, h, _) = t.call(Method::GET, &format!("/api/v1/os-images/{id}/file"), None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-length"], data.len().to_string().as_str());
    assert!(h["content-disposition"]
        .to_str()
        .unwrap()
        .contains("debian-12.5.0-amd64-netinst.iso"));
    let mut req = t.request(Method::GET, &format!("/api/v1/os-images/{id}/file"), None);
    req.headers_mut().insert("range", "bytes=32769-32773".parse().unwrap());
    let resp = t.send(req).await;
    assert_eq!(resp.status(), StatusCode::PARTIAL_CONTENT);
    let part = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&part[..], b"CD001", "the ISO 9660 volume descriptor's identifier");
    // Reprocess: inspecting now, ready again after.
    let v = t
        .expect(
            Method::POST,
            &format!("/api/v1/os-images/{id}/reprocess"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert!(
        matches!(v["data"]["state"].as_str(), Some("inspecting" | "ready")),
        "{v}"
    );
    assert_eq!(wait_settled(&t, id).await["state"], "ready");
    t.expect(
        Method::POST,
        "/api/v1/os-images/999999/reprocess",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;

    // Progress events (5 % steps of the announced length), the upload and the ready.
    let mut kinds = Vec::new();
    let mut last_percent = 0;
    while let Ok(Ok(e)) = tokio::time::timeout(std::time::Duration::from_millis(200), sub.rx.recv()).await {
        if e.kind == "os_image.upload.progress" {
            last_percent = e.data["percent"].as_u64().unwrap();
        }
        kinds.push(e.kind.clone());
    }
    let progress = kinds.iter().filter(|k| *k == "os_image.upload.progress").count();
    assert!(progress >= 10, "{progress} progress events: {kinds:?}");
    assert!(last_percent >= 95, "last progress {last_percent} %");
    assert!(kinds.contains(&"os_image.uploaded".to_string()));
    assert!(kinds.contains(&"os_image.ready".to_string()));

    // The list, a search, an edit, a delete that removes the file.
    let (_, _, v) = t.call(Method::GET, "/api/v1/os-images?q=bookworm", None).await;
    assert_eq!(v["data"]["total"], 1, "{v}");
    let (_, _, v) = t.call(Method::GET, "/api/v1/os-images?q=fedora", None).await;
    assert_eq!(v["data"]["total"], 0);
    let v = t
        .expect(
            Method::PUT,
            &format!("/api/v1/os-images/{id}"),
            Some(json!({"description": "lab installer"})),
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["description"], "lab installer");
    t.expect(
        Method::PUT,
        &format!("/api/v1/os-images/{id}"),
        Some(json!({"name": "x\u{7}"})),
        StatusCode::BAD_REQUEST,
        "'name'",
    )
    .await;
    t.expect(
        Method::DELETE,
        &format!("/api/v1/os-images/{id}"),
        None,
        StatusCode::OK,
        "",
    )
    .await;
    assert!(!path.exists());
    t.expect(
        Method::GET,
        &format!("/api/v1/os-images/{id}"),
        None,
        StatusCode::NOT_FOUND,
        "no OS image",
    )
    .await;
}

#[tokio::test]
async fn a_file_that_is_not_an_iso_fails_with_a_reason_and_uploads_need_a_file_part() {
    let mut t = setup().await;
    t.login().await;
    let (s, v) = upload(&t, &[("name", "notes")], "notes.iso", &[b'x'; 20_000]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let img = wait_settled(&t, v["data"]["id"].as_u64().unwrap()).await;
    assert_eq!(img["state"], "failed");
    assert!(
        img["reason"].as_str().unwrap().contains("not an ISO 9660 or UDF image"),
        "{img}"
    );
    // No file part: 400 naming it.
    let body = multipart(&[("name", "x")], None);
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/os-images/upload")
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .header(header::COOKIE, t.cookie.clone().unwrap())
        .body(Body::from(body))
        .unwrap();
    let (s, _, v) = t.raw(req).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(v["error"].as_str().unwrap().contains("'file'"), "{v}");
}

#[tokio::test]
async fn import_copies_or_moves_an_iso_from_the_import_directory_only() {
    let src = tempfile::tempdir().unwrap();
    let Some(iso) = crate::media::iso::tests::debian_iso(src.path()) else {
        return;
    };
    let data = std::fs::read(&iso).unwrap();
    let name = iso.file_name().unwrap().to_string_lossy().into_owned();
    // Import off by default: a clear 400.
    let mut off = setup().await;
    off.login().await;
    off.expect(
        Method::POST,
        "/api/v1/os-images/import",
        Some(json!({"path": name})),
        StatusCode::BAD_REQUEST,
        "import_dir",
    )
    .await;

    let dir = src.path().to_path_buf();
    let mut t = crate::api::test_support::setup_with(move |c| c.files.import_dir = Some(dir)).await;
    t.login().await;
    let v = t
        .expect(
            Method::POST,
            "/api/v1/os-images/import",
            Some(json!({"path": name, "name": "imported"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let id = v["data"]["id"].as_u64().unwrap();
    assert_eq!(
        v["data"]["sha256"],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&data)).as_str()
    );
    let img = wait_settled(&t, id).await;
    assert_eq!(
        (img["state"].as_str(), img["detection"]["kernel"].as_str()),
        (Some("ready"), Some("install.amd/vmlinuz")),
        "{img}"
    );
    assert!(iso.exists(), "a copy keeps the original");
    let v = t
        .expect(
            Method::POST,
            "/api/v1/os-images/import",
            Some(json!({"path": name, "mode": "move"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    wait_settled(&t, v["data"]["id"].as_u64().unwrap()).await;
    assert!(!iso.exists(), "a move removes the original");
    for (path, status, needle) in [
        ("../etc/passwd", StatusCode::BAD_REQUEST, ".."),
        ("/etc/passwd", StatusCode::BAD_REQUEST, ""),
        ("missing.iso", StatusCode::NOT_FOUND, "missing.iso"),
    ] {
        t.expect(
            Method::POST,
            "/api/v1/os-images/import",
            Some(json!({"path": path})),
            status,
            needle,
        )
        .await;
    }
}
