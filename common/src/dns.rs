//! Types shared by the XDP DNS responder and the control plane's projection of the
//! DNS record store into BPF maps.
//!
//! # Conventions (both sides rely on these; tested in `controlplane`)
//! - **Qnames** are stored in DNS wire format (length-prefixed labels, RFC 1035 §3.1),
//!   **lowercased** (ASCII `A-Z` only, RFC 4343), including the terminating zero byte,
//!   and zero-padded to [`MAX_QNAME_LEN`]. `qname_len` is the wire length including the
//!   terminating zero byte. The XDP program lowercases the query name the same way
//!   before the lookup.
//! - **Addresses** (A/AAAA rdata, server addresses, LPM keys) are stored in **network
//!   byte order** as raw bytes, so the XDP program copies them verbatim into the packet.
//!   IPv4 addresses in the 16-byte slots use the IPv4-mapped form `::ffff:a.b.c.d`
//!   (RFC 4291 §2.5.5.2) so one LPM trie serves both families.
//! - **Scopes**: scope `0` ([`SCOPE_GLOBAL`]) is the answer for clients that match no
//!   subnet. Every other scope id comes from the [`DNS_SCOPES`] LPM trie (client address →
//!   scope). The XDP program looks up `(qname, qtype, scope)` and, on a miss, `(qname,
//!   qtype, 0)`; the control plane only writes a scoped entry where the answer differs.
//! - **Map names**: the `#[map]` macro needs string literals, so the program repeats the
//!   names below; a test in the `tests` crate loads the object and checks every constant.
//! - No `bool`, `Option` or enums inside map types: fixed-width integers and explicit
//!   padding only, so the layout is the same on both sides.

/// Longest qname the fast path answers, in wire bytes including the final zero byte.
/// Longer names are passed to userspace (`XDP_PASS`, counter [`CNT_PASS_TOO_LONG`]).
pub const MAX_QNAME_LEN: usize = 128;
/// Most records per RRset the fast path answers; larger RRsets stay in userspace.
pub const MAX_ADDRS: usize = 8;
/// Default capacity of [`DNS_RECORDS`] (entries); the control plane may resize it at load
/// time (`[dns.xdp] map_capacity`).
pub const DNS_MAP_CAPACITY: u32 = 131_072;
/// Capacity of [`DNS_SCOPES`] (prefixes).
pub const DNS_SCOPE_CAPACITY: u32 = 4096;
/// Capacity of [`DNS_SERVER_ADDRS`] (addresses the fast path answers on).
pub const DNS_SERVER_ADDR_CAPACITY: u32 = 256;

/// The global scope (clients in no known subnet).
pub const SCOPE_GLOBAL: u32 = 0;

/// RR type A (RFC 1035 §3.2.2).
pub const QTYPE_A: u16 = 1;
/// RR type AAAA (RFC 3596 §2.1).
pub const QTYPE_AAAA: u16 = 28;

/// Map name: `HashMap<DnsKey, DnsAnswer>`.
pub const DNS_RECORDS: &str = "DNS_RECORDS";
/// Map name: `LpmTrie<[u8; 16], u32>` client address (IPv4-mapped for v4) → scope id.
pub const DNS_SCOPES: &str = "DNS_SCOPES";
/// Map name: `HashMap<[u8; 16], u32>` server addresses the fast path answers for (value unused, 1).
pub const DNS_SERVER_ADDRS: &str = "DNS_SERVER_ADDRS";
/// Map name: `Array<DnsConfig>` with one element.
pub const DNS_CONFIG: &str = "DNS_CONFIG";
/// Map name: `PerCpuArray<u64>` indexed by the `CNT_*` constants.
pub const DNS_COUNTERS: &str = "DNS_COUNTERS";

/// Map name: `Array<RrlBucket>` of [`DNS_RRL_CAPACITY`] buckets: response rate limiting
/// state per client prefix (the source address masked with [`DnsConfig::rrl_mask_v4`] or
/// [`DnsConfig::rrl_mask_v6`], IPv4-mapped for v4), at the index a keyed multiplicative
/// hash of the prefix gives ([`DnsConfig::rrl_seed`]). A prefix finding another in its
/// bucket takes it over (as Knot's RRL table does), so the memory is fixed whatever the
/// number of sources. An array rather than an LRU hash: its lookup is a few inlined
/// instructions where the LRU hash's cost 60-80 ns per packet here. Written by the
/// program only; userspace may read it.
pub const DNS_RRL: &str = "DNS_RRL";
/// Buckets of [`DNS_RRL`] (a power of two: the hash's top 16 bits index it).
pub const DNS_RRL_CAPACITY: u32 = 65_536;

/// Map name: `PerCpuArray<u32>` with one element, private to the program (a verifier aid:
/// values read back from a map are unknown to the verifier). Userspace never touches it.
pub const DNS_SCRATCH: &str = "DNS_SCRATCH";
/// Map name: `PerCpuArray<DnsKey>` with one element, private to the program: the lookup
/// key is built there rather than on the 512-byte BPF stack. Userspace never touches it.
pub const DNS_KEY_SCRATCH: &str = "DNS_KEY_SCRATCH";

/// Counter: queries answered by the fast path (`XDP_TX`).
pub const CNT_ANSWERED: u32 = 0;
/// Counter: passed, not a DNS query for us (not IP/UDP, other port, other address).
pub const CNT_PASS_NOT_DNS: u32 = 1;
/// Counter: passed, no entry for (qname, qtype) in the map.
pub const CNT_PASS_MISS: u32 = 2;
/// Counter: passed, a DNS query the fast path does not handle (qtype, class, opcode, flags, sections).
pub const CNT_PASS_UNSUPPORTED: u32 = 3;
/// Counter: passed, qname longer than [`MAX_QNAME_LEN`].
pub const CNT_PASS_TOO_LONG: u32 = 4;
/// Counter: passed, malformed packet (truncated headers, bad label lengths).
pub const CNT_PASS_MALFORMED: u32 = 5;
/// Counter: an answer the fast path would have sent, dropped by response rate limiting.
pub const CNT_RRL_DROPPED: u32 = 6;
/// Counter: an answer over the rate limit sent truncated instead (TC=1, no answer
/// records: the "slip" that lets a real client retry over TCP). Not in [`CNT_ANSWERED`].
pub const CNT_RRL_SLIPPED: u32 = 7;
/// Number of counters.
pub const CNT_MAX: u32 = 8;

/// Key of [`DNS_RECORDS`]: 136 bytes, no implicit padding.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DnsKey {
    /// Scope id (0 = global), see the module docs.
    pub scope: u32,
    /// Query type, host byte order ([`QTYPE_A`] or [`QTYPE_AAAA`]).
    pub qtype: u16,
    /// Wire length of `qname` including the final zero byte.
    pub qname_len: u16,
    /// Lowercased wire-format qname, zero-padded.
    pub qname: [u8; MAX_QNAME_LEN],
}

#[cfg(feature = "user")]
// SAFETY: repr(C), only integers and byte arrays, no padding (4 + 2 + 2 + 128).
unsafe impl aya::Pod for DnsKey {}

/// Value of [`DNS_RECORDS`]: one RRset of A or AAAA records, 136 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DnsAnswer {
    /// TTL in seconds, host byte order (written into each answer record).
    pub ttl: u32,
    /// Number of valid entries in `addrs` (1..=[`MAX_ADDRS`]). `0` means "pass this
    /// query to userspace": the zone writes such an entry for a scope whose answer the
    /// fast path cannot give while a global entry exists (counted as [`CNT_PASS_MISS`]).
    pub count: u32,
    /// Addresses in network byte order; for A only the first 4 bytes of each slot are used.
    pub addrs: [[u8; 16]; MAX_ADDRS],
}

#[cfg(feature = "user")]
// SAFETY: repr(C), integers and byte arrays only, no padding.
unsafe impl aya::Pod for DnsAnswer {}

/// Flag in [`DnsConfig::flags`]: set RA in answers (upstream forwarding configured).
pub const CFG_FLAG_RA: u32 = 1;
/// Flag in [`DnsConfig::flags`]: some entry of [`DNS_RECORDS`] has a scope other than
/// [`SCOPE_GLOBAL`], so the client's scope must be looked up in [`DNS_SCOPES`]. Without
/// it the program skips the LPM lookup (set by the control plane's `apply`).
pub const CFG_FLAG_SCOPED: u32 = 2;
/// Flag in [`DnsConfig::flags`]: the server has more addresses than
/// [`INLINE_SERVER_ADDRS`]; they are checked in [`DNS_SERVER_ADDRS`] instead of
/// [`DnsConfig::server_addrs`] (set by the control plane's `apply`).
pub const CFG_FLAG_SERVER_MAP: u32 = 4;
/// Server addresses kept inline in [`DnsConfig`]: compared in a few instructions,
/// where the hash lookup in [`DNS_SERVER_ADDRS`] costs tens of nanoseconds per packet.
pub const INLINE_SERVER_ADDRS: usize = 8;

/// Single element of [`DNS_CONFIG`]: how answers are built and which destinations are
/// the server's, and the response rate limit. 184 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct DnsConfig {
    /// UDP port the DNS server listens on, host byte order. 0 disables the fast path.
    pub port: u16,
    /// UDP payload size advertised in the OPT record of EDNS answers (RFC 6891 §6.2.3).
    pub edns_udp_size: u16,
    /// `CFG_FLAG_*` bits.
    pub flags: u32,
    /// Entries of `server_addrs` in use (without [`CFG_FLAG_SERVER_MAP`]).
    pub server_addr_count: u32,
    /// Response rate limiting: nanoseconds between two answers to one client prefix
    /// (1e9 / responses per second); `0` turns RRL off. See [`RrlBucket`].
    pub rrl_interval_ns: u32,
    /// The server's addresses (IPv4-mapped for v4), when they fit: the first
    /// `server_addr_count` are valid. Filled by the control plane's `apply` from the
    /// projection's server addresses.
    pub server_addrs: [[u8; 16]; INLINE_SERVER_ADDRS],
    /// RRL slip: every `rrl_slip`-th limited answer of a prefix is sent truncated (TC=1),
    /// the others are dropped; `0` never slips, `1` always does.
    pub rrl_slip: u32,
    /// Key of the hash that places a prefix in [`DNS_RRL`]: random per process, so a
    /// flood cannot choose sources that share one bucket with a victim.
    pub rrl_seed: u32,
    /// Mask applied to an IPv4 client's address (IPv4-mapped form) to get its RRL prefix,
    /// e.g. `::ffff:255.255.255.0` for /24, as two native-endian words of the 16 bytes
    /// (the program masks the address as it loads it from the packet, a word at a time).
    pub rrl_mask_v4: [u64; 2],
    /// Mask applied to an IPv6 client's address to get its RRL prefix, e.g. /56, in the
    /// same form.
    pub rrl_mask_v6: [u64; 2],
}

#[cfg(feature = "user")]
// SAFETY: repr(C), integers and byte arrays only, no padding (2 + 2 + 4 + 4 + 4 + 128 + 4 +
// 4 + 16 + 16).
unsafe impl aya::Pod for DnsConfig {}

/// Burst of response rate limiting, in nanoseconds of credit: a prefix that was quiet may
/// get one second's worth of answers (`responses_per_second`) at once, as Knot and BIND
/// allow, before the limit applies.
pub const RRL_BURST_NS: u64 = 1_000_000_000;

/// Value of [`DNS_RRL`]: one client prefix's state, kept as GCRA (the generic cell rate
/// algorithm, ITU-T I.371): `tat_ns` is the theoretical arrival time of the next answer
/// on the `bpf_ktime_get_ns` clock. An answer at `now` is within the limit when
/// `max(tat_ns, now) + interval - now <= RRL_BURST_NS`, which then advances `tat_ns`;
/// otherwise it is limited and `limited` counts it (for the slip). 32 bytes.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct RrlBucket {
    /// The prefix holding the bucket, as the program reads it: two native-endian words
    /// of the masked 16-byte address (all zero: free).
    pub prefix: [u64; 2],
    /// Theoretical arrival time of the next answer, nanoseconds (monotonic clock).
    pub tat_ns: u64,
    /// Limited answers of this prefix so far (wraps).
    pub limited: u32,
    /// Explicit padding (zero).
    pub pad: u32,
}

#[cfg(feature = "user")]
// SAFETY: repr(C), integers only, no padding (16 + 8 + 4 + 4).
unsafe impl aya::Pod for RrlBucket {}

/// Size in bytes of [`DnsKey`]; asserted at compile time so both sides agree.
pub const DNS_KEY_SIZE: usize = 4 + 2 + 2 + MAX_QNAME_LEN;
const _: () = assert!(size_of::<DnsKey>() == DNS_KEY_SIZE);
const _: () = assert!(size_of::<DnsAnswer>() == 8 + 16 * MAX_ADDRS);
const _: () = assert!(size_of::<DnsConfig>() == 16 + 16 * INLINE_SERVER_ADDRS + 8 + 32);
const _: () = assert!(size_of::<RrlBucket>() == 32);
