//! Router tests of the OS image API: a Debian-netinst-shaped ISO (built with xorriso by
//! [`bootlane_media::media::iso::test_support::debian_iso`]; skipped with a message when xorriso is
//! missing) uploaded through `POST /os-images/upload`, polled until `ready` with its
//! kernel and initrd, with its progress events; list, edit, delete.

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

/// Polls image `id` until its state passes `done`; answers the image.
async fn wait_for(t: &T, id: u64, what: &str, done: impl Fn(&str) -> bool) -> Value {
    for _ in 0..500 {
        let (s, _, v) = t.call(Method::GET, &format!("/api/v1/os-images/{id}"), None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        if done(v["data"]["state"].as_str().unwrap_or_default()) {
            return v["data"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("image {id} never became {what}");
}

async fn wait_settled(t: &T, id: u64) -> Value {
    wait_for(t, id, "ready or failed", |s| matches!(s, "ready" | "failed")).await
}

#[tokio::test]
async fn an_uploaded_debian_iso_becomes_ready_with_its_kernel_and_initrd() {
    let dir = tempfile::tempdir().unwrap();
    let Some(iso) = bootlane_media::media::iso::test_support::debian_iso(dir.path()) else {
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
    // Errors are the JSON envelope: an unknown id, and an ISO gone from the disk.
    for (id, needle) in [(987_654, "987654"), (id, "missing")] {
        if needle == "missing" {
            std::fs::rename(&path, path.with_extension("moved")).unwrap();
        }
        let (s, h, v) = t.call(Method::GET, &format!("/api/v1/os-images/{id}/file"), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
        assert!(
            h["content-type"].to_str().unwrap().starts_with("application/json"),
            "{h:?}"
        );
        assert_eq!(v["success"], false, "{v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "{v}");
    }
    std::fs::rename(path.with_extension("moved"), &path).unwrap();
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
    let Some(iso) = bootlane_media::media::iso::test_support::debian_iso(src.path()) else {
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

async fn bytes(t: &T, uri: &str, range: Option<&str>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut req = Request::builder().method(Method::GET).uri(uri);
    if let Some(r) = range {
        req = req.header(header::RANGE, r);
    }
    let resp = t.send(req.body(Body::empty()).unwrap()).await;
    let (status, headers) = (resp.status(), resp.headers().clone());
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

async fn wait_state(t: &T, id: u64, want: &str) -> Value {
    wait_for(t, id, want, |s| s == want).await
}

/// Browse, a profile in one call (which mounts the image), the tree served from inside
/// the ISO (with Range, case-insensitively), the 409s while a profile boots from it,
/// extraction while mounted, then the same URLs from the extracted tree, and a delete.
#[tokio::test]
async fn an_image_is_browsed_mounted_extracted_and_made_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let Some(iso) = bootlane_media::media::iso::test_support::debian_iso(dir.path()) else {
        return;
    };
    let data = std::fs::read(&iso).unwrap();
    let mut t = setup().await;
    t.login().await;
    let (s, v) = upload(&t, &[], "debian.iso", &data).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["data"]["id"].as_u64().unwrap();
    assert_eq!(wait_settled(&t, id).await["state"], "ready");

    // Browse inside the image, and the boot root.
    let v = t
        .expect(
            Method::GET,
            &format!("/api/v1/fs/browse?image={id}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    let names: Vec<&str> = v["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [".disk", "install.amd"], "{v}");
    assert_eq!(v["data"]["parent"], Value::Null);
    let v = t
        .expect(
            Method::GET,
            &format!("/api/v1/fs/browse?image={id}&path=INSTALL.AMD/"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["parent"], "");
    let e = &v["data"]["entries"];
    assert_eq!(e[0]["name"], "initrd.gz");
    assert_eq!(e[1]["path"], "install.amd/vmlinuz");
    assert_eq!(e[1]["type"], "file");
    assert_eq!(e[1]["size"], 11);
    t.expect(
        Method::GET,
        &format!("/api/v1/fs/browse?image={id}&path=nope"),
        None,
        StatusCode::NOT_FOUND,
        "no directory",
    )
    .await;
    let v = t
        .expect(Method::GET, "/api/v1/fs/browse?path=images", None, StatusCode::OK, "")
        .await;
    assert_eq!(v["data"]["entries"][0]["name"], format!("{id}.iso"), "{v}");
    t.expect(
        Method::GET,
        "/api/v1/fs/browse?path=../etc",
        None,
        StatusCode::BAD_REQUEST,
        "",
    )
    .await;

    // Not mounted, not extracted: nothing is served under images/<id>/.
    let kernel = format!("/boot/images/{id}/install.amd/vmlinuz");
    assert_eq!(bytes(&t, &kernel, None).await.0, StatusCode::NOT_FOUND);

    // A profile in one call: the image is mounted, the entry points into its tree.
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles/from-image",
            Some(json!({"image_id": id, "extra_cmdline": "console=ttyS0"})),
            StatusCode::CREATED,
            "",
        )
        .await;
    let p = &v["data"];
    assert_eq!(p["name"], "debian-12-5-0-x86_64", "{p}");
    let e = &p["entries"][0];
    assert_eq!(e["type"], "linux");
    assert_eq!(e["kernel"], format!("images/{id}/install.amd/vmlinuz"));
    assert_eq!(e["initrds"], json!([format!("images/{id}/install.amd/initrd.gz")]));
    assert!(e["cmdline"].as_str().unwrap().ends_with("console=ttyS0"), "{e}");
    assert_eq!(p["entries"][1]["type"], "local");
    let img = t
        .expect(
            Method::GET,
            &format!("/api/v1/os-images/{id}"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(img["data"]["state"], "mounted");
    assert_eq!(img["data"]["mounted"], true);

    // Served from inside the ISO, whole, by range, case-insensitively; HEAD too.
    let (s, h, b) = bytes(&t, &kernel, None).await;
    assert_eq!((s, &b[..]), (StatusCode::OK, &b"fake kernel"[..]));
    assert_eq!(h["content-length"], "11");
    let (s, h, b) = bytes(&t, &kernel, Some("bytes=5-10")).await;
    assert_eq!((s, &b[..]), (StatusCode::PARTIAL_CONTENT, &b"kernel"[..]));
    assert_eq!(h["content-range"], "bytes 5-10/11");
    assert_eq!(
        bytes(&t, &kernel, Some("bytes=50-60")).await.0,
        StatusCode::RANGE_NOT_SATISFIABLE
    );
    let (s, _, b) = bytes(&t, &format!("/boot/images/{id}/INSTALL.AMD/initrd.gz"), None).await;
    assert_eq!((s, &b[..]), (StatusCode::OK, &b"fake initrd"[..]));
    assert_eq!(
        bytes(&t, &format!("/boot/images/{id}/install.amd/nothing"), None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );

    // A profile boots from it: no delete, no unmount (it is not extracted).
    t.expect(
        Method::DELETE,
        &format!("/api/v1/os-images/{id}"),
        None,
        StatusCode::CONFLICT,
        "debian-12-5-0-x86_64",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/os-images/{id}/unmount"),
        None,
        StatusCode::CONFLICT,
        "extract the image first",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/os-images/{id}/mount"),
        None,
        StatusCode::CONFLICT,
        "",
    )
    .await;
    t.expect(
        Method::POST,
        &format!("/api/v1/os-images/{id}/reprocess"),
        None,
        StatusCode::CONFLICT,
        "unmount",
    )
    .await;

    // Extract while mounted: back to mounted, the tree is on disk.
    let mut sub = t.state.events.subscribe();
    let v = t
        .expect(
            Method::POST,
            &format!("/api/v1/os-images/{id}/extract"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert!(
        matches!(v["data"]["state"].as_str(), Some("extracting" | "mounted")),
        "{v}"
    );
    let img = wait_state(&t, id, "mounted").await;
    assert_eq!(img["extracted"]["files"], 3, "{img}");
    assert_eq!(img["extracted"]["path"], format!("images/{id}"));
    assert_eq!(img["extract_error"], Value::Null);
    let mut kinds = Vec::new();
    while let Ok(Ok(e)) = tokio::time::timeout(std::time::Duration::from_millis(100), sub.rx.recv()).await {
        kinds.push(e.kind.clone());
    }
    assert!(kinds.contains(&"os_image.extract.progress".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"os_image.extracted".to_string()), "{kinds:?}");
    let (_, _, root) = t.call(Method::GET, "/api/v1/files/root", None).await;
    let root = std::path::PathBuf::from(root["data"]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read(root.join(format!("images/{id}/install.amd/vmlinuz"))).unwrap(),
        b"fake kernel"
    );
    assert!(std::fs::read_to_string(root.join(format!("images/{id}/.disk/info")))
        .unwrap()
        .contains("Bookworm"));
    // Now it may be unmounted: the same URL is served from the extracted tree.
    let v = t
        .expect(
            Method::POST,
            &format!("/api/v1/os-images/{id}/unmount"),
            None,
            StatusCode::OK,
            "",
        )
        .await;
    assert_eq!(v["data"]["state"], "ready");
    assert_eq!(v["data"]["mounted"], false);
    let (s, _, b) = bytes(&t, &kernel, Some("bytes=5-10")).await;
    assert_eq!((s, &b[..]), (StatusCode::PARTIAL_CONTENT, &b"kernel"[..]));
    t.expect(
        Method::POST,
        &format!("/api/v1/os-images/{id}/unmount"),
        None,
        StatusCode::CONFLICT,
        "not mounted",
    )
    .await;

    // Once the profile is gone, the image (ISO and tree) can be deleted.
    let pid = p["id"].as_u64().unwrap();
    t.expect(
        Method::DELETE,
        &format!("/api/v1/profiles/{pid}"),
        None,
        StatusCode::OK,
        "",
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
    assert!(!root.join(format!("images/{id}")).exists());
    assert!(!root.join(format!("images/{id}.iso")).exists());
}

#[test]
fn image_references_are_whole_words() {
    use super::os_images::refers_to_image as r;
    assert!(r("images/3/casper/vmlinuz", 3));
    assert!(r("url={base_url}/boot/images/3.iso", 3));
    assert!(r("root=live:{base_url}/boot/images/3 quiet", 3));
    assert!(r("/images/3", 3));
    assert!(!r("images/31/casper/vmlinuz", 3));
    assert!(!r("myimages/3/x", 3));
    assert!(!r("images/3x", 3));
}
