//! API tests (house style level b) for PXELINUX: `pxelinux.cfg/01-<mac>` and `default`
//! generated over `GET /boot/...`, and the `boot-config?format=` preview. The rendering
//! rules themselves are unit-tested in [`bootlane_boot::boot::pxelinux`].

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::test_support::{self, T};
use bootlane_config::config::Config;

async fn setup() -> T {
    let mut t = test_support::app(Config::default()).await;
    t.host = Some("10.77.0.1:8080");
    t.login().await;
    t
}

/// A profile (Debian installer by default, a local entry, an iPXE chain entry) and a host
/// with MAC 52:54:00:aa:00:01 using it; returns the host id.
async fn host_with_profile(t: &T) -> u64 {
    let v = t
        .expect(
            Method::POST,
            "/api/v1/profiles",
            Some(json!({
                "name": "d-i",
                "timeout_secs": 3,
                "entries": [
                    {"label": "Local disk", "type": "local"},
                    {"label": "Debian installer", "type": "linux", "kernel": "d-i/linux",
                     "initrds": ["d-i/initrd.gz"], "cmdline": "console=ttyS0 url={base_url}/x", "is_default": true},
                    {"label": "netboot.xyz", "type": "chain", "url": "https://boot.netboot.xyz/menu.ipxe"}
                ]
            })),
            StatusCode::CREATED,
            "",
        )
        .await;
    let pid = v["data"]["id"].as_u64().unwrap();
    let v = t
        .expect(
            Method::POST,
            "/api/v1/hosts",
            Some(json!({"name": "pxe1", "mac": "52:54:00:AA:00:01", "profile_id": pid})),
            StatusCode::CREATED,
            "",
        )
        .await;
    v["data"]["id"].as_u64().unwrap()
}

#[tokio::test]
async fn boot_config_formats() {
    let t = setup().await;
    let id = host_with_profile(&t).await;
    let path = format!("/api/v1/hosts/{id}/boot-config");
    let (s, _, ipxe) = t.call(Method::GET, &path, None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(ipxe.as_str().unwrap().starts_with("#!ipxe\n"), "{ipxe}");
    let (s, _, same) = t.call(Method::GET, &format!("{path}?format=ipxe"), None).await;
    assert_eq!((s, &same), (StatusCode::OK, &ipxe), "format=ipxe is today's answer");

    let (s, h, v) = t.call(Method::GET, &format!("{path}?format=pxelinux"), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/plain"));
    let cfg = v.as_str().unwrap();
    assert!(
        cfg.starts_with("# Bootlane: PXELINUX configuration for 52:54:00:aa:00:01 (host pxe1), profile \"d-i\".\n"),
        "{cfg}"
    );
    assert!(
        cfg.contains("UI menu.c32\nMENU TITLE Bootlane: d-i (pxe1)\nPROMPT 0\nTIMEOUT 30\nDEFAULT e2\n"),
        "{cfg}"
    );
    assert!(
        cfg.contains("LABEL e1\n  MENU LABEL Local disk\n  LOCALBOOT 0\n"),
        "{cfg}"
    );
    assert!(
        cfg.contains("LABEL e2\n  MENU LABEL Debian installer\n  MENU DEFAULT\n  LINUX d-i/linux\n  APPEND initrd=d-i/initrd.gz console=ttyS0 url=http://10.77.0.1:8080/x\n"),
        "{cfg}"
    );
    assert!(cfg.contains("# e3 \"netboot.xyz\" is left out: a chain entry"), "{cfg}");
    assert!(
        !cfg.contains("LABEL e3") && !cfg.contains("netboot.xyz/menu.ipxe"),
        "{cfg}"
    );

    // GRUB: the same menu as GRUB commands; the https chain entry is left out (GRUB
    // has no TLS).
    let (s, _, v) = t.call(Method::GET, &format!("{path}?format=grub"), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let grub = v.as_str().unwrap();
    assert!(
        grub.starts_with("# Bootlane: GRUB configuration for 52:54:00:aa:00:01 (host pxe1), profile \"d-i\".\n"),
        "{grub}"
    );
    assert!(
        grub.contains("set timeout=3\nset timeout_style=menu\nset default=e2\n"),
        "{grub}"
    );
    assert!(
        grub.contains("menuentry 'Debian installer' --id e2 {\n  echo 'Loading Debian installer'\n  linux /d-i/linux console=ttyS0 url=http://10.77.0.1:8080/x\n  initrd /d-i/initrd.gz\n}\n"),
        "{grub}"
    );
    assert!(grub.contains("# e3 \"netboot.xyz\" is left out:"), "{grub}");
    t.expect(
        Method::GET,
        &format!("{path}?format=syslinux"),
        None,
        StatusCode::BAD_REQUEST,
        "format",
    )
    .await;
    t.expect(
        Method::GET,
        "/api/v1/hosts/999/boot-config?format=pxelinux",
        None,
        StatusCode::NOT_FOUND,
        "",
    )
    .await;

    // The OpenAPI document names the parameter.
    let (_, _, doc) = t.call(Method::GET, "/api/v1/openapi.json", None).await;
    let doc = if doc["paths"].is_object() {
        doc
    } else {
        doc["data"].clone()
    };
    let params = doc["paths"]["/api/v1/hosts/{id}/boot-config"]["get"]["parameters"].to_string();
    assert!(params.contains("\"format\""), "{params}");
}

#[tokio::test]
async fn generated_files_over_http() {
    let t = setup().await;
    let id = host_with_profile(&t).await;
    let (_, _, preview) = t
        .call(
            Method::GET,
            &format!("/api/v1/hosts/{id}/boot-config?format=pxelinux"),
            None,
        )
        .await;
    // The host's file is its profile's menu, exactly as previewed.
    let (s, h, v) = t
        .call(Method::GET, "/boot/pxelinux.cfg/01-52-54-00-aa-00-01", None)
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert_eq!(v, preview);
    // `default`: the default profile.
    let (s, _, v) = t.call(Method::GET, "/boot/pxelinux.cfg/default", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let d = v.as_str().unwrap();
    assert!(d.contains("profile \"Default\""), "{d}");
    assert!(
        d.contains("LABEL e1\n  MENU LABEL Boot from local disk\n  MENU DEFAULT\n  LOCALBOOT 0\n"),
        "{d}"
    );
    // An unregistered MAC and the hex-IP names: not found, so PXELINUX goes on to default.
    for p in [
        "01-52-54-00-aa-00-09",
        "0A4D0064",
        "0A4D",
        "4c4c4544-0051-3610-8057-b7c04f4e3732",
    ] {
        let (s, _, _) = t.call(Method::GET, &format!("/boot/pxelinux.cfg/{p}"), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{p}");
    }
    t.state.events.settle().await;
    let (_, _, ev) = t
        .call(Method::GET, "/api/v1/events?kind=boot.pxelinux.served", None)
        .await;
    assert_eq!(ev["data"]["total"], 2, "{ev}");

    // A file on disk wins over the generated one.
    let root = t.state.settings.boot_root();
    std::fs::create_dir_all(root.join("pxelinux.cfg")).unwrap();
    std::fs::write(root.join("pxelinux.cfg/default"), "DEFAULT mine\n").unwrap();
    let (s, _, v) = t.call(Method::GET, "/boot/pxelinux.cfg/default", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v.as_str().unwrap_or_default(), "DEFAULT mine\n", "{v}");
}

/// GRUB: `grub/grub.cfg` sends every machine to its own `grub.cfg-<mac>`, which is its
/// host's profile (exactly the `format=grub` preview), or the default profile for an
/// unregistered MAC; each file served is a `boot.grub.served` event.
#[tokio::test]
async fn grub_files_over_http() {
    let t = setup().await;
    let id = host_with_profile(&t).await;
    let (_, _, preview) = t
        .call(
            Method::GET,
            &format!("/api/v1/hosts/{id}/boot-config?format=grub"),
            None,
        )
        .await;
    let (s, h, main) = t.call(Method::GET, "/boot/grub/grub.cfg", None).await;
    assert_eq!(s, StatusCode::OK, "{main}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/plain"));
    let main = main.as_str().unwrap();
    assert!(
        main.contains("configfile \"$prefix/grub.cfg-$net_default_mac\""),
        "{main}"
    );
    assert!(main.contains("# Profile \"Default\"."), "{main}");
    for name in ["grub.cfg-52:54:00:aa:00:01", "grub.cfg-01-52-54-00-aa-00-01"] {
        let (s, _, v) = t.call(Method::GET, &format!("/boot/grub/{name}"), None).await;
        assert_eq!((s, &v), (StatusCode::OK, &preview), "{name}");
    }
    let (s, _, v) = t.call(Method::GET, "/boot/grub/grub.cfg-52:54:00:aa:00:09", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(
        v.as_str()
            .unwrap()
            .contains("not a registered host: the default profile"),
        "{v}"
    );
    for p in ["grub.cfg-0A4D0064", "x86_64-efi/command.lst", "grub.cfg-"] {
        let (s, _, _) = t.call(Method::GET, &format!("/boot/grub/{p}"), None).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{p}");
    }
    t.state.events.settle().await;
    let (_, _, ev) = t.call(Method::GET, "/api/v1/events?kind=boot.grub.served", None).await;
    assert_eq!(ev["data"]["total"], 4, "{ev}");
}
