//! The XDP DNS responder: answers standard A/AAAA queries for local names straight from
//! the [`DNS_RECORDS`] map with `XDP_TX`, and passes everything else to the userspace DNS
//! server unchanged (`XDP_PASS`, fail open). The ABI (map names, key and value layouts,
//! counters) is `bootlane_common::dns`; the control plane fills the maps.
//!
//! Path of an answered query: Ethernet (one optional 802.1Q tag) → IPv4 without options
//! or IPv6 without extension headers → UDP to `DnsConfig.port` and to one of the server's
//! addresses (inline in `DnsConfig`, or [`DNS_SERVER_ADDRS`] when there are more than 8)
//! → query checks and lowercased qname into a per-CPU key ([`dns::parse_query`]) → scope
//! of the client from [`DNS_SCOPES`] when some entry is scoped → `(qname, qtype, scope)`
//! then `(qname, qtype, 0)` in [`DNS_RECORDS`] → response rate limiting per client prefix
//! ([`DNS_RRL`], a hashed bucket array: within the limit, dropped, or slipped as a truncated answer) → tail grown/shrunk to the answer size,
//! addresses and ports swapped, answers and OPT written, the IPv4 header checksum
//! recomputed and the UDP checksum summed from what was written → `XDP_TX`.
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]
#![cfg_attr(not(target_arch = "bpf"), allow(dead_code, unused_imports))]

#[cfg(target_arch = "bpf")]
mod csum;
#[cfg(target_arch = "bpf")]
mod dns;
#[cfg(target_arch = "bpf")]
mod parse;

/// On the host (`cargo clippy --workspace`) this crate is an empty binary; the program
/// only exists for the BPF target.
#[cfg(not(target_arch = "bpf"))]
fn main() {}

#[cfg(target_arch = "bpf")]
mod program {
    use aya_ebpf::{
        bindings::xdp_action::{XDP_DROP, XDP_PASS, XDP_TX},
        helpers::generated::{bpf_ktime_get_coarse_ns, bpf_xdp_adjust_head, bpf_xdp_adjust_tail},
        macros::{map, xdp},
        maps::{lpm_trie::Key, Array, HashMap, LpmTrie, PerCpuArray},
        programs::XdpContext,
    };
    use bootlane_common::dns::{
        DnsAnswer, DnsConfig, DnsKey, RrlBucket, CFG_FLAG_RA, CFG_FLAG_SCOPED, CFG_FLAG_SERVER_MAP, CNT_ANSWERED,
        CNT_MAX, CNT_PASS_MALFORMED, CNT_PASS_MISS, CNT_PASS_NOT_DNS, CNT_PASS_UNSUPPORTED, CNT_RRL_DROPPED,
        CNT_RRL_SLIPPED, DNS_MAP_CAPACITY, DNS_RRL_CAPACITY, DNS_SCOPE_CAPACITY, DNS_SERVER_ADDR_CAPACITY,
        INLINE_SERVER_ADDRS, MAX_ADDRS, MAX_QNAME_LEN, QTYPE_A, RRL_BURST_NS, SCOPE_GLOBAL,
    };

    use crate::{
        csum,
        dns::{self, rr_len, CLASS_IN, DNS_HDR_LEN, OPT_LEN},
        parse::{self, ptr_at, write_u16, Parsed, UDP_LEN},
    };

    // ---- Maps ----
    // Names must match `bootlane_common::dns::DNS_*` (the macro needs literals); the
    // map-name test in the `tests` crate checks every constant against this object.

    /// `(scope, qtype, qname)` → RRset. Resized at load time by the control plane.
    #[map(name = "DNS_RECORDS")]
    static DNS_RECORDS: HashMap<DnsKey, DnsAnswer> = HashMap::with_max_entries(DNS_MAP_CAPACITY, 0);

    /// Client address (IPv4-mapped for v4) → scope id.
    #[map(name = "DNS_SCOPES")]
    static DNS_SCOPES: LpmTrie<[u8; 16], u32> = LpmTrie::with_max_entries(DNS_SCOPE_CAPACITY, 0);

    /// Addresses this server answers on (IPv4-mapped for v4); value unused.
    #[map(name = "DNS_SERVER_ADDRS")]
    static DNS_SERVER_ADDRS: HashMap<[u8; 16], u32> = HashMap::with_max_entries(DNS_SERVER_ADDR_CAPACITY, 0);

    /// Answer-building parameters, one element.
    #[map(name = "DNS_CONFIG")]
    static DNS_CONFIG: Array<DnsConfig> = Array::with_max_entries(1, 0);

    /// Where the lookup key is built (one per CPU): 136 bytes the BPF stack cannot spare.
    #[map(name = "DNS_KEY_SCRATCH")]
    static DNS_KEY_SCRATCH: PerCpuArray<DnsKey> = PerCpuArray::with_max_entries(1, 0);

    /// Response rate limiting state per client prefix (GCRA, see `RrlBucket`), a hashed
    /// bucket array. Shared by every CPU and updated without a lock: two CPUs answering
    /// one prefix at the same instant may both pass on one credit, a slight overshoot that
    /// keeps the fast path free of atomics (the limit is a defence against floods, not an
    /// exact quota).
    #[map(name = "DNS_RRL")]
    static DNS_RRL: Array<RrlBucket> = Array::with_max_entries(DNS_RRL_CAPACITY, 0);

    /// Per-CPU packet counters, indexed by `CNT_*`.
    #[map(name = "DNS_COUNTERS")]
    static DNS_COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(CNT_MAX, 0);

    #[inline(always)]
    fn count(idx: u32) {
        if let Some(c) = DNS_COUNTERS.get_ptr_mut(idx) {
            // SAFETY: per-CPU slot, no concurrent writer on this CPU.
            unsafe { *c += 1 };
        }
    }

    /// Entry point: fail open. Every reason not to answer is counted and passed.
    #[xdp]
    pub fn dns_responder(ctx: XdpContext) -> u32 {
        match try_dns_responder(&ctx) {
            Ok(action) if action & SLIPPED != 0 => {
                count(CNT_RRL_SLIPPED);
                action & !SLIPPED
            }
            Ok(action) => {
                count(CNT_ANSWERED);
                action
            }
            // A failure after the frame was modified drops it: passing a half-rewritten
            // frame would hand the stack garbage (the client retries, or userspace answers
            // a retry sent over TCP).
            Err(reason) if reason & DROP_FLAG != 0 => {
                count(reason & !DROP_FLAG);
                XDP_DROP
            }
            Err(reason) => {
                count(reason);
                XDP_PASS
            }
        }
    }

    /// True when `dst` is one of the server's addresses: the inline list of the config,
    /// or the [`DNS_SERVER_ADDRS`] map when the server has more ([`CFG_FLAG_SERVER_MAP`]).
    #[inline(always)]
    fn is_server_addr(cfg: &DnsConfig, dst: &[u8; 16]) -> bool {
        if cfg.flags & CFG_FLAG_SERVER_MAP != 0 {
            // SAFETY: plain value, only tested for presence.
            return unsafe { DNS_SERVER_ADDRS.get(dst) }.is_some();
        }
        let mut i = 0usize;
        // Verifier: constant trip-count bound; `i` indexes the inline array.
        while i < INLINE_SERVER_ADDRS {
            if i as u32 >= cfg.server_addr_count {
                break;
            }
            if cfg.server_addrs[i] == *dst {
                return true;
            }
            i += 1;
        }
        false
    }

    /// IPv4-mapped IPv6 form `::ffff:a.b.c.d` of an IPv4 address (RFC 4291 §2.5.5.2).
    #[inline(always)]
    fn mapped(a: [u8; 4]) -> [u8; 16] {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3]]
    }

    /// Reads the source and destination address (16-byte form) of the IP header at `l3`.
    #[inline(always)]
    fn addrs(ctx: &XdpContext, l3: usize, v6: bool) -> Result<([u8; 16], [u8; 16]), ()> {
        if v6 {
            let s: *mut [u8; 16] = ptr_at(ctx, l3 + 8)?;
            let d: *mut [u8; 16] = ptr_at(ctx, l3 + 24)?;
            // SAFETY: bounds-checked by `ptr_at`.
            Ok(unsafe { (*s, *d) })
        } else {
            let s: *mut [u8; 4] = ptr_at(ctx, l3 + 12)?;
            let d: *mut [u8; 4] = ptr_at(ctx, l3 + 16)?;
            // SAFETY: bounds-checked by `ptr_at`.
            Ok(unsafe { (mapped(*s), mapped(*d)) })
        }
    }

    /// Largest growth of a frame: every answer record and the OPT, in bytes.
    /// Added to a counter index in an `Err` when the frame was already modified: the
    /// packet is then dropped instead of passed (counters are small indexes, so the bit is
    /// free).
    const DROP_FLAG: u32 = 0x100;
    /// Added to the action in an `Ok` when the answer was a slip (truncated by RRL): counted
    /// as [`CNT_RRL_SLIPPED`] instead of [`CNT_ANSWERED`].
    const SLIPPED: u32 = 0x100;

    /// What response rate limiting says about one answer.
    #[derive(PartialEq, Eq)]
    enum Rrl {
        /// Within the limit: send the answer.
        Send,
        /// Over the limit, and this one slips: send it truncated (TC=1, no answer records).
        Slip,
        /// Over the limit: drop it.
        Drop,
    }

    /// Response rate limiting for the client whose IP header is at `l3`: its prefix (the
    /// source address masked by the config) is hashed to a bucket of [`DNS_RRL`] and
    /// charged one answer (GCRA, see `RrlBucket`). A prefix new to its bucket takes it
    /// with a full burst. The address is read from the packet a word at a time (the
    /// 16-byte copy built for the scope lookup would be reassembled byte by byte).
    #[inline(always)]
    fn rrl(ctx: &XdpContext, cfg: &DnsConfig, l3: usize, v6: bool) -> Rrl {
        let (k0, k1) = if v6 {
            let Ok(p) = ptr_at::<[u64; 2]>(ctx, l3 + 8) else {
                return Rrl::Send;
            };
            // SAFETY: bounds-checked by `ptr_at` (x86 allows the unaligned load).
            let a = unsafe { *p };
            (a[0] & cfg.rrl_mask_v6[0], a[1] & cfg.rrl_mask_v6[1])
        } else {
            let Ok(p) = ptr_at::<u32>(ctx, l3 + 12) else {
                return Rrl::Send;
            };
            // SAFETY: as above. The IPv4-mapped form's second word: bytes 8-11 are
            // 00 00 ff ff, bytes 12-15 the address (native endian: the high half).
            let a = unsafe { *p } as u64;
            (0, (0xffff_0000 | (a << 32)) & cfg.rrl_mask_v4[1])
        };
        // Keyed Fibonacci hashing: the top 16 bits of the product index the 2^16 buckets.
        let h = (k0 ^ k1.rotate_left(29) ^ cfg.rrl_seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48;
        let Some(bucket) = DNS_RRL.get_ptr_mut(h as u32 & (DNS_RRL_CAPACITY - 1)) else {
            return Rrl::Send;
        };
        // SAFETY: a helper without arguments. The coarse clock (a few ms of resolution,
        // far below any interval worth limiting) costs less than the precise one.
        let now = unsafe { bpf_ktime_get_coarse_ns() };
        let interval = cfg.rrl_interval_ns as u64;
        // SAFETY: an element of the array map, valid for the program's run.
        let bucket = unsafe { &mut *bucket };
        if bucket.prefix != [k0, k1] {
            *bucket = RrlBucket {
                prefix: [k0, k1],
                tat_ns: now + interval,
                limited: 0,
                pad: 0,
            };
            return Rrl::Send;
        }
        let tat = if bucket.tat_ns > now { bucket.tat_ns } else { now };
        let next = tat + interval;
        if next - now <= RRL_BURST_NS {
            bucket.tat_ns = next;
            return Rrl::Send;
        }
        bucket.limited = bucket.limited.wrapping_add(1);
        let slip = cfg.rrl_slip;
        if slip != 0 && bucket.limited % slip == 0 {
            Rrl::Slip
        } else {
            Rrl::Drop
        }
    }

    const MAX_GROW: i64 = (MAX_ADDRS * rr_len(16) + OPT_LEN) as i64;
    /// Largest `ans_off` (offset of the first answer record): VLAN Ethernet, IPv6, UDP,
    /// DNS header, longest qname, QTYPE and QCLASS.
    const MAX_ANS_OFF: usize = 18 + 40 + UDP_LEN + DNS_HDR_LEN + MAX_QNAME_LEN + 4;

    /// Grows the frame by `delta` bytes at the head and moves the first `len` bytes
    /// (headers and question) back to the new front, so the frame ends `delta` bytes
    /// later than before relative to its content. Copies 8 bytes at a time, front to
    /// back: the source is always ahead of the destination, and each chunk is read
    /// whole before it is written.
    #[inline(always)]
    fn grow_at_head(ctx: &XdpContext, delta: usize, len: usize) -> Result<(), u32> {
        // Verifier: forget the per-path constants before the copy loop, then re-bound.
        let delta = parse::launder(delta as u32).map_err(|()| CNT_PASS_MALFORMED)? as usize;
        if delta > MAX_GROW as usize {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        // SAFETY: `ctx.ctx` is the program's context pointer.
        if unsafe { bpf_xdp_adjust_head(ctx.ctx, -(delta as i32)) } != 0 {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        // From here on the frame is modified: a failure must drop it, not pass a shifted frame.
        let e = |()| CNT_PASS_MALFORMED | DROP_FLAG;
        let mut i = 0usize;
        // Whole 8-byte chunks that lie inside `len`. The source is `delta` bytes ahead of
        // the destination, so no chunk reads bytes an earlier chunk wrote.
        // Verifier: constant trip-count bound; every access bounds-checked.
        while i < MAX_ANS_OFF / 8 {
            if 8 * i + 8 > len {
                break;
            }
            let src: *mut [u8; 8] = ptr_at(ctx, 8 * i + delta).map_err(e)?;
            let dst: *mut [u8; 8] = ptr_at(ctx, 8 * i).map_err(e)?;
            // SAFETY: both bounds-checked by `ptr_at`; the chunk is copied by value.
            unsafe { *dst = *src };
            i += 1;
        }
        // The last `len % 8` bytes one at a time: an 8-byte read there would run past the
        // end of a query that ends exactly at `len` (no EDNS).
        let mut j = 8 * i;
        // Verifier: at most 7 iterations.
        for _ in 0..7 {
            if j >= len {
                break;
            }
            let src: *mut u8 = ptr_at(ctx, j + delta).map_err(e)?;
            let dst: *mut u8 = ptr_at(ctx, j).map_err(e)?;
            // SAFETY: both bounds-checked by `ptr_at`.
            unsafe { *dst = *src };
            j += 1;
        }
        Ok(())
    }

    fn try_dns_responder(ctx: &XdpContext) -> Result<u32, u32> {
        // None only before the first apply; read in place (144 bytes, not copied).
        let cfg = DNS_CONFIG.get(0).ok_or(CNT_PASS_NOT_DNS)?;
        if cfg.port == 0 {
            return Err(CNT_PASS_NOT_DNS);
        }
        let l = match parse::parse_headers(ctx).map_err(|()| CNT_PASS_MALFORMED)? {
            Parsed::Udp(l) => l,
            Parsed::NotOurs => return Err(CNT_PASS_NOT_DNS),
        };
        let dport = parse::read_u16(ctx, l.udp + 2).map_err(|()| CNT_PASS_MALFORMED)?;
        if dport != cfg.port {
            return Err(CNT_PASS_NOT_DNS);
        }
        let (src, dst) = addrs(ctx, l.l3, l.v6).map_err(|()| CNT_PASS_MALFORMED)?;
        if !is_server_addr(cfg, &dst) {
            return Err(CNT_PASS_NOT_DNS);
        }
        // The pseudo-header's addresses, summed now so the 32 bytes need not live on the
        // stack until the checksum (the BPF stack is 512 bytes). Swapping them changes
        // nothing in the sum. The IPv4 pseudo-header has 4-byte addresses: the ::ffff:
        // prefix words are taken out again.
        let mut addr_sum = csum::add_bytes(csum::add_bytes(0, &src), &dst);
        if !l.v6 {
            addr_sum -= 2 * 0xffff;
        }

        let dns_off = l.udp + UDP_LEN;
        let dns_len = l.udp_len - UDP_LEN;
        let key = DNS_KEY_SCRATCH.get_ptr_mut(0).ok_or(CNT_PASS_NOT_DNS)?;
        // SAFETY: this CPU's slot of a one-element per-CPU array; XDP runs to completion
        // on one CPU, so nothing else uses it meanwhile. Zeroed first (the qname is
        // zero-padded), one volatile word at a time: LLVM would otherwise emit a
        // `memset` call, which BPF does not have.
        let key = unsafe {
            let words = key as *mut u64;
            for i in 0..core::mem::size_of::<DnsKey>() / 8 {
                words.add(i).write_volatile(0);
            }
            &mut *key
        };
        let q = dns::parse_query(ctx, dns_off, dns_len, key)?;

        // Scope of the client, then the scoped entry, then the global one. The LPM lookup
        // only when some entry is scoped (CFG_FLAG_SCOPED, kept by the control plane).
        let scope = if cfg.flags & CFG_FLAG_SCOPED != 0 {
            DNS_SCOPES.get(Key::new(128, src)).copied().unwrap_or(SCOPE_GLOBAL)
        } else {
            SCOPE_GLOBAL
        };
        let mut ans = None;
        if scope != SCOPE_GLOBAL {
            key.scope = scope;
            // SAFETY: the value is read before any map update can free it (RCU).
            ans = unsafe { DNS_RECORDS.get(&*key) };
            key.scope = SCOPE_GLOBAL;
        }
        if ans.is_none() {
            // SAFETY: as above.
            ans = unsafe { DNS_RECORDS.get(&*key) };
        }
        let ans = ans.ok_or(CNT_PASS_MISS)?;
        // count == 0: the name exists globally but this scope must be answered by userspace.
        if ans.count == 0 {
            return Err(CNT_PASS_MISS);
        }
        if ans.count as usize > MAX_ADDRS {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        // Response rate limiting (RRL) before anything is written: a limited answer is
        // dropped or, every `rrl_slip`-th, sent as a slip — the same answer truncated
        // (TC=1, no answer records, the OPT kept) so a real client retries over TCP.
        let verdict = if cfg.rrl_interval_ns != 0 {
            rrl(ctx, cfg, l.l3, l.v6)
        } else {
            Rrl::Send
        };
        if verdict == Rrl::Drop {
            return Err(CNT_RRL_DROPPED | DROP_FLAG);
        }
        let slip = verdict == Rrl::Slip;
        let count = if slip { 0 } else { ans.count as usize };
        let rrl = if q.qtype == QTYPE_A { rr_len(4) } else { rr_len(16) };

        // New sizes. `qname_len` <= MAX_QNAME_LEN and `count` <= MAX_ADDRS keep every
        // offset below small constants (the verifier needs bounded offsets).
        let qlen = q.qname_len & 0xff;
        let ans_off = dns_off + DNS_HDR_LEN + qlen + 4;
        let dns_new = DNS_HDR_LEN + qlen + 4 + count * rrl + if q.edns { OPT_LEN } else { 0 };
        let udp_new = UDP_LEN + dns_new;
        let frame_new = l.udp + udp_new;
        // Verifier: `black_box` keeps the two pointers' difference computed first; LLVM
        // otherwise folds it into `delta` as `(frame_new + data) - data_end`, and scalar
        // arithmetic on `pkt_end` is refused (seen once the slip made `count` a variable).
        let frame_old = core::hint::black_box(ctx.data_end() - ctx.data());
        let delta = frame_new as i64 - frame_old as i64;
        if delta != 0 {
            // SAFETY: `ctx.ctx` is the program's context pointer.
            let r = unsafe { bpf_xdp_adjust_tail(ctx.ctx, delta as i32) };
            if r != 0 {
                // Not enough tailroom (native XDP on veth sizes the buffer to the frame
                // plus cache-line slack): grow at the head instead, into the guaranteed
                // XDP_PACKET_HEADROOM, and move headers and question to the front.
                if !(0..=MAX_GROW).contains(&delta) {
                    return Err(CNT_PASS_UNSUPPORTED);
                }
                grow_at_head(ctx, delta as usize, ans_off)?;
            }
        }
        // Every pointer below is re-derived from ctx.data()/data_end() after the resize.
        // The frame may already be resized: failures drop it (see `dns_responder`).
        let e = |()| CNT_PASS_MALFORMED | DROP_FLAG;

        // Headers rewritten through one bounds-checked pointer per header block (each
        // `ptr_at` is a compare and branch per access otherwise).
        let eth: *mut [u8; 12] = ptr_at(ctx, 0).map_err(e)?;
        // SAFETY: bounds-checked by `ptr_at`.
        let eth = unsafe { &mut *eth };
        for i in 0..6 {
            eth.swap(i, i + 6);
        }
        let ra = if cfg.flags & CFG_FLAG_RA != 0 { 0x80 } else { 0 };
        let tc = if slip { 0x02 } else { 0 };
        let dns_hdr = DnsHeader {
            flags: [0x84 | tc | (q.flags_hi & 0x01), ra],
            ancount: count as u8,
            arcount: q.edns as u8,
        };
        // The UDP and DNS headers' sum, for the checksum below.
        let hdr_sum = if l.v6 {
            let p: *mut [u8; parse::IPV6_LEN + UDP_LEN + DNS_HDR_LEN] = ptr_at(ctx, l.l3).map_err(e)?;
            // SAFETY: bounds-checked by `ptr_at`.
            let p = unsafe { &mut *p };
            for i in 8..24 {
                p.swap(i, i + 16);
            }
            p[4..6].copy_from_slice(&(udp_new as u16).to_be_bytes());
            p[7] = 64;
            udp_dns_headers(tail_of(p), udp_new, &dns_hdr)
        } else {
            let p: *mut [u8; parse::IPV4_LEN + UDP_LEN + DNS_HDR_LEN] = ptr_at(ctx, l.l3).map_err(e)?;
            // SAFETY: bounds-checked by `ptr_at`.
            let p = unsafe { &mut *p };
            for i in 12..16 {
                p.swap(i, i + 4);
            }
            p[2..4].copy_from_slice(&((parse::IPV4_LEN + udp_new) as u16).to_be_bytes());
            p[8] = 64;
            csum::ipv4_header(p);
            udp_dns_headers(tail_of(p), udp_new, &dns_hdr)
        };
        // The UDP checksum (RFC 768/1071) is summed from what this program wrote and the
        // question's sum taken while parsing it, never by reading the datagram again.
        // The part after the question name (QTYPE, QCLASS, answers, OPT) is summed as if
        // it started at an even offset and byte-swapped when it does not (RFC 1071 §2(B)).
        let mut tail = q.qtype as u32 + CLASS_IN as u32;
        tail += if slip {
            0
        } else if q.qtype == QTYPE_A {
            dns::write_answers::<4, { rr_len(4) }>(ctx, ans_off, q.qtype, ans).map_err(e)?
        } else {
            dns::write_answers::<16, { rr_len(16) }>(ctx, ans_off, q.qtype, ans).map_err(e)?
        };
        if q.edns {
            tail += dns::write_opt(ctx, ans_off + count * rrl, cfg.edns_udp_size, q.dnssec_ok).map_err(e)?;
        }
        let mut tail = csum::fold(tail);
        if qlen & 1 == 1 {
            tail = tail.swap_bytes();
        }

        // Pseudo-header, then the UDP and DNS headers, the question and the rest.
        let sum = addr_sum + parse::IPPROTO_UDP as u32 + udp_new as u32 + hdr_sum + q.qname_sum + tail as u32;
        let mut c = !csum::fold(sum);
        if c == 0 {
            // A computed 0 is sent as all ones (RFC 768; mandatory for IPv6, RFC 8200 §8.1).
            c = 0xffff;
        }
        write_u16(ctx, l.udp + 6, c).map_err(e)?;
        Ok(if slip { XDP_TX | SLIPPED } else { XDP_TX })
    }

    /// What the answer's DNS header changes: flags (QR, AA, RD copied, RA) and counts.
    struct DnsHeader {
        flags: [u8; 2],
        ancount: u8,
        arcount: u8,
    }

    /// The last `UDP_LEN + DNS_HDR_LEN` bytes of an IP+UDP+DNS header block.
    #[inline(always)]
    fn tail_of<const N: usize>(p: &mut [u8; N]) -> &mut [u8; UDP_LEN + DNS_HDR_LEN] {
        let n = N - (UDP_LEN + DNS_HDR_LEN);
        // Constant bounds: the conversion cannot fail and compiles to nothing.
        (&mut p[n..]).try_into().unwrap_or_else(|_| unreachable_tail())
    }

    #[inline(always)]
    fn unreachable_tail() -> ! {
        // Never reached: `tail_of`'s bounds are constants. A loop keeps `panic` out.
        #[allow(clippy::empty_loop)]
        loop {}
    }

    /// Rewrites the UDP header (ports swapped, length `udp_new`, checksum 0 until it is
    /// known) and the DNS header (ID kept, `h`'s flags and counts, one question) in `u`,
    /// and returns the one's-complement sum of those 20 bytes (unfolded).
    #[inline(always)]
    fn udp_dns_headers(u: &mut [u8; UDP_LEN + DNS_HDR_LEN], udp_new: usize, h: &DnsHeader) -> u32 {
        u.swap(0, 2);
        u.swap(1, 3);
        u[4..6].copy_from_slice(&(udp_new as u16).to_be_bytes());
        u[6] = 0;
        u[7] = 0;
        let d = UDP_LEN;
        u[d + 2] = h.flags[0];
        u[d + 3] = h.flags[1];
        u[d + 6] = 0;
        u[d + 7] = h.ancount;
        u[d + 8] = 0;
        u[d + 9] = 0;
        u[d + 10] = 0;
        u[d + 11] = h.arcount;
        csum::add_bytes(0, u)
    }

    #[panic_handler]
    fn panic(_info: &core::panic::PanicInfo) -> ! {
        loop {}
    }

    /// License of the object (GPL-compatible helpers are not used, but the kernel asks).
    #[unsafe(link_section = "license")]
    #[unsafe(no_mangle)]
    static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
}
