//! The DNS parts of the responder: the query checks (RFC 1035 §4.1), the question name
//! copied into a lowercased [`DnsKey`] (RFC 4343), the EDNS OPT record (RFC 6891 §6.1),
//! and the answer records written in place after the echoed question. The bytes written
//! here must equal what `controlplane/crates/dns/src/dns/handler.rs` (hickory-proto) encodes; the
//! differential test in the `tests` crate proves it.

use aya_ebpf::programs::XdpContext;
use bootlane_common::dns::{
    DnsAnswer, DnsKey, CNT_PASS_MALFORMED, CNT_PASS_TOO_LONG, CNT_PASS_UNSUPPORTED, MAX_ADDRS, MAX_QNAME_LEN, QTYPE_A,
    QTYPE_AAAA,
};

use crate::{
    csum::add_bytes,
    parse::{launder, ptr_at, read_u16, read_u8, Res},
};

/// DNS header length (RFC 1035 §4.1.1).
pub(crate) const DNS_HDR_LEN: usize = 12;
/// Length of our OPT record: root name, type, class, TTL, RDLEN (RFC 6891 §6.1.2).
pub(crate) const OPT_LEN: usize = 11;
/// RR type OPT.
const TYPE_OPT: u16 = 41;
/// EDNS option code COOKIE (RFC 7873 §4).
const OPT_COOKIE: u16 = 10;
/// EDNS option code PADDING (RFC 7830 §4).
const OPT_PADDING: u16 = 12;
/// Most EDNS options walked; a query with more goes to userspace.
const MAX_OPTIONS: usize = 4;
/// Longest OPT RDATA walked; a query with more goes to userspace.
const MAX_OPT_RDATA: usize = 256;
/// Class IN.
pub(crate) const CLASS_IN: u16 = 1;
/// Compression pointer to offset 12, the question name (RFC 1035 §4.1.4).
const PTR_QNAME: [u8; 2] = [0xc0, 0x0c];

/// What the query asked, after every check passed.
pub(crate) struct Query {
    /// Byte 2 of the header (for RD).
    pub(crate) flags_hi: u8,
    /// The lookup key, scope 0 (the caller sets the scope).
    pub(crate) qtype: u16,
    /// Wire length of the question name.
    pub(crate) qname_len: usize,
    /// The query carried an OPT record (EDNS version 0).
    pub(crate) edns: bool,
    /// The DO bit of that OPT (RFC 3225).
    pub(crate) dnssec_ok: bool,
    /// One's-complement sum (unfolded) of the question name's bytes as sent, as 16-bit
    /// words from its first byte: the name is echoed unchanged, so the answer's UDP
    /// checksum takes it from here instead of reading the packet again.
    pub(crate) qname_sum: u32,
}

/// Checks the header and question of the DNS message at `dns` (`dns_len` bytes) and
/// fills `key.qname`/`key.qname_len`/`key.qtype`. `Err(counter)` says why it is passed.
#[inline(always)]
pub(crate) fn parse_query(ctx: &XdpContext, dns: usize, dns_len: usize, key: &mut DnsKey) -> Result<Query, u32> {
    if dns_len < DNS_HDR_LEN {
        return Err(CNT_PASS_MALFORMED);
    }
    let hdr: *mut [u8; DNS_HDR_LEN] = ptr_at(ctx, dns).map_err(|()| CNT_PASS_MALFORMED)?;
    // SAFETY: bounds-checked by `ptr_at`.
    let h = unsafe { *hdr };
    // QR = 0 and OPCODE = QUERY (0); TC, AA, Z, AD, CD and RCODE bits of a query are
    // ignored, as userspace ignores them.
    if h[2] & 0xf8 != 0 {
        return Err(CNT_PASS_UNSUPPORTED);
    }
    let qd = u16::from_be_bytes([h[4], h[5]]);
    let an = u16::from_be_bytes([h[6], h[7]]);
    let ns = u16::from_be_bytes([h[8], h[9]]);
    let ar = u16::from_be_bytes([h[10], h[11]]);
    if qd != 1 || an != 0 || ns != 0 || ar > 1 {
        return Err(CNT_PASS_UNSUPPORTED);
    }

    // Question name: copy and lowercase label bytes, keep length bytes.
    let qstart = dns + DNS_HDR_LEN;
    let mut next_len = 0usize;
    let mut qname_len = 0usize;
    let mut qname_sum = 0u32;
    let mut i = 0usize;
    // Verifier: constant trip-count bound (MAX_QNAME_LEN) and `i` indexes the key array.
    while i < MAX_QNAME_LEN {
        if DNS_HDR_LEN + i >= dns_len {
            return Err(CNT_PASS_MALFORMED);
        }
        let b = read_u8(ctx, qstart + i).map_err(|()| CNT_PASS_MALFORMED)?;
        // Even offsets are the high byte of a checksum word (the name starts at an even
        // offset of the UDP datagram: 8 + 12).
        qname_sum += (b as u32) << (8 * (1 - (i & 1)));
        if i == next_len {
            if b == 0 {
                key.qname[i] = 0;
                qname_len = i + 1;
                break;
            }
            if b & 0xc0 != 0 {
                // Compression pointers or extended label types in a question.
                return Err(CNT_PASS_UNSUPPORTED);
            }
            next_len = i + 1 + b as usize;
            key.qname[i] = b;
        } else {
            key.qname[i] = if b.is_ascii_uppercase() { b | 0x20 } else { b };
        }
        i += 1;
    }
    if qname_len == 0 {
        return Err(CNT_PASS_TOO_LONG);
    }
    // Verifier: forget the exact length (see `launder`), then bound it again.
    let qname_len = launder(qname_len as u32).map_err(|()| CNT_PASS_MALFORMED)? as usize;
    if qname_len == 0 || qname_len > MAX_QNAME_LEN {
        return Err(CNT_PASS_MALFORMED);
    }
    let qend = DNS_HDR_LEN + qname_len + 4;
    if qend > dns_len {
        return Err(CNT_PASS_MALFORMED);
    }
    let qtype = read_u16(ctx, qstart + qname_len).map_err(|()| CNT_PASS_MALFORMED)?;
    let qclass = read_u16(ctx, qstart + qname_len + 2).map_err(|()| CNT_PASS_MALFORMED)?;
    if qclass != CLASS_IN || (qtype != QTYPE_A && qtype != QTYPE_AAAA) {
        return Err(CNT_PASS_UNSUPPORTED);
    }
    key.qtype = qtype;
    key.qname_len = qname_len as u16;

    let mut q = Query {
        flags_hi: h[2],
        qtype,
        qname_len,
        edns: false,
        dnssec_ok: false,
        qname_sum,
    };
    if ar == 1 {
        if qend + OPT_LEN > dns_len {
            return Err(CNT_PASS_MALFORMED);
        }
        let o: *mut [u8; OPT_LEN] = ptr_at(ctx, dns + qend).map_err(|()| CNT_PASS_MALFORMED)?;
        // SAFETY: bounds-checked by `ptr_at`.
        let o = unsafe { *o };
        // Only an OPT (root owner, type 41) may be the additional record.
        if o[0] != 0 || u16::from_be_bytes([o[1], o[2]]) != TYPE_OPT {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        // EDNS version > 0: userspace answers BADVERS (RFC 6891 §6.1.3).
        if o[6] != 0 {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        let rdlen = u16::from_be_bytes([o[9], o[10]]) as usize;
        if qend + OPT_LEN + rdlen > dns_len {
            return Err(CNT_PASS_MALFORMED);
        }
        check_options(ctx, dns + qend + OPT_LEN, rdlen)?;
        q.edns = true;
        q.dnssec_ok = o[7] & 0x80 != 0;
    }
    Ok(q)
}

/// Walks the OPT RDATA (`rdlen` bytes at `rd`): every option must fit, and a COOKIE
/// option must be 8 or 16-40 bytes long, else userspace answers FORMERR (RFC 7873
/// §5.2.2), so the frame is passed as malformed. COOKIE and PADDING are otherwise
/// ignored, as userspace ignores them; any other option sends the query to userspace,
/// which checks its format. More than [`MAX_OPTIONS`] options or [`MAX_OPT_RDATA`] bytes
/// go to userspace unchecked (fail open).
#[inline(always)]
fn check_options(ctx: &XdpContext, rd: usize, rdlen: usize) -> Result<(), u32> {
    if rdlen > MAX_OPT_RDATA {
        return Err(CNT_PASS_UNSUPPORTED);
    }
    let mut pos = 0usize;
    // Verifier: constant trip-count bound.
    for _ in 0..MAX_OPTIONS {
        if pos == rdlen {
            return Ok(());
        }
        // An option that ran past the RDATA (pos > rdlen) or a truncated option header.
        // Verifier: `pos` is bounded by a constant before it offsets a packet pointer
        // (a bound against `rdlen`, a register, is not tracked on every kernel).
        if pos > MAX_OPT_RDATA || pos + 4 > rdlen {
            return Err(CNT_PASS_MALFORMED);
        }
        let code = read_u16(ctx, rd + pos).map_err(|()| CNT_PASS_MALFORMED)?;
        let len = read_u16(ctx, rd + pos + 2).map_err(|()| CNT_PASS_MALFORMED)? as usize;
        if code == OPT_COOKIE && len != 8 && !(16..=40).contains(&len) {
            return Err(CNT_PASS_MALFORMED);
        }
        // Any other option but PADDING goes to userspace, which validates it (a zero-length
        // CLIENT-SUBNET is FORMERR there, RFC 7871 §7.1.1, but was answered here; found by
        // the `xdp` fuzz target).
        if code != OPT_COOKIE && code != OPT_PADDING {
            return Err(CNT_PASS_UNSUPPORTED);
        }
        pos += 4 + len;
    }
    if pos == rdlen {
        Ok(())
    } else if pos > rdlen {
        Err(CNT_PASS_MALFORMED)
    } else {
        Err(CNT_PASS_UNSUPPORTED)
    }
}

/// Size of one answer record with `N` bytes of rdata: pointer owner, type, class, TTL,
/// RDLENGTH, RDATA.
pub(crate) const fn rr_len(n: usize) -> usize {
    2 + 2 + 2 + 4 + 2 + n
}

/// Writes `ans.count` records of type `qtype` with `N`-byte rdata at `off`; `R` is the
/// whole record size (`rr_len(N)`, a separate parameter because stable const generics
/// cannot compute it). Returns the one's-complement sum (unfolded) of the bytes written,
/// as 16-bit words from `off` (every record has an even length).
#[inline(always)]
pub(crate) fn write_answers<const N: usize, const R: usize>(
    ctx: &XdpContext,
    off: usize,
    qtype: u16,
    ans: &DnsAnswer,
) -> Res<u32> {
    let t = qtype.to_be_bytes();
    let ttl = ans.ttl.to_be_bytes();
    let rdlen = (N as u16).to_be_bytes();
    let mut rr = [0u8; R];
    rr[..12].copy_from_slice(&[
        PTR_QNAME[0],
        PTR_QNAME[1],
        t[0],
        t[1],
        0,
        CLASS_IN as u8,
        ttl[0],
        ttl[1],
        ttl[2],
        ttl[3],
        rdlen[0],
        rdlen[1],
    ]);
    // The record header's words, the same in every record.
    let mut head_sum = 0u32;
    let mut j = 0;
    while j < 12 {
        head_sum += u16::from_be_bytes([rr[j], rr[j + 1]]) as u32;
        j += 2;
    }
    let mut sum = 0u32;
    let mut i = 0usize;
    // Verifier: constant trip-count bound; `i` also indexes `ans.addrs`.
    while i < MAX_ADDRS {
        if i as u32 >= ans.count {
            break;
        }
        rr[12..].copy_from_slice(&ans.addrs[i][..N]);
        sum += head_sum;
        let mut j = 12;
        while j < R {
            sum += u16::from_be_bytes([rr[j], rr[j + 1]]) as u32;
            j += 2;
        }
        // Verifier: one access of the whole record through one bounds-checked pointer;
        // two adjacent checks get merged by LLVM into a negative-offset compare that the
        // verifier cannot use.
        let p: *mut [u8; R] = ptr_at(ctx, off + i * R)?;
        // SAFETY: bounds-checked by `ptr_at`.
        unsafe { *p = rr };
        i += 1;
    }
    Ok(sum)
}

/// Writes our OPT record at `off`: root owner, type OPT, class = `udp_size`, extended
/// RCODE 0, version 0, flags = DO copied, RDLEN 0 (client options are not echoed).
/// Returns the one's-complement sum (unfolded) of its 11 bytes as 16-bit words from
/// `off`, the last byte the high half of a word.
#[inline(always)]
pub(crate) fn write_opt(ctx: &XdpContext, off: usize, udp_size: u16, dnssec_ok: bool) -> Res<u32> {
    let p: *mut [u8; OPT_LEN] = ptr_at(ctx, off)?;
    let s = udp_size.to_be_bytes();
    let t = TYPE_OPT.to_be_bytes();
    let opt = [
        0,
        t[0],
        t[1],
        s[0],
        s[1],
        0,
        0,
        if dnssec_ok { 0x80 } else { 0 },
        0,
        0,
        0,
    ];
    // SAFETY: bounds-checked by `ptr_at`.
    unsafe { *p = opt };
    Ok(add_bytes(0, &opt) + ((opt[OPT_LEN - 1] as u32) << 8))
}
