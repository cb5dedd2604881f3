//! NFS exports end to end: the real `bootlane` binary in a server namespace
//! (10.97.0.1/24) exports a directory of its boot root through `PUT /services/nfs`; a
//! client namespace (10.97.0.2/24) mounts it over NFSv4 (`mount -t nfs4`) and reads a
//! file; the export is then disabled and the same mount must fail.
//!
//! The kernel NFS server runs in the server namespace, not on the host: nfsd is per
//! network namespace, so `rpc.nfsd` and `rpc.mountd` are started inside it (each with
//! the nfsd filesystem mounted on `/proc/fs/nfsd` in its own mount namespace, which
//! names that network namespace's instance), and Bootlane runs behind a wrapper that
//! mounts it too, so its `exportfs -ra` loads the exports into the same instance. NFSv4
//! only (`-N 3`, no UDP): no rpcbind is needed. The grace period is cut to the kernel's
//! minimum (10 s) so the first OPEN does not wait 90 s.
//!
//! What is shared with the host, and cleaned up: `exportfs` reads every
//! `/etc/exports.d/*.exports`, so Bootlane's file is `/etc/exports.d/bootlane-test-<unique>.exports`
//! (removed by a guard, then `exportfs -ra` run again), and it writes
//! `/var/lib/nfs/etab`. Skipped (with a `SKIPPED` line) only when the kernel has no nfsd,
//! not even as a module; missing user-space tools are a failure (run `scripts/setup.sh`).

use std::{path::PathBuf, process::Command, time::Duration};

use bootlane_tests::{sh_out, spawn_in, unique, veth, Launch, NetNs, Server};
use serde_json::json;

/// Whether the kernel has the NFS server, loading the module when it is one.
fn kernel_has_nfsd() -> bool {
    let _ = Command::new("modprobe").arg("nfsd").output();
    std::fs::read_to_string("/proc/filesystems")
        .is_ok_and(|s| s.lines().any(|l| l.split_whitespace().last() == Some("nfsd")))
}

/// Stops nfsd in the namespace and removes the exports file (reloading what is left),
/// whatever happened in the test.
struct Cleanup {
    srv: String,
    exports_file: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.exports_file);
        let in_srv = |cmd: &str| {
            let _ = sh_out(&format!(
                "ip netns exec {} sh -c 'mount -t nfsd nfsd /proc/fs/nfsd 2>/dev/null; {cmd}'",
                self.srv
            ));
        };
        in_srv("exportfs -ra");
        in_srv("rpc.nfsd 0");
    }
}

#[test]
fn nfs_export_mount_read_then_disable() {
    if !kernel_has_nfsd() {
        eprintln!(
            "SKIPPED nfs_export_mount_read_then_disable: the running kernel has no NFS server \
             (no nfsd in /proc/filesystems, and modprobe nfsd did not add it)"
        );
        return;
    }
    for tool in ["exportfs", "rpc.nfsd", "rpc.mountd", "mount.nfs4"] {
        assert!(
            sh_out(&format!("command -v {tool}")).status.success(),
            "{tool} is missing: run scripts/setup.sh (nfs-kernel-server, nfs-common)"
        );
    }
    let _ = Command::new("modprobe").arg("nfsv4").output();

    let srv = NetNs::new("nfs");
    let cli = NetNs::new("nfc");
    veth(&srv, &["10.97.0.1/24"], &cli, &["10.97.0.2/24"]);
    let exports_file = PathBuf::from(format!("/etc/exports.d/{}.exports", unique("bootlane-test-")));
    let _cleanup = Cleanup {
        srv: srv.name.clone(),
        exports_file: exports_file.clone(),
    };

    // nfsd in the server namespace: short grace and lease times, 4 threads, NFSv4 over TCP
    // only; then mountd (the kernel's export-cache upcalls) in the foreground, killed on drop.
    let _nfsd = spawn_in(
        &srv,
        &[
            "sh",
            "-c",
            "mount -t nfsd nfsd /proc/fs/nfsd && echo 10 > /proc/fs/nfsd/nfsv4gracetime && \
             echo 10 > /proc/fs/nfsd/nfsv4leasetime && rpc.nfsd -N 3 -U 4 && \
             exec rpc.mountd -F -N 2 -N 3",
        ],
    );
    let mut up = false;
    for _ in 0..50 {
        if srv
            .sh_out("mount -t nfsd nfsd /proc/fs/nfsd 2>/dev/null; test \"$(cat /proc/fs/nfsd/threads)\" -gt 0")
            .status
            .success()
        {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "nfsd did not start in the server namespace");

    // Bootlane, with /proc/fs/nfsd mounted in its mount namespace (see the module docs).
    let launch = Launch {
        wrapper: vec![
            "sh".into(),
            "-c".into(),
            "mount -t nfsd nfsd /proc/fs/nfsd && exec \"$@\"".into(),
            "sh".into(),
        ],
        ..Launch::default()
    };
    let s = Server::start_with(
        &srv,
        &format!(
            "[dns]\nenabled = false\n[nfs]\nexports_file = \"{}\"\n",
            exports_file.display()
        ),
        launch,
    );
    let tree = s.data_dir.join("boot/images/live");
    std::fs::create_dir_all(tree.join("casper")).unwrap();
    let marker = format!("hello over nfs {}\n", unique("m"));
    std::fs::write(tree.join("casper/hello.txt"), &marker).unwrap();

    let (code, v) = s.api(
        "POST",
        "/services/nfs/validate-path",
        Some(&json!({"path": "images/live"})),
    );
    assert_eq!(
        (code, &v["data"]["ok"], &v["data"]["image_tree"]),
        (200, &json!(true), &json!("ubuntu-casper")),
        "{v}"
    );
    let abs = v["data"]["absolute"].as_str().unwrap().to_owned();

    // fsid: the data directory may sit on a file system without a UUID (tmpfs).
    let put = json!({"enabled": true, "exports": [{
        "path": "images/live", "clients": ["10.97.0.0/24"], "options": ["fsid=97", "no_root_squash"],
        "comment": "integration test"
    }]});
    let (code, v) = s.api_for(60, "PUT", "/services/nfs", Some(&put));
    assert_eq!((code, &v["data"]["applied"]), (200, &json!(true)), "{v}");
    assert_eq!(v["data"]["reason"], json!(null), "nfsd runs, so no caveat: {v}");
    let text = std::fs::read_to_string(&exports_file).unwrap();
    assert!(text.contains(&format!("{abs} 10.97.0.0/24(")), "{text}");
    let (_, v) = s.api_for(30, "GET", "/services/nfs", None);
    assert!(
        v["data"]["status"]["kernel_exports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == json!(abs) && e["client"] == "10.97.0.0/24"),
        "the kernel table lists the export: {v}"
    );
    assert_eq!(v["data"]["status"]["nfsd_running"], json!(true), "{v}");

    // The client mounts it over NFSv4 and reads the file (the first OPEN may wait for the
    // end of the 10 s grace period).
    let mnt = std::env::temp_dir().join(unique("nfs-mnt-"));
    std::fs::create_dir_all(&mnt).unwrap();
    let mount = format!(
        "timeout 60 mount -t nfs4 -o vers=4.2,proto=tcp,soft,timeo=50,retrans=2 10.97.0.1:{abs} {m}",
        m = mnt.display()
    );
    let out = cli.sh_out(&format!(
        "{mount} && timeout 60 cat {m}/casper/hello.txt; rc=$?; umount -f {m}; exit $rc",
        m = mnt.display()
    ));
    assert!(
        out.status.success(),
        "mount and read failed: {}{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        s.log_text()
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), marker);

    // Disabled: the file is gone, the kernel table no longer has it, and mounting fails.
    let (code, v) = s.api_for(60, "PUT", "/services/nfs", Some(&json!({"enabled": false})));
    assert_eq!((code, &v["data"]["applied"]), (200, &json!(true)), "{v}");
    assert!(!exports_file.exists());
    let (_, v) = s.api_for(30, "GET", "/services/nfs", None);
    assert!(
        !v["data"]["status"]["kernel_exports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == json!(abs)),
        "{v}"
    );
    let out = cli.sh_out(&format!(
        "{mount}; rc=$?; umount -f {} 2>/dev/null; exit $rc",
        mnt.display()
    ));
    assert!(
        !out.status.success(),
        "the export is gone, so mounting must fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let _ = std::fs::remove_dir(&mnt);
}
