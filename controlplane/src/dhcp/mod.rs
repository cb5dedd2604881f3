//! The DHCP server (issue 4): per-subnet `server` mode (RFC 2131 leases with
//! reservations, persisted in the store), `proxy` mode (PXE proxyDHCP on 67 and 4011)
//! and `off`; PXE boot options chosen by client architecture (RFC 4578) with the iPXE
//! chain-load loop broken by handing iPXE its script URL.
//!
//! Layout: [`config`] (the `[dhcp]` section), [`packet`] (wire format and client
//! classification), [`handler`] (pure request → reply logic), [`leases`] (the lease
//! table), [`server`] (sockets and receive loops). [`DhcpService::start`] ties them
//! together for `run()`. Nothing starts when no subnet is active (the default).

pub mod config;
pub mod control;
pub mod handler;
pub mod leases;
pub mod packet;
pub mod server;

use std::{collections::BTreeSet, sync::Arc};

use tokio_util::sync::CancellationToken;

use self::{
    config::SubnetMode,
    control::DhcpControl,
    handler::{BootHandler, Subnet},
    server::Server,
};
use crate::config::Config;

/// The running DHCP service.
pub struct DhcpService {
    /// The handler (leases can be read from it).
    pub handler: Arc<BootHandler>,
    server: Server<BootHandler>,
}

impl DhcpService {
    /// Resolves the active subnets, loads the leases and binds one socket per interface
    /// on port 67 (plus 4011 on interfaces with a proxy subnet). Returns `None` when no
    /// subnet is active.
    ///
    /// `domain` yields the DNS local domain sent as option 15 (read per reply). The
    /// effective subnets, architecture map and the lease database come from `control`
    /// (the API's live administration), which is attached to the handler so later API
    /// changes apply at once.
    ///
    /// # Errors
    /// A subnet without a usable server address, store errors, bind errors (port in use,
    /// missing privileges, unknown interface).
    pub async fn start(
        config: &Config,
        control: &Arc<DhcpControl>,
        domain: Box<dyn Fn() -> String + Send + Sync>,
        token: CancellationToken,
    ) -> anyhow::Result<Option<Self>> {
        if !config.dhcp.any_active() {
            tracing::info!("DHCP off (no [[dhcp.subnets]] in server or proxy mode)");
            return Ok(None);
        }
        let ifaddrs = crate::net::interface_addrs();
        let subnets = control
            .effective_subnets()?
            .iter()
            .filter(|s| s.mode != SubnetMode::Off)
            .map(|s| Subnet::resolve(s, &ifaddrs))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let handler = Arc::new(BootHandler::new_shared(
            subnets,
            control.arch_map(),
            config.api.listen.port(),
            domain,
            control.leases(),
        ));
        let mut server = Server::new(handler.clone(), token);
        let subnets = handler.subnets();
        let ifaces: BTreeSet<&str> = subnets.iter().map(|s| s.cfg.interface.as_str()).collect();
        for iface in ifaces {
            let sock = server::bind_socket(iface, 67)?;
            server.register_socket(sock, iface)?;
            let proxy = subnets
                .iter()
                .any(|s| s.cfg.interface == iface && s.cfg.mode == SubnetMode::Proxy);
            if proxy {
                let sock = server::bind_socket(iface, 4011)?;
                server.register_socket(sock, iface)?;
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
        control.attach(handler.clone());
        Ok(Some(Self { handler, server }))
    }

    /// Stops the receive loops and waits for them.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

#[cfg(test)]
mod tests;
