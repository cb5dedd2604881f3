//! The aya-backed fast path: loads the embedded XDP object (`dataplane-ebpf`, built by
//! `build.rs`), resizes the answer map to `[dns.xdp] map_capacity`, attaches the
//! program per `[dns.xdp] mode` and keeps the maps equal to the DNS service's
//! [`Projection`] by diffing each new projection against the last applied one.
//!
//! Global state: the loaded [`Ebpf`] (program, links, maps) lives inside [`XdpTable`]
//! for the life of the process; dropping it detaches the program and frees the maps.
//! The attachments follow the DNS service: [`DnsTable::detach`] when it stops,
//! [`DnsTable::attach`] when it starts or its listen addresses change (new interfaces
//! are attached, interfaces no longer wanted detached); the maps stay loaded.

use std::{
    collections::{HashMap as StdHashMap, HashSet},
    net::IpAddr,
    sync::Mutex,
    time::Instant,
};

use aya::{
    maps::{lpm_trie::Key, Array, HashMap, LpmTrie, MapData, MapError, PerCpuArray},
    programs::{xdp::XdpLinkId, Xdp, XdpMode},
    Ebpf, EbpfLoader,
};
use bootlane_common::dns::{
    DnsAnswer, DnsConfig, DnsKey, CFG_FLAG_SCOPED, CFG_FLAG_SERVER_MAP, CNT_ANSWERED, CNT_MAX, CNT_PASS_MALFORMED,
    CNT_PASS_MISS, CNT_PASS_NOT_DNS, CNT_PASS_TOO_LONG, CNT_PASS_UNSUPPORTED, CNT_RRL_DROPPED, CNT_RRL_SLIPPED,
    DNS_CONFIG, DNS_COUNTERS, DNS_RECORDS, DNS_SCOPES, DNS_SERVER_ADDRS, INLINE_SERVER_ADDRS, SCOPE_GLOBAL,
};
use ipnet::IpNet;

use super::config::{XdpConfig, XdpMode as CfgMode};
use super::{DataplaneError, DnsTable, Projection, XdpCounters, XdpInterface, XdpStatus};

/// The XDP object built by `build.rs` from `dataplane-ebpf`, 8-byte aligned for the ELF
/// parser.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/dataplane-ebpf"));

/// Name of the XDP program in [`OBJECT`].
pub const PROGRAM: &str = "dns_responder";

/// A [`DataplaneError::Load`] for step `what`, keeping aya's error as the source.
fn load_err(what: impl Into<String>, e: impl std::error::Error + Send + Sync + 'static) -> DataplaneError {
    DataplaneError::Load {
        what: what.into(),
        source: Box::new(e),
    }
}

/// The 16-byte map form of an address: IPv6 as is, IPv4 as `::ffff:a.b.c.d`.
pub fn addr16(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The LPM key and prefix length of a scope prefix (IPv4 prefixes shifted by 96 bits).
fn lpm_key(net: &IpNet) -> ([u8; 16], u32) {
    match net {
        IpNet::V4(n) => (addr16(IpAddr::V4(n.network())), 96 + u32::from(n.prefix_len())),
        IpNet::V6(n) => (addr16(IpAddr::V6(n.network())), u32::from(n.prefix_len())),
    }
}

/// True when `e` is the kernel's "no such key" (ENOENT), matched on the typed aya error.
fn is_enoent(e: &MapError) -> bool {
    match e {
        MapError::KeyNotFound => true,
        MapError::SyscallError(s) => s.io_error.raw_os_error() == Some(libc::ENOENT),
        _ => false,
    }
}

fn map_err(map: &'static str) -> impl Fn(MapError) -> DataplaneError {
    move |e| DataplaneError::MapOp {
        map,
        source: Box::new(e),
    }
}

/// Raises `RLIMIT_MEMLOCK` for kernels that still charge BPF maps to it (before 5.11).
fn raise_memlock() {
    let rlim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain syscall with a valid pointer to a local.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlim) } != 0 {
        tracing::debug!("cannot raise RLIMIT_MEMLOCK; fine on kernels >= 5.11");
    }
}

struct Maps {
    records: HashMap<MapData, DnsKey, DnsAnswer>,
    scopes: LpmTrie<MapData, [u8; 16], u32>,
    servers: HashMap<MapData, [u8; 16], u32>,
    config: Array<MapData, DnsConfig>,
    counters: PerCpuArray<MapData, u64>,
}

struct State {
    maps: Maps,
    /// What the maps hold now (as far as we know): the last applied projection.
    records: StdHashMap<DnsKey, DnsAnswer>,
    scopes: HashSet<([u8; 16], u32, u32)>,
    servers: HashSet<[u8; 16]>,
    /// False until the first apply, which also removes keys we did not write.
    reconciled: bool,
}

/// Where the program is attached now.
#[derive(Default)]
struct Links {
    /// Interface, link (dropping the id does not detach; [`Xdp::detach`] does) and mode.
    attached: Vec<(XdpInterface, XdpLinkId)>,
    /// Why the fast path is off or partial (attach failures, stopped service).
    reason: Option<String>,
}

/// The fast path: the loaded program, its maps and where it is attached.
pub struct XdpTable {
    state: Mutex<State>,
    /// Keeps the program (and its links, i.e. the attachments) alive. Lock order: `ebpf`
    /// before `links`.
    ebpf: Mutex<Ebpf>,
    mode: String,
    /// `[dns.xdp]`: mode and explicit interfaces for later attaches.
    xdp: XdpConfig,
    links: Mutex<Links>,
    capacity: u32,
}

impl XdpTable {
    /// Loads the object with [`DNS_RECORDS`] sized to `capacity` entries and loads the
    /// program into the kernel, without attaching it anywhere (used by [`Self::attach`]
    /// and by the `test_run` tests).
    ///
    /// # Errors
    /// [`DataplaneError::Load`] when the kernel refuses the object or the program (not
    /// root, no BPF, verifier rejection), with the kernel's message.
    pub fn detached(capacity: u32) -> Result<Self, DataplaneError> {
        raise_memlock();
        let mut ebpf = EbpfLoader::new()
            .map_max_entries(DNS_RECORDS, capacity)
            .load(OBJECT)
            .map_err(|e| load_err("loading the object", e))?;
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .ok_or_else(|| DataplaneError::Missing(format!("no program {PROGRAM} in the object")))?
            .try_into()
            .map_err(|e| load_err(format!("{PROGRAM} is not XDP"), e))?;
        prog.load()
            .map_err(|e| load_err(format!("verifier/kernel refused {PROGRAM}"), e))?;
        let mut take = |name: &'static str| {
            ebpf.take_map(name)
                .ok_or_else(|| DataplaneError::Missing(format!("no map {name} in the object")))
        };
        let (r, s, sv, c, n) = (
            take(DNS_RECORDS)?,
            take(DNS_SCOPES)?,
            take(DNS_SERVER_ADDRS)?,
            take(DNS_CONFIG)?,
            take(DNS_COUNTERS)?,
        );
        let maps = Maps {
            records: HashMap::try_from(r).map_err(map_err(DNS_RECORDS))?,
            scopes: LpmTrie::try_from(s).map_err(map_err(DNS_SCOPES))?,
            servers: HashMap::try_from(sv).map_err(map_err(DNS_SERVER_ADDRS))?,
            config: Array::try_from(c).map_err(map_err(DNS_CONFIG))?,
            counters: PerCpuArray::try_from(n).map_err(map_err(DNS_COUNTERS))?,
        };
        Ok(Self {
            state: Mutex::new(State {
                maps,
                records: StdHashMap::new(),
                scopes: HashSet::new(),
                servers: HashSet::new(),
                reconciled: false,
            }),
            ebpf: Mutex::new(ebpf),
            mode: "detached".into(),
            xdp: XdpConfig::default(),
            links: Mutex::new(Links {
                attached: Vec::new(),
                reason: Some("loaded but not attached".into()),
            }),
            capacity,
        })
    }

    /// Loads the program and attaches it per `[dns.xdp]`: on the configured interfaces,
    /// or (empty list) on every interface carrying an address the DNS server listens on
    /// (`0.0.0.0`/`::` meaning every interface with an address of that family, `lo`
    /// included). `auto` tries native (driver) mode first, then generic.
    ///
    /// # Errors
    /// A human-readable reason when nothing could be attached (the caller logs it and
    /// runs on userspace alone).
    pub fn attach(x: &XdpConfig, listen: &[IpAddr]) -> Result<Self, String> {
        let mut t = Self::detached(x.map_capacity).map_err(|e| {
            format!("{e}; answering from userspace (XDP needs root or CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)")
        })?;
        t.mode = format!("{:?}", x.mode).to_lowercase();
        t.xdp = x.clone();
        t.attach_listen(listen)?;
        Ok(t)
    }

    /// Makes the attachments match `listen` (or the configured `[dns.xdp] interfaces`):
    /// detaches from interfaces no longer wanted, attaches to new ones (`auto`: native
    /// first, then generic; virtual interfaces straight to generic), keeps the rest.
    /// Answers the interfaces attached afterwards.
    ///
    /// # Errors
    /// A human-readable reason when nothing is attached afterwards.
    fn attach_listen(&self, listen: &[IpAddr]) -> Result<Vec<XdpInterface>, String> {
        let x = &self.xdp;
        let ifaces = if x.interfaces.is_empty() {
            default_interfaces(listen)
        } else {
            x.interfaces.clone()
        };
        let modes: &[(XdpMode, &str)] = match x.mode {
            CfgMode::Auto => &[(XdpMode::Driver, "native"), (XdpMode::Skb, "generic")],
            CfgMode::Native => &[(XdpMode::Driver, "native")],
            CfgMode::Generic => &[(XdpMode::Skb, "generic")],
            CfgMode::Off => &[],
        };
        let mut failures = Vec::new();
        let mut ebpf = self.ebpf.lock().expect("ebpf lock");
        let prog: &mut Xdp = ebpf
            .program_mut(PROGRAM)
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| format!("program {PROGRAM} vanished"))?;
        let mut links = self.links.lock().expect("xdp links lock");
        for (iface, id) in std::mem::take(&mut links.attached) {
            if ifaces.contains(&iface.name) {
                links.attached.push((iface, id));
            } else if let Err(e) = prog.detach(id) {
                tracing::warn!(interface = %iface.name, "detaching XDP failed: {e}");
            } else {
                tracing::info!(interface = %iface.name, "XDP fast path detached (no longer listened on)");
            }
        }
        for iface in &ifaces {
            if links.attached.iter().any(|(i, _)| &i.name == iface) {
                continue;
            }
            let mut errs = Vec::new();
            // `auto` on a virtual interface (veth, bridge, tap, lo: no backing device)
            // goes straight to generic mode: native XDP_TX on a veth reaches the peer
            // only when the peer runs an XDP program too (toolchain.md), so a native
            // attach there "works" while every answer is silently dropped.
            let modes = if x.mode == CfgMode::Auto && is_virtual(iface) {
                &modes[1..]
            } else {
                modes
            };
            for (m, name) in modes {
                match prog.attach(iface, *m) {
                    Ok(id) => {
                        tracing::info!(interface = %iface, mode = name, "XDP fast path attached");
                        let attached = XdpInterface {
                            name: iface.clone(),
                            attach_mode: (*name).to_string(),
                        };
                        links.attached.push((attached, id));
                        errs.clear();
                        break;
                    }
                    Err(e) => errs.push(format!("{name}: {e}")),
                }
            }
            if !errs.is_empty() {
                let msg = format!("cannot attach XDP to {iface} ({})", errs.join("; "));
                tracing::warn!("{msg}");
                failures.push(msg);
            }
        }
        let now: Vec<XdpInterface> = links.attached.iter().map(|(i, _)| i.clone()).collect();
        if now.is_empty() {
            let reason = if ifaces.is_empty() {
                "no interface carries an address the DNS server listens on; XDP not attached, answering from userspace"
                    .to_string()
            } else {
                format!("{}; answering from userspace", failures.join("; "))
            };
            links.reason = Some(reason.clone());
            return Err(reason);
        }
        links.reason = (!failures.is_empty()).then(|| failures.join("; "));
        Ok(now)
    }

    /// Runs the loaded program once on `frame` (`BPF_PROG_TEST_RUN`) and returns the XDP
    /// action and the output frame. For tests; needs root.
    ///
    /// # Errors
    /// [`DataplaneError::Load`] with the kernel's error.
    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>), DataplaneError> {
        let (action, _, out) = self.run_in_kernel(frame, 0)?;
        Ok((action, out))
    }

    /// Runs the program `repeat` times on `frame` in the kernel and returns the mean time
    /// per run as the kernel measured it (`BPF_PROG_TEST_RUN` with `repeat`). For the
    /// per-packet cost figure in the tests; needs root.
    ///
    /// # Errors
    /// [`DataplaneError::Load`] with the kernel's error.
    pub fn test_run_repeat(&self, frame: &[u8], repeat: u32) -> Result<(u32, std::time::Duration), DataplaneError> {
        let (action, mean, _) = self.run_in_kernel(frame, repeat)?;
        Ok((action, mean))
    }

    /// `BPF_PROG_TEST_RUN`: (action, mean time per run, output frame).
    fn run_in_kernel(&self, frame: &[u8], repeat: u32) -> Result<(u32, std::time::Duration, Vec<u8>), DataplaneError> {
        use aya::programs::{TestRun, TestRunOptions};
        let ebpf = self.ebpf.lock().expect("ebpf lock");
        let prog: &Xdp = ebpf
            .program(PROGRAM)
            .and_then(|p| p.try_into().ok())
            .ok_or_else(|| DataplaneError::Missing(format!("no program {PROGRAM}")))?;
        let mut out = vec![0u8; 4096];
        let opts = TestRunOptions {
            data_in: Some(frame),
            data_out: Some(&mut out),
            repeat,
            ..Default::default()
        };
        let r = prog.test_run(opts).map_err(|e| load_err("test_run", e))?;
        out.truncate(r.data_size_out as usize);
        Ok((r.return_value, r.duration, out))
    }

    /// Keys currently in [`DNS_RECORDS`], read back from the kernel (for tests).
    ///
    /// # Errors
    /// Map iteration errors.
    pub fn kernel_record_count(&self) -> Result<usize, DataplaneError> {
        let st = self.state.lock().expect("xdp state lock");
        let mut n = 0;
        for k in st.maps.records.keys() {
            k.map_err(map_err(DNS_RECORDS))?;
            n += 1;
        }
        Ok(n)
    }

    fn counters(st: &State) -> XdpCounters {
        let get = |i: u32| -> u64 { st.maps.counters.get(&i, 0).map(|v| v.iter().sum()).unwrap_or(0) };
        XdpCounters {
            answered: get(CNT_ANSWERED),
            pass_not_dns: get(CNT_PASS_NOT_DNS),
            pass_miss: get(CNT_PASS_MISS),
            pass_unsupported: get(CNT_PASS_UNSUPPORTED),
            pass_too_long: get(CNT_PASS_TOO_LONG),
            pass_malformed: get(CNT_PASS_MALFORMED),
            rrl_dropped: get(CNT_RRL_DROPPED),
            rrl_slipped: get(CNT_RRL_SLIPPED),
        }
    }
}

/// The [`DNS_CONFIG`] value for `p`: its config with the server addresses inline (or
/// [`CFG_FLAG_SERVER_MAP`] when there are more than [`INLINE_SERVER_ADDRS`]) and
/// [`CFG_FLAG_SCOPED`] when some entry is scoped. Both spare the program a map lookup
/// per packet in the common case.
pub fn kernel_config(p: &Projection) -> DnsConfig {
    let mut cfg = p.config;
    cfg.flags &= !(CFG_FLAG_SCOPED | CFG_FLAG_SERVER_MAP);
    cfg.server_addr_count = 0;
    cfg.server_addrs = [[0; 16]; INLINE_SERVER_ADDRS];
    let mut servers: Vec<[u8; 16]> = p.server_addrs.iter().map(|a| addr16(*a)).collect();
    servers.sort_unstable();
    servers.dedup();
    if servers.len() > INLINE_SERVER_ADDRS {
        cfg.flags |= CFG_FLAG_SERVER_MAP;
    } else {
        cfg.server_addr_count = servers.len() as u32;
        cfg.server_addrs[..servers.len()].copy_from_slice(&servers);
    }
    if p.entries.iter().any(|(k, _)| k.scope != SCOPE_GLOBAL) {
        cfg.flags |= CFG_FLAG_SCOPED;
    }
    cfg
}

/// True for interfaces without a backing device (veth, bridge, tap, loopback).
fn is_virtual(iface: &str) -> bool {
    !std::path::Path::new("/sys/class/net")
        .join(iface)
        .join("device")
        .exists()
}

/// Interfaces carrying one of `listen` (unspecified addresses match every address of
/// their family), in kernel order, without duplicates.
fn default_interfaces(listen: &[IpAddr]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in bootlane_core::net::interface_addrs() {
        let wanted = listen
            .iter()
            .any(|l| *l == a.addr || (l.is_unspecified() && l.is_ipv4() == a.addr.is_ipv4()));
        if wanted && !out.contains(&a.iface) {
            out.push(a.iface);
        }
    }
    out
}

impl DnsTable for XdpTable {
    fn apply(&self, p: &Projection) -> Result<(), DataplaneError> {
        let started = Instant::now();
        let mut st = self.state.lock().expect("xdp state lock");
        let st = &mut *st;
        if !st.reconciled {
            // Maps start empty on load, but remove anything we did not write anyway
            // (e.g. pinned maps in the future): the store is the source of truth.
            let stray: Vec<DnsKey> = st.maps.records.keys().filter_map(Result::ok).collect();
            for k in stray {
                if let Err(e) = st.maps.records.remove(&k) {
                    if !is_enoent(&e) {
                        return Err(map_err(DNS_RECORDS)(e));
                    }
                }
            }
            st.reconciled = true;
        }
        // Config first: port 0 (disabled) stops answers before data changes.
        st.maps
            .config
            .set(0, kernel_config(p), 0)
            .map_err(map_err(DNS_CONFIG))?;

        // Records: delete stale keys, then upsert new or changed values.
        let new: StdHashMap<DnsKey, DnsAnswer> = p.entries.iter().copied().collect();
        let stale: Vec<DnsKey> = st.records.keys().filter(|k| !new.contains_key(k)).copied().collect();
        for k in &stale {
            match st.maps.records.remove(k) {
                Ok(()) => {}
                Err(e) if is_enoent(&e) => {}
                Err(e) => return Err(map_err(DNS_RECORDS)(e)),
            }
            st.records.remove(k);
        }
        let mut upserts = 0usize;
        for (k, v) in &new {
            if st.records.get(k) == Some(v) {
                continue;
            }
            st.maps.records.insert(k, v, 0).map_err(map_err(DNS_RECORDS))?;
            st.records.insert(*k, *v);
            upserts += 1;
        }

        // Scopes: the LPM keys are few; rewrite the difference.
        let scopes: HashSet<([u8; 16], u32, u32)> = p
            .scopes
            .iter()
            .map(|(n, id)| {
                let (a, len) = lpm_key(n);
                (a, len, *id)
            })
            .collect();
        for (a, len, id) in st.scopes.difference(&scopes).copied().collect::<Vec<_>>() {
            if !scopes.iter().any(|(b, l, _)| *b == a && *l == len) {
                match st.maps.scopes.remove(&Key::new(len, a)) {
                    Ok(()) => {}
                    Err(e) if is_enoent(&e) => {}
                    Err(e) => return Err(map_err(DNS_SCOPES)(e)),
                }
            }
            st.scopes.remove(&(a, len, id));
        }
        for &(a, len, id) in &scopes {
            if !st.scopes.contains(&(a, len, id)) {
                st.maps
                    .scopes
                    .insert(&Key::new(len, a), id, 0)
                    .map_err(map_err(DNS_SCOPES))?;
                st.scopes.insert((a, len, id));
            }
        }

        // Server addresses.
        let servers: HashSet<[u8; 16]> = p.server_addrs.iter().map(|a| addr16(*a)).collect();
        for a in st.servers.difference(&servers).copied().collect::<Vec<_>>() {
            match st.maps.servers.remove(&a) {
                Ok(()) => {}
                Err(e) if is_enoent(&e) => {}
                Err(e) => return Err(map_err(DNS_SERVER_ADDRS)(e)),
            }
            st.servers.remove(&a);
        }
        for a in &servers {
            // Remember the address only once the kernel has it, so a failed insert is
            // retried on the next apply.
            if !st.servers.contains(a) {
                st.maps.servers.insert(a, 1, 0).map_err(map_err(DNS_SERVER_ADDRS))?;
                st.servers.insert(*a);
            }
        }
        tracing::debug!(
            entries = st.records.len(),
            upserts,
            deleted = stale.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "XDP maps updated"
        );
        Ok(())
    }

    fn attach(&self, listen: &[IpAddr]) -> Result<Vec<XdpInterface>, String> {
        self.attach_listen(listen)
    }

    fn detach(&self) {
        let mut ebpf = self.ebpf.lock().expect("ebpf lock");
        let Some(prog) = ebpf.program_mut(PROGRAM).and_then(|p| <&mut Xdp>::try_from(p).ok()) else {
            return;
        };
        let mut links = self.links.lock().expect("xdp links lock");
        for (iface, id) in std::mem::take(&mut links.attached) {
            match prog.detach(id) {
                Ok(()) => tracing::info!(interface = %iface.name, "XDP fast path detached"),
                Err(e) => tracing::warn!(interface = %iface.name, "detaching XDP failed: {e}"),
            }
        }
        links.reason = Some("detached: the DNS service is stopped".into());
    }

    fn status(&self) -> XdpStatus {
        let st = self.state.lock().expect("xdp state lock");
        let links = self.links.lock().expect("xdp links lock");
        XdpStatus {
            mode: self.mode.clone(),
            active: !links.attached.is_empty(),
            reason: links.reason.clone(),
            interfaces: links.attached.iter().map(|(i, _)| i.clone()).collect(),
            map_entries: st.records.len(),
            map_capacity: self.capacity,
            counters: Self::counters(&st),
        }
    }
}

const _: () = assert!(CNT_MAX == 8, "XdpCounters lists every CNT_* counter");

#[cfg(test)]
mod tests {
    use super::*;
    use bootlane_common::dns::{CFG_FLAG_RA, MAX_QNAME_LEN};

    fn entry(scope: u32) -> (DnsKey, DnsAnswer) {
        let key = DnsKey {
            scope,
            qtype: 1,
            qname_len: 1,
            qname: [0; MAX_QNAME_LEN],
        };
        let ans = DnsAnswer {
            ttl: 1,
            count: 1,
            addrs: [[0; 16]; 8],
        };
        (key, ans)
    }

    /// The kernel's config carries the server addresses inline (sorted, no duplicates)
    /// up to `INLINE_SERVER_ADDRS`, the map flag beyond, and the scope flag exactly
    /// when an entry is scoped; the caller's flags (RA) are kept and stale derived
    /// flags cleared.
    #[test]
    fn kernel_config_inlines_addresses_and_sets_the_flags() {
        let v4 = |s: &str| -> IpAddr { s.parse().unwrap() };
        let mut p = Projection {
            entries: vec![entry(0)],
            server_addrs: vec![v4("10.0.0.2"), v4("10.0.0.1"), v4("10.0.0.2")],
            config: DnsConfig {
                port: 53,
                edns_udp_size: 1232,
                flags: CFG_FLAG_RA | CFG_FLAG_SCOPED | CFG_FLAG_SERVER_MAP,
                ..Default::default()
            },
            ..Default::default()
        };
        let c = kernel_config(&p);
        assert_eq!(c.flags, CFG_FLAG_RA);
        assert_eq!(c.server_addr_count, 2);
        assert_eq!(c.server_addrs[0], addr16(v4("10.0.0.1")));
        assert_eq!(c.server_addrs[1], addr16(v4("10.0.0.2")));
        assert_eq!(c.server_addrs[2], [0; 16]);

        p.entries.push(entry(3));
        p.server_addrs = (1..=INLINE_SERVER_ADDRS + 1)
            .map(|i| v4(&format!("10.0.1.{i}")))
            .collect();
        let c = kernel_config(&p);
        assert_eq!(c.flags, CFG_FLAG_RA | CFG_FLAG_SCOPED | CFG_FLAG_SERVER_MAP);
        assert_eq!(c.server_addr_count, 0);
    }
}
