//! The in-memory view of local DNS data that answers queries: built from the stored
//! records, the DNS settings and the server's interface addresses, immutable once built,
//! and replaced wholesale (an `Arc` swap) on every change. The userspace resolver and the
//! XDP projection ([`Zone::projection`]) both read answers through [`Zone::lookup`], so
//! the fast path can never answer differently from userspace.
//!
//! # Scopes (spec "Built-in DNS server", item 3)
//! Every distinct record `subnet` and every connected subnet of the server's interfaces is
//! a *scope*, numbered from 1; scope 0 is "no known subnet". A client's scope is the
//! longest such prefix containing its address. For a `(name, type)` the records visible in
//! a scope are the global ones and those whose `subnet` contains the scope's prefix; the
//! most specific subnet wins over less specific ones and over global records. Auto-records
//! (the server's own names) answer with the server's address on the interface whose subnet
//! is the most specific one containing the scope, else the first non-loopback address.

use std::{
    collections::{HashMap, HashSet},
    net::IpAddr,
};

use bootlane_common::dns::{DnsAnswer, DnsKey, MAX_ADDRS, MAX_QNAME_LEN, QTYPE_A, QTYPE_AAAA, SCOPE_GLOBAL};
use hickory_proto::rr::{
    rdata::{A, AAAA, CNAME, HINFO, MX, NS, SOA, TXT},
    Name, RData, Record, RecordType,
};
use ipnet::IpNet;

use super::{
    names,
    records::{txt_strings, DnsRecord, RecordKind},
};
use bootlane_core::net::IfAddr;

/// TTL of the synthesized SOA and NS records, and the negative-caching TTL (RFC 2308 §5).
pub const SOA_TTL: u32 = 300;
/// Negative TTL (SOA MINIMUM, RFC 2308 §4).
pub const NEGATIVE_TTL: u32 = 60;
/// Longest CNAME chain followed inside local data.
pub const MAX_CNAME_CHAIN: usize = 8;

#[derive(Debug, Clone)]
enum Data {
    Fixed(RData),
    /// An auto-record: the server's own address of this family, chosen per scope.
    ServerAddr,
}

#[derive(Debug, Clone)]
struct Entry {
    rtype: RecordType,
    ttl: u32,
    subnet: Option<IpNet>,
    data: Data,
}

/// Result of a local lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Records for the answer section (the first owner is the query name as sent), plus
    /// `chase`: a CNAME target outside local data that the caller may resolve upstream.
    Answer {
        /// Answer records in order.
        answers: Vec<Record>,
        /// Target of the last CNAME when it points outside local data.
        chase: Option<Name>,
    },
    /// The name exists (or is an empty non-terminal) but has no data of this type.
    NoData {
        /// SOA for the authority section when the name is inside the local domain.
        soa: Option<Record>,
    },
    /// The name is inside the local domain and does not exist.
    NxDomain {
        /// SOA for the authority section.
        soa: Record,
    },
    /// No local data: forward upstream or refuse.
    NotLocal,
}

/// Immutable snapshot of local DNS data. Cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Zone {
    origin: Name,
    server_name: Name,
    names: HashMap<Name, Vec<Entry>>,
    /// Names that exist only because a longer name below them exists (RFC 8020).
    non_terminals: HashSet<Name>,
    /// Scope prefixes; index i is scope id i + 1.
    scopes: Vec<IpNet>,
    /// (prefix length, scope index) sorted longest first, for userspace matching.
    lpm: Vec<(IpNet, u32)>,
    ifaddrs: Vec<IfAddr>,
    serial: u32,
    ra: bool,
}

/// Inputs of [`Zone::build`].
pub struct ZoneInput<'a> {
    /// Local domain (lowercase, absolute).
    pub origin: Name,
    /// The server's name label (`[server] name`).
    pub server_label: &'a str,
    /// All stored records (disabled ones are skipped).
    pub records: &'a [DnsRecord],
    /// The server's interface addresses.
    pub ifaddrs: Vec<IfAddr>,
    /// SOA serial (changes with every data change).
    pub serial: u32,
    /// Whether upstream forwarding is configured (sets RA in answers).
    pub recursion_available: bool,
}

impl Zone {
    /// Builds the snapshot. Records whose stored data no longer parses are skipped with a
    /// warning (they were validated on write).
    pub fn build(input: ZoneInput<'_>) -> Self {
        let origin = input.origin;
        let server_name = names::absolute(input.server_label, &origin).unwrap_or_else(|_| origin.clone());
        let mut names: HashMap<Name, Vec<Entry>> = HashMap::new();
        let mut subnets: HashSet<IpNet> = HashSet::new();
        for r in input.records.iter().filter(|r| r.enabled) {
            let Some(owner) = r.owner(&origin) else {
                continue;
            };
            let entry = match entry_of(r, &origin) {
                Some(e) => e,
                None => {
                    tracing::warn!(id = r.id, "stored DNS record does not parse; skipped");
                    continue;
                }
            };
            if let Some(s) = r.subnet {
                subnets.insert(s);
            }
            names.entry(owner).or_default().push(entry);
        }
        for a in input.ifaddrs.iter().filter(|a| !a.is_local_only()) {
            subnets.insert(a.net);
        }
        let mut scopes: Vec<IpNet> = subnets.into_iter().collect();
        scopes.sort_by_key(|n| (n.addr(), n.prefix_len()));
        let mut lpm: Vec<(IpNet, u32)> = scopes.iter().enumerate().map(|(i, n)| (*n, i as u32 + 1)).collect();
        lpm.sort_by_key(|(n, _)| std::cmp::Reverse(n.prefix_len()));
        let mut non_terminals = HashSet::new();
        for n in names.keys() {
            let mut p = n.base_name();
            while p.num_labels() > 0 && !names.contains_key(&p) && p != origin {
                if !non_terminals.insert(p.clone()) {
                    break;
                }
                p = p.base_name();
            }
        }
        Self {
            origin,
            server_name,
            names,
            non_terminals,
            scopes,
            lpm,
            ifaddrs: input.ifaddrs,
            serial: input.serial,
            ra: input.recursion_available,
        }
    }

    /// The local domain.
    pub fn origin(&self) -> &Name {
        &self.origin
    }

    /// Whether answers carry RA (upstream forwarding configured).
    pub fn recursion_available(&self) -> bool {
        self.ra
    }

    /// The scope of a client address: the id of the longest scope prefix containing it, or
    /// [`SCOPE_GLOBAL`].
    pub fn scope_of(&self, client: Option<IpAddr>) -> u32 {
        let Some(ip) = client.map(|c| c.to_canonical()) else {
            return SCOPE_GLOBAL;
        };
        self.lpm
            .iter()
            .find(|(n, _)| n.contains(&ip))
            .map(|(_, id)| *id)
            .unwrap_or(SCOPE_GLOBAL)
    }

    fn scope_net(&self, scope: u32) -> Option<IpNet> {
        scope.checked_sub(1).and_then(|i| self.scopes.get(i as usize)).copied()
    }

    /// The scope prefixes with their ids (for the XDP LPM trie).
    pub fn scopes(&self) -> impl Iterator<Item = (IpNet, u32)> + '_ {
        self.scopes.iter().enumerate().map(|(i, n)| (*n, i as u32 + 1))
    }

    fn visible(&self, e: &Entry, scope: u32) -> Option<u8> {
        match (e.subnet, self.scope_net(scope)) {
            (None, _) => Some(0),
            (Some(s), Some(net)) if s.contains(&net) => Some(s.prefix_len() + 1),
            _ => None,
        }
    }

    /// The server's own address of the family of `rtype` for a scope.
    fn server_addr(&self, rtype: RecordType, scope: u32) -> Option<IpAddr> {
        let fam = |a: &IpAddr| {
            matches!(
                (rtype, a),
                (RecordType::A, IpAddr::V4(_)) | (RecordType::AAAA, IpAddr::V6(_))
            )
        };
        let usable = || self.ifaddrs.iter().filter(|a| !a.is_local_only());
        if let Some(net) = self.scope_net(scope) {
            let iface = usable()
                .filter(|a| a.net.contains(&net))
                .max_by_key(|a| a.net.prefix_len())
                .map(|a| a.iface.clone());
            if let Some(iface) = iface {
                if let Some(a) = usable().find(|a| a.iface == iface && fam(&a.addr)) {
                    return Some(a.addr);
                }
            }
        }
        usable()
            .find(|a| fam(&a.addr))
            .or_else(|| self.ifaddrs.iter().find(|a| fam(&a.addr)))
            .map(|a| a.addr)
    }

    /// The visible RRset of `rtype` at `name` in `scope`: the most specific subnet wins;
    /// every record carries the RRset's smallest TTL (RFC 2181 §5.2).
    fn rrset(&self, name: &Name, rtype: RecordType, scope: u32) -> Vec<(u32, RData)> {
        let Some(entries) = self.names.get(name) else {
            return Vec::new();
        };
        let mut best: Option<u8> = None;
        for e in entries.iter().filter(|e| e.rtype == rtype) {
            if let Some(rank) = self.visible(e, scope) {
                best = Some(best.map_or(rank, |b| b.max(rank)));
            }
        }
        let Some(best) = best else { return Vec::new() };
        let mut out: Vec<(u32, RData)> = Vec::new();
        for e in entries
            .iter()
            .filter(|e| e.rtype == rtype && self.visible(e, scope) == Some(best))
        {
            let rdata = match &e.data {
                Data::Fixed(r) => r.clone(),
                Data::ServerAddr => match self.server_addr(rtype, scope) {
                    Some(IpAddr::V4(a)) => RData::A(A(a)),
                    Some(IpAddr::V6(a)) => RData::AAAA(AAAA(a)),
                    None => continue,
                },
            };
            if !out.iter().any(|(_, r)| *r == rdata) {
                out.push((e.ttl, rdata));
            }
        }
        if let Some(min) = out.iter().map(|(t, _)| *t).min() {
            out.iter_mut().for_each(|(t, _)| *t = min);
        }
        out
    }

    fn exists(&self, name: &Name, scope: u32) -> bool {
        *name == self.origin
            || self.non_terminals.contains(name)
            || self
                .names
                .get(name)
                .is_some_and(|es| es.iter().any(|e| self.visible(e, scope).is_some()))
    }

    fn in_zone(&self, name: &Name) -> bool {
        self.origin.zone_of(name)
    }

    /// The synthesized SOA record of the local domain (RFC 1035 §3.3.13).
    pub fn soa(&self) -> Record {
        Record::from_rdata(self.origin.clone(), SOA_TTL, RData::SOA(self.soa_rdata()))
    }

    fn soa_rdata(&self) -> SOA {
        let rname = Name::from_ascii("hostmaster")
            .ok()
            .and_then(|h| h.append_domain(&self.origin).ok())
            .unwrap_or_else(|| self.origin.clone());
        SOA::new(
            self.server_name.clone(),
            rname,
            self.serial,
            3600,
            600,
            86400,
            NEGATIVE_TTL,
        )
    }

    fn apex_synth(&self, name: &Name, rtype: RecordType) -> Option<Vec<(u32, RData)>> {
        if *name != self.origin {
            return None;
        }
        match rtype {
            RecordType::SOA => Some(vec![(SOA_TTL, RData::SOA(self.soa_rdata()))]),
            RecordType::NS => Some(vec![(SOA_TTL, RData::NS(NS(self.server_name.clone())))]),
            _ => None,
        }
    }

    /// Looks up `qname`/`qtype` for a client in `scope`. `qname` keeps its case: the first
    /// answer owner is `qname` exactly as sent, so the encoder compresses it to the
    /// question (the XDP path writes the same pointer).
    pub fn lookup(&self, qname: &Name, qtype: RecordType, scope: u32) -> Lookup {
        let mut lname = qname.to_lowercase();
        lname.set_fqdn(true);
        if !self.in_zone(&lname) && !self.names.contains_key(&lname) {
            return Lookup::NotLocal;
        }
        if !self.exists(&lname, scope) {
            if self.in_zone(&lname) {
                return Lookup::NxDomain { soa: self.soa() };
            }
            return Lookup::NotLocal;
        }
        let negative_soa = self.in_zone(&lname).then(|| self.soa());
        if qtype == RecordType::ANY {
            // RFC 8482 §4.2: one synthesized HINFO instead of every RRset.
            let h = RData::HINFO(HINFO::new("RFC8482".into(), String::new()));
            return Lookup::Answer {
                answers: vec![Record::from_rdata(qname.clone(), 3789, h)],
                chase: None,
            };
        }
        let mut answers = Vec::new();
        let mut owner = qname.clone();
        let mut current = lname;
        for _ in 0..=MAX_CNAME_CHAIN {
            let set = self
                .apex_synth(&current, qtype)
                .unwrap_or_else(|| self.rrset(&current, qtype, scope));
            if !set.is_empty() {
                answers.extend(
                    set.into_iter()
                        .map(|(ttl, r)| Record::from_rdata(owner.clone(), ttl, r)),
                );
                return Lookup::Answer { answers, chase: None };
            }
            if qtype == RecordType::CNAME {
                break;
            }
            let cname = self.rrset(&current, RecordType::CNAME, scope);
            let Some((ttl, RData::CNAME(target))) = cname.into_iter().next() else {
                break;
            };
            answers.push(Record::from_rdata(owner.clone(), ttl, RData::CNAME(target.clone())));
            let target = target.0.to_lowercase();
            if !self.exists(&target, scope) {
                let chase = (!self.in_zone(&target)).then(|| target.clone());
                return Lookup::Answer { answers, chase };
            }
            owner = target.clone();
            current = target;
        }
        if answers.is_empty() {
            Lookup::NoData { soa: negative_soa }
        } else {
            Lookup::Answer { answers, chase: None }
        }
    }

    /// Number of owner names with local data.
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// The XDP projection: every `(scope, qname, qtype)` whose answer the fast path can
    /// give byte-for-byte like userspace (A/AAAA RRsets of 1..=[`MAX_ADDRS`] records at the
    /// query name, no CNAME), computed through [`Zone::lookup`]. A scoped entry is written
    /// only where the scope's answer differs from the global one; where the global answer
    /// exists but a scope's answer cannot be given by XDP, a `count = 0` entry tells the
    /// program to pass that query to userspace.
    pub fn projection(&self) -> Vec<(DnsKey, DnsAnswer)> {
        let mut out = Vec::new();
        let scope_ids: Vec<u32> = std::iter::once(SCOPE_GLOBAL)
            .chain(self.scopes().map(|(_, id)| id))
            .collect();
        // Unordered on purpose: sorting 100k names case-insensitively costs more than the
        // rest of the projection; the map does not care about order.
        let mut owners: Vec<&Name> = self.names.keys().collect();
        if !self.names.contains_key(&self.origin) {
            owners.push(&self.origin);
        }
        for name in owners {
            let wire = names::to_wire_lower(name);
            if wire.len() > MAX_QNAME_LEN {
                continue;
            }
            // A name whose entries are all global, fixed data answers the same in every
            // scope, so only its global entry is computed (the common case, and what keeps
            // a 100k-record projection cheap).
            let scoped = self.names.get(name).is_none_or(|es| {
                es.iter()
                    .any(|e| e.subnet.is_some() || matches!(e.data, Data::ServerAddr))
            });
            let scopes = if scoped { &scope_ids[..] } else { &scope_ids[..1] };
            let has_cname = self
                .names
                .get(name)
                .is_some_and(|es| es.iter().any(|e| e.rtype == RecordType::CNAME));
            for (rtype, qtype) in [(RecordType::A, QTYPE_A), (RecordType::AAAA, QTYPE_AAAA)] {
                let global = if scoped || has_cname {
                    xdp_answer(&self.lookup(name, rtype, SCOPE_GLOBAL))
                } else {
                    // Same result as `lookup` for an existing name without CNAME or scoped
                    // data (the differential test holds both paths to the same bytes).
                    xdp_rrset(&self.rrset(name, rtype, SCOPE_GLOBAL))
                };
                for &scope in scopes {
                    let ans = if scope == SCOPE_GLOBAL {
                        global
                    } else {
                        xdp_answer(&self.lookup(name, rtype, scope))
                    };
                    let emit = match (scope, &ans, &global) {
                        (SCOPE_GLOBAL, Some(_), _) => ans,
                        (SCOPE_GLOBAL, None, _) => None,
                        (_, a, g) if a == g => None,
                        (_, Some(_), _) => ans,
                        (_, None, Some(g)) => Some(DnsAnswer {
                            ttl: g.ttl,
                            count: 0,
                            addrs: [[0; 16]; MAX_ADDRS],
                        }),
                        (_, None, None) => None,
                    };
                    if let Some(a) = emit {
                        let mut qname = [0u8; MAX_QNAME_LEN];
                        qname[..wire.len()].copy_from_slice(&wire);
                        out.push((
                            DnsKey {
                                scope,
                                qtype,
                                qname_len: wire.len() as u16,
                                qname,
                            },
                            a,
                        ));
                    }
                }
            }
        }
        out
    }
}

/// The fast-path value for a lookup result, if XDP can give exactly that answer.
fn xdp_answer(l: &Lookup) -> Option<DnsAnswer> {
    let Lookup::Answer { answers, chase: None } = l else {
        return None;
    };
    let set: Vec<(u32, &RData)> = answers.iter().map(|r| (r.ttl, &r.data)).collect();
    xdp_value(&set)
}

/// The fast-path value for an RRset from [`Zone::rrset`].
fn xdp_rrset(set: &[(u32, RData)]) -> Option<DnsAnswer> {
    let set: Vec<(u32, &RData)> = set.iter().map(|(t, r)| (*t, r)).collect();
    xdp_value(&set)
}

fn xdp_value(set: &[(u32, &RData)]) -> Option<DnsAnswer> {
    if set.is_empty() || set.len() > MAX_ADDRS {
        return None;
    }
    let mut a = DnsAnswer {
        ttl: set[0].0,
        count: set.len() as u32,
        addrs: [[0; 16]; MAX_ADDRS],
    };
    for (slot, (_, r)) in a.addrs.iter_mut().zip(set) {
        match r {
            RData::A(v4) => slot[..4].copy_from_slice(&v4.0.octets()),
            RData::AAAA(v6) => *slot = v6.0.octets(),
            _ => return None,
        }
    }
    Some(a)
}

fn entry_of(r: &DnsRecord, origin: &Name) -> Option<Entry> {
    let (rtype, data) = match r.kind {
        RecordKind::A if r.auto => (RecordType::A, Data::ServerAddr),
        RecordKind::AAAA if r.auto => (RecordType::AAAA, Data::ServerAddr),
        RecordKind::A => (RecordType::A, Data::Fixed(RData::A(A(r.value.parse().ok()?)))),
        RecordKind::AAAA => (RecordType::AAAA, Data::Fixed(RData::AAAA(AAAA(r.value.parse().ok()?)))),
        RecordKind::CNAME => (
            RecordType::CNAME,
            Data::Fixed(RData::CNAME(CNAME(names::absolute_target(&r.value, origin).ok()?))),
        ),
        RecordKind::MX => {
            let host = names::absolute_target(&r.value, origin).ok()?;
            (
                RecordType::MX,
                Data::Fixed(RData::MX(MX::new(r.priority.unwrap_or(10), host))),
            )
        }
        RecordKind::TXT => (
            RecordType::TXT,
            Data::Fixed(RData::TXT(TXT::new(txt_strings(&r.value)))),
        ),
    };
    Some(Entry {
        rtype,
        ttl: r.ttl,
        subnet: r.subnet,
        data,
    })
}
