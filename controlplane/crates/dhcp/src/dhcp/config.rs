//! `[dhcp]` configuration: IPv4 subnets with their mode, pool, options and reservations,
//! IPv6 subnets (`[[dhcp.subnets6]]`, DHCPv6 for network boot), and the
//! client-architecture map (RFC 4578 option 93 / RFC 5970 option 61 code to boot file).
//! Validated by [`DhcpConfig::validate`] before anything starts. Holds no global state.

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, Ipv6Addr},
};

use anyhow::{bail, Context};
use ipnet::{Ipv4Net, Ipv6Net};
use serde::{Deserialize, Serialize};

use bootlane_core::net::types::{normalise_mac, MacAddr};

/// `[dhcp]`: every subnet Bootlane answers for. Default: none, so a fresh Bootlane never
/// answers DHCP on a network it was not told about.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DhcpConfig {
    /// `[[dhcp.subnets]]`, in order; the first match wins when several could apply.
    pub subnets: Vec<SubnetConfig>,
    /// `[[dhcp.subnets6]]`: IPv6 links Bootlane answers DHCPv6 on (RFC 8415 with the
    /// network-boot options of RFC 5970), in order; the first match wins.
    pub subnets6: Vec<Subnet6Config>,
    /// Client architecture code (option 93, as a decimal string) = boot file, merged over
    /// the built-in map (see `[dhcp.arch_map]` below). A value starting with `http://` or
    /// `https://` is a URL (UEFI HTTP boot); `{server}` and `{http_port}` in it are
    /// replaced by Bootlane's address on the client's subnet and the API port. An empty
    /// value removes the built-in entry (that architecture then gets no boot file).
    ///
    /// Maintainers: the built-in map is [`default_arch_map`].
    pub arch_map: BTreeMap<String, String>,
}

/// What Bootlane does on a subnet.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SubnetMode {
    /// Full DHCP server: pool, leases, reservations and boot options.
    Server,
    /// proxyDHCP next to another DHCP server: boot options only, to PXE clients only,
    /// on ports 67 and 4011; never assigns addresses.
    Proxy,
    /// Ignore the subnet (the default, so a subnet can be kept in the file but disabled).
    #[default]
    Off,
}

/// `[[dhcp.subnets]]`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubnetConfig {
    /// `server` (leases from the pool), `proxy` (proxyDHCP: boot information only, ports 67 and
    /// 4011) or `off`.
    #[serde(default)]
    pub mode: SubnetMode,
    /// The interface the subnet is reached on (the DHCP socket is bound to it with
    /// `SO_BINDTODEVICE`); relayed subnets name the interface the relay's packets arrive on.
    pub interface: String,
    /// The subnet, e.g. `"10.77.0.0/24"`.
    #[schemars(with = "String")]
    pub cidr: Ipv4Net,
    /// Server mode: the pool.
    #[serde(default)]
    pub range_start: Option<Ipv4Addr>,
    /// Server mode: the pool.
    #[serde(default)]
    pub range_end: Option<Ipv4Addr>,
    /// Option 3; not sent when unset.
    #[serde(default)]
    pub router: Option<Ipv4Addr>,
    /// Option 6, a list of IPv4 addresses.
    ///
    /// Default: Bootlane's own address on the subnet.
    #[serde(default)]
    pub dns: Option<Vec<Ipv4Addr>>,
    /// Lease time, at least 60.
    #[serde(default = "default_lease_time")]
    pub lease_time_secs: u32,
    /// Bootlane's own address on the subnet (server identifier, next-server, TFTP and HTTP
    /// addresses given to clients).
    ///
    /// Default: the address of `interface` inside `cidr`, else its first IPv4 address.
    #[serde(default)]
    pub server_address: Option<Ipv4Addr>,
    /// `[[dhcp.subnets.reservations]]`: fixed addresses; they always win over the pool.
    #[serde(default)]
    pub reservations: Vec<Reservation>,
    /// x86-64 UEFI clients of this subnet get the signed shim and GRUB instead of iPXE.
    #[serde(default)]
    pub secure_boot: bool,
}

/// `[[dhcp.subnets6]]`: one IPv6 link.
///
/// `server` mode assigns IA_NA addresses from `range_start..=range_end` (leases persisted
/// beside the IPv4 ones) and hands boot clients their boot-file URL (option 59);
/// `proxy` mode (information-only) never assigns addresses and answers beside another
/// DHCPv6 server: Information-Request from boot clients (stateless DHCPv6, RFC 8415
/// §18.2.6, as iPXE does on a link with the other-config flag) gets the boot-file URL;
/// Solicits are left to the other server (UEFI PXE takes the URL only in the offer that
/// carries its address). Router advertisements are the network's job (managed flag for
/// `server`, other-config flag for `proxy`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Subnet6Config {
    /// `server` (IA_NA from the pool), `proxy` (information-only: the boot-file URL) or `off`.
    #[serde(default)]
    pub mode: SubnetMode,
    /// Socket bound to it, joined to ff02::1:2.
    pub interface: String,
    /// The link's prefix, e.g. `"fd00:77::/64"`.
    #[schemars(with = "String")]
    pub prefix: Ipv6Net,
    /// Server mode: the pool.
    #[serde(default)]
    pub range_start: Option<Ipv6Addr>,
    /// Server mode: the pool.
    #[serde(default)]
    pub range_end: Option<Ipv6Addr>,
    /// Option 23.
    ///
    /// Default: Bootlane's own address on the link.
    #[serde(default)]
    pub dns: Option<Vec<Ipv6Addr>>,
    /// Valid and preferred lifetime; T1/T2 are 0.5/0.8 of it.
    #[serde(default = "default_lease_time")]
    pub lease_time_secs: u32,
    /// Put in boot-file URLs.
    ///
    /// Default: a global address of `interface`.
    #[serde(default)]
    pub server_address: Option<Ipv6Addr>,
}

/// A fixed address for one MAC.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    /// The client's MAC.
    pub mac: String,
    /// Its address, a host address of the subnet.
    pub ip: Ipv4Addr,
    /// Sent as option 12.
    #[serde(default)]
    pub hostname: Option<String>,
}

fn default_lease_time() -> u32 {
    3600
}

/// The built-in architecture map (RFC 4578 §2.1 and the IANA "Processor Architecture
/// Types" registry): 0 BIOS → `undionly.kpxe`; 6 EFI IA32 → `ipxe32.efi`; 7 and 9 EFI
/// x86-64 → `ipxe.efi`; 10 EFI ARM32 → `ipxe-arm32.efi`; 11 EFI ARM64 → `grubaa64.efi`
/// (Debian's signed ARM64 GRUB with menus generated per MAC: Debian ships no ARM64
/// iPXE); 16 x86-64 UEFI HTTP boot → `ipxe.efi` over HTTP.
pub fn default_arch_map() -> BTreeMap<u16, String> {
    [
        (0, "undionly.kpxe"),
        (6, "ipxe32.efi"),
        (7, "ipxe.efi"),
        (9, "ipxe.efi"),
        (10, "ipxe-arm32.efi"),
        (11, "grubaa64.efi"),
        (16, "http://{server}:{http_port}/boot/ipxe.efi"),
        (19, "http://{server}:{http_port}/boot/ipxe-arm64.efi"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect()
}

impl DhcpConfig {
    /// True when any subnet is in `server` or `proxy` mode.
    pub fn any_active(&self) -> bool {
        self.subnets.iter().any(|s| s.mode != SubnetMode::Off)
            || self.subnets6.iter().any(|s| s.mode != SubnetMode::Off)
    }

    /// The effective architecture map: the defaults with `[dhcp.arch_map]` applied.
    ///
    /// # Errors
    /// A key that is not a decimal `u16`.
    pub fn arch_map(&self) -> anyhow::Result<BTreeMap<u16, String>> {
        let mut map = default_arch_map();
        for (k, v) in &self.arch_map {
            let code: u16 = k
                .trim()
                .parse()
                .with_context(|| format!("[dhcp.arch_map] key {k:?} must be a decimal architecture code 0-65535"))?;
            if v.is_empty() {
                map.remove(&code);
            } else {
                map.insert(code, v.clone());
            }
        }
        Ok(map)
    }

    /// Checks every subnet: pool inside the subnet and ordered, router and reservations
    /// inside the subnet, no MAC or address reserved twice, lease time at least 60 s.
    ///
    /// # Errors
    /// The first problem, naming the subnet and the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.arch_map()?;
        for (i, s) in self.subnets6.iter().enumerate() {
            s.validate(&format!("[[dhcp.subnets6]] #{} ({})", i + 1, s.prefix))?;
        }
        for (i, s) in self.subnets.iter().enumerate() {
            let at = format!("[[dhcp.subnets]] #{} ({})", i + 1, s.cidr);
            if let Some((_, m)) = s.settings_problems().into_iter().next() {
                bail!("{at}: {m}");
            }
            let net = s.cidr.trunc();
            let mut macs = std::collections::HashSet::new();
            let mut ips = std::collections::HashSet::new();
            for r in &s.reservations {
                let mac: MacAddr =
                    normalise_mac(&r.mac).with_context(|| format!("{at}: reservation MAC {:?} is invalid", r.mac))?;
                if !net.contains(&r.ip) || r.ip == net.network() || r.ip == net.broadcast() {
                    bail!(
                        "{at}: reservation {} for {} is not a host address of {net}",
                        r.ip,
                        r.mac
                    );
                }
                if !macs.insert(mac) {
                    bail!("{at}: MAC {} is reserved twice", r.mac);
                }
                if !ips.insert(r.ip) {
                    bail!("{at}: address {} is reserved twice", r.ip);
                }
            }
        }
        Ok(())
    }
}

impl Subnet6Config {
    /// Checks one IPv6 subnet: interface set, pool inside the prefix and ordered (both ends
    /// or neither; required in server mode), lease time at least 60 s, DNS servers and the
    /// server address not multicast or unspecified.
    ///
    /// # Errors
    /// The first problem, prefixed with `at` (which names the subnet).
    pub fn validate(&self, at: &str) -> anyhow::Result<()> {
        match self.settings_problems().into_iter().next() {
            Some((_, m)) => bail!("{at}: {m}"),
            None => Ok(()),
        }
    }

    /// Every problem of the subnet's settings, each with the keys it concerns (for the
    /// settings layer, which drops stored keys the file no longer allows) and its message;
    /// in the order [`Subnet6Config::validate`] checks them.
    pub fn settings_problems(&self) -> Vec<(&'static [&'static str], String)> {
        let mut p: Vec<(&'static [&'static str], String)> = Vec::new();
        if self.interface.is_empty() {
            p.push((&["interface"], "interface must be set".into()));
        }
        if self.lease_time_secs < 60 {
            p.push((&["lease_time_secs"], "lease_time_secs must be at least 60".into()));
        }
        let net = self.prefix.trunc();
        if net.prefix_len() > 120 {
            p.push((&[], "the prefix must be /120 or shorter (a /64 is usual)".into()));
        }
        const POOL: &[&str] = &["range_start", "range_end"];
        match (self.range_start, self.range_end) {
            (Some(a), Some(b)) => {
                if !net.contains(&a) || !net.contains(&b) {
                    p.push((POOL, format!("range_start and range_end must lie inside {net}")));
                } else if u128::from(a) > u128::from(b) {
                    p.push((POOL, format!("range_start {a} is after range_end {b}")));
                } else if a == net.network() {
                    p.push((
                        POOL,
                        format!("the pool must not include the subnet-router anycast address {a}"),
                    ));
                }
            }
            (None, None) if self.mode == SubnetMode::Server => {
                p.push((
                    &["mode", "range_start", "range_end"],
                    "server mode needs range_start and range_end".into(),
                ));
            }
            (None, None) => {}
            _ => p.push((POOL, "set both range_start and range_end, or neither".into())),
        }
        let unicast = |a: &Ipv6Addr| !a.is_unspecified() && !a.is_multicast();
        if let Some(bad) = self.dns.iter().flatten().find(|a| !unicast(a)) {
            p.push((&["dns"], format!("dns server {bad} must be a unicast address")));
        }
        if let Some(a) = self.server_address.filter(|a| !unicast(a)) {
            p.push((
                &["server_address"],
                format!("server_address {a} must be a unicast address"),
            ));
        }
        p
    }
}

impl SubnetConfig {
    /// Every problem of the subnet's settings (interface set, lease time at least 60 s, a
    /// prefix of /30 or shorter, the pool inside the subnet, ordered, without the network
    /// and broadcast addresses, both ends or neither and required in server mode, the
    /// router inside the subnet), each with the keys it concerns and its message, in the
    /// order [`DhcpConfig::validate`] checks them. The reservations are checked there.
    pub fn settings_problems(&self) -> Vec<(&'static [&'static str], String)> {
        let mut p: Vec<(&'static [&'static str], String)> = Vec::new();
        if self.interface.is_empty() {
            p.push((&["interface"], "interface must be set".into()));
        }
        if self.lease_time_secs < 60 {
            p.push((&["lease_time_secs"], "lease_time_secs must be at least 60".into()));
        }
        let net = self.cidr.trunc();
        if net.prefix_len() > 30 {
            p.push((&[], "the prefix must be /30 or shorter".into()));
        }
        const POOL: &[&str] = &["range_start", "range_end"];
        match (self.range_start, self.range_end) {
            (Some(a), Some(b)) => {
                if !net.contains(&a) || !net.contains(&b) {
                    p.push((POOL, format!("range_start and range_end must lie inside {net}")));
                } else if u32::from(a) > u32::from(b) {
                    p.push((POOL, format!("range_start {a} is after range_end {b}")));
                } else if a == net.network() || b == net.broadcast() {
                    p.push((
                        POOL,
                        "the pool must not include the network or broadcast address".into(),
                    ));
                }
            }
            (None, None) if self.mode == SubnetMode::Server => {
                p.push((
                    &["mode", "range_start", "range_end"],
                    "server mode needs range_start and range_end".into(),
                ));
            }
            (None, None) => {}
            _ => p.push((POOL, "set both range_start and range_end, or neither".into())),
        }
        if let Some(r) = self.router {
            if !net.contains(&r) {
                p.push((&["router"], format!("router {r} is not inside {net}")));
            }
        }
        p
    }
}
