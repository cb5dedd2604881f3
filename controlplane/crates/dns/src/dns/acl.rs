//! Who may use the server for recursion (`[dns] allow_recursion`, BIND's
//! `allow-recursion`): queries for names outside the local zone are forwarded upstream
//! only for clients inside this list, and everyone else gets REFUSED, so the server is
//! not an open resolver that amplifies spoofed queries towards third parties (RFC 5358
//! §4: recursive service only for the intended clients). Local names are answered to
//! everyone. No state: the DNS service resolves the list into prefixes and hands them
//! to the handler.
//!
//! An entry is a CIDR (`10.77.0.0/24`, `fd00::/64`), a single address, or one of the
//! keywords `dhcp` (every DHCPv4 and DHCPv6 subnet in `server` or `proxy` mode, as they
//! are now), `localnets` (the subnets of the server's own interface addresses, BIND's
//! keyword of that name) and `localhost` (`127.0.0.0/8` and `::1`). The default is
//! `["dhcp", "localhost"]`.

use std::net::IpAddr;

use ipnet::IpNet;

use bootlane_core::net::IfAddr;

/// The default of `[dns] allow_recursion`: the served DHCP subnets and loopback.
pub fn default_allow_recursion() -> Vec<String> {
    vec!["dhcp".into(), "localhost".into()]
}

/// One parsed entry of `allow_recursion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclEntry {
    /// A prefix (a single address is a /32 or /128).
    Net(IpNet),
    /// `dhcp`: the subnets the DHCP servers serve.
    Dhcp,
    /// `localnets`: the subnets of the server's interface addresses.
    Localnets,
    /// `localhost`: `127.0.0.0/8` and `::1/128`.
    Localhost,
}

/// Parses `allow_recursion` entries (see the module docs). An empty list is valid: no
/// client may recurse.
///
/// # Errors
/// The first entry that is neither a keyword, a CIDR nor an address, named in the message.
pub fn parse(list: &[String]) -> Result<Vec<AclEntry>, String> {
    list.iter()
        .map(|e| {
            let t = e.trim();
            match t.to_ascii_lowercase().as_str() {
                "dhcp" => Ok(AclEntry::Dhcp),
                "localnets" => Ok(AclEntry::Localnets),
                "localhost" => Ok(AclEntry::Localhost),
                _ => t
                    .parse::<IpNet>()
                    .map(|n| AclEntry::Net(n.trunc()))
                    .or_else(|_| t.parse::<IpAddr>().map(|a| AclEntry::Net(IpNet::from(a))))
                    .map_err(|_| {
                        format!(
                            "entry {e:?} is not a CIDR (10.77.0.0/24), an address or one of dhcp, localnets, localhost"
                        )
                    }),
            }
        })
        .collect()
}

/// The prefixes `entries` stand for now: `dhcp` as `dhcp_subnets`, `localnets` as the
/// subnets of `ifaddrs` (loopback included). Sorted, without duplicates.
pub fn resolve(entries: &[AclEntry], dhcp_subnets: &[IpNet], ifaddrs: &[IfAddr]) -> Vec<IpNet> {
    let mut out = Vec::new();
    for e in entries {
        match e {
            AclEntry::Net(n) => out.push(*n),
            AclEntry::Dhcp => out.extend(dhcp_subnets.iter().map(IpNet::trunc)),
            AclEntry::Localnets => out.extend(ifaddrs.iter().map(|a| a.net.trunc())),
            AclEntry::Localhost => out.extend([
                IpNet::from(ipnet::Ipv4Net::new([127, 0, 0, 0].into(), 8).expect("valid prefix")),
                IpNet::from(IpAddr::from(std::net::Ipv6Addr::LOCALHOST)),
            ]),
        }
    }
    out.sort();
    out.dedup();
    out
}

/// True when `client` lies in one of `nets`. An IPv4-mapped IPv6 client
/// (`::ffff:a.b.c.d`, a dual-stack socket) is matched as its IPv4 address.
pub fn allows(nets: &[IpNet], client: IpAddr) -> bool {
    let client = match client {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(client, IpAddr::V4),
        v4 => v4,
    };
    nets.iter().any(|n| n.contains(&client))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn keywords_cidrs_and_addresses_resolve() {
        let e = parse(&s(&["dhcp", "LOCALHOST", "192.0.2.7", "10.9.0.1/16", "localnets"])).unwrap();
        let ifaddrs = vec![IfAddr {
            iface: "eth1".into(),
            addr: "10.78.0.1".parse().unwrap(),
            net: "10.78.0.0/24".parse().unwrap(),
        }];
        let nets = resolve(&e, &["10.77.0.0/24".parse().unwrap()], &ifaddrs);
        for ip in [
            "10.77.0.9",
            "127.0.0.1",
            "::1",
            "192.0.2.7",
            "10.9.200.1",
            "10.78.0.2",
            "::ffff:10.77.0.9",
        ] {
            assert!(allows(&nets, ip.parse().unwrap()), "{ip} allowed");
        }
        for ip in ["10.79.0.2", "192.0.2.8", "fd77::2", "::2"] {
            assert!(!allows(&nets, ip.parse().unwrap()), "{ip} refused");
        }
    }

    #[test]
    fn the_default_is_dhcp_and_loopback_only() {
        let nets = resolve(
            &parse(&default_allow_recursion()).unwrap(),
            &["10.77.0.0/24".parse().unwrap()],
            &[],
        );
        assert!(allows(&nets, "10.77.0.2".parse().unwrap()));
        assert!(allows(&nets, "::1".parse().unwrap()));
        assert!(!allows(&nets, "10.78.0.2".parse().unwrap()));
        assert!(!allows(&nets, "203.0.113.5".parse().unwrap()));
        // No DHCP subnet served: loopback only.
        let nets = resolve(&parse(&default_allow_recursion()).unwrap(), &[], &[]);
        assert!(!allows(&nets, "10.77.0.2".parse().unwrap()));
    }

    #[test]
    fn bad_entries_are_named() {
        let e = parse(&s(&["10.0.0.0/8", "lan"])).unwrap_err();
        assert!(e.contains("\"lan\""), "{e}");
        assert!(parse(&s(&["10.0.0.0/33"])).is_err());
        assert_eq!(parse(&[]).unwrap(), vec![]);
    }
}
