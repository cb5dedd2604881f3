//! Live DHCPv6 administration (`[dhcp]` and `/services/dhcp` also hold IPv6 subnets):
//! the IPv6 half of [`DhcpControl`](crate::dhcp::control::DhcpControl), which owns one
//! [`Dhcp6Control`] and delegates to it.
//!
//! - `PUT /services/dhcp` `subnets6` entries change a `[[dhcp.subnets6]]` subnet: pool,
//!   DNS servers and lease time apply live; `mode`, `interface` and `server_address` need
//!   new sockets (the caller restarts the service).
//! - `GET /leases6`, `DELETE /leases6/{duid}` and `POST /leases/prune` work on the lease
//!   database the handler allocates from.
//!
//! State: the stored overrides (cached), the lease database, the server DUID.

use std::{collections::BTreeMap, net::Ipv6Addr, sync::Arc};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::leases::{Lease6, Lease6Db};
use crate::dhcp::{
    config::{Subnet6Config, SubnetMode},
    leases::now_secs,
    settings::{Subnet6Settings, Subnets6},
};
use bootlane_core::{
    service_error::ServiceError,
    settings::{Change, Layer, Source},
    store::Store,
};

type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// One IPv6 subnet in `PUT /services/dhcp` (`subnets6`): `prefix` names a subnet of the
/// configuration file; the other fields change it. A GET answer can be PUT back.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Subnet6Patch {
    /// The prefix, as in the configuration file (e.g. `fd00:77::/64`).
    pub prefix: String,
    /// First pool address (server mode; live).
    #[schema(value_type = Option<String>)]
    pub range_start: Option<Ipv6Addr>,
    /// Last pool address (server mode; live).
    #[schema(value_type = Option<String>)]
    pub range_end: Option<Ipv6Addr>,
    /// DNS servers (option 23; live).
    #[schema(value_type = Option<Vec<String>>)]
    pub dns: Option<Vec<Ipv6Addr>>,
    /// Valid lifetime in seconds, at least 60 (live).
    pub lease_time_secs: Option<u32>,
    /// `server`, `proxy` or `off` (restarts the service).
    pub mode: Option<SubnetMode>,
    /// The interface (restarts the service).
    pub interface: Option<String>,
    /// Bootlane's address on the link (restarts the service).
    #[schema(value_type = Option<String>)]
    pub server_address: Option<Ipv6Addr>,
    /// Read-only, ignored.
    pub server: Option<serde_json::Value>,
}

/// An IPv6 subnet as `GET /services/dhcp` shows it (`subnets6`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Subnet6View {
    /// `server`, `proxy` or `off`.
    pub mode: SubnetMode,
    /// Interface.
    pub interface: String,
    /// The prefix.
    pub prefix: String,
    /// First pool address.
    #[schema(value_type = Option<String>)]
    pub range_start: Option<Ipv6Addr>,
    /// Last pool address.
    #[schema(value_type = Option<String>)]
    pub range_end: Option<Ipv6Addr>,
    /// DNS servers handed out (`null`: Bootlane's own address).
    #[schema(value_type = Option<Vec<String>>)]
    pub dns: Option<Vec<Ipv6Addr>>,
    /// Valid lifetime in seconds.
    pub lease_time_secs: u32,
    /// Configured server address (`null`: from the interface).
    #[schema(value_type = Option<String>)]
    pub server_address: Option<Ipv6Addr>,
    /// The server address in use (when DHCP runs).
    #[schema(value_type = Option<String>)]
    pub server: Option<Ipv6Addr>,
}

/// The IPv6 half of the live DHCP administration.
pub struct Dhcp6Control {
    base: Vec<Subnet6Config>,
    subnets: Layer<Subnets6>,
    leases: Arc<tokio::sync::Mutex<Lease6Db>>,
    duid: Vec<u8>,
}

use crate::dhcp::settings::key6 as key_of;

impl Dhcp6Control {
    /// Opens the server DUID and the DHCPv6 leases; `subnets` is the settings layer of the
    /// IPv6 subnets ([`crate::dhcp::settings::DhcpLayers`]).
    ///
    /// # Errors
    /// Store errors.
    pub async fn open(store: &Store, base: &[Subnet6Config], subnets: Layer<Subnets6>) -> Result<Self> {
        let kv = store.kv(crate::dhcp::control::SETTINGS_TREE)?;
        Ok(Self {
            base: base.to_vec(),
            subnets,
            duid: super::server_duid(&kv).await?,
            leases: Arc::new(tokio::sync::Mutex::new(Lease6Db::load(store).await?)),
        })
    }

    /// The server DUID (Server Identifier, option 2).
    pub fn duid(&self) -> &[u8] {
        &self.duid
    }

    /// Applies other nodes' DHCPv6 lease writes: these ids, or all leases when `ids` is
    /// `None`.
    ///
    /// # Errors
    /// Store errors reading the mirror.
    pub async fn follow_leases(&self, ids: Option<Vec<u64>>) -> Result<()> {
        let mut db = self.leases.lock().await;
        match ids {
            Some(ids) => db.follow(ids)?,
            None => db.reload()?,
        }
        Ok(())
    }

    /// The lease database (shared with the handler).
    pub fn leases(&self) -> Arc<tokio::sync::Mutex<Lease6Db>> {
        self.leases.clone()
    }

    fn effective_with(&self, settings: &Subnets6) -> Vec<Subnet6Config> {
        self.base
            .iter()
            .map(|s| {
                let mut c = s.clone();
                if let Some(o) = settings.0.get(&key_of(s)) {
                    o.apply_to(&mut c);
                }
                c
            })
            .collect()
    }

    /// Where each IPv6 subnet setting's value came from (`<prefix>.<setting>` keys).
    pub fn sources(&self) -> BTreeMap<String, Source> {
        self.subnets.sources()
    }

    /// The effective IPv6 subnets: the file's with stored overrides.
    pub fn effective(&self) -> Vec<Subnet6Config> {
        self.effective_with(&self.subnets.get())
    }

    /// True when any effective IPv6 subnet is in `server` or `proxy` mode.
    pub fn any_active(&self) -> bool {
        self.effective().iter().any(|s| s.mode != SubnetMode::Off)
    }

    /// The `subnets6` of `GET /services/dhcp`; `running`: the server address each subnet
    /// is served with, by key, while DHCP runs.
    pub fn views(&self, running: Option<&BTreeMap<String, Ipv6Addr>>) -> Vec<Subnet6View> {
        self.effective()
            .into_iter()
            .map(|c| {
                let key = key_of(&c);
                Subnet6View {
                    mode: c.mode,
                    interface: c.interface.clone(),
                    prefix: c.prefix.to_string(),
                    range_start: c.range_start,
                    range_end: c.range_end,
                    dns: c.dns.clone(),
                    lease_time_secs: c.lease_time_secs,
                    server_address: c.server_address,
                    server: running.and_then(|r| r.get(&key).copied()),
                }
            })
            .collect()
    }

    /// The IPv6 subnets' settings with `patches` applied (not checked nor stored: see
    /// [`Dhcp6Control::set`]).
    ///
    /// # Errors
    /// Invalid: a prefix not in the configuration file, a bad interface name.
    pub fn patched(&self, patches: Vec<Subnet6Patch>) -> Result<Subnets6> {
        let mut next = self.subnets.get();
        for p in patches {
            let want = p.prefix.trim();
            let Some(base) = self
                .base
                .iter()
                .find(|s| key_of(s) == want || s.prefix.to_string() == want)
            else {
                return Err(ServiceError::Invalid(format!(
                    "IPv6 subnet {want:?} is not in the configuration file; adding or removing subnets needs a \
                     [[dhcp.subnets6]] entry and a restart"
                )));
            };
            let o = next.0.entry(key_of(base)).or_insert_with(|| Subnet6Settings::of(base));
            if let Some(m) = p.mode {
                o.mode = m;
            }
            if let Some(i) = &p.interface {
                o.interface = crate::dhcp::control::interface_name(i, &format!("IPv6 subnet {want}"))?.to_string();
            }
            if p.server_address.is_some() {
                o.server_address = p.server_address;
            }
            o.range_start = p.range_start.or(o.range_start);
            o.range_end = p.range_end.or(o.range_end);
            if p.dns.is_some() {
                o.dns = p.dns;
            }
            o.lease_time_secs = p.lease_time_secs.unwrap_or(o.lease_time_secs);
        }
        Ok(next)
    }

    /// Validates and stores the IPv6 subnets' settings through their settings layer (the
    /// caller publishes the effective settings and restarts the service when the answer
    /// names it).
    ///
    /// # Errors
    /// Invalid (every problem, each naming the subnet), store errors.
    pub async fn set(&self, next: Subnets6) -> Result<Change<Subnets6>> {
        self.subnets.set(next).await
    }

    /// Every DHCPv6 lease, in id order.
    pub async fn all_leases(&self) -> Vec<Lease6> {
        let mut v: Vec<Lease6> = self.leases.lock().await.all().cloned().collect();
        v.sort_by_key(|l| l.id);
        v
    }

    /// Deletes every lease of the client `duid` (hex, any case, `:` or `-` separators
    /// allowed). Returns them (empty: none).
    ///
    /// # Errors
    /// Invalid DUID, store errors.
    pub async fn delete_leases(&self, duid: &str) -> Result<Vec<Lease6>> {
        let d: String = duid
            .chars()
            .filter(|c| !matches!(c, ':' | '-'))
            .collect::<String>()
            .to_ascii_lowercase();
        if d.is_empty() || !d.len().is_multiple_of(2) || d.len() > 260 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ServiceError::Invalid(format!(
                "{duid:?} is not a DUID: give its bytes in hex, e.g. 000401020304..."
            )));
        }
        Ok(self.leases.lock().await.remove_duid(&d).await?)
    }

    /// Deletes expired DHCPv6 leases and declines. Returns how many.
    ///
    /// # Errors
    /// Store errors.
    pub async fn prune(&self) -> Result<usize> {
        Ok(self.leases.lock().await.prune(now_secs()).await?)
    }

    /// Per active IPv6 subnet: `(prefix, mode, pool size, active leases)`; the size
    /// saturates at `u64::MAX`.
    pub async fn stats(&self) -> Vec<(String, SubnetMode, u64, u64)> {
        let now = now_secs();
        let leases = self.all_leases().await;
        self.effective()
            .iter()
            .filter(|c| c.mode != SubnetMode::Off)
            .map(|c| {
                let key = key_of(c);
                let size = match (c.mode, c.range_start, c.range_end) {
                    (SubnetMode::Server, Some(a), Some(b)) => {
                        u64::try_from(u128::from(b) - u128::from(a) + 1).unwrap_or(u64::MAX)
                    }
                    _ => 0,
                };
                let used = leases.iter().filter(|l| l.subnet == key && l.active(now)).count() as u64;
                (key, c.mode, size, used)
            })
            .collect()
    }
}
