//! Handler tests from hand-built packets: every request is encoded to bytes with
//! dhcproto and parsed back through [`DhcpRequest::parse`], as the server does, so the
//! classification of real client quirks (iPXE's bare option 77 and option 175, the
//! decimal arch in option 60, UEFI HTTP boot) is tested on the wire form.

use std::net::{Ipv4Addr, SocketAddrV4};

use dhcproto::v4::{Architecture, DhcpOption, Flags, Message, MessageType, OptionCode};

use super::{
    config::{default_arch_map, Reservation, SubnetConfig, SubnetMode},
    handler::{BootHandler, DhcpHandler, DhcpReply, RecvContext, Subnet},
    leases::LeaseDb,
    packet::{encode, DhcpRequest},
};
use bootlane_core::store::Store;

const SERVER: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const MAC_A: [u8; 6] = [0x52, 0x54, 0, 0x77, 0, 0x42];
const MAC_B: [u8; 6] = [0x52, 0x54, 0, 0x77, 0, 0x43];
const MAC_R: [u8; 6] = [0x52, 0x54, 0, 0x77, 0, 0x99];
const IPXE_URL: &str = "http://10.77.0.1:8080/boot/ipxe?mac=${netX/mac}";

fn subnet(mode: SubnetMode) -> SubnetConfig {
    SubnetConfig {
        mode,
        interface: "eth0".into(),
        cidr: "10.77.0.0/24".parse().unwrap(),
        range_start: Some(Ipv4Addr::new(10, 77, 0, 100)),
        range_end: Some(Ipv4Addr::new(10, 77, 0, 110)),
        router: Some(SERVER),
        dns: None,
        lease_time_secs: 3600,
        server_address: Some(SERVER),
        reservations: vec![Reservation {
            mac: "52:54:00:77:00:99".into(),
            ip: Ipv4Addr::new(10, 77, 0, 50),
            hostname: Some("fixed".into()),
        }],
        secure_boot: false,
    }
}

fn relayed() -> SubnetConfig {
    SubnetConfig {
        interface: "eth0".into(),
        cidr: "10.88.0.0/24".parse().unwrap(),
        range_start: Some(Ipv4Addr::new(10, 88, 0, 10)),
        range_end: Some(Ipv4Addr::new(10, 88, 0, 20)),
        router: Some(Ipv4Addr::new(10, 88, 0, 1)),
        server_address: Some(SERVER),
        reservations: vec![],
        ..subnet(SubnetMode::Server)
    }
}

fn handler_with(cfgs: Vec<SubnetConfig>, leases: LeaseDb) -> BootHandler {
    let subnets = cfgs.iter().map(|c| Subnet::resolve(c, &[]).unwrap()).collect();
    BootHandler::new(
        subnets,
        default_arch_map(),
        8080,
        Box::new(|| "lab.local".to_string()),
        leases,
    )
}

fn handler(mode: SubnetMode) -> BootHandler {
    handler_with(vec![subnet(mode), relayed()], LeaseDb::in_memory())
}

/// Builds a request, encodes it and parses it back (the server's path).
fn req(kind: MessageType, mac: [u8; 6], f: impl FnOnce(&mut Message)) -> DhcpRequest {
    let mut m = Message::new(
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        &mac,
    );
    m.opts_mut().insert(DhcpOption::MessageType(kind));
    f(&mut m);
    DhcpRequest::parse(&encode(&m).unwrap()).unwrap()
}

fn ctx(port: u16) -> RecvContext {
    RecvContext {
        interface: "eth0".into(),
        port,
        src: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 68),
    }
}

async fn ask(h: &BootHandler, r: DhcpRequest) -> Option<DhcpReply> {
    h.handle(r, ctx(67)).await
}

fn kind(r: &DhcpReply) -> MessageType {
    r.msg.opts().msg_type().unwrap()
}

fn opt(r: &DhcpReply, code: OptionCode) -> Option<&DhcpOption> {
    r.msg.opts().get(code)
}

fn bytes_opt(r: &DhcpReply, code: OptionCode) -> Option<String> {
    match opt(r, code)? {
        DhcpOption::BootfileName(b) | DhcpOption::TFTPServerName(b) | DhcpOption::ClassIdentifier(b) => {
            Some(String::from_utf8_lossy(b).into_owned())
        }
        _ => None,
    }
}

fn file(r: &DhcpReply) -> Option<String> {
    r.msg
        .fname_str()
        .and_then(Result::ok)
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

fn broadcast() -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::BROADCAST, 68)
}

fn pxe_bios(m: &mut Message) {
    m.opts_mut().insert(DhcpOption::ClassIdentifier(
        b"PXEClient:Arch:00000:UNDI:002001".to_vec(),
    ));
    m.opts_mut()
        .insert(DhcpOption::ClientSystemArchitecture(Architecture(0)));
}

fn ipxe_bare(m: &mut Message) {
    pxe_bios(m);
    m.opts_mut().insert(DhcpOption::UserClass(b"iPXE".to_vec()));
    m.opts_mut()
        .insert(DhcpOption::Unknown(dhcproto::v4::UnknownOption::new(
            OptionCode::Unknown(175),
            vec![0xb1, 0x01, 0x01],
        )));
}

/// DISCOVER then REQUEST (selecting) for `mac`; returns the ACK.
async fn dora(h: &BootHandler, mac: [u8; 6]) -> DhcpReply {
    let offer = ask(h, req(MessageType::Discover, mac, |_| {})).await.unwrap();
    assert_eq!(kind(&offer), MessageType::Offer);
    let ip = offer.msg.yiaddr();
    let ack = ask(
        h,
        req(MessageType::Request, mac, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(ip));
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&ack), MessageType::Ack);
    assert_eq!(ack.msg.yiaddr(), ip);
    ack
}

#[tokio::test]
async fn discover_offer_request_ack_with_options() {
    let h = handler(SubnetMode::Server);
    let offer = ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.unwrap();
    assert_eq!(kind(&offer), MessageType::Offer);
    assert_eq!(offer.msg.yiaddr(), Ipv4Addr::new(10, 77, 0, 100));
    assert_eq!(offer.dest, broadcast());
    assert_eq!(offer.msg.chaddr(), &MAC_A);
    for (code, want) in [
        (OptionCode::ServerIdentifier, DhcpOption::ServerIdentifier(SERVER)),
        (
            OptionCode::SubnetMask,
            DhcpOption::SubnetMask(Ipv4Addr::new(255, 255, 255, 0)),
        ),
        (OptionCode::Router, DhcpOption::Router(vec![SERVER])),
        (OptionCode::DomainNameServer, DhcpOption::DomainNameServer(vec![SERVER])),
        (OptionCode::DomainName, DhcpOption::DomainName("lab.local".into())),
        (OptionCode::AddressLeaseTime, DhcpOption::AddressLeaseTime(3600)),
        (OptionCode::Renewal, DhcpOption::Renewal(1800)),
        (OptionCode::Rebinding, DhcpOption::Rebinding(3150)),
    ] {
        assert_eq!(opt(&offer, code), Some(&want), "{code:?}");
    }
    // A plain client gets no boot information.
    assert_eq!(file(&offer), None);
    assert!(opt(&offer, OptionCode::BootfileName).is_none());
    assert_eq!(offer.msg.siaddr(), Ipv4Addr::UNSPECIFIED);

    // Another client meanwhile is not offered the held address.
    let other = ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.unwrap();
    assert_eq!(other.msg.yiaddr(), Ipv4Addr::new(10, 77, 0, 101));

    let ack = dora(&h, MAC_A).await;
    assert_eq!(ack.msg.yiaddr(), Ipv4Addr::new(10, 77, 0, 100));
    assert_eq!(ack.dest, broadcast());
    let leases = h.leases().await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].mac, "52:54:00:77:00:42");
    assert_eq!(leases[0].subnet, "10.77.0.0/24");

    // The reply encodes and decodes (what goes on the wire).
    let bytes = encode(&ack.msg).unwrap();
    assert!(bytes.len() >= 300);
}

#[tokio::test]
async fn request_for_another_server_is_ignored_and_bad_requests_are_naked() {
    let h = handler(SubnetMode::Server);
    let _ = ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.unwrap();
    // SELECTING another server's offer: silence.
    let r = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 100)));
            m.opts_mut()
                .insert(DhcpOption::ServerIdentifier(Ipv4Addr::new(10, 77, 0, 254)));
        }),
    )
    .await;
    assert!(r.is_none());

    // INIT-REBOOT with an address from a foreign network: NAK, broadcast.
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(192, 168, 1, 5)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
    assert_eq!(nak.msg.yiaddr(), Ipv4Addr::UNSPECIFIED);
    assert_eq!(nak.dest, broadcast());
    assert!(opt(&nak, OptionCode::AddressLeaseTime).is_none());

    // An address leased to someone else: NAK.
    let b = dora(&h, MAC_B).await;
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(b.msg.yiaddr()));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);

    // An address outside the pool: NAK.
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 200)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
}

#[tokio::test]
async fn renew_is_unicast_and_init_reboot_is_acked() {
    let h = handler(SubnetMode::Server);
    let ack = dora(&h, MAC_A).await;
    let ip = ack.msg.yiaddr();
    // RENEWING: ciaddr set, no option 50 / 54; the answer goes to ciaddr.
    let renew = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.set_ciaddr(ip);
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&renew), MessageType::Ack);
    assert_eq!(renew.dest, SocketAddrV4::new(ip, 68));
    assert_eq!(renew.msg.yiaddr(), ip);
    // INIT-REBOOT with its own address.
    let reboot = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(ip));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&reboot), MessageType::Ack);
    // RENEWING an address this client does not hold: NAK.
    let bad = ask(
        &h,
        req(MessageType::Request, MAC_B, |m| {
            m.set_ciaddr(ip);
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&bad), MessageType::Nak);
    assert_eq!(h.leases().await.len(), 1);
}

#[tokio::test]
async fn reservations_win() {
    let h = handler(SubnetMode::Server);
    let ack = dora(&h, MAC_R).await;
    assert_eq!(ack.msg.yiaddr(), Ipv4Addr::new(10, 77, 0, 50));
    assert_eq!(
        opt(&ack, OptionCode::Hostname),
        Some(&DhcpOption::Hostname("fixed".into()))
    );
    // Even when it asks for a pool address.
    let offer = ask(
        &h,
        req(MessageType::Discover, MAC_R, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 105)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(offer.msg.yiaddr(), Ipv4Addr::new(10, 77, 0, 50));
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_R, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 105)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
    // Nobody else gets the reserved address.
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 50)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
}

#[tokio::test]
async fn release_decline_inform() {
    let h = handler(SubnetMode::Server);
    let ip = dora(&h, MAC_A).await.msg.yiaddr();
    let r = ask(
        &h,
        req(MessageType::Release, MAC_A, |m| {
            m.set_ciaddr(ip);
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        }),
    )
    .await;
    assert!(r.is_none());
    let l = h.leases().await;
    assert!(l[0].expires_at <= super::leases::now_secs());
    // The released address is free for others, but its old owner gets it back first.
    let again = ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.unwrap();
    assert_eq!(again.msg.yiaddr(), ip);

    // DECLINE: the address is kept out of the pool.
    let r = ask(
        &h,
        req(MessageType::Decline, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(ip));
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        }),
    )
    .await;
    assert!(r.is_none());
    for mac in [MAC_A, MAC_B] {
        let o = ask(&h, req(MessageType::Discover, mac, |_| {})).await.unwrap();
        assert_ne!(o.msg.yiaddr(), ip);
    }

    // INFORM: configuration only, to ciaddr.
    let me = Ipv4Addr::new(10, 77, 0, 7);
    let inf = ask(
        &h,
        req(MessageType::Inform, MAC_B, |m| {
            m.set_ciaddr(me);
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&inf), MessageType::Ack);
    assert_eq!(inf.msg.yiaddr(), Ipv4Addr::UNSPECIFIED);
    assert_eq!(inf.dest, SocketAddrV4::new(me, 68));
    assert!(opt(&inf, OptionCode::AddressLeaseTime).is_none());
    assert!(opt(&inf, OptionCode::SubnetMask).is_some());
}

#[tokio::test]
async fn relayed_requests_pick_the_subnet_of_giaddr() {
    let h = handler(SubnetMode::Server);
    let relay = Ipv4Addr::new(10, 88, 0, 1);
    let offer = ask(
        &h,
        req(MessageType::Discover, MAC_A, |m| {
            m.set_giaddr(relay);
            m.set_hops(1);
        }),
    )
    .await
    .unwrap();
    assert_eq!(offer.msg.yiaddr(), Ipv4Addr::new(10, 88, 0, 10));
    assert_eq!(offer.dest, SocketAddrV4::new(relay, 67));
    assert_eq!(offer.msg.giaddr(), relay);
    assert_eq!(opt(&offer, OptionCode::Router), Some(&DhcpOption::Router(vec![relay])));
    // A NAK through a relay sets the broadcast bit.
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            m.set_giaddr(relay);
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 100)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
    assert!(nak.msg.flags().broadcast());
    // Unknown relay network: silence.
    assert!(ask(
        &h,
        req(MessageType::Discover, MAC_A, |m| {
            m.set_giaddr(Ipv4Addr::new(172, 16, 0, 1));
        })
    )
    .await
    .is_none());
}

#[tokio::test]
async fn pxe_bios_gets_undionly_by_tftp() {
    let h = handler(SubnetMode::Server);
    let offer = ask(&h, req(MessageType::Discover, MAC_A, pxe_bios)).await.unwrap();
    assert_eq!(file(&offer).as_deref(), Some("undionly.kpxe"));
    assert_eq!(
        bytes_opt(&offer, OptionCode::BootfileName).as_deref(),
        Some("undionly.kpxe")
    );
    assert_eq!(
        bytes_opt(&offer, OptionCode::TFTPServerName).as_deref(),
        Some("10.77.0.1")
    );
    assert_eq!(
        bytes_opt(&offer, OptionCode::ClassIdentifier).as_deref(),
        Some("PXEClient")
    );
    assert_eq!(offer.msg.siaddr(), SERVER);
    assert_eq!(
        opt(&offer, OptionCode::VendorExtensions),
        Some(&DhcpOption::VendorExtensions(vec![6, 1, 8, 255]))
    );
}

#[tokio::test]
async fn uefi_arch_from_option_93_or_option_60() {
    let h = handler(SubnetMode::Server);
    let cases: [(Option<u16>, &[u8], &str); 4] = [
        (Some(7), b"PXEClient:Arch:00007:UNDI:003016", "ipxe.efi"),
        (Some(9), b"PXEClient", "ipxe.efi"),
        // No option 93: the decimal code in option 60 (00011 is ARM64, not hex 0x11).
        (None, b"PXEClient:Arch:00011:UNDI:003000", "grubaa64.efi"),
        (None, b"PXEClient:Arch:00006:UNDI:003000", "ipxe32.efi"),
    ];
    for (arch, vc, want) in cases {
        let r = req(MessageType::Discover, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::ClassIdentifier(vc.to_vec()));
            if let Some(a) = arch {
                m.opts_mut()
                    .insert(DhcpOption::ClientSystemArchitecture(Architecture(a)));
            }
        });
        let offer = ask(&h, r).await.unwrap();
        assert_eq!(file(&offer).as_deref(), Some(want), "arch {arch:?} {vc:?}");
    }
    // An architecture without entry gets an address but no boot file.
    let offer = ask(
        &h,
        req(MessageType::Discover, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::ClassIdentifier(b"PXEClient:Arch:00099".to_vec()));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&offer), MessageType::Offer);
    assert_eq!(file(&offer), None);
}

#[tokio::test]
async fn ipxe_gets_the_script_url_in_every_form() {
    let h = handler(SubnetMode::Server);
    let forms: [fn(&mut Message); 3] = [
        // What iPXE really sends: bare "iPXE" in option 77 plus option 175.
        ipxe_bare,
        // RFC 3004 encoding only.
        |m| {
            pxe_bios(m);
            m.opts_mut().insert(DhcpOption::UserClass(b"\x04iPXE".to_vec()));
        },
        // Option 175 only.
        |m| {
            pxe_bios(m);
            m.opts_mut()
                .insert(DhcpOption::Unknown(dhcproto::v4::UnknownOption::new(
                    OptionCode::Unknown(175),
                    vec![0x13, 0x01, 0x01],
                )));
        },
    ];
    for f in forms {
        let offer = ask(&h, req(MessageType::Discover, MAC_A, f)).await.unwrap();
        assert_eq!(file(&offer).as_deref(), Some(IPXE_URL));
        assert_eq!(bytes_opt(&offer, OptionCode::BootfileName).as_deref(), Some(IPXE_URL));
    }
    // The ACK carries it too.
    let ack = ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            ipxe_bare(m);
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 100)));
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&ack), MessageType::Ack);
    assert_eq!(file(&ack).as_deref(), Some(IPXE_URL));
}

#[tokio::test]
async fn uefi_http_boot_gets_a_url() {
    let h = handler(SubnetMode::Server);
    let offer = ask(
        &h,
        req(MessageType::Discover, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::ClassIdentifier(
                b"HTTPClient:Arch:00016:UNDI:003001".to_vec(),
            ));
            m.opts_mut()
                .insert(DhcpOption::ClientSystemArchitecture(Architecture(16)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(file(&offer).as_deref(), Some("http://10.77.0.1:8080/boot/ipxe.efi"));
    assert_eq!(
        bytes_opt(&offer, OptionCode::ClassIdentifier).as_deref(),
        Some("HTTPClient")
    );
    assert!(opt(&offer, OptionCode::TFTPServerName).is_none());
}

#[tokio::test]
async fn proxy_answers_pxe_clients_only_without_address() {
    let h = handler_with(vec![subnet(SubnetMode::Proxy)], LeaseDb::in_memory());
    // A plain client: the real DHCP server's business.
    assert!(ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.is_none());
    let uuid = vec![
        0u8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01,
    ];
    let offer = ask(
        &h,
        req(MessageType::Discover, MAC_A, |m| {
            pxe_bios(m);
            m.opts_mut().insert(DhcpOption::ClientMachineIdentifier(uuid.clone()));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&offer), MessageType::Offer);
    // Option 97 (the client's UUID) is echoed (PXE; RFC 4578 §2.2).
    assert_eq!(
        offer.msg.opts().get(OptionCode::ClientMachineIdentifier),
        Some(&DhcpOption::ClientMachineIdentifier(uuid))
    );
    assert_eq!(offer.msg.yiaddr(), Ipv4Addr::UNSPECIFIED);
    assert_eq!(offer.dest, broadcast());
    assert!(opt(&offer, OptionCode::AddressLeaseTime).is_none());
    assert!(opt(&offer, OptionCode::SubnetMask).is_none());
    assert_eq!(file(&offer).as_deref(), Some("undionly.kpxe"));
    assert_eq!(
        bytes_opt(&offer, OptionCode::ClassIdentifier).as_deref(),
        Some("PXEClient")
    );
    // A REQUEST on 67 for the real server: silence.
    assert!(ask(
        &h,
        req(MessageType::Request, MAC_A, |m| {
            pxe_bios(m);
            m.opts_mut()
                .insert(DhcpOption::ServerIdentifier(Ipv4Addr::new(10, 77, 0, 254)));
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 60)));
        })
    )
    .await
    .is_none());
    // A REQUEST on 4011 from the configured client: unicast ACK to its source.
    let src = SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 60), 68);
    let ack = h
        .handle(
            req(MessageType::Request, MAC_A, |m| {
                ipxe_bare(m);
                m.set_ciaddr(*src.ip());
            }),
            RecvContext {
                interface: "eth0".into(),
                port: 4011,
                src,
            },
        )
        .await
        .unwrap();
    assert_eq!(kind(&ack), MessageType::Ack);
    assert_eq!(ack.dest, src);
    assert_eq!(ack.msg.yiaddr(), Ipv4Addr::UNSPECIFIED);
    assert_eq!(file(&ack).as_deref(), Some(IPXE_URL));
    assert!(h.leases().await.is_empty());
}

#[tokio::test]
async fn off_subnets_and_other_interfaces_are_silent() {
    let h = handler_with(vec![subnet(SubnetMode::Off)], LeaseDb::in_memory());
    assert!(ask(&h, req(MessageType::Discover, MAC_A, pxe_bios)).await.is_none());
    let h = handler(SubnetMode::Server);
    let r = h
        .handle(
            req(MessageType::Discover, MAC_A, |_| {}),
            RecvContext {
                interface: "eth1".into(),
                port: 67,
                src: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 68),
            },
        )
        .await;
    assert!(r.is_none());
    // Server mode does not answer on 4011.
    let r = h.handle(req(MessageType::Discover, MAC_A, pxe_bios), ctx(4011)).await;
    assert!(r.is_none());
}

#[tokio::test]
async fn leases_persist_across_restarts() {
    let store = Store::temporary();
    let h = handler_with(vec![subnet(SubnetMode::Server)], LeaseDb::load(&store).await.unwrap());
    let _ = dora(&h, MAC_A).await;
    let ip_b = dora(&h, MAC_B).await.msg.yiaddr();
    drop(h);
    let h = handler_with(vec![subnet(SubnetMode::Server)], LeaseDb::load(&store).await.unwrap());
    assert_eq!(h.leases().await.len(), 2);
    // B keeps its address; a new client does not get it.
    let o = ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.unwrap();
    assert_eq!(o.msg.yiaddr(), ip_b);
    let o = ask(
        &h,
        req(MessageType::Discover, MAC_R, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(ip_b));
        }),
    )
    .await
    .unwrap();
    assert_ne!(o.msg.yiaddr(), ip_b);
    // A renewed lease updates the same row.
    let _ = dora(&h, MAC_B).await;
    let h2 = LeaseDb::load(&store).await.unwrap();
    assert_eq!(h2.all().count(), 2);
}

#[tokio::test]
async fn pool_exhaustion_is_silent() {
    let mut cfg = subnet(SubnetMode::Server);
    cfg.range_end = cfg.range_start;
    let h = handler_with(vec![cfg], LeaseDb::in_memory());
    let _ = dora(&h, MAC_A).await;
    assert!(ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.is_none());
}

#[test]
fn flags_round_trip() {
    // The broadcast bit set by a client survives into the reply skeleton.
    let r = req(MessageType::Discover, MAC_A, |m| {
        m.set_flags(Flags::default().set_broadcast());
    });
    assert!(r.msg.flags().broadcast());
}

#[tokio::test]
async fn decline_from_another_client_is_ignored() {
    let h = handler(SubnetMode::Server);
    let victim = dora(&h, MAC_B).await.msg.yiaddr();
    // MAC_A never leased or was offered the victim's address: its DECLINE must not take it.
    let r = ask(
        &h,
        req(MessageType::Decline, MAC_A, |m| {
            m.opts_mut().insert(DhcpOption::RequestedIpAddress(victim));
        }),
    )
    .await;
    assert!(r.is_none());
    assert!(h.leases().await.iter().all(|l| !l.declined), "nothing was declined");
    // The victim still gets its address on its next DISCOVER.
    let o = ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.unwrap();
    assert_eq!(o.msg.yiaddr(), victim);
}

/// A DORA exchange, a NAK and a RELEASE show up in the rendered metrics with their type
/// and outcome labels. The recorder is shared by every test in the binary, so the test
/// compares before/after values.
#[tokio::test]
async fn exchanges_are_counted_by_type_and_outcome() {
    use bootlane_core::metrics::{install, render, test_support::value};
    install();
    let series = [
        r#"bootlane_dhcp_messages_total{type="discover",outcome="offered"}"#,
        r#"bootlane_dhcp_messages_total{type="request",outcome="acked"}"#,
        r#"bootlane_dhcp_messages_total{type="request",outcome="naked"}"#,
        r#"bootlane_dhcp_messages_total{type="release",outcome="no_reply_due"}"#,
        r#"bootlane_dhcp_replies_total{type="offer"}"#,
        r#"bootlane_dhcp_replies_total{type="ack"}"#,
        r#"bootlane_dhcp_replies_total{type="nak"}"#,
    ];
    let text = render();
    let before: Vec<f64> = series.iter().map(|s| value(&text, s)).collect();

    let h = handler(SubnetMode::Server);
    let ack = dora(&h, MAC_A).await;
    // INIT-REBOOT for an address outside the subnet: NAK.
    let nak = ask(
        &h,
        req(MessageType::Request, MAC_B, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(192, 0, 2, 9)));
        }),
    )
    .await
    .unwrap();
    assert_eq!(kind(&nak), MessageType::Nak);
    let released = ask(
        &h,
        req(MessageType::Release, MAC_A, |m| {
            m.set_ciaddr(ack.msg.yiaddr());
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        }),
    )
    .await;
    assert!(released.is_none());

    let text = render();
    assert!(text.contains("# TYPE bootlane_dhcp_messages_total counter"), "{text}");
    for (s, b) in series.iter().zip(before) {
        assert!(value(&text, s) >= b + 1.0, "{s} did not grow:\n{text}");
    }
}

/// `/settings/netboot` `http_base_url`: a configured base URL names the iPXE script URL
/// from the next answer on, and clearing it goes back to the server address and API port.
#[tokio::test]
async fn ipxe_script_url_follows_the_http_base_url() {
    let base = tokio::sync::watch::Sender::new(bootlane_boot::boot::netboot::NetbootSettings::with_root(
        std::path::Path::new("/srv/boot"),
    ));
    let h = handler(SubnetMode::Server).with_http_base(base.subscribe());
    let offer = ask(&h, req(MessageType::Discover, MAC_A, ipxe_bare)).await.unwrap();
    assert_eq!(file(&offer).as_deref(), Some(IPXE_URL));
    base.send_modify(|n| n.http_base_url = Some("https://pxe.lab.example:8443/bl".into()));
    let offer = ask(&h, req(MessageType::Discover, MAC_A, ipxe_bare)).await.unwrap();
    assert_eq!(
        file(&offer).as_deref(),
        Some("https://pxe.lab.example:8443/bl/boot/ipxe?mac=${netX/mac}")
    );
    base.send_modify(|n| n.http_base_url = None);
    let offer = ask(&h, req(MessageType::Discover, MAC_A, ipxe_bare)).await.unwrap();
    assert_eq!(file(&offer).as_deref(), Some(IPXE_URL));
}

/// A refused client gets no answer at all, in server and proxy mode; its refusal is
/// queued with option 93 and option 60; the mode and lists apply to the very next packet;
/// a plain client in a proxy subnet is never judged.
#[tokio::test]
async fn access_control_silences_refused_clients() {
    use bootlane_boot::access::{gate::test_gate, model::Protocol, Mode};
    let pxe = |m: &mut Message| {
        m.opts_mut().insert(DhcpOption::ClassIdentifier(
            b"PXEClient:Arch:00000:UNDI:002001".to_vec(),
        ));
        m.opts_mut()
            .insert(DhcpOption::ClientSystemArchitecture(Architecture(0)));
    };
    let (gate, mut rx) = test_gate(Mode::Blacklist, &["52:54:00:77:00:42"], &["52:54:00:77:00:43"]);
    let h = handler(SubnetMode::Server).with_access(gate.clone());
    assert!(
        ask(&h, req(MessageType::Discover, MAC_A, pxe)).await.is_none(),
        "blacklisted"
    );
    let s = rx.try_recv().expect("the refusal is queued");
    assert_eq!((s.protocol, s.arch), (Protocol::Dhcp, Some(0)));
    assert_eq!(s.vendor_class.as_deref(), Some("PXEClient:Arch:00000:UNDI:002001"));
    let offer = ask(&h, req(MessageType::Discover, MAC_B, |_| {}))
        .await
        .expect("not listed: served");
    assert_eq!(kind(&offer), MessageType::Offer);
    // Whitelist: only MAC_B is served; a REQUEST for an address is silenced too.
    let (gate, mut rx) = test_gate(Mode::Whitelist, &[], &["52:54:00:77:00:43"]);
    let h = handler(SubnetMode::Server).with_access(gate.clone());
    assert!(ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.is_none());
    let asked = |m: &mut Message| {
        m.opts_mut()
            .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 105)));
    };
    assert!(ask(&h, req(MessageType::Request, MAC_A, asked)).await.is_none());
    assert_eq!(rx.try_recv().unwrap().ip, None);
    assert_eq!(
        rx.try_recv().unwrap().ip,
        Some(Ipv4Addr::new(10, 77, 0, 105).into()),
        "the address asked for is recorded"
    );
    assert!(ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.is_some());
    // The address a client asks for names it for TFTP and HTTP boot.
    assert_eq!(
        gate.mac_for_ip(Ipv4Addr::new(10, 77, 0, 105).into()).await,
        Some(bootlane_core::net::types::MacAddr(MAC_A))
    );
    // proxyDHCP: a refused PXE client gets no offer; a plain client is not judged.
    let (gate, mut rx) = test_gate(Mode::Whitelist, &[], &[]);
    let h = handler(SubnetMode::Proxy).with_access(gate);
    assert!(ask(&h, req(MessageType::Discover, MAC_A, pxe)).await.is_none());
    assert_eq!(rx.try_recv().unwrap().protocol, Protocol::ProxyDhcp);
    assert!(ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.is_none());
    assert!(rx.try_recv().is_err(), "a non-PXE client in proxy mode is not recorded");
    // Mode off: everyone is served, nothing is queued.
    let (gate, mut rx) = test_gate(Mode::Off, &["52:54:00:77:00:42"], &[]);
    let h = handler(SubnetMode::Server).with_access(gate);
    assert!(ask(&h, req(MessageType::Discover, MAC_A, pxe)).await.is_some());
    assert!(rx.try_recv().is_err());
}

/// `[dhcp.arch_map] "0" = "pxelinux.0"` boots BIOS clients through PXELINUX, iPXE option
/// ROMs included (they would otherwise get the iPXE script); UEFI clients keep iPXE, and
/// the default map keeps iPXE for everyone.
#[tokio::test]
async fn pxelinux_in_the_arch_map_is_given_to_bios_ipxe_clients_too() {
    let h = handler(SubnetMode::Server);
    let offer = ask(&h, req(MessageType::Discover, MAC_A, ipxe_bare)).await.unwrap();
    assert_eq!(file(&offer).as_deref(), Some(IPXE_URL), "default: iPXE");
    let mut map = default_arch_map();
    map.insert(0, "pxelinux.0".into());
    h.set_arch_map(map);
    for f in [pxe_bios as fn(&mut Message), ipxe_bare] {
        let offer = ask(&h, req(MessageType::Discover, MAC_A, f)).await.unwrap();
        assert_eq!(file(&offer).as_deref(), Some("pxelinux.0"));
        assert_eq!(
            bytes_opt(&offer, OptionCode::TFTPServerName).as_deref(),
            Some("10.77.0.1")
        );
    }
    let uefi_ipxe = |m: &mut Message| {
        ipxe_bare(m);
        m.opts_mut()
            .insert(DhcpOption::ClientSystemArchitecture(Architecture(7)));
    };
    let offer = ask(&h, req(MessageType::Discover, MAC_A, uefi_ipxe)).await.unwrap();
    assert_eq!(file(&offer).as_deref(), Some(IPXE_URL), "UEFI iPXE keeps the script");
    for (f, yes) in [
        ("pxelinux.0", true),
        ("bios/lpxelinux.0", true),
        ("PXELINUX.0", true),
        ("undionly.kpxe", false),
        ("mypxelinux.0.bak", false),
    ] {
        assert_eq!(crate::dhcp::handler::is_pxelinux_loader(f), yes, "{f}");
    }
}

/// A /16-sized pool: distinct clients get distinct fresh addresses in pool order (the search
/// resumes where it stopped), an address freed by deleting its lease is handed out again,
/// and an offer that lapsed unused is found again once no fresh address is left.
#[tokio::test]
async fn fresh_addresses_resume_the_search_and_freed_ones_come_back() {
    let mut cfg = subnet(SubnetMode::Server);
    cfg.cidr = "10.77.0.0/16".parse().unwrap();
    cfg.range_start = Some(Ipv4Addr::new(10, 77, 1, 0));
    cfg.range_end = Some(Ipv4Addr::new(10, 77, 250, 250));
    let h = handler_with(vec![cfg], LeaseDb::in_memory());
    let mac = |i: u32| {
        let b = i.to_be_bytes();
        [0x52, 0x54, b[0], b[1], b[2], b[3]]
    };
    let mut last = 0u32;
    for i in 0..2000 {
        let ip = u32::from(dora(&h, mac(i)).await.msg.yiaddr());
        assert!(
            ip > last,
            "client {i} got {ip} after {last}: fresh addresses in pool order"
        );
        last = ip;
    }
    // The first client's lease deleted: its address is fresh again and comes back first.
    let first = h.leases().await.into_iter().min_by_key(|l| u32::from(l.ip)).unwrap();
    h.leases_db()
        .lock()
        .await
        .remove_mac(bootlane_core::net::types::normalise_mac(&first.mac).unwrap())
        .await
        .unwrap();
    assert_eq!(dora(&h, mac(9999)).await.msg.yiaddr(), first.ip);

    // A two-address pool: the search position is past both, yet the full scan still finds
    // what is free for a client (its own held offer).
    let mut small = subnet(SubnetMode::Server);
    small.range_end = Some(Ipv4Addr::new(10, 77, 0, 101));
    let h = handler_with(vec![small], LeaseDb::in_memory());
    let offered = ask(&h, req(MessageType::Discover, MAC_A, |_| {}))
        .await
        .unwrap()
        .msg
        .yiaddr();
    let other = dora(&h, MAC_B).await.msg.yiaddr();
    assert_ne!(offered, other);
    // Only A's held offer is left: a third client gets nothing while it is held...
    let third = [0x52, 0x54, 0, 0x77, 0, 0x44];
    assert!(ask(&h, req(MessageType::Discover, third, |_| {})).await.is_none());
    // ...and A itself gets the same address again (its offer is found by the full scan).
    let again = ask(&h, req(MessageType::Discover, MAC_A, |_| {}))
        .await
        .unwrap()
        .msg
        .yiaddr();
    assert_eq!(again, offered);
}

/// Offers are indexed both ways: a client's new offer frees its old one at once, and a
/// thousand outstanding offers never block another client's.
#[test]
fn offers_are_held_and_dropped_per_client() {
    let mut db = LeaseDb::in_memory();
    let a = bootlane_core::net::types::MacAddr(MAC_A);
    let b = bootlane_core::net::types::MacAddr(MAC_B);
    let (x, y) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    db.hold_offer(x, a, 100);
    assert!(!db.free_for(x, b, 100));
    db.hold_offer(y, a, 100);
    assert!(
        db.free_for(x, b, 100),
        "A's earlier offer was dropped when it got a new one"
    );
    assert!(!db.free_for(y, b, 100));
    db.drop_offer(a);
    assert!(db.free_for(y, b, 100));
    for i in 0..10_000u32 {
        let m = bootlane_core::net::types::MacAddr([2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        db.hold_offer(Ipv4Addr::from(0x0b00_0000 + i), m, 100);
    }
    // Lapsed ones are purged as the table grows; live ones are kept.
    db.hold_offer(x, b, 100 + 61);
    assert!(db.free_for(Ipv4Addr::from(0x0b00_0000), a, 100 + 61));
    assert!(!db.free_for(x, a, 100 + 61));
}

/// Group commit: leases bound in group-commit mode are queued and reach the store, in
/// one batch, and the disk at `commit`; the receive loop sends no DHCPACK when the commit
/// fails.
#[tokio::test]
async fn group_commit_binds_then_flushes_once() {
    let store = Store::temporary();
    let mut db = LeaseDb::load(&store).await.unwrap();
    db.set_group_commit(true);
    let h = handler_with(vec![subnet(SubnetMode::Server)], db);
    let ip_a = dora(&h, MAC_A).await.msg.yiaddr();
    let ip_b = dora(&h, MAC_B).await.msg.yiaddr();
    assert_eq!(
        LeaseDb::load(&store).await.unwrap().all().count(),
        0,
        "queued until the commit"
    );
    assert_eq!(h.commit().await, super::handler::Committed::All);
    let again = LeaseDb::load(&store).await.unwrap();
    let mut ips: Vec<_> = again.all().map(|l| l.ip).collect();
    ips.sort();
    assert_eq!(ips, vec![ip_a, ip_b]);
}

/// A write that is stored at once (a release, the API's delete) stores the queued
/// group-commit writes first: the store sees every write in order, so a queued bind never
/// lands after, and undoes, a later delete.
#[tokio::test]
async fn immediate_writes_keep_the_order_of_queued_ones() {
    let store = Store::temporary();
    let mut db = LeaseDb::load(&store).await.unwrap();
    db.set_group_commit(true);
    let h = handler_with(vec![subnet(SubnetMode::Server)], db);
    let ip_a = dora(&h, MAC_A).await.msg.yiaddr();
    dora(&h, MAC_B).await;
    let a = bootlane_core::net::types::MacAddr(MAC_A);
    let b = bootlane_core::net::types::MacAddr(MAC_B);
    let released = h
        .leases_db()
        .lock()
        .await
        .release("10.77.0.0/24", a, ip_a, 1)
        .await
        .unwrap();
    assert!(released);
    assert_eq!(h.leases_db().lock().await.remove_mac(b).await.unwrap().len(), 1);
    assert_eq!(h.commit().await, super::handler::Committed::All);
    let stored: Vec<_> = LeaseDb::load(&store).await.unwrap().all().cloned().collect();
    assert_eq!(stored.len(), 1, "B's queued bind must not come back: {stored:?}");
    assert_eq!((stored[0].ip, stored[0].expires_at), (ip_a, 1));
}

/// `ctx` as the server sees a client without an address, on port 67.
fn ctx_as_client(ctx: RecvContext) -> RecvContext {
    RecvContext {
        port: 67,
        src: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 68),
        ..ctx
    }
}

/// The message type of the next datagram on `c` within 500 ms.
async fn recv_kind(c: &tokio::net::UdpSocket) -> Option<MessageType> {
    let mut buf = vec![0u8; 1500];
    match tokio::time::timeout(std::time::Duration::from_millis(500), c.recv(&mut buf)).await {
        Ok(Ok(n)) => {
            use dhcproto::Decodable;
            Message::from_bytes(&buf[..n]).ok().and_then(|m| m.opts().msg_type())
        }
        _ => None,
    }
}

/// The receive loop, on a real socket: a batch's DHCPACK is withheld when the handler
/// cannot make its leases durable, while a DHCPOFFER still goes out; with a good commit
/// the ACK arrives.
#[tokio::test]
async fn no_ack_leaves_the_loop_when_the_commit_fails() {
    use std::sync::Arc;
    /// The real handler answering as on port 67, with replies sent back to the test's
    /// socket, and a commit that succeeds or not.
    struct Commit(BootHandler, bool);
    impl DhcpHandler for Commit {
        async fn handle(&self, req: DhcpRequest, ctx: RecvContext) -> Option<DhcpReply> {
            let src = ctx.src;
            // As a client without an address on the served link, on port 67.
            let mut r = self.0.handle(req, ctx_as_client(ctx)).await?;
            r.dest = src;
            Some(r)
        }
        async fn commit(&self) -> super::handler::Committed {
            if self.1 {
                super::handler::Committed::All
            } else {
                super::handler::Committed::NoAcks
            }
        }
    }
    for commit_ok in [false, true] {
        let inner = handler_with(vec![subnet(SubnetMode::Server)], LeaseDb::in_memory());
        let token = tokio_util::sync::CancellationToken::new();
        let mut server = super::server::Server::new(Arc::new(Commit(inner, commit_ok)), token.clone());
        let addr = server
            .register_socket(std::net::UdpSocket::bind("127.0.0.1:0").unwrap(), "eth0")
            .unwrap();
        let client = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let discover = req(MessageType::Discover, MAC_A, |_| {});
        client.send_to(&encode(&discover.msg).unwrap(), addr).await.unwrap();
        assert_eq!(
            recv_kind(&client).await,
            Some(MessageType::Offer),
            "the offer is sent either way"
        );
        let request = req(MessageType::Request, MAC_A, |m| {
            m.opts_mut()
                .insert(DhcpOption::RequestedIpAddress(Ipv4Addr::new(10, 77, 0, 100)));
            m.opts_mut().insert(DhcpOption::ServerIdentifier(SERVER));
        });
        client.send_to(&encode(&request.msg).unwrap(), addr).await.unwrap();
        let got = recv_kind(&client).await;
        if commit_ok {
            assert_eq!(got, Some(MessageType::Ack));
        } else {
            assert_eq!(got, None, "no DHCPACK for a lease that is not on disk");
        }
        server.shutdown().await;
    }
}

/// Two nodes on one PostgreSQL store race for one address; the database's check
/// lets exactly one acknowledge it, and the loser's index learns the winner.
#[tokio::test]
async fn two_nodes_never_lease_one_address_twice() {
    use super::leases::{lease_id, now_secs, Lease};
    use bootlane_core::net::types::MacAddr;
    let (a, cluster) = bootlane_core::store::test_support::pg_store().await;
    let b = bootlane_core::store::test_support::pg_node(&cluster, &cluster.url("t")).await;
    let mut da = LeaseDb::load(&a).await.unwrap();
    let mut db = LeaseDb::load(&b).await.unwrap();
    let ip = Ipv4Addr::new(10, 77, 0, 105);
    let lease = |mac: [u8; 6]| Lease {
        id: 0,
        mac: MacAddr(mac).to_string(),
        ip,
        subnet: "10.77.0.0/24".into(),
        hostname: None,
        arch: None,
        expires_at: now_secs() + 3600,
        declined: false,
    };
    // Group commit (the DHCP loop's path): both queue, both commit, one is refused.
    da.set_group_commit(true);
    db.set_group_commit(true);
    da.bind(lease(MAC_A), MacAddr(MAC_A)).await.unwrap();
    db.bind(lease(MAC_B), MacAddr(MAC_B)).await.unwrap();
    da.commit().await.unwrap();
    db.commit().await.unwrap();
    assert!(da.take_refused().is_empty());
    assert_eq!(db.take_refused(), vec![(MacAddr(MAC_B), ip)]);
    assert_eq!(
        db.by_ip(ip).unwrap().mac,
        MacAddr(MAC_A).to_string(),
        "the loser's index shows the winner"
    );
    assert!(db.by_mac("10.77.0.0/24", MacAddr(MAC_B)).is_none());
    let stored = a.table::<Lease>().unwrap().list().unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0].id, stored[0].mac.as_str()),
        (lease_id(ip), MacAddr(MAC_A).to_string().as_str())
    );

    // A write made at once (the API's, or without group commit) is checked the same way.
    da.set_group_commit(false);
    db.set_group_commit(false);
    let e = LeaseDb::load(&b)
        .await
        .unwrap()
        .bind(lease(MAC_R), MacAddr(MAC_R))
        .await
        .unwrap_err();
    assert!(matches!(e, bootlane_core::store::StoreError::Conflict(_)), "{e}");

    // The same client renews through the other node.
    let renewed = Lease {
        expires_at: now_secs() + 7200,
        ..lease(MAC_A)
    };
    db.bind(renewed.clone(), MacAddr(MAC_A)).await.unwrap();
    // And the first node follows that write.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        da.follow([lease_id(ip)]).unwrap();
        if da.by_ip(ip).is_some_and(|l| l.expires_at == renewed.expires_at) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "node A never saw the renewal");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(da.by_mac("10.77.0.0/24", MacAddr(MAC_A)).unwrap().ip, ip);
}

/// A node that lost the shared store renews the leases it holds without a write (for
/// the time they still run) and allocates nothing new; it resumes by itself.
#[tokio::test]
async fn without_the_store_held_leases_renew_and_new_ones_wait() {
    let (store, cluster) = bootlane_core::store::test_support::pg_store().await;
    let h = handler_with(vec![subnet(SubnetMode::Server)], LeaseDb::load(&store).await.unwrap());
    let held = dora(&h, MAC_A).await.msg.yiaddr();
    let mut link = store.watch_link().unwrap();
    cluster.stop().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), link.wait_for(|(up, _)| !*up))
        .await
        .expect("the loss is noticed")
        .unwrap();
    let renew = |mac: [u8; 6], ip: Ipv4Addr| {
        req(MessageType::Request, mac, move |m| {
            m.set_ciaddr(ip);
        })
    };
    let ack = ask(&h, renew(MAC_A, held)).await.expect("a held lease is renewed");
    assert_eq!(kind(&ack), MessageType::Ack);
    assert_eq!(ack.msg.yiaddr(), held);
    match opt(&ack, OptionCode::AddressLeaseTime) {
        Some(DhcpOption::AddressLeaseTime(t)) => assert!(*t <= 3600 && *t > 3500, "{t}"),
        o => panic!("lease time {o:?}"),
    }
    let offer = ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.unwrap();
    assert_eq!(offer.msg.yiaddr(), held, "its holder is offered its own address");
    assert!(
        ask(&h, req(MessageType::Discover, MAC_B, |_| {})).await.is_none(),
        "no new allocation"
    );
    assert!(
        ask(&h, renew(MAC_B, Ipv4Addr::new(10, 77, 0, 107))).await.is_none(),
        "nor a NAK"
    );
    cluster.restart().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(40), link.wait_for(|(up, _)| *up))
        .await
        .expect("the node reconnects by itself")
        .unwrap();
    let ip_b = dora(&h, MAC_B).await.msg.yiaddr();
    assert_ne!(ip_b, held);
}

/// Leases stored before they were keyed by address move to their address's id on load,
/// and a batch's refused DHCPACK is the only reply withheld.
#[tokio::test]
async fn old_lease_rows_are_rekeyed_and_refused_acks_withheld() {
    use super::handler::Committed;
    use super::leases::{lease_id, now_secs, Lease};
    let store = Store::temporary();
    let ip = Ipv4Addr::new(10, 77, 0, 103);
    let old = Lease {
        id: 7,
        mac: "52:54:00:77:00:42".into(),
        ip,
        subnet: "10.77.0.0/24".into(),
        hostname: None,
        arch: None,
        expires_at: now_secs() + 60,
        declined: false,
    };
    store.table::<Lease>().unwrap().put(&old).await.unwrap();
    let db = LeaseDb::load(&store).await.unwrap();
    assert_eq!(db.by_ip(ip).unwrap().id, lease_id(ip));
    let rows = store.table::<Lease>().unwrap().list().unwrap();
    assert_eq!(
        rows,
        vec![Lease {
            id: lease_id(ip),
            ..old
        }]
    );

    let h = handler(SubnetMode::Server);
    let ack_a = dora(&h, MAC_A).await;
    let ack_b = dora(&h, MAC_B).await;
    let c = Committed::AllBut(vec![(bootlane_core::net::types::MacAddr(MAC_B), ack_b.msg.yiaddr())]);
    assert!(c.allows(&ack_a) && !c.allows(&ack_b));
    let offer = ask(&h, req(MessageType::Discover, MAC_R, |_| {})).await.unwrap();
    assert!(c.allows(&offer) && Committed::NoAcks.allows(&offer) && !Committed::NoAcks.allows(&ack_a));
}

/// DHCPv6: two nodes on one PostgreSQL store; an address another node leased to another
/// IA is refused, the same IA renews through the other node, and the first node
/// follows.
#[tokio::test]
async fn two_nodes_never_lease_one_v6_address_twice() {
    use super::leases::now_secs;
    use super::v6::leases::{lease6_id, Lease6, Lease6Db};
    let (a, cluster) = bootlane_core::store::test_support::pg_store().await;
    let b = bootlane_core::store::test_support::pg_node(&cluster, &cluster.url("t")).await;
    let mut da = Lease6Db::load(&a).await.unwrap();
    let mut db = Lease6Db::load(&b).await.unwrap();
    let ip: std::net::Ipv6Addr = "fd00:77::105".parse().unwrap();
    let lease = |duid: &str, until: u64| Lease6 {
        id: 0,
        duid: duid.into(),
        iaid: 1,
        ip,
        subnet: "fd00:77::/64".into(),
        mac: None,
        arch: None,
        expires_at: until,
        declined: false,
    };
    let l = da.bind(lease("0001aa", now_secs() + 3600)).await.unwrap();
    assert_eq!(l.id, lease6_id(ip));
    let e = db.bind(lease("0001bb", now_secs() + 3600)).await.unwrap_err();
    assert!(matches!(e, bootlane_core::store::StoreError::Conflict(_)), "{e}");
    assert_eq!(
        db.all().next().unwrap().duid,
        "0001aa",
        "the loser's index shows the winner"
    );
    let until = now_secs() + 7200;
    db.bind(lease("0001aa", until)).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        da.follow([lease6_id(ip)]).unwrap();
        if da.all().any(|l| l.expires_at == until) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "node A never saw the renewal");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(a.table::<Lease6>().unwrap().list().unwrap().len(), 1);
}

/// The handler follows the control's published settings: after a change, the next request
/// sees the new pool and architecture map, and a subnet that was not running is not added.
#[tokio::test]
async fn the_handler_follows_the_published_settings() {
    use crate::dhcp::control::DhcpEffective;
    let tx = tokio::sync::watch::Sender::new(std::sync::Arc::new(DhcpEffective::default()));
    let h = handler(SubnetMode::Server).following(tx.subscribe());
    let before = h.subnets();
    let mut changed = subnet(SubnetMode::Server);
    changed.range_start = Some(Ipv4Addr::new(10, 77, 0, 200));
    changed.range_end = Some(Ipv4Addr::new(10, 77, 0, 201));
    let mut extra = relayed();
    extra.cidr = "10.99.0.0/24".parse().unwrap();
    let mut arch = default_arch_map();
    arch.insert(0, "custom.0".into());
    tx.send_replace(std::sync::Arc::new(DhcpEffective {
        subnets: vec![changed, extra],
        subnets6: vec![],
        arch_map: arch,
    }));
    let after = h.subnets();
    assert_eq!(after.len(), before.len(), "a subnet not running is not added");
    let s = after.iter().find(|s| s.key == "10.77.0.0/24").unwrap();
    assert_eq!(s.cfg.range_start, Some(Ipv4Addr::new(10, 77, 0, 200)), "the new pool");
    assert_eq!(h.arch_map().get(&0).map(String::as_str), Some("custom.0"));
    let offer = ask(&h, req(MessageType::Discover, MAC_A, |_| {})).await.unwrap();
    assert_eq!(
        offer.msg.yiaddr(),
        Ipv4Addr::new(10, 77, 0, 200),
        "the next answer uses it"
    );
}
