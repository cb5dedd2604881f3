//! Internet checksums (RFC 1071) for the rewritten answer: the IPv4 header checksum and
//! the sums the UDP checksum (IPv4 pseudo-header RFC 768, IPv6 RFC 8200 §8.1) is made of.
//! The UDP checksum is never computed by reading the datagram back: its parts are summed
//! as they are written (headers, answers, OPT) or parsed (the question name), which saved
//! a bounds-checked loop over every byte of the answer.

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

/// Recomputes the checksum of the 20-byte IPv4 header at the front of `h`.
#[inline(always)]
pub(crate) fn ipv4_header<const N: usize>(h: &mut [u8; N]) {
    h[10] = 0;
    h[11] = 0;
    let mut sum = 0u32;
    let mut i = 0;
    while i < 20 {
        sum += u16::from_be_bytes([h[i], h[i + 1]]) as u32;
        i += 2;
    }
    let c = !fold(sum);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}
