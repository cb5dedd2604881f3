//! The boot doctor: `POST /api/v1/doctor`, the Doctor page and `bootlane doctor` run
//! [`Doctor::run`], which checks every interface the DHCP server serves, at once:
//!
//! - other DHCP servers on the link ([`probe::discover`]: BIOS and x86-64 UEFI PXE
//!   DHCPDISCOVERs, every OFFER that is not this machine's; a rival that hands out a boot
//!   file is an error, one that only hands out addresses is fine in proxyDHCP mode);
//! - proxyDHCP: port 4011 answers a PXE boot-server request ([`probe::proxy_request`]);
//! - the MTU against the blksize UEFI firmware asks for ([`checks::mtu_finding`]);
//! - TFTP on the interface's address serves the BIOS and UEFI boot files with blksize and
//!   windowsize negotiated ([`checks::tftp_read`]);
//! - the HTTP base URL handed to iPXE answers a script from the interface's address, and
//!   its host name (or this machine's name in the local domain) resolves through
//!   Bootlane's DNS;
//!
//! and, once for the server: every arch-map entry points at a file of the right kind (the
//! bootloader check), relays (`giaddr` seen with no subnet configured for it, relayed
//! subnets no relay reached), and the signed shim and GRUB when Secure Boot is asked for.
//!
//! Bounds: one run at a time (a second answers [`Busy`]); the DHCP probes listen
//! [`PROBE_WAIT`], every other exchange has a timeout of at most 3 s, so a run takes about
//! 5 s and at most 10 s per interface (interfaces are checked in parallel). Everything it
//! sends stays on the served links or this machine. The last report is kept in memory.

pub mod checks;
pub mod probe;
pub mod report;

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4},
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bootlane_core::events::{EventBus, EventKind, NewEvent};
use bootlane_dhcp::dhcp::{config::SubnetMode, control::DhcpControl};
use serde_json::json;
use time::OffsetDateTime;

use self::report::{Check, Finding, Report, Severity};

/// How long the DHCP probes listen for OFFERs (dnsmasq pings an address up to 3 s before
/// offering it).
pub const PROBE_WAIT: Duration = Duration::from_millis(4500);

/// What the doctor reads: the live services and settings.
pub struct Sources {
    /// The DHCP configuration, arch map and relay record.
    pub dhcp: Arc<DhcpControl>,
    /// The bootloader check over the arch map.
    pub bootloaders: Arc<bootlane_media::media::bootloader::Bootloaders>,
    /// The boot root and HTTP base URL.
    pub settings: Arc<bootlane_media::settings::Settings>,
    /// TFTP's effective settings.
    pub tftp: Arc<bootlane_tftp::tftp::control::TftpControl>,
    /// DNS's effective settings.
    pub dns: Arc<bootlane_dns::dns::service::DnsService>,
    /// The HTTP boot port put in the URLs handed to iPXE.
    pub http_port: u16,
    /// The hosts flagged for Secure Boot.
    pub secure_boot: bootlane_boot::inventory::SecureBootHosts,
    /// Where `doctor.finished` is published.
    pub events: Arc<EventBus>,
}

/// A run is already going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// The doctor: runs the checks, one run at a time, and keeps the last report.
pub struct Doctor {
    src: Sources,
    running: tokio::sync::Mutex<()>,
    last: Mutex<Option<Report>>,
}

/// One interface the DHCP server serves, as the checks need it.
#[derive(Debug, Clone)]
struct Served {
    interface: String,
    address: Ipv4Addr,
    proxy: bool,
}

impl Doctor {
    /// A doctor over `src`.
    pub fn new(src: Sources) -> Arc<Self> {
        Arc::new(Self {
            src,
            running: tokio::sync::Mutex::new(()),
            last: Mutex::new(None),
        })
    }

    /// The last report since the server started, if any.
    pub fn last(&self) -> Option<Report> {
        self.last.lock().ok().and_then(|g| g.clone())
    }

    /// Runs every check and answers the report (also kept as [`Doctor::last`] and
    /// announced as `doctor.finished`).
    ///
    /// # Errors
    /// [`Busy`] while another run is going.
    pub async fn run(&self) -> Result<Report, Busy> {
        let _guard = self.running.try_lock().map_err(|_| Busy)?;
        let started_at = OffsetDateTime::now_utc();
        let t0 = Instant::now();
        let run = (started_at.unix_timestamp_nanos() as u32).rotate_left(8);
        let ifaddrs = bootlane_core::net::interface_addrs();
        let own: Vec<Ipv4Addr> = ifaddrs
            .iter()
            .filter_map(|a| match a.addr {
                IpAddr::V4(v) => Some(v),
                IpAddr::V6(_) => None,
            })
            .collect();
        let subnets: Vec<_> = self
            .src
            .dhcp
            .effective_subnets()
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.mode != SubnetMode::Off)
            .collect();
        let mut served: Vec<Served> = Vec::new();
        for s in &subnets {
            if served.iter().any(|x| x.interface == s.interface) {
                continue;
            }
            let on_iface = || {
                ifaddrs
                    .iter()
                    .filter(|a| a.iface == s.interface)
                    .filter_map(|a| match a.addr {
                        IpAddr::V4(v) => Some(v),
                        IpAddr::V6(_) => None,
                    })
            };
            let Some(address) = s
                .server_address
                .or_else(|| on_iface().find(|a| s.cidr.contains(a)))
                .or_else(|| on_iface().next())
            else {
                continue;
            };
            let proxy = subnets
                .iter()
                .any(|x| x.interface == s.interface && x.mode == SubnetMode::Proxy);
            served.push(Served {
                interface: s.interface.clone(),
                address,
                proxy,
            });
        }
        let mut findings = self.server_findings(&subnets, &ifaddrs);
        if served.is_empty() {
            findings.push(
                Finding::new(Check::RivalDhcp, Severity::Info, None, "the DHCP server serves no interface: there is no link to probe")
                    .fix("configure a subnet on the interface machines boot from (Services → DHCP), in server or proxyDHCP mode"),
            );
        } else if !self.src.dhcp.running() {
            findings.push(
                Finding::new(
                    Check::ProxyDhcp,
                    Severity::Warning,
                    None,
                    "the DHCP service is not running: no client gets an answer from Bootlane",
                )
                .fix("start it on the Services page (or with a subnet in server or proxy mode)"),
            );
        }
        let per_iface = futures::future::join_all(served.iter().map(|s| self.interface_findings(s, &own, run))).await;
        findings.extend(per_iface.into_iter().flatten());
        report::sort(&mut findings);
        let report = Report {
            started_at,
            duration_ms: t0.elapsed().as_millis() as u64,
            interfaces: served.iter().map(|s| s.interface.clone()).collect(),
            findings,
        };
        if let Ok(mut g) = self.last.lock() {
            *g = Some(report.clone());
        }
        let (errors, warnings) = (report.count(Severity::Error), report.count(Severity::Warning));
        self.src.events.publish(NewEvent::new(
            EventKind::DoctorFinished,
            format!(
                "boot doctor: {errors} error(s), {warnings} warning(s) on {} interface(s) in {} ms",
                report.interfaces.len(),
                report.duration_ms
            ),
        ));
        Ok(report)
    }

    /// The checks made once: boot files, Secure Boot files, relays.
    fn server_findings(
        &self,
        subnets: &[bootlane_dhcp::dhcp::config::SubnetConfig],
        ifaddrs: &[bootlane_core::net::IfAddr],
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        let root = self.src.settings.boot_root();
        let check = bootlane_media::media::bootloader::check_map(
            &root,
            &self.src.dhcp.arch_map(),
            self.src.settings.http_base_url().as_deref(),
        );
        let mut good = 0;
        for e in &check.entries {
            if !matches!(e.status.as_str(), "missing" | "wrong_kind" | "invalid_path") {
                good += 1;
                continue;
            }
            let what = if e.status == "missing" {
                "is missing from the boot root"
            } else {
                "is not a boot file for this architecture"
            };
            // x86 BIOS and x86-64 UEFI are most fleets: a broken entry there is an error;
            // the other architectures only matter to sites that have such machines.
            let severity = if matches!(e.arch, 0 | 7 | 9) {
                Severity::Error
            } else {
                Severity::Warning
            };
            out.push(
                Finding::new(
                    Check::BootFile,
                    severity,
                    None,
                    format!(
                        "architecture {} ({}): {} {what}; machines of this architecture cannot boot",
                        e.arch,
                        bootlane_dhcp::dhcp::control::arch_name(e.arch),
                        e.value
                    ),
                )
                .fix(
                    e.fix
                        .clone()
                        .unwrap_or_else(|| "point the arch map entry at an existing file".into()),
                )
                .details(json!(e)),
            );
        }
        if good > 0 {
            out.push(Finding::new(
                Check::BootFile,
                Severity::Ok,
                None,
                format!("{good} arch map entries point at an existing boot file of the right kind"),
            ));
        }
        let sb_hosts = self.src.secure_boot.borrow().len();
        let sb_subnets: Vec<String> = subnets
            .iter()
            .filter(|s| s.secure_boot)
            .map(|s| s.cidr.to_string())
            .collect();
        if sb_hosts > 0 || !sb_subnets.is_empty() {
            out.push(secure_boot_finding(&root, sb_hosts, &sb_subnets));
        }
        out.extend(relay_findings(subnets, ifaddrs, &self.src.dhcp.relays().seen().0));
        out
    }

    async fn interface_findings(&self, s: &Served, own: &[Ipv4Addr], run: u32) -> Vec<Finding> {
        let iface = s.interface.as_str();
        let mut out = Vec::new();
        let (offers, proxy, tftp, http) = tokio::join!(
            probe::discover(iface, run, PROBE_WAIT),
            async {
                if s.proxy {
                    Some(probe::proxy_request(iface, s.address, run, Duration::from_secs(2)).await)
                } else {
                    None
                }
            },
            self.tftp_findings(s),
            self.http_findings(s),
        );
        match offers {
            Ok(o) => out.extend(checks::offer_findings(iface, s.proxy, &o, own, PROBE_WAIT)),
            Err(e) => out.push(
                Finding::new(Check::RivalDhcp, Severity::Warning, Some(iface), format!("could not probe for other DHCP servers: {e}"))
                    .fix("port 68 is taken on this machine (a DHCP client?); stop it on this interface or run the doctor when it is idle"),
            ),
        }
        match proxy {
            None => {}
            Some(Ok(Some(a))) => out.push(
                Finding::new(
                    Check::ProxyDhcp,
                    Severity::Ok,
                    Some(iface),
                    format!("port 4011 answers a PXE boot-server request with {}", a.boot_file.as_deref().unwrap_or("no boot file")),
                )
                .details(json!(a)),
            ),
            Some(Ok(None)) => out.push(
                Finding::new(Check::ProxyDhcp, Severity::Error, Some(iface), format!("port 4011 on {} did not answer a PXE boot-server request within 2 s: UEFI clients of the proxyDHCP subnet get no boot file", s.address))
                    .fix("check that the DHCP service runs and that no firewall drops UDP 4011 on this interface"),
            ),
            Some(Err(e)) => out.push(Finding::new(Check::ProxyDhcp, Severity::Warning, Some(iface), format!("could not send a request to port 4011: {e}"))),
        }
        match std::fs::read_to_string(Path::new("/sys/class/net").join(iface).join("mtu"))
            .ok()
            .and_then(|m| m.trim().parse().ok())
        {
            Some(mtu) => out.push(checks::mtu_finding(iface, mtu)),
            None => out.push(Finding::new(
                Check::Mtu,
                Severity::Info,
                Some(iface),
                "the interface's MTU could not be read",
            )),
        }
        out.extend(tftp);
        out.extend(http);
        out
    }

    /// Reads the BIOS and x86-64 UEFI boot files over TFTP from the interface's address.
    async fn tftp_findings(&self, s: &Served) -> Vec<Finding> {
        let iface = Some(s.interface.as_str());
        if !self.src.tftp.enabled() {
            return vec![Finding::new(
                Check::Tftp,
                Severity::Info,
                iface,
                "TFTP is off: only HTTP boot clients and iPXE can boot",
            )];
        }
        let cfg = self.src.tftp.effective();
        let map = self.src.dhcp.arch_map();
        let mut files: Vec<String> = [0u16, 7]
            .iter()
            .filter_map(|a| map.get(a).cloned())
            .filter(|f| !f.contains("://") && !f.contains('{'))
            .collect();
        files.dedup();
        let mut out = Vec::new();
        for file in files {
            let server = SocketAddrV4::new(s.address, cfg.port);
            match checks::tftp_read(server, s.address, &file, checks::FIRMWARE_BLKSIZE, 4, Duration::from_secs(2), 64 << 20).await {
                Ok(r) if r.blksize.is_some() && r.windowsize.is_some() && r.tsize.is_none_or(|t| t == r.bytes) => out.push(
                    Finding::new(
                        Check::Tftp,
                        Severity::Ok,
                        iface,
                        format!("TFTP {server} serves {file} ({} bytes in {} ms) with blksize {} and windowsize {}", r.bytes, r.millis, r.blksize.unwrap_or(512), r.windowsize.unwrap_or(1)),
                    )
                    .details(json!(r)),
                ),
                Ok(r) => out.push(
                    Finding::new(Check::Tftp, Severity::Warning, iface, format!("TFTP {server} served {file} without negotiating blksize/windowsize as asked, or short of its announced size"))
                        .details(json!(r)),
                ),
                Err(e) => out.push(
                    Finding::new(Check::Tftp, Severity::Error, iface, format!("TFTP {server} could not serve {file}: {e}"))
                        .fix("check that the TFTP service runs and listens on this address ([tftp] listen), and that the file is readable in the boot root"),
                ),
            }
        }
        out
    }

    /// The URL handed to iPXE from the interface's address, and the name in it through DNS.
    async fn http_findings(&self, s: &Served) -> Vec<Finding> {
        let iface = Some(s.interface.as_str());
        let configured = self.src.settings.http_base_url();
        let base = configured
            .clone()
            .unwrap_or_else(|| format!("http://{}:{}", s.address, self.src.http_port));
        let url = format!("{base}/boot/ipxe");
        let mut out = vec![match checks::http_get(&url, Some(IpAddr::V4(s.address))).await {
            Ok((200, body)) if body.starts_with("#!ipxe") => Finding::new(Check::Http, Severity::Ok, iface, format!("{url} answers an iPXE script from {}", s.address)),
            Ok((status, _)) => Finding::new(Check::Http, Severity::Error, iface, format!("{url} answered HTTP {status}, not an iPXE script: iPXE clients stop after DHCP"))
                .fix("set the netboot HTTP base URL (Settings) to an address clients reach Bootlane's HTTP boot listener on, and check that HTTP boot is running"),
            Err(e) => Finding::new(Check::Http, Severity::Error, iface, format!("{url} did not answer from {}: {e}", s.address))
                .fix("set the netboot HTTP base URL (Settings) to an address clients reach Bootlane's HTTP boot listener on, and check that HTTP boot is running"),
        }];
        out.extend(self.dns_finding(s, configured.as_deref()).await);
        out
    }

    async fn dns_finding(&self, s: &Served, base: Option<&str>) -> Option<Finding> {
        let iface = Some(s.interface.as_str());
        let d = self.src.dns.settings();
        if !d.enabled {
            return None;
        }
        let from_url = base.and_then(|b| url::Url::parse(b).ok()).and_then(|u| match u.host() {
            Some(url::Host::Domain(h)) => Some(h.to_owned()),
            _ => None,
        });
        let (name, needed) = match from_url {
            Some(h) => (h, true),
            None => {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
                let host = host.trim().split('.').next().unwrap_or_default().to_owned();
                if host.is_empty() {
                    return None;
                }
                (format!("{host}.{}", d.local_domain.trim_end_matches('.')), false)
            }
        };
        let listens = d
            .listen
            .iter()
            .any(|a| a.is_unspecified() || *a == IpAddr::V4(s.address));
        let target = if listens {
            IpAddr::V4(s.address)
        } else {
            d.listen.first().copied().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
        };
        let server = SocketAddr::new(target, d.port);
        let sev = if needed { Severity::Warning } else { Severity::Info };
        let why = if needed {
            "iPXE clients cannot fetch their script by this name"
        } else {
            "clients cannot reach this server by name"
        };
        Some(match checks::dns_a(server, &format!("{name}.")).await {
            Ok(a) if !a.is_empty() => Finding::new(
                Check::Dns,
                Severity::Ok,
                iface,
                format!(
                    "{name} resolves through Bootlane's DNS ({server}) to {}",
                    a.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                ),
            ),
            Ok(_) => Finding::new(
                Check::Dns,
                sev,
                iface,
                format!("{name} does not resolve through Bootlane's DNS ({server}): {why}"),
            )
            .fix(format!(
                "add an A record for {name} pointing at {} (DNS → Records)",
                s.address
            )),
            Err(e) => Finding::new(
                Check::Dns,
                sev,
                iface,
                format!("Bootlane's DNS did not answer for {name}: {e}"),
            )
            .fix(format!(
                "make [dns] listen include {} (or 0.0.0.0) and check that the DNS service runs",
                s.address
            )),
        })
    }
}

/// The Secure Boot chain in the boot root: the signed shim and the GRUB it loads.
fn secure_boot_finding(root: &Path, hosts: usize, subnets: &[String]) -> Finding {
    let who = match (hosts, subnets.is_empty()) {
        (0, _) => format!("subnets {}", subnets.join(", ")),
        (n, true) => format!("{n} host(s)"),
        (n, false) => format!("{n} host(s) and subnets {}", subnets.join(", ")),
    };
    let missing: Vec<&str> = bootlane_boot::boot::SECURE_BOOT_FILES
        .iter()
        .map(|(_, name)| *name)
        .filter(|n| *n != "mmx64.efi" && !root.join(n).is_file())
        .collect();
    if missing.is_empty() {
        return Finding::new(
            Check::SecureBoot,
            Severity::Ok,
            None,
            format!("Secure Boot is asked for ({who}): the signed shim and GRUB are in the boot root"),
        );
    }
    Finding::new(
        Check::SecureBoot,
        Severity::Error,
        None,
        format!("Secure Boot is asked for ({who}) but {} missing from the boot root: those machines cannot boot", missing.join(" and ")),
    )
    .fix("install Debian's shim-signed and grub-efi-amd64-signed packages (or set [boot] shim_source and grub_efi_source) and restart Bootlane, which copies them into the boot root")
    .details(json!({ "missing": missing }))
}

/// Relays seen without a subnet, and relayed subnets (no address of their interface in
/// them) that no relay reached since the server started.
fn relay_findings(
    subnets: &[bootlane_dhcp::dhcp::config::SubnetConfig],
    ifaddrs: &[bootlane_core::net::IfAddr],
    seen: &[bootlane_dhcp::dhcp::relays::RelaySeen],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in seen.iter().filter(|r| r.subnet.is_none()) {
        out.push(
            Finding::new(
                Check::Relay,
                Severity::Warning,
                None,
                format!(
                    "relay {} forwarded {} request(s) for a subnet that is not configured: those clients get no answer",
                    r.giaddr, r.requests
                ),
            )
            .fix(format!(
                "add a subnet containing {} (Services → DHCP), or stop the relay forwarding to Bootlane",
                r.giaddr
            ))
            .details(json!(r)),
        );
    }
    for s in subnets {
        let local = ifaddrs.iter().any(|a| match a.addr {
            IpAddr::V4(v) => a.iface == s.interface && s.cidr.contains(&v),
            IpAddr::V6(_) => false,
        });
        if local {
            continue;
        }
        let reached = seen.iter().any(|r| s.cidr.contains(&r.giaddr));
        if !reached {
            out.push(
                Finding::new(
                    Check::Relay,
                    Severity::Info,
                    None,
                    format!("subnet {} is not on any interface of this machine and no relay has forwarded a request for it since the server started", s.cidr),
                )
                .fix(format!("point the relay of {} at this server (e.g. dhcrelay, ip helper-address), or ignore this until a machine there boots", s.cidr)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_dhcp::dhcp::{config::SubnetConfig, relays::RelaySeen};

    fn subnet(cidr: &str, iface: &str) -> SubnetConfig {
        serde_json::from_value(json!({ "mode": "server", "interface": iface, "cidr": cidr })).unwrap()
    }

    #[test]
    fn relays_without_subnet_warn_and_unreached_relayed_subnets_are_named() {
        let ifaddrs = vec![bootlane_core::net::IfAddr {
            iface: "eth1".into(),
            addr: "10.0.0.1".parse().unwrap(),
            net: "10.0.0.0/24".parse().unwrap(),
        }];
        let subnets = [
            subnet("10.0.0.0/24", "eth1"),
            subnet("10.20.0.0/24", "eth1"),
            subnet("10.30.0.0/24", "eth1"),
        ];
        let seen = [
            RelaySeen {
                giaddr: "10.9.0.1".parse().unwrap(),
                subnet: None,
                requests: 3,
                last_seen: 1,
            },
            RelaySeen {
                giaddr: "10.30.0.1".parse().unwrap(),
                subnet: Some("10.30.0.0/24".into()),
                requests: 1,
                last_seen: 1,
            },
        ];
        let f = relay_findings(&subnets, &ifaddrs, &seen);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].summary.contains("10.9.0.1"));
        assert_eq!(f[1].severity, Severity::Info);
        assert!(f[1].summary.contains("10.20.0.0/24"));
    }

    #[test]
    fn secure_boot_names_the_missing_files() {
        let dir = std::env::temp_dir().join(format!("doctor-sb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = secure_boot_finding(&dir, 2, &[]);
        assert_eq!(f.severity, Severity::Error);
        assert!(f.summary.contains("shimx64.efi and grubx64.efi"), "{}", f.summary);
        std::fs::write(dir.join("shimx64.efi"), b"x").unwrap();
        std::fs::write(dir.join("grubx64.efi"), b"x").unwrap();
        assert_eq!(secure_boot_finding(&dir, 2, &[]).severity, Severity::Ok);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
