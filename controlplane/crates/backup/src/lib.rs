//! Backups of the store (`bootlane backup` / `bootlane restore`, and
//! `GET /api/v1/system/backup` while the server runs). This module owns the backup file
//! format and its checks; the consistent copy itself is [`Store::snapshot`].
//!
//! The file is JSON Lines, so it streams and diffs: the first line is the [`Manifest`]
//! (file kind, backup format, store format, Bootlane version, time, per-tree record counts
//! and the SHA-256 of everything after the first line), then one line per record
//! `{"t": tree, "k": hex key, "v": hex value}`. Restoring checks the manifest, the
//! checksum and every line before anything is written, refuses a store format newer than
//! this build's ([`bootlane_core::store::FORMAT_VERSION`]), and writes into an empty data
//! directory only. Settings changed through the API live in the store, so they are in the
//! backup; the configuration file is not (it is the operator's, under /etc).

use std::{collections::BTreeMap, io::Write, path::Path};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use bootlane_core::store::{Snapshot, Store, FORMAT_VERSION};

/// `kind` of every Bootlane backup manifest.
pub const KIND: &str = "bootlane-backup";
/// Version of the backup file layout described in the module docs.
pub const BACKUP_FORMAT: u32 = 1;

/// The first line of a backup file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`KIND`].
    pub kind: String,
    /// Backup file layout ([`BACKUP_FORMAT`]).
    pub backup_format: u32,
    /// Store format of the data ([`FORMAT_VERSION`] of the writer).
    pub store_format: u32,
    /// Version of the Bootlane that wrote it.
    pub bootlane_version: String,
    /// When it was taken (RFC 3339, UTC).
    pub created: String,
    /// Records per tree.
    pub trees: BTreeMap<String, usize>,
    /// Records in all.
    pub records: usize,
    /// SHA-256 (hex) of the bytes after the manifest line.
    pub sha256: String,
}

#[derive(Serialize, Deserialize)]
struct Line {
    t: String,
    k: String,
    v: String,
}

/// Encodes `snap` as a backup file: the manifest line, then the record lines.
pub fn encode(snap: &Snapshot) -> Vec<u8> {
    let mut body = Vec::new();
    let mut trees = BTreeMap::new();
    let mut records = 0;
    for (tree, pairs) in &snap.trees {
        trees.insert(tree.clone(), pairs.len());
        records += pairs.len();
        for (k, v) in pairs {
            let line = Line {
                t: tree.clone(),
                k: hex::encode(k),
                v: hex::encode(v),
            };
            // Serialising three strings cannot fail.
            let _ = serde_json::to_writer(&mut body, &line);
            body.push(b'\n');
        }
    }
    let manifest = Manifest {
        kind: KIND.into(),
        backup_format: BACKUP_FORMAT,
        store_format: FORMAT_VERSION,
        bootlane_version: env!("CARGO_PKG_VERSION").into(),
        created: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        trees,
        records,
        sha256: hex::encode(Sha256::digest(&body)),
    };
    let mut out = serde_json::to_vec(&manifest).unwrap_or_default();
    out.push(b'\n');
    out.extend_from_slice(&body);
    out
}

/// Decodes and checks a backup file.
///
/// # Errors
/// A message saying what is wrong: not a Bootlane backup, a backup or store format newer
/// than this build's, a checksum mismatch (damaged or cut off), a bad line (its number),
/// or counts that differ from the manifest.
pub fn decode(bytes: &[u8]) -> Result<(Manifest, Snapshot), String> {
    let nl = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("not a Bootlane backup: no manifest line")?;
    let manifest: Manifest = serde_json::from_slice(&bytes[..nl])
        .map_err(|e| format!("not a Bootlane backup: the first line is not its manifest ({e})"))?;
    if manifest.kind != KIND {
        return Err(format!("not a Bootlane backup: kind is {:?}", manifest.kind));
    }
    if manifest.backup_format > BACKUP_FORMAT || manifest.store_format > FORMAT_VERSION {
        return Err(format!(
            "the backup was written by Bootlane {} (backup format {}, store format {}); this build reads \
             backup format {BACKUP_FORMAT} and store format {FORMAT_VERSION} at most: restore it with that version or newer",
            manifest.bootlane_version, manifest.backup_format, manifest.store_format
        ));
    }
    let body = &bytes[nl + 1..];
    let sum = hex::encode(Sha256::digest(body));
    if sum != manifest.sha256 {
        return Err(format!(
            "the backup is damaged or incomplete: its records' SHA-256 is {sum}, the manifest says {}",
            manifest.sha256
        ));
    }
    let mut trees: Vec<(String, bootlane_core::store::Pairs)> = Vec::new();
    for (i, raw) in body.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        let bad = |what: String| format!("line {} of the backup: {what}", i + 2);
        let l: Line = serde_json::from_slice(raw).map_err(|e| bad(e.to_string()))?;
        let k = hex::decode(&l.k).map_err(|e| bad(format!("key: {e}")))?;
        let v = hex::decode(&l.v).map_err(|e| bad(format!("value: {e}")))?;
        match trees.last_mut() {
            Some((t, pairs)) if *t == l.t => pairs.push((k, v)),
            _ => trees.push((l.t, vec![(k, v)])),
        }
    }
    let counted: BTreeMap<String, usize> = trees.iter().map(|(t, p)| (t.clone(), p.len())).collect();
    let expected: BTreeMap<String, usize> = manifest
        .trees
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(t, n)| (t.clone(), *n))
        .collect();
    if counted != expected {
        return Err("the backup's records do not match its manifest's counts".into());
    }
    Ok((manifest, Snapshot { trees }))
}

/// Takes a consistent backup of `store` (see [`Store::snapshot`]).
///
/// # Errors
/// Store errors.
pub async fn backup(store: &Store) -> Result<Vec<u8>, bootlane_core::store::StoreError> {
    Ok(encode(&store.snapshot().await?))
}

/// Writes `bytes` to `path` through a temporary file and a rename (mode 0600: a backup
/// holds password hashes and sessions), so a failed write leaves no partial backup.
///
/// # Errors
/// I/O errors, with the path.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("partial");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write {}: {e}", path.display())
        })
}

/// Restores the backup `bytes` into `data_dir`, which must hold no database (a new
/// directory, or one whose `db` was moved aside). Answers the manifest.
///
/// # Errors
/// The backup's problems ([`decode`]); a data directory that already holds a database;
/// store errors.
pub async fn restore(data_dir: &Path, bytes: &[u8]) -> anyhow::Result<Manifest> {
    let (manifest, snap) = decode(bytes).map_err(anyhow::Error::msg)?;
    if STORE_PARTS.iter().any(|p| data_dir.join(p).exists()) {
        anyhow::bail!(
            "{} already holds a database; restore into an empty data directory, or move its db/ and journal/ \
             aside first (bootlane restore --force does that)",
            data_dir.display()
        );
    }
    std::fs::create_dir_all(data_dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", data_dir.display()))?;
    let store = Store::open(data_dir)?;
    store.load(&snap).await?;
    Ok(manifest)
}

/// What of a data directory is the store: sled's database and the journals (events,
/// audit log). A restore writes both anew.
pub const STORE_PARTS: [&str; 2] = ["db", "journal"];

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_core::store::Store;

    /// A record of the shape the resource tables hold.
    #[derive(Clone, Serialize, Deserialize)]
    struct Host {
        id: u64,
        name: String,
    }
    bootlane_core::entity!(Host, "hosts");

    async fn filled(dir: &Path) -> Store {
        let store = Store::open(dir).unwrap();
        let hosts = store.table::<Host>().unwrap();
        for i in 0..3u8 {
            let name = format!("node{i}");
            hosts.insert(Host { id: 0, name }).await.unwrap();
        }
        let users = store.kv("users").unwrap();
        let u = serde_json::json!({"username": "admin", "password_hash": "$argon2id$x"});
        users.put("admin", &u).await.unwrap();
        store
    }

    #[tokio::test]
    async fn round_trip_into_a_fresh_data_directory() {
        let a = tempfile::tempdir().unwrap();
        let store = filled(a.path()).await;
        let bytes = backup(&store).await.unwrap();
        let b = tempfile::tempdir().unwrap();
        let target = b.path().join("restored");
        let m = restore(&target, &bytes).await.unwrap();
        assert_eq!(m.trees.get(<Host as bootlane_core::store::Entity>::TREE), Some(&3));
        let restored = Store::open(&target).unwrap();
        // Every tree is byte-for-byte the same (the id generator aside).
        let strip = |s: Snapshot| Snapshot {
            trees: s
                .trees
                .into_iter()
                .filter(|(t, _)| t != bootlane_core::store::ID_TREE)
                .collect(),
        };
        assert_eq!(
            strip(restored.snapshot().await.unwrap()),
            strip(store.snapshot().await.unwrap())
        );
        // New ids continue after the restored ones.
        let max = restored
            .table::<Host>()
            .unwrap()
            .list()
            .unwrap()
            .iter()
            .map(|h| h.id)
            .max()
            .unwrap();
        assert!(restored.next_id().unwrap() > max);
        assert_eq!(
            bootlane_core::store::stored_format(&target).unwrap(),
            Some(FORMAT_VERSION)
        );
        // Not over an existing database.
        let e = restore(&target, &bytes).await.unwrap_err().to_string();
        assert!(e.contains("already holds a database"), "{e}");
    }

    #[tokio::test]
    async fn damaged_newer_and_foreign_files_are_refused_before_anything_is_written() {
        let a = tempfile::tempdir().unwrap();
        let bytes = backup(&filled(a.path()).await).await.unwrap();
        let b = tempfile::tempdir().unwrap();
        let target = b.path().join("r");
        // One flipped byte in a record.
        let mut bad = bytes.clone();
        let at = bad.len() - 5;
        bad[at] ^= 1;
        assert!(restore(&target, &bad)
            .await
            .unwrap_err()
            .to_string()
            .contains("damaged or incomplete"));
        // Cut off.
        assert!(restore(&target, &bytes[..bytes.len() - 40])
            .await
            .unwrap_err()
            .to_string()
            .contains("damaged or incomplete"));
        // A newer store format.
        let text = String::from_utf8(bytes.clone()).unwrap();
        let newer = text.replacen(&format!("\"store_format\":{FORMAT_VERSION}"), "\"store_format\":99", 1);
        let e = restore(&target, newer.as_bytes()).await.unwrap_err().to_string();
        assert!(e.contains("store format 99") && e.contains("this build reads"), "{e}");
        // Not a backup at all.
        let e = restore(&target, b"{\"hello\": 1}\n").await.unwrap_err().to_string();
        assert!(e.contains("not a Bootlane backup"), "{e}");
        assert!(!target.join("db").exists(), "nothing was written");
    }

    #[tokio::test]
    async fn a_newer_store_format_in_the_data_directory_is_refused_at_open() {
        let a = tempfile::tempdir().unwrap();
        drop(Store::open(a.path()).unwrap());
        assert_eq!(
            bootlane_core::store::stored_format(a.path()).unwrap(),
            Some(FORMAT_VERSION)
        );
        std::fs::write(a.path().join(bootlane_core::store::FORMAT_FILE), "7\n").unwrap();
        let e = Store::open(a.path()).err().unwrap().to_string();
        assert!(e.contains("store format 7") && e.contains("newer Bootlane"), "{e}");
        std::fs::write(a.path().join(bootlane_core::store::FORMAT_FILE), "x\n").unwrap();
        assert!(Store::open(a.path())
            .err()
            .unwrap()
            .to_string()
            .contains("does not hold a store format number"));
    }
}
