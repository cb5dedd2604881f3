//! `bootlane update list|install`: what the server downloaded and verified under
//! `<data_dir>/updates/`, and installing one of them over the binary. Installing reads the
//! stored artifact once, checking its size, SHA-256 and minisign signature (over the update
//! statement of its version, platform, file name and SHA-256, see [`manifest`]) against the
//! key of the configuration file (never one stored beside the artifact) while copying it
//! next to the target, and renames the copy over the target only when every check passed:
//! the binary is replaced whole or not at all. The running server keeps running the old
//! code until it is restarted (`systemctl restart bootlane`). No state.

use std::{
    io::{Read, Write},
    os::unix::fs::PermissionsExt,
    path::Path,
};

use anyhow::{bail, Context};

use super::{
    manifest,
    service::{stored_in, StoredUpdate, MANIFEST_FILE},
};

/// One line per stored version: version, size, SHA-256, when and from where.
pub fn list(updates_dir: &Path) -> String {
    let all = stored_in(updates_dir);
    if all.is_empty() {
        return format!("no verified downloads under {}\n", updates_dir.display());
    }
    all.iter()
        .map(|s| {
            format!(
                "{}\t{} bytes\tsha256 {}\tdownloaded {}\tfrom {}\n",
                s.version, s.size, s.sha256, s.downloaded_at, s.artifact_url
            )
        })
        .collect()
}

/// Verifies `<updates_dir>/<version>` with `public_key` (base64 line) while copying it
/// next to `target`, then renames the copy over `target` (mode 0755, or the target's own
/// mode). Answers what to tell the operator.
///
/// # Errors
/// No such download, no key, a failed check (nothing is changed then), or a file error.
pub fn install(updates_dir: &Path, public_key: &str, version: &str, target: &Path) -> anyhow::Result<String> {
    if public_key.trim().is_empty() {
        bail!("[updates] public_key is not set in the configuration file: it is the key installs are verified with");
    }
    let key = manifest::public_key(public_key).map_err(anyhow::Error::msg)?;
    let v = semver::Version::parse(version.trim())
        .with_context(|| format!("{version:?} is not a semantic version such as 1.4.0"))?;
    let dir = updates_dir.join(v.to_string());
    let mf = dir.join(MANIFEST_FILE);
    let text = std::fs::read(&mf).with_context(|| {
        format!(
            "no verified download of {v}: cannot read {} (bootlane update list shows what is stored)",
            mf.display()
        )
    })?;
    let s: StoredUpdate = serde_json::from_slice(&text).with_context(|| format!("{} is damaged", mf.display()))?;
    if s.file.contains('/') || s.file.starts_with('.') {
        bail!("{} names an invalid file {:?}", mf.display(), s.file);
    }
    let src = dir.join(&s.file);
    let target = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mode = std::fs::metadata(&target).map_or(0o755, |m| m.permissions().mode() & 0o7777 | 0o555);
    // The signature covers the version, platform and file name the artifact was listed
    // with (its update statement): a stored manifest.json relabelled fails here.
    if semver::Version::parse(&s.version).ok().as_ref() != Some(&v) {
        bail!("{} is for version {:?}, not {v}", mf.display(), s.version);
    }
    let artifact_url = url::Url::parse(&s.artifact_url)
        .with_context(|| format!("{} names an invalid artifact_url {:?}", mf.display(), s.artifact_url))?;
    let file = manifest::file_name(&artifact_url).map_err(|e| anyhow::anyhow!("{}: {e}", mf.display()))?;
    let label = manifest::Label {
        version: &s.version,
        platform: &s.platform,
        file: &file,
    };
    let sig = manifest::signature(&s.signature)?;
    let mut verifier = manifest::Verifier::new(&key, &sig, label)?;
    let mut input = std::fs::File::open(&src).with_context(|| format!("opening {}", src.display()))?;
    let mut out = tempfile::Builder::new()
        .prefix(".bootlane.update-")
        .tempfile_in(parent)
        .with_context(|| format!("creating a temporary file in {}", parent.display()))?;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = input
            .read(&mut buf)
            .with_context(|| format!("reading {}", src.display()))?;
        if n == 0 {
            break;
        }
        verifier.update(&buf[..n]);
        if verifier.len() > s.size {
            break;
        }
        out.write_all(&buf[..n]).context("writing the new binary")?;
    }
    let sha = verifier
        .finish(s.size, &s.sha256)
        .with_context(|| format!("{} failed its check; nothing was installed", src.display()))?;
    out.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    out.as_file().sync_all().context("writing the new binary")?;
    out.persist(&target)
        .map_err(|e| e.error)
        .with_context(|| format!("replacing {}", target.display()))?;
    std::fs::File::open(parent)?.sync_all()?;
    Ok(format!(
        "installed Bootlane {v} (sha256 {sha}, signature verified) over {}.\n\
         The running server still runs the old version: restart it now with\n  systemctl restart bootlane\n",
        target.display()
    ))
}

#[cfg(test)]
mod tests {
    use sha2::Digest;

    use super::*;
    use crate::updates::manifest::test_support::{keys, sign};

    fn stored(dir: &Path, version: &str, data: &[u8], kp: &minisign::KeyPair) {
        let d = dir.join(version);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bootlane"), data).unwrap();
        let s = StoredUpdate {
            version: version.into(),
            platform: "linux-x86_64".into(),
            file: "bootlane".into(),
            size: data.len() as u64,
            sha256: hex::encode(sha2::Sha256::digest(data)),
            signature: sign(
                kp,
                manifest::Label {
                    version,
                    platform: "linux-x86_64",
                    file: "a",
                },
                data,
            ),
            downloaded_at: time::OffsetDateTime::now_utc(),
            source: "http://x/m.json".into(),
            artifact_url: "http://x/a".into(),
            notes: String::new(),
        };
        std::fs::write(d.join(MANIFEST_FILE), serde_json::to_vec(&s).unwrap()).unwrap();
    }

    #[test]
    fn install_verifies_then_replaces_whole_or_not_at_all() {
        let (pk, kp) = keys();
        let tmp = tempfile::tempdir().unwrap();
        let updates = tmp.path().join("updates");
        let target = tmp.path().join("bin/bootlane");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, b"old").unwrap();
        let new = b"#!/bin/sh\necho new\n".to_vec();
        stored(&updates, "9.1.0", &new, &kp);
        assert!(list(&updates).starts_with("9.1.0\t"), "{}", list(&updates));

        // Another key: refused, the target unchanged, no temporary file left.
        let (other_pk, _) = keys();
        let e = install(&updates, &other_pk, "9.1.0", &target).unwrap_err();
        assert!(format!("{e:#}").contains("another key"), "{e:#}");
        // Tampered after download.
        std::fs::write(updates.join("9.1.0/bootlane"), b"#!/bin/sh\necho bad\n").unwrap();
        let e = install(&updates, &pk, "9.1.0", &target).unwrap_err();
        assert!(format!("{e:#}").contains("sha256 mismatch"), "{e:#}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(target.parent().unwrap()).unwrap().count(), 1);
        // Not stored; no key.
        assert!(format!("{:#}", install(&updates, &pk, "9.2.0", &target).unwrap_err()).contains("no verified download"));
        assert!(format!("{:#}", install(&updates, "", "9.1.0", &target).unwrap_err()).contains("public_key"));

        std::fs::write(updates.join("9.1.0/bootlane"), &new).unwrap();
        let msg = install(&updates, &pk, "9.1.0", &target).unwrap();
        assert!(msg.contains("systemctl restart bootlane"), "{msg}");
        assert_eq!(std::fs::read(&target).unwrap(), new);
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o555, 0o555, "executable: {mode:o}");
    }

    /// Regression: a stored download relabelled as another version (its directory and
    /// `manifest.json` rewritten, the signature kept) is refused, and the target unchanged.
    #[test]
    fn a_stored_download_relabelled_as_another_version_is_refused() {
        let (pk, kp) = keys();
        let tmp = tempfile::tempdir().unwrap();
        let updates = tmp.path().join("updates");
        let target = tmp.path().join("bootlane");
        std::fs::write(&target, b"old").unwrap();
        let new = b"#!/bin/sh\necho 9.1.0\n".to_vec();
        stored(&updates, "9.1.0", &new, &kp);
        let copy = |to: &str, version: &str| {
            let d = updates.join(to);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::copy(updates.join("9.1.0/bootlane"), d.join("bootlane")).unwrap();
            let mut m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(updates.join("9.1.0").join(MANIFEST_FILE)).unwrap()).unwrap();
            m["version"] = version.into();
            std::fs::write(d.join(MANIFEST_FILE), m.to_string()).unwrap();
        };
        copy("9.2.0", "9.2.0");
        let e = format!("{:#}", install(&updates, &pk, "9.2.0", &target).unwrap_err());
        assert!(e.contains("signature check failed"), "{e}");
        copy("9.3.0", "9.1.0");
        let e = format!("{:#}", install(&updates, &pk, "9.3.0", &target).unwrap_err());
        assert!(e.contains("is for version \"9.1.0\", not 9.3.0"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        install(&updates, &pk, "9.1.0", &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), new);
    }
}
