//! Reference XDP programs for `cargo xtask bench dns` only: never embedded in the
//! `bootlane` binary (controlplane/build.rs embeds only the `dataplane-ebpf` object;
//! this one is built beside it and loaded by the `xdp-bench` tool of the `tests`
//! crate).
//!
//! - `xdp_drop_floor`: `XDP_DROP` for every frame. The generator's ceiling (what kxdpgun
//!   can send through the veth) and the per-packet floor of any XDP program (the
//!   kernel's `run_time_ns / run_cnt` for a program that does nothing).
//! - `minimal_responder`: the least a DNS responder must do: Ethernet without VLAN, IPv4
//!   without options, UDP to the configured port, one question, the qname lowercased into
//!   the same [`DnsKey`] the Bootlane program uses, one hash lookup in a map of the same
//!   [`DnsAnswer`] values, the answers written after the question (no EDNS: an OPT in the
//!   query is cut off), addresses and ports swapped, the IPv4 header checksum recomputed
//!   and the UDP checksum set to 0 (allowed for IPv4, RFC 768), `XDP_TX`. No scopes, no
//!   server-address check, no IPv6, no VLAN, no counters: the yardstick Bootlane's
//!   per-packet cost is compared against.
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]

/// On the host this is an empty binary; the programs exist only for the BPF target.
#[cfg(not(target_arch = "bpf"))]
fn main() {}

#[cfg(target_arch = "bpf")]
mod programs {
    use aya_ebpf::{
        bindings::xdp_action::{XDP_DROP, XDP_PASS, XDP_TX},
        helpers::generated::{bpf_xdp_adjust_head, bpf_xdp_adjust_tail},
        macros::{map, xdp},
        maps::{Array, HashMap},
        programs::XdpContext,
    };
    use bootlane_common::dns::{DnsAnswer, DnsKey, MAX_ADDRS, MAX_QNAME_LEN, QTYPE_A, QTYPE_AAAA};

    /// `(0, qtype, qname)` → RRset, the Bootlane map's layout (scope always 0).
    #[map(name = "MIN_RECORDS")]
    static MIN_RECORDS: HashMap<DnsKey, DnsAnswer> = HashMap::with_max_entries(131_072, 0);

    /// The DNS port, host byte order, one element.
    #[map(name = "MIN_PORT")]
    static MIN_PORT: Array<u32> = Array::with_max_entries(1, 0);

    /// A one-element scratch slot: a value read back from a map is unknown to the
    /// verifier, which then checks the rest once instead of once per qname length.
    #[map(name = "MIN_SCRATCH")]
    static MIN_SCRATCH: Array<u32> = Array::with_max_entries(1, 0);

    const ETH: usize = 14;
    const IP: usize = ETH;
    const UDP: usize = IP + 20;
    const DNS: usize = UDP + 8;
    const QNAME: usize = DNS + 12;
    /// Headers and the longest question: what a head growth moves.
    const MAX_ANS_OFF: usize = QNAME + MAX_QNAME_LEN + 4;

    #[inline(always)]
    fn ptr_at<T>(ctx: &XdpContext, off: usize) -> Option<*mut T> {
        let p = core::hint::black_box(ctx.data() + off);
        if p + core::mem::size_of::<T>() > ctx.data_end() {
            return None;
        }
        Some(p as *mut T)
    }

    #[inline(always)]
    fn launder(v: u32) -> Option<u32> {
        let p = MIN_SCRATCH.get_ptr_mut(0)?;
        // SAFETY: this program's one-element array; volatile keeps the round trip.
        unsafe {
            core::ptr::write_volatile(p, v);
            Some(core::ptr::read_volatile(p))
        }
    }

    /// `XDP_DROP` for everything: the floor.
    #[xdp]
    pub fn xdp_drop_floor(_ctx: XdpContext) -> u32 {
        XDP_DROP
    }

    /// The minimal responder (module docs).
    #[xdp]
    pub fn minimal_responder(ctx: XdpContext) -> u32 {
        respond(&ctx).unwrap_or(XDP_PASS)
    }

    #[inline(always)]
    fn respond(ctx: &XdpContext) -> Option<u32> {
        let port = *MIN_PORT.get(0)? as u16;
        let h: *mut [u8; DNS + 12] = ptr_at(ctx, 0)?;
        // SAFETY: bounds-checked.
        let h = unsafe { &*h };
        if h[12] != 0x08 || h[13] != 0x00 || h[IP] != 0x45 || h[IP + 9] != 17 {
            return None;
        }
        if u16::from_be_bytes([h[UDP + 2], h[UDP + 3]]) != port {
            return None;
        }
        // A query (QR 0, opcode 0) with one question.
        if h[DNS + 2] & 0xf8 != 0 || h[DNS + 4] != 0 || h[DNS + 5] != 1 {
            return None;
        }
        let mut key = DnsKey {
            scope: 0,
            qtype: 0,
            qname_len: 0,
            qname: [0; MAX_QNAME_LEN],
        };
        let mut next = 0usize;
        let mut len = 0usize;
        let mut i = 0usize;
        while i < MAX_QNAME_LEN {
            let b: *mut u8 = ptr_at(ctx, QNAME + i)?;
            // SAFETY: bounds-checked.
            let b = unsafe { *b };
            if i == next {
                if b == 0 {
                    len = i + 1;
                    break;
                }
                if b & 0xc0 != 0 {
                    return None;
                }
                next = i + 1 + b as usize;
                key.qname[i] = b;
            } else {
                key.qname[i] = if b.is_ascii_uppercase() { b | 0x20 } else { b };
            }
            i += 1;
        }
        let len = launder(len as u32)? as usize;
        if len == 0 || len > MAX_QNAME_LEN {
            return None;
        }
        let qt: *mut [u8; 4] = ptr_at(ctx, QNAME + len)?;
        // SAFETY: bounds-checked.
        let qt = unsafe { *qt };
        let qtype = u16::from_be_bytes([qt[0], qt[1]]);
        if (qtype != QTYPE_A && qtype != QTYPE_AAAA) || qt[2] != 0 || qt[3] != 1 {
            return None;
        }
        key.qtype = qtype;
        key.qname_len = len as u16;
        // SAFETY: read before any update can free it (RCU).
        let ans = unsafe { MIN_RECORDS.get(&key) }?;
        let count = ans.count as usize;
        if count == 0 || count > MAX_ADDRS {
            return None;
        }
        let n = if qtype == QTYPE_A { 4 } else { 16 };
        let ans_off = QNAME + len + 4;
        let new_len = ans_off + count * (12 + n);
        let delta = new_len as i64 - (ctx.data_end() - ctx.data()) as i64;
        // SAFETY: the program's context pointer.
        if delta != 0 && unsafe { bpf_xdp_adjust_tail(ctx.ctx, delta as i32) } != 0 {
            let delta = launder(delta as u32)? as usize;
            if delta > MAX_ADDRS * 28 {
                return None;
            }
            // SAFETY: the program's context pointer.
            if unsafe { bpf_xdp_adjust_head(ctx.ctx, -(delta as i32)) } != 0 {
                return None;
            }
            // Headers and question to the new front, 8 bytes at a time, then the rest.
            let mut j = 0usize;
            while j < MAX_ANS_OFF / 8 {
                if 8 * j + 8 > ans_off {
                    break;
                }
                let s: *mut [u8; 8] = ptr_at(ctx, 8 * j + delta)?;
                let d: *mut [u8; 8] = ptr_at(ctx, 8 * j)?;
                // SAFETY: bounds-checked; the source lies ahead of the destination.
                unsafe { *d = *s };
                j += 1;
            }
            let mut j = 8 * j;
            for _ in 0..7 {
                if j >= ans_off {
                    break;
                }
                let s: *mut u8 = ptr_at(ctx, j + delta)?;
                let d: *mut u8 = ptr_at(ctx, j)?;
                // SAFETY: bounds-checked.
                unsafe { *d = *s };
                j += 1;
            }
        }
        let h: *mut [u8; DNS + 12] = ptr_at(ctx, 0)?;
        // SAFETY: bounds-checked, re-derived after the resize.
        let h = unsafe { &mut *h };
        for k in 0..6 {
            h.swap(k, k + 6);
        }
        for k in 0..4 {
            h.swap(IP + 12 + k, IP + 16 + k);
        }
        h.swap(UDP, UDP + 2);
        h.swap(UDP + 1, UDP + 3);
        let ip_len = ((new_len - IP) as u16).to_be_bytes();
        let udp_len = ((new_len - UDP) as u16).to_be_bytes();
        h[IP + 2] = ip_len[0];
        h[IP + 3] = ip_len[1];
        h[IP + 8] = 64;
        h[IP + 10] = 0;
        h[IP + 11] = 0;
        let mut sum = 0u32;
        let mut k = 0;
        while k < 20 {
            sum += u16::from_be_bytes([h[IP + k], h[IP + k + 1]]) as u32;
            k += 2;
        }
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        let c = (!(sum as u16)).to_be_bytes();
        h[IP + 10] = c[0];
        h[IP + 11] = c[1];
        h[UDP + 4] = udp_len[0];
        h[UDP + 5] = udp_len[1];
        h[UDP + 6] = 0;
        h[UDP + 7] = 0;
        h[DNS + 2] = 0x84 | (h[DNS + 2] & 1);
        h[DNS + 3] = 0;
        h[DNS + 6] = 0;
        h[DNS + 7] = count as u8;
        h[DNS + 8] = 0;
        h[DNS + 9] = 0;
        h[DNS + 10] = 0;
        h[DNS + 11] = 0;
        let ttl = ans.ttl.to_be_bytes();
        let t = qtype.to_be_bytes();
        let mut r = 0usize;
        while r < MAX_ADDRS {
            if r >= count {
                break;
            }
            if qtype == QTYPE_A {
                let p: *mut [u8; 16] = ptr_at(ctx, ans_off + r * 16)?;
                let a = ans.addrs[r];
                // SAFETY: bounds-checked.
                unsafe {
                    *p = [
                        0xc0, 0x0c, t[0], t[1], 0, 1, ttl[0], ttl[1], ttl[2], ttl[3], 0, 4, a[0], a[1], a[2], a[3],
                    ]
                };
            } else {
                let p: *mut [u8; 28] = ptr_at(ctx, ans_off + r * 28)?;
                let mut rr = [0u8; 28];
                rr[..12].copy_from_slice(&[0xc0, 0x0c, t[0], t[1], 0, 1, ttl[0], ttl[1], ttl[2], ttl[3], 0, 16]);
                rr[12..].copy_from_slice(&ans.addrs[r]);
                // SAFETY: bounds-checked.
                unsafe { *p = rr };
            }
            r += 1;
        }
        Some(XDP_TX)
    }

    #[panic_handler]
    fn panic(_info: &core::panic::PanicInfo) -> ! {
        loop {}
    }

    /// License of the object.
    #[unsafe(link_section = "license")]
    #[unsafe(no_mangle)]
    static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
}
