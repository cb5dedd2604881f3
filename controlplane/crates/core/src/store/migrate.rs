//! `bootlane store migrate`: copies a stopped node's store into a shared PostgreSQL
//! database (or back into a sled data directory) and verifies the copy by per-tree
//! counts and SHA-256 checksums over every `(key, value)` pair.
//!
//! The event history and audit log are per-node journals (`<data_dir>/journal/`), not
//! store trees, and are not copied: a node keeps its own when it moves to PostgreSQL
//! with the same data directory.

use std::path::PathBuf;

use anyhow::{bail, Context};
use sha2::{Digest, Sha256};

use super::{pg, Snapshot, Store, ID_TREE};

/// Where a store lives, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A sled data directory.
    Sled(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl std::str::FromStr for Location {
    type Err = anyhow::Error;

    /// `sled:DIR`, `postgres:URL` (the URL itself starting `postgres://` or
    /// `postgresql://`), or a bare `postgres://` URL.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        if let Some(dir) = s.strip_prefix("sled:") {
            if dir.is_empty() {
                bail!("sled: needs a data directory, e.g. sled:/var/lib/bootlane");
            }
            return Ok(Self::Sled(PathBuf::from(dir)));
        }
        let url = s.strip_prefix("postgres:").filter(|u| u.contains("://")).unwrap_or(s);
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            url.parse::<tokio_postgres::Config>()
                .with_context(|| format!("{} is not a valid PostgreSQL URL", pg::redact(url)))?;
            return Ok(Self::Postgres(url.to_owned()));
        }
        bail!("{s:?}: expected sled:<data directory> or postgres:<postgres://user@host/db>")
    }
}

impl Location {
    async fn open(&self, token: &tokio_util::sync::CancellationToken) -> anyhow::Result<Store> {
        match self {
            Self::Sled(dir) => Store::open(dir).map_err(|e| {
                if e.is_locked() {
                    anyhow::anyhow!(
                        "{} is in use (a running bootlane holds it): stop it first",
                        dir.display()
                    )
                } else {
                    anyhow::Error::new(e).context(format!("opening the store in {}", dir.display()))
                }
            }),
            Self::Postgres(url) => {
                let settings = pg::PgSettings {
                    url: url.clone(),
                    pool_size: 2,
                    tls: pg::TlsMode::from_url(url),
                    ca_file: None,
                };
                // Journals are not copied; the directory is not used.
                Store::open_postgres(&std::env::temp_dir(), &settings, token.clone())
                    .await
                    .with_context(|| format!("opening {}", pg::redact(url)))
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Sled(d) => format!("sled:{}", d.display()),
            Self::Postgres(u) => format!("postgres:{}", pg::redact(u)),
        }
    }
}

/// Every non-empty tree's record count and the SHA-256 of its pairs (each as key length, key, value
/// length, value), in key order.
fn summary(snapshot: &Snapshot) -> Vec<(String, usize, String)> {
    snapshot
        .trees
        .iter()
        .filter(|(name, pairs)| name != ID_TREE && !pairs.is_empty())
        .map(|(name, pairs)| {
            let mut h = Sha256::new();
            for (k, v) in pairs {
                h.update((k.len() as u64).to_be_bytes());
                h.update(k);
                h.update((v.len() as u64).to_be_bytes());
                h.update(v);
            }
            (name.clone(), pairs.len(), hex::encode(h.finalize()))
        })
        .collect()
}

/// Copies `from` into `to` and verifies; returns the report printed by the command.
///
/// # Errors
/// Either store cannot be opened, the target holds data, the copy fails, or the
/// verification finds a difference (the message names the tree).
pub async fn migrate(from: &Location, to: &Location) -> anyhow::Result<String> {
    if from == to {
        bail!("--from and --to name the same store");
    }
    let token = tokio_util::sync::CancellationToken::new();
    let _stop = token.clone().drop_guard();
    let source = from.open(&token).await?;
    let mut snapshot = source.snapshot().await.context("reading the source")?;
    // Journals (event history, audit log) stay with their node's data directory.
    let journals = source.journal_names();
    snapshot.trees.retain(|(name, _)| !journals.contains(name));
    let target = to.open(&token).await?;
    target.load(&snapshot).await.map_err(|e| match e {
        super::StoreError::Conflict(_) => {
            anyhow::anyhow!("{} already holds data; migrate only into an empty store", to.describe())
        }
        e => anyhow::Error::new(e).context("writing the target"),
    })?;
    let mut copied = target.snapshot().await.context("reading the target back")?;
    copied.trees.retain(|(name, _)| !journals.contains(name));
    let (want, got) = (summary(&snapshot), summary(&copied));
    for (name, n, sum) in &want {
        match got.iter().find(|(g, _, _)| g == name) {
            Some((_, m, s)) if m == n && s == sum => {}
            Some((_, m, _)) => bail!("verification failed: tree {name:?} has {m} records in the target, {n} in the source, or its checksum differs"),
            None => bail!("verification failed: tree {name:?} is missing from the target"),
        }
    }
    let mut report = format!("migrated {} to {}:\n", from.describe(), to.describe());
    for (name, n, sum) in &want {
        report.push_str(&format!("  {name:<28} {n:>8} records  sha256 {}\n", &sum[..16]));
    }
    report.push_str(&format!(
        "verified: {} trees, {} records, counts and checksums equal",
        want.len(),
        want.iter().map(|(_, n, _)| n).sum::<usize>()
    ));
    if !journals.is_empty() {
        report.push_str(&format!(
            "\nnot copied (per-node journals in the data directory): {}",
            journals.join(", ")
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!(
            "sled:/var/lib/bootlane".parse::<Location>().unwrap(),
            Location::Sled("/var/lib/bootlane".into())
        );
        let pg = Location::Postgres("postgres://bl@db/bootlane".into());
        assert_eq!("postgres:postgres://bl@db/bootlane".parse::<Location>().unwrap(), pg);
        assert_eq!("postgres://bl@db/bootlane".parse::<Location>().unwrap(), pg);
        let e = "mysql://x".parse::<Location>().unwrap_err().to_string();
        assert!(e.contains("expected sled:<data directory> or postgres:"), "{e}");
        assert!("sled:".parse::<Location>().is_err());
    }

    /// sled → PostgreSQL → sled: every record arrives, verified, and a second migrate into
    /// the now non-empty database is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sled_to_postgres_and_back() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Store::open(dir.path()).unwrap();
            let kv = s.kv("settings").unwrap();
            kv.put("dns", &serde_json::json!({"port": 53})).await.unwrap();
            for i in 0..300u64 {
                kv.put(&format!("k{i}"), &i).await.unwrap();
            }
        }
        let cluster = pg::throwaway::Cluster::start().unwrap();
        let url = cluster.create_database("m").await.unwrap();
        let (from, to) = (Location::Sled(dir.path().into()), Location::Postgres(url.clone()));
        let report = migrate(&from, &to).await.unwrap();
        assert!(
            report.contains("verified: ") && report.contains("301 records"),
            "{report}"
        );
        let again = migrate(&from, &to).await.unwrap_err().to_string();
        assert!(again.contains("already holds data"), "{again}");
        let back = tempfile::tempdir().unwrap();
        let report = migrate(&to, &Location::Sled(back.path().into())).await.unwrap();
        assert!(report.contains("301 records"), "{report}");
        let s = Store::open(back.path()).unwrap();
        assert_eq!(s.kv("settings").unwrap().get::<u64>("k299").unwrap(), Some(299));
    }
}
