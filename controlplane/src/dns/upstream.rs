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
#[error("upstream entry {entry:?} is not valid: {why}; use host:port, a bare address (port 53) or [ipv6]:port")]
pub struct UpstreamError {
    /// The offending entry.
    pub entry: String,
    /// What is wrong.
    pub why: &'static str,
}

/// Parses `host:port` entries separated by commas or whitespace (spec "Limits"). A bare
/// address gets port 53; IPv6 with a port is written `[addr]:port`. Host names are not
/// accepted (the forwarder would need a resolver to reach its resolver).
///
/// # Errors
/// [`UpstreamError`] naming the first bad entry.
pub fn parse_upstreams(s: &str) -> Result<Vec<SocketAddr>, UpstreamError> {
    let mut out = Vec::new();
    for entry in s
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
    {
        let addr = if let Ok(sa) = entry.parse::<SocketAddr>() {
            sa
        } else if let Ok(ip) = entry.parse::<IpAddr>() {
            SocketAddr::new(ip, 53)
        } else if let Some(inner) = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')) {
            let ip: IpAddr = inner.parse().map_err(|_| UpstreamError {
                entry: entry.into(),
                why: "not an IP address",
            })?;
            SocketAddr::new(ip, 53)
        } else if entry.rsplit_once(':').is_some_and(|(h, _)| h.parse::<IpAddr>().is_ok()) {
            return Err(UpstreamError {
                entry: entry.into(),
                why: "the port must be 1-65535",
            });
        } else {
            return Err(UpstreamError {
                entry: entry.into(),
                why: "not an IP address (host names are not accepted)",
            });
        };
        if addr.port() == 0 {
            return Err(UpstreamError {
                entry: entry.into(),
                why: "the port must be 1-65535",
            });
        }
        out.push(addr);
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

    #[test]
    fn parses_lists() {
        let p = |s| parse_upstreams(s).unwrap();
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
        assert_eq!(parse_upstreams("1.1.1.1, dns.google").unwrap_err().entry, "dns.google");
        assert_eq!(parse_upstreams("1.1.1.1:0").unwrap_err().entry, "1.1.1.1:0");
        assert_eq!(parse_upstreams("1.1.1.1:99999").unwrap_err().entry, "1.1.1.1:99999");
    }
}
