//! What the DHCPv4 server saw and answered, one [`DhcpSeen`] per handled message, for the
//! boot sessions (`bootlane-sessions`): the client's MAC, the port (67, or 4011 for a PXE
//! boot-server request), the message type, the options that decide a boot (option 93
//! client architecture, option 60 vendor class, option 77 user class `iPXE`, option 54
//! naming another server) and what Bootlane answered (OFFER/ACK/NAK or nothing, with the
//! address, next-server and boot file).
//!
//! Cheap by design: the handler fills one small value after it has answered and offers
//! it to a bounded queue with `try_send`; when the recorder lags and the queue
//! ([`QUEUE`] entries) is full the value is dropped and counted, so recording never
//! slows or blocks the DHCP path. Off (no [`Tracer`] given) it costs one branch.

use std::net::Ipv4Addr;

use dhcproto::v4::{DhcpOption, OptionCode};
use tokio::sync::mpsc;

use super::{
    handler::{type_label, DhcpReply, RecvContext},
    packet::DhcpRequest,
};
use bootlane_core::net::types::MacAddr;

/// The queue's length between the DHCP handler and the recorder (a [`DhcpSeen`] is 240
/// bytes on x86-64: a full queue holds about 7.5 MiB).
pub const QUEUE: usize = 32_768;

/// The longest vendor class kept (bytes, lossy UTF-8); longer ones are cut.
pub const MAX_VENDOR_CLASS: usize = 64;

/// The longest text [`SeenText`] holds inline (bytes).
pub const SHORT_TEXT: usize = 64;

/// A vendor class or boot file as the DHCP handler saw it (lossy UTF-8): held inline up
/// to [`SHORT_TEXT`] bytes, so recording a message allocates nothing on the DHCP path
/// (and the recorder frees nothing the DHCP workers allocated); longer on the heap.
#[derive(Clone, PartialEq, Eq)]
pub enum SeenText {
    /// At most [`SHORT_TEXT`] bytes of UTF-8: `bytes[..len]`.
    Short {
        /// Bytes used.
        len: u8,
        /// The text, then unused bytes.
        bytes: [u8; SHORT_TEXT],
    },
    /// Longer text.
    Long(String),
}

impl SeenText {
    /// `b` as text (invalid UTF-8 replaced).
    pub fn new(b: &[u8]) -> Self {
        match std::str::from_utf8(b) {
            Ok(t) => Self::from(t),
            Err(_) => Self::Long(String::from_utf8_lossy(b).into_owned()),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match self {
            // Only `From<&str>` writes it: whole UTF-8 of `len` bytes.
            Self::Short { len, bytes } => std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default(),
            Self::Long(s) => s,
        }
    }
}

impl From<&str> for SeenText {
    fn from(t: &str) -> Self {
        if t.len() <= SHORT_TEXT {
            let mut bytes = [0; SHORT_TEXT];
            bytes[..t.len()].copy_from_slice(t.as_bytes());
            Self::Short {
                len: t.len() as u8,
                bytes,
            }
        } else {
            Self::Long(t.to_string())
        }
    }
}

impl std::fmt::Debug for SeenText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// One handled DHCPv4 message and Bootlane's answer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DhcpSeen {
    /// When it was handled.
    pub at: std::time::SystemTime,
    /// The client's hardware address (`chaddr`).
    pub mac: MacAddr,
    /// The client's source address and the local port (67 or 4011).
    pub src: std::net::SocketAddrV4,
    /// The local port: 67 (DHCP, proxyDHCP) or 4011 (PXE boot server).
    pub port: u16,
    /// The message type (`discover`, `request`, `inform`, ...; option 53).
    pub kind: &'static str,
    /// Option 93 (or the code in option 60), when sent.
    pub arch: Option<u16>,
    /// Option 60, when sent (at most [`MAX_VENDOR_CLASS`] bytes, lossy UTF-8).
    pub vendor_class: Option<SeenText>,
    /// The client is iPXE (user class `iPXE` or option 175).
    pub ipxe: bool,
    /// Option 54 of the request: the server whose offer the client took.
    pub server_id: Option<Ipv4Addr>,
    /// The relay agent (`giaddr`), when relayed.
    pub giaddr: Option<Ipv4Addr>,
    /// What Bootlane answered (`offer`, `ack`, `nak`), `None` for no answer.
    pub reply: Option<&'static str>,
    /// This server's identifier in the answer (option 54).
    pub server: Option<Ipv4Addr>,
    /// The address offered or acknowledged (`yiaddr`), when not 0.0.0.0.
    pub yiaddr: Option<Ipv4Addr>,
    /// The next-server of the answer (`siaddr`), when not 0.0.0.0.
    pub next_server: Option<Ipv4Addr>,
    /// The boot file given (option 67, else `file`), when one was.
    pub boot_file: Option<SeenText>,
}

/// Where the DHCP handler offers what it saw (the recorder holds the other end).
pub type Tracer = mpsc::Sender<DhcpSeen>;

/// A queue for [`Tracer`]s of [`QUEUE`] entries.
pub fn channel() -> (Tracer, mpsc::Receiver<DhcpSeen>) {
    mpsc::channel(QUEUE)
}

fn nonzero(a: Ipv4Addr) -> Option<Ipv4Addr> {
    (!a.is_unspecified()).then_some(a)
}

/// What the handler saw of `req` on `ctx` and answered with `reply`.
pub fn seen(req: &DhcpRequest, ctx: &RecvContext, reply: Option<&DhcpReply>) -> DhcpSeen {
    let vendor_class = match req.msg.opts().get(OptionCode::ClassIdentifier) {
        Some(DhcpOption::ClassIdentifier(v)) => Some(SeenText::new(&v[..v.len().min(MAX_VENDOR_CLASS)])),
        _ => None,
    };
    let r = reply.map(|r| &r.msg);
    let boot_file = r.and_then(|m| match m.opts().get(OptionCode::BootfileName) {
        Some(DhcpOption::BootfileName(f)) => Some(SeenText::new(f)),
        _ => {
            let f = m.fname().unwrap_or_default();
            let f = &f[..f.iter().position(|b| *b == 0).unwrap_or(f.len())];
            (!f.is_empty()).then(|| SeenText::new(f))
        }
    });
    DhcpSeen {
        at: std::time::SystemTime::now(),
        mac: req.mac,
        src: ctx.src,
        port: ctx.port,
        kind: type_label(req.kind),
        arch: req.class.arch,
        vendor_class,
        ipxe: req.class.ipxe,
        server_id: req.server_id,
        giaddr: nonzero(req.msg.giaddr()),
        reply: r.and_then(|m| m.opts().msg_type()).map(type_label),
        server: r.and_then(|m| match m.opts().get(OptionCode::ServerIdentifier) {
            Some(DhcpOption::ServerIdentifier(a)) => Some(*a),
            _ => None,
        }),
        yiaddr: r.and_then(|m| nonzero(m.yiaddr())),
        next_server: r.and_then(|m| nonzero(m.siaddr())),
        boot_file,
    }
}

/// Counter: DHCP messages left out of the boot sessions because the recorder's queue was
/// full.
pub const STEPS_DROPPED: &str = "bootlane_boot_session_steps_dropped_total";

/// Offers `seen` to `tracer` without waiting; a full or closed queue drops it and counts
/// it in [`STEPS_DROPPED`].
pub fn offer(tracer: &Tracer, seen: DhcpSeen) {
    if tracer.try_send(seen).is_err() {
        metrics::counter!(STEPS_DROPPED).increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_text_is_inline_up_to_its_limit_and_lossy_utf8() {
        let short = SeenText::new(b"PXEClient:Arch:00007:UNDI:003016");
        assert!(matches!(short, SeenText::Short { len: 32, .. }));
        assert_eq!(short.as_str(), "PXEClient:Arch:00007:UNDI:003016");
        let edge = "x".repeat(SHORT_TEXT);
        assert_eq!(SeenText::from(edge.as_str()).as_str(), edge);
        let long = format!("http://boot.example/{}", "a".repeat(100));
        assert!(matches!(SeenText::new(long.as_bytes()), SeenText::Long(ref s) if *s == long));
        assert_eq!(SeenText::new(b"ipxe\xff.efi").as_str(), "ipxe\u{fffd}.efi");
        assert_eq!(format!("{:?}", SeenText::from("a\"b")), "\"a\\\"b\"");
    }
}
