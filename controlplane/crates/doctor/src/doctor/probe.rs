//! DHCP probes sent by the doctor: PXE-flavoured DHCPDISCOVERs (BIOS and x86-64 UEFI,
//! RFC 4578 options 93/94/97, vendor class `PXEClient`) broadcast on one interface, and
//! every OFFER that comes back; and a PXE boot-server request to port 4011. The client
//! hardware address is [`DOCTOR_MAC`], which Bootlane's own server never answers on port
//! 67, so a probe takes no address from the pool.

use std::{
    net::{Ipv4Addr, SocketAddr, SocketAddrV4},
    time::Duration,
};

use bootlane_dhcp::dhcp::handler::DOCTOR_MAC;
use dhcproto::{
    v4::{Architecture, DhcpOption, Flags, Message, MessageType, Opcode, OptionCode},
    Decodable, Decoder, Encodable, Encoder,
};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

/// One probe's flavour: the firmware it pretends to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Firmware {
    /// Legacy BIOS PXE (option 93 = 0).
    Bios,
    /// x86-64 UEFI PXE (option 93 = 7).
    UefiX64,
}

impl Firmware {
    /// The RFC 4578 architecture code.
    pub fn arch(self) -> u16 {
        match self {
            Self::Bios => 0,
            Self::UefiX64 => 7,
        }
    }
}

/// An OFFER (or a proxyDHCP answer) received by a probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offer {
    /// The probe it answered.
    pub probe: Firmware,
    /// The answering server: option 54 (server identifier), else the datagram's source.
    pub server: Ipv4Addr,
    /// The datagram's source address.
    pub source: Ipv4Addr,
    /// The address offered (`yiaddr`; unspecified for a proxyDHCP answer).
    pub address: Ipv4Addr,
    /// `siaddr` (next-server), when set.
    pub next_server: Option<Ipv4Addr>,
    /// The boot file: option 67, else the `file` field, when set.
    pub boot_file: Option<String>,
}

impl Offer {
    /// Whether the answer points PXE clients at a boot file or a next-server.
    pub fn gives_boot(&self) -> bool {
        self.boot_file.is_some() || self.next_server.is_some()
    }
}

/// The xid of `firmware`'s probe in run `run`.
fn xid(run: u32, firmware: Firmware) -> u32 {
    (run & 0xffff_ff00) | u32::from(firmware.arch() as u8)
}

/// A PXE client's message of `kind` as `firmware` sends it.
pub fn pxe_message(kind: MessageType, firmware: Firmware, xid: u32, ciaddr: Ipv4Addr) -> Message {
    let mut m = Message::new(
        ciaddr,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        &DOCTOR_MAC.0,
    );
    m.set_xid(xid).set_flags(Flags::default().set_broadcast());
    let vc = match firmware {
        Firmware::Bios => "PXEClient:Arch:00000:UNDI:002001",
        Firmware::UefiX64 => "PXEClient:Arch:00007:UNDI:003016",
    };
    let o = m.opts_mut();
    o.insert(DhcpOption::MessageType(kind));
    o.insert(DhcpOption::ParameterRequestList(vec![
        OptionCode::SubnetMask,
        OptionCode::Router,
        OptionCode::DomainNameServer,
        OptionCode::ClassIdentifier,
        OptionCode::TFTPServerName,
        OptionCode::BootfileName,
    ]));
    o.insert(DhcpOption::ClassIdentifier(vc.as_bytes().to_vec()));
    o.insert(DhcpOption::ClientSystemArchitecture(Architecture(firmware.arch())));
    o.insert(DhcpOption::ClientNetworkInterface(1, 2, 1));
    let mut guid = vec![0u8; 17];
    guid[11..].copy_from_slice(&DOCTOR_MAC.0);
    o.insert(DhcpOption::ClientMachineIdentifier(guid));
    m
}

fn encode(m: &Message) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(400);
    m.encode(&mut Encoder::new(&mut buf)).map_err(std::io::Error::other)?;
    Ok(buf)
}

/// Reads `m` as an answer to one of `xids`, from `source`.
fn offer_of(m: &Message, source: Ipv4Addr, probes: &[(u32, Firmware)]) -> Option<Offer> {
    if m.opcode() != Opcode::BootReply || m.chaddr().get(..6) != Some(&DOCTOR_MAC.0[..]) {
        return None;
    }
    let probe = probes.iter().find(|(x, _)| *x == m.xid())?.1;
    let server = match m.opts().get(OptionCode::ServerIdentifier) {
        Some(DhcpOption::ServerIdentifier(a)) => *a,
        _ => source,
    };
    let text = |b: &[u8]| {
        let s = String::from_utf8_lossy(b.split(|c| *c == 0).next().unwrap_or_default()).into_owned();
        (!s.is_empty()).then_some(s)
    };
    let boot_file = match m.opts().get(OptionCode::BootfileName) {
        Some(DhcpOption::BootfileName(b)) => text(b),
        _ => None,
    }
    .or_else(|| text(m.fname().unwrap_or_default()));
    Some(Offer {
        probe,
        server,
        source,
        address: m.yiaddr(),
        next_server: (!m.siaddr().is_unspecified()).then_some(m.siaddr()),
        boot_file,
    })
}

/// A UDP socket on `port` bound to `interface` (`SO_BINDTODEVICE`), allowed to broadcast.
fn device_socket(interface: &str, addr: Ipv4Addr, port: u16) -> std::io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_address(true)?;
    s.set_broadcast(true)?;
    s.bind_device(Some(interface.as_bytes()))?;
    s.set_nonblocking(true)?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(addr, port)).into())?;
    UdpSocket::from_std(s.into())
}

/// Broadcasts one DHCPDISCOVER per firmware on `interface` from port 68 and collects
/// every OFFER for `wait` (a server may first ping the address it offers, as dnsmasq
/// does for up to 3 s). `run` varies the xids between runs.
///
/// # Errors
/// Port 68 cannot be bound on the interface (a DHCP client holds it), or sending failed.
pub async fn discover(interface: &str, run: u32, wait: Duration) -> std::io::Result<Vec<Offer>> {
    let sock = device_socket(interface, Ipv4Addr::UNSPECIFIED, 68)?;
    let probes = [Firmware::Bios, Firmware::UefiX64].map(|f| (xid(run, f), f));
    for (x, f) in probes {
        let buf = encode(&pxe_message(MessageType::Discover, f, x, Ipv4Addr::UNSPECIFIED))?;
        sock.send_to(&buf, SocketAddrV4::new(Ipv4Addr::BROADCAST, 67)).await?;
    }
    Ok(collect(&sock, &probes, wait).await)
}

async fn collect(sock: &UdpSocket, probes: &[(u32, Firmware)], wait: Duration) -> Vec<Offer> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut out: Vec<Offer> = Vec::new();
    let mut buf = vec![0u8; 1500];
    while let Ok(Ok((n, from))) = tokio::time::timeout_at(deadline, sock.recv_from(&mut buf)).await {
        let SocketAddr::V4(from) = from else { continue };
        let Ok(m) = Message::decode(&mut Decoder::new(&buf[..n])) else {
            continue;
        };
        if let Some(o) = offer_of(&m, *from.ip(), probes) {
            if !out.contains(&o) {
                out.push(o);
            }
        }
    }
    out
}

/// Sends a PXE boot-server DHCPREQUEST (x86-64 UEFI, `ciaddr` = `address`) to port 4011
/// as a broadcast on `interface` (a request to the machine's own address would arrive on
/// the loopback interface, where the bound server socket does not listen) and waits up to
/// `wait` for the answer, which comes back to the request's source address and port.
///
/// # Errors
/// Binding or sending failed.
pub async fn proxy_request(
    interface: &str,
    address: Ipv4Addr,
    run: u32,
    wait: Duration,
) -> std::io::Result<Option<Offer>> {
    let sock = device_socket(interface, Ipv4Addr::UNSPECIFIED, 0)?;
    let probes = [(xid(run, Firmware::UefiX64) ^ 0x80, Firmware::UefiX64)];
    let buf = encode(&pxe_message(
        MessageType::Request,
        Firmware::UefiX64,
        probes[0].0,
        address,
    ))?;
    sock.send_to(&buf, SocketAddrV4::new(Ipv4Addr::BROADCAST, 4011)).await?;
    // The answer is unicast to `address`, a local address: it arrives on the loopback
    // interface, which the device binding would filter out.
    socket2::SockRef::from(&sock).bind_device(None)?;
    Ok(collect(&sock, &probes, wait).await.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_look_like_pxe_firmware_and_answers_are_read() {
        let m = pxe_message(
            MessageType::Discover,
            Firmware::UefiX64,
            0x1234_5607,
            Ipv4Addr::UNSPECIFIED,
        );
        let bytes = encode(&m).unwrap();
        let req = bootlane_dhcp::dhcp::packet::DhcpRequest::parse(&bytes).unwrap();
        assert_eq!(req.mac, DOCTOR_MAC);
        assert!(req.class.pxe);
        assert_eq!(req.class.arch, Some(7));

        let mut reply = Message::new(
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::new(10, 0, 0, 50),
            Ipv4Addr::new(10, 0, 0, 5),
            Ipv4Addr::UNSPECIFIED,
            &DOCTOR_MAC.0,
        );
        reply.set_opcode(Opcode::BootReply).set_xid(0x1234_5607);
        reply.opts_mut().insert(DhcpOption::MessageType(MessageType::Offer));
        reply
            .opts_mut()
            .insert(DhcpOption::ServerIdentifier(Ipv4Addr::new(10, 0, 0, 5)));
        reply
            .opts_mut()
            .insert(DhcpOption::BootfileName(b"pxelinux.0".to_vec()));
        let probes = [(0x1234_5607, Firmware::UefiX64)];
        let o = offer_of(&reply, Ipv4Addr::new(10, 0, 0, 5), &probes).unwrap();
        assert_eq!(o.server, Ipv4Addr::new(10, 0, 0, 5));
        assert_eq!(o.address, Ipv4Addr::new(10, 0, 0, 50));
        assert_eq!(o.next_server, Some(Ipv4Addr::new(10, 0, 0, 5)));
        assert_eq!(o.boot_file.as_deref(), Some("pxelinux.0"));
        assert!(o.gives_boot());
        // Another transaction, or another client's answer: not ours.
        assert!(offer_of(&reply, Ipv4Addr::new(10, 0, 0, 5), &[(1, Firmware::Bios)]).is_none());
        reply.set_chaddr(&[1, 2, 3, 4, 5, 6]);
        assert!(offer_of(&reply, Ipv4Addr::new(10, 0, 0, 5), &probes).is_none());
    }
}
