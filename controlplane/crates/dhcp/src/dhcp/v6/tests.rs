//! Unit tests of the DHCPv6 handler: messages built with dhcproto, as a client sends
//! them, answered without sockets.

use std::{
    net::{Ipv6Addr, SocketAddrV6},
    sync::Arc,
};

use dhcproto::{
    v6::{DhcpOption, DhcpOptions, IAAddr, Message, MessageType, OptionCode, Status, UnknownOption, IANA, ORO},
    Decodable, Encodable,
};

use super::{
    handler::{class_data, mac_from_duid, mac_from_eui64, Dhcp6Handler, RecvContext6, Subnet6},
    leases::Lease6Db,
};
use crate::dhcp::config::{default_arch_map, Subnet6Config, SubnetMode};
use bootlane_core::store::Store;

const SERVER: &str = "fd00:77::1";
const DUID: [u8; 18] = [0, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
/// An OVMF-like client's link-local address (EUI-64 of 52:54:00:12:34:56).
const CLIENT_LL: &str = "fe80::5054:ff:fe12:3456";

fn cfg(mode: SubnetMode) -> Subnet6Config {
    Subnet6Config {
        mode,
        interface: "lab0".into(),
        prefix: "fd00:77::/64".parse().unwrap(),
        range_start: (mode == SubnetMode::Server).then(|| "fd00:77::100".parse().unwrap()),
        range_end: (mode == SubnetMode::Server).then(|| "fd00:77::1ff".parse().unwrap()),
        dns: None,
        lease_time_secs: 600,
        server_address: Some(SERVER.parse().unwrap()),
    }
}

fn handler_with(mode: SubnetMode, db: Lease6Db) -> Dhcp6Handler {
    let c = cfg(mode);
    let s = Subnet6::resolve(&c, &[]).unwrap();
    Dhcp6Handler::new(
        vec![s],
        default_arch_map(),
        8080,
        vec![0, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
        Arc::new(tokio::sync::Mutex::new(db)),
    )
}

fn handler(mode: SubnetMode) -> Dhcp6Handler {
    handler_with(mode, Lease6Db::in_memory())
}

fn ctx() -> RecvContext6 {
    RecvContext6 {
        interface: "lab0".into(),
        src: SocketAddrV6::new(CLIENT_LL.parse().unwrap(), 546, 0, 2),
    }
}

/// A client message: Client Identifier, one IA_NA (IAID 7), ORO with 23 and 59, and
/// `extra` options.
fn msg(kind: MessageType, extra: Vec<DhcpOption>) -> Message {
    let mut m = Message::new_with_id(kind, [1, 2, 3]);
    let o = m.opts_mut();
    o.insert(DhcpOption::ClientId(DUID.to_vec()));
    o.insert(DhcpOption::ElapsedTime(0));
    o.insert(DhcpOption::ORO(ORO {
        opts: vec![OptionCode::DomainNameServers, OptionCode::OptBootfileUrl],
    }));
    for e in extra {
        o.insert(e);
    }
    m
}

fn iana(addr: Option<&str>) -> DhcpOption {
    let mut opts = DhcpOptions::new();
    if let Some(a) = addr {
        opts.insert(DhcpOption::IAAddr(IAAddr {
            addr: a.parse().unwrap(),
            preferred_life: 0,
            valid_life: 0,
            opts: DhcpOptions::new(),
        }));
    }
    DhcpOption::IANA(IANA {
        id: 7,
        t1: 0,
        t2: 0,
        opts,
    })
}

fn arch(code: u16) -> DhcpOption {
    DhcpOption::ClientArchType(vec![dhcproto::v4::Architecture(code)])
}

async fn ask(h: &Dhcp6Handler, m: &Message) -> Option<Message> {
    let bytes = h.handle(&m.to_vec().unwrap(), &ctx()).await?;
    Some(Message::from_bytes(&bytes).expect("the reply decodes"))
}

fn boot_url(m: &Message) -> Option<String> {
    m.opts().iter().find_map(|o| match o {
        DhcpOption::Unknown(u) if u.code() == OptionCode::OptBootfileUrl => {
            Some(String::from_utf8(u.data().to_vec()).unwrap())
        }
        _ => None,
    })
}

fn leased(m: &Message) -> Vec<(Ipv6Addr, u32)> {
    m.opts()
        .iter()
        .filter_map(|o| match o {
            DhcpOption::IANA(ia) => Some(ia),
            _ => None,
        })
        .flat_map(|ia| ia.opts.iter())
        .filter_map(|o| match o {
            DhcpOption::IAAddr(a) => Some((a.addr, a.valid_life)),
            _ => None,
        })
        .collect()
}

fn server_id(m: &Message) -> DhcpOption {
    m.opts().get(OptionCode::ServerId).unwrap().clone()
}

#[tokio::test]
async fn uefi_pxe_gets_an_address_and_a_tftp_boot_url_then_binds_it() {
    let h = handler(SubnetMode::Server);
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(7)]))
        .await
        .unwrap();
    assert_eq!(adv.msg_type(), MessageType::Advertise);
    assert_eq!(adv.xid(), [1, 2, 3]);
    assert_eq!(
        adv.opts().get(OptionCode::ClientId),
        Some(&DhcpOption::ClientId(DUID.to_vec()))
    );
    assert_eq!(boot_url(&adv).as_deref(), Some("tftp://[fd00:77::1]/ipxe.efi"));
    assert_eq!(
        adv.opts().get(OptionCode::DomainNameServers),
        Some(&DhcpOption::DomainNameServers(vec![SERVER.parse().unwrap()]))
    );
    let offered = leased(&adv);
    assert_eq!(offered.len(), 1);
    let (ip, life) = offered[0];
    assert!(h.subnets()[0].in_pool(ip), "{ip} is in the pool");
    assert_eq!(life, 600);

    // Request with the advertised address: the same address is bound and persisted.
    let req = msg(
        MessageType::Request,
        vec![iana(Some(&ip.to_string())), arch(7), server_id(&adv)],
    );
    let reply = ask(&h, &req).await.unwrap();
    assert_eq!(reply.msg_type(), MessageType::Reply);
    assert_eq!(leased(&reply), vec![(ip, 600)]);
    let leases = h_leases(&h).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].ip, ip);
    assert_eq!(
        leases[0].mac.as_deref(),
        Some("52:54:00:12:34:56"),
        "MAC from the EUI-64 source"
    );
    assert_eq!(leases[0].arch, Some(7));

    // A second client gets another address.
    let mut other = msg(MessageType::Solicit, vec![iana(None)]);
    other.opts_mut().remove(OptionCode::ClientId);
    other
        .opts_mut()
        .insert(DhcpOption::ClientId(vec![0, 3, 0, 1, 2, 0, 0, 0, 0, 9]));
    let adv2 = ask(&h, &other).await.unwrap();
    assert_ne!(leased(&adv2)[0].0, ip);

    // Renew extends; Release ends it; the address stays with the client next time.
    let renew = msg(MessageType::Renew, vec![iana(Some(&ip.to_string())), server_id(&adv)]);
    assert_eq!(leased(&ask(&h, &renew).await.unwrap()), vec![(ip, 600)]);
    let rel = msg(MessageType::Release, vec![iana(Some(&ip.to_string())), server_id(&adv)]);
    let r = ask(&h, &rel).await.unwrap();
    assert!(matches!(
        r.opts().get(OptionCode::StatusCode),
        Some(DhcpOption::StatusCode(s)) if s.status == Status::Success
    ));
    assert!(
        boot_url(&r).is_none() && r.opts().get(OptionCode::DomainNameServers).is_none(),
        "a Release reply carries identifiers and status only: {r:?}"
    );
    assert!(!h_leases(&h).await[0].active(crate::dhcp::leases::now_secs()));
    let again = ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(7)]))
        .await
        .unwrap();
    assert_eq!(leased(&again)[0].0, ip);
}

async fn h_leases(h: &Dhcp6Handler) -> Vec<super::leases::Lease6> {
    let mut v = h.leases_snapshot().await;
    v.sort_by_key(|l| l.id);
    v
}

#[tokio::test]
async fn ipxe_gets_its_script_url_and_http_boot_its_url_with_vendor_class() {
    let h = handler(SubnetMode::Server);
    let ipxe = DhcpOption::Unknown(UnknownOption::new(OptionCode::UserClass, class_data(None, &[b"iPXE"])));
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(7), ipxe]))
        .await
        .unwrap();
    assert_eq!(
        boot_url(&adv).as_deref(),
        Some("http://[fd00:77::1]:8080/boot/ipxe?mac=${netX/mac}")
    );
    let http = DhcpOption::Unknown(UnknownOption::new(
        OptionCode::VendorClass,
        class_data(343, &[b"HTTPClient:Arch:00016:UNDI:003016"]),
    ));
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(16), http]))
        .await
        .unwrap();
    assert_eq!(
        boot_url(&adv).as_deref(),
        Some("http://[fd00:77::1]:8080/boot/ipxe.efi")
    );
    assert!(matches!(
        adv.opts().get(OptionCode::VendorClass),
        Some(DhcpOption::VendorClass(v)) if v.data == vec![b"HTTPClient".to_vec()]
    ));
    // ARM64 gets the arch map's GRUB over TFTP.
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(11)]))
        .await
        .unwrap();
    assert_eq!(boot_url(&adv).as_deref(), Some("tftp://[fd00:77::1]/grubaa64.efi"));
}

#[tokio::test]
async fn messages_for_another_server_or_without_client_id_are_not_answered() {
    let h = handler(SubnetMode::Server);
    let other = DhcpOption::ServerId(vec![0, 4, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]);
    for kind in [MessageType::Request, MessageType::Renew, MessageType::Release] {
        assert!(ask(&h, &msg(kind, vec![iana(None), other.clone()])).await.is_none());
        assert!(
            ask(&h, &msg(kind, vec![iana(None)])).await.is_none(),
            "{kind:?} without Server Id"
        );
    }
    assert!(ask(&h, &msg(MessageType::Solicit, vec![iana(None), other]))
        .await
        .is_none());
    let mut no_id = msg(MessageType::Solicit, vec![iana(None)]);
    no_id.opts_mut().remove(OptionCode::ClientId);
    assert!(ask(&h, &no_id).await.is_none());
    // A server's own message types and garbage are ignored, never a panic.
    assert!(ask(&h, &msg(MessageType::Advertise, vec![])).await.is_none());
    for junk in [
        &[][..],
        &[1],
        &[1, 2, 3, 4, 0, 1, 0, 200, 1],
        &[3, 0, 0, 0, 0, 3, 0, 2, 0],
    ] {
        assert!(h.handle(junk, &ctx()).await.is_none());
    }
    // Another interface has no subnet.
    let mut c = ctx();
    c.interface = "eth9".into();
    let m = msg(MessageType::Solicit, vec![iana(None)]).to_vec().unwrap();
    assert!(h.handle(&m, &c).await.is_none());
}

#[tokio::test]
async fn proxy_mode_never_assigns_and_answers_boot_clients_only() {
    let h = handler(SubnetMode::Proxy);
    // A plain client (no architecture, no boot option asked): silence.
    let mut plain = msg(MessageType::Solicit, vec![iana(None)]);
    plain.opts_mut().remove(OptionCode::ORO);
    assert!(ask(&h, &plain).await.is_none());
    // A PXE client's Solicit is left to the other server (an Advertise without addresses
    // would cancel a UEFI PXE boot).
    assert!(ask(&h, &msg(MessageType::Solicit, vec![iana(None), arch(7)]))
        .await
        .is_none());
    // Stateless: an Information-Request asking for option 59 gets it, and no DNS servers.
    let mut info = msg(MessageType::InformationRequest, vec![]);
    info.opts_mut().remove(OptionCode::IANA);
    let r = ask(&h, &info).await.unwrap();
    assert_eq!(r.msg_type(), MessageType::Reply);
    assert_eq!(boot_url(&r).as_deref(), Some("tftp://[fd00:77::1]/ipxe.efi"));
    assert!(r.opts().get(OptionCode::DomainNameServers).is_none());
    assert!(r.opts().get(OptionCode::IANA).is_none());
    // Requests naming this server are never bound in proxy mode.
    let sid = server_id(&r);
    assert!(ask(&h, &msg(MessageType::Request, vec![iana(None), sid]))
        .await
        .is_none());
    // Nor does an Information-Request from a client that wants no boot options get a reply.
    let mut plain_info = msg(MessageType::InformationRequest, vec![]);
    plain_info.opts_mut().remove(OptionCode::ORO);
    assert!(ask(&h, &plain_info).await.is_none());
}

#[tokio::test]
async fn confirm_and_decline_follow_rfc_8415() {
    let h = handler(SubnetMode::Server);
    let on = ask(&h, &msg(MessageType::Confirm, vec![iana(Some("fd00:77::150"))]))
        .await
        .unwrap();
    assert!(
        matches!(on.opts().get(OptionCode::StatusCode), Some(DhcpOption::StatusCode(s)) if s.status == Status::Success)
    );
    let off = ask(&h, &msg(MessageType::Confirm, vec![iana(Some("2001:db8::5"))]))
        .await
        .unwrap();
    assert!(
        matches!(off.opts().get(OptionCode::StatusCode), Some(DhcpOption::StatusCode(s)) if s.status == Status::NotOnLink)
    );
    assert!(ask(&h, &msg(MessageType::Confirm, vec![iana(None)])).await.is_none());

    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    let ip = leased(&adv)[0].0;
    let sid = server_id(&adv);
    ask(
        &h,
        &msg(MessageType::Request, vec![iana(Some(&ip.to_string())), sid.clone()]),
    )
    .await
    .unwrap();
    // Declining an address the client does not hold changes nothing.
    ask(
        &h,
        &msg(MessageType::Decline, vec![iana(Some("fd00:77::1aa")), sid.clone()]),
    )
    .await
    .unwrap();
    assert_eq!(h_leases(&h).await.len(), 1);
    ask(&h, &msg(MessageType::Decline, vec![iana(Some(&ip.to_string())), sid]))
        .await
        .unwrap();
    let l = h_leases(&h).await;
    assert!(l[0].declined);
    // The client's next Solicit gets another address.
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    assert_ne!(leased(&adv)[0].0, ip);
}

#[tokio::test]
async fn leases_survive_a_restart() {
    let store = Store::temporary();
    let h = handler_with(SubnetMode::Server, Lease6Db::load(&store).await.unwrap());
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    let ip = leased(&adv)[0].0;
    let sid = server_id(&adv);
    ask(&h, &msg(MessageType::Request, vec![iana(None), sid.clone()]))
        .await
        .unwrap();
    drop(h);
    // A new handler over the same store: the lease is known, and the client keeps it.
    let h = handler_with(SubnetMode::Server, Lease6Db::load(&store).await.unwrap());
    assert_eq!(h_leases(&h).await.len(), 1);
    let renew = ask(&h, &msg(MessageType::Renew, vec![iana(Some(&ip.to_string())), sid]))
        .await
        .unwrap();
    assert_eq!(leased(&renew)[0].0, ip);
}

#[test]
fn macs_are_told_from_duids_and_eui64_link_locals() {
    assert_eq!(
        mac_from_duid(&[0, 3, 0, 1, 0x52, 0x54, 0, 1, 2, 3]).map(|m| m.to_string()),
        Some("52:54:00:01:02:03".into())
    );
    assert_eq!(
        mac_from_duid(&[0, 1, 0, 1, 9, 9, 9, 9, 0x52, 0x54, 0, 1, 2, 3]).map(|m| m.to_string()),
        Some("52:54:00:01:02:03".into())
    );
    assert_eq!(mac_from_duid(&DUID), None, "DUID-UUID names no MAC");
    assert_eq!(mac_from_duid(&[0, 3, 0, 32, 1, 2, 3, 4, 5, 6]), None, "not Ethernet");
    let ll: Ipv6Addr = CLIENT_LL.parse().unwrap();
    assert_eq!(
        mac_from_eui64(&ll).map(|m| m.to_string()),
        Some("52:54:00:12:34:56".into())
    );
    assert_eq!(mac_from_eui64(&"fe80::1".parse().unwrap()), None);
    assert_eq!(mac_from_eui64(&"fd00::5054:ff:fe12:3456".parse().unwrap()), None);
}

#[test]
fn subnets6_validate_like_the_file() {
    let ok = cfg(SubnetMode::Server);
    ok.validate("t").unwrap();
    let mut bad = ok.clone();
    bad.range_end = Some("fd00:78::1".parse().unwrap());
    assert!(bad.validate("t").unwrap_err().to_string().contains("inside"));
    let mut bad = ok.clone();
    bad.range_start = None;
    assert!(bad.validate("t").is_err());
    let mut bad = ok.clone();
    bad.dns = Some(vec!["ff02::1".parse().unwrap()]);
    assert!(bad.validate("t").unwrap_err().to_string().contains("unicast"));
    let mut bad = ok;
    bad.lease_time_secs = 10;
    assert!(bad.validate("t").is_err());
}

/// Fuzzing regression (`dhcp6`): a Release whose options dhcproto 0.15 cannot take
/// (it panics on them with debug assertions on) is dropped, not a dead receive loop.
#[tokio::test]
async fn regression_fuzz_undecodable_options_are_dropped() {
    let bytes = [
        0x08, 0x45, 0xfa, 0x61, 0x00, 0x01, 0x00, 0x0e, 0x00, 0x01, 0x00, 0x01, 0x32, 0x97, 0x7f, 0x01, 0x00, 0x00,
        0x0b, 0x7b, 0x23, 0xc6, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0xd5, 0x03, 0x52, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00, 0x18, 0x00, 0x27, 0x00, 0xe1, 0x2a, 0xfc, 0xa7, 0x5c, 0x1a, 0x00,
        0x06, 0x00, 0x08, 0x00, 0x17, 0x00, 0x18, 0x00, 0x27, 0x00, 0x1f, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
        0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x28, 0x03, 0x52, 0x5c, 0x1a, 0x00, 0x52, 0x5c, 0x1a, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x01, 0x8a, 0x00, 0x00, 0x00, 0xff, 0x3e, 0x00, 0x00, 0x00,
    ];
    let h = handler(SubnetMode::Server);
    assert_eq!(h.handle(&bytes, &ctx()).await, None);
    // The handler still answers a well-formed exchange afterwards.
    let sol = msg(MessageType::Solicit, vec![]);
    assert!(h.handle(&sol.to_vec().unwrap(), &ctx()).await.is_some());
}

/// Each node of a shared store makes its own server DUID.
#[test]
fn the_server_duid_is_not_shared_between_nodes() {
    assert!(bootlane_core::store::is_node_identity_key(
        crate::dhcp::control::SETTINGS_TREE,
        super::DUID_KEY.as_bytes()
    ));
    assert!(bootlane_core::store::is_node_tree(crate::dhcp::control::SETTINGS_TREE));
}

/// `msg` from another client, `duid`.
fn msg_from(duid: &[u8], kind: MessageType, extra: Vec<DhcpOption>) -> Message {
    let mut m = Message::new_with_id(kind, [4, 5, 6]);
    let o = m.opts_mut();
    o.insert(DhcpOption::ClientId(duid.to_vec()));
    o.insert(DhcpOption::ElapsedTime(0));
    for e in extra {
        o.insert(e);
    }
    m
}

fn first_ia(m: &Message) -> &IANA {
    m.opts()
        .iter()
        .find_map(|o| match o {
            DhcpOption::IANA(ia) => Some(ia),
            _ => None,
        })
        .expect("an IA_NA")
}

fn ia_status(m: &Message) -> Option<Status> {
    first_ia(m).opts.iter().find_map(|o| match o {
        DhcpOption::StatusCode(s) => Some(s.status),
        _ => None,
    })
}

const OTHER_DUID: [u8; 10] = [0, 3, 0, 1, 0x52, 0x54, 0, 0x77, 0, 0x42];

/// Two lease tables on one store (two handlers' views): an address one IA holds active
/// cannot be taken by another, written at once (refused with a conflict) or through
/// group commit (the reply withheld); the loser's index shows the winner.
#[tokio::test]
async fn two_tables_on_one_store_never_lease_one_address_twice() {
    use super::leases::{lease6_id, Lease6};
    use crate::dhcp::leases::now_secs;
    let store = Store::temporary();
    let mut a = Lease6Db::load(&store).await.unwrap();
    let mut b = Lease6Db::load(&store).await.unwrap();
    let lease = |duid: &str, ip: &str| Lease6 {
        id: 0,
        duid: duid.into(),
        iaid: 1,
        ip: ip.parse().unwrap(),
        subnet: "fd00:77::/64".into(),
        mac: None,
        arch: None,
        expires_at: now_secs() + 3600,
        declined: false,
    };
    let key_b = ("fd00:77::/64".to_string(), "0001bb".to_string(), 1);
    let ip: Ipv6Addr = "fd00:77::105".parse().unwrap();
    a.bind(lease("0001aa", "fd00:77::105")).await.unwrap();
    let e = b.bind(lease("0001bb", "fd00:77::105")).await.unwrap_err();
    assert!(matches!(e, bootlane_core::store::StoreError::Conflict(_)), "{e}");
    assert_eq!(b.get(ip).unwrap().duid, "0001aa", "the loser's index shows the winner");
    assert!(b.by_ia(&key_b).is_none());

    // Group commit: the second table's write is queued, refused at its commit, and its
    // reply is the one to withhold.
    let ip2: Ipv6Addr = "fd00:77::106".parse().unwrap();
    a.set_group_commit(true);
    b.set_group_commit(true);
    a.bind(lease("0001aa2", "fd00:77::106")).await.unwrap();
    a.commit().await.unwrap();
    b.bind(lease("0001bb", "fd00:77::106")).await.unwrap();
    assert_eq!(b.by_ia(&key_b).unwrap().ip, ip2, "visible at once, before the commit");
    b.commit().await.unwrap();
    assert!(a.take_refused().is_empty());
    assert_eq!(b.take_refused(), vec![(key_b.clone(), ip2)]);
    assert_eq!(b.get(ip2).unwrap().duid, "0001aa2");
    assert!(b.by_ia(&key_b).is_none());
    let mut stored: Vec<(u64, String)> = store
        .table::<Lease6>()
        .unwrap()
        .list()
        .unwrap()
        .into_iter()
        .map(|l| (l.id, l.duid))
        .collect();
    stored.sort();
    let mut want = vec![
        (lease6_id(ip), "0001aa".to_string()),
        (lease6_id(ip2), "0001aa2".to_string()),
    ];
    want.sort();
    assert_eq!(stored, want);
}

/// Two nodes on one PostgreSQL store, each with its handler: a client of the second
/// node asking for the address a client of the first holds gets the IA back with
/// NoAddrsAvail (RFC 8415 §18.3.2), not a second binding; its next Solicit is
/// advertised another address.
#[tokio::test]
async fn two_nodes_never_bind_one_v6_address_twice() {
    let (a, cluster) = bootlane_core::store::test_support::pg_store().await;
    let b = bootlane_core::store::test_support::pg_node(&cluster, &cluster.url("t")).await;
    let ha = handler_with(SubnetMode::Server, Lease6Db::load(&a).await.unwrap());
    let hb = handler_with(SubnetMode::Server, Lease6Db::load(&b).await.unwrap());
    let adv = ask(&ha, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    let ip = leased(&adv)[0].0;
    let sid = server_id(&adv);
    let reply = ask(
        &ha,
        &msg(MessageType::Request, vec![iana(Some(&ip.to_string())), sid.clone()]),
    )
    .await
    .unwrap();
    assert_eq!(leased(&reply), vec![(ip, 600)]);

    // Node B has not followed A's write: it advertises the address asked for...
    let want = iana(Some(&ip.to_string()));
    let adv = ask(&hb, &msg_from(&OTHER_DUID, MessageType::Solicit, vec![want.clone()]))
        .await
        .unwrap();
    assert_eq!(leased(&adv)[0].0, ip);
    // ...but the store refuses the binding.
    let reply = ask(&hb, &msg_from(&OTHER_DUID, MessageType::Request, vec![want, sid]))
        .await
        .unwrap();
    assert!(leased(&reply).is_empty(), "{reply:?}");
    assert_eq!(ia_status(&reply), Some(Status::NoAddrsAvail));
    let leases_b = h_leases(&hb).await;
    assert_eq!(leases_b.len(), 1, "B's index shows A's binding");
    assert_eq!(leases_b[0].ip, ip);
    let adv = ask(&hb, &msg_from(&OTHER_DUID, MessageType::Solicit, vec![iana(None)]))
        .await
        .unwrap();
    assert_ne!(leased(&adv)[0].0, ip);
    assert_eq!(a.table::<super::leases::Lease6>().unwrap().list().unwrap().len(), 1);
}

/// A node that lost the shared store answers a Renew of a binding it holds from memory
/// (the lifetimes the stored binding still has, T1/T2 scaled to them; evented with
/// `degraded: true`), advertises nothing new and leaves other clients unanswered; it
/// resumes by itself.
#[tokio::test]
async fn without_the_store_held_bindings_renew_and_new_ones_wait() {
    let (store, cluster) = bootlane_core::store::test_support::pg_store().await;
    let events = bootlane_core::events::EventBus::in_memory();
    let h = handler_with(SubnetMode::Server, Lease6Db::load(&store).await.unwrap()).with_events(events.clone());
    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    let ip = leased(&adv)[0].0;
    let sid = server_id(&adv);
    ask(
        &h,
        &msg(MessageType::Request, vec![iana(Some(&ip.to_string())), sid.clone()]),
    )
    .await
    .unwrap();
    let stored = h_leases(&h).await[0].expires_at;
    let mut link = store.watch_link().unwrap();
    cluster.stop().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), link.wait_for(|(up, _)| !*up))
        .await
        .expect("the loss is noticed")
        .unwrap();

    let renew = ask(
        &h,
        &msg(MessageType::Renew, vec![iana(Some(&ip.to_string())), sid.clone()]),
    )
    .await
    .expect("a held binding is renewed");
    let got = leased(&renew);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, ip);
    assert!(got[0].1 <= 600 && got[0].1 > 500, "{}", got[0].1);
    let ia = first_ia(&renew);
    assert_eq!((ia.t1, ia.t2), (got[0].1 / 2, got[0].1 / 5 * 4));
    assert_eq!(ia_status(&renew), None);
    assert_eq!(h_leases(&h).await[0].expires_at, stored, "nothing was written");
    let evs = events.after(0, 100).unwrap();
    let granted = evs.iter().find(|e| e.kind == "dhcp6.lease.granted").unwrap();
    assert!(granted.data.get("degraded").is_none());
    let renewed = evs.iter().rev().find(|e| e.kind == "dhcp6.lease.renewed").unwrap();
    assert_eq!(renewed.data["degraded"], serde_json::json!(true));
    assert_eq!(renewed.data["ip"], serde_json::json!(ip.to_string()));

    let adv = ask(&h, &msg(MessageType::Solicit, vec![iana(None)])).await.unwrap();
    assert_eq!(leased(&adv)[0].0, ip, "its holder is advertised its own address");
    assert!(
        ask(&h, &msg_from(&OTHER_DUID, MessageType::Solicit, vec![iana(None)]))
            .await
            .is_none(),
        "no new allocation"
    );
    let other = msg_from(
        &OTHER_DUID,
        MessageType::Request,
        vec![iana(Some("fd00:77::150")), sid.clone()],
    );
    assert!(ask(&h, &other).await.is_none(), "nor a NoAddrsAvail");

    cluster.restart().unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(40), link.wait_for(|(up, _)| *up))
        .await
        .expect("the node reconnects by itself")
        .unwrap();
    let adv = ask(&h, &msg_from(&OTHER_DUID, MessageType::Solicit, vec![iana(None)]))
        .await
        .unwrap();
    assert_ne!(leased(&adv)[0].0, ip);
}
