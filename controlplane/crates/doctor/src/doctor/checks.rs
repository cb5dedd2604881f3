//! The doctor's network checks that talk to Bootlane's own services the way a client
//! does: a TFTP read with blksize and windowsize ([`tftp_read`], RFC 2347/2348/7440), the
//! MTU against the largest blksize firmware asks for ([`mtu_finding`]), the HTTP base
//! URL fetched from the interface's address ([`http_get`]), and an A query to
//! Bootlane's DNS ([`dns_a`]); and [`offer_findings`], which turns the OFFERs of the
//! DHCP probes into findings.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4},
    time::{Duration, Instant},
};

use bootlane_tftp::tftp::packet::{ack, rrq};
use hickory_proto::{
    op::{Message, MessageType, OpCode, Query, ResponseCode},
    rr::{Name, RData, RecordType},
};
use serde::Serialize;
use serde_json::json;
use tokio::net::UdpSocket;

use super::{
    probe::Offer,
    report::{Check, Finding, Severity},
};

/// The largest blksize clients ask for: UEFI firmware (EDK2/OVMF) asks 1468, which with
/// the IP, UDP and TFTP headers fills a 1500-byte Ethernet MTU.
pub const FIRMWARE_BLKSIZE: u16 = 1468;

/// IPv4 (20) + UDP (8) + TFTP DATA (4) header bytes around a block.
const TFTP_OVERHEAD: u32 = 32;

/// What a TFTP read measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TftpRead {
    /// The blksize the server acknowledged (none: it ignored the option, 512 applies).
    pub blksize: Option<u16>,
    /// The windowsize the server acknowledged.
    pub windowsize: Option<u16>,
    /// The tsize the server announced.
    pub tsize: Option<u64>,
    /// Bytes received.
    pub bytes: u64,
    /// Duration of the whole read, in milliseconds.
    pub millis: u64,
}

fn option_pairs(b: &[u8]) -> Vec<(String, String)> {
    let parts: Vec<String> = b
        .split(|c| *c == 0)
        .map(|p| String::from_utf8_lossy(p).to_ascii_lowercase())
        .collect();
    parts
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (c[0].clone(), c[1].clone()))
        .collect()
}

/// Reads `file` from the TFTP server at `server` from the local address `local`, asking
/// blksize `blksize`, windowsize `windowsize` and tsize, as firmware does; at most
/// `max_bytes` are read and each packet is waited for `timeout`.
///
/// # Errors
/// The server's TFTP error, a timeout (with the block reached), or a socket error, in words.
pub async fn tftp_read(
    server: SocketAddrV4,
    local: Ipv4Addr,
    file: &str,
    blksize: u16,
    windowsize: u16,
    timeout: Duration,
    max_bytes: u64,
) -> Result<TftpRead, String> {
    let t0 = Instant::now();
    let sock = UdpSocket::bind(SocketAddrV4::new(local, 0))
        .await
        .map_err(|e| format!("binding {local}: {e}"))?;
    let (bs, ws) = (blksize.to_string(), windowsize.to_string());
    let req = rrq(file, "octet", &[("blksize", &bs), ("windowsize", &ws), ("tsize", "0")]);
    sock.send_to(&req, server)
        .await
        .map_err(|e| format!("sending the read request: {e}"))?;
    let mut out = TftpRead {
        blksize: None,
        windowsize: None,
        tsize: None,
        bytes: 0,
        millis: 0,
    };
    let (mut size, mut window) = (512usize, 1u16);
    let mut expected: u16 = 1;
    let mut in_window = 0u16;
    let mut peer: Option<SocketAddr> = None;
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, from) = match tokio::time::timeout(timeout, sock.recv_from(&mut buf)).await {
            Ok(r) => r.map_err(|e| format!("receiving: {e}"))?,
            Err(_) => {
                return Err(format!(
                    "no answer within {} ms (after {} bytes, waiting for block {expected})",
                    timeout.as_millis(),
                    out.bytes
                ))
            }
        };
        if peer.is_some_and(|p| p != from) || n < 4 {
            continue;
        }
        peer = Some(from);
        let p = &buf[..n];
        match u16::from_be_bytes([p[0], p[1]]) {
            6 => {
                for (k, v) in option_pairs(&p[2..]) {
                    match k.as_str() {
                        "blksize" => out.blksize = v.parse().ok(),
                        "windowsize" => out.windowsize = v.parse().ok(),
                        "tsize" => out.tsize = v.parse().ok(),
                        _ => {}
                    }
                }
                size = usize::from(out.blksize.unwrap_or(512));
                window = out.windowsize.unwrap_or(1).max(1);
                sock.send_to(&ack(0), from)
                    .await
                    .map_err(|e| format!("acknowledging the options: {e}"))?;
            }
            3 => {
                let block = u16::from_be_bytes([p[2], p[3]]);
                if block != expected {
                    continue;
                }
                let payload = n - 4;
                out.bytes += payload as u64;
                expected = expected.wrapping_add(1);
                in_window += 1;
                let last = payload < size;
                if last || in_window == window {
                    in_window = 0;
                    sock.send_to(&ack(block), from)
                        .await
                        .map_err(|e| format!("acknowledging: {e}"))?;
                }
                if last {
                    out.millis = t0.elapsed().as_millis() as u64;
                    return Ok(out);
                }
                if out.bytes > max_bytes {
                    return Err(format!("more than {max_bytes} bytes: stopped"));
                }
            }
            5 => {
                let msg = String::from_utf8_lossy(p[4..].split(|c| *c == 0).next().unwrap_or_default()).into_owned();
                return Err(format!("TFTP error {}: {msg}", u16::from_be_bytes([p[2], p[3]])));
            }
            _ => {}
        }
    }
}

/// The finding for `interface` of MTU `mtu`: a warning when a block of
/// [`FIRMWARE_BLKSIZE`] does not fit one frame.
pub fn mtu_finding(interface: &str, mtu: u32) -> Finding {
    let largest = mtu.saturating_sub(TFTP_OVERHEAD);
    let details = json!({ "mtu": mtu, "largest_unfragmented_blksize": largest, "firmware_blksize": FIRMWARE_BLKSIZE });
    if largest >= u32::from(FIRMWARE_BLKSIZE) {
        return Finding::new(
            Check::Mtu,
            Severity::Ok,
            Some(interface),
            format!("MTU {mtu}: a TFTP block of {FIRMWARE_BLKSIZE} bytes (what UEFI firmware asks for) fits one frame"),
        )
        .details(details);
    }
    Finding::new(
        Check::Mtu,
        Severity::Warning,
        Some(interface),
        format!(
            "MTU {mtu} is below what TFTP clients assume: UEFI firmware asks blksize {FIRMWARE_BLKSIZE}, whose datagrams ({} bytes) are fragmented here, and some firmware drops fragments and stalls mid-transfer",
            u32::from(FIRMWARE_BLKSIZE) + TFTP_OVERHEAD
        ),
    )
    .fix(format!(
        "raise the MTU of {interface} (and of the switches on the link) to 1500 or more; where it must stay at {mtu}, keep clients that can at blksize {largest} or less"
    ))
    .details(details)
}

/// Fetches `url` from the local address `local` (3 s), answering the status and the
/// first bytes of the body.
///
/// # Errors
/// The request failed (connection refused, timeout, TLS), in words.
pub async fn http_get(url: &str, local: Option<IpAddr>) -> Result<(u16, String), String> {
    let client = reqwest::Client::builder()
        .local_address(local)
        .no_proxy()
        .timeout(Duration::from_secs(3))
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|e| e.to_string())?;
    let r = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("{:#}", anyhow::Error::new(e)))?;
    let status = r.status().as_u16();
    let body = r.text().await.unwrap_or_default();
    Ok((status, body.chars().take(200).collect()))
}

/// Asks the DNS server at `server` for the A records of `name` (2 s).
///
/// # Errors
/// No answer, a malformed one, or an error rcode other than NXDOMAIN, in words.
pub async fn dns_a(server: SocketAddr, name: &str) -> Result<Vec<Ipv4Addr>, String> {
    let qname = Name::from_ascii(name).map_err(|e| format!("{name:?} is not a DNS name: {e}"))?;
    // A query id that differs between runs (RFC 5452 §9.2 asks for unpredictable ids from
    // resolvers; this is one query to our own server, so varying is enough).
    let id = (time::OffsetDateTime::now_utc().nanosecond() & 0xffff) as u16;
    let mut m = Message::new(id, MessageType::Query, OpCode::Query);
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(qname, RecordType::A));
    let bytes = m.to_vec().map_err(|e| e.to_string())?;
    let local: SocketAddr = if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .expect("literal");
    let sock = UdpSocket::bind(local).await.map_err(|e| e.to_string())?;
    sock.send_to(&bytes, server).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
            Ok(r) => r.map_err(|e| e.to_string())?,
            Err(_) => return Err(format!("no answer from {server} within 2 s")),
        };
        let Ok(r) = Message::from_vec(&buf[..n]) else { continue };
        if r.metadata.id != id {
            continue;
        }
        return match r.response_code {
            ResponseCode::NoError | ResponseCode::NXDomain => Ok(r
                .answers
                .iter()
                .filter_map(|a| match &a.data {
                    RData::A(a) => Some(a.0),
                    _ => None,
                })
                .collect()),
            rc => Err(format!("{server} answered {rc}")),
        };
    }
}

/// The findings for the OFFERs seen on `interface` (`proxy`: a proxyDHCP subnet is served
/// there), `own` being this machine's addresses and `wait` how long the probes listened.
pub fn offer_findings(
    interface: &str,
    proxy: bool,
    offers: &[Offer],
    own: &[Ipv4Addr],
    wait: Duration,
) -> Vec<Finding> {
    let rivals: Vec<&Offer> = offers
        .iter()
        .filter(|o| !own.contains(&o.server) && !own.contains(&o.source))
        .collect();
    let mut servers: Vec<Ipv4Addr> = rivals.iter().map(|o| o.server).collect();
    servers.sort();
    servers.dedup();
    let mut out = Vec::new();
    for s in &servers {
        let theirs: Vec<&&Offer> = rivals.iter().filter(|o| o.server == *s).collect();
        let details = json!({ "server": s, "offers": theirs });
        if let Some(boot) = theirs.iter().find(|o| o.gives_boot()) {
            // The rival's text, quoted with control characters escaped: it reaches the
            // CLI's terminal and the event log.
            let file = boot
                .boot_file
                .as_ref()
                .map_or_else(|| "no file name".to_owned(), |f| format!("{f:?}"));
            let next = boot
                .next_server
                .map_or_else(|| "no next-server".to_owned(), |n| format!("next-server {n}"));
            out.push(
                Finding::new(
                    Check::RivalDhcp,
                    Severity::Error,
                    Some(interface),
                    format!("another DHCP server, {s}, answers PXE clients with its own boot file ({file}, {next}): machines that take its offer boot from it, not from Bootlane"),
                )
                .fix(format!(
                    "turn off network boot on {s} (dnsmasq: remove dhcp-boot / pxe-service; ISC dhcpd: remove filename and next-server; Kea: remove boot-file-name and next-server), or serve Bootlane's clients on a network of their own"
                ))
                .details(details),
            );
        } else if proxy {
            out.push(
                Finding::new(
                    Check::RivalDhcp,
                    Severity::Info,
                    Some(interface),
                    format!("{s} hands out addresses without a boot file: as expected in proxyDHCP mode, Bootlane adds the boot information"),
                )
                .details(details),
            );
        } else {
            out.push(
                Finding::new(
                    Check::RivalDhcp,
                    Severity::Warning,
                    Some(interface),
                    format!("another DHCP server, {s}, hands out addresses on this link: clients may take its address and then get no boot file"),
                )
                .fix(format!(
                    "stop DHCP on {s} for this network, or switch Bootlane's subnet on {interface} to proxyDHCP mode so it only adds the boot information"
                ))
                .details(details),
            );
        }
    }
    if servers.is_empty() {
        let waited = wait.as_millis();
        out.push(if proxy {
            Finding::new(
                Check::RivalDhcp,
                Severity::Warning,
                Some(interface),
                format!("proxyDHCP mode, but no DHCP server answered the probes within {waited} ms: clients get boot information and no address"),
            )
            .fix(format!("check the network's DHCP server, or switch the subnet on {interface} to server mode"))
        } else {
            Finding::new(
                Check::RivalDhcp,
                Severity::Ok,
                Some(interface),
                format!("no other DHCP server answered BIOS and x86-64 UEFI PXE probes within {waited} ms"),
            )
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::probe::Firmware;
    use super::*;

    fn offer(server: [u8; 4], boot: Option<&str>) -> Offer {
        Offer {
            probe: Firmware::Bios,
            server: server.into(),
            source: server.into(),
            address: Ipv4Addr::new(10, 0, 0, 77),
            next_server: boot.map(|_| server.into()),
            boot_file: boot.map(str::to_owned),
        }
    }

    #[test]
    fn a_rival_with_a_boot_file_is_an_error_an_address_only_one_depends_on_the_mode() {
        let own = [Ipv4Addr::new(10, 0, 0, 1)];
        let w = Duration::from_secs(4);
        let f = offer_findings(
            "eth1",
            false,
            &[
                offer([10, 0, 0, 5], Some("pxelinux.0")),
                offer([10, 0, 0, 1], Some("ipxe.efi")),
            ],
            &own,
            w,
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].summary.contains("10.0.0.5") && f[0].summary.contains("pxelinux.0"),
            "{}",
            f[0].summary
        );
        let f = offer_findings("eth1", true, &[offer([10, 0, 0, 5], None)], &own, w);
        assert_eq!(f[0].severity, Severity::Info);
        let f = offer_findings("eth1", false, &[offer([10, 0, 0, 5], None)], &own, w);
        assert_eq!(f[0].severity, Severity::Warning);
        // Only our own answers: nothing to report but the all-clear.
        let f = offer_findings("eth1", false, &[offer([10, 0, 0, 1], Some("ipxe.efi"))], &own, w);
        assert_eq!((f.len(), f[0].severity), (1, Severity::Ok));
        // A rival's boot file name with control characters reaches the summary escaped.
        let f = offer_findings(
            "eth1",
            false,
            &[offer([10, 0, 0, 5], Some("x\u{1b}[2J\nfake"))],
            &own,
            w,
        );
        assert!(!f[0].summary.contains(['\u{1b}', '\n']), "{}", f[0].summary);
        assert!(f[0].summary.contains(r#""x\u{1b}[2J\nfake""#), "{}", f[0].summary);
        // proxyDHCP with no DHCP server on the link: clients get no address.
        let f = offer_findings("eth1", true, &[], &own, w);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn mtu_below_what_firmware_blocks_need_warns() {
        assert_eq!(mtu_finding("eth1", 1500).severity, Severity::Ok);
        let f = mtu_finding("eth1", 1400);
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.fix.unwrap().contains("1368"));
    }

    #[test]
    fn option_lists_are_read_in_pairs() {
        assert_eq!(
            option_pairs(b"blksize\x001468\x00WindowSize\x004\x00"),
            vec![("blksize".into(), "1468".into()), ("windowsize".into(), "4".into())]
        );
    }
}
