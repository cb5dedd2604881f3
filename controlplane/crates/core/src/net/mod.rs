//! The server's own network interfaces and addresses, read with `getifaddrs` (crate
//! `if-addrs`). Used for subnet-aware answers (spec "Built-in DNS server", item 3):
//! which subnet a client is on, and which of the server's addresses is on that subnet.
//! Holds no state; callers re-read when they rebuild their view. [`types`] holds the
//! networking value types and name rules every resource shares (MAC address, host and
//! DNS names); [`mmsg`] batched UDP receive and send (`recvmmsg`/`sendmmsg`);
//! [`outbound`] the HTTP client builder and address rules of every outbound fetch.

pub mod mmsg;
pub mod outbound;
pub mod types;

use std::net::IpAddr;

use ipnet::IpNet;

/// One address of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfAddr {
    /// Interface name, e.g. `eth0`.
    pub iface: String,
    /// The address.
    pub addr: IpAddr,
    /// The connected subnet (address with its prefix length, truncated).
    pub net: IpNet,
}

impl IfAddr {
    /// True for loopback and IPv6 link-local addresses, which are never handed to clients
    /// as "the server's address".
    pub fn is_local_only(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => a.is_loopback() || a.is_link_local(),
            IpAddr::V6(a) => a.is_loopback() || (a.segments()[0] & 0xffc0) == 0xfe80,
        }
    }
}

/// The machine's interface addresses, in kernel order. Errors reading them yield an empty
/// list (logged), so a DNS server without interfaces still starts.
pub fn interface_addrs() -> Vec<IfAddr> {
    match if_addrs::get_if_addrs() {
        Ok(list) => list
            .into_iter()
            .filter_map(|i| {
                let addr = i.ip();
                let prefix = match &i.addr {
                    if_addrs::IfAddr::V4(v4) => u32::from(v4.netmask).count_ones() as u8,
                    if_addrs::IfAddr::V6(v6) => u128::from(v6.netmask).count_ones() as u8,
                };
                let net = IpNet::new(addr, prefix).ok()?.trunc();
                Some(IfAddr {
                    iface: i.name,
                    addr,
                    net,
                })
            })
            .collect(),
        Err(e) => {
            tracing::warn!("cannot read interface addresses: {e}");
            Vec::new()
        }
    }
}

/// The IPv6 twin of a wildcard IPv4 listen address: `0.0.0.0:port` also listens on
/// `[::]:port`; any other address is taken as written and has no twin.
pub fn ipv6_twin(addr: std::net::SocketAddr) -> Option<std::net::SocketAddr> {
    (addr.ip() == IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
        .then(|| std::net::SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), addr.port()))
}

/// Binds an IPv6-only socket of `ty` (UDP datagram or TCP stream, listening) on `addr`
/// (so the IPv4 socket on the same port stays separate), non-blocking.
///
/// # Errors
/// Socket errors (port in use, IPv6 disabled on this machine).
pub fn bind_v6only(addr: std::net::SocketAddr, ty: socket2::Type) -> std::io::Result<socket2::Socket> {
    let s = socket2::Socket::new(socket2::Domain::IPV6, ty, None)?;
    s.set_only_v6(true)?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    if ty == socket2::Type::STREAM {
        s.listen(1024)?;
    }
    Ok(s)
}

/// Interface index by name (`if_nametoindex`), `None` if there is no such interface.
pub fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (idx != 0).then_some(idx)
}

/// One address of an interface, as `GET /interfaces` shows it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct InterfaceAddr {
    /// The address.
    pub address: String,
    /// Prefix length.
    pub prefix: u8,
}

/// One network interface of this machine (`GET /interfaces`, `GET /network/interfaces`).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct InterfaceInfo {
    /// Name, e.g. `eth0`.
    pub name: String,
    /// Hardware address (`aa:bb:cc:dd:ee:ff`), if it has one.
    pub mac: Option<String>,
    /// MTU in bytes.
    pub mtu: Option<u32>,
    /// Kernel operational state (`up`, `down`, `unknown`, ...).
    pub oper_state: String,
    /// Addresses with their prefix lengths.
    pub addresses: Vec<InterfaceAddr>,
    /// Services bound here (filled in by the caller).
    pub services: Vec<String>,
    /// XDP attach mode when the DNS fast path is attached here (`native`, `generic`).
    pub xdp: Option<String>,
}

/// Every interface with its addresses, MAC, MTU and state (read from `getifaddrs` and
/// `/sys/class/net`). Errors yield what could be read.
pub fn interfaces() -> Vec<InterfaceInfo> {
    let sys = |name: &str, f: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let addrs = interface_addrs();
    for a in &addrs {
        if !names.contains(&a.iface) {
            names.push(a.iface.clone());
        }
    }
    names.sort();
    names
        .into_iter()
        .map(|name| InterfaceInfo {
            mac: sys(&name, "address").filter(|m| m != "00:00:00:00:00:00" && !m.is_empty()),
            mtu: sys(&name, "mtu").and_then(|m| m.parse().ok()),
            oper_state: sys(&name, "operstate").unwrap_or_else(|| "unknown".into()),
            addresses: addrs
                .iter()
                .filter(|a| a.iface == name)
                .map(|a| InterfaceAddr {
                    address: a.addr.to_string(),
                    prefix: a.net.prefix_len(),
                })
                .collect(),
            services: Vec::new(),
            xdp: None,
            name,
        })
        .collect()
}
