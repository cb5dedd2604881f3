//! Boot-loader configuration files made from the profiles on every request: PXELINUX's
//! `pxelinux.cfg/...` ([`super::pxelinux`]) and GRUB's `grub/grub.cfg...`
//! ([`super::grub`]). One dispatch ([`generate`]) serves both to TFTP
//! ([`BootConfigFiles`], a [`GeneratedFiles`]) and to
//! `GET /boot/...`, asked only for names the boot directory does not hold (a file on disk
//! wins), and one event per file served ([`served_event`]: `boot.pxelinux.served`,
//! `boot.grub.served`).
//!
//! Holds no state of its own.

use std::{net::SocketAddr, sync::Arc};

use super::catalog::BootCatalog;
use bootlane_core::{
    events::{EventBus, EventKind, MenuServed, NewEvent},
    net::types::MacAddr,
    service_error::ServiceError,
};

/// Files made per request rather than read from the boot root (the PXELINUX and GRUB
/// configurations), served by TFTP and HTTP boot alike. Asked only for names the root
/// does not have.
pub trait GeneratedFiles: Send + Sync + 'static {
    /// The bytes of `path` (the client's name for it) for the client at `peer`, or
    /// `None` when there is no such generated file ("file not found").
    fn generate(&self, path: &str, peer: SocketAddr) -> Option<Vec<u8>>;
}

/// The boot loader a generated file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// `pxelinux.0` (BIOS).
    Pxelinux,
    /// Debian's signed network GRUB behind shim (UEFI, Secure Boot).
    Grub,
}

impl Loader {
    /// The kind of the event published when a generated file of this loader is served
    /// (`boot.pxelinux.served`, `boot.grub.served`).
    pub fn served_kind(self) -> EventKind {
        match self {
            Self::Pxelinux => EventKind::BootPxelinuxServed,
            Self::Grub => EventKind::BootGrubServed,
        }
    }

    /// `PXELINUX` or `GRUB`, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Self::Pxelinux => "PXELINUX",
            Self::Grub => "GRUB",
        }
    }
}

/// A generated configuration and who it is for.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The file's text.
    pub text: String,
    /// The profile it came from.
    pub profile: String,
    /// The registered host's name (a per-MAC file of a registered machine).
    pub host: Option<String>,
    /// The MAC of a per-MAC file.
    pub mac: Option<MacAddr>,
    /// The loader it is for.
    pub loader: Loader,
}

/// The generated file for `path` (a PXELINUX or GRUB configuration name), or `None` when
/// Bootlane makes no file of that name. `base_url` replaces `{base_url}` in command lines.
///
/// # Errors
/// Store errors reading hosts and profiles.
pub fn generate(catalog: &BootCatalog, path: &str, base_url: &str) -> Result<Option<Generated>, ServiceError> {
    if super::pxelinux::parse_cfg_path(path).is_some() {
        return super::pxelinux::generate(catalog, path, base_url);
    }
    if super::grub::parse_cfg_path(path).is_some() {
        return super::grub::generate(catalog, path, base_url);
    }
    Ok(None)
}

/// True when `path` is a name [`generate`] may answer (so callers can skip the work for
/// every other missing file).
pub fn is_config_path(path: &str) -> bool {
    super::pxelinux::parse_cfg_path(path).is_some() || super::grub::parse_cfg_path(path).is_some()
}

/// Publishes `boot.pxelinux.served` or `boot.grub.served` for a generated file sent over
/// `protocol` (`tftp`, `http`) to `peer`.
pub fn served_event(events: &EventBus, path: &str, g: &Generated, protocol: &str, peer: Option<std::net::IpAddr>) {
    let who = g.mac.map_or_else(|| "default".to_string(), |m| m.to_string());
    let loader = g.loader.title();
    tracing::info!(file = %path, profile = %g.profile, %protocol, ?peer, "serving the generated {loader} configuration for {who}");
    let mut e = NewEvent::new(
        g.loader.served_kind(),
        format!(
            "{loader} configuration {path} (profile {}) served over {protocol}",
            g.profile
        ),
    )
    .resource("file", path)
    .with(&MenuServed {
        file: path.to_string(),
        mac: g.mac.map(|m| m.to_string()),
        profile: g.profile.clone(),
        host: g.host.clone(),
        protocol: protocol.to_string(),
    });
    if let Some(p) = peer {
        e = e.remote(p);
    }
    events.publish(e);
}

/// The TFTP face of [`generate`]: the base URL in command lines is the netboot
/// `http_base_url` when set, else `http://<the address this server uses towards the
/// client>:<API port>`.
pub struct BootConfigFiles {
    /// Hosts and profiles.
    pub catalog: Arc<BootCatalog>,
    /// The netboot settings (`http_base_url`), read per request.
    pub netboot: crate::boot::netboot::Netboot,
    /// The API (and HTTP boot) port.
    pub http_port: u16,
    /// Where the `served` events go.
    pub events: Arc<EventBus>,
}

/// The local address the kernel would use to reach `peer` (a connected UDP socket sends
/// nothing); `None` when there is no route.
fn local_towards(peer: SocketAddr) -> Option<std::net::IpAddr> {
    let any: SocketAddr = if peer.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = std::net::UdpSocket::bind(any).ok()?;
    s.connect(peer).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

impl GeneratedFiles for BootConfigFiles {
    fn generate(&self, path: &str, peer: SocketAddr) -> Option<Vec<u8>> {
        if !is_config_path(path) {
            return None;
        }
        let base = self.netboot.borrow().http_base_url.clone().unwrap_or_else(|| {
            let ip = local_towards(peer).unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
            format!("http://{}", SocketAddr::new(ip, self.http_port))
        });
        match generate(&self.catalog, path, &base) {
            Ok(Some(g)) => {
                served_event(&self.events, path, &g, "tftp", Some(peer.ip()));
                Some(g.text.into_bytes())
            }
            Ok(None) => None,
            Err(e) => {
                tracing::error!(file = %path, error = %e, "generating a boot-loader configuration failed");
                None
            }
        }
    }
}
