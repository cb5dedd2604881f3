//! The DHCP server: per-subnet `server` mode (RFC 2131 leases with reservations,
//! persisted in the store), `proxy` mode (PXE proxyDHCP on 67 and 4011) and `off`;
//! PXE boot options chosen by client architecture (RFC 4578) with the iPXE chain-load
//! loop broken by handing iPXE its script URL.
//!
//! Layout: [`config`] (the `[dhcp]` section), [`packet`] (wire format and client
//! classification), [`handler`] (pure request → reply logic), [`leases`] (the lease
//! table), [`server`] (sockets and receive loops), [`v6`] (DHCPv6 on the
//! `[[dhcp.subnets6]]` links). [`DhcpService::start`] ties them together for `run()`.
//! Nothing starts when no subnet is active (the default).

pub mod config;
pub mod control;
pub mod handler;
pub use bootlane_core::leases;
pub mod packet;
pub mod relays;
pub mod server;
pub mod settings;
pub mod trace;
pub mod v6;

use std::{collections::BTreeSet, sync::Arc};

use tokio_util::sync::CancellationToken;

use self::{
    config::SubnetMode,
    control::DhcpControl,
    handler::{BootHandler, Subnet},
    server::Server,
};
use bootlane_core::events::{DhcpLeaseEnded, EventKind, NewEvent};

/// The running DHCP service.
pub struct DhcpService {
    /// The handler (leases can be read from it).
    pub handler: Arc<BootHandler>,
    server: Server<BootHandler>,
    expiry: tokio::task::JoinHandle<()>,
    /// The DHCPv6 handler, when an IPv6 subnet is active.
    pub handler6: Option<Arc<v6::handler::Dhcp6Handler>>,
    loops6: Vec<tokio::task::JoinHandle<()>>,
    /// Where it listens (`interface:port`).
    pub listen: Vec<String>,
}

/// Provider of the DNS local domain sent as option 15 (read per reply).
pub type DomainFn = Arc<dyn Fn() -> String + Send + Sync>;

impl DhcpService {
    /// Resolves the active subnets, loads the leases and binds one socket per interface
    /// on port 67 (plus 4011 on interfaces with a proxy subnet). Returns `None` when no
    /// subnet is active.
    ///
    /// `domain` yields the DNS local domain sent as option 15 (read per reply). The
    /// effective subnets, architecture map and the lease database come from `control`
    /// (the API's live administration); the handlers follow its published settings
    /// ([`DhcpControl::subscribe`]), so later API changes apply from the next request, and
    /// the service reports the server addresses it serves with ([`DhcpControl::set_running`]).
    ///
    /// # Errors
    /// A subnet without a usable server address, store errors, bind errors (port in use,
    /// missing privileges, unknown interface).
    pub async fn start(
        control: &Arc<DhcpControl>,
        http_port: u16,
        http_base: bootlane_boot::boot::netboot::Netboot,
        domain: DomainFn,
        token: CancellationToken,
        access: Arc<bootlane_boot::access::gate::AccessGate>,
        secure_boot: handler::SecureBootHosts,
    ) -> anyhow::Result<Option<Self>> {
        if !control.any_active()? {
            tracing::info!("DHCP off (no [[dhcp.subnets]] or [[dhcp.subnets6]] in server or proxy mode)");
            return Ok(None);
        }
        let ifaddrs = bootlane_core::net::interface_addrs();
        let subnets = control
            .effective_subnets()?
            .iter()
            .filter(|s| s.mode != SubnetMode::Off)
            .map(|s| Subnet::resolve(s, &ifaddrs))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let handler = Arc::new(
            BootHandler::new_shared(
                subnets,
                control.arch_map(),
                http_port,
                Box::new(move || domain()),
                control.leases(),
            )
            .with_events(control.events().clone())
            .with_http_base(http_base.clone())
            .with_access(access.clone())
            .with_secure_boot(secure_boot.clone())
            .with_relays(control.relays().clone())
            .with_tracer(control.tracer())
            .following(control.subscribe()),
        );
        let subnets6 = control
            .v6()
            .effective()
            .iter()
            .filter(|s| s.mode != SubnetMode::Off)
            .map(|s| v6::handler::Subnet6::resolve(s, &ifaddrs))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let (handler6, loops6, listen6) = if subnets6.is_empty() {
            (None, Vec::new(), Vec::new())
        } else {
            let h = Arc::new(
                v6::handler::Dhcp6Handler::new(
                    subnets6,
                    control.arch_map(),
                    http_port,
                    control.v6().duid().to_vec(),
                    control.v6().leases(),
                )
                .with_events(control.events().clone())
                .with_http_base(http_base.clone())
                .with_access(access.clone())
                .with_secure_boot(secure_boot.clone())
                .following(control.subscribe()),
            );
            let mut loops = Vec::new();
            let mut listen = Vec::new();
            let ifaces: BTreeSet<String> = h.subnets().iter().map(|s| s.cfg.interface.clone()).collect();
            for iface in ifaces {
                let sock = v6::bind_socket(&iface, v6::SERVER_PORT)?;
                loops.push(v6::spawn_loop(sock, &iface, h.clone(), token.clone())?);
                listen.push(format!("{iface}:[::]:{}", v6::SERVER_PORT));
            }
            for s in h.subnets().iter() {
                tracing::info!(subnet = %s.net, mode = ?s.cfg.mode, interface = %s.cfg.interface, server = %s.server, "DHCPv6 serving");
            }
            (Some(h), loops, listen)
        };
        // Group commit: DHCPACK lease writes are flushed once per receive batch.
        control.leases().lock().await.set_group_commit(true);
        let expiry = tokio::spawn(watch_expiry(control.clone(), token.clone()));
        let mut server = Server::new(handler.clone(), token);
        let mut listen = Vec::new();
        let subnets = handler.subnets();
        let ifaces: BTreeSet<&str> = subnets.iter().map(|s| s.cfg.interface.as_str()).collect();
        for iface in ifaces {
            let sock = server::bind_socket(iface, 67)?;
            server.register_socket(sock, iface)?;
            listen.push(format!("{iface}:67"));
            let proxy = subnets
                .iter()
                .any(|s| s.cfg.interface == iface && s.cfg.mode == SubnetMode::Proxy);
            if proxy {
                let sock = server::bind_socket(iface, 4011)?;
                server.register_socket(sock, iface)?;
                listen.push(format!("{iface}:4011"));
            }
        }
        for s in subnets.iter() {
            tracing::info!(
                subnet = %s.net,
                mode = ?s.cfg.mode,
                interface = %s.cfg.interface,
                server = %s.server,
                "DHCP serving"
            );
        }
        listen.extend(listen6);
        control.set_running(Some(control::RunningServers {
            v4: subnets.iter().map(|s| (s.key.clone(), s.server)).collect(),
            v6: handler6
                .iter()
                .flat_map(|h| {
                    h.subnets()
                        .iter()
                        .map(|s| (s.key.clone(), s.server))
                        .collect::<Vec<_>>()
                })
                .collect(),
        }));
        Ok(Some(Self {
            handler,
            server,
            expiry,
            handler6,
            loops6,
            listen,
        }))
    }

    /// Stops the receive loops and waits for them.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
        {
            let mut db = self.handler.leases_db().lock().await;
            db.set_group_commit(false);
            if let Err(e) = db.commit().await {
                tracing::error!("flushing DHCP leases at stop failed: {e}");
            }
        }
        for l in self.loops6 {
            l.abort();
            let _ = l.await;
        }
        self.expiry.abort();
    }
}

/// Publishes `dhcp.lease.expired` once for each lease whose time ran out while DHCP runs
/// (checked every 10 s; released and declined entries are not leases that expire).
async fn watch_expiry(control: Arc<DhcpControl>, token: CancellationToken) {
    let mut since = leases::now_secs();
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now = leases::now_secs();
        for l in control.all_leases().await {
            if !l.declined && l.expires_at > since && l.expires_at <= now {
                control.events().publish(
                    NewEvent::new(
                        EventKind::DhcpLeaseExpired,
                        format!("DHCP lease {} of {} expired", l.ip, l.mac),
                    )
                    .resource("lease", &l.mac)
                    .with(&DhcpLeaseEnded {
                        mac: l.mac.clone(),
                        ip: l.ip,
                        subnet: l.subnet.clone(),
                    }),
                );
            }
        }
        since = now;
    }
}

/// The DHCP service under the [`Supervisor`](bootlane_core::supervisor::Supervisor): start binds
/// one socket per interface of the effective subnets (file plus stored overrides), so a
/// restart applies a changed mode, interface or server address.
pub struct DhcpUnit {
    control: Arc<DhcpControl>,
    http_port: u16,
    http_base: bootlane_boot::boot::netboot::Netboot,
    domain: DomainFn,
    root: CancellationToken,
    running: tokio::sync::Mutex<Option<DhcpService>>,
    listen: std::sync::Mutex<Option<Vec<String>>>,
    access: Arc<bootlane_boot::access::gate::AccessGate>,
    secure_boot: handler::SecureBootHosts,
}

impl DhcpUnit {
    /// Enforces access control through `gate` (default: a gate that allows everyone).
    pub fn with_access(mut self, gate: Arc<bootlane_boot::access::gate::AccessGate>) -> Self {
        self.access = gate;
        self
    }

    /// Hosts whose x86-64 UEFI boots get the signed shim (default: none).
    pub fn with_secure_boot(mut self, hosts: handler::SecureBootHosts) -> Self {
        self.secure_boot = hosts;
        self
    }

    /// A stopped unit. `http_port` is the API/HTTP-boot port put in iPXE script URLs
    /// unless the netboot settings (`http_base`) name a base URL.
    pub fn new(
        control: Arc<DhcpControl>,
        http_port: u16,
        http_base: bootlane_boot::boot::netboot::Netboot,
        domain: DomainFn,
        root: CancellationToken,
    ) -> Self {
        Self {
            control,
            http_port,
            http_base,
            domain,
            root,
            running: tokio::sync::Mutex::new(None),
            listen: std::sync::Mutex::new(None),
            access: bootlane_boot::access::gate::AccessGate::open_to_all(),
            secure_boot: bootlane_boot::inventory::no_secure_boot_hosts(),
        }
    }
}

impl bootlane_core::supervisor::Service for DhcpUnit {
    fn name(&self) -> &'static str {
        "dhcp"
    }
    fn start(&self) -> futures::future::BoxFuture<'_, anyhow::Result<Vec<String>>> {
        Box::pin(async move {
            let mut running = self.running.lock().await;
            if let Some(r) = running.as_ref() {
                return Ok(r.listen.clone());
            }
            let svc = DhcpService::start(
                &self.control,
                self.http_port,
                self.http_base.clone(),
                self.domain.clone(),
                self.root.child_token(),
                self.access.clone(),
                self.secure_boot.clone(),
            )
            .await?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no DHCP subnet is in server or proxy mode: add a [[dhcp.subnets]] entry or set a subnet's \
                         mode with PUT /api/v1/services/dhcp"
                )
            })?;
            let listen = svc.listen.clone();
            *self.listen.lock().expect("listen lock") = Some(listen.clone());
            *running = Some(svc);
            Ok(listen)
        })
    }
    fn stop(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(svc) = self.running.lock().await.take() {
                svc.shutdown().await;
            }
            self.control.set_running(None);
            *self.listen.lock().expect("listen lock") = None;
        })
    }
    fn default_auto_start(&self) -> bool {
        self.control.any_active().unwrap_or(false)
    }
    fn serving(&self) -> Option<Vec<String>> {
        self.listen.lock().expect("listen lock").clone()
    }
}

#[cfg(test)]
mod tests;
