//! The protocol client behind one trait ([`BmcClient`]): what the service asks of a BMC
//! (power state, a reset, the boot override and its read-back, identity, protocol
//! detection), the connection details ([`Target`], whose `Debug` never shows the
//! password) and the errors ([`BmcError`], each saying what went wrong in words an
//! operator can act on). [`SystemBmc`] is the real client (IPMI through `ipmitool`,
//! Redfish over HTTP); tests put a recording fake (`fake::FakeBmc`, test builds only) in its place so no
//! request leaves the process. No state besides the `ipmitool` path.

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::model::{Identity, PowerState, Protocol};
use bootlane_core::{net::outbound::OutboundConfig, service_error::ServiceError};

/// Where and how to reach one BMC.
#[derive(Clone)]
pub struct Target {
    /// Protocol.
    pub protocol: Protocol,
    /// Host: IP literal (IPv6 without brackets) or host name.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Redfish: HTTPS (true) or plain HTTP. Unused for IPMI.
    pub tls: bool,
    /// User name.
    pub user: String,
    /// Password in clear (only in memory, only for the call).
    pub password: String,
    /// IPMI cipher suite id.
    pub cipher_suite: u8,
    /// Redfish system id; `None`: the first member of `/redfish/v1/Systems`.
    pub system_id: Option<String>,
    /// Redfish: verify the TLS certificate.
    pub verify_tls: bool,
    /// Longest one call may take.
    pub timeout: Duration,
    /// Redfish: the `[outbound]` rules its HTTP requests follow (no loopback or link-local
    /// BMC unless allowed). Unused for IPMI.
    pub outbound: OutboundConfig,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("protocol", &self.protocol)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .finish_non_exhaustive()
    }
}

impl Target {
    /// `host:port` (IPv6 in brackets), for messages and URLs.
    pub fn endpoint(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// `BMC <endpoint> (<protocol>)`, the start of every error message.
    pub fn label(&self) -> String {
        format!("BMC {} ({})", self.endpoint(), self.protocol.as_str())
    }
}

/// Why a BMC call failed. The message is for the API client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BmcError {
    /// Nothing answered in time, or the connection was refused (502).
    #[error("{0}")]
    Unreachable(String),
    /// The BMC refused the user name or password (502).
    #[error("{0}")]
    Auth(String),
    /// The BMC answered with an error (502); the message has the BMC's own words.
    #[error("{0}")]
    Refused(String),
    /// The BMC's answer could not be understood (502).
    #[error("{0}")]
    Protocol(String),
    /// The request cannot be done with this BMC or protocol (400), e.g. a reset type the
    /// BMC does not list.
    #[error("{0}")]
    Unsupported(String),
    /// The local client tool is missing or failed to start (500 class, but reported as
    /// 502 with the fix: install `ipmitool`).
    #[error("{0}")]
    Tool(String),
}

impl From<BmcError> for ServiceError {
    fn from(e: BmcError) -> Self {
        match e {
            BmcError::Unsupported(m) => Self::Invalid(m),
            other => Self::Upstream(other.to_string()),
        }
    }
}

/// A reset (power) request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reset {
    /// Power on (IPMI `power on`, Redfish `On`).
    On,
    /// Hard power off (IPMI `power off`, Redfish `ForceOff`).
    ForceOff,
    /// Ask the OS to shut down (IPMI `power soft`, Redfish `GracefulShutdown`).
    GracefulOff,
    /// Hard restart (IPMI `power cycle`, Redfish `ForceRestart`).
    ForceRestart,
    /// Ask the OS to restart (IPMI has none: `power reset`; Redfish `GracefulRestart`).
    GracefulRestart,
    /// A Redfish `ResetType` given by the caller (checked against the BMC's allowable
    /// values when it lists them).
    Redfish(String),
}

impl Reset {
    /// The Redfish `ResetType`.
    pub fn redfish(&self) -> &str {
        match self {
            Self::On => "On",
            Self::ForceOff => "ForceOff",
            Self::GracefulOff => "GracefulShutdown",
            Self::ForceRestart => "ForceRestart",
            Self::GracefulRestart => "GracefulRestart",
            Self::Redfish(t) => t,
        }
    }

    /// The `ipmitool chassis power` word; `None` for a Redfish-only reset.
    pub fn ipmi(&self) -> Option<&'static str> {
        Some(match self {
            Self::On => "on",
            Self::ForceOff => "off",
            Self::GracefulOff => "soft",
            Self::ForceRestart => "cycle",
            Self::GracefulRestart => "reset",
            Self::Redfish(_) => return None,
        })
    }
}

/// A boot device for the boot override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BootDevice {
    /// Network boot (IPMI `pxe`, Redfish `Pxe`).
    Pxe,
    /// Local disk (IPMI `disk`, Redfish `Hdd`).
    Disk,
    /// Optical / virtual CD (IPMI `cdrom`, Redfish `Cd`).
    Cdrom,
    /// Firmware setup (IPMI `bios`, Redfish `BiosSetup`).
    Bios,
}

impl BootDevice {
    /// `ipmitool chassis bootdev` word.
    pub fn ipmi(self) -> &'static str {
        match self {
            Self::Pxe => "pxe",
            Self::Disk => "disk",
            Self::Cdrom => "cdrom",
            Self::Bios => "bios",
        }
    }

    /// Redfish `BootSourceOverrideTarget`.
    pub fn redfish(self) -> &'static str {
        match self {
            Self::Pxe => "Pxe",
            Self::Disk => "Hdd",
            Self::Cdrom => "Cd",
            Self::Bios => "BiosSetup",
        }
    }
}

/// A boot override to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootRequest {
    /// Device.
    pub device: BootDevice,
    /// Every boot (true) or the next one only.
    pub persistent: bool,
    /// UEFI (true) or legacy BIOS (false) boot; `None`: leave the BMC's mode alone.
    pub uefi: Option<bool>,
}

/// The boot override as the BMC reports it after a change (what it actually kept).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct BootReport {
    /// The device, when it is one of ours; `null` for no override or another target.
    pub device: Option<BootDevice>,
    /// The BMC's own words for the target (`Pxe`, `Force PXE`, `None`, ...).
    pub target: String,
    /// Every boot (true), the next one only (false); `null` when not reported.
    pub persistent: Option<bool>,
    /// UEFI (true) or legacy (false); `null` when not reported.
    pub uefi: Option<bool>,
    /// Whether an override is active (Redfish `Enabled` not `Disabled`; IPMI flag valid).
    pub enabled: Option<bool>,
}

/// What a protocol detection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// Protocol.
    pub protocol: Protocol,
    /// Port it answered on.
    pub port: u16,
    /// Redfish over HTTPS (true) or HTTP.
    pub tls: bool,
}

/// What the service asks of a BMC. Every call is bounded by `Target::timeout`.
pub trait BmcClient: Send + Sync {
    /// The current power state.
    fn power_state<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<PowerState, BmcError>>;
    /// Sends a reset (power) request; returns once the BMC accepted it.
    fn reset<'a>(&'a self, t: &'a Target, r: &'a Reset) -> BoxFuture<'a, Result<(), BmcError>>;
    /// Sets the boot override.
    fn set_boot<'a>(&'a self, t: &'a Target, b: BootRequest) -> BoxFuture<'a, Result<(), BmcError>>;
    /// Reads the boot override back.
    fn boot<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<BootReport, BmcError>>;
    /// Manufacturer, model, serial.
    fn identity<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<Identity, BmcError>>;
    /// Finds the protocol `t.host` speaks (`t.protocol` and `t.tls` are ignored; `port`
    /// is the port asked for, if any): Redfish (an HTTPS, else HTTP, service root at
    /// `/redfish/v1`) before IPMI (an RMCP+ session; a refused password still proves IPMI).
    fn detect<'a>(&'a self, t: &'a Target, port: Option<u16>) -> BoxFuture<'a, Result<Detected, BmcError>>;
}

/// The real client: IPMI through `ipmitool`, Redfish over HTTP(S).
pub struct SystemBmc {
    ipmitool: String,
}

impl SystemBmc {
    /// A client running `ipmitool` (a name on `PATH` or a path).
    pub fn new(ipmitool: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            ipmitool: ipmitool.into(),
        })
    }
}

impl BmcClient for SystemBmc {
    fn power_state<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<PowerState, BmcError>> {
        Box::pin(async move {
            match t.protocol {
                Protocol::Ipmi => super::ipmi::power_state(&self.ipmitool, t).await,
                Protocol::Redfish => super::redfish::power_state(t).await,
            }
        })
    }

    fn reset<'a>(&'a self, t: &'a Target, r: &'a Reset) -> BoxFuture<'a, Result<(), BmcError>> {
        Box::pin(async move {
            match t.protocol {
                Protocol::Ipmi => super::ipmi::reset(&self.ipmitool, t, r).await,
                Protocol::Redfish => super::redfish::reset(t, r).await,
            }
        })
    }

    fn set_boot<'a>(&'a self, t: &'a Target, b: BootRequest) -> BoxFuture<'a, Result<(), BmcError>> {
        Box::pin(async move {
            match t.protocol {
                Protocol::Ipmi => super::ipmi::set_boot(&self.ipmitool, t, b).await,
                Protocol::Redfish => super::redfish::set_boot(t, b).await,
            }
        })
    }

    fn boot<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<BootReport, BmcError>> {
        Box::pin(async move {
            match t.protocol {
                Protocol::Ipmi => super::ipmi::boot(&self.ipmitool, t).await,
                Protocol::Redfish => super::redfish::boot(t).await,
            }
        })
    }

    fn identity<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<Identity, BmcError>> {
        Box::pin(async move {
            match t.protocol {
                Protocol::Ipmi => super::ipmi::identity(&self.ipmitool, t).await,
                Protocol::Redfish => super::redfish::identity(t).await,
            }
        })
    }

    fn detect<'a>(&'a self, t: &'a Target, port: Option<u16>) -> BoxFuture<'a, Result<Detected, BmcError>> {
        Box::pin(async move {
            let web_ports: Vec<(bool, u16)> = match port {
                Some(623) => vec![],
                Some(p) => vec![(true, p), (false, p)],
                None => vec![(true, 443), (false, 80)],
            };
            let ipmi_port = port.unwrap_or(623);
            let probe = Target {
                protocol: Protocol::Ipmi,
                port: ipmi_port,
                ..t.clone()
            };
            // Every candidate at once, so an address where nothing answers costs one
            // timeout, not three. Redfish wins when both answer; once it has answered, the
            // IPMI attempt is dropped (which kills its ipmitool).
            let web = futures::future::join_all(
                web_ports
                    .iter()
                    .map(|&(tls, p)| super::redfish::service_root(&t.host, p, tls, t.timeout, &t.outbound)),
            );
            let ipmi = super::ipmi::power_state(&self.ipmitool, &probe);
            tokio::pin!(web, ipmi);
            let mut ipmi_first = None;
            let web = loop {
                tokio::select! {
                    w = &mut web => break w,
                    r = &mut ipmi, if ipmi_first.is_none() => ipmi_first = Some(r),
                }
            };
            if let Some(&(tls, p)) = web_ports.iter().zip(web).find(|(_, ok)| *ok).map(|(c, _)| c) {
                return Ok(Detected {
                    protocol: Protocol::Redfish,
                    port: p,
                    tls,
                });
            }
            let ipmi = match ipmi_first {
                Some(r) => r,
                None => ipmi.await,
            };
            match ipmi {
                Ok(_) | Err(BmcError::Auth(_) | BmcError::Refused(_)) => Ok(Detected {
                    protocol: Protocol::Ipmi,
                    port: ipmi_port,
                    tls: false,
                }),
                Err(BmcError::Tool(m)) => Err(BmcError::Tool(m)),
                Err(_) => Err(BmcError::Unreachable(format!(
                    "BMC {}: neither Redfish (HTTPS/HTTP /redfish/v1) nor IPMI (RMCP+ on UDP {ipmi_port}) answered; check the address, the port and that the BMC's LAN interface is enabled",
                    t.host
                ))),
            }
        })
    }
}

/// A recording fake for service and router tests: a power state per endpoint, a boot
/// override, failures on demand, and the list of calls made.
#[cfg(any(test, feature = "test-support"))]
pub mod fake {
    use std::{
        collections::HashMap,
        sync::{Arc, Mutex},
    };

    use super::*;

    /// One recorded call: `(endpoint, what)`, e.g. `("10.0.0.5:623", "reset ForceRestart")`.
    pub type Call = (String, String);

    /// The fake BMC fleet.
    #[derive(Default)]
    pub struct FakeBmc {
        /// Power state by endpoint (absent: off).
        pub power: Mutex<HashMap<String, PowerState>>,
        /// Boot override by endpoint.
        pub boot: Mutex<HashMap<String, BootReport>>,
        /// Endpoints that fail every call with this error.
        pub failing: Mutex<HashMap<String, BmcError>>,
        /// Password every BMC expects (`None`: any).
        pub password: Mutex<Option<String>>,
        /// Calls in order.
        pub calls: Mutex<Vec<Call>>,
        /// Protocol `detect` reports.
        pub detect_as: Mutex<Option<Protocol>>,
        /// Polls left before a power change shows (simulates a slow BMC).
        pub lag: Mutex<u32>,
        pending: Mutex<HashMap<String, (u32, PowerState)>>,
    }

    impl FakeBmc {
        /// A fleet where every machine is off.
        pub fn new() -> Arc<Self> {
            Arc::new(Self::default())
        }

        /// The calls so far.
        pub fn calls(&self) -> Vec<Call> {
            self.calls.lock().unwrap().clone()
        }

        /// Sets the power state of `endpoint`.
        pub fn set_power(&self, endpoint: &str, s: PowerState) {
            self.power.lock().unwrap().insert(endpoint.into(), s);
        }

        fn check(&self, t: &Target, what: String) -> Result<(), BmcError> {
            self.calls.lock().unwrap().push((t.endpoint(), what));
            if let Some(e) = self.failing.lock().unwrap().get(&t.endpoint()) {
                return Err(e.clone());
            }
            if let Some(p) = self.password.lock().unwrap().as_ref() {
                if &t.password != p {
                    return Err(BmcError::Auth(format!("{}: wrong password", t.label())));
                }
            }
            Ok(())
        }

        fn state(&self, ep: &str) -> PowerState {
            let mut pending = self.pending.lock().unwrap();
            if let Some((left, s)) = pending.get_mut(ep) {
                if *left == 0 {
                    let s = *s;
                    pending.remove(ep);
                    self.set_power(ep, s);
                } else {
                    *left -= 1;
                }
            }
            *self.power.lock().unwrap().get(ep).unwrap_or(&PowerState::Off)
        }
    }

    impl BmcClient for FakeBmc {
        fn power_state<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<PowerState, BmcError>> {
            Box::pin(async move {
                self.check(t, "power_state".into())?;
                Ok(self.state(&t.endpoint()))
            })
        }

        fn reset<'a>(&'a self, t: &'a Target, r: &'a Reset) -> BoxFuture<'a, Result<(), BmcError>> {
            Box::pin(async move {
                self.check(t, format!("reset {}", r.redfish()))?;
                let to = match r {
                    Reset::On | Reset::ForceRestart | Reset::GracefulRestart => PowerState::On,
                    Reset::ForceOff | Reset::GracefulOff => PowerState::Off,
                    Reset::Redfish(x) => {
                        return Err(BmcError::Refused(format!(
                            "{}: Power state {x} is not supported",
                            t.label()
                        )))
                    }
                };
                let lag = *self.lag.lock().unwrap();
                if lag == 0 {
                    self.set_power(&t.endpoint(), to);
                } else {
                    self.pending.lock().unwrap().insert(t.endpoint(), (lag, to));
                }
                Ok(())
            })
        }

        fn set_boot<'a>(&'a self, t: &'a Target, b: BootRequest) -> BoxFuture<'a, Result<(), BmcError>> {
            Box::pin(async move {
                self.check(
                    t,
                    format!(
                        "set_boot {} persistent={} uefi={:?}",
                        b.device.ipmi(),
                        b.persistent,
                        b.uefi
                    ),
                )?;
                self.boot.lock().unwrap().insert(
                    t.endpoint(),
                    BootReport {
                        device: Some(b.device),
                        target: b.device.redfish().into(),
                        persistent: Some(b.persistent),
                        // Like ipmi_sim: the UEFI flag is not kept.
                        uefi: Some(false),
                        enabled: Some(true),
                    },
                );
                Ok(())
            })
        }

        fn boot<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<BootReport, BmcError>> {
            Box::pin(async move {
                self.check(t, "boot".into())?;
                Ok(self
                    .boot
                    .lock()
                    .unwrap()
                    .get(&t.endpoint())
                    .cloned()
                    .unwrap_or_default())
            })
        }

        fn identity<'a>(&'a self, t: &'a Target) -> BoxFuture<'a, Result<Identity, BmcError>> {
            Box::pin(async move {
                self.check(t, "identity".into())?;
                Ok(Identity {
                    manufacturer: Some("Fake".into()),
                    model: Some(format!("{}-model", t.protocol.as_str())),
                    serial: Some(format!("SN-{}", t.endpoint())),
                })
            })
        }

        fn detect<'a>(&'a self, t: &'a Target, port: Option<u16>) -> BoxFuture<'a, Result<Detected, BmcError>> {
            Box::pin(async move {
                self.check(t, "detect".into())?;
                match *self.detect_as.lock().unwrap() {
                    Some(Protocol::Redfish) => Ok(Detected {
                        protocol: Protocol::Redfish,
                        port: port.unwrap_or(443),
                        tls: true,
                    }),
                    Some(Protocol::Ipmi) => Ok(Detected {
                        protocol: Protocol::Ipmi,
                        port: port.unwrap_or(623),
                        tls: false,
                    }),
                    None => Err(BmcError::Unreachable(format!("BMC {}: nothing answered", t.host))),
                }
            })
        }
    }
}
