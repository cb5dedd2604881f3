//! DHCPv6 request → reply logic (RFC 8415 with the network-boot options of RFC
//! 5970), free of sockets so unit tests drive it with bytes.
//!
//! - `server` subnets: Solicit → Advertise (an address set aside per IA_NA), Request →
//!   Reply (leases bound and persisted), Renew/Rebind → Reply (extended; an IA without
//!   binding gets a new address, the old one with lifetimes 0), Release and Decline →
//!   Reply with status Success, Confirm → Success or NotOnLink, Information-Request →
//!   Reply with options only. Rapid Commit (RFC 8415 §18.3.1) is not offered: with two
//!   servers on a link it would bind addresses on both.
//! - `proxy` subnets (information-only, beside another DHCPv6 server): no addresses ever;
//!   an Information-Request from a boot client gets the boot options. Solicits are left to
//!   the other server: measured with Debian's OVMF, an Advertise without addresses is no
//!   proxy offer to UEFI PXE (with status NoAddrsAvail it cancels the boot, PXE-E21), so
//!   answering one could only break a boot the other server would have made.
//! - Boot clients (RFC 5970: client architecture option 61, vendor class `PXEClient` or
//!   `HTTPClient`, user class `iPXE`, or option 59 in the Option Request option) get the
//!   boot-file URL, option 59: iPXE its script URL on the API port (breaking the
//!   chain-load loop), HTTP boot clients the architecture map's URL with vendor class
//!   `HTTPClient` echoed, everyone else `tftp://[server]/<file>` from the map.
//!
//! Messages from a relay (Relay-Forward) are not answered yet (dropped and counted).
//! State: the subnets and architecture map (swapped live by the API), the lease database.

use std::{
    collections::BTreeMap,
    net::{Ipv6Addr, SocketAddrV6},
    sync::{Arc, RwLock},
};

use dhcproto::{
    v6::{DhcpOption, DhcpOptions, IAAddr, Message, MessageType, OptionCode, Status, StatusCode, UnknownOption, IANA},
    Decodable, Encodable,
};
use ipnet::Ipv6Net;

use super::leases::{IaKey, Lease6, Lease6Db};
use crate::dhcp::{
    config::{Subnet6Config, SubnetMode},
    handler::{secure_boot_file, SecureBootHosts, IPXE_SCRIPT_PATH},
    leases::now_secs,
};
use bootlane_core::events::EventKind;
use bootlane_core::net::{types::MacAddr, IfAddr};

/// How long a declined address stays out of the pool (seconds).
const DECLINE_HOLD: u64 = 3600;
/// Most pool addresses probed for a free one per IA (a /64 pool is never scanned).
const MAX_PROBES: u128 = 4096;

/// Where a datagram came from.
#[derive(Debug, Clone)]
pub struct RecvContext6 {
    /// The interface the socket serves (it selects the subnets).
    pub interface: String,
    /// The client's address (link-local, with its scope id) and port.
    pub src: SocketAddrV6,
}

/// One configured IPv6 subnet, resolved: Bootlane's address on it is known.
#[derive(Debug, Clone)]
pub struct Subnet6 {
    /// The configuration as written (with stored overrides).
    pub cfg: Subnet6Config,
    /// The prefix, truncated.
    pub net: Ipv6Net,
    /// Bootlane's address on this link (put in boot-file URLs).
    pub server: Ipv6Addr,
    /// DNS servers handed out (option 23).
    pub dns: Vec<Ipv6Addr>,
    /// Lease table key (the prefix as text).
    pub key: String,
}

impl Subnet6 {
    /// Resolves a configured subnet against the machine's interface addresses: the
    /// configured `server_address`, else a global address of the interface inside the
    /// prefix, else any global address of the interface.
    ///
    /// # Errors
    /// When no address is configured and the interface has no global IPv6 address.
    pub fn resolve(cfg: &Subnet6Config, ifaddrs: &[IfAddr]) -> anyhow::Result<Self> {
        let net = cfg.prefix.trunc();
        let v6 = |a: &IfAddr| match a.addr {
            std::net::IpAddr::V6(v) if !a.is_local_only() => Some(v),
            _ => None,
        };
        let on_iface = || ifaddrs.iter().filter(|a| a.iface == cfg.interface).filter_map(v6);
        let server = cfg
            .server_address
            .or_else(|| on_iface().find(|a| net.contains(a)))
            .or_else(|| on_iface().next())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "DHCPv6 subnet {net}: interface {:?} has no global IPv6 address; set server_address",
                    cfg.interface
                )
            })?;
        Ok(Self::with_server(cfg, server))
    }

    fn with_server(cfg: &Subnet6Config, server: Ipv6Addr) -> Self {
        let net = cfg.prefix.trunc();
        Self {
            dns: cfg.dns.clone().unwrap_or_else(|| vec![server]),
            net,
            server,
            key: net.to_string(),
            cfg: cfg.clone(),
        }
    }

    /// The same subnet with a new configuration, keeping the server address resolved at
    /// start (live changes from the API).
    pub fn rebuild(&self, cfg: &Subnet6Config) -> Self {
        Self::with_server(cfg, cfg.server_address.unwrap_or(self.server))
    }

    fn pool(&self) -> Option<(u128, u128)> {
        match (self.cfg.mode, self.cfg.range_start, self.cfg.range_end) {
            (SubnetMode::Server, Some(a), Some(b)) => Some((u128::from(a), u128::from(b))),
            _ => None,
        }
    }

    /// True when `ip` lies in the server-mode pool.
    pub fn in_pool(&self, ip: Ipv6Addr) -> bool {
        self.pool().is_some_and(|(a, b)| (a..=b).contains(&u128::from(ip)))
    }
}

/// What the client said about itself.
#[derive(Debug, Clone, Default)]
pub struct Client6 {
    /// DUID bytes (option 1); empty when absent (Information-Request may omit it).
    pub duid: Vec<u8>,
    /// The MAC, when the DUID or the link-local source tells it.
    pub mac: Option<MacAddr>,
    /// Option 61's first architecture.
    pub arch: Option<u16>,
    /// Vendor class (option 16) data starts with `PXEClient`.
    pub pxe: bool,
    /// Vendor class data starts with `HTTPClient` (UEFI HTTP boot).
    pub http: bool,
    /// User class (option 15) `iPXE`.
    pub ipxe: bool,
    /// Option 59 is in the Option Request option.
    pub asks_boot_url: bool,
    /// Option 23 is in the Option Request option.
    pub asks_dns: bool,
}

impl Client6 {
    /// Reads the client's identity and class from a request; `src` is its source address.
    pub fn of(msg: &Message, src: &Ipv6Addr) -> Self {
        let opts = msg.opts();
        let mut c = Self::default();
        if let Some(DhcpOption::ClientId(d)) = opts.get(OptionCode::ClientId) {
            c.duid = d.clone();
        }
        c.mac = mac_from_duid(&c.duid).or_else(|| mac_from_eui64(src));
        if let Some(DhcpOption::ClientArchType(a)) = opts.get(OptionCode::ClientArchType) {
            c.arch = a.first().map(|x| x.0);
        }
        if let Some(DhcpOption::VendorClass(v)) = opts.get(OptionCode::VendorClass) {
            c.pxe = v.data.iter().any(|d| d.starts_with(b"PXEClient"));
            c.http = v.data.iter().any(|d| d.starts_with(b"HTTPClient"));
        }
        if let Some(DhcpOption::UserClass(u)) = opts.get(OptionCode::UserClass) {
            c.ipxe = u.data.iter().any(|d| d.as_slice() == b"iPXE");
        }
        if let Some(DhcpOption::ORO(o)) = opts.get(OptionCode::ORO) {
            c.asks_boot_url = o.opts.contains(&OptionCode::OptBootfileUrl);
            c.asks_dns = o.opts.contains(&OptionCode::DomainNameServers);
        }
        c
    }

    /// True for a client that wants boot information.
    pub fn is_boot_client(&self) -> bool {
        self.arch.is_some() || self.pxe || self.http || self.ipxe || self.asks_boot_url
    }

    fn duid_hex(&self) -> String {
        hex(&self.duid)
    }
}

/// The body of a vendor class option 16 (RFC 8415 §21.16): enterprise number, then each
/// item with its 2-byte length. With `enterprise` `None`, a user class option 15 body
/// (§21.15). Used for encoding because dhcproto 0.15 miscounts these options' lengths.
pub fn class_data(enterprise: impl Into<Option<u32>>, items: &[&[u8]]) -> Vec<u8> {
    let mut v = enterprise.into().map(|e| e.to_be_bytes().to_vec()).unwrap_or_default();
    for i in items {
        v.extend_from_slice(&u16::try_from(i.len()).unwrap_or(u16::MAX).to_be_bytes());
        v.extend_from_slice(&i[..i.len().min(usize::from(u16::MAX))]);
    }
    v
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The MAC in a DUID-LLT (type 1) or DUID-LL (type 3) with hardware type 1 (Ethernet).
pub fn mac_from_duid(d: &[u8]) -> Option<MacAddr> {
    let ll = match d {
        [0, 1, 0, 1, _, _, _, _, rest @ ..] | [0, 3, 0, 1, rest @ ..] => rest,
        _ => return None,
    };
    <[u8; 6]>::try_from(ll).ok().map(MacAddr)
}

/// The MAC behind a modified-EUI-64 link-local address (RFC 4291 appendix A), as UEFI
/// and iPXE form theirs.
pub fn mac_from_eui64(a: &Ipv6Addr) -> Option<MacAddr> {
    let o = a.octets();
    if o[..8] != [0xfe, 0x80, 0, 0, 0, 0, 0, 0] || o[11] != 0xff || o[12] != 0xfe {
        return None;
    }
    Some(MacAddr([o[8] ^ 0x02, o[9], o[10], o[13], o[14], o[15]]))
}

/// The DHCPv6 handler.
pub struct Dhcp6Handler {
    subnets: RwLock<Arc<Vec<Subnet6>>>,
    arch_map: RwLock<Arc<BTreeMap<u16, String>>>,
    http_port: u16,
    http_base: Option<bootlane_boot::boot::netboot::Netboot>,
    secure_boot: Option<SecureBootHosts>,
    server_duid: Vec<u8>,
    leases: Arc<tokio::sync::Mutex<Lease6Db>>,
    events: Option<Arc<bootlane_core::events::EventBus>>,
    access: Option<Arc<bootlane_boot::access::gate::AccessGate>>,
    follow: Option<std::sync::Mutex<crate::dhcp::handler::EffectiveRx>>,
}

impl Dhcp6Handler {
    /// A handler for `subnets` (mode `off` dropped) answering with `server_duid` as its
    /// Server Identifier, allocating from `leases`. `http_port` is the API port put in
    /// iPXE script URLs.
    pub fn new(
        subnets: Vec<Subnet6>,
        arch_map: BTreeMap<u16, String>,
        http_port: u16,
        server_duid: Vec<u8>,
        leases: Arc<tokio::sync::Mutex<Lease6Db>>,
    ) -> Self {
        let h = Self {
            subnets: RwLock::new(Arc::new(Vec::new())),
            arch_map: RwLock::new(Arc::new(arch_map)),
            http_port,
            http_base: None,
            secure_boot: None,
            server_duid,
            leases,
            events: None,
            access: None,
            follow: None,
        };
        h.set_subnets(subnets);
        h
    }

    /// Follows the control's effective settings like
    /// [`BootHandler::following`](crate::dhcp::handler::BootHandler::following).
    pub fn following(mut self, rx: crate::dhcp::handler::EffectiveRx) -> Self {
        self.follow = Some(std::sync::Mutex::new(rx));
        self
    }

    /// Takes in a change of the followed settings, if any.
    fn follow(&self) {
        let Some(rx) = &self.follow else { return };
        let mut rx = rx.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !rx.has_changed().unwrap_or(false) {
            return;
        }
        let eff = rx.borrow_and_update().clone();
        let current = self.subnets.read().map(|g| g.clone()).unwrap_or_default();
        let rebuilt = current
            .iter()
            .map(|s| {
                eff.subnets6
                    .iter()
                    .find(|c| c.prefix.trunc().to_string() == s.key)
                    .map_or_else(|| s.clone(), |c| s.rebuild(c))
            })
            .collect();
        self.set_subnets(rebuilt);
        self.set_arch_map(eff.arch_map.clone());
    }

    /// Names the iPXE script URL from the netboot settings' `http_base_url` when set.
    pub fn with_http_base(mut self, base: bootlane_boot::boot::netboot::Netboot) -> Self {
        self.http_base = Some(base);
        self
    }

    /// Hands the signed shim to the x86-64 UEFI boots of the hosts in `hosts`.
    pub fn with_secure_boot(mut self, hosts: SecureBootHosts) -> Self {
        self.secure_boot = Some(hosts);
        self
    }

    /// Publishes `dhcp6.lease.granted|renewed|released|declined` on `events`.
    pub fn with_events(mut self, events: Arc<bootlane_core::events::EventBus>) -> Self {
        self.events = Some(events);
        self
    }

    /// Enforces access control (by MAC, when the client's MAC can be told).
    pub fn with_access(mut self, gate: Arc<bootlane_boot::access::gate::AccessGate>) -> Self {
        self.access = Some(gate);
        self
    }

    /// The active subnets.
    pub fn subnets(&self) -> Arc<Vec<Subnet6>> {
        self.follow();
        self.subnets.read().map(|g| g.clone()).unwrap_or_default()
    }

    /// Replaces the subnets (mode `off` ones dropped); applies to the next request.
    pub fn set_subnets(&self, subnets: Vec<Subnet6>) {
        let subnets: Vec<_> = subnets.into_iter().filter(|s| s.cfg.mode != SubnetMode::Off).collect();
        if let Ok(mut g) = self.subnets.write() {
            *g = Arc::new(subnets);
        }
    }

    /// Replaces the architecture map; applies to the next request.
    pub fn set_arch_map(&self, map: BTreeMap<u16, String>) {
        if let Ok(mut g) = self.arch_map.write() {
            *g = Arc::new(map);
        }
    }

    /// A copy of every DHCPv6 lease (diagnostics and tests).
    pub async fn leases_snapshot(&self) -> Vec<Lease6> {
        self.leases.lock().await.all().cloned().collect()
    }

    /// The Server Identifier (a DUID).
    pub fn server_duid(&self) -> &[u8] {
        &self.server_duid
    }

    /// Handles one datagram; returns the reply's bytes, or `None` when nothing is due
    /// (undecodable, not for this server, not for a configured link). Never panics.
    pub async fn handle(&self, bytes: &[u8], ctx: &RecvContext6) -> Option<Vec<u8>> {
        self.follow();
        // dhcproto 0.15 subtracts option lengths unchecked (vendor options shorter than
        // their enterprise number): an overflow panic in builds with overflow checks
        // (debug, tests, fuzzing), an error in release. A hostile datagram must not take
        // the receive loop down, so a panic is a decode error (as in DHCPv4's
        // `DhcpRequest::parse`; found by fuzzing).
        let Ok(Ok(msg)) = std::panic::catch_unwind(|| Message::from_bytes(bytes)) else {
            count("invalid", "dropped");
            return None;
        };
        let kind = msg.msg_type();
        let reply = self.dispatch(&msg, ctx).await;
        count(type_label(kind), if reply.is_some() { "replied" } else { "ignored" });
        reply.and_then(|r| r.to_vec().ok())
    }

    async fn dispatch(&self, msg: &Message, ctx: &RecvContext6) -> Option<Message> {
        use MessageType as T;
        let kind = msg.msg_type();
        let client = Client6::of(msg, ctx.src.ip());
        let server_id = match msg.opts().get(OptionCode::ServerId) {
            Some(DhcpOption::ServerId(s)) => Some(s.as_slice()),
            _ => None,
        };
        // RFC 8415 §16: which messages must (not) carry a Server Identifier, and ours.
        let for_us = match kind {
            T::Solicit | T::Rebind | T::Confirm => server_id.is_none(),
            T::Request | T::Renew | T::Release | T::Decline => server_id == Some(&self.server_duid[..]),
            T::InformationRequest => server_id.is_none_or(|s| s == &self.server_duid[..]),
            _ => false,
        };
        if !for_us || (client.duid.is_empty() && kind != T::InformationRequest) {
            return None;
        }
        let subnets = self.subnets();
        let subnet = select_subnet(&subnets, msg, ctx)?;
        if !self.admitted(subnet, &client, kind, ctx) {
            return None;
        }
        match (subnet.cfg.mode, kind) {
            (SubnetMode::Server, T::Solicit) => self.solicit(subnet, msg, &client).await,
            (SubnetMode::Server, T::Request | T::Renew | T::Rebind) => self.bind(subnet, msg, &client).await,
            (SubnetMode::Server, T::Release | T::Decline) => Some(self.release(subnet, msg, &client, kind).await),
            (SubnetMode::Server, T::Confirm) => self.confirm(subnet, msg, &client),
            (_, T::InformationRequest) if subnet.cfg.mode == SubnetMode::Server || client.is_boot_client() => {
                Some(self.base(T::Reply, msg, subnet, &client, subnet.cfg.mode == SubnetMode::Server))
            }
            _ => None,
        }
    }

    /// Access control: when the gate enforces and the client's MAC is known, learns its
    /// address (for TFTP and HTTP over IPv6) and asks the gate about Solicit, Request,
    /// Renew, Rebind and Information-Request. Clients whose MAC cannot be told are judged
    /// by the gate as unknown devices.
    fn admitted(&self, subnet: &Subnet6, c: &Client6, kind: MessageType, ctx: &RecvContext6) -> bool {
        use bootlane_boot::access::{gate::Seen, model::Protocol};
        let Some(gate) = self.access.as_ref().filter(|g| g.enforcing()) else {
            return true;
        };
        if let Some(mac) = c.mac {
            gate.learn(*ctx.src.ip(), mac);
        }
        if matches!(kind, MessageType::Release | MessageType::Decline | MessageType::Confirm) {
            return true;
        }
        let protocol = match subnet.cfg.mode {
            SubnetMode::Proxy => Protocol::ProxyDhcp,
            _ => Protocol::Dhcp,
        };
        let seen = Seen {
            protocol,
            mac: c.mac,
            ip: Some((*ctx.src.ip()).into()),
            arch: c.arch,
            vendor_class: None,
        };
        if gate.check(&seen).refused() {
            tracing::info!(mac = ?c.mac, kind = type_label(kind), "DHCPv6 request ignored: access control refuses this client");
            return false;
        }
        true
    }

    /// A reply with the Server and Client Identifiers only (RFC 8415 §18.3.7-8: what
    /// Release, Decline and Confirm replies carry besides a status).
    fn ids(&self, kind: MessageType, req: &Message, c: &Client6) -> Message {
        let mut r = Message::new_with_id(kind, req.xid());
        let o = r.opts_mut();
        o.insert(DhcpOption::ServerId(self.server_duid.clone()));
        if !c.duid.is_empty() {
            o.insert(DhcpOption::ClientId(c.duid.clone()));
        }
        r
    }

    /// [`Self::ids`], then DNS servers (`with_dns`, or when asked for; server mode only)
    /// and the boot options for boot clients.
    fn base(&self, kind: MessageType, req: &Message, s: &Subnet6, c: &Client6, with_dns: bool) -> Message {
        let mut r = self.ids(kind, req, c);
        let o = r.opts_mut();
        if s.cfg.mode == SubnetMode::Server && (with_dns || c.asks_dns) {
            o.insert(DhcpOption::DomainNameServers(s.dns.clone()));
        }
        self.add_boot(o, s, c);
        r
    }

    /// Adds option 59 (and vendor class `HTTPClient` for HTTP boot) for a boot client.
    fn add_boot(&self, o: &mut DhcpOptions, s: &Subnet6, c: &Client6) {
        if !c.is_boot_client() {
            return;
        }
        let Some(url) = self.boot_url(s, c) else {
            tracing::warn!(mac = ?c.mac, arch = ?c.arch, "no [dhcp.arch_map] entry for this DHCPv6 client architecture; no boot-file URL sent");
            return;
        };
        o.insert(DhcpOption::Unknown(UnknownOption::new(
            OptionCode::OptBootfileUrl,
            url.into_bytes(),
        )));
        if c.http && !c.ipxe {
            // UEFI HTTP boot takes only offers whose vendor class is HTTPClient.
            // Encoded by hand: dhcproto 0.15 writes option 16's length as the item count.
            o.insert(DhcpOption::Unknown(UnknownOption::new(
                OptionCode::VendorClass,
                class_data(343, &[b"HTTPClient"]),
            )));
        }
    }

    /// The boot-file URL for a boot client (RFC 5970 §3.1): iPXE's script URL, the arch
    /// map's URL, or `tftp://[server]/<file>`. Architecture defaults to 7 (x64 UEFI), as
    /// no BIOS boots over IPv6.
    pub fn boot_url(&self, s: &Subnet6, c: &Client6) -> Option<String> {
        let server = format!("[{}]", s.server);
        if c.ipxe {
            let base = self
                .http_base
                .as_ref()
                .and_then(|b| b.borrow().http_base_url.clone())
                .unwrap_or_else(|| format!("http://{server}:{}", self.http_port));
            return Some(format!("{base}{IPXE_SCRIPT_PATH}"));
        }
        let arch = c.arch.unwrap_or(7);
        let wants_sb = c
            .mac
            .is_some_and(|m| self.secure_boot.as_ref().is_some_and(|h| h.borrow().contains(&m)));
        let file = match (wants_sb && !c.http).then(|| secure_boot_file(arch)).flatten() {
            Some(f) => f.to_string(),
            None => self.arch_map.read().ok()?.get(&arch)?.clone(),
        };
        let file = file
            .replace("{server}", &server)
            .replace("{http_port}", &self.http_port.to_string());
        if file.contains("://") {
            Some(file)
        } else {
            Some(format!("tftp://{server}/{}", file.trim_start_matches('/')))
        }
    }

    fn times(s: &Subnet6) -> (u32, u32, u32) {
        let valid = s.cfg.lease_time_secs;
        (valid / 2, valid / 5 * 4, valid)
    }

    fn ia_with(&self, s: &Subnet6, id: u32, addrs: &[(Ipv6Addr, u32)]) -> IANA {
        let (t1, t2, _) = Self::times(s);
        let mut opts = DhcpOptions::new();
        for (a, life) in addrs {
            opts.insert(DhcpOption::IAAddr(IAAddr {
                addr: *a,
                preferred_life: *life,
                valid_life: *life,
                opts: DhcpOptions::new(),
            }));
        }
        IANA { id, t1, t2, opts }
    }

    /// A free pool address for `ia`: its binding, its advertised address, the address it
    /// asked for, then a hash-chosen start probed forward (never-used addresses first).
    fn pick(s: &Subnet6, ia: &IaKey, hint: Option<Ipv6Addr>, db: &Lease6Db, now: u64) -> Option<Ipv6Addr> {
        let (lo, hi) = s.pool()?;
        let ok = |ip: Ipv6Addr| s.in_pool(ip) && db.free_for(ip, ia, now);
        if let Some(l) = db.by_ia(ia).filter(|l| ok(l.ip)) {
            return Some(l.ip);
        }
        if let Some(ip) = db.offered(ia, now).filter(|ip| ok(*ip)) {
            return Some(ip);
        }
        if let Some(ip) = hint.filter(|ip| ok(*ip)) {
            return Some(ip);
        }
        let size = hi - lo + 1;
        let start = fnv(&[ia.1.as_bytes(), &ia.2.to_be_bytes()]) % size;
        let mut fallback = None;
        for i in 0..size.min(MAX_PROBES) {
            let ip = Ipv6Addr::from(lo + (start + i) % size);
            if ok(ip) {
                if db.never_used(ip) {
                    return Some(ip);
                }
                fallback = fallback.or(Some(ip));
            }
        }
        fallback
    }

    /// Advertise (RFC 8415 §18.3.1). While the shared store is unreachable only an IA's
    /// own active binding is advertised (a new allocation could collide with another
    /// node's), and a Solicit with none goes unanswered, as DHCPv4's DISCOVER does.
    async fn solicit(&self, s: &Subnet6, req: &Message, c: &Client6) -> Option<Message> {
        let mut r = self.base(MessageType::Advertise, req, s, c, true);
        let now = now_secs();
        let mut db = self.leases.lock().await;
        let degraded = !db.store_reachable();
        let mut any = false;
        for ia in ianas(req) {
            let key = (s.key.clone(), c.duid_hex(), ia.id);
            let ip = if degraded {
                db.by_ia(&key)
                    .filter(|l| l.active(now) && s.in_pool(l.ip))
                    .map(|l| l.ip)
            } else {
                Self::pick(s, &key, hint(ia), &db, now)
            };
            match ip {
                Some(ip) => {
                    db.hold_offer(ip, &key, now);
                    any = true;
                    r.opts_mut()
                        .insert(DhcpOption::IANA(self.ia_with(s, ia.id, &[(ip, Self::times(s).2)])));
                }
                None => r
                    .opts_mut()
                    .insert(DhcpOption::IANA(no_addrs(ia.id, "the pool is full"))),
            }
        }
        if degraded && !any {
            tracing::debug!(mac = ?c.mac, subnet = %s.net, "DHCPv6: no new address while the shared store is unreachable");
            return None;
        }
        if !any && ianas(req).next().is_some() {
            r.opts_mut()
                .insert(status(Status::NoAddrsAvail, "no address available"));
        }
        Some(r)
    }

    /// Reply to Request, Renew and Rebind: each IA_NA bound and stored. While the shared
    /// store is unreachable, or when storing a binding fails, an IA this node knows an
    /// active binding of is answered from memory ([`Self::held_ia`]); when no IA can be
    /// answered while the store is unreachable the message goes unanswered (another node
    /// may well hold the binding), as DHCPv4's degraded DHCPACK does.
    async fn bind(&self, s: &Subnet6, req: &Message, c: &Client6) -> Option<Message> {
        let kind = req.msg_type();
        let mut r = self.base(MessageType::Reply, req, s, c, true);
        let now = now_secs();
        let valid = Self::times(s).2;
        let mut db = self.leases.lock().await;
        let degraded = !db.store_reachable();
        let mut answered = false;
        for ia in ianas(req) {
            let key = (s.key.clone(), c.duid_hex(), ia.id);
            if degraded {
                match self.held_ia(s, ia, &key, c, &db, now) {
                    Some(held) => {
                        answered = true;
                        r.opts_mut().insert(DhcpOption::IANA(held));
                    }
                    None => {
                        tracing::debug!(mac = ?c.mac, iaid = ia.id, "DHCPv6: no binding while the shared store is unreachable: not one this node knows");
                        r.opts_mut()
                            .insert(DhcpOption::IANA(no_addrs(ia.id, "the lease could not be stored")));
                    }
                }
                continue;
            }
            let renewing = db.by_ia(&key).is_some_and(|l| l.active(now));
            let Some(ip) = Self::pick(s, &key, hint(ia), &db, now) else {
                r.opts_mut()
                    .insert(DhcpOption::IANA(no_addrs(ia.id, "the pool is full")));
                continue;
            };
            let lease = Lease6 {
                id: 0,
                duid: key.1.clone(),
                iaid: ia.id,
                ip,
                subnet: s.key.clone(),
                mac: c.mac.map(|m| m.to_string()),
                arch: c.arch,
                expires_at: now + u64::from(valid),
                declined: false,
            };
            match db.bind(lease).await {
                Ok(l) => {
                    if let (Some(g), Some(m)) = (self.access.as_ref(), c.mac) {
                        g.learn(l.ip, m);
                    }
                    // Addresses the client still holds that it can no longer use: lifetime 0.
                    let mut addrs: Vec<(Ipv6Addr, u32)> = ia_addrs(ia).filter(|a| *a != ip).map(|a| (a, 0)).collect();
                    addrs.insert(0, (ip, valid));
                    r.opts_mut().insert(DhcpOption::IANA(self.ia_with(s, ia.id, &addrs)));
                    let event = if renewing || kind != MessageType::Request {
                        EventKind::Dhcp6LeaseRenewed
                    } else {
                        EventKind::Dhcp6LeaseGranted
                    };
                    self.lease_event(event, &l, c, false);
                }
                Err(bootlane_core::store::StoreError::Conflict(why)) => {
                    // Another node leased it first; the index now shows that lease.
                    tracing::info!("DHCPv6: {why}");
                    r.opts_mut().insert(DhcpOption::IANA(no_addrs(
                        ia.id,
                        "the address was just leased by another server",
                    )));
                }
                Err(e) => {
                    tracing::error!("DHCPv6: storing the lease of {ip} failed: {e}");
                    let held = self.held_ia(s, ia, &key, c, &db, now);
                    r.opts_mut().insert(DhcpOption::IANA(
                        held.unwrap_or_else(|| no_addrs(ia.id, "the lease could not be stored")),
                    ));
                }
            }
        }
        if degraded && !answered {
            return None;
        }
        Some(r)
    }

    /// The IA_NA of a degraded Reply: the active binding this node holds for `key`, when
    /// the client's IA names its address (or none), with the lifetimes it still has
    /// (capped at the subnet's) and T1/T2 scaled to them; addresses the IA names besides
    /// get lifetime 0. Nothing is written, so nothing can collide: RFC 8415 §18.3.4 lets
    /// the server change the lifetimes it returns, and the stored binding already runs that
    /// long. Logged and evented as `dhcp6.lease.renewed` with `degraded: true`. `None`
    /// when there is no such binding (the caller answers NoAddrsAvail, RFC 8415 §18.3.2
    /// and §18.3.4, or not at all).
    fn held_ia(&self, s: &Subnet6, ia: &IANA, key: &IaKey, c: &Client6, db: &Lease6Db, now: u64) -> Option<IANA> {
        let l = db.by_ia(key).filter(|l| s.in_pool(l.ip))?;
        let named: Vec<Ipv6Addr> = ia_addrs(ia).collect();
        if !named.is_empty() && !named.contains(&l.ip) {
            return None;
        }
        let left = db.held(key, l.ip, now)?;
        let left = u32::try_from(left).unwrap_or(u32::MAX).min(Self::times(s).2);
        let mut addrs: Vec<(Ipv6Addr, u32)> = named.into_iter().filter(|a| *a != l.ip).map(|a| (a, 0)).collect();
        addrs.insert(0, (l.ip, left));
        let mut held = self.ia_with(s, ia.id, &addrs);
        (held.t1, held.t2) = (left / 2, left / 5 * 4);
        tracing::info!(mac = ?c.mac, ip = %l.ip, iaid = ia.id, left, "DHCPv6 Reply from the held lease (the store cannot be written)");
        self.lease_event(EventKind::Dhcp6LeaseRenewed, l, c, true);
        Some(held)
    }

    async fn release(&self, s: &Subnet6, req: &Message, c: &Client6, kind: MessageType) -> Message {
        let mut r = self.ids(MessageType::Reply, req, c);
        let now = now_secs();
        let mut db = self.leases.lock().await;
        for ia in ianas(req) {
            let key = (s.key.clone(), c.duid_hex(), ia.id);
            for ip in ia_addrs(ia) {
                let done = if kind == MessageType::Decline {
                    db.decline(&key, ip, now, now + DECLINE_HOLD).await
                } else {
                    db.release(&key, ip, now).await
                };
                match done {
                    Ok(true) => {
                        let event = if kind == MessageType::Decline {
                            EventKind::Dhcp6LeaseDeclined
                        } else {
                            EventKind::Dhcp6LeaseReleased
                        };
                        if let Some(l) = db.all().find(|l| l.ip == ip).cloned() {
                            self.lease_event(event, &l, c, false);
                        }
                    }
                    Ok(false) => {}
                    Err(e) => tracing::error!("DHCPv6: storing the release of {ip} failed: {e}"),
                }
            }
        }
        r.opts_mut().insert(status(Status::Success, "done"));
        r
    }

    /// Confirm (RFC 8415 §18.3.3): Success when every address is on this link, NotOnLink
    /// otherwise; no reply when the message carries no address.
    fn confirm(&self, s: &Subnet6, req: &Message, c: &Client6) -> Option<Message> {
        let addrs: Vec<Ipv6Addr> = ianas(req).flat_map(ia_addrs).collect();
        if addrs.is_empty() {
            return None;
        }
        let mut r = self.ids(MessageType::Reply, req, c);
        let on_link = addrs.iter().all(|a| s.net.contains(a));
        r.opts_mut().insert(if on_link {
            status(Status::Success, "all addresses are on link")
        } else {
            status(Status::NotOnLink, "an address is not on this link")
        });
        Some(r)
    }

    /// Publishes `kind` (a `dhcp6.lease.*` kind); a `degraded` answer (from memory, nothing stored)
    /// carries `degraded: true` in its data, as DHCPv4's does.
    fn lease_event(&self, kind: EventKind, l: &Lease6, c: &Client6, degraded: bool) {
        let Some(ev) = &self.events else { return };
        let who = c.mac.map_or_else(|| l.duid.clone(), |m| m.to_string());
        let data = bootlane_core::events::Dhcp6LeaseChanged {
            duid: l.duid.clone(),
            iaid: l.iaid,
            ip: l.ip,
            subnet: l.subnet.clone(),
            mac: l.mac.clone(),
            arch: l.arch,
            expires_at: l.expires_at,
            degraded,
        };
        ev.publish(
            bootlane_core::events::NewEvent::new(kind, format!("DHCPv6 lease {} {} for {who}", l.ip, kind.verb()))
                .resource("lease6", &l.duid)
                .with(&data),
        );
    }
}

/// The subnet for a request: on the receiving interface, the one whose prefix holds an
/// address the client names, else the first.
fn select_subnet<'a>(subnets: &'a [Subnet6], msg: &Message, ctx: &RecvContext6) -> Option<&'a Subnet6> {
    let mut here = subnets.iter().filter(|s| s.cfg.interface == ctx.interface).peekable();
    let first = here.peek().copied();
    let named: Vec<Ipv6Addr> = ianas(msg).flat_map(ia_addrs).collect();
    here.find(|s| named.iter().any(|a| s.net.contains(a))).or(first)
}

fn ianas(msg: &Message) -> impl Iterator<Item = &IANA> {
    msg.opts()
        .get_all(OptionCode::IANA)
        .unwrap_or_default()
        .iter()
        .filter_map(|o| match o {
            DhcpOption::IANA(ia) => Some(ia),
            _ => None,
        })
}

fn ia_addrs(ia: &IANA) -> impl Iterator<Item = Ipv6Addr> + '_ {
    ia.opts.iter().filter_map(|o| match o {
        DhcpOption::IAAddr(a) => Some(a.addr),
        _ => None,
    })
}

fn hint(ia: &IANA) -> Option<Ipv6Addr> {
    ia_addrs(ia).next()
}

fn status(s: Status, msg: &str) -> DhcpOption {
    DhcpOption::StatusCode(StatusCode {
        status: s,
        msg: msg.to_string(),
    })
}

fn no_addrs(id: u32, why: &str) -> IANA {
    let mut opts = DhcpOptions::new();
    opts.insert(status(Status::NoAddrsAvail, why));
    IANA { id, t1: 0, t2: 0, opts }
}

/// FNV-1a over `parts` (a stable start for the pool probe, the same on every restart).
fn fnv(parts: &[&[u8]]) -> u128 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    u128::from(h)
}

/// Lower-case label of a DHCPv6 message type for metrics.
pub fn type_label(kind: MessageType) -> &'static str {
    use MessageType as T;
    match kind {
        T::Solicit => "v6_solicit",
        T::Request => "v6_request",
        T::Renew => "v6_renew",
        T::Rebind => "v6_rebind",
        T::Release => "v6_release",
        T::Decline => "v6_decline",
        T::Confirm => "v6_confirm",
        T::InformationRequest => "v6_information_request",
        _ => "v6_other",
    }
}

fn count(kind: &'static str, outcome: &'static str) {
    metrics::counter!(bootlane_core::metrics::DHCP_MESSAGES, "type" => kind, "outcome" => outcome).increment(1);
}
