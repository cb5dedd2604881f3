//! Shared fixtures and oracles of Bootlane's fuzz targets: the zone, DNS handler and XDP
//! projection the DNS targets query; DHCPv4 and DHCPv6 handlers over in-memory lease
//! tables (the unit tests' subnets); a TFTP boot root with known files and a symlink
//! pointing out of it; and the tokenizers that model how iPXE (`exec.c`) and GRUB (its
//! shell-like lexer) split a script into commands, which the `render` target uses to
//! prove that no field value adds a command. Every fixture is built once per fuzzing
//! process and shared by all iterations.

use std::{
    net::{IpAddr, Ipv4Addr},
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use bootlane::{
    dataplane::Projection,
    dhcp::{
        config::{default_arch_map, Reservation, Subnet6Config, SubnetConfig, SubnetMode},
        handler::{BootHandler, Subnet},
        leases::LeaseDb,
        v6::{
            handler::{Dhcp6Handler, Subnet6},
            leases::Lease6Db,
        },
    },
    dns::{
        handler::{DnsHandler, EDNS_UDP_SIZE},
        names::parse_domain,
        records::{validate, DnsRecord, RecordInput},
        zone::{Zone, ZoneInput},
    },
    net::IfAddr,
};
use bootlane_common::dns::DnsConfig;

/// A current-thread tokio runtime (time enabled) shared by the async targets.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

fn rec(id: u64, name: &str, kind: &str, value: &str, subnet: Option<&str>, auto: bool) -> DnsRecord {
    let input = RecordInput {
        name: Some(name.into()),
        kind: Some(kind.into()),
        value: Some(value.into()),
        subnet: subnet.map(String::from),
        ..Default::default()
    };
    let origin = parse_domain("lab.test").expect("origin");
    let mut r = validate(&input, None, &origin, time::OffsetDateTime::UNIX_EPOCH).expect("fixture record");
    r.id = id;
    r.auto = auto;
    r
}

fn ifaddr(iface: &str, cidr: &str) -> IfAddr {
    let net: ipnet::IpNet = cidr.parse().expect("fixture prefix");
    IfAddr {
        iface: iface.into(),
        addr: net.addr(),
        net: net.trunc(),
    }
}

/// Bootlane's addresses in the DNS fixture: the server side of every client below.
pub const SERVER_ADDRS: [&str; 3] = ["10.77.0.1", "10.78.0.1", "fd77::1"];
/// Client addresses the DNS targets pick from (two scoped subnets, IPv6, and outsiders).
pub const CLIENTS: [&str; 5] = ["10.77.0.2", "10.78.0.2", "fd77::2", "10.99.0.5", "fd99::5"];

/// The zone `lab.test` every DNS target answers from: multi-record A/AAAA RRsets, a
/// subnet-scoped record for each family, the server's auto-records, a CNAME, MX, a long
/// TXT (truncation), a deep name, and eight A records under one name (the XDP maximum).
pub fn zone() -> Arc<Zone> {
    static ZONE: OnceLock<Arc<Zone>> = OnceLock::new();
    ZONE.get_or_init(|| {
        let mut v = vec![
            rec(1, "host1", "A", "10.0.0.11", None, false),
            rec(2, "host1", "A", "10.0.0.12", None, false),
            rec(3, "host1", "AAAA", "fd00::11", None, false),
            rec(4, "svc", "A", "192.0.2.1", None, false),
            rec(5, "svc", "A", "10.78.0.50", Some("10.78.0.0/24"), false),
            rec(6, "v6only", "AAAA", "fd00::66", None, false),
            rec(7, "www", "CNAME", "host1", None, false),
            rec(8, "scoped6", "AAAA", "fd77::99", Some("fd77::/64"), false),
            rec(9, "@", "A", "10.77.0.1", None, true),
            rec(10, "bootlane", "A", "10.77.0.1", None, true),
            rec(11, "bootlane", "AAAA", "fd77::1", None, true),
            rec(12, "@", "MX", "10 host1", None, false),
            rec(13, "@", "TXT", &"t".repeat(300), None, false),
            rec(14, "a.deep", "A", "10.0.0.99", None, false),
            rec(15, "big", "TXT", &"x".repeat(3000), None, false),
        ];
        for i in 0..8u64 {
            v.push(rec(20 + i, "eight", "A", &format!("10.1.0.{}", i + 1), None, false));
        }
        Arc::new(Zone::build(ZoneInput {
            origin: parse_domain("lab.test").expect("origin"),
            server_label: "bootlane",
            records: &v,
            ifaddrs: vec![
                ifaddr("lo", "127.0.0.1/8"),
                ifaddr("vsrv", "10.77.0.1/24"),
                ifaddr("vsrv", "fd77::1/64"),
                ifaddr("vsrv2", "10.78.0.1/24"),
            ],
            serial: 7,
            recursion_available: false,
        }))
    })
    .clone()
}

/// The userspace DNS handler over [`zone`] (no upstream: outside names are REFUSED).
pub fn dns_handler() -> &'static DnsHandler {
    static H: OnceLock<DnsHandler> = OnceLock::new();
    H.get_or_init(|| {
        let h = DnsHandler::default();
        h.set_zone(zone());
        h
    })
}

/// The BPF map contents for [`zone`], as the control plane writes them.
pub fn projection() -> Projection {
    let z = zone();
    Projection {
        entries: z.projection(),
        scopes: z.scopes().collect(),
        server_addrs: SERVER_ADDRS.iter().map(|s| s.parse().expect("address")).collect(),
        config: DnsConfig {
            port: 53,
            edns_udp_size: EDNS_UDP_SIZE,
            flags: 0,
            ..Default::default()
        },
    }
}

/// Bootlane's IPv4 address in the DHCP fixture.
pub const DHCP_SERVER: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);

/// A DHCPv4 handler: one directly attached server-mode subnet (`eth0`, 10.77.0.0/24, a
/// pool of 11 addresses, one reservation) and one relayed subnet (10.88.0.0/24), leases
/// in memory. `proxy` makes the attached subnet a proxyDHCP one instead.
pub fn dhcp4_handler(proxy: bool) -> &'static BootHandler {
    static SERVER: OnceLock<BootHandler> = OnceLock::new();
    static PROXY: OnceLock<BootHandler> = OnceLock::new();
    let make = |mode: SubnetMode| {
        let attached = SubnetConfig {
            mode,
            interface: "eth0".into(),
            cidr: "10.77.0.0/24".parse().expect("cidr"),
            range_start: Some(Ipv4Addr::new(10, 77, 0, 100)),
            range_end: Some(Ipv4Addr::new(10, 77, 0, 110)),
            router: Some(DHCP_SERVER),
            dns: None,
            lease_time_secs: 3600,
            server_address: Some(DHCP_SERVER),
            reservations: vec![Reservation {
                mac: "52:54:00:77:00:99".into(),
                ip: Ipv4Addr::new(10, 77, 0, 50),
                hostname: Some("fixed".into()),
            }],
            secure_boot: false,
        };
        let relayed = SubnetConfig {
            mode: SubnetMode::Server,
            cidr: "10.88.0.0/24".parse().expect("cidr"),
            range_start: Some(Ipv4Addr::new(10, 88, 0, 10)),
            range_end: Some(Ipv4Addr::new(10, 88, 0, 20)),
            router: Some(Ipv4Addr::new(10, 88, 0, 1)),
            reservations: vec![],
            ..attached.clone()
        };
        let subnets = [attached, relayed]
            .iter()
            .map(|c| Subnet::resolve(c, &[]).expect("fixture subnet"))
            .collect();
        BootHandler::new(
            subnets,
            default_arch_map(),
            8080,
            Box::new(|| "lab.test".to_string()),
            LeaseDb::in_memory(),
        )
    };
    if proxy {
        PROXY.get_or_init(|| make(SubnetMode::Proxy))
    } else {
        SERVER.get_or_init(|| make(SubnetMode::Server))
    }
}

/// A DHCPv6 handler on link `lab0` (fd00:77::/64, pool ::100-::1ff) in server mode, or
/// information-only (`proxy`), leases in memory.
pub fn dhcp6_handler(proxy: bool) -> &'static Dhcp6Handler {
    static SERVER: OnceLock<Dhcp6Handler> = OnceLock::new();
    static PROXY: OnceLock<Dhcp6Handler> = OnceLock::new();
    let make = |mode: SubnetMode| {
        let server = mode == SubnetMode::Server;
        let cfg = Subnet6Config {
            mode,
            interface: "lab0".into(),
            prefix: "fd00:77::/64".parse().expect("prefix"),
            range_start: server.then(|| "fd00:77::100".parse().expect("address")),
            range_end: server.then(|| "fd00:77::1ff".parse().expect("address")),
            dns: None,
            lease_time_secs: 600,
            server_address: Some("fd00:77::1".parse().expect("address")),
        };
        Dhcp6Handler::new(
            vec![Subnet6::resolve(&cfg, &[]).expect("fixture subnet")],
            default_arch_map(),
            8080,
            vec![0, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9],
            Arc::new(tokio::sync::Mutex::new(Lease6Db::in_memory())),
        )
    };
    if proxy {
        PROXY.get_or_init(|| make(SubnetMode::Proxy))
    } else {
        SERVER.get_or_init(|| make(SubnetMode::Server))
    }
}

/// Size of [`TFTP_FILE`] in the TFTP fixture root: six 512-byte blocks and a short one.
pub const TFTP_FILE_SIZE: usize = 3_300;
/// The file the TFTP targets (and the seed captures) fetch.
pub const TFTP_FILE: &str = "small.bin";

/// Byte `i` of [`TFTP_FILE`].
pub fn tftp_byte(i: usize) -> u8 {
    (i.wrapping_mul(7) % 251) as u8
}

/// The TFTP boot root: [`TFTP_FILE`], `sub/inner.txt`, a symlink `escape` to `/etc`
/// and `passwd` to `/etc/passwd` (both must be refused), kept for the process's life.
/// Answers the root's canonical path.
pub fn tftp_root() -> &'static PathBuf {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &ROOT
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary TFTP root");
            let root = dir.path().canonicalize().expect("canonical root");
            let bytes: Vec<u8> = (0..TFTP_FILE_SIZE).map(tftp_byte).collect();
            std::fs::write(root.join(TFTP_FILE), bytes).expect("fixture file");
            std::fs::create_dir(root.join("sub")).expect("fixture dir");
            std::fs::write(root.join("sub/inner.txt"), b"inner\n").expect("fixture file");
            std::os::unix::fs::symlink("/etc", root.join("escape")).expect("symlink");
            std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).expect("symlink");
            (dir, root)
        })
        .1
}

/// The client (`CLIENTS[i % 5]`) and server address of the same family for selector `i`.
pub fn client_server(i: u8) -> (IpAddr, IpAddr) {
    let c: IpAddr = CLIENTS[usize::from(i) % CLIENTS.len()].parse().expect("address");
    let s: IpAddr = match (c, i / 8 % 2) {
        (IpAddr::V6(_), _) => SERVER_ADDRS[2],
        (IpAddr::V4(_), 0) => SERVER_ADDRS[0],
        (IpAddr::V4(_), _) => SERVER_ADDRS[1],
    }
    .parse()
    .expect("address");
    (c, s)
}

/// How iPXE splits a script into commands (`exec.c`, `parse.c`): lines on `\n`, words on
/// whitespace, a command ends at a `;`, `&&` or `||` word, and a word starting with `#`
/// starts a comment. Answers each command as (line number, its words); a label line
/// (`:name`) is a command of one word.
pub fn ipxe_commands(script: &str) -> Vec<(usize, Vec<&str>)> {
    let mut out = Vec::new();
    for (n, line) in script.lines().enumerate() {
        let mut cur: Vec<&str> = Vec::new();
        for w in line.split_whitespace() {
            if w.starts_with('#') {
                break;
            }
            if matches!(w, ";" | "&&" | "||") {
                out.push((n, std::mem::take(&mut cur)));
                continue;
            }
            cur.push(w);
        }
        if !cur.is_empty() {
            out.push((n, cur));
        }
    }
    out
}

/// A GRUB script word or operator, as GRUB's lexer (`grub-core/script/yylex.l`) sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrubToken {
    /// A word with its quotes removed; `expands` when it holds an unquoted or
    /// double-quoted `$` (a variable GRUB would substitute).
    Word {
        /// The text.
        text: String,
        /// A `$` GRUB would expand.
        expands: bool,
    },
    /// An operator or separator: `;`, `|`, `&`, `<`, `>`, `{`, `}`, newline.
    Op(char),
}

/// Splits a GRUB script into [`GrubToken`]s: `#` at a word start comments to the end of
/// the line; `'...'` is literal; `"..."` keeps `$` expansion and `\` escapes; `\` escapes
/// the next character outside quotes; unquoted `;|&<>` and newline are operators, and
/// `{`/`}` are operators when they stand alone. `Err` for an unterminated quote (GRUB
/// would read the next line as part of the word).
pub fn grub_tokens(script: &str) -> Result<Vec<GrubToken>, String> {
    let mut out = Vec::new();
    let mut chars = script.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    let mut expands = false;
    // A quote or backslash makes `{`/`}` a plain word.
    let mut quoted = false;
    let flush =
        |out: &mut Vec<GrubToken>, word: &mut String, in_word: &mut bool, expands: &mut bool, quoted: &mut bool| {
            if *in_word {
                let text = std::mem::take(word);
                if !*quoted && (text == "{" || text == "}") {
                    out.push(GrubToken::Op(text.chars().next().unwrap_or('{')));
                } else {
                    out.push(GrubToken::Word {
                        text,
                        expands: *expands,
                    });
                }
            }
            *in_word = false;
            *expands = false;
            *quoted = false;
        };
    while let Some(c) = chars.next() {
        match c {
            '#' if !in_word => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push(GrubToken::Op('\n'));
                        break;
                    }
                }
            }
            ' ' | '\t' => flush(&mut out, &mut word, &mut in_word, &mut expands, &mut quoted),
            '\n' | ';' | '|' | '&' | '<' | '>' => {
                flush(&mut out, &mut word, &mut in_word, &mut expands, &mut quoted);
                out.push(GrubToken::Op(c));
            }
            '\'' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err("unterminated double quote".into()),
                        },
                        Some('$') => {
                            expands = true;
                            word.push('$');
                        }
                        Some(c) => word.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                quoted = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            '$' => {
                in_word = true;
                expands = true;
                word.push('$');
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut out, &mut word, &mut in_word, &mut expands, &mut quoted);
    Ok(out)
}

/// Lets panics raised inside dhcproto unwind instead of aborting the fuzzer. dhcproto
/// 0.15 has `debug_assert!`s on some option lengths that fire on malformed input in
/// builds with debug assertions (the fuzz builds); Bootlane's packet parsers catch them
/// with `catch_unwind` and treat the datagram as undecodable. libFuzzer's panic hook
/// aborts before any unwinding, so this hook passes every other panic on to it and
/// stays silent for dhcproto's own. Installed once per process.
pub fn tolerate_dhcproto_asserts() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_dhcproto = info.location().is_some_and(|l| l.file().contains("dhcproto-"));
            if !in_dhcproto {
                previous(info);
            }
        }));
    });
}
