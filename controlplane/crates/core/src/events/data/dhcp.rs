//! The `data` of DHCP lease events: a DHCPv4 lease bound (granted or renewed), renewed from
//! memory while the shared store is unreachable, or ended (declined, released, expired), and
//! a DHCPv6 lease's every change. Writes through the API (lease deletions, reservations,
//! settings) are [`Write`](super::Write)s.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use super::EventData;
use crate::events::EventKind;

/// `dhcp.lease.granted|renewed`: a DHCPv4 lease acknowledged and stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DhcpLeaseBound {
    /// The client's MAC, lower-case colon form.
    pub mac: String,
    /// The leased address.
    pub ip: Ipv4Addr,
    /// The subnet the lease belongs to, e.g. `10.77.0.0/24`.
    pub subnet: String,
    /// The host name: the reservation's, else the one the client sent (option 12); `null`
    /// when neither.
    pub hostname: Option<String>,
    /// Lease time granted, in seconds.
    pub lease_time_secs: u32,
    /// The client's DHCPREQUEST state: `selecting`, `init-reboot` or `renewing`.
    pub state: String,
}

impl EventData for DhcpLeaseBound {
    const KINDS: &'static [EventKind] = &[EventKind::DhcpLeaseGranted, EventKind::DhcpLeaseRenewed];
}

/// `dhcp.lease.renewed` answered from the lease this node holds in memory while the shared
/// store is unreachable (nothing was stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DhcpLeaseHeld {
    /// The client's MAC, lower-case colon form.
    pub mac: String,
    /// The leased address.
    pub ip: Ipv4Addr,
    /// The subnet the lease belongs to.
    pub subnet: String,
    /// Lease time given, in seconds: what the held lease still runs, at most the subnet's.
    pub lease_time_secs: u32,
    /// The client's DHCPREQUEST state: `selecting`, `init-reboot` or `renewing`.
    pub state: String,
    /// Always `true`.
    pub degraded: bool,
}

impl EventData for DhcpLeaseHeld {
    const KINDS: &'static [EventKind] = &[EventKind::DhcpLeaseRenewed];
}

/// `dhcp.lease.declined|released|expired`: a DHCPv4 lease that ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DhcpLeaseEnded {
    /// The client's MAC, lower-case colon form.
    pub mac: String,
    /// The address.
    pub ip: Ipv4Addr,
    /// The subnet the lease belonged to.
    pub subnet: String,
}

impl EventData for DhcpLeaseEnded {
    const KINDS: &'static [EventKind] = &[
        EventKind::DhcpLeaseDeclined,
        EventKind::DhcpLeaseExpired,
        EventKind::DhcpLeaseReleased,
    ];
}

/// `dhcp6.lease.granted|renewed|released|declined`: the DHCPv6 lease as stored after the
/// change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dhcp6LeaseChanged {
    /// The client's DUID (option 1), lower-case hex without separators.
    pub duid: String,
    /// The IA_NA's identity association id.
    pub iaid: u32,
    /// The leased address.
    pub ip: Ipv6Addr,
    /// The prefix the lease belongs to, e.g. `fd00:77::/64`.
    pub subnet: String,
    /// The client's MAC (lower-case colon form) when it can be told from the DUID or the
    /// link-local address; else `null`.
    pub mac: Option<String>,
    /// Client architecture (option 61), when sent; else `null`.
    pub arch: Option<u16>,
    /// End of the valid lifetime, seconds since the Unix epoch (the release time for a
    /// released lease).
    pub expires_at: u64,
    /// `true` for a renewal answered from memory while the shared store was unreachable
    /// (nothing stored); absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub degraded: bool,
}

impl EventData for Dhcp6LeaseChanged {
    const KINDS: &'static [EventKind] = &[
        EventKind::Dhcp6LeaseDeclined,
        EventKind::Dhcp6LeaseGranted,
        EventKind::Dhcp6LeaseReleased,
        EventKind::Dhcp6LeaseRenewed,
    ];
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::same_json;
    use super::*;

    /// handler.rs built the common part, then added the caller's extra fields.
    fn v4(mac: &str, ip: Ipv4Addr, subnet: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut data = json!({"mac": mac.to_string(), "ip": ip.to_string(), "subnet": subnet});
        if let (Some(d), serde_json::Value::Object(x)) = (data.as_object_mut(), extra) {
            d.extend(x);
        }
        data
    }

    #[test]
    fn dhcpv4_lease_shapes_write_what_the_handler_wrote() {
        let (mac, ip, subnet) = ("52:54:00:77:00:07", Ipv4Addr::new(10, 77, 0, 100), "10.77.0.0/24");
        for hostname in [Some("node7".to_string()), None] {
            let (lease_time_secs, state) = (3600u32, "selecting");
            same_json(
                &DhcpLeaseBound {
                    mac: mac.into(),
                    ip,
                    subnet: subnet.into(),
                    hostname: hostname.clone(),
                    lease_time_secs,
                    state: state.into(),
                },
                v4(
                    mac,
                    ip,
                    subnet,
                    json!({"hostname": hostname, "lease_time_secs": lease_time_secs, "state": state}),
                ),
            );
        }
        let (left, state) = (1200u32, "renewing");
        same_json(
            &DhcpLeaseHeld {
                mac: mac.into(),
                ip,
                subnet: subnet.into(),
                lease_time_secs: left,
                state: state.into(),
                degraded: true,
            },
            v4(
                mac,
                ip,
                subnet,
                json!({"lease_time_secs": left, "state": state, "degraded": true}),
            ),
        );
        let ended = DhcpLeaseEnded {
            mac: mac.into(),
            ip,
            subnet: subnet.into(),
        };
        same_json(&ended, v4(mac, ip, subnet, json!({})));
        // mod.rs (expiry): json!({"mac": l.mac, "ip": l.ip.to_string(), "subnet": l.subnet}).
        same_json(&ended, json!({"mac": mac, "ip": ip.to_string(), "subnet": subnet}));
    }

    #[test]
    fn dhcpv6_lease_shape_writes_what_the_handler_wrote() {
        let ip: Ipv6Addr = "fd00:77::1:2".parse().unwrap();
        let (duid, iaid, subnet, expires_at) = ("000300015254007700aa", 7u32, "fd00:77::/64", 1_790_000_000u64);
        for (mac, arch, degraded) in [
            (Some("52:54:00:77:00:aa".to_string()), Some(7u16), false),
            (None, None, true),
        ] {
            let mut old = json!({
                "duid": duid, "iaid": iaid, "ip": ip.to_string(), "subnet": subnet,
                "mac": mac, "arch": arch, "expires_at": expires_at,
            });
            if degraded {
                old["degraded"] = serde_json::Value::Bool(true);
            }
            same_json(
                &Dhcp6LeaseChanged {
                    duid: duid.into(),
                    iaid,
                    ip,
                    subnet: subnet.into(),
                    mac,
                    arch,
                    expires_at,
                    degraded,
                },
                old,
            );
        }
    }
}
