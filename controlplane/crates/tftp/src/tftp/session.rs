//! The protocol state of one TFTP read transfer, without I/O: what to send next (the
//! OACK, or the blocks of the current window), what an ACK or a timeout changes, and when
//! the transfer ends. [`super::server::send_file`] drives it with the I/O (one socket per
//! transfer, the file from memory or read from disk a window at a time); the unit tests
//! below and the `tftp_session` fuzz target check it.
//!
//! The rules (RFC 1350, RFC 2347 §2, RFC 7440): an OACK waits for ACK 0 and is resent
//! only when its timer runs out; a window of `windowsize` blocks is sent, an ACK inside
//! it slides the window, an old or duplicate ACK changes nothing (no retransmission in
//! answer to a packet, so no Sorcerer's Apprentice syndrome, RFC 1123 §4.2.3.1), a
//! timeout resends the window with the timeout doubled up to
//! [`TftpLimits::max_timeout`], and after [`TftpLimits::retries`] timeouts in a row the
//! transfer is abandoned. Block numbers on the wire are the low 16 bits of the absolute
//! number, so files above 32 MiB at 512-byte blocks wrap from 65535 to 0.

use std::{ops::Range, time::Duration};

use tokio::time::Instant;

use super::{
    handler::Negotiated,
    packet,
    server::{Outcome, TftpLimits},
};

/// What a transfer must send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending<'a> {
    /// The option acknowledgement (RFC 2347), until ACK 0 comes.
    Oack(&'a [u8]),
    /// The blocks of the current window, by absolute number (the first block is 1).
    Blocks(Range<u64>),
}

/// What an ACK or a timeout did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send [`Session::pending`] and call [`Session::sent`].
    Send,
    /// Nothing to do: keep waiting for the same deadline.
    Wait,
    /// The transfer is over.
    Done(Outcome),
}

/// One read transfer's state; see the module documentation for the rules it follows.
#[derive(Debug)]
pub struct Session {
    /// The encoded OACK while ACK 0 has not come (`None`: the data phase).
    oack: Option<Vec<u8>>,
    blksize: usize,
    window: u64,
    /// Absolute number of the first unacknowledged block.
    base: u64,
    /// The last block: the first one shorter than `blksize` (possibly empty).
    last: u64,
    first_timeout: Duration,
    rto: Duration,
    misses: u32,
    limits: TftpLimits,
    deadline: Instant,
}

impl Session {
    /// A transfer of `size` bytes with the negotiated `opts`; the first retransmission
    /// timeout is the client's `timeout` option, else [`TftpLimits::timeout`]. Nothing is
    /// armed until the first [`Session::sent`].
    pub fn new(opts: &Negotiated, size: u64, limits: TftpLimits) -> Self {
        let blksize = opts.blksize.max(1);
        let first_timeout = opts.timeout.unwrap_or(limits.timeout);
        Self {
            oack: (!opts.oack.is_empty()).then(|| packet::oack(&opts.oack)),
            blksize,
            window: u64::from(opts.windowsize.max(1)),
            base: 1,
            last: size / blksize as u64 + 1,
            first_timeout,
            rto: first_timeout,
            misses: 0,
            limits,
            deadline: Instant::now(),
        }
    }

    /// Data bytes per block.
    pub fn blksize(&self) -> usize {
        self.blksize
    }

    /// What to send now: the OACK, or the window's blocks.
    pub fn pending(&self) -> Pending<'_> {
        match &self.oack {
            Some(o) => Pending::Oack(o),
            None => Pending::Blocks(self.base..self.window_end()),
        }
    }

    /// One past the window's last block: `windowsize` blocks from the base, or fewer at
    /// the end of the file.
    fn window_end(&self) -> u64 {
        (self.base + self.window).min(self.last + 1)
    }

    /// Byte range of block `n` (absolute, from 1) in a file of `len` bytes: empty past the
    /// end (and for block 0, which is never data).
    pub fn block_bytes(&self, n: u64, len: usize) -> Range<usize> {
        if n == 0 {
            return 0..0;
        }
        let start = usize::try_from((n - 1).saturating_mul(self.blksize as u64))
            .unwrap_or(usize::MAX)
            .min(len);
        start..start.saturating_add(self.blksize).min(len)
    }

    /// Records that [`Session::pending`] went out at `now`: the retransmission timer runs
    /// from here.
    pub fn sent(&mut self, now: Instant) {
        self.deadline = now + self.rto;
    }

    /// When the retransmission timer runs out.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The client acknowledged block `n` (wire number).
    pub fn on_ack(&mut self, n: u16) -> Step {
        if self.oack.is_some() {
            // A stray ACK is not an answer to the OACK: ignored, and the OACK is resent
            // only when the timer runs out (resending on every stray ACK was the
            // Sorcerer's Apprentice, found by fuzzing); the deadline stays, so a peer
            // repeating it cannot hold the transfer open.
            if n != 0 {
                return Step::Wait;
            }
            self.oack = None;
        } else {
            // How many blocks past base-1 this ACK covers (wrap-safe).
            let covered = u64::from(n.wrapping_sub(((self.base - 1) & 0xffff) as u16));
            if covered == 0 || covered > self.window_end() - self.base {
                return Step::Wait; // duplicate or stale ACK
            }
            self.base += covered;
            if self.base > self.last {
                return Step::Done(Outcome::Complete);
            }
        }
        self.rto = self.first_timeout;
        self.misses = 0;
        Step::Send
    }

    /// The retransmission timer ran out: resend with the timeout doubled, or give up
    /// after [`TftpLimits::retries`] timeouts in a row.
    pub fn on_timeout(&mut self) -> Step {
        self.misses += 1;
        self.rto = (self.rto * 2).min(self.limits.max_timeout.max(self.first_timeout));
        if self.misses <= self.limits.retries {
            Step::Send
        } else {
            Step::Done(Outcome::TimedOut)
        }
    }
}

/// Writes DATA for wire block `n` carrying `payload` into `pkt` (cleared first), so one
/// buffer serves every block sent.
pub fn data_into(pkt: &mut Vec<u8>, n: u64, payload: &[u8]) {
    pkt.clear();
    pkt.extend_from_slice(&packet::opcode::DATA.to_be_bytes());
    pkt.extend_from_slice(&((n & 0xffff) as u16).to_be_bytes());
    pkt.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(blksize: usize, windowsize: u16, oack: bool) -> Negotiated {
        Negotiated {
            blksize,
            windowsize,
            timeout: None,
            oack: if oack {
                vec![("blksize".into(), blksize.to_string())]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn oack_waits_for_ack_zero_and_ignores_strays() {
        let mut s = Session::new(&opts(512, 1, true), 1000, TftpLimits::default());
        assert!(matches!(s.pending(), Pending::Oack(_)));
        assert_eq!(s.on_ack(3), Step::Wait);
        assert!(matches!(s.pending(), Pending::Oack(_)));
        assert_eq!(s.on_ack(0), Step::Send);
        assert_eq!(s.pending(), Pending::Blocks(1..2));
    }

    #[test]
    fn window_slides_by_what_the_ack_covers() {
        // 10 blocks of 100 bytes: the 11th block is the empty last one.
        let mut s = Session::new(&opts(100, 4, false), 1000, TftpLimits::default());
        assert_eq!(s.pending(), Pending::Blocks(1..5));
        assert_eq!(s.on_ack(0), Step::Wait, "an ACK before the window is stale");
        assert_eq!(s.on_ack(2), Step::Send);
        assert_eq!(s.pending(), Pending::Blocks(3..7));
        assert_eq!(s.on_ack(2), Step::Wait, "a duplicate changes nothing");
        assert_eq!(s.on_ack(7), Step::Wait, "beyond the window");
        assert_eq!(s.on_ack(6), Step::Send);
        assert_eq!(s.on_ack(10), Step::Send);
        assert_eq!(s.pending(), Pending::Blocks(11..12));
        assert_eq!(s.block_bytes(11, 1000), 1000..1000);
        assert_eq!(s.block_bytes(3, 1000), 200..300);
        assert_eq!(s.block_bytes(0, 1000), 0..0);
        assert_eq!(s.on_ack(11), Step::Done(Outcome::Complete));
    }

    #[test]
    fn block_numbers_wrap() {
        let mut s = Session::new(&opts(1, 1, false), 70_000, TftpLimits::default());
        for n in 1..=70_000u64 {
            assert_eq!(s.on_ack((n & 0xffff) as u16), Step::Send, "block {n}");
        }
        assert_eq!(s.on_ack((70_001u64 & 0xffff) as u16), Step::Done(Outcome::Complete));
    }

    #[test]
    fn timeouts_back_off_then_give_up() {
        let limits = TftpLimits {
            timeout: Duration::from_secs(1),
            max_timeout: Duration::from_secs(3),
            retries: 2,
            max_transfers: 1,
            max_per_client: 1,
        };
        let mut s = Session::new(&opts(512, 1, false), 10, limits);
        let t0 = Instant::now();
        s.sent(t0);
        assert_eq!(s.deadline(), t0 + Duration::from_secs(1));
        assert_eq!(s.on_timeout(), Step::Send);
        s.sent(t0);
        assert_eq!(s.deadline(), t0 + Duration::from_secs(2));
        assert_eq!(s.on_timeout(), Step::Send);
        s.sent(t0);
        assert_eq!(s.deadline(), t0 + Duration::from_secs(3), "capped");
        assert_eq!(s.on_timeout(), Step::Done(Outcome::TimedOut));
    }

    #[test]
    fn data_is_rebuilt_in_place() {
        let mut pkt = Vec::new();
        data_into(&mut pkt, 65_537, b"ab");
        assert_eq!(pkt, packet::data(1, b"ab"));
    }
}
