//! The wake history (table `wol_history`): one [`WolRecord`] per wake of one MAC, whether
//! it came from the API, a batch or a schedule, and whether it went out. Bounded: the
//! newest [`HISTORY_LIMIT`] records are kept ([`History::record`] trims the oldest). The
//! SecureOn password is never stored, only whether one was sent.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::store::{Store, StoreError, Table};

/// Most history records kept; older ones are removed as new ones arrive.
pub const HISTORY_LIMIT: usize = 10_000;

/// One wake of one MAC address.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct WolRecord {
    /// Id (increasing: newer records have larger ids).
    pub id: u64,
    /// When, RFC 3339 UTC.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub time: OffsetDateTime,
    /// The woken MAC, lower-case colon form.
    pub mac: String,
    /// The registered host with that MAC, if any.
    pub host_id: Option<u64>,
    /// Its name.
    pub host_name: Option<String>,
    /// Interfaces the packet was sent out of.
    pub interfaces: Vec<String>,
    /// Destinations (`broadcast:port`), per interface in the order of `interfaces`.
    pub broadcasts: Vec<String>,
    /// Packets per destination.
    pub repeat: u8,
    /// True when a SecureOn password was appended (the password is not stored).
    pub secureon: bool,
    /// Datagrams that went out.
    pub packets_sent: u32,
    /// Who asked: the API user, or `system` for schedules.
    pub actor: String,
    /// `api`, `batch` or `schedule:<id>`.
    pub source: String,
    /// True when at least one datagram went out on every chosen interface.
    pub ok: bool,
    /// What failed (per interface and destination), if anything.
    pub error: Option<String>,
}

bootlane_core::store::entity!(WolRecord, "wol_history");

/// The history table.
#[derive(Clone)]
pub struct History {
    table: Table<WolRecord>,
    limit: usize,
}

impl History {
    /// Opens the table.
    ///
    /// # Errors
    /// Store errors.
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        Self::with_limit(store, HISTORY_LIMIT)
    }

    /// Opens the table keeping at most `limit` records (tests use a small one).
    ///
    /// # Errors
    /// Store errors.
    pub fn with_limit(store: &Store, limit: usize) -> Result<Self, StoreError> {
        Ok(Self {
            table: store.table()?,
            limit: limit.max(1),
        })
    }

    /// Stores `r` under a new id, trims the table to its limit, answers the stored record.
    ///
    /// # Errors
    /// Store errors.
    pub async fn record(&self, r: WolRecord) -> Result<WolRecord, StoreError> {
        let r = self.table.insert(r).await?;
        let len = self.table.len();
        if len > self.limit {
            if let Some(id) = self.table.nth_oldest_id(len - self.limit)? {
                self.table.remove_below(id).await?;
            }
        }
        Ok(r)
    }

    /// Every record, newest first.
    ///
    /// # Errors
    /// Store errors.
    pub fn newest_first(&self) -> Result<Vec<WolRecord>, StoreError> {
        self.table.newest_first().collect()
    }

    /// Removes one record, answering it (`None`: no such id).
    ///
    /// # Errors
    /// Store errors.
    pub async fn remove(&self, id: u64) -> Result<Option<WolRecord>, StoreError> {
        self.table.remove(id).await
    }

    /// Removes every record; answers how many.
    ///
    /// # Errors
    /// Store errors.
    pub async fn clear(&self) -> Result<usize, StoreError> {
        self.table.remove_below(u64::MAX).await
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(mac: &str) -> WolRecord {
        WolRecord {
            id: 0,
            time: OffsetDateTime::now_utc(),
            mac: mac.into(),
            host_id: None,
            host_name: None,
            interfaces: vec!["eth0".into()],
            broadcasts: vec!["10.0.0.255:9".into()],
            repeat: 1,
            secureon: false,
            packets_sent: 1,
            actor: "system".into(),
            source: "api".into(),
            ok: true,
            error: None,
        }
    }

    #[tokio::test]
    async fn records_newest_first_remove_and_clear() {
        let h = History::open(&Store::temporary()).unwrap();
        let a = h.record(rec("52:54:00:00:00:01")).await.unwrap();
        let b = h.record(rec("52:54:00:00:00:02")).await.unwrap();
        assert!(b.id > a.id);
        let all = h.newest_first().unwrap();
        assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), [b.id, a.id]);
        assert_eq!(h.remove(a.id).await.unwrap().unwrap().mac, "52:54:00:00:00:01");
        assert!(h.remove(a.id).await.unwrap().is_none());
        assert_eq!(h.clear().await.unwrap(), 1);
        assert!(h.is_empty());
    }

    #[tokio::test]
    async fn bounded_to_the_newest() {
        let h = History::with_limit(&Store::temporary(), 5).unwrap();
        let mut ids = Vec::new();
        for _ in 0..8 {
            ids.push(h.record(rec("52:54:00:00:00:01")).await.unwrap().id);
        }
        assert_eq!(h.len(), 5);
        let kept: Vec<u64> = h.newest_first().unwrap().iter().map(|r| r.id).rev().collect();
        assert_eq!(kept, ids[3..], "the oldest three are gone");
    }
}
