//! Tamper evidence for the audit log: a SHA-256 hash chain over its entries, a signed
//! anchor that keeps the chain verifiable after retention prunes its start, verification
//! (for `bootlane audit verify` and `GET /api/v1/audit-logs/verify`), and an optional
//! copy of every entry to the local syslog socket for a remote collector (`[audit]`).
//!
//! **Chain.** Each entry's `prev_hash` is the hex SHA-256 of the previous entry's
//! canonical encoding ([`canonical`]: its JSON with object keys sorted at every level and
//! no whitespace, `prev_hash` included, so each hash covers the whole history before it).
//! The first chained entry carries [`GENESIS`] (64 zeros). Entries written before the
//! chain existed have no `prev_hash`; they may only form a prefix of the log, which
//! verification counts as `unchained` (nothing vouches for them), and the chain starts
//! at the first entry that has one.
//!
//! **Anchor.** Before retention deletes entries, the last one it deletes is recorded in
//! `<data_dir>/audit-anchor.json` (its id, its hash, whether it was chained), signed with
//! HMAC-SHA256 under a random 32-byte key in `<data_dir>/audit.key` (mode 0600, made on
//! first use). Verification starts after the anchor and expects the first remaining
//! entry to chain to the anchored hash; a forged or edited anchor fails its signature.
//! The key proves the anchor was written by this installation, not by whoever can only
//! edit the journal; someone who can read the key can forge both (hence the syslog copy).
//!
//! **Head.** A chain alone cannot show that its newest entries were cut off or that the
//! very last one was edited. After each stored batch the writer records the newest
//! entry the same way in `<data_dir>/audit-head.json` (signed with the same key; written
//! after the journal is synced, so it is never ahead of it); verification requires that
//! entry to be present with that hash.
//!
//! **Syslog.** With `[audit] syslog = true` every audit entry, once stored, is sent as
//! one RFC 5424 message (facility authpriv, severity notice, MSGID `audit`, the entry's
//! canonical JSON as MSG) to the datagram socket `[audit] syslog_socket` (`/dev/log`,
//! which journald and rsyslog read). A failed send is logged and counted in
//! [`SYSLOG_FAILED`], never retried and never blocking the writer.
//!
//! Global state: none; the key and anchor live in files of the data directory.

use std::{
    io::Write,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use time::OffsetDateTime;

use crate::store::StoreError;

/// An audit-log entry: a write event seen from the "who did what" side.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct AuditEntry {
    /// Id: the id of the event it was derived from.
    pub id: u64,
    /// When, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: OffsetDateTime,
    /// Who: the user name (`system` for changes the server made itself).
    pub user: String,
    /// The API token the change came with, by name (its owner is `user`); absent for a
    /// signed-in session and for the server's own changes, so entries chained before
    /// tokens existed keep their encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// From where: the client address of the request.
    pub remote_addr: Option<String>,
    /// `create`, `update`, `delete` or another verb (`rollback`, `start`, `login`, ...).
    pub action: String,
    /// Resource kind.
    pub resource: String,
    /// Resource id (empty for singletons such as settings).
    pub resource_id: String,
    /// The event kind it came from.
    pub kind: String,
    /// One sentence describing the change.
    pub summary: String,
    /// The resource before the change (`null` for a create).
    #[schema(value_type = Value)]
    pub before: serde_json::Value,
    /// The resource after the change (`null` for a delete).
    #[schema(value_type = Value)]
    pub after: serde_json::Value,
    /// Hex SHA-256 of the previous entry's canonical encoding (64 zeros for the first
    /// chained entry; see [`crate::audit`]). Absent on entries written before the audit
    /// log was chained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_hash: Option<String>,
}

crate::store::entity!(AuditEntry, "audit_entries");

/// `prev_hash` of the first chained entry: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// File name of the anchor in the data directory.
pub const ANCHOR_FILE: &str = "audit-anchor.json";
/// File name of the signed record of the newest entry in the data directory.
pub const HEAD_FILE: &str = "audit-head.json";
/// File name of the anchor's HMAC key in the data directory.
pub const KEY_FILE: &str = "audit.key";
/// Counter: audit entries whose syslog copy could not be sent.
pub const SYSLOG_FAILED: &str = "bootlane_audit_syslog_failed_total";

/// `[audit]`: the syslog copy of the audit log.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Copy every stored audit entry to syslog: one RFC 5424 datagram per entry (facility
    /// authpriv, severity notice, APP-NAME bootlane, MSGID audit, the entry's canonical JSON
    /// with its `prev_hash`).
    pub syslog: bool,
    /// The local datagram socket journald or rsyslog reads.
    pub syslog_socket: PathBuf,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            syslog: false,
            syslog_socket: PathBuf::from("/dev/log"),
        }
    }
}

/// Problems reading or checking the chain's files.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Reading or writing the anchor or key file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The anchor or key file is malformed.
    #[error("{0}")]
    Invalid(String),
    /// Reading the journal failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> AuditError {
    move |source| AuditError::Io { what, source }
}

/// `v` with the keys of every object in sorted order (serde_json keeps insertion order
/// when its `preserve_order` feature is on, so the order is made explicit).
fn sorted(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut pairs: Vec<(String, serde_json::Value)> = m.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The canonical encoding of `entry` the chain hashes: its JSON (`GET /audit-logs`
/// shape, `prev_hash` included when set) with object keys sorted at every level and no
/// whitespace.
pub fn canonical(entry: &AuditEntry) -> Vec<u8> {
    let v = serde_json::to_value(entry).unwrap_or(serde_json::Value::Null);
    serde_json::to_vec(&sorted(v)).unwrap_or_default()
}

/// Hex SHA-256 of [`canonical`]`(entry)`.
pub fn entry_hash(entry: &AuditEntry) -> String {
    hex::encode(Sha256::digest(canonical(entry)))
}

/// Links `entries` (ascending ids, none linked yet) onto the chain whose last hash is
/// `head` (`None`: no chained entry yet, so the first gets [`GENESIS`]); `head` ends as
/// the hash of the last entry.
pub fn link(entries: &mut [AuditEntry], head: &mut Option<String>) {
    for e in entries {
        e.prev_hash = Some(head.clone().unwrap_or_else(|| GENESIS.to_string()));
        *head = Some(entry_hash(e));
    }
}

/// The anchor of pruned entries (`<data_dir>/audit-anchor.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Anchor {
    /// Id of the last pruned entry.
    pub id: u64,
    /// Its hash ([`entry_hash`]).
    pub hash: String,
    /// Whether it was chained (had a `prev_hash`); if not, the chain starts later.
    pub chained: bool,
    /// Hex HMAC-SHA256 of `bootlane audit anchor v1\n{id}\n{hash}\n{chained}` under the
    /// key in `<data_dir>/audit.key`.
    pub signature: String,
}

/// The key of `data_dir` (32 bytes), made with mode 0600 when absent (and put back to
/// 0600 when found looser) if `create`.
fn key(data_dir: &Path, create: bool) -> Result<Option<Vec<u8>>, AuditError> {
    let path = data_dir.join(KEY_FILE);
    if create {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let k: [u8; 32] = rand::random();
                f.write_all(&k)
                    .and_then(|()| f.sync_all())
                    .map_err(io(format!("writing {}", path.display())))?;
                return Ok(Some(k.to_vec()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(format!("creating {}", path.display()))(e)),
        }
    }
    let k = match std::fs::read(&path) {
        Ok(k) => k,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(format!("reading {}", path.display()))(e)),
    };
    if create {
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode()).unwrap_or(0);
        if mode & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "the audit key was readable by others; set to mode 0600");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(io(format!("restricting {}", path.display())))?;
        }
    }
    if k.len() != 32 {
        return Err(AuditError::Invalid(format!("{} is not 32 bytes", path.display())));
    }
    Ok(Some(k))
}

fn sign(key: &[u8], file: &str, id: u64, hash: &str, chained: bool) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("bootlane {file} v1\n{id}\n{hash}\n{chained}").as_bytes());
    mac
}

/// Records `last_pruned` as the anchor of `data_dir` (written to a temporary file,
/// synced, then renamed over the old anchor, so a crash leaves the old or the new one).
/// Blocking.
///
/// # Errors
/// I/O errors on the key or anchor file.
pub fn write_anchor(data_dir: &Path, last_pruned: &AuditEntry) -> Result<Anchor, AuditError> {
    write_signed(data_dir, ANCHOR_FILE, last_pruned, true)
}

/// Records `newest` as the head of `data_dir` (renamed into place; not synced: after a
/// power loss it may name an older entry, which still verifies). Blocking.
///
/// # Errors
/// I/O errors on the key or head file.
pub fn write_head(data_dir: &Path, newest: &AuditEntry) -> Result<Anchor, AuditError> {
    write_signed(data_dir, HEAD_FILE, newest, false)
}

fn write_signed(data_dir: &Path, file: &str, entry: &AuditEntry, sync: bool) -> Result<Anchor, AuditError> {
    let key = key(data_dir, true)?.expect("created above");
    let hash = entry_hash(entry);
    let chained = entry.prev_hash.is_some();
    let signature = hex::encode(sign(&key, file, entry.id, &hash, chained).finalize().into_bytes());
    let anchor = Anchor {
        id: entry.id,
        hash,
        chained,
        signature,
    };
    let path = data_dir.join(file);
    let tmp = data_dir.join(format!("{file}.tmp"));
    let body = serde_json::to_vec_pretty(&anchor).map_err(|e| AuditError::Invalid(e.to_string()))?;
    std::fs::File::create(&tmp)
        .and_then(|mut f| {
            f.write_all(&body)?;
            if sync {
                f.sync_all()?;
            }
            Ok(())
        })
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(io(format!("writing {}", path.display())))?;
    if sync {
        if let Ok(d) = std::fs::File::open(data_dir) {
            let _ = d.sync_all();
        }
    }
    Ok(anchor)
}

/// The anchor of `data_dir`, if any, with whether its signature holds under the key
/// (false when the key is missing). Blocking.
///
/// # Errors
/// I/O errors, or an anchor file that does not decode.
pub fn read_anchor(data_dir: &Path) -> Result<Option<(Anchor, bool)>, AuditError> {
    read_signed(data_dir, ANCHOR_FILE)
}

fn read_signed(data_dir: &Path, file: &str) -> Result<Option<(Anchor, bool)>, AuditError> {
    let path = data_dir.join(file);
    let body = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(format!("reading {}", path.display()))(e)),
    };
    let anchor: Anchor = serde_json::from_slice(&body)
        .map_err(|e| AuditError::Invalid(format!("{} does not decode: {e}", path.display())))?;
    let valid = match (key(data_dir, false)?, hex::decode(&anchor.signature)) {
        (Some(k), Ok(sig)) => sign(&k, file, anchor.id, &anchor.hash, anchor.chained)
            .verify_slice(&sig)
            .is_ok(),
        _ => false,
    };
    Ok(Some((anchor, valid)))
}

/// The last hash of the chain the next entry links to: the newest stored entry's hash
/// when it is chained, else (nothing stored after the anchor) the anchor's hash when it
/// is chained, else `None` (the next entry starts the chain at [`GENESIS`]).
pub fn head(newest: Option<&AuditEntry>, anchor: Option<&Anchor>) -> Option<String> {
    match newest {
        Some(e) if anchor.is_none_or(|a| e.id > a.id) => e.prev_hash.as_ref().map(|_| entry_hash(e)),
        _ => anchor.filter(|a| a.chained).map(|a| a.hash.clone()),
    }
}

/// Where the chain first breaks.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct ChainBreak {
    /// Id of the first entry whose `prev_hash` is not what the chain says; or of the
    /// newest recorded entry when it is missing or changed; or of the anchor or head
    /// record when its signature fails.
    pub id: u64,
    /// The hash expected there (hex SHA-256; 64 zeros at the genesis; for the newest
    /// recorded entry, its own hash).
    pub expected: String,
    /// What was found: the entry's `prev_hash` (for the newest recorded entry, its
    /// hash); `null` for an entry without `prev_hash` after the chain started, a missing
    /// newest entry, or a record whose signature does not verify.
    pub found: Option<String>,
}

/// The anchor a verification started from.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct AnchorView {
    /// Id of the last pruned entry.
    pub id: u64,
    /// Its hash.
    pub hash: String,
}

/// Result of verifying the audit log (`GET /api/v1/audit-logs/verify`, `bootlane audit
/// verify`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct Verification {
    /// `ok` when every chained entry links to the one before it, else `broken`.
    pub status: String,
    /// Chained entries checked (up to the break, when broken).
    pub entries: usize,
    /// Entries written before the chain existed (a prefix; nothing vouches for them).
    pub unchained: usize,
    /// Entries at or below the anchor still on disk (retention deletes them later);
    /// skipped.
    pub pruned_skipped: usize,
    /// The anchor of pruned entries the chain was checked from, if any.
    pub anchor: Option<AnchorView>,
    /// The first break, when `status` is `broken`.
    pub first_break: Option<ChainBreak>,
}

impl Verification {
    /// True when the chain holds.
    pub fn ok(&self) -> bool {
        self.first_break.is_none()
    }
}

/// Verifies the entries `ascending` (oldest first) against the anchor of `data_dir`.
/// Blocking (reads files).
///
/// # Errors
/// A journal, anchor or key file that cannot be read.
pub fn verify(
    data_dir: &Path,
    ascending: impl Iterator<Item = Result<AuditEntry, StoreError>>,
) -> Result<Verification, AuditError> {
    let anchor = read_anchor(data_dir)?;
    let head = read_signed(data_dir, HEAD_FILE)?;
    let mut v = Verification {
        status: "ok".into(),
        entries: 0,
        unchained: 0,
        pruned_skipped: 0,
        anchor: anchor.as_ref().map(|(a, _)| AnchorView {
            id: a.id,
            hash: a.hash.clone(),
        }),
        first_break: None,
    };
    let mut expected: Option<String> = None;
    let mut started = false;
    let mut floor = 0;
    if let Some((a, valid)) = &anchor {
        if !valid {
            v.status = "broken".into();
            v.first_break = Some(ChainBreak {
                id: a.id,
                expected: format!("a valid signature under {KEY_FILE}"),
                found: None,
            });
            return Ok(v);
        }
        floor = a.id;
        if a.chained {
            expected = Some(a.hash.clone());
            started = true;
        }
    }
    // The newest entry the writer recorded must be there, unchanged.
    let mut head_due = None;
    if let Some((h, valid)) = head {
        if !valid {
            return Ok(broken(
                v,
                ChainBreak {
                    id: h.id,
                    expected: format!("a valid signature of {HEAD_FILE} under {KEY_FILE}"),
                    found: None,
                },
            ));
        }
        if h.id > floor {
            head_due = Some(h);
        }
    }
    for e in ascending {
        let e = e?;
        if anchor.is_some() && e.id <= floor {
            v.pruned_skipped += 1;
            continue;
        }
        if let Some(h) = head_due.as_ref().filter(|h| h.id <= e.id) {
            let found = entry_hash(&e);
            if h.id < e.id || found != h.hash {
                // Entry h.id is missing (h.id < e.id) or was edited.
                let b = ChainBreak {
                    id: h.id,
                    expected: h.hash.clone(),
                    found: (h.id == e.id).then_some(found),
                };
                return Ok(broken(v, b));
            }
            head_due = None;
        }
        let want = expected.clone().unwrap_or_else(|| GENESIS.to_string());
        match &e.prev_hash {
            None if !started => v.unchained += 1,
            found if found.as_deref() != Some(want.as_str()) => {
                v.status = "broken".into();
                v.first_break = Some(ChainBreak {
                    id: e.id,
                    expected: want,
                    found: found.clone(),
                });
                return Ok(v);
            }
            _ => {
                started = true;
                v.entries += 1;
                expected = Some(entry_hash(&e));
            }
        }
    }
    if let Some(h) = head_due {
        // The newest entries were cut off.
        let b = ChainBreak {
            id: h.id,
            expected: h.hash,
            found: None,
        };
        return Ok(broken(v, b));
    }
    Ok(v)
}

fn broken(mut v: Verification, b: ChainBreak) -> Verification {
    v.status = "broken".into();
    v.first_break = Some(b);
    v
}

/// The RFC 5424 message for `entry`: `<85>1 TIMESTAMP HOST bootlane PID audit - JSON`
/// (facility authpriv = 10, severity notice = 5; the timestamp is the entry's, to the
/// microsecond as RFC 5424 §6.2.3 allows).
pub fn syslog_message(entry: &AuditEntry, host: &str) -> Vec<u8> {
    let ts = entry
        .timestamp
        .replace_nanosecond(entry.timestamp.nanosecond() / 1000 * 1000)
        .unwrap_or(entry.timestamp)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "-".into());
    let host: String = host.chars().filter(|c| c.is_ascii_graphic()).take(255).collect();
    let host = if host.is_empty() { "-".to_string() } else { host };
    let mut out = format!("<85>1 {ts} {host} bootlane {} audit - ", std::process::id()).into_bytes();
    out.extend_from_slice(&canonical(entry));
    out
}

/// Sends `entries` to the syslog socket of `config` (when enabled); failures are logged
/// and counted, never returned. Blocking (one datagram per entry).
pub fn send_to_syslog(config: &AuditConfig, host: &str, entries: &[AuditEntry]) {
    if !config.syslog || entries.is_empty() {
        return;
    }
    let sock = match std::os::unix::net::UnixDatagram::unbound() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("audit syslog copy: no socket: {e}");
            metrics::counter!(SYSLOG_FAILED).increment(entries.len() as u64);
            return;
        }
    };
    for e in entries {
        if let Err(err) = sock.send_to(&syslog_message(e, host), &config.syslog_socket) {
            tracing::warn!(
                id = e.id,
                socket = %config.syslog_socket.display(),
                "audit syslog copy not sent: {err}"
            );
            metrics::counter!(SYSLOG_FAILED).increment(1);
        }
    }
}

/// Verifies the audit log in `data_dir` without changing any file.
///
/// # Errors
/// No audit log in `data_dir`, or files that cannot be read.
pub fn verify_data_dir(data_dir: &Path) -> anyhow::Result<Verification> {
    use anyhow::{bail, Context};

    use crate::store::Entity;
    let dir = data_dir.join("journal").join(AuditEntry::TREE);
    if !dir.is_dir() {
        bail!(
            "no audit log in {} (wrong --data-dir? the server creates it on first start)",
            dir.display()
        );
    }
    let journal = crate::store::journal::Journal::<AuditEntry>::open_read_only(&dir, |a: &AuditEntry| a.timestamp)
        .with_context(|| format!("reading {}", dir.display()))?;
    Ok(verify(data_dir, journal.ascending(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, summary: &str) -> AuditEntry {
        AuditEntry {
            id,
            timestamp: OffsetDateTime::now_utc(),
            user: "alice".into(),
            token: None,
            remote_addr: Some("192.0.2.1".into()),
            action: "update".into(),
            resource: "host".into(),
            resource_id: id.to_string(),
            kind: "host.updated".into(),
            summary: summary.into(),
            before: serde_json::json!({"b": 1, "a": [1, {"z": 2, "y": 3}]}),
            after: serde_json::Value::Null,
            prev_hash: None,
        }
    }

    fn ok(v: Vec<AuditEntry>) -> impl Iterator<Item = Result<AuditEntry, StoreError>> {
        v.into_iter().map(Ok)
    }

    #[test]
    fn the_canonical_encoding_sorts_keys_and_survives_a_round_trip() {
        let e = entry(1, "x");
        let c = String::from_utf8(canonical(&e)).unwrap();
        assert!(
            c.starts_with("{\"action\":\"update\",\"after\":null,\"before\":{\"a\":[1,{\"y\":3,\"z\":2}],\"b\":1}"),
            "{c}"
        );
        let back: AuditEntry = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(entry_hash(&back), entry_hash(&e));
    }

    #[test]
    fn an_edited_entry_a_missing_one_and_a_legacy_prefix_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let mut last = None;
        let mut v: Vec<AuditEntry> = (1..=5).map(|i| entry(i, "e")).collect();
        link(&mut v, &mut last);
        assert_eq!(v[0].prev_hash.as_deref(), Some(GENESIS));
        let r = verify(dir.path(), ok(v.clone())).unwrap();
        assert!(r.ok() && r.entries == 5 && r.unchained == 0, "{r:?}");

        // An edit of entry 3 shows at entry 4, whose prev_hash no longer matches.
        let mut edited = v.clone();
        edited[2].summary = "nothing happened".into();
        let r = verify(dir.path(), ok(edited)).unwrap();
        let b = r.first_break.unwrap();
        assert_eq!((b.id, b.found.as_deref()), (4, v[3].prev_hash.as_deref()));
        assert_eq!(r.entries, 3);

        // A deleted entry breaks the next one.
        let mut gap = v.clone();
        gap.remove(1);
        assert_eq!(verify(dir.path(), ok(gap)).unwrap().first_break.unwrap().id, 3);

        // Entries from before the chain: counted as an unchained prefix; the chain
        // starts at genesis after them; one without prev_hash later is a break.
        let mut old: Vec<AuditEntry> = (1..=2).map(|i| entry(i, "old")).collect();
        let mut new: Vec<AuditEntry> = (3..=4).map(|i| entry(i, "new")).collect();
        link(&mut new, &mut None);
        old.extend(new.clone());
        let r = verify(dir.path(), ok(old.clone())).unwrap();
        assert!(r.ok() && r.unchained == 2 && r.entries == 2, "{r:?}");
        old.push(entry(5, "stripped"));
        let b = verify(dir.path(), ok(old)).unwrap().first_break.unwrap();
        assert_eq!((b.id, b.found), (5, None));
    }

    #[test]
    fn a_signed_anchor_carries_the_chain_past_pruning_and_a_forged_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut last = None;
        let mut v: Vec<AuditEntry> = (1..=6).map(|i| entry(i, "e")).collect();
        link(&mut v, &mut last);
        write_anchor(dir.path(), &v[2]).unwrap();
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Pruned 1-3; entry 3 still on disk is skipped.
        let r = verify(dir.path(), ok(v[2..].to_vec())).unwrap();
        assert!(r.ok() && r.entries == 3 && r.pruned_skipped == 1, "{r:?}");
        assert_eq!(r.anchor.unwrap().id, 3);
        assert_eq!(
            head(None, read_anchor(dir.path()).unwrap().map(|a| a.0).as_ref()),
            Some(entry_hash(&v[2]))
        );
        // Losing entry 4 as well (after the anchor) is found.
        assert_eq!(
            verify(dir.path(), ok(v[4..].to_vec())).unwrap().first_break.unwrap().id,
            5
        );
        // An anchor edited to skip more fails its signature.
        let mut a: Anchor = serde_json::from_slice(&std::fs::read(dir.path().join(ANCHOR_FILE)).unwrap()).unwrap();
        a.id = 4;
        a.hash = entry_hash(&v[3]);
        std::fs::write(dir.path().join(ANCHOR_FILE), serde_json::to_vec(&a).unwrap()).unwrap();
        let r = verify(dir.path(), ok(v[4..].to_vec())).unwrap();
        assert_eq!(r.first_break.unwrap().id, 4);
    }

    #[test]
    fn the_signed_head_finds_a_cut_off_tail_and_an_edited_last_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut v: Vec<AuditEntry> = (1..=4).map(|i| entry(i, "e")).collect();
        link(&mut v, &mut None);
        write_head(dir.path(), &v[3]).unwrap();
        assert!(verify(dir.path(), ok(v.clone())).unwrap().ok());
        // The newest entry removed: the chain alone would still hold.
        let b = verify(dir.path(), ok(v[..3].to_vec())).unwrap().first_break.unwrap();
        assert_eq!((b.id, b.found), (4, None));
        // The newest entry edited.
        let mut edited = v.clone();
        edited[3].user = "mallory".into();
        let b = verify(dir.path(), ok(edited)).unwrap().first_break.unwrap();
        assert_eq!((b.id, b.expected), (4, entry_hash(&v[3])));
    }

    #[test]
    fn the_syslog_copy_arrives_at_the_socket_as_rfc5424() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.sock");
        let rx = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut v = vec![entry(7, "host pc7 updated")];
        link(&mut v, &mut None);
        let config = AuditConfig {
            syslog: true,
            syslog_socket: path,
        };
        send_to_syslog(&config, "node-a", &v);
        let mut buf = vec![0; 65536];
        let n = rx.recv(&mut buf).unwrap();
        let msg = String::from_utf8(buf[..n].to_vec()).unwrap();
        let parts: Vec<&str> = msg.splitn(8, ' ').collect();
        assert_eq!(parts[0], "<85>1", "{msg}");
        assert!(OffsetDateTime::parse(parts[1], &time::format_description::well_known::Rfc3339).is_ok());
        assert_eq!(
            &parts[2..7],
            ["node-a", "bootlane", &std::process::id().to_string(), "audit", "-"]
        );
        let json: serde_json::Value = serde_json::from_str(parts[7]).unwrap();
        assert_eq!(json["id"], 7);
        assert_eq!(json["prev_hash"], GENESIS);
        // Off: nothing is sent.
        send_to_syslog(&AuditConfig::default(), "node-a", &v);
    }
}
