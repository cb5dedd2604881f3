//! Internet checksums (RFC 1071) for the rewritten answer: the IPv4 header checksum and
//! the UDP checksum with its IPv4 (RFC 768) or IPv6 (RFC 8200 §8.1) pseudo-header. The
//! UDP checksum is computed over the whole datagram with a bounded loop; the answer is at
//! most a few hundred bytes.

use aya_ebpf::programs::XdpContext;

use crate::parse::{ptr_at, Res};

/// Longest UDP datagram (header + DNS answer) the checksum loop covers, in bytes. The
/// largest answer is 8 + 12 + `MAX_QNAME_LEN` + 4 + 8 × 28 + 11 = 387 bytes.
const MAX_UDP_CSUM_LEN: usize = 512;

/// Folds a 32-bit one's-complement sum into 16 bits.
#[inline(always)]
pub(crate) fn fold(mut sum: u32) -> u16 {
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// Adds `N` bytes (N even) at `p` to `sum` as big-endian 16-bit words.
#[inline(always)]
pub(crate) fn add_bytes<const N: usize>(mut sum: u32, b: &[u8; N]) -> u32 {
    let mut i = 0;
    while i + 1 < N {
        sum += u16::from_be_bytes([b[i], b[i + 1]]) as u32;
        i += 2;
    }
    sum
}

/// Recomputes the IPv4 header checksum of the 20-byte header at `l3`.
#[inline(always)]
pub(crate) fn ipv4_header(ctx: &XdpContext, l3: usize) -> Res<()> {
    let p: *mut [u8; 20] = ptr_at(ctx, l3)?;
    // SAFETY: bounds-checked by `ptr_at`.
    let h = unsafe { &mut *p };
    h[10] = 0;
    h[11] = 0;
    let c = !fold(add_bytes(0, h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// One's-complement sum of the packet bytes from `off` to the end of the packet (which
/// the caller has trimmed to the end of the UDP datagram), added to `sum`.
#[inline(always)]
pub(crate) fn sum_to_end(ctx: &XdpContext, off: usize, mut sum: u32) -> u32 {
    let mut i = 0;
    // Verifier: a loop with a constant trip count bound; each read is bounds-checked.
    while i < MAX_UDP_CSUM_LEN / 2 {
        match ptr_at::<[u8; 2]>(ctx, off + 2 * i) {
            // SAFETY: bounds-checked by `ptr_at`.
            Ok(p) => sum += u16::from_be_bytes(unsafe { *p }) as u32,
            Err(()) => {
                // Odd length: the last byte is padded with a zero byte (RFC 768).
                if let Ok(p) = ptr_at::<u8>(ctx, off + 2 * i) {
                    // SAFETY: bounds-checked by `ptr_at`.
                    sum += (unsafe { *p } as u32) << 8;
                }
                break;
            }
        }
        i += 1;
    }
    sum
}
