//! Request-to-reply logic, free of sockets: [`DhcpHandler`] is the trait the transport
//! calls, [`BootHandler`] the implementation (RFC 2131 server and PXE proxyDHCP).
//!
//! Decisions worth knowing:
//! - Subnet choice: a relayed request (giaddr set) picks the subnet containing giaddr
//!   (RFC 2131 §4.3.1); otherwise the subnets of the receiving interface, the one
//!   containing ciaddr when the client has an address, else the first active one.
//! - Allocation order: the client's reservation, its previous lease, the address it asks
//!   for (option 50), then the first never-used pool address, then the first expired one.
//!   Reserved addresses are never given to other clients; a REQUEST for an address
//!   reserved for someone else, outside the subnet or leased to another client is NAKed.
//! - Boot information (PXE, RFC 4578): an iPXE client gets its script URL (breaking the
//!   chain-load loop); other clients get the arch-map entry for their option 93 code,
//!   by TFTP (siaddr, option 66/67 and `file`) or, for a URL, as the HTTP boot URL.
//! - proxyDHCP: only PXE clients (option 60 `PXEClient...`), never an address.
//!
//! State: the lease database behind one async mutex (allocation and the store write of
//! one request happen under it, so two clients can never be bound to the same address;
//! the API shares it for lease deletion); the subnets and the architecture map behind
//! `RwLock<Arc<..>>`s that the API swaps for live changes (a request works on one
//! snapshot).

use std::{
    collections::{BTreeMap, HashMap},
    future::Future,
    net::{Ipv4Addr, SocketAddrV4},
    sync::{Arc, RwLock},
};

use dhcproto::v4::{DhcpOption, Flags, HType, Message, MessageType, Opcode, OptionCode};
use ipnet::Ipv4Net;

use super::{
    config::{Reservation, SubnetConfig, SubnetMode},
    leases::{now_secs, Lease, LeaseDb},
    packet::DhcpRequest,
};
use bootlane_core::events::{DhcpLeaseBound, DhcpLeaseEnded, DhcpLeaseHeld, EventData, EventKind, NewEvent};
use bootlane_core::net::{
    types::{normalise_mac, MacAddr},
    IfAddr,
};

/// Where a request came from.
#[derive(Debug, Clone)]
pub struct RecvContext {
    /// The interface the socket is bound to.
    pub interface: String,
    /// Local port: 67 (DHCP) or 4011 (PXE boot server / proxyDHCP).
    pub port: u16,
    /// Source address of the datagram.
    pub src: SocketAddrV4,
}

/// A reply and where to send it (RFC 2131 §4.1).
#[derive(Debug, Clone)]
pub struct DhcpReply {
    /// The reply message.
    pub msg: Message,
    /// Destination address and port.
    pub dest: SocketAddrV4,
}

/// Turns a request into at most one reply. Implementations must not panic on any input.
pub trait DhcpHandler: Send + Sync + 'static {
    /// Handles one request received as described by `ctx`.
    fn handle(&self, req: DhcpRequest, ctx: RecvContext) -> impl Future<Output = Option<DhcpReply>> + Send;

    /// Makes the lease writes of the requests handled so far durable; called by the
    /// receive loop once per batch, before any of its replies is sent (group commit).
    /// Says which of the batch's acknowledgements may be sent.
    fn commit(&self) -> impl Future<Output = Committed> + Send {
        async { Committed::All }
    }
}

/// What a batch's commit allows the receive loop to send ([`DhcpHandler::commit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Every reply.
    All,
    /// No DHCPACK: storing the leases failed, so none may be acknowledged.
    NoAcks,
    /// Every reply but the DHCPACKs of these `(client MAC, yiaddr)`: their addresses were
    /// leased to other clients by another node first.
    AllBut(Vec<(MacAddr, Ipv4Addr)>),
}

impl Committed {
    /// Whether `reply` may be sent.
    pub fn allows(&self, reply: &DhcpReply) -> bool {
        let ack = reply.msg.opts().msg_type() == Some(MessageType::Ack);
        match self {
            Self::All => true,
            Self::NoAcks => !ack,
            Self::AllBut(refused) => {
                !ack || !refused
                    .iter()
                    .any(|(mac, ip)| *ip == reply.msg.yiaddr() && reply.msg.chaddr().get(..6) == Some(&mac.0[..]))
            }
        }
    }
}

/// One configured subnet, resolved: its server address is known.
#[derive(Debug, Clone)]
pub struct Subnet {
    /// The configuration as written.
    pub cfg: SubnetConfig,
    /// The subnet (truncated to its network address).
    pub net: Ipv4Net,
    /// Bootlane's address on this subnet.
    pub server: Ipv4Addr,
    /// DNS servers to hand out.
    pub dns: Vec<Ipv4Addr>,
    /// Lease table key (`cidr` as text).
    pub key: String,
    reservations: HashMap<MacAddr, Reservation>,
    reserved_ips: HashMap<Ipv4Addr, MacAddr>,
}

impl Subnet {
    /// Resolves a configured subnet against the machine's interface addresses.
    ///
    /// # Errors
    /// When no server address is configured and none can be found on the interface.
    pub fn resolve(cfg: &SubnetConfig, ifaddrs: &[IfAddr]) -> anyhow::Result<Self> {
        let net = cfg.cidr.trunc();
        let v4 = |a: &IfAddr| match a.addr {
            std::net::IpAddr::V4(v) => Some(v),
            std::net::IpAddr::V6(_) => None,
        };
        let server = cfg
            .server_address
            .or_else(|| {
                ifaddrs
                    .iter()
                    .filter(|a| a.iface == cfg.interface)
                    .filter_map(v4)
                    .find(|a| net.contains(a))
            })
            .or_else(|| ifaddrs.iter().filter_map(v4).find(|a| net.contains(a)))
            .or_else(|| ifaddrs.iter().filter(|a| a.iface == cfg.interface).find_map(v4))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "DHCP subnet {net}: interface {:?} has no IPv4 address; set server_address",
                    cfg.interface
                )
            })?;
        let mut reservations = HashMap::new();
        let mut reserved_ips = HashMap::new();
        for r in &cfg.reservations {
            // Validated at config load; a bad one here is skipped rather than fatal.
            if let Ok(mac) = normalise_mac(&r.mac) {
                reserved_ips.insert(r.ip, mac);
                reservations.insert(mac, r.clone());
            }
        }
        Ok(Self {
            dns: cfg.dns.clone().unwrap_or_else(|| vec![server]),
            net,
            server,
            key: net.to_string(),
            cfg: cfg.clone(),
            reservations,
            reserved_ips,
        })
    }

    /// The same subnet with a new configuration, keeping the server address resolved at
    /// start (used to apply live changes without looking at interfaces again).
    ///
    /// # Errors
    /// Never in practice (the server address is known); kept for symmetry with `resolve`.
    pub fn rebuild(&self, cfg: &SubnetConfig) -> anyhow::Result<Self> {
        let mut c = cfg.clone();
        c.server_address = Some(cfg.server_address.unwrap_or(self.server));
        let mut s = Self::resolve(&c, &[])?;
        s.cfg.server_address = cfg.server_address;
        Ok(s)
    }

    /// The address reserved for `mac` in this subnet (file or API reservation), if any.
    pub fn reserved_ip(&self, mac: MacAddr) -> Option<Ipv4Addr> {
        self.reservations.get(&mac).map(|r| r.ip)
    }

    /// True when `ip` lies in the pool.
    pub fn in_pool(&self, ip: Ipv4Addr) -> bool {
        match (self.cfg.range_start, self.cfg.range_end) {
            (Some(a), Some(b)) => (u32::from(a)..=u32::from(b)).contains(&u32::from(ip)),
            _ => false,
        }
    }

    fn is_host(&self, ip: Ipv4Addr) -> bool {
        self.net.contains(&ip) && ip != self.net.network() && ip != self.net.broadcast()
    }

    /// True when `ip` may be bound to `mac` as far as this subnet's rules go (pool and
    /// reservations; the lease table is checked separately).
    fn allowed(&self, ip: Ipv4Addr, mac: MacAddr) -> bool {
        if let Some(r) = self.reservations.get(&mac) {
            // Reservations win: a reserved client gets its address and no other.
            return r.ip == ip;
        }
        self.in_pool(ip) && !self.reserved_ips.contains_key(&ip)
    }
}

/// Bootlane's DHCP handler: server and proxy modes for every configured subnet.
pub struct BootHandler {
    // Swapped whole when the followed settings change (`PUT /services/dhcp`,
    // reservations) and read per request.
    subnets: RwLock<Arc<Vec<Subnet>>>,
    // Swapped whole when the followed settings change (`PUT /services/archmap`).
    arch_map: RwLock<Arc<BTreeMap<u16, String>>>,
    // The control's effective settings, taken in at the next read after a change.
    follow: Option<std::sync::Mutex<EffectiveRx>>,
    http_port: u16,
    domain: Box<dyn Fn() -> String + Send + Sync>,
    leases: Arc<tokio::sync::Mutex<LeaseDb>>,
    events: Option<Arc<bootlane_core::events::EventBus>>,
    http_base: Option<bootlane_boot::boot::netboot::Netboot>,
    access: Option<Arc<bootlane_boot::access::gate::AccessGate>>,
    secure_boot: Option<SecureBootHosts>,
    relays: Option<super::relays::RelayLog>,
    tracer: Option<super::trace::Tracer>,
}

pub use bootlane_boot::inventory::SecureBootHosts;

/// The client hardware address of the boot doctor's DHCP probes (locally administered):
/// this server never answers it on port 67, so a probe holds no address of the pool.
pub const DOCTOR_MAC: MacAddr = MacAddr([0x02, 0xb0, 0x07, 0xd0, 0xc7, 0x01]);

/// A receiver of the DHCP control's effective settings
/// ([`DhcpControl::subscribe`](crate::dhcp::control::DhcpControl::subscribe)).
pub type EffectiveRx = tokio::sync::watch::Receiver<Arc<crate::dhcp::control::DhcpEffective>>;

/// The Secure Boot boot file for client architecture `arch`: the signed shim for x86-64
/// UEFI (7, 9) and for ARM64 UEFI (11, `shimaa64.efi`); `None` for the others, which keep
/// the arch map's file.
pub fn secure_boot_file(arch: u16) -> Option<&'static str> {
    match arch {
        7 | 9 => Some(bootlane_boot::boot::SHIM_FILE),
        11 => Some("shimaa64.efi"),
        _ => None,
    }
}

/// True when an arch-map file is a PXELINUX loader (`pxelinux.0` or `lpxelinux.0`, in any
/// directory), which iPXE clients are given as well (see `add_boot`).
pub fn is_pxelinux_loader(file: &str) -> bool {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    name.eq_ignore_ascii_case("pxelinux.0") || name.eq_ignore_ascii_case("lpxelinux.0")
}

pub use bootlane_boot::boot::netboot::IPXE_SCRIPT_PATH;

impl BootHandler {
    /// A handler for resolved `subnets` (mode `off` subnets are ignored), the effective
    /// architecture map, the API port (for HTTP URLs), a provider of the DNS local domain
    /// (read per request, so a live DNS settings change applies) and the lease database.
    pub fn new(
        subnets: Vec<Subnet>,
        arch_map: BTreeMap<u16, String>,
        http_port: u16,
        domain: Box<dyn Fn() -> String + Send + Sync>,
        leases: LeaseDb,
    ) -> Self {
        Self::new_shared(
            subnets,
            arch_map,
            http_port,
            domain,
            Arc::new(tokio::sync::Mutex::new(leases)),
        )
    }

    /// [`BootHandler::new`] with a lease database shared with others (the API).
    pub fn new_shared(
        subnets: Vec<Subnet>,
        arch_map: BTreeMap<u16, String>,
        http_port: u16,
        domain: Box<dyn Fn() -> String + Send + Sync>,
        leases: Arc<tokio::sync::Mutex<LeaseDb>>,
    ) -> Self {
        let subnets: Vec<Subnet> = subnets.into_iter().filter(|s| s.cfg.mode != SubnetMode::Off).collect();
        Self {
            subnets: RwLock::new(Arc::new(subnets)),
            arch_map: RwLock::new(Arc::new(arch_map)),
            http_port,
            domain,
            leases,
            events: None,
            http_base: None,
            access: None,
            secure_boot: None,
            relays: None,
            tracer: None,
            follow: None,
        }
    }

    /// Follows the control's effective settings: after a change, the next read rebuilds
    /// the running subnets from their new configuration (keeping the server address
    /// resolved at start; a subnet not running is not added) and takes the new
    /// architecture map.
    pub fn following(mut self, rx: EffectiveRx) -> Self {
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
                eff.subnets
                    .iter()
                    .find(|c| c.cidr.trunc().to_string() == s.key)
                    .and_then(|c| s.rebuild(c).ok())
                    .unwrap_or_else(|| s.clone())
            })
            .collect();
        self.set_subnets(rebuilt);
        self.set_arch_map(eff.arch_map.clone());
    }

    /// Enforces access control through `gate`: a refused client gets no answer.
    pub fn with_access(mut self, gate: Arc<bootlane_boot::access::gate::AccessGate>) -> Self {
        self.access = Some(gate);
        self
    }

    /// The access-control hook, called only while the gate enforces: learns the client's
    /// address for TFTP and HTTP boot, then asks the gate about DISCOVER, REQUEST and
    /// INFORM that this server would answer (RELEASE and DECLINE only free state; a
    /// non-PXE client in a proxy subnet is never answered, so it is not judged or recorded).
    /// True when the request may be handled.
    fn admitted(&self, gate: &bootlane_boot::access::gate::AccessGate, req: &DhcpRequest, ctx: &RecvContext) -> bool {
        use bootlane_boot::access::{gate::Seen, model::Protocol};
        let m = &req.msg;
        let relayed = !m.giaddr().is_unspecified();
        let ip = [Some(m.ciaddr()), req.requested_ip, (!relayed).then_some(*ctx.src.ip())]
            .into_iter()
            .flatten()
            .find(|a| !a.is_unspecified());
        if let Some(ip) = ip {
            gate.learn(ip, req.mac);
        }
        if !matches!(
            req.kind,
            MessageType::Discover | MessageType::Request | MessageType::Inform
        ) {
            return true;
        }
        let subnets = self.subnets();
        let protocol = match Self::select_subnet(&subnets, req, ctx).map(|s| s.cfg.mode) {
            Some(SubnetMode::Proxy) if req.class.pxe => Protocol::ProxyDhcp,
            Some(SubnetMode::Server) if ctx.port == 67 => Protocol::Dhcp,
            _ => return true,
        };
        let vendor_class = match m.opts().get(OptionCode::ClassIdentifier) {
            Some(DhcpOption::ClassIdentifier(v)) => Some(v.as_slice()),
            _ => None,
        };
        let seen = Seen {
            protocol,
            mac: Some(req.mac),
            ip: ip.map(Into::into),
            arch: req.class.arch,
            vendor_class,
        };
        if gate.check(&seen).refused() {
            tracing::info!(mac = %req.mac, kind = type_label(req.kind), "DHCP request ignored: access control refuses this client");
            return false;
        }
        true
    }

    /// Hands the signed shim to the x86-64 UEFI boots of the hosts in `hosts`.
    pub fn with_secure_boot(mut self, hosts: SecureBootHosts) -> Self {
        self.secure_boot = Some(hosts);
        self
    }

    /// Names the iPXE script URL from the netboot settings' `http_base_url` when set (read
    /// per answer, so a change applies to the next one).
    pub fn with_http_base(mut self, base: bootlane_boot::boot::netboot::Netboot) -> Self {
        self.http_base = Some(base);
        self
    }

    /// Offers what each handled message was and how it was answered to `tracer` (the boot
    /// sessions' recorder; see [`super::trace`]); `None` records nothing.
    pub fn with_tracer(mut self, tracer: Option<super::trace::Tracer>) -> Self {
        self.tracer = tracer;
        self
    }

    /// Records the relay agents seen in `giaddr` in `log` (read by the boot doctor).
    pub fn with_relays(mut self, log: super::relays::RelayLog) -> Self {
        self.relays = Some(log);
        self
    }

    /// Publishes `dhcp.lease.granted|renewed|released|declined` on `events`.
    pub fn with_events(mut self, events: Arc<bootlane_core::events::EventBus>) -> Self {
        self.events = Some(events);
        self
    }

    fn lease_event<D: EventData>(&self, kind: EventKind, mac: MacAddr, ip: Ipv4Addr, data: &D) {
        if let Some(ev) = &self.events {
            ev.publish(
                NewEvent::new(kind, format!("DHCP lease {ip} {} for {mac}", kind.verb()))
                    .resource("lease", mac)
                    .with(data),
            );
        }
    }

    /// The `data` of a lease that ended (declined, released).
    fn ended(mac: MacAddr, ip: Ipv4Addr, s: &Subnet) -> DhcpLeaseEnded {
        DhcpLeaseEnded {
            mac: mac.to_string(),
            ip,
            subnet: s.key.clone(),
        }
    }

    /// The active subnets (a snapshot; a live change swaps in a new list).
    pub fn subnets(&self) -> Arc<Vec<Subnet>> {
        self.follow();
        self.subnets.read().map(|g| g.clone()).unwrap_or_default()
    }

    /// Replaces the subnets (mode `off` ones are dropped); applies to the next request.
    pub fn set_subnets(&self, subnets: Vec<Subnet>) {
        let subnets: Vec<Subnet> = subnets.into_iter().filter(|s| s.cfg.mode != SubnetMode::Off).collect();
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

    /// The effective architecture map.
    pub fn arch_map(&self) -> Arc<BTreeMap<u16, String>> {
        self.follow();
        self.arch_map.read().map(|g| g.clone()).unwrap_or_default()
    }

    /// The lease database this handler allocates from.
    pub fn leases_db(&self) -> &Arc<tokio::sync::Mutex<LeaseDb>> {
        &self.leases
    }

    /// A copy of every lease (for diagnostics and tests).
    pub async fn leases(&self) -> Vec<Lease> {
        self.leases.lock().await.all().cloned().collect()
    }

    fn select_subnet<'a>(subnets: &'a [Subnet], req: &DhcpRequest, ctx: &RecvContext) -> Option<&'a Subnet> {
        let giaddr = req.msg.giaddr();
        if !giaddr.is_unspecified() {
            return subnets.iter().find(|s| s.net.contains(&giaddr));
        }
        let mut local = subnets.iter().filter(|s| s.cfg.interface == ctx.interface);
        let ciaddr = req.msg.ciaddr();
        let src = *ctx.src.ip();
        let known = [ciaddr, src].into_iter().find(|a| !a.is_unspecified());
        match known {
            Some(a) => local.find(|s| s.net.contains(&a)).or_else(|| {
                // A proxyDHCP client has an address from another server, possibly outside
                // every configured CIDR; it is still on this interface.
                subnets
                    .iter()
                    .find(|s| s.cfg.interface == ctx.interface && s.cfg.mode == SubnetMode::Proxy)
            }),
            None => local.next(),
        }
    }

    /// Substitutes `{server}` and `{http_port}` in an arch-map URL.
    fn expand(&self, s: &str, server: Ipv4Addr) -> String {
        s.replace("{server}", &server.to_string())
            .replace("{http_port}", &self.http_port.to_string())
    }

    /// Adds the boot options for a boot client; returns false (and adds nothing) when the
    /// client has no boot file (not a boot client, or an architecture without entry).
    fn add_boot(&self, reply: &mut Message, req: &DhcpRequest, subnet: &Subnet) -> bool {
        let class = req.class;
        let server = subnet.server;
        if !class.is_boot_client() {
            return false;
        }
        // A Secure Boot client (its subnet's or its host's flag) that is not already
        // running iPXE gets the signed shim, which loads signed GRUB.
        let wants_sb =
            subnet.cfg.secure_boot || self.secure_boot.as_ref().is_some_and(|h| h.borrow().contains(&req.mac));
        let shim = (wants_sb && !class.ipxe && !class.http)
            .then(|| secure_boot_file(class.arch.unwrap_or(0)))
            .flatten();
        // Where the arch map names a PXELINUX loader for this architecture, iPXE clients
        // (an iPXE option ROM, as QEMU's) get it too rather than the iPXE script:
        // the site chose PXELINUX for these machines.
        let arch_file = self.arch_map().get(&class.arch.unwrap_or(0)).cloned();
        let pxelinux = arch_file.as_deref().is_some_and(is_pxelinux_loader);
        let file = if let Some(f) = shim {
            f.to_string()
        } else if class.ipxe && !pxelinux {
            let base = self
                .http_base
                .as_ref()
                .and_then(|b| b.borrow().http_base_url.clone())
                .unwrap_or_else(|| format!("http://{server}:{}", self.http_port));
            format!("{base}{IPXE_SCRIPT_PATH}")
        } else {
            let arch = class.arch.unwrap_or(0);
            match arch_file.as_ref() {
                Some(f) => self.expand(f, server),
                None => {
                    tracing::warn!(mac = %req.mac, arch, "no [dhcp.arch_map] entry for this client architecture; no boot file sent");
                    return false;
                }
            }
        };
        let is_url = file.starts_with("http://") || file.starts_with("https://");
        reply.set_siaddr(server);
        let opts = reply.opts_mut();
        if !is_url {
            opts.insert(DhcpOption::TFTPServerName(server.to_string().into_bytes()));
        }
        opts.insert(DhcpOption::BootfileName(file.clone().into_bytes()));
        if class.http && !class.ipxe {
            // UEFI 2.5+ HTTP boot requires the reply's vendor class to be HTTPClient.
            opts.insert(DhcpOption::ClassIdentifier(b"HTTPClient".to_vec()));
        } else if class.pxe {
            opts.insert(DhcpOption::ClassIdentifier(b"PXEClient".to_vec()));
            // PXE 2.1 §2.4.2 option 43 sub-option 6 PXE_DISCOVERY_CONTROL = 8: no boot
            // server discovery, download the boot file named in this reply.
            opts.insert(DhcpOption::VendorExtensions(vec![6, 1, 8, 255]));
        }
        // The fixed `file` field holds 128 bytes including the terminating NUL; longer
        // names are sent in option 67 only.
        if file.len() < 128 {
            reply.set_fname_str(&file);
        }
        true
    }

    /// A reply skeleton (RFC 2131 §4.3.1 table 3): header fields copied from the request,
    /// message type and server identifier set, relay agent information (RFC 3046 §2.2)
    /// and client identifier (RFC 6842) echoed.
    fn base(req: &DhcpRequest, kind: MessageType, server: Ipv4Addr) -> Message {
        let m = &req.msg;
        let mut r = Message::default();
        r.set_opcode(Opcode::BootReply)
            .set_htype(HType::Eth)
            .set_xid(m.xid())
            .set_flags(m.flags())
            .set_giaddr(m.giaddr())
            .set_chaddr(&req.mac.0);
        r.set_secs(0);
        let opts = r.opts_mut();
        opts.insert(DhcpOption::MessageType(kind));
        opts.insert(DhcpOption::ServerIdentifier(server));
        // Echoed: relay information (RFC 3046 §2.2), client id (RFC 6842), and the PXE
        // client's UUID (option 97, RFC 4578 §2.2): some UEFI firmware ignores proxyDHCP
        // offers without it.
        for code in [
            OptionCode::RelayAgentInformation,
            OptionCode::ClientIdentifier,
            OptionCode::ClientMachineIdentifier,
        ] {
            if let Some(o) = m.opts().get(code) {
                opts.insert(o.clone());
            }
        }
        r
    }

    /// Network options (mask, router, DNS, domain; plus lease times when `lease` is set).
    fn add_network(&self, r: &mut Message, s: &Subnet, lease: Option<u32>, host: Option<&str>) {
        let opts = r.opts_mut();
        opts.insert(DhcpOption::SubnetMask(s.net.netmask()));
        if let Some(gw) = s.cfg.router {
            opts.insert(DhcpOption::Router(vec![gw]));
        }
        if !s.dns.is_empty() {
            opts.insert(DhcpOption::DomainNameServer(s.dns.clone()));
        }
        let domain = (self.domain)();
        if !domain.is_empty() {
            opts.insert(DhcpOption::DomainName(domain));
        }
        if let Some(h) = host {
            opts.insert(DhcpOption::Hostname(h.to_string()));
        }
        if let Some(t) = lease {
            opts.insert(DhcpOption::AddressLeaseTime(t));
            // RFC 2131 §4.4.5 defaults: T1 = 0.5, T2 = 0.875 of the lease.
            opts.insert(DhcpOption::Renewal(t / 2));
            opts.insert(DhcpOption::Rebinding((u64::from(t) * 7 / 8) as u32));
        }
    }

    /// RFC 2131 §4.1 destination rules.
    fn dest(req: &DhcpRequest, ctx: &RecvContext, nak: bool, reply: &mut Message) -> SocketAddrV4 {
        let giaddr = req.msg.giaddr();
        if !giaddr.is_unspecified() {
            if nak {
                // §4.3.2: a NAK through a relay asks it to broadcast.
                reply.set_flags(Flags::default().set_broadcast());
            }
            return SocketAddrV4::new(giaddr, 67);
        }
        if ctx.port != 67 {
            // Port 4011: the client has an address and waits on its source port.
            return ctx.src;
        }
        let ciaddr = req.msg.ciaddr();
        if !nak && !ciaddr.is_unspecified() {
            return SocketAddrV4::new(ciaddr, 68);
        }
        // No address yet (or a NAK): broadcast. Unicasting to yiaddr would need an ARP
        // entry we do not install; every client accepts a broadcast.
        SocketAddrV4::new(Ipv4Addr::BROADCAST, 68)
    }

    fn reserved_host(s: &Subnet, mac: MacAddr) -> Option<String> {
        s.reservations.get(&mac).and_then(|r| r.hostname.clone())
    }

    /// The address to offer `mac`, in the documented order.
    fn pick(&self, s: &Subnet, req: &DhcpRequest, db: &mut LeaseDb, now: u64) -> Option<Ipv4Addr> {
        let mac = req.mac;
        let ok = |db: &LeaseDb, ip: Ipv4Addr| s.allowed(ip, mac) && db.free_for(ip, mac, now);
        if let Some(r) = s.reservations.get(&mac) {
            if db.free_for(r.ip, mac, now) {
                return Some(r.ip);
            }
            tracing::warn!(%mac, ip = %r.ip, "reserved address is still leased to another client; it is reclaimed when that lease ends");
            return None;
        }
        if let Some(l) = db.by_mac(&s.key, mac) {
            if ok(db, l.ip) {
                return Some(l.ip);
            }
        }
        if let Some(ip) = req.requested_ip.filter(|ip| ok(db, *ip)) {
            return Some(ip);
        }
        // A client repeating its DISCOVER gets the address already held for it.
        if let Some(ip) = db.offered_to(mac, now).filter(|ip| s.in_pool(*ip) && ok(db, *ip)) {
            return Some(ip);
        }
        let (a, b) = (u32::from(s.cfg.range_start?), u32::from(s.cfg.range_end?));
        // A never-used address first, resuming where the last search stopped (a scan from
        // the pool's start per DISCOVER would make a /16 flood quadratic); then any free
        // one, which only happens once the pool has no fresh address left.
        if let Some(ip) = db.fresh_address(&s.key, a, b, ok) {
            return Some(ip);
        }
        (a..=b).map(Ipv4Addr::from).find(|ip| ok(db, *ip))
    }

    async fn server_mode(&self, s: &Subnet, req: &DhcpRequest, ctx: &RecvContext) -> Option<DhcpReply> {
        let now = now_secs();
        let mac = req.mac;
        match req.kind {
            MessageType::Discover => {
                let mut db = self.leases.lock().await;
                if !db.store_reachable() {
                    // Degraded: only a client's own active lease is offered;
                    // a new allocation could collide with another node's.
                    let held = db.by_mac(&s.key, mac).filter(|l| l.active(now) && s.allowed(l.ip, mac));
                    let Some(ip) = held.map(|l| l.ip) else {
                        tracing::debug!(%mac, subnet = %s.net, "no new address while the shared store is unreachable");
                        return None;
                    };
                    drop(db);
                    return Some(self.offer(s, req, ctx, ip));
                }
                let Some(ip) = self.pick(s, req, &mut db, now) else {
                    tracing::warn!(%mac, subnet = %s.net, "no free address to offer");
                    return None;
                };
                db.hold_offer(ip, mac, now);
                drop(db);
                tracing::info!(%mac, %ip, subnet = %s.net, "DHCPOFFER");
                Some(self.offer(s, req, ctx, ip))
            }
            MessageType::Request => self.request(s, req, ctx, now).await,
            MessageType::Decline => {
                if req.server_id.is_some_and(|id| id != s.server) {
                    return None;
                }
                let ip = req.requested_ip.filter(|ip| s.is_host(*ip))?;
                let until = now + u64::from(s.cfg.lease_time_secs);
                let mut db = self.leases.lock().await;
                if !db.may_decline(&s.key, mac, ip) {
                    tracing::warn!(%mac, %ip, "DHCPDECLINE ignored: the address was not leased or offered to this client");
                    return None;
                }
                match db.decline(&s.key, mac, ip, until).await {
                    Ok(()) => {
                        tracing::warn!(%mac, %ip, "DHCPDECLINE: address in use by another host; kept out of the pool for one lease time");
                        self.lease_event(EventKind::DhcpLeaseDeclined, mac, ip, &Self::ended(mac, ip, s));
                    }
                    Err(e) => tracing::error!("storing a declined address failed: {e}"),
                }
                None
            }
            MessageType::Release => {
                if req.server_id.is_some_and(|id| id != s.server) {
                    return None;
                }
                let ip = req.msg.ciaddr();
                let mut db = self.leases.lock().await;
                match db.release(&s.key, mac, ip, now).await {
                    Ok(true) => {
                        tracing::info!(%mac, %ip, "DHCPRELEASE");
                        self.lease_event(EventKind::DhcpLeaseReleased, mac, ip, &Self::ended(mac, ip, s));
                    }
                    Ok(false) => {
                        tracing::debug!(%mac, %ip, "DHCPRELEASE for an unknown lease ignored")
                    }
                    Err(e) => tracing::error!("storing a released lease failed: {e}"),
                }
                None
            }
            MessageType::Inform => {
                // RFC 2131 §3.4: configuration only; no lease time, no yiaddr.
                let mut r = Self::base(req, MessageType::Ack, s.server);
                r.set_ciaddr(req.msg.ciaddr());
                self.add_network(&mut r, s, None, None);
                self.add_boot(&mut r, req, s);
                let dest = Self::dest(req, ctx, false, &mut r);
                Some(DhcpReply { msg: r, dest })
            }
            _ => None,
        }
    }

    /// The DHCPOFFER of `ip` to the client of `req` (RFC 2131 §4.3.1).
    fn offer(&self, s: &Subnet, req: &DhcpRequest, ctx: &RecvContext, ip: Ipv4Addr) -> DhcpReply {
        let mut r = Self::base(req, MessageType::Offer, s.server);
        r.set_yiaddr(ip);
        let host = Self::reserved_host(s, req.mac);
        self.add_network(&mut r, s, Some(s.cfg.lease_time_secs), host.as_deref());
        self.add_boot(&mut r, req, s);
        let dest = Self::dest(req, ctx, false, &mut r);
        DhcpReply { msg: r, dest }
    }

    async fn request(&self, s: &Subnet, req: &DhcpRequest, ctx: &RecvContext, now: u64) -> Option<DhcpReply> {
        let mac = req.mac;
        let ciaddr = req.msg.ciaddr();
        let (ip, state) = match (req.server_id, req.requested_ip) {
            (Some(id), _) if id != s.server => {
                // SELECTING another server's offer: free ours.
                self.leases.lock().await.drop_offer(mac);
                return None;
            }
            (Some(_), Some(ip)) => (ip, "selecting"),
            (Some(_), None) if !ciaddr.is_unspecified() => (ciaddr, "selecting"),
            (Some(_), None) => return None,
            (None, Some(ip)) => (ip, "init-reboot"),
            (None, None) if !ciaddr.is_unspecified() => (ciaddr, "renewing"),
            (None, None) => return None,
        };
        let mut db = self.leases.lock().await;
        if state == "renewing" && !s.net.contains(&ip) {
            // Not one of ours: stay silent (another server may own it).
            return None;
        }
        let acceptable = s.is_host(ip) && s.allowed(ip, mac) && db.free_for(ip, mac, now);
        // RENEWING/REBINDING and INIT-REBOOT for an address that is free and allowed are
        // acknowledged even without a record (the store may have been reset): Bootlane
        // is authoritative for its configured subnets (RFC 2131 §4.3.2).
        if !acceptable {
            drop(db);
            tracing::info!(%mac, %ip, state, "DHCPNAK: address not available to this client");
            let mut r = Self::base(req, MessageType::Nak, s.server);
            r.set_flags(req.msg.flags());
            let dest = Self::dest(req, ctx, true, &mut r);
            return Some(DhcpReply { msg: r, dest });
        }
        let hostname = Self::reserved_host(s, mac).or_else(|| req.hostname.clone());
        if !db.store_reachable() {
            return self.degraded_ack(s, req, ctx, &db, ip, state, now);
        }
        let lease = Lease {
            id: 0,
            mac: mac.to_string(),
            ip,
            subnet: s.key.clone(),
            hostname: hostname.clone(),
            arch: req.class.arch,
            expires_at: now + u64::from(s.cfg.lease_time_secs),
            declined: false,
        };
        match db.bind(lease, mac).await {
            Ok(_) => {}
            Err(bootlane_core::store::StoreError::Conflict(why)) => {
                // Another node leased it first; the index now shows that lease.
                drop(db);
                tracing::info!(%mac, %ip, state, "DHCPNAK: {why}");
                let mut r = Self::base(req, MessageType::Nak, s.server);
                r.set_flags(req.msg.flags());
                let dest = Self::dest(req, ctx, true, &mut r);
                return Some(DhcpReply { msg: r, dest });
            }
            Err(e) => {
                // Never acknowledge a lease that is not on disk.
                tracing::error!(%mac, %ip, "storing the lease failed, not acknowledging: {e}");
                return None;
            }
        }
        drop(db);
        let mut r = Self::base(req, MessageType::Ack, s.server);
        r.set_yiaddr(ip);
        r.set_ciaddr(ciaddr);
        let host = Self::reserved_host(s, mac);
        self.add_network(&mut r, s, Some(s.cfg.lease_time_secs), host.as_deref());
        self.add_boot(&mut r, req, s);
        tracing::info!(%mac, %ip, state, "DHCPACK");
        self.lease_event(
            if state == "renewing" {
                EventKind::DhcpLeaseRenewed
            } else {
                EventKind::DhcpLeaseGranted
            },
            mac,
            ip,
            &DhcpLeaseBound {
                mac: mac.to_string(),
                ip,
                subnet: s.key.clone(),
                hostname,
                lease_time_secs: s.cfg.lease_time_secs,
                state: state.to_string(),
            },
        );
        let dest = Self::dest(req, ctx, false, &mut r);
        Some(DhcpReply { msg: r, dest })
    }

    /// The DHCPACK of a node that cannot reach the shared store: a client renewing the
    /// lease this node knows it holds gets it for the time the stored lease still runs
    /// (nothing to write, so nothing can collide: RFC 2131 §4.3.2 lets the server choose
    /// the lease time); any other request goes unanswered (not NAKed: the database may
    /// well hold that lease).
    #[allow(clippy::too_many_arguments)]
    fn degraded_ack(
        &self,
        s: &Subnet,
        req: &DhcpRequest,
        ctx: &RecvContext,
        db: &LeaseDb,
        ip: Ipv4Addr,
        state: &str,
        now: u64,
    ) -> Option<DhcpReply> {
        let mac = req.mac;
        let Some(left) = db.held(&(s.key.clone(), mac), ip, now) else {
            tracing::debug!(%mac, %ip, state, "no DHCPACK while the shared store is unreachable: not a lease this node knows");
            return None;
        };
        let left = u32::try_from(left).unwrap_or(u32::MAX).min(s.cfg.lease_time_secs);
        let mut r = Self::base(req, MessageType::Ack, s.server);
        r.set_yiaddr(ip);
        r.set_ciaddr(req.msg.ciaddr());
        let host = Self::reserved_host(s, mac);
        self.add_network(&mut r, s, Some(left), host.as_deref());
        self.add_boot(&mut r, req, s);
        tracing::info!(%mac, %ip, state, left, "DHCPACK from the held lease (shared store unreachable)");
        self.lease_event(
            EventKind::DhcpLeaseRenewed,
            mac,
            ip,
            &DhcpLeaseHeld {
                mac: mac.to_string(),
                ip,
                subnet: s.key.clone(),
                lease_time_secs: left,
                state: state.to_string(),
                degraded: true,
            },
        );
        let dest = Self::dest(req, ctx, false, &mut r);
        Some(DhcpReply { msg: r, dest })
    }

    fn proxy_mode(&self, s: &Subnet, req: &DhcpRequest, ctx: &RecvContext) -> Option<DhcpReply> {
        if !req.class.pxe {
            return None;
        }
        let kind = match (req.kind, ctx.port) {
            (MessageType::Discover, 67) => MessageType::Offer,
            (MessageType::Request, 4011) | (MessageType::Inform, 4011) => MessageType::Ack,
            // A REQUEST on 67 is for the real DHCP server unless it names us.
            (MessageType::Request, 67) if req.server_id == Some(s.server) => MessageType::Ack,
            _ => return None,
        };
        let mut r = Self::base(req, kind, s.server);
        if !self.add_boot(&mut r, req, s) {
            return None;
        }
        tracing::info!(mac = %req.mac, port = ctx.port, ?kind, "proxyDHCP reply");
        let dest = Self::dest(req, ctx, false, &mut r);
        Some(DhcpReply { msg: r, dest })
    }
}

impl BootHandler {
    async fn dispatch(&self, req: &DhcpRequest, ctx: &RecvContext) -> Option<DhcpReply> {
        let subnets = self.subnets();
        let s = Self::select_subnet(&subnets, req, ctx)?;
        match s.cfg.mode {
            SubnetMode::Server if ctx.port == 67 => self.server_mode(s, req, ctx).await,
            SubnetMode::Proxy => self.proxy_mode(s, req, ctx),
            _ => None,
        }
    }
}

impl DhcpHandler for BootHandler {
    async fn commit(&self) -> Committed {
        // The flush runs without the lease lock: other interfaces' requests and the API
        // go on meanwhile (their writes may land in this flush too, which only makes them
        // durable sooner).
        let (table, refused) = {
            let mut db = self.leases.lock().await;
            match db.begin_commit().await {
                Ok(t) => (t, db.take_refused()),
                Err(e) => {
                    tracing::error!("storing DHCP leases failed; this batch's DHCPACKs are not sent: {e}");
                    return Committed::NoAcks;
                }
            }
        };
        if let Some(table) = table {
            if let Err(e) = table.flush().await {
                self.leases.lock().await.commit_failed();
                tracing::error!("flushing DHCP leases failed; this batch's DHCPACKs are not sent: {e}");
                return Committed::NoAcks;
            }
        }
        if refused.is_empty() {
            Committed::All
        } else {
            Committed::AllBut(refused)
        }
    }

    async fn handle(&self, req: DhcpRequest, ctx: RecvContext) -> Option<DhcpReply> {
        if req.mac == DOCTOR_MAC && ctx.port == 67 {
            return None;
        }
        let giaddr = req.msg.giaddr();
        if let Some(log) = self.relays.as_ref().filter(|_| !giaddr.is_unspecified()) {
            let subnets = self.subnets();
            let s = subnets.iter().find(|s| s.net.contains(&giaddr));
            log.saw(giaddr, s.map(|s| s.key.as_str()), now_secs());
        }
        if let Some(gate) = self.access.as_ref().filter(|g| g.enforcing()) {
            if !self.admitted(gate, &req, &ctx) {
                count(req.kind, None);
                return None;
            }
        }
        let reply = self.dispatch(&req, &ctx).await;
        count(req.kind, reply.as_ref());
        if let Some(t) = &self.tracer {
            super::trace::offer(t, super::trace::seen(&req, &ctx, reply.as_ref()));
        }
        reply
    }
}

/// Lower-case label of a DHCP message type (option 53) for metrics.
pub fn type_label(kind: MessageType) -> &'static str {
    match kind {
        MessageType::Discover => "discover",
        MessageType::Offer => "offer",
        MessageType::Request => "request",
        MessageType::Decline => "decline",
        MessageType::Ack => "ack",
        MessageType::Nak => "nak",
        MessageType::Release => "release",
        MessageType::Inform => "inform",
        _ => "other",
    }
}

/// Counts one handled message ([`bootlane_core::metrics::DHCP_MESSAGES`]) and its reply
/// ([`bootlane_core::metrics::DHCP_REPLIES`]).
fn count(kind: MessageType, reply: Option<&DhcpReply>) {
    let reply_kind = reply.and_then(|r| r.msg.opts().msg_type());
    let outcome = match (reply_kind, kind) {
        (Some(MessageType::Offer), _) => "offered",
        (Some(MessageType::Ack), _) => "acked",
        (Some(MessageType::Nak), _) => "naked",
        (Some(_), _) => "replied",
        // RFC 2131 §4.3.3/§4.3.4: DECLINE and RELEASE never get a reply.
        (None, MessageType::Decline | MessageType::Release) => "no_reply_due",
        (None, _) => "ignored",
    };
    metrics::counter!(bootlane_core::metrics::DHCP_MESSAGES, "type" => type_label(kind), "outcome" => outcome)
        .increment(1);
    if let Some(k) = reply_kind {
        metrics::counter!(bootlane_core::metrics::DHCP_REPLIES, "type" => type_label(k)).increment(1);
    }
}
