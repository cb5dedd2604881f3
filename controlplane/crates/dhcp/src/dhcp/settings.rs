//! The DHCP settings as groups of the settings layer ([`bootlane_core::settings`]): the
//! per-subnet settings of `[[dhcp.subnets]]` ([`Subnets4`]) and `[[dhcp.subnets6]]`
//! ([`Subnets6`]), and the architecture map ([`ArchMapSettings`]). The configuration file
//! is the base, `PUT /services/dhcp` and `PUT /services/archmap` store overrides over it,
//! and `bootlane config show` says where each value came from.
//!
//! A subnet group's keys are `<subnet>.<setting>` (e.g. `10.77.0.0/24.router`, the subnet
//! in CIDR form with its host bits cleared), so an override is kept per subnet and per
//! setting: a router changed through the API stays while the file's lease time for the
//! same subnet still applies. The subnets themselves (which exist, their reservations)
//! come from the file only. `mode`, `interface` and `server_address` need new sockets
//! (the DHCP service restarts); the others apply live. The architecture map is one key,
//! replaced whole (an entry removed through the API stays removed).
//!
//! The stored documents keep the shape older versions read: `subnet_overrides` and
//! `subnet6_overrides` hold `{<subnet>: {<setting>: value}}` and `arch_map` holds the map
//! itself (`{"<code>": "<boot file>"}`), all in the machine's own `dhcp_settings` tree.

use std::{
    collections::BTreeMap,
    fmt,
    net::{Ipv4Addr, Ipv6Addr},
};

use serde::{de::DeserializeOwned, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::config::{DhcpConfig, Subnet6Config, SubnetConfig, SubnetMode};
use bootlane_core::{
    service_error::ServiceError,
    settings::{Effect, Group, Layer, Problem},
    store::Store,
};

/// The settings of one IPv4 subnet that the API may change (`[[dhcp.subnets]]` less
/// `cidr` and `reservations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubnetSettings {
    /// `server`, `proxy` or `off` (restart).
    pub mode: SubnetMode,
    /// The interface (restart).
    pub interface: String,
    /// Bootlane's address on the subnet, `None`: from the interface (restart).
    pub server_address: Option<Ipv4Addr>,
    /// First pool address (live).
    pub range_start: Option<Ipv4Addr>,
    /// Last pool address (live).
    pub range_end: Option<Ipv4Addr>,
    /// Option 3 (live).
    pub router: Option<Ipv4Addr>,
    /// Option 6, `None`: Bootlane's own address (live).
    pub dns: Option<Vec<Ipv4Addr>>,
    /// Lease time in seconds, at least 60 (live).
    pub lease_time_secs: u32,
    /// x86-64 UEFI clients get the signed shim (live).
    pub secure_boot: bool,
}

impl SubnetSettings {
    /// The settings of a `[[dhcp.subnets]]` entry.
    pub fn of(c: &SubnetConfig) -> Self {
        Self {
            mode: c.mode,
            interface: c.interface.clone(),
            server_address: c.server_address,
            range_start: c.range_start,
            range_end: c.range_end,
            router: c.router,
            dns: c.dns.clone(),
            lease_time_secs: c.lease_time_secs,
            secure_boot: c.secure_boot,
        }
    }

    /// `c` with these settings (its `cidr` and reservations kept).
    pub fn apply_to(&self, c: &mut SubnetConfig) {
        c.mode = self.mode;
        c.interface.clone_from(&self.interface);
        c.server_address = self.server_address;
        c.range_start = self.range_start;
        c.range_end = self.range_end;
        c.router = self.router;
        c.dns.clone_from(&self.dns);
        c.lease_time_secs = self.lease_time_secs;
        c.secure_boot = self.secure_boot;
    }
}

/// The settings of one IPv6 subnet that the API may change (`[[dhcp.subnets6]]` less
/// `prefix`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subnet6Settings {
    /// `server`, `proxy` or `off` (restart).
    pub mode: SubnetMode,
    /// The interface (restart).
    pub interface: String,
    /// Put in boot-file URLs, `None`: a global address of the interface (restart).
    pub server_address: Option<Ipv6Addr>,
    /// First pool address (live).
    pub range_start: Option<Ipv6Addr>,
    /// Last pool address (live).
    pub range_end: Option<Ipv6Addr>,
    /// Option 23, `None`: Bootlane's own address (live).
    pub dns: Option<Vec<Ipv6Addr>>,
    /// Valid and preferred lifetime in seconds, at least 60 (live).
    pub lease_time_secs: u32,
}

impl Subnet6Settings {
    /// The settings of a `[[dhcp.subnets6]]` entry.
    pub fn of(c: &Subnet6Config) -> Self {
        Self {
            mode: c.mode,
            interface: c.interface.clone(),
            server_address: c.server_address,
            range_start: c.range_start,
            range_end: c.range_end,
            dns: c.dns.clone(),
            lease_time_secs: c.lease_time_secs,
        }
    }

    /// `c` with these settings (its `prefix` kept).
    pub fn apply_to(&self, c: &mut Subnet6Config) {
        c.mode = self.mode;
        c.interface.clone_from(&self.interface);
        c.server_address = self.server_address;
        c.range_start = self.range_start;
        c.range_end = self.range_end;
        c.dns.clone_from(&self.dns);
        c.lease_time_secs = self.lease_time_secs;
    }
}

/// The key of an IPv4 subnet: its network in CIDR form.
pub fn key4(c: &SubnetConfig) -> String {
    c.cidr.trunc().to_string()
}

/// The key of an IPv6 subnet: its prefix with the host bits cleared.
pub fn key6(c: &Subnet6Config) -> String {
    c.prefix.trunc().to_string()
}

/// Flattens `{subnet: settings}` to `{"<subnet>.<setting>": value}`.
fn flatten<S: Serialize>(by_subnet: &BTreeMap<String, S>) -> Result<Map<String, Value>, serde_json::Error> {
    let mut out = Map::new();
    for (subnet, s) in by_subnet {
        if let Value::Object(fields) = serde_json::to_value(s)? {
            for (k, v) in fields {
                out.insert(format!("{subnet}.{k}"), v);
            }
        }
    }
    Ok(out)
}

/// Groups `{"<subnet>.<setting>": value}` by subnet (the setting is after the last `.`).
fn nest(flat: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in flat {
        let Some((subnet, setting)) = k.rsplit_once('.') else {
            continue;
        };
        if let Value::Object(m) = out
            .entry(subnet.to_owned())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(setting.to_owned(), v);
        }
    }
    out
}

/// Reads a nested stored document `{subnet: {setting: value|null}}` as flat overrides,
/// `null` (an older version's "not overridden") dropped.
fn flat_overrides(doc: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (subnet, fields) in doc {
        if let Value::Object(fields) = fields {
            for (k, v) in fields.into_iter().filter(|(_, v)| !v.is_null()) {
                out.insert(format!("{subnet}.{k}"), v);
            }
        }
    }
    out
}

/// When a subnet setting's change takes effect.
fn subnet_effect(key: &str) -> Effect {
    match key.rsplit_once('.').map_or(key, |(_, setting)| setting) {
        "mode" | "interface" | "server_address" => Effect::Restart,
        _ => Effect::Live,
    }
}

/// The problems `problems` of `subnet`, one per key concerned (the settings layer gives a
/// message shared by several keys once), each message naming the subnet.
fn subnet_problems(label: &str, subnet: &str, problems: Vec<(&'static [&'static str], String)>) -> Vec<Problem> {
    problems
        .into_iter()
        .flat_map(|(keys, m)| {
            let message = format!("{label} {subnet}: {m}");
            let keys = if keys.is_empty() { &["cidr"][..] } else { keys };
            keys.iter()
                .map(|k| Problem::new(&format!("{subnet}.{k}"), message.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The settings a subnet group holds per subnet: IPv4 ([`SubnetSettings`]) or IPv6
/// ([`Subnet6Settings`]).
pub trait PerSubnet: Serialize + DeserializeOwned + Clone + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The stored document's key in `dhcp_settings`.
    const KEY: &'static str;
    /// What the messages call a subnet (`subnet`, `IPv6 subnet`).
    const LABEL: &'static str;
    /// The problems of these settings on `subnet` (its key), as
    /// [`SubnetConfig::settings_problems`] gives them; `Err` when `subnet` is not one.
    fn problems(&self, subnet: &str) -> Result<Vec<(&'static [&'static str], String)>, String>;
}

impl PerSubnet for SubnetSettings {
    const KEY: &'static str = "subnet_overrides";
    const LABEL: &'static str = "subnet";

    fn problems(&self, subnet: &str) -> Result<Vec<(&'static [&'static str], String)>, String> {
        let cidr = subnet.parse().map_err(|_| format!("{subnet:?} is not a subnet"))?;
        let mut c = SubnetConfig {
            mode: self.mode,
            interface: String::new(),
            cidr,
            range_start: None,
            range_end: None,
            router: None,
            dns: None,
            lease_time_secs: 0,
            server_address: None,
            reservations: Vec::new(),
            secure_boot: false,
        };
        self.apply_to(&mut c);
        Ok(c.settings_problems())
    }
}

impl PerSubnet for Subnet6Settings {
    const KEY: &'static str = "subnet6_overrides";
    const LABEL: &'static str = "IPv6 subnet";

    fn problems(&self, subnet: &str) -> Result<Vec<(&'static [&'static str], String)>, String> {
        let prefix = subnet
            .parse()
            .map_err(|_| format!("{subnet:?} is not an IPv6 subnet"))?;
        let mut c = Subnet6Config {
            mode: self.mode,
            interface: String::new(),
            prefix,
            range_start: None,
            range_end: None,
            dns: None,
            lease_time_secs: 0,
            server_address: None,
        };
        self.apply_to(&mut c);
        Ok(c.settings_problems())
    }
}

/// A subnet group: the settings of every subnet of one family, by subnet key ([`key4`],
/// [`key6`]). Serialises flat, `{"<subnet>.<setting>": value}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnets<S>(pub BTreeMap<String, S>);

/// The settings of every `[[dhcp.subnets]]` subnet.
pub type Subnets4 = Subnets<SubnetSettings>;
/// The settings of every `[[dhcp.subnets6]]` subnet.
pub type Subnets6 = Subnets<Subnet6Settings>;

impl<S: Serialize> Serialize for Subnets<S> {
    fn serialize<Z: Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        flatten(&self.0).map_err(serde::ser::Error::custom)?.serialize(z)
    }
}

impl<'de, S: DeserializeOwned> Deserialize<'de> for Subnets<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        nest(Map::deserialize(d)?)
            .into_iter()
            .map(|(k, v)| Ok((k, serde_json::from_value(v).map_err(serde::de::Error::custom)?)))
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

impl Subnets4 {
    /// The file's subnets' settings.
    pub fn of(subnets: &[SubnetConfig]) -> Self {
        Self(subnets.iter().map(|c| (key4(c), SubnetSettings::of(c))).collect())
    }
}

impl Subnets6 {
    /// The file's IPv6 subnets' settings.
    pub fn of(subnets: &[Subnet6Config]) -> Self {
        Self(subnets.iter().map(|c| (key6(c), Subnet6Settings::of(c))).collect())
    }
}

impl<S: PerSubnet> Group for Subnets<S> {
    const TREE: &'static str = super::control::SETTINGS_TREE;
    const KEY: &'static str = S::KEY;
    const SERVICE: &'static str = "dhcp";

    fn validate(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        for (subnet, s) in &self.0 {
            match s.problems(subnet) {
                Ok(p) => out.extend(subnet_problems(S::LABEL, subnet, p)),
                Err(m) => out.push(Problem::new(subnet, m)),
            }
        }
        out
    }

    fn effect(key: &str) -> Effect {
        subnet_effect(key)
    }

    fn stored_overrides(doc: Map<String, Value>) -> Map<String, Value> {
        flat_overrides(doc)
    }

    fn stored_document(overrides: &Map<String, Value>) -> Value {
        Value::Object(nest(overrides.clone()))
    }
}

/// The architecture map: client architecture (option 93, RFC 4578 §2.1) → boot file, one
/// key replaced whole. The file's value is `[dhcp.arch_map]` over the built-in map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchMapSettings {
    /// Architecture code → boot file (a path inside the boot directory, or an `http(s)://`
    /// URL); an architecture without an entry gets no boot file (live).
    pub arch_map: BTreeMap<u16, String>,
}

impl Group for ArchMapSettings {
    const TREE: &'static str = super::control::SETTINGS_TREE;
    const KEY: &'static str = "arch_map";
    const SERVICE: &'static str = "dhcp";

    fn validate(&self) -> Vec<Problem> {
        self.arch_map
            .iter()
            .filter_map(|(code, f)| check_boot_file(u32::from(*code), f).err())
            .map(|m| Problem::new("arch_map", m))
            .collect()
    }

    fn effect(_key: &str) -> Effect {
        Effect::Live
    }

    /// The stored document is the map itself.
    fn stored_overrides(doc: Map<String, Value>) -> Map<String, Value> {
        Map::from_iter([("arch_map".to_owned(), Value::Object(doc))])
    }

    fn stored_document(overrides: &Map<String, Value>) -> Value {
        overrides.get("arch_map").cloned().unwrap_or(Value::Null)
    }
}

/// Checks an architecture map entry's boot file: 1-255 bytes without spaces or control
/// characters, and either an `http://`/`https://` URL or a path inside the boot directory
/// (no leading `/`, no `..`). The error names the code and the file.
pub fn check_boot_file(code: u32, f: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("arch {code}: boot_file {f:?} {why}"));
    if f.is_empty() || f.len() > 255 {
        return bad("must be 1-255 bytes");
    }
    if f.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return bad("must not contain spaces or control characters");
    }
    if f.contains("://") {
        let lower = f.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) || f.len() <= "https://".len() {
            return bad("must be a file name or an http:// or https:// URL");
        }
        return Ok(());
    }
    if f.starts_with('/') || f.split(['/', '\\']).any(|c| c == ".." || c.is_empty()) {
        return bad("must be a path inside the boot directory (no leading '/', no '..')");
    }
    Ok(())
}

/// The three DHCP settings layers over the file's `[dhcp]`.
pub struct DhcpLayers {
    /// `[[dhcp.subnets]]` settings.
    pub subnets: Layer<Subnets4>,
    /// `[[dhcp.subnets6]]` settings.
    pub subnets6: Layer<Subnets6>,
    /// The architecture map.
    pub arch_map: Layer<ArchMapSettings>,
}

impl DhcpLayers {
    /// Opens the layers over `file` (what `bootlane serve` and `bootlane config show` read).
    /// The defaults of a subnet's settings (what `config show` reports as `default`) are
    /// those of a `[[dhcp.subnets]]` entry that sets only its cidr (the interface, which
    /// the file must set, is always reported from the file); the architecture map's is the
    /// built-in one.
    ///
    /// # Errors
    /// Store errors; [`ServiceError::Invalid`] when the file's `[dhcp.arch_map]` has a key
    /// that is not an architecture code (the file check refuses it first).
    pub fn open(store: &Store, file: &DhcpConfig) -> Result<Self, ServiceError> {
        let defaults4 = Subnets(
            file.subnets
                .iter()
                .map(|c| {
                    let mut d = SubnetSettings::of(c);
                    (d.mode, d.server_address, d.range_start, d.range_end) = (SubnetMode::Off, None, None, None);
                    (d.router, d.dns, d.lease_time_secs, d.secure_boot) = (None, None, 3600, false);
                    d.interface = String::new();
                    (key4(c), d)
                })
                .collect(),
        );
        let defaults6 = Subnets(
            file.subnets6
                .iter()
                .map(|c| {
                    let mut d = Subnet6Settings::of(c);
                    (d.mode, d.server_address, d.range_start, d.range_end) = (SubnetMode::Off, None, None, None);
                    (d.dns, d.lease_time_secs, d.interface) = (None, 3600, String::new());
                    (key6(c), d)
                })
                .collect(),
        );
        let arch = ArchMapSettings {
            arch_map: file.arch_map().map_err(|e| ServiceError::Invalid(format!("{e:#}")))?,
        };
        let builtin = ArchMapSettings {
            arch_map: super::config::default_arch_map(),
        };
        Ok(Self {
            subnets: Layer::open(store, defaults4, Subnets4::of(&file.subnets))?,
            subnets6: Layer::open(store, defaults6, Subnets6::of(&file.subnets6))?,
            arch_map: Layer::open(store, builtin, arch)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use bootlane_core::settings::{resolve, sources, Source};

    fn file() -> DhcpConfig {
        serde_json::from_value(json!({
            "subnets": [{"mode": "server", "interface": "br0", "cidr": "10.77.0.0/24",
                "range_start": "10.77.0.100", "range_end": "10.77.0.199", "lease_time_secs": 600}],
            "subnets6": [{"mode": "proxy", "interface": "br0", "prefix": "fd00:77::/64"}],
            "arch_map": {"7": "snponly.efi"}
        }))
        .unwrap()
    }

    #[test]
    fn keys_are_per_subnet_and_setting_and_the_stored_shape_is_the_older_one() {
        let f = Subnets4::of(&file().subnets);
        let flat = serde_json::to_value(&f).unwrap();
        assert_eq!(flat["10.77.0.0/24.lease_time_secs"], json!(600));
        assert_eq!(flat["10.77.0.0/24.router"], Value::Null);
        assert_eq!(serde_json::from_value::<Subnets4>(flat).unwrap(), f);
        // An older version's document: the router and an unset (null) DNS.
        let older = json!({"10.77.0.0/24": {"router": "10.77.0.1", "dns": null, "range_start": null,
            "range_end": null, "lease_time_secs": null}});
        let (value, overrides) = resolve(&f, Some(older), None).unwrap();
        assert_eq!(
            Value::Object(overrides.clone()),
            json!({"10.77.0.0/24.router": "10.77.0.1"})
        );
        let s = &value.0["10.77.0.0/24"];
        assert_eq!((s.router, s.lease_time_secs), (Some(Ipv4Addr::new(10, 77, 0, 1)), 600));
        assert_eq!(
            Subnets4::stored_document(&overrides),
            json!({"10.77.0.0/24": {"router": "10.77.0.1"}})
        );
        let src = sources(&Subnets(BTreeMap::<String, SubnetSettings>::new()), &f, &overrides);
        assert_eq!(src["10.77.0.0/24.router"], Source::Api);
        assert_eq!(src["10.77.0.0/24.lease_time_secs"], Source::File);
    }

    #[test]
    fn a_stored_pool_the_file_no_longer_allows_is_dropped_for_the_files() {
        let f = Subnets4::of(&file().subnets);
        let stored = json!({"10.77.0.0/24": {"range_end": "10.77.0.50"}});
        let (value, overrides) = resolve(&f, Some(stored), None).unwrap();
        assert!(overrides.is_empty(), "{overrides:?}");
        assert_eq!(value, f);
    }

    #[test]
    fn validation_names_the_subnet_and_the_key() {
        let mut v = Subnets4::of(&file().subnets);
        let s = v.0.get_mut("10.77.0.0/24").unwrap();
        s.lease_time_secs = 5;
        s.router = Some(Ipv4Addr::new(10, 9, 0, 1));
        let p = v.validate();
        let keys: Vec<&str> = p.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["10.77.0.0/24.lease_time_secs", "10.77.0.0/24.router"]);
        assert!(p[0]
            .message
            .starts_with("subnet 10.77.0.0/24: lease_time_secs must be at least 60"));
        let mut v6 = Subnets6::of(&file().subnets6);
        v6.0.get_mut("fd00:77::/64").unwrap().mode = SubnetMode::Server;
        let p = v6.validate();
        assert_eq!(p.len(), 3, "the pool's keys and the mode: {p:?}");
        assert!(p[0].message.contains("server mode needs range_start and range_end"));
    }

    #[test]
    fn effects() {
        for (k, e) in [
            ("10.77.0.0/24.mode", Effect::Restart),
            ("10.77.0.0/24.interface", Effect::Restart),
            ("fd00:77::/64.server_address", Effect::Restart),
            ("10.77.0.0/24.router", Effect::Live),
            ("10.77.0.0/24.secure_boot", Effect::Live),
        ] {
            assert_eq!(Subnets4::effect(k), e, "{k}");
        }
    }

    #[test]
    fn the_arch_map_is_stored_as_the_map_and_replaced_whole() {
        let file = ArchMapSettings {
            arch_map: file().arch_map().unwrap(),
        };
        let older = json!({"0": "undionly.kpxe"});
        let (value, overrides) = resolve(&file, Some(older.clone()), None).unwrap();
        assert_eq!(value.arch_map.len(), 1, "the stored map replaces the file's whole");
        assert_eq!(ArchMapSettings::stored_document(&overrides), older);
        let bad = ArchMapSettings {
            arch_map: BTreeMap::from([(7, "../x.efi".to_owned())]),
        };
        assert!(bad.validate()[0].message.contains("inside the boot directory"));
        // A stored map with a bad file is dropped for the file's.
        let (value, overrides) = resolve(&file, Some(json!({"7": "/abs.efi"})), None).unwrap();
        assert!(overrides.is_empty());
        assert_eq!(value, file);
    }
}
