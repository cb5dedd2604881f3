//! Measures how long one DNS data change costs at scale: building the zone and its XDP
//! projection from N records (default 100,000). `cargo run --release --example zone_scale [N]`.
#![allow(clippy::print_stdout, reason = "a measurement tool")]

use std::time::Instant;

use bootlane::{
    dns::{
        names,
        records::{self, RecordInput},
        zone::{Zone, ZoneInput},
    },
    net::interface_addrs,
};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let origin = names::parse_domain("lab.test").expect("origin");
    let now = time::OffsetDateTime::now_utc();
    let recs: Vec<_> = (0..n)
        .map(|i| {
            let input = RecordInput {
                name: Some(format!("host{i}")),
                kind: Some("A".into()),
                value: Some(format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255)),
                ..Default::default()
            };
            let mut r = records::validate(&input, None, &origin, now).expect("valid");
            r.id = i as u64 + 1;
            r
        })
        .collect();
    let t = Instant::now();
    let zone = Zone::build(ZoneInput {
        origin,
        server_label: "bootlane",
        records: &recs,
        ifaddrs: interface_addrs(),
        serial: 1,
        recursion_available: false,
    });
    let built = t.elapsed();
    let p = zone.projection();
    println!(
        "{n} records: zone build {built:?}, projection {:?} ({} entries)",
        t.elapsed() - built,
        p.len()
    );
}
