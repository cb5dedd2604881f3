//! Upstream forwarding (spec "Built-in DNS server", item 2): parsing the `upstream`
//! setting and sending a query to the upstreams in order, with a per-try timeout,
//! fail-over to the next upstream, and a TCP retry when an answer comes back truncated
//! (RFC 7766 §3). Stateless apart from the configured list.

use std::{
    net::{IpAddr, SocketAddr},
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpStream, UdpSocket},
    time::timeout,
};

/// Per-upstream try timeout.
pub const TRY_TIMEOUT: Duration = Duration::from_millis(1500);

/// Error parsing an upstream list; names the bad entry.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("upstream entry {entry:?} is not valid: {why}; use host:port, a bare host or address (port 53) or [ipv6]:port")]
pub struct UpstreamError {
    /// The offending entry.
    pub entry: String,
    /// What is wrong.
    pub why: &'static str,
}

/// One parsed upstream entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamSpec {
    /// An address literal with its port.
    Addr(SocketAddr),
    /// A host name and port, resolved with the system resolver when the setting is applied.
    Host(String, u16),
}

/// Parses `host:port` entries separated by commas or whitespace (spec "Limits"). A bare
/// host or address gets port 53; IPv6 with a port is written `[addr]:port`.
///
/// # Errors
/// [`UpstreamError`] naming the first bad entry.
pub fn parse_upstreams(s: &str) -> Result<Vec<UpstreamSpec>, UpstreamError> {
    let mut out = Vec::new();
    for entry in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
    {
        let bad_port = || UpstreamError {
            entry: entry.into(),
            why: "the port must be 1-65535",
        };
        let spec = if let Ok(sa) = entry.parse::<SocketAddr>() {
            UpstreamSpec::Addr(sa)
        } else if let Ok(ip) = entry.parse::<IpAddr>() {
            UpstreamSpec::Addr(SocketAddr::new(ip, 53))
        } else if let Some(inner) = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')) {
            let ip: IpAddr = inner.parse().map_err(|_| UpstreamError {
                entry: entry.into(),
                why: "not an IP address",
            })?;
            UpstreamSpec::Addr(SocketAddr::new(ip, 53))
        } else {
            let (host, port) = match entry.rsplit_once(':') {
                Some((h, p)) => (h, p.parse::<u16>().map_err(|_| bad_port())?),
                None => (entry, 53),
            };
            if host.parse::<IpAddr>().is_err() && bootlane_core::net::types::validate_hostname(host).is_err() {
                return Err(UpstreamError {
                    entry: entry.into(),
                    why: "neither an IP address nor a host name",
                });
            }
            match host.parse::<IpAddr>() {
                Ok(ip) => UpstreamSpec::Addr(SocketAddr::new(ip, port)),
                Err(_) => UpstreamSpec::Host(host.to_string(), port),
            }
        };
        let port = match &spec {
            UpstreamSpec::Addr(a) => a.port(),
            UpstreamSpec::Host(_, p) => *p,
        };
        if port == 0 {
            return Err(bad_port());
        }
        out.push(spec);
    }
    Ok(out)
}

/// Resolves parsed entries to socket addresses (host names through the system resolver;
/// every address of a name becomes an upstream, in resolver order).
///
/// # Errors
/// [`UpstreamError`] naming a host name that does not resolve.
pub async fn resolve_upstreams(specs: &[UpstreamSpec]) -> Result<Vec<SocketAddr>, UpstreamError> {
    let mut out = Vec::new();
    for s in specs {
        match s {
            UpstreamSpec::Addr(a) => out.push(*a),
            UpstreamSpec::Host(h, p) => {
                let addrs: Vec<SocketAddr> = timeout(Duration::from_secs(5), tokio::net::lookup_host((h.as_str(), *p)))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .map(Iterator::collect)
                    .unwrap_or_default();
                if addrs.is_empty() {
                    return Err(UpstreamError {
                        entry: format!("{h}:{p}"),
                        why: "the host name does not resolve",
                    });
                }
                out.extend(addrs);
            }
        }
    }
    Ok(out)
}

/// Forwards `query` (a complete DNS message) to `upstreams` in order and returns the
/// first answer with the query's ID restored. A truncated UDP answer is retried over TCP
/// at the same upstream. `None` when every upstream failed or timed out.
pub async fn forward(query: &[u8], upstreams: &[SocketAddr]) -> Option<Vec<u8>> {
    if query.len() < 12 {
        return None;
    }
    let orig_id = [query[0], query[1]];
    for up in upstreams {
        let id: u16 = rand::random();
        let mut q = query.to_vec();
        q[..2].copy_from_slice(&id.to_be_bytes());
        let resp = match timeout(TRY_TIMEOUT, udp_exchange(&q, *up, id)).await {
            Ok(Ok(r)) if r.len() >= 12 && r[2] & 0x02 != 0 => timeout(TRY_TIMEOUT, tcp_exchange(&q, *up, id))
                .await
                .ok()
                .and_then(|r| r.ok())
                .or(Some(r)),
            Ok(Ok(r)) => Some(r),
            Ok(Err(e)) => {
                tracing::debug!(upstream = %up, "upstream failed: {e}");
                None
            }
            Err(_) => {
                tracing::debug!(upstream = %up, "upstream timed out");
                None
            }
        };
        if let Some(mut r) = resp {
            r[..2].copy_from_slice(&orig_id);
            return Some(r);
        }
    }
    None
}

async fn udp_exchange(q: &[u8], up: SocketAddr, id: u16) -> std::io::Result<Vec<u8>> {
    let bind: SocketAddr = if up.is_ipv4() {
        "0.0.0.0:0".parse().expect("static")
    } else {
        "[::]:0".parse().expect("static")
    };
    let sock = UdpSocket::bind(bind).await?;
    sock.connect(up).await?;
    sock.send(q).await?;
    let mut buf = vec![0u8; 65535];
    loop {
        let n = sock.recv(&mut buf).await?;
        // Ignore anything that is not the answer to this query (RFC 5452 §9.1).
        if n >= 12 && buf[..2] == id.to_be_bytes() && buf[2] & 0x80 != 0 {
            buf.truncate(n);
            return Ok(buf);
        }
    }
}

async fn tcp_exchange(q: &[u8], up: SocketAddr, id: u16) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(up).await?;
    let mut msg = (q.len() as u16).to_be_bytes().to_vec();
    msg.extend_from_slice(q);
    s.write_all(&msg).await?;
    let len = s.read_u16().await? as usize;
    let mut buf = vec![0u8; len];
    s.read_exact(&mut buf).await?;
    if len < 12 || buf[..2] != id.to_be_bytes() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "TCP answer does not match the query",
        ));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(s: &str) -> Vec<SocketAddr> {
        parse_upstreams(s)
            .unwrap()
            .into_iter()
            .map(|u| match u {
                UpstreamSpec::Addr(a) => a,
                UpstreamSpec::Host(h, _) => panic!("unexpected host {h}"),
            })
            .collect()
    }

    #[test]
    fn parses_lists() {
        let p = addrs;
        assert_eq!(p("8.8.8.8:53"), vec!["8.8.8.8:53".parse().unwrap()]);
        assert_eq!(
            p("1.1.1.1 9.9.9.9"),
            vec!["1.1.1.1:53".parse().unwrap(), "9.9.9.9:53".parse().unwrap()]
        );
        assert_eq!(
            p("1.1.1.1,\t9.9.9.9:5353"),
            vec!["1.1.1.1:53".parse().unwrap(), "9.9.9.9:5353".parse().unwrap()]
        );
        assert_eq!(p("2001:db8::1"), vec!["[2001:db8::1]:53".parse().unwrap()]);
        assert_eq!(p("[2001:db8::1]:5353"), vec!["[2001:db8::1]:5353".parse().unwrap()]);
        assert_eq!(p("[2001:db8::1]"), vec!["[2001:db8::1]:53".parse().unwrap()]);
        assert!(p("  ").is_empty());
        assert_eq!(
            parse_upstreams("dns.lab").unwrap(),
            vec![UpstreamSpec::Host("dns.lab".into(), 53)]
        );
        assert_eq!(
            parse_upstreams("dns.lab:5353").unwrap(),
            vec![UpstreamSpec::Host("dns.lab".into(), 5353)]
        );
        assert_eq!(parse_upstreams("1.1.1.1, bad_host!").unwrap_err().entry, "bad_host!");
        assert_eq!(parse_upstreams("1.1.1.1:0").unwrap_err().entry, "1.1.1.1:0");
        assert_eq!(parse_upstreams("1.1.1.1:99999").unwrap_err().entry, "1.1.1.1:99999");
    }

    #[tokio::test]
    async fn resolves_localhost_and_names_failures() {
        let r = resolve_upstreams(&parse_upstreams("localhost:5300").unwrap())
            .await
            .unwrap();
        assert!(r.iter().all(|a| a.ip().is_loopback() && a.port() == 5300) && !r.is_empty());
        let e = resolve_upstreams(&parse_upstreams("no-such-host.invalid").unwrap())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("no-such-host.invalid"));
    }
}
