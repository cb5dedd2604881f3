//! Response rate limiting (RRL) of UDP answers per client prefix, as Knot (`rrl`) and
//! BIND (`rate-limit`) do it: a server answering spoofed queries is a reflector that
//! amplifies a flood towards the forged source, so answers to one prefix (/24 and /56 by
//! default) are limited to `responses_per_second`; over the limit they are dropped, and
//! every `slip`-th one is sent truncated (TC=1, no records) so a real client behind the
//! prefix retries over TCP, which cannot be spoofed and is never limited.
//!
//! The state is a fixed table of [`RrlConfig::table_size`] buckets, hashed by prefix with
//! a per-process random key (so a flood cannot aim at one bucket), split into shards
//! with a lock each. A bucket holds one prefix's GCRA state (the generic cell rate
//! algorithm, ITU-T I.371: the theoretical arrival time of its next answer); a prefix
//! that hashes to a bucket held by another prefix takes it over, as Knot's table does,
//! so memory stays bounded whatever the number of sources. The XDP fast path keeps the
//! same algorithm in its own map for the answers it sends (`common::dns::RrlBucket`).

use std::{
    hash::{BuildHasher, RandomState},
    net::IpAddr,
    sync::Mutex,
    time::Instant,
};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `[dns.rrl]`: response rate limiting of UDP answers (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RrlConfig {
    /// Rate limiting on.
    pub enabled: bool,
    /// Answers per second to one prefix (1-1000000000), with a burst of one second's worth.
    pub responses_per_second: u32,
    /// Every `slip`-th limited answer is sent truncated (TC=1) instead of dropped: 0 never, 1
    /// always (0-10).
    pub slip: u32,
    /// Prefix grouping IPv4 clients (1-32).
    pub ipv4_prefix_len: u8,
    /// Prefix grouping IPv6 clients (1-128).
    pub ipv6_prefix_len: u8,
    /// Buckets of the userspace table (64-16777216); the XDP program keeps 65,536.
    pub table_size: u32,
}

impl Default for RrlConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            responses_per_second: 20,
            slip: 2,
            ipv4_prefix_len: 24,
            ipv6_prefix_len: 56,
            table_size: 65_536,
        }
    }
}

impl RrlConfig {
    /// Checks the ranges documented on each field.
    ///
    /// # Errors
    /// A message naming the bad key and its range.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1_000_000_000).contains(&self.responses_per_second) {
            return Err("[dns.rrl] responses_per_second must be 1-1000000000".into());
        }
        if self.slip > 10 {
            return Err("[dns.rrl] slip must be 0-10".into());
        }
        if !(1..=32).contains(&self.ipv4_prefix_len) {
            return Err("[dns.rrl] ipv4_prefix_len must be 1-32".into());
        }
        if !(1..=128).contains(&self.ipv6_prefix_len) {
            return Err("[dns.rrl] ipv6_prefix_len must be 1-128".into());
        }
        if !(64..=16_777_216).contains(&self.table_size) {
            return Err("[dns.rrl] table_size must be 64-16777216".into());
        }
        Ok(())
    }

    /// Nanoseconds between two answers to one prefix (the GCRA emission interval); 0 when
    /// RRL is off.
    pub fn interval_ns(&self) -> u32 {
        if self.enabled {
            1_000_000_000 / self.responses_per_second.max(1)
        } else {
            0
        }
    }

    /// The 16-byte masks (IPv4-mapped form for v4) the XDP program applies to a client's
    /// address to get its prefix: `(v4, v6)`.
    pub fn masks(&self) -> ([u8; 16], [u8; 16]) {
        let v4 = u128::MAX << (32 - u32::from(self.ipv4_prefix_len.clamp(1, 32)));
        let v6 = u128::MAX
            .checked_shl(128 - u32::from(self.ipv6_prefix_len.clamp(1, 128)))
            .unwrap_or(0);
        (v4.to_be_bytes(), v6.to_be_bytes())
    }

    /// [`RrlConfig::masks`] as the XDP program's config holds them
    /// (`DnsConfig::rrl_mask_v4`/`rrl_mask_v6`): two native-endian words each.
    pub fn mask_words(&self) -> ([u64; 2], [u64; 2]) {
        let words = |b: [u8; 16]| {
            let (a, z) = b.split_at(8);
            [
                u64::from_ne_bytes(a.try_into().expect("8 bytes")),
                u64::from_ne_bytes(z.try_into().expect("8 bytes")),
            ]
        };
        let (v4, v6) = self.masks();
        (words(v4), words(v6))
    }
}

/// What the limiter says about one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the limit: send it.
    Send,
    /// Over the limit, and this one slips: send it truncated.
    Slip,
    /// Over the limit: drop it.
    Drop,
}

/// Burst of credit a quiet prefix has: one second (`common::dns::RRL_BURST_NS`).
const BURST_NS: u64 = bootlane_common::dns::RRL_BURST_NS;
/// Shards of the table (each with its own lock).
const SHARDS: usize = 64;

#[derive(Clone, Copy, Default)]
struct Bucket {
    /// The prefix (address bits masked, IPv4 as IPv4-mapped).
    prefix: u128,
    /// The bucket holds a prefix.
    used: bool,
    tat_ns: u64,
    limited: u32,
}

/// The limiter: a bounded table of GCRA buckets (see the module docs). Thread-safe.
pub struct Rrl {
    cfg: RrlConfig,
    interval_ns: u64,
    mask_v4: u128,
    mask_v6: u128,
    hasher: RandomState,
    shards: Vec<Mutex<Vec<Bucket>>>,
    per_shard: usize,
    epoch: Instant,
}

impl Rrl {
    /// A limiter for `cfg` (assumed valid, see [`RrlConfig::validate`]).
    pub fn new(cfg: &RrlConfig) -> Self {
        let per_shard = (cfg.table_size as usize).div_ceil(SHARDS).max(1);
        let (v4, v6) = cfg.masks();
        Self {
            cfg: cfg.clone(),
            interval_ns: u64::from(cfg.interval_ns()),
            mask_v4: u128::from_be_bytes(v4),
            mask_v6: u128::from_be_bytes(v6),
            hasher: RandomState::new(),
            shards: (0..SHARDS)
                .map(|_| Mutex::new(vec![Bucket::default(); per_shard]))
                .collect(),
            per_shard,
            epoch: Instant::now(),
        }
    }

    /// The configuration in effect.
    pub fn config(&self) -> &RrlConfig {
        &self.cfg
    }

    /// `client`'s prefix and where its bucket is: (prefix, shard, slot in the shard).
    fn place(&self, client: IpAddr) -> (u128, usize, usize) {
        let prefix = match client {
            IpAddr::V4(a) => u128::from_be_bytes(a.to_ipv6_mapped().octets()) & self.mask_v4,
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => u128::from_be_bytes(v4.to_ipv6_mapped().octets()) & self.mask_v4,
                None => u128::from_be_bytes(a.octets()) & self.mask_v6,
            },
        };
        let h = self.hasher.hash_one(prefix) as usize;
        (prefix, h % SHARDS, (h / SHARDS) % self.per_shard)
    }

    /// Charges one answer to `client`'s prefix now.
    pub fn check(&self, client: IpAddr) -> Verdict {
        let now = self.epoch.elapsed().as_nanos() as u64;
        self.check_at(client, now)
    }

    /// Charges one answer to `client`'s prefix at `now_ns` (nanoseconds of a monotonic clock).
    pub fn check_at(&self, client: IpAddr, now_ns: u64) -> Verdict {
        if self.interval_ns == 0 {
            return Verdict::Send;
        }
        let (prefix, shard, slot) = self.place(client);
        let mut shard = self.shards[shard].lock().expect("rrl shard lock");
        let b = &mut shard[slot];
        if !b.used || b.prefix != prefix {
            *b = Bucket {
                prefix,
                used: true,
                tat_ns: now_ns + self.interval_ns,
                limited: 0,
            };
            return Verdict::Send;
        }
        let next = b.tat_ns.max(now_ns) + self.interval_ns;
        if next - now_ns <= BURST_NS {
            b.tat_ns = next;
            return Verdict::Send;
        }
        b.limited = b.limited.wrapping_add(1);
        if self.cfg.slip != 0 && b.limited.is_multiple_of(self.cfg.slip) {
            Verdict::Slip
        } else {
            Verdict::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_TABLE: u32 = 65_536;

    fn rrl(rate: u32, slip: u32) -> Rrl {
        Rrl::new(&RrlConfig {
            responses_per_second: rate,
            slip,
            // Large enough that two test prefixes sharing a bucket (the direct-mapped
            // table's eviction, with a random hash key) is a one-in-65,536 event.
            table_size: TEST_TABLE,
            ..RrlConfig::default()
        })
    }

    #[test]
    fn burst_then_rate_then_slip_every_nth() {
        let r = rrl(20, 2);
        let a: IpAddr = "10.9.0.1".parse().unwrap();
        // A burst of one second's worth, at one instant.
        for i in 0..20 {
            assert_eq!(r.check_at(a, 1_000), Verdict::Send, "answer {i}");
        }
        // Then limited: dropped, slipped, dropped, slipped.
        let v: Vec<_> = (0..4).map(|_| r.check_at(a, 1_000)).collect();
        assert_eq!(v, [Verdict::Drop, Verdict::Slip, Verdict::Drop, Verdict::Slip]);
        // The same /24 shares the bucket; another /24 (one whose bucket differs: the hash
        // key is random) does not.
        assert_ne!(r.check_at("10.9.0.200".parse().unwrap(), 1_000), Verdict::Send);
        let other = (1..=255u8)
            .map(|i| IpAddr::from([10, 9, i, 1]))
            .find(|o| (r.place(*o).1, r.place(*o).2) != (r.place(a).1, r.place(a).2))
            .expect("some /24 in another bucket");
        assert_eq!(r.check_at(other, 1_000), Verdict::Send);
        // 50 ms later (one interval at 20/s) one more answer is due, not two.
        assert_eq!(r.check_at(a, 1_000 + 50_000_000), Verdict::Send);
        assert_ne!(r.check_at(a, 1_000 + 50_000_000), Verdict::Send);
        // Over 10 s the limit holds: about 20 per second.
        let mut sent = 0;
        for ms in 0..10_000u64 {
            for _ in 0..10 {
                if r.check_at(a, 2_000_000_000 + ms * 1_000_000) == Verdict::Send {
                    sent += 1;
                }
            }
        }
        assert!((200..=221).contains(&sent), "{sent} answers in 10 s at 20/s");
    }

    #[test]
    fn slip_zero_never_one_always_and_off_sends_all() {
        let a: IpAddr = "fd00:1:2:3::9".parse().unwrap();
        let (never, always) = (rrl(1, 0), rrl(1, 1));
        assert_eq!(never.check_at(a, 0), Verdict::Send);
        assert_eq!(always.check_at(a, 0), Verdict::Send);
        for _ in 0..5 {
            assert_eq!(never.check_at(a, 0), Verdict::Drop);
            assert_eq!(always.check_at(a, 0), Verdict::Slip);
        }
        // /56: the same prefix for ::ff00:..., another beyond it.
        assert_eq!(always.check_at("fd00:1:2:ff::1".parse().unwrap(), 0), Verdict::Slip);
        assert_eq!(always.check_at("fd00:1:2:100::1".parse().unwrap(), 0), Verdict::Send);
        let off = Rrl::new(&RrlConfig {
            enabled: false,
            ..RrlConfig::default()
        });
        assert!((0..1000).all(|_| off.check_at(a, 0) == Verdict::Send));
    }

    #[test]
    fn masks_and_validation() {
        let (v4, v6) = RrlConfig::default().masks();
        assert_eq!(&v4[..], &[255; 15].iter().copied().chain([0]).collect::<Vec<u8>>()[..]);
        assert_eq!(&v6[..7], &[255; 7]);
        assert_eq!(&v6[7..], &[0; 9]);
        assert_eq!(RrlConfig::default().interval_ns(), 50_000_000);
        for bad in [
            RrlConfig {
                responses_per_second: 0,
                ..Default::default()
            },
            RrlConfig {
                slip: 11,
                ..Default::default()
            },
            RrlConfig {
                ipv4_prefix_len: 33,
                ..Default::default()
            },
            RrlConfig {
                ipv6_prefix_len: 0,
                ..Default::default()
            },
            RrlConfig {
                table_size: 1,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(RrlConfig::default().validate().is_ok());
    }

    #[test]
    fn the_table_is_bounded_whatever_the_sources() {
        let r = rrl(20, 2);
        for i in 0..100_000u32 {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(i << 8));
            r.check_at(ip, 0);
        }
        let buckets: usize = r.shards.iter().map(|s| s.lock().unwrap().len()).sum();
        assert_eq!(buckets, TEST_TABLE as usize);
    }
}
