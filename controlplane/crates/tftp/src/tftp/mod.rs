//! The TFTP server: read-only RFC 1350 with blksize (RFC 2348), tsize and timeout
//! (RFC 2349) and windowsize (RFC 7440), rooted at the boot directory.
//!
//! Implemented here rather than with the `async-tftp` crate: that crate runs on
//! async-std/smol rather than tokio, has no windowsize (RFC 7440) support, and would
//! bring its own path handling where we need the shared [`bootlane_boot::boot::resolve_in_root`]
//! rule. The protocol is small; the parts that need care (block-number wrap, duplicate
//! ACKs, back-off, abandoned probes) are documented in [`server`] and unit-tested.
//!
//! Layout: [`packet`] (wire format), [`handler`] (path and option negotiation, pure),
//! [`server`] (sockets, one task per transfer), [`control`] (live settings for the API).

pub mod control;
pub mod handler;
pub mod packet;
pub mod server;
pub mod session;

use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    sync::Arc,
};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use self::{
    handler::FsHandler,
    server::{Server, TftpLimits},
};

/// `[tftp]`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TftpConfig {
    /// Whether TFTP runs.
    ///
    /// Default: on when a DHCP subnet is in `server` or `proxy` mode.
    pub enabled: Option<bool>,
    /// UDP port.
    pub port: u16,
    /// Listen address; `0.0.0.0` also serves IPv6 on `[::]`.
    pub listen: IpAddr,
    /// The directory served.
    ///
    /// Default: `[boot] root`.
    pub root: Option<PathBuf>,
    /// First retransmission timeout; doubles per retry up to 8 s.
    pub timeout_ms: u64,
    /// Retransmissions before a transfer fails.
    pub retries: u32,
    /// Concurrent transfers; taken before a socket is bound.
    pub max_transfers: usize,
    /// Concurrent transfers to one client address (a PXE client needs one or two).
    pub max_transfers_per_client: usize,
}

impl Default for TftpConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            port: 69,
            listen: IpAddr::from([0, 0, 0, 0]),
            root: None,
            timeout_ms: 1000,
            retries: 5,
            max_transfers: 1024,
            max_transfers_per_client: 16,
        }
    }
}

impl TftpConfig {
    /// Checks the section (port 1-65535).
    ///
    /// # Errors
    /// A message naming the bad key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=65536).contains(&self.max_transfers_per_client) {
            anyhow::bail!("[tftp] max_transfers_per_client must be 1-65536");
        }
        if self.port == 0 {
            anyhow::bail!("[tftp] port must be 1-65535");
        }
        Ok(())
    }
}

/// The running TFTP server.
pub struct TftpService {
    /// The server (its limits can be changed live).
    pub server: Server<FsHandler>,
    /// The bound address.
    pub addr: SocketAddr,
    /// The IPv6 twin `[::]:port` of a `0.0.0.0` listen address, when it could be bound.
    pub also: Option<SocketAddr>,
}

impl TftpService {
    /// Binds `listen:port` and serves `root`.
    ///
    /// # Errors
    /// Bind errors (port in use, missing privileges) with the address in the message.
    pub fn start(
        cfg: &TftpConfig,
        root: PathBuf,
        events: Arc<bootlane_core::events::EventBus>,
        token: CancellationToken,
        access: Arc<bootlane_boot::access::gate::AccessGate>,
    ) -> anyhow::Result<Self> {
        Self::start_with(cfg, root, events, token, access, None)
    }

    /// [`TftpService::start`] answering names missing from `root` from `generated`
    /// (the PXELINUX configurations).
    ///
    /// # Errors
    /// As [`TftpService::start`].
    pub fn start_with(
        cfg: &TftpConfig,
        root: PathBuf,
        events: Arc<bootlane_core::events::EventBus>,
        token: CancellationToken,
        access: Arc<bootlane_boot::access::gate::AccessGate>,
        generated: Option<Arc<dyn handler::GeneratedFiles>>,
    ) -> anyhow::Result<Self> {
        let addr = SocketAddr::new(cfg.listen, cfg.port);
        let sock = std::net::UdpSocket::bind(addr).with_context(|| format!("binding the TFTP socket {addr}"))?;
        let limits = TftpLimits {
            timeout: std::time::Duration::from_millis(cfg.timeout_ms.max(10)),
            retries: cfg.retries,
            max_transfers: cfg.max_transfers,
            max_per_client: cfg.max_transfers_per_client,
            ..TftpLimits::default()
        };
        let handler = FsHandler::new(root.clone()).with_generated(generated);
        let mut server = Server::new(Arc::new(handler), limits, token)
            .with_events(events)
            .with_access(access);
        let addr = server.register_socket(sock)?;
        tracing::info!(%addr, root = %root.display(), "TFTP serving");
        // `0.0.0.0` also serves IPv6 clients, on the same port.
        let mut also = None;
        if let Some(v6) = bootlane_core::net::ipv6_twin(addr) {
            match bootlane_core::net::bind_v6only(v6, socket2::Type::DGRAM) {
                Ok(s) => {
                    let a = server.register_socket(s.into())?;
                    tracing::info!(addr = %a, "TFTP serving over IPv6");
                    also = Some(a);
                }
                Err(e) => tracing::warn!("TFTP: not serving IPv6 on {v6}: {e}"),
            }
        }
        Ok(Self { server, addr, also })
    }

    /// Stops the server.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// The TFTP service under the [`Supervisor`](bootlane_core::supervisor::Supervisor): start binds
/// the effective `listen:port` and serves the effective root (file plus stored
/// overrides, see [`control::TftpControl`]).
pub struct TftpUnit {
    control: Arc<control::TftpControl>,
    root: CancellationToken,
    running: tokio::sync::Mutex<Option<TftpService>>,
    listen: std::sync::Mutex<Option<Vec<String>>>,
    access: Arc<bootlane_boot::access::gate::AccessGate>,
    generated: Option<Arc<dyn handler::GeneratedFiles>>,
}

impl TftpUnit {
    /// Answers names missing from the root from `generated` (the PXELINUX
    /// configurations generated from the profiles).
    pub fn with_generated(mut self, generated: Arc<dyn handler::GeneratedFiles>) -> Self {
        self.generated = Some(generated);
        self
    }

    /// Enforces access control through `gate` (default: a gate that allows everyone).
    pub fn with_access(mut self, gate: Arc<bootlane_boot::access::gate::AccessGate>) -> Self {
        self.access = gate;
        self
    }

    /// A stopped unit.
    pub fn new(control: Arc<control::TftpControl>, root: CancellationToken) -> Self {
        Self {
            control,
            root,
            running: tokio::sync::Mutex::new(None),
            listen: std::sync::Mutex::new(None),
            access: bootlane_boot::access::gate::AccessGate::open_to_all(),
            generated: None,
        }
    }
}

impl bootlane_core::supervisor::Service for TftpUnit {
    fn name(&self) -> &'static str {
        "tftp"
    }
    fn start(&self) -> futures::future::BoxFuture<'_, anyhow::Result<Vec<String>>> {
        Box::pin(async move {
            let mut running = self.running.lock().await;
            if let Some(r) = running.as_ref() {
                return Ok(vec![r.addr.to_string()]);
            }
            let cfg = self.control.effective();
            let root = cfg.root.clone().context("the TFTP root is not resolved")?;
            let token = self.root.child_token();
            let t = TftpService::start_with(
                &cfg,
                root,
                self.control.events().clone(),
                token.clone(),
                self.access.clone(),
                self.generated.clone(),
            )?;
            tokio::spawn(follow_limits(self.control.subscribe(), t.server.limits(), token));
            self.control.set_running(true);
            let listen: Vec<String> = std::iter::once(t.addr).chain(t.also).map(|a| a.to_string()).collect();
            *self.listen.lock().expect("listen lock") = Some(listen.clone());
            *running = Some(t);
            Ok(listen)
        })
    }
    fn stop(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(t) = self.running.lock().await.take() {
                t.shutdown().await;
            }
            self.control.set_running(false);
            *self.listen.lock().expect("listen lock") = None;
        })
    }
    fn default_auto_start(&self) -> bool {
        self.control.enabled()
    }
    fn serving(&self) -> Option<Vec<String>> {
        self.listen.lock().expect("listen lock").clone()
    }
}

/// Keeps a running server's timeout and retries at the published settings until `token`
/// is cancelled (the server stopped); new transfers take them from `limits`.
async fn follow_limits(
    mut settings: tokio::sync::watch::Receiver<control::TftpSettings>,
    limits: tokio::sync::watch::Sender<TftpLimits>,
    token: CancellationToken,
) {
    loop {
        {
            let s = settings.borrow_and_update();
            limits.send_modify(|l| {
                l.timeout = std::time::Duration::from_millis(s.timeout_ms.max(10));
                l.retries = s.retries;
            });
        }
        tokio::select! {
            _ = token.cancelled() => return,
            changed = settings.changed() => if changed.is_err() { return },
        }
    }
}

#[cfg(test)]
mod tests;
