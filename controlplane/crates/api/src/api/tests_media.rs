//! Router tests of the file and bootloader APIs, with the shared client of
//! [`super::test_support`]. States with another config or a simulated full disk replace
//! the client's router (`T::app`).

use std::{path::PathBuf, sync::Arc};

use axum::{
    body::Body,
    http::{header, Method, Request, StatusCode},
};
use serde_json::{json, Value};

use super::test_support::{is_error_envelope, setup, T};
use bootlane_config::config::Config;
use bootlane_media::media::files::FileService;

pub(super) const BOUNDARY: &str = "bootlane-test-boundary";

/// A multipart body: text parts `(name, value)`, then the file part (when given).
pub(super) fn multipart(texts: &[(&str, &str)], file: Option<(&str, &[u8])>) -> Vec<u8> {
    let mut b = Vec::new();
    for (k, v) in texts {
        b.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").as_bytes(),
        );
    }
    if let Some((name, data)) = file {
        b.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        b.extend_from_slice(data);
        b.extend_from_slice(b"\r\n");
    }
    b.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    b
}

fn upload_req(t: &T, body: Body, len: Option<usize>) -> Request<Body> {
    let mut r = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/files/upload")
        .header(
            header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={BOUNDARY}"),
        );
    if let Some(len) = len {
        r = r.header(header::CONTENT_LENGTH, len);
    }
    if let Some(c) = &t.cookie {
        r = r.header(header::COOKIE, c);
    }
    r.body(body).unwrap()
}

async fn upload(t: &T, texts: &[(&str, &str)], file: Option<(&str, &[u8])>) -> (StatusCode, Value) {
    let body = multipart(texts, file);
    let len = body.len();
    let (s, _, v) = t.raw(upload_req(t, Body::from(body), Some(len))).await;
    (s, v)
}

async fn boot_root(t: &T) -> PathBuf {
    let (s, _, v) = t.call(Method::GET, "/api/v1/files/root", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["data"]["total_bytes"].as_u64().unwrap() >= v["data"]["free_bytes"].as_u64().unwrap());
    PathBuf::from(v["data"]["path"].as_str().unwrap())
}

fn entries(v: &Value) -> Vec<(String, String)> {
    v["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn dir_names(p: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A logged-in client whose router runs on a state changed by `f` (config first).
async fn custom(config: Config, f: impl FnOnce(&mut super::AppState)) -> T {
    let mut t = setup().await;
    let (mut state, _) = super::test_support::state(config).await;
    f(&mut state);
    t.app = super::router(state);
    t.login().await;
    t
}

#[tokio::test]
async fn files_list_upload_delete_with_events() {
    let mut t = setup().await;
    let (s, _, _) = t.call(Method::GET, "/api/v1/files", None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    t.login().await;
    let root = boot_root(&t).await;
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("a.txt"), b"abc").unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    let (s, _, v) = t.call(Method::GET, "/api/v1/files", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        entries(&v),
        [("a.txt", "file"), ("link", "symlink"), ("sub", "dir")].map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    let a = &v["data"]["entries"][0];
    assert_eq!(a["size"], 3);
    assert!(a.get("sha256").is_none());
    assert!(time::OffsetDateTime::parse(
        a["modified"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339
    )
    .is_ok());
    let (_, _, v) = t.call(Method::GET, "/api/v1/files?sha256=true", None).await;
    assert_eq!(
        v["data"]["entries"][0]["sha256"],
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );

    // Upload into sub/, then the same name again: 409 without overwrite.
    let (s, v) = upload(&t, &[("dir", "sub"), ("overwrite", "false")], Some(("x.iso", b"ISO!"))).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(
        (&v["data"]["path"], &v["data"]["size"]),
        (&json!("sub/x.iso"), &json!(4))
    );
    assert_eq!(std::fs::read(root.join("sub/x.iso")).unwrap(), b"ISO!");
    let (s, v) = upload(&t, &[("dir", "sub")], Some(("x.iso", b"other"))).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert!(v["error"].as_str().unwrap().contains("overwrite=true"));
    let (s, v) = upload(&t, &[("dir", "sub"), ("overwrite", "true")], Some(("x.iso", b"other"))).await;
    assert_eq!((s, &v["data"]["replaced"]), (StatusCode::CREATED, &json!(true)), "{v}");
    assert_eq!(dir_names(&root.join("sub")), ["x.iso"]);
    let (_, _, v) = t.call(Method::GET, "/api/v1/files?path=sub/", None).await;
    assert_eq!(v["data"]["path"], "sub");

    // Bad forms.
    let (s, v) = upload(&t, &[("dir", "sub")], None).await;
    assert!(
        s == StatusCode::BAD_REQUEST && v["error"].as_str().unwrap().contains("'file'"),
        "{v}"
    );
    let (s, v) = upload(&t, &[("overwrite", "maybe")], Some(("y", b"y"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, _) = upload(&t, &[("dir", "nodir")], Some(("y", b"y"))).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = upload(&t, &[], Some(("../y", b"y"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, v) = upload(&t, &[], Some((&"n".repeat(255), b"y"))).await;
    assert_eq!(s, StatusCode::CREATED, "a 255-byte name is fine: {v}");
    let (s, v) = upload(&t, &[], Some((&"n".repeat(256), b"y"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let (s, _, v) = t
        .raw({
            let mut r = upload_req(&t, Body::from("{}"), None);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
            r
        })
        .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{v}");
    assert!(dir_names(&root).iter().all(|n| !n.contains(".upload")));
    std::fs::remove_file(root.join("n".repeat(255))).unwrap();

    // Delete: non-empty needs recursive; never the root.
    let (s, _, v) = t.call(Method::DELETE, "/api/v1/files?path=sub", None).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (s, _, v) = t.call(Method::DELETE, "/api/v1/files?path=", None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["error"].as_str().unwrap().contains("boot root"));
    let (s, _, _) = t.call(Method::DELETE, "/api/v1/files?path=link", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(root.join("a.txt").exists(), "deleting a symlink keeps its target");
    let (s, _, v) = t
        .call(Method::DELETE, "/api/v1/files?path=sub&recursive=true", None)
        .await;
    assert_eq!((s, &v["data"]["recursive"]), (StatusCode::OK, &json!(true)), "{v}");
    let (s, _, _) = t.call(Method::DELETE, "/api/v1/files?path=sub", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Each write is an event (and so an audit entry).
    let (_, _, v) = t.call(Method::GET, "/api/v1/events?kind=file.", None).await;
    let kinds: Vec<&str> = v["data"]["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "file.uploaded").count(), 3, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "file.deleted").count(), 2, "{kinds:?}");
}

#[tokio::test]
async fn hostile_paths_are_400_naming_the_problem() {
    let mut t = setup().await;
    t.login().await;
    let root = boot_root(&t).await;
    let outside = root.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"s").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    // Query values as sent on the wire (decoded once by the server).
    let cases = [
        ("..", "'..'"),
        ("..%2Fsecret", "'..'"),
        ("sub%2F..%2F..", "'..'"),
        ("%2Fetc%2Fpasswd", "absolute"),
        ("a%00b", "NUL"),
        ("%252e%252e%252fsecret", "percent-encoded"),
        ("%255C", "percent-encoded"),
        ("..%5Csecret", "backslash"),
        ("bad%FFname", "UTF-8"),
        ("escape", "symlink"),
        ("escape%2Fsecret", "symlink"),
    ];
    for (q, problem) in cases {
        for (m, path) in [
            (Method::GET, format!("/api/v1/files?path={q}")),
            (Method::DELETE, format!("/api/v1/files?path={q}%2Fx")),
        ] {
            let (s, _, v) = t.call(m.clone(), &path, None).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{m} {path}: {v}");
            assert!(is_error_envelope(&v));
            assert!(
                v["error"].as_str().unwrap().contains(problem),
                "{path}: {v} should name {problem}"
            );
        }
    }
    let (s, v) = upload(&t, &[("dir", "escape")], Some(("x", b"x"))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(!outside.join("x").exists());
    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/bootloader/check-file",
            Some(json!({"path": "escape/secret"})),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(outside.join("secret").exists());
}

#[tokio::test]
async fn the_json_limit_stays_everywhere_but_the_upload() {
    let mut t = setup().await;
    t.login().await;
    let root = boot_root(&t).await;
    let big = json!({"path": "x".repeat(2 << 20)}).to_string();
    for with_length in [true, false] {
        let mut r = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/bootloader/check-file")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::COOKIE, t.cookie.clone().unwrap());
        if with_length {
            r = r.header(header::CONTENT_LENGTH, big.len());
        }
        let (s, _, v) = t.raw(r.body(Body::from(big.clone())).unwrap()).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
        assert!(is_error_envelope(&v));
    }
    let data = vec![7u8; 2 << 20];
    let (s, v) = upload(&t, &[], Some(("two-mib.bin", &data))).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(std::fs::metadata(root.join("two-mib.bin")).unwrap().len(), 2 << 20);
    // Streamed without a length (chunked) too.
    let body = multipart(&[], Some(("chunked.bin", &data)));
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body.chunks(64 << 10).map(|c| Ok(c.to_vec())).collect();
    let (s, _, v) = t
        .raw(upload_req(&t, Body::from_stream(futures::stream::iter(chunks)), None))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

#[tokio::test]
async fn a_cut_off_upload_leaves_nothing() {
    let mut t = setup().await;
    t.login().await;
    let root = boot_root(&t).await;
    let body = multipart(&[], Some(("cut.bin", &vec![1u8; 1 << 20])));
    let mut chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body[..600 << 10].chunks(64 << 10).map(|c| Ok(c.to_vec())).collect();
    chunks.push(Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "client gone",
    )));
    let (s, _, v) = t
        .raw(upload_req(&t, Body::from_stream(futures::stream::iter(chunks)), None))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert!(
        dir_names(&root).iter().all(|n| !n.contains("cut.bin")),
        "{:?}",
        dir_names(&root)
    );
}

#[tokio::test]
async fn upload_limits_413_and_507() {
    let mut config = Config::default();
    config.files.max_upload_bytes = 1000;
    let t = custom(config, |_| {}).await;
    let root = boot_root(&t).await;
    let (s, v) = upload(&t, &[], Some(("big.bin", &[0u8; 1001]))).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    assert!(v["error"].as_str().unwrap().contains("max_upload_bytes"));
    // Without a length the limit is enforced while writing.
    let body = multipart(&[], Some(("big.bin", &[0u8; 5000])));
    let (s, _, v) = t.raw(upload_req(&t, Body::from(body), None)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{v}");
    let (s, v) = upload(&t, &[], Some(("ok.bin", &[0u8; 1000]))).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(dir_names(&root), ["ok.bin"]);

    // A volume with 1 MiB free: refused before writing when the length says so, and
    // while writing (past the first space check) when it does not; nothing left behind.
    let t = custom(Config::default(), |st| {
        st.files = FileService::with_free_space(
            st.settings.netboot_watch(),
            st.config.files.clone(),
            st.events.clone(),
            Arc::new(|_: &std::path::Path| Ok(1 << 20)),
        );
    })
    .await;
    let root = boot_root(&t).await;
    let data = vec![0u8; 9 << 20];
    let (s, v) = upload(&t, &[], Some(("full.bin", &data))).await;
    assert_eq!(s, StatusCode::INSUFFICIENT_STORAGE, "{v}");
    assert!(is_error_envelope(&v));
    let (s, _, v) = t
        .raw(upload_req(
            &t,
            Body::from(multipart(&[], Some(("full.bin", &data)))),
            None,
        ))
        .await;
    assert_eq!(s, StatusCode::INSUFFICIENT_STORAGE, "{v}");
    assert!(dir_names(&root).is_empty(), "{:?}", dir_names(&root));
}

#[tokio::test]
async fn bootloader_files_and_check() {
    let mut t = setup().await;
    t.login().await;
    let src = std::path::Path::new("/usr/lib/ipxe");
    if !src.join("ipxe.efi").exists() {
        eprintln!("skipping: /usr/lib/ipxe has no ipxe.efi (apt install ipxe)");
        return;
    }
    let root = boot_root(&t).await;
    for f in ["undionly.kpxe", "ipxe.efi", "snponly.efi"] {
        std::fs::copy(src.join(f), root.join(f)).unwrap();
    }
    // The wrong one: an x86-64 EFI build at the AArch64 entries (11, and 19 by URL).
    std::fs::copy(src.join("ipxe.efi"), root.join("grubaa64.efi")).unwrap();
    std::fs::copy(src.join("ipxe.efi"), root.join("ipxe-arm64.efi")).unwrap();

    let (s, _, v) = t.call(Method::GET, "/api/v1/bootloader/files", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let files = v["data"].as_array().unwrap();
    let efi = files.iter().find(|f| f["path"] == "ipxe.efi").unwrap();
    assert_eq!(
        (&efi["kind"], &efi["machine"], &efi["machine_name"]),
        (&json!("efi_application"), &json!(0x8664), &json!("x86_64"))
    );
    assert_eq!(efi["arches"], json!([7, 9, 16]));
    assert!(efi["ipxe_version"].as_str().is_some_and(|s| s.contains('.')), "{efi}");
    assert_eq!(efi["sha256"].as_str().unwrap().len(), 64);
    let bios = files.iter().find(|f| f["path"] == "undionly.kpxe").unwrap();
    assert_eq!((&bios["kind"], &bios["arches"]), (&json!("bios_pxe"), &json!([0])));

    let (s, _, v) = t.call(Method::GET, "/api/v1/bootloader/check", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["data"]["ok"], false);
    let status = |arch: u64| {
        v["data"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["arch"] == arch)
            .map(|e| (e["status"].as_str().unwrap().to_owned(), e["fix"].clone()))
            .unwrap()
    };
    assert_eq!(status(0).0, "ok");
    assert_eq!(status(7).0, "ok");
    assert_eq!(status(16).0, "ok");
    assert_eq!(status(6).0, "missing");
    let (st, fix) = status(11);
    assert_eq!(st, "wrong_kind");
    assert!(fix.as_str().unwrap().contains("aarch64"), "{fix}");
    assert_eq!(status(19).0, "wrong_kind");

    let (s, _, v) = t
        .call(
            Method::POST,
            "/api/v1/bootloader/check-file",
            Some(json!({"path": "snponly.efi"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["data"]["kind"], &v["data"]["machine"]),
        (&json!("efi_application"), &json!(0x8664))
    );
    let (s, _, _) = t
        .call(
            Method::POST,
            "/api/v1/bootloader/check-file",
            Some(json!({"path": "nope.efi"})),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _, _) = t
        .call(
            Method::POST,
            "/api/v1/bootloader/check-file",
            Some(json!({"path": "../x"})),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[test]
fn the_document_describes_the_media_types_under_their_own_names() {
    // utoipa keys schemas by type name; a second `EntryType` silently replaced this one.
    let doc = serde_json::to_value(super::openapi_doc()).unwrap();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["FileType"]["enum"], json!(["file", "dir", "symlink", "other"]));
    assert!(schemas["BootKind"]["enum"]
        .as_array()
        .unwrap()
        .contains(&json!("bios_pxe")));
    let upload = &doc["paths"]["/api/v1/files/upload"]["post"];
    assert!(
        upload["requestBody"]["content"]["multipart/form-data"].is_object(),
        "{upload}"
    );
    assert!(upload["responses"]["507"].is_object());
}

/// Sends `body` as a multipart upload to `path` over a real TCP connection to `t`'s
/// router, writing and reading at once as curl does; answers everything read back, or
/// the first error: like curl, a send error (the server closed on unread data, the
/// kernel reset the connection) counts even when some answer arrived.
async fn upload_over_tcp(t: &T, path: &str, body: Vec<u8>) -> Result<String, std::io::Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let app = t.app.clone();
    tokio::spawn(
        async move { axum::serve(l, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).await },
    );
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: {}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        t.cookie.as_deref().unwrap_or_default(),
        body.len()
    );
    let writer = tokio::spawn(async move {
        wr.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(64 << 10) {
            wr.write_all(chunk).await?;
        }
        wr.flush().await?;
        // Kept open: a half-closed request is aborted by hyper (curl never half-closes).
        Ok::<_, std::io::Error>(wr)
    });
    let mut answer = Vec::new();
    let read = rd.read_to_end(&mut answer).await;
    // With the answer read and its connection gone, the writer has ended either way.
    writer.await.unwrap()?;
    read.map(|_| String::from_utf8_lossy(&answer).into_owned())
}

/// An upload refused after its first part (a hostile `dir`, an unknown part) still
/// gets its 400 with the message over a real connection: the server reads and
/// discards the rest of the body instead of closing on unread data, which reset the
/// connection and lost the answer (`curl: (55) Send failure: Broken pipe` in CI).
#[tokio::test]
async fn regression_refused_upload_answer_reaches_the_client() {
    let mut t = setup().await;
    t.login().await;
    // Larger than loopback's socket buffers, so an unread rest cannot hide in them.
    let data = vec![7u8; 32 << 20];
    for (path, texts, needle) in [
        ("/api/v1/files/upload", &[("dir", "../escape")][..], "..".to_string()),
        (
            "/api/v1/files/upload",
            &[("bogus", "x")][..],
            "unknown part".to_string(),
        ),
        (
            "/api/v1/os-images/upload",
            &[("colour", "x")][..],
            "unknown part".to_string(),
        ),
    ] {
        let body = multipart(texts, Some(("x.bin", &data)));
        let answer = upload_over_tcp(&t, path, body)
            .await
            .unwrap_or_else(|e| panic!("{path} {texts:?}: {e}"));
        assert!(answer.starts_with("HTTP/1.1 400"), "{path} {texts:?}: {answer}");
        assert!(answer.contains(&needle), "{path} {texts:?}: {answer}");
    }
}
