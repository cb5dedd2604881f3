//! Sending magic packets: which interfaces can broadcast ([`Network::interfaces`]) and one
//! UDP datagram out of one interface ([`Network::send`]). [`SystemNetwork`] is the real
//! thing: the interface list comes from [`bootlane_core::net::interfaces`] plus the kernel's
//! `IFF_UP`/`IFF_BROADCAST` flags, broadcast addresses are computed with `ipnet` from each
//! IPv4 address and prefix, and each send uses a `socket2` UDP socket with `SO_BROADCAST`
//! (without it Linux refuses a broadcast destination with `EACCES`) bound to the
//! interface with `SO_BINDTODEVICE` (so even `255.255.255.255` leaves through that NIC,
//! not the one the routing table picks). Tests put a recording fake behind the same
//! trait, so no router test ever sends a packet. No state.

use std::{
    io,
    net::{IpAddr, Ipv4Addr, SocketAddrV4},
};

use ipnet::Ipv4Net;
use serde::Serialize;
use utoipa::ToSchema;

/// One IPv4 address of an interface able to broadcast, with its subnet's broadcast address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct BroadcastAddr {
    /// The interface's address.
    #[schema(value_type = String)]
    pub address: Ipv4Addr,
    /// Prefix length.
    pub prefix: u8,
    /// The subnet-directed broadcast address (RFC 919 §7), e.g. `10.0.0.255` for `/24`.
    #[schema(value_type = String)]
    pub broadcast: Ipv4Addr,
}

/// An interface that is up and able to broadcast (`GET /wol/interfaces`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct BroadcastIface {
    /// Interface name, e.g. `eth0`.
    pub name: String,
    /// Its IPv4 addresses with their broadcast addresses (may be empty: the limited
    /// broadcast `255.255.255.255` still works through it).
    pub addresses: Vec<BroadcastAddr>,
}

impl BroadcastIface {
    /// True when one of its subnets holds `ip`.
    pub fn holds(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| {
            Ipv4Net::new(a.address, a.prefix)
                .map(|n| n.contains(&ip))
                .unwrap_or(false)
        })
    }

    /// Where a magic packet goes through this interface: each subnet-directed broadcast,
    /// then the limited broadcast `255.255.255.255`, on every port (no duplicates).
    pub fn destinations(&self, ports: &[u16]) -> Vec<SocketAddrV4> {
        let mut ips: Vec<Ipv4Addr> = self.addresses.iter().map(|a| a.broadcast).collect();
        ips.push(Ipv4Addr::BROADCAST);
        let mut seen = Vec::new();
        for ip in ips {
            for &p in ports {
                let d = SocketAddrV4::new(ip, p);
                if !seen.contains(&d) {
                    seen.push(d);
                }
            }
        }
        seen
    }
}

/// The broadcast address of `addr/prefix` (the all-ones host part); `None` for prefixes
/// without a broadcast address (/31 point-to-point links, RFC 3021, and /32).
pub fn broadcast_of(addr: Ipv4Addr, prefix: u8) -> Option<Ipv4Addr> {
    if prefix >= 31 {
        return None;
    }
    Ipv4Net::new(addr, prefix).ok().map(|n| n.broadcast())
}

/// The network WOL sends on. Implemented by [`SystemNetwork`]; tests use a fake.
pub trait Network: Send + Sync {
    /// Interfaces that are up and able to broadcast, by name.
    fn interfaces(&self) -> Vec<BroadcastIface>;
    /// Sends `payload` as one UDP datagram to `dest` out of interface `iface`.
    ///
    /// # Errors
    /// The socket's errors (`EPERM` without `CAP_NET_RAW` for `SO_BINDTODEVICE`,
    /// `ENODEV` for an interface that went away, `ENETDOWN`, ...).
    fn send(&self, iface: &str, dest: SocketAddrV4, payload: &[u8]) -> io::Result<()>;
}

/// The machine's own interfaces and sockets.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemNetwork;

/// `IFF_UP | IFF_BROADCAST` from `/sys/class/net/<name>/flags` (hex), false when unreadable.
fn can_broadcast(name: &str) -> bool {
    let want = (libc::IFF_UP | libc::IFF_BROADCAST) as u32;
    std::fs::read_to_string(format!("/sys/class/net/{name}/flags"))
        .ok()
        .and_then(|s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & want == want && f & libc::IFF_LOOPBACK as u32 == 0)
}

impl Network for SystemNetwork {
    fn interfaces(&self) -> Vec<BroadcastIface> {
        bootlane_core::net::interfaces()
            .into_iter()
            .filter(|i| can_broadcast(&i.name))
            .map(|i| BroadcastIface {
                addresses: i
                    .addresses
                    .iter()
                    .filter_map(|a| match a.address.parse::<IpAddr>() {
                        Ok(IpAddr::V4(v4)) => broadcast_of(v4, a.prefix).map(|b| BroadcastAddr {
                            address: v4,
                            prefix: a.prefix,
                            broadcast: b,
                        }),
                        _ => None,
                    })
                    .collect(),
                name: i.name,
            })
            .collect()
    }

    fn send(&self, iface: &str, dest: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
        s.set_broadcast(true)?;
        s.bind_device(Some(iface.as_bytes()))?;
        let n = s.send_to(payload, &dest.into())?;
        if n != payload.len() {
            return Err(io::Error::other(format!("short send: {n} of {} bytes", payload.len())));
        }
        Ok(())
    }
}

/// A recording network for tests: fixed interfaces, every send kept (nothing leaves).
#[cfg(any(test, feature = "test-support"))]
pub mod fake {
    use std::{io, net::SocketAddrV4, sync::Mutex, time::Instant};

    use super::{broadcast_of, BroadcastAddr, BroadcastIface, Network};

    /// One recorded datagram.
    #[derive(Debug, Clone)]
    pub struct Sent {
        /// The interface it left by.
        pub iface: String,
        /// Broadcast address and port.
        pub dest: SocketAddrV4,
        /// The magic packet.
        pub payload: Vec<u8>,
        /// When it was sent.
        pub at: Instant,
    }

    /// `eth0` 10.0.0.5/24 and `eth1` 192.168.7.1/24 unless built otherwise; sends out of
    /// an interface named in `failing` fail with `EPERM`.
    pub struct FakeNetwork {
        pub(crate) ifaces: Vec<BroadcastIface>,
        pub(crate) failing: Vec<String>,
        pub(crate) sent: Mutex<Vec<Sent>>,
    }

    impl Default for FakeNetwork {
        fn default() -> Self {
            Self::new()
        }
    }

    impl FakeNetwork {
        /// The two default interfaces, nothing failing, nothing sent.
        pub fn new() -> Self {
            let i = |name: &str, a: &str, p: u8| {
                let address = a.parse().unwrap();
                BroadcastIface {
                    name: name.into(),
                    addresses: vec![BroadcastAddr {
                        address,
                        prefix: p,
                        broadcast: broadcast_of(address, p).unwrap(),
                    }],
                }
            };
            Self {
                ifaces: vec![i("eth0", "10.0.0.5", 24), i("eth1", "192.168.7.1", 24)],
                failing: Vec::new(),
                sent: Mutex::new(Vec::new()),
            }
        }

        /// Every datagram sent so far, oldest first.
        pub fn sent(&self) -> Vec<Sent> {
            self.sent.lock().unwrap().clone()
        }
    }

    impl Network for FakeNetwork {
        fn interfaces(&self) -> Vec<BroadcastIface> {
            self.ifaces.clone()
        }

        fn send(&self, iface: &str, dest: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
            if self.failing.iter().any(|f| f == iface) {
                return Err(io::Error::from_raw_os_error(libc::EPERM));
            }
            self.sent.lock().unwrap().push(Sent {
                iface: iface.into(),
                dest,
                payload: payload.to_vec(),
                at: Instant::now(),
            });
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(addrs: &[(&str, u8)]) -> BroadcastIface {
        BroadcastIface {
            name: "eth0".into(),
            addresses: addrs
                .iter()
                .map(|(a, p)| {
                    let address: Ipv4Addr = a.parse().unwrap();
                    BroadcastAddr {
                        address,
                        prefix: *p,
                        broadcast: broadcast_of(address, *p).unwrap(),
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn broadcast_addresses_from_prefixes() {
        let b = |a: &str, p| broadcast_of(a.parse().unwrap(), p).map(|b| b.to_string());
        assert_eq!(b("10.0.0.5", 24).as_deref(), Some("10.0.0.255"));
        assert_eq!(b("192.168.17.130", 25).as_deref(), Some("192.168.17.255"));
        assert_eq!(b("172.16.5.1", 12).as_deref(), Some("172.31.255.255"));
        assert_eq!(b("10.0.0.1", 31), None);
        assert_eq!(b("10.0.0.1", 32), None);
    }

    #[test]
    fn destinations_are_directed_then_limited_on_every_port() {
        let i = iface(&[("10.0.0.5", 24), ("10.1.0.5", 16)]);
        let d: Vec<String> = i.destinations(&[9, 7]).iter().map(ToString::to_string).collect();
        assert_eq!(
            d,
            [
                "10.0.0.255:9",
                "10.0.0.255:7",
                "10.1.255.255:9",
                "10.1.255.255:7",
                "255.255.255.255:9",
                "255.255.255.255:7"
            ]
        );
        assert!(i.holds("10.1.200.3".parse().unwrap()));
        assert!(!i.holds("10.2.0.1".parse().unwrap()));
        assert_eq!(iface(&[]).destinations(&[9]).len(), 1);
    }

    #[test]
    fn loopback_is_not_broadcast_capable() {
        assert!(!can_broadcast("lo"));
        assert!(!can_broadcast("no-such-if0"));
        assert!(SystemNetwork.interfaces().iter().all(|i| i.name != "lo"));
    }
}
