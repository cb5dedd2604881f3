//! Boot media end to end: each test runs `scripts/e2e-media.sh`, which builds a
//! Debian-netinst-shaped ISO with xorriso from the real Debian installer kernel and
//! initrd, and in network namespaces: exercises the file API with curl (upload, list,
//! serve whole and by Range, hostile paths, delete), uploads the ISO with `curl -F`
//! watching its progress events on the event stream, waits for `ready` with the detected
//! kernel and initrd, makes a profile from the image, registers a QEMU BIOS machine with
//! that profile, and waits for the kernel's boot line and the installer's first question
//! on its serial console. Once with the image mounted (files read from inside the ISO,
//! nothing extracted on disk), once extracted. The two run in parallel, about 60-80 s each
//! under TCG. The script removes everything it made on every exit path.

use std::{path::PathBuf, process::Command};

use bootlane_tests::bootlane_bin;

fn run(mode: &str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/e2e-media.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(bootlane_bin())
        .arg(mode)
        .output()
        .expect("run e2e-media.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "e2e-media.sh {mode} failed");
    assert!(text.contains("] PASS"), "no PASS line");
}

/// The image mounted: iPXE fetches the installer's kernel and initrd from inside the ISO.
#[test]
fn iso_upload_to_installer_boot_mounted() {
    run("--mounted");
}

/// The image extracted into the boot root: the same profile URLs, served from disk.
#[test]
fn iso_upload_to_installer_boot_extracted() {
    run("--extracted");
}
