//! DHCPv4 wire format (RFC 2131/2132, via `dhcproto`) and what Bootlane reads from a
//! request: message type, client MAC, requested address, server identifier and the PXE
//! classification (RFC 4578 option 93, option 60 vendor class, option 77 user class,
//! iPXE's option 175). Parsing never panics: a panic inside `dhcproto` is caught, and
//! its fields are only trusted after the checks in [`DhcpRequest::parse`] (a hardware
//! length above 16, for example, would make its `chaddr()` slice out of bounds).
//! Holds no state.

use std::net::Ipv4Addr;

use dhcproto::{
    v4::{DhcpOption, Message, MessageType, Opcode, OptionCode},
    Decodable, Decoder, Encodable, Encoder,
};

use bootlane_core::net::types::MacAddr;

/// Why a datagram is not a usable DHCP request.
#[derive(Debug, thiserror::Error)]
pub enum PacketError {
    /// `dhcproto` could not decode it.
    #[error("undecodable DHCP message: {0}")]
    Decode(#[from] dhcproto::error::DecodeError),
    /// `dhcproto` panicked on the input (see [`DhcpRequest::parse`]).
    #[error("malformed DHCP options")]
    DecoderPanic,
    /// Not a BOOTREQUEST (servers never act on replies).
    #[error("not a BOOTREQUEST")]
    NotRequest,
    /// Hardware type/length is not Ethernet (htype 1, hlen 6).
    #[error("hardware type {0} / length {1} is not Ethernet")]
    NotEthernet(u8, u8),
    /// No option 53 (plain BOOTP is not served).
    #[error("no DHCP message type (BOOTP is not served)")]
    NoMessageType,
}

/// What kind of network-boot client sent a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientClass {
    /// Option 60 starts with `PXEClient` (a PXE ROM or UEFI PXE, or iPXE).
    pub pxe: bool,
    /// Option 60 starts with `HTTPClient` (UEFI HTTP boot, RFC-less but UEFI 2.5 §24.7).
    pub http: bool,
    /// iPXE: user class (option 77) `iPXE`, bare or RFC 3004-encoded, or option 175 present.
    pub ipxe: bool,
    /// Client system architecture: option 93 (RFC 4578 §2.1), else the decimal code in
    /// option 60 (`PXEClient:Arch:00007:...`).
    pub arch: Option<u16>,
}

impl ClientClass {
    /// True for any client that wants boot information (PXE, HTTP boot or iPXE).
    pub fn is_boot_client(&self) -> bool {
        self.pxe || self.http || self.ipxe
    }
}

/// A decoded DHCP request with the fields Bootlane acts on.
#[derive(Debug, Clone)]
pub struct DhcpRequest {
    /// The whole message (options are echoed from it where RFC 2131 says so).
    pub msg: Message,
    /// Option 53.
    pub kind: MessageType,
    /// Client hardware address (`chaddr`).
    pub mac: MacAddr,
    /// Option 50 (requested IP address), if present.
    pub requested_ip: Option<Ipv4Addr>,
    /// Option 54 (server identifier), if present.
    pub server_id: Option<Ipv4Addr>,
    /// Option 12 (host name), if present and valid UTF-8.
    pub hostname: Option<String>,
    /// PXE classification.
    pub class: ClientClass,
}

impl DhcpRequest {
    /// Decodes and checks a datagram received on a DHCP port.
    ///
    /// # Errors
    /// See [`PacketError`]; the caller drops such datagrams.
    pub fn parse(bytes: &[u8]) -> Result<Self, PacketError> {
        // dhcproto 0.15 has `debug_assert!`s on some option lengths (94, 80, 81, 91-94
        // bulk leasequery) that fire on malformed input in debug builds; a hostile
        // datagram must not take a receive loop down, so a panic is a decode error.
        let msg = std::panic::catch_unwind(|| Message::decode(&mut Decoder::new(bytes)))
            .map_err(|_| PacketError::DecoderPanic)??;
        if msg.opcode() != Opcode::BootRequest {
            return Err(PacketError::NotRequest);
        }
        let htype: u8 = msg.htype().into();
        let hlen = msg.hlen();
        // Checked before calling `chaddr()`, which slices `[..hlen]` out of 16 bytes.
        if htype != 1 || hlen != 6 {
            return Err(PacketError::NotEthernet(htype, hlen));
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&msg.chaddr()[..6]);
        let kind = msg.opts().msg_type().ok_or(PacketError::NoMessageType)?;
        let opts = msg.opts();
        let requested_ip = match opts.get(OptionCode::RequestedIpAddress) {
            Some(DhcpOption::RequestedIpAddress(ip)) => Some(*ip),
            _ => None,
        };
        let server_id = match opts.get(OptionCode::ServerIdentifier) {
            Some(DhcpOption::ServerIdentifier(ip)) => Some(*ip),
            _ => None,
        };
        let hostname = match opts.get(OptionCode::Hostname) {
            Some(DhcpOption::Hostname(h)) if !h.is_empty() => Some(h.clone()),
            _ => None,
        };
        let class = classify(&msg);
        Ok(Self {
            msg,
            kind,
            mac: MacAddr(mac),
            requested_ip,
            server_id,
            hostname,
            class,
        })
    }
}

/// Option 60 (vendor class identifier) as bytes, if present.
fn vendor_class(msg: &Message) -> Option<&[u8]> {
    match msg.opts().get(OptionCode::ClassIdentifier) {
        Some(DhcpOption::ClassIdentifier(v)) => Some(v),
        _ => None,
    }
}

/// The architecture code written in decimal in `PXEClient:Arch:00007:UNDI:003016`
/// (PXE 2.1 spec §2.2.5; the peer parsed it as hex, which is wrong for codes ≥ 10).
pub fn arch_from_vendor_class(vc: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(vc).ok()?;
    let mut parts = s.split(':');
    let _client = parts.next()?;
    if parts.next()? != "Arch" {
        return None;
    }
    let code = parts.next()?;
    if code.is_empty() || code.len() > 5 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    code.parse().ok()
}

/// True when option 77 names iPXE: either the bare string `iPXE` (what iPXE actually
/// sends) or an RFC 3004 §4 list of length-prefixed class names containing `iPXE`.
pub fn user_class_is_ipxe(uc: &[u8]) -> bool {
    if uc == b"iPXE" {
        return true;
    }
    let mut rest = uc;
    while let Some((&len, tail)) = rest.split_first() {
        let len = len as usize;
        if len == 0 || len > tail.len() {
            return false;
        }
        if &tail[..len] == b"iPXE" {
            return true;
        }
        rest = &tail[len..];
    }
    false
}

/// Classifies the client from options 60, 77, 93 and 175.
pub fn classify(msg: &Message) -> ClientClass {
    let opts = msg.opts();
    let vc = vendor_class(msg);
    let pxe = vc.is_some_and(|v| v.starts_with(b"PXEClient"));
    let http = vc.is_some_and(|v| v.starts_with(b"HTTPClient"));
    let uc_ipxe = match opts.get(OptionCode::UserClass) {
        Some(DhcpOption::UserClass(uc)) => user_class_is_ipxe(uc),
        _ => false,
    };
    let ipxe = uc_ipxe || opts.contains(OptionCode::Unknown(175));
    let arch = match opts.get(OptionCode::ClientSystemArchitecture) {
        Some(DhcpOption::ClientSystemArchitecture(a)) => Some(a.0),
        _ => None,
    }
    .or_else(|| vc.and_then(arch_from_vendor_class));
    ClientClass { pxe, http, ipxe, arch }
}

/// Encodes a reply.
///
/// # Errors
/// Only if `dhcproto` cannot encode the message (an option too long for its encoding).
pub fn encode(msg: &Message) -> Result<Vec<u8>, dhcproto::error::EncodeError> {
    let mut buf = Vec::with_capacity(576);
    msg.encode(&mut Encoder::new(&mut buf))?;
    // RFC 2131 §2 / RFC 1542 §3.3: some relays and old clients drop BOOTP messages shorter
    // than 300 bytes; pad (after the END option, which is allowed).
    if buf.len() < 300 {
        buf.resize(300, 0);
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_in_vendor_class_is_decimal() {
        assert_eq!(arch_from_vendor_class(b"PXEClient:Arch:00000:UNDI:002001"), Some(0));
        assert_eq!(arch_from_vendor_class(b"PXEClient:Arch:00007:UNDI:003016"), Some(7));
        assert_eq!(arch_from_vendor_class(b"HTTPClient:Arch:00016:UNDI:003001"), Some(16));
        assert_eq!(arch_from_vendor_class(b"PXEClient"), None);
        assert_eq!(arch_from_vendor_class(b"PXEClient:Arch:0x007"), None);
        assert_eq!(arch_from_vendor_class(b"PXEClient:Arch:99999"), None);
        assert_eq!(arch_from_vendor_class(&[0xff, 0xfe]), None);
    }

    #[test]
    fn user_class_forms() {
        assert!(user_class_is_ipxe(b"iPXE"));
        assert!(user_class_is_ipxe(b"\x04iPXE"));
        assert!(user_class_is_ipxe(b"\x03abc\x04iPXE"));
        assert!(!user_class_is_ipxe(b"\x05iPXE"));
        assert!(!user_class_is_ipxe(b"gPXE"));
        assert!(!user_class_is_ipxe(b""));
    }

    #[test]
    fn garbage_never_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        // A valid request to mutate, so decoding gets past the fixed header.
        let mut m = Message::new(
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            &[1, 2, 3, 4, 5, 6],
        );
        m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
        m.opts_mut()
            .insert(DhcpOption::ClassIdentifier(b"PXEClient:Arch:00000".to_vec()));
        let good = encode(&m).unwrap();
        for i in 0..20_000 {
            let mut b = if i % 2 == 0 {
                good.clone()
            } else {
                vec![0u8; rng.gen_range(0..600)]
            };
            let flips = rng.gen_range(1..8);
            for _ in 0..flips {
                if b.is_empty() {
                    break;
                }
                let at = rng.gen_range(0..b.len());
                b[at] = rng.gen();
            }
            if rng.gen_bool(0.3) {
                let cut = rng.gen_range(0..=b.len());
                b.truncate(cut);
            }
            let _ = DhcpRequest::parse(&b);
        }
        // The one dhcproto would panic on: hlen 200.
        let mut b = good.clone();
        b[2] = 200;
        assert!(matches!(DhcpRequest::parse(&b), Err(PacketError::NotEthernet(1, 200))));
    }
}
