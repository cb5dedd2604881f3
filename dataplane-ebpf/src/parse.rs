//! Bounds-checked packet access and the Ethernet / 802.1Q / IPv4 / IPv6 / UDP header
//! layouts the responder reads and rewrites. [`ptr_at`] is the only raw packet accessor:
//! every read or write of packet memory goes through it, and each call carries the bounds
//! check the verifier demands before any packet access.

use aya_ebpf::{macros::map, maps::PerCpuArray, programs::XdpContext};

/// One per-CPU scratch slot, used only by [`launder`].
#[map(name = "DNS_SCRATCH")]
static DNS_SCRATCH: PerCpuArray<u32> = PerCpuArray::with_max_entries(1, 0);

/// Returns `v` after a round trip through a map value, so the verifier sees an unknown
/// scalar instead of the exact constant it tracked. Verifier: without this, every
/// possible qname length (a loop counter, hence a different constant on each path) is
/// verified separately through the whole rest of the program, which exceeds the
/// 1M-instruction budget; the caller re-checks the bounds right after.
#[inline(always)]
pub(crate) fn launder(v: u32) -> Res<u32> {
    let p = DNS_SCRATCH.get_ptr_mut(0).ok_or(())?;
    // SAFETY: `p` points at this CPU's slot of a one-element per-CPU array; volatile keeps
    // the compiler from forwarding the stored value.
    unsafe {
        core::ptr::write_volatile(p, v);
        Ok(core::ptr::read_volatile(p))
    }
}

/// Error of a parse step; the caller maps it to a counter and `XDP_PASS` (fail open).
pub(crate) type Res<T> = Result<T, ()>;

/// EtherType IPv4.
pub(crate) const ETH_P_IP: u16 = 0x0800;
/// EtherType IPv6.
pub(crate) const ETH_P_IPV6: u16 = 0x86DD;
/// EtherType 802.1Q VLAN tag.
pub(crate) const ETH_P_8021Q: u16 = 0x8100;
/// IP protocol number of UDP.
pub(crate) const IPPROTO_UDP: u8 = 17;

/// Ethernet header length (no tag).
pub(crate) const ETH_LEN: usize = 14;
/// 802.1Q tag length.
pub(crate) const VLAN_LEN: usize = 4;
/// IPv4 header length without options (IHL 5).
pub(crate) const IPV4_LEN: usize = 20;
/// IPv6 fixed header length.
pub(crate) const IPV6_LEN: usize = 40;
/// UDP header length.
pub(crate) const UDP_LEN: usize = 8;

/// Returns a pointer to a `T` at `offset` bytes into the packet, or `Err` when the packet
/// is shorter. The `start + offset + size_of::<T>() > end` test is the one the verifier
/// needs to accept the access (it marks `size_of::<T>()` bytes readable/writable).
#[inline(always)]
pub(crate) fn ptr_at<T>(ctx: &XdpContext, offset: usize) -> Res<*mut T> {
    let start = ctx.data();
    let end = ctx.data_end();
    let len = core::mem::size_of::<T>();
    // Verifier: the pointer goes through `black_box` so LLVM cannot fold `len` into the
    // variable offset (it would then compare `start + (offset + len)` and subtract `len`
    // afterwards, a negative offset the verifier rejects). The verifier needs exactly
    // `ptr + len > data_end` with `len` a constant to mark `len` bytes accessible.
    let p = core::hint::black_box(start + offset);
    if p + len > end {
        return Err(());
    }
    Ok(p as *mut T)
}

/// Reads a big-endian `u16` at `offset`.
#[inline(always)]
pub(crate) fn read_u16(ctx: &XdpContext, offset: usize) -> Res<u16> {
    let p: *mut [u8; 2] = ptr_at(ctx, offset)?;
    // SAFETY: `ptr_at` checked that 2 bytes at `p` lie inside the packet.
    Ok(u16::from_be_bytes(unsafe { *p }))
}

/// Reads one byte at `offset`.
#[inline(always)]
pub(crate) fn read_u8(ctx: &XdpContext, offset: usize) -> Res<u8> {
    let p: *mut u8 = ptr_at(ctx, offset)?;
    // SAFETY: `ptr_at` checked that the byte lies inside the packet.
    Ok(unsafe { *p })
}

/// Writes a big-endian `u16` at `offset`.
#[inline(always)]
pub(crate) fn write_u16(ctx: &XdpContext, offset: usize, v: u16) -> Res<()> {
    let p: *mut [u8; 2] = ptr_at(ctx, offset)?;
    // SAFETY: `ptr_at` checked that 2 bytes at `p` lie inside the packet.
    unsafe { *p = v.to_be_bytes() };
    Ok(())
}

/// Where the parsed headers are, and what the query was addressed to.
pub(crate) struct L3 {
    /// Offset of the IP header.
    pub(crate) l3: usize,
    /// True for IPv6.
    pub(crate) v6: bool,
    /// Offset of the UDP header.
    pub(crate) udp: usize,
    /// UDP length field (header + payload), validated against the IP length.
    pub(crate) udp_len: usize,
}

/// Outcome of header parsing that is not an error: the packet is not for us.
pub(crate) enum Parsed {
    /// A UDP datagram; see [`L3`].
    Udp(L3),
    /// Not IPv4/IPv6 UDP, a fragment, or has IP options / extension headers.
    NotOurs,
}

/// Parses Ethernet (one optional 802.1Q tag), IPv4 (no options, no fragments) or IPv6
/// (no extension headers) and UDP. `Err` means truncated or inconsistent lengths.
#[inline(always)]
pub(crate) fn parse_headers(ctx: &XdpContext) -> Res<Parsed> {
    let mut l3 = ETH_LEN;
    let mut ethertype = read_u16(ctx, 12)?;
    if ethertype == ETH_P_8021Q {
        ethertype = read_u16(ctx, 16)?;
        l3 += VLAN_LEN;
    }
    let frame_len = ctx.data_end() - ctx.data();
    let (v6, udp, ip_payload_len) = match ethertype {
        ETH_P_IP => {
            let ip: *mut [u8; IPV4_LEN] = ptr_at(ctx, l3)?;
            // SAFETY: bounds-checked by `ptr_at`.
            let ip = unsafe { *ip };
            if ip[0] != 0x45 {
                // Version 4 with IHL 5 only; options (IHL > 5) go to userspace.
                return Ok(Parsed::NotOurs);
            }
            // MF flag or a fragment offset: fragments go to userspace.
            if (u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff) != 0 || ip[9] != IPPROTO_UDP {
                return Ok(Parsed::NotOurs);
            }
            let tot = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            if tot < IPV4_LEN + UDP_LEN || l3 + tot > frame_len {
                return Err(());
            }
            (false, l3 + IPV4_LEN, tot - IPV4_LEN)
        }
        ETH_P_IPV6 => {
            let ip: *mut [u8; 8] = ptr_at(ctx, l3)?;
            // SAFETY: bounds-checked by `ptr_at`.
            let ip = unsafe { *ip };
            if ip[0] >> 4 != 6 {
                return Err(());
            }
            if ip[6] != IPPROTO_UDP {
                // Other protocols and every extension header go to userspace.
                return Ok(Parsed::NotOurs);
            }
            let plen = u16::from_be_bytes([ip[4], ip[5]]) as usize;
            if l3 + IPV6_LEN + plen > frame_len {
                return Err(());
            }
            (true, l3 + IPV6_LEN, plen)
        }
        _ => return Ok(Parsed::NotOurs),
    };
    let udp_len = read_u16(ctx, udp + 4)? as usize;
    if udp_len < UDP_LEN || udp_len > ip_payload_len {
        return Err(());
    }
    Ok(Parsed::Udp(L3 { l3, v6, udp, udp_len }))
}
