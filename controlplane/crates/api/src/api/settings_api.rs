//! Settings routes (spec "Settings"): `GET/PUT /settings` (the whole tree),
//! `/settings/general`, `/settings/netboot`, `/settings/interfaces`, and the interface
//! listings `GET /interfaces` and `GET /network/interfaces`. Every PUT accepts any subset
//! of its group; unknown keys and bad values are 400s naming the key; the answer says
//! what applied live, which services were restarted, and what waits for the next start.
//! `/settings/logging` lives with the log routes.

use std::{collections::BTreeMap, net::IpAddr, sync::Arc};

use axum::extract::{FromRef, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    auth::Auth,
    error::{ApiError, Result},
    extract::{ApiJson, Envelope},
    AppState,
};
use bootlane_core::{net::InterfaceInfo, supervisor::Supervisor};
use bootlane_dhcp::dhcp::control::{DhcpControl, DhcpSettingsPatch, SubnetPatch};
use bootlane_dns::dns::service::{DnsService, DnsSettingsPatch};
use bootlane_media::settings::{
    Applied, GeneralPatch, GeneralSettings, InterfaceSettings, NetbootPatch, NetbootSettings, Settings, SettingsTree,
};
use bootlane_tftp::tftp::control::{TftpChange, TftpControl};

fn none() -> Applied {
    Applied {
        live: vec![],
        restarted: vec![],
        next_start: vec![],
    }
}

/// A group's values and how the change applied.
#[derive(Debug, Serialize, ToSchema)]
pub struct Changed<T> {
    /// The group's values now.
    pub settings: T,
    /// How the change took effect.
    pub applied: Applied,
}

/// The services the settings groups span (sub-state of [`AppState`]): the whole tree
/// reads and writes through these, nothing else.
#[derive(Clone)]
pub struct SettingsCtx {
    settings: Arc<Settings>,
    supervisor: Arc<Supervisor>,
    auth: Arc<Auth>,
    dns: Arc<DnsService>,
    dhcp: Arc<DhcpControl>,
    tftp: Arc<TftpControl>,
}

impl FromRef<AppState> for SettingsCtx {
    fn from_ref(s: &AppState) -> Self {
        Self {
            settings: s.settings.clone(),
            supervisor: s.supervisor.clone(),
            auth: s.auth.clone(),
            dns: s.dns.clone(),
            dhcp: s.dhcp.clone(),
            tftp: s.tftp.clone(),
        }
    }
}

fn interfaces_of(s: &SettingsCtx) -> Result<InterfaceSettings> {
    let dhcp = s
        .dhcp
        .effective_subnets()?
        .into_iter()
        .map(|c| (c.cidr.trunc().to_string(), c.interface))
        .collect();
    Ok(InterfaceSettings {
        dns: s.dns.settings().listen.iter().map(ToString::to_string).collect(),
        dhcp,
        tftp: s.tftp.effective().listen.to_string(),
    })
}

async fn tree(s: &SettingsCtx) -> Result<SettingsTree> {
    let j = |v: std::result::Result<serde_json::Value, serde_json::Error>| v.unwrap_or_default();
    Ok(SettingsTree {
        general: s.settings.general(),
        interfaces: interfaces_of(s)?,
        netboot: s.settings.netboot(),
        logging: serde_json::json!({ "see": "/api/v1/settings/logging" }),
        dns: j(serde_json::to_value(s.dns.settings())),
        dhcp: j(serde_json::to_value(s.dhcp.settings()?)),
        tftp: j(serde_json::to_value(s.tftp.effective())),
    })
}

/// The whole settings tree.
#[utoipa::path(get, path = "/api/v1/settings", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = SettingsTree), (status = 401)))]
pub async fn get_all(State(s): State<SettingsCtx>) -> Result<Envelope<SettingsTree>> {
    Ok(Envelope::ok(tree(&s).await?))
}

/// Body of `PUT /settings`: any subset of the groups, each as its own PUT takes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TreePatch {
    /// See `PUT /settings/general`.
    #[serde(default, deserialize_with = "super::extract::object_only")]
    pub general: Option<GeneralPatch>,
    /// See `PUT /settings/interfaces`.
    #[serde(default, deserialize_with = "super::extract::object_only")]
    pub interfaces: Option<InterfacesPatch>,
    /// See `PUT /settings/netboot`.
    #[serde(default, deserialize_with = "super::extract::object_only")]
    pub netboot: Option<NetbootPatch>,
    /// See `PUT /services/dns`.
    #[serde(default, deserialize_with = "super::extract::object_only")]
    pub dns: Option<DnsSettingsPatch>,
}

/// Update several groups at once (applied group by group, in the order general,
/// interfaces, netboot, dns; the first invalid group stops the rest).
#[utoipa::path(put, path = "/api/v1/settings", extensions(("x-bootlane-role" = json!("admin"))), tag = "settings", request_body = TreePatch,
    responses((status = 200, body = SettingsTree), (status = 400, description = "Invalid key or value"), (status = 401)))]
pub async fn put_all(State(s): State<SettingsCtx>, ApiJson(p): ApiJson<TreePatch>) -> Result<Envelope<SettingsTree>> {
    if let Some(g) = p.general {
        general(&s, g).await?;
    }
    if let Some(i) = p.interfaces {
        interfaces(&s, i).await?;
    }
    if let Some(n) = p.netboot {
        netboot(&s, n).await?;
    }
    if let Some(d) = p.dns {
        s.dns.apply_settings(d).await?;
    }
    Ok(Envelope::ok(tree(&s).await?))
}

/// General settings.
#[utoipa::path(get, path = "/api/v1/settings/general", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = GeneralSettings), (status = 401)))]
pub async fn get_general(State(s): State<SettingsCtx>) -> Envelope<GeneralSettings> {
    Envelope::ok(s.settings.general())
}

async fn general(s: &SettingsCtx, p: GeneralPatch) -> Result<Changed<GeneralSettings>> {
    let auth = s.auth.clone();
    let (settings, applied) = s
        .settings
        .put_general(p, |t| auth.set_ttl(std::time::Duration::from_secs(t)))
        .await?;
    Ok(Changed { settings, applied })
}

/// Change general settings (any subset).
#[utoipa::path(put, path = "/api/v1/settings/general", extensions(("x-bootlane-role" = json!("admin"))), tag = "settings", request_body = GeneralPatch,
    responses((status = 200, body = Changed<GeneralSettings>), (status = 400, description = "Invalid key or value"), (status = 401)))]
pub async fn put_general(
    State(s): State<SettingsCtx>,
    ApiJson(p): ApiJson<GeneralPatch>,
) -> Result<Envelope<Changed<GeneralSettings>>> {
    Ok(Envelope::ok(general(&s, p).await?))
}

/// Which interfaces and addresses each service uses.
#[utoipa::path(get, path = "/api/v1/settings/interfaces", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = InterfaceSettings), (status = 401)))]
pub async fn get_interfaces(State(s): State<SettingsCtx>) -> Result<Envelope<InterfaceSettings>> {
    Ok(Envelope::ok(interfaces_of(&s)?))
}

/// Body of `PUT /settings/interfaces`: any subset.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InterfacesPatch {
    /// DNS listen addresses (rebinds the DNS server when it runs).
    pub dns: Option<Vec<String>>,
    /// DHCP: subnet (CIDR, as configured) → interface (restarts DHCP when it runs).
    pub dhcp: Option<BTreeMap<String, String>>,
    /// TFTP listen address (restarts TFTP when it runs).
    pub tftp: Option<String>,
}

async fn interfaces(s: &SettingsCtx, p: InterfacesPatch) -> Result<Changed<InterfaceSettings>> {
    let mut applied = none();
    if let Some(listen) = p.dns {
        s.dns
            .apply_settings(DnsSettingsPatch {
                listen: Some(listen),
                ..Default::default()
            })
            .await?;
        applied.live.push("dns".into());
    }
    if let Some(map) = p.dhcp {
        let subnets = map
            .into_iter()
            .map(|(cidr, interface)| SubnetPatch {
                cidr,
                interface: Some(interface),
                ..SubnetPatch::default()
            })
            .collect();
        let (_, restart) = s
            .dhcp
            .update_settings(DhcpSettingsPatch {
                subnets,
                subnets6: Vec::new(),
                running: None,
                applied: None,
            })
            .await?;
        if restart && s.supervisor.restart_if_running("dhcp").await? {
            applied.restarted.push("dhcp".into());
        } else if restart {
            applied.next_start.push("dhcp".into());
        }
    }
    if let Some(l) = p.tftp {
        let ip: IpAddr = l
            .trim()
            .parse()
            .map_err(|_| ApiError::BadRequest(format!("'tftp' {l:?} is not an IP address such as 0.0.0.0")))?;
        let (_, restart) = s
            .tftp
            .set(TftpChange {
                listen: Some(ip),
                ..Default::default()
            })
            .await?;
        if restart && s.supervisor.restart_if_running("tftp").await? {
            applied.restarted.push("tftp".into());
        } else if restart {
            applied.next_start.push("tftp".into());
        }
    }
    Ok(Changed {
        settings: interfaces_of(s)?,
        applied,
    })
}

/// Change the interfaces services use; services whose sockets change are restarted.
#[utoipa::path(put, path = "/api/v1/settings/interfaces", extensions(("x-bootlane-role" = json!("admin"))), tag = "settings", request_body = InterfacesPatch,
    responses((status = 200, body = Changed<InterfaceSettings>), (status = 400, description = "Invalid key or value"), (status = 401)))]
pub async fn put_interfaces(
    State(s): State<SettingsCtx>,
    ApiJson(p): ApiJson<InterfacesPatch>,
) -> Result<Envelope<Changed<InterfaceSettings>>> {
    Ok(Envelope::ok(interfaces(&s, p).await?))
}

/// Netboot settings.
#[utoipa::path(get, path = "/api/v1/settings/netboot", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = NetbootSettings), (status = 401)))]
pub async fn get_netboot(State(s): State<SettingsCtx>) -> Envelope<NetbootSettings> {
    Envelope::ok(s.settings.netboot())
}

async fn netboot(s: &SettingsCtx, p: NetbootPatch) -> Result<Changed<NetbootSettings>> {
    let base_before = s.settings.http_base_url();
    let (settings, root_changed) = s.settings.put_netboot(p).await?;
    let mut applied = none();
    if settings.http_base_url != base_before {
        applied.live.push("http_base_url (dhcp, http-boot)".into());
    }
    if root_changed {
        applied.live.push("boot_root (http-boot)".into());
        if s.supervisor.restart_if_running("tftp").await? {
            applied.restarted.push("tftp".into());
        }
    }
    Ok(Changed { settings, applied })
}

/// Change netboot settings (the boot root: live for HTTP boot, TFTP restarted; the HTTP
/// base URL: live for DHCP answers and iPXE scripts).
#[utoipa::path(put, path = "/api/v1/settings/netboot", extensions(("x-bootlane-role" = json!("admin"))), tag = "settings", request_body = NetbootPatch,
    responses((status = 200, body = Changed<NetbootSettings>), (status = 400, description = "Invalid key or value"), (status = 401)))]
pub async fn put_netboot(
    State(s): State<SettingsCtx>,
    ApiJson(p): ApiJson<NetbootPatch>,
) -> Result<Envelope<Changed<NetbootSettings>>> {
    Ok(Envelope::ok(netboot(&s, p).await?))
}

fn interface_list(s: &SettingsCtx) -> Vec<InterfaceInfo> {
    let xdp = s.dns.dataplane().status();
    let services = s.supervisor.list();
    let dns_listen: Vec<IpAddr> = s.dns.bound().iter().map(|a| a.ip()).collect();
    let dhcp = s.dhcp.effective_subnets().unwrap_or_default();
    let tftp = s.tftp.effective().listen;
    let tftp_running = services.iter().any(|x| x.name == "tftp" && !x.listen.is_empty());
    bootlane_core::net::interfaces()
        .into_iter()
        .map(|mut i| {
            let has = |ip: &IpAddr| ip.is_unspecified() || i.addresses.iter().any(|a| a.address == ip.to_string());
            if dns_listen
                .iter()
                .any(|ip| has(ip) && (ip.is_ipv4() || !i.addresses.is_empty()))
            {
                i.services.push("dns".into());
            }
            if s.dhcp.running() && dhcp.iter().any(|c| c.interface == i.name) {
                i.services.push("dhcp".into());
            }
            if tftp_running && has(&tftp) {
                i.services.push("tftp".into());
            }
            i.xdp = xdp
                .interfaces
                .iter()
                .find(|x| x.name == i.name)
                .map(|x| x.attach_mode.clone());
            i
        })
        .collect()
}

/// The host's network interfaces with the services bound there.
#[utoipa::path(get, path = "/api/v1/interfaces", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = Vec<InterfaceInfo>), (status = 401)))]
pub async fn list_interfaces(State(s): State<SettingsCtx>) -> Envelope<Vec<InterfaceInfo>> {
    Envelope::ok(interface_list(&s))
}

/// The same list under the network-diagnostics group.
#[utoipa::path(get, path = "/api/v1/network/interfaces", extensions(("x-bootlane-role" = json!("viewer"))), tag = "settings",
    responses((status = 200, body = Vec<InterfaceInfo>), (status = 401)))]
pub async fn list_network_interfaces(State(s): State<SettingsCtx>) -> Envelope<Vec<InterfaceInfo>> {
    Envelope::ok(interface_list(&s))
}

/// Protected settings routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_all, put_all))
        .routes(routes!(get_general, put_general))
        .routes(routes!(get_interfaces, put_interfaces))
        .routes(routes!(get_netboot, put_netboot))
        .routes(routes!(list_interfaces))
        .routes(routes!(list_network_interfaces))
}
