//! `xdp-bench`: the benchmark's handle on the XDP programs it compares, run by
//! `scripts/bench-dns-xdp.sh` as root.
//!
//! - `xdp-bench attach <object> <drop|minimal> <iface> <native|generic> [port] [names]`
//!   loads `xdp_drop_floor` or `minimal_responder` from the bench object
//!   (`dataplane-ebpf/src/bin/bench-responders.rs`, built beside the Bootlane program,
//!   never embedded in the binary), fills the minimal responder's map with the bench's
//!   records (`host<i>.lab.test A 10.<i/250>.<i%250>.1`, `i < names`, default 1000, TTL
//!   300), attaches it and prints `attached <prog id>`; it stays attached until the
//!   process is killed (the link is a file descriptor of this process).
//! - `xdp-bench test-run <object>`: the kernel's own time per run (median of 20,000) (`BPF_PROG_TEST_RUN`,
//!   no generator involved) of the floor, the minimal responder and the Bootlane program
//!   on the same IPv4 A query, plus Bootlane's IPv6/EDNS/8-record and scoped cases; one
//!   line per program, `name ns`.

use std::{net::IpAddr, time::Duration};

use aya::{
    maps::{Array, HashMap},
    programs::{TestRun, TestRunOptions, Xdp, XdpMode},
    Ebpf,
};
use bootlane::dataplane::{DnsTable, Projection};
use bootlane_common::dns::{DnsAnswer, DnsConfig, DnsKey, QTYPE_A};
use bootlane_tests::xdp_frames::{answer, frame, key, query, Edns};

/// The bench's records: `host<i>.lab.test` → `10.<i/250>.<i%250>.1`.
fn records(names: usize) -> Vec<(DnsKey, DnsAnswer)> {
    (0..names)
        .map(|i| {
            let a: IpAddr = format!("10.{}.{}.1", i / 250, i % 250).parse().expect("address");
            (key(&format!("host{i}.lab.test"), QTYPE_A, 0), answer(300, &[a]))
        })
        .collect()
}

/// Loads `program` from `object`, with the minimal responder's map and port filled.
fn load(object: &str, program: &str, port: u16, names: usize) -> anyhow::Result<Ebpf> {
    let mut ebpf = Ebpf::load_file(object)?;
    let p: &mut Xdp = ebpf
        .program_mut(program)
        .ok_or_else(|| anyhow::anyhow!("{object} has no program {program}"))?
        .try_into()?;
    p.load()?;
    if program == "minimal_responder" {
        let mut cfg: Array<_, u32> = Array::try_from(ebpf.map_mut("MIN_PORT").expect("MIN_PORT"))?;
        cfg.set(0, u32::from(port), 0)?;
        let mut m: HashMap<_, DnsKey, DnsAnswer> =
            HashMap::try_from(ebpf.map_mut("MIN_RECORDS").expect("MIN_RECORDS"))?;
        for (k, v) in records(names) {
            m.insert(k, v, 0)?;
        }
    }
    Ok(ebpf)
}

fn program_name(which: &str) -> anyhow::Result<&'static str> {
    match which {
        "drop" => Ok("xdp_drop_floor"),
        "minimal" => Ok("minimal_responder"),
        other => anyhow::bail!("unknown program {other:?}: drop or minimal"),
    }
}

/// Median of `samples` (robust against the interrupts that inflate a mean).
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Median kernel time per run of `run` over `n` calls (one run per call: a repeated
/// run would work on the frame it already rewrote), and the last verdict.
fn per_run(n: u32, mut run: impl FnMut() -> anyhow::Result<(u32, Duration)>) -> anyhow::Result<(u32, Duration)> {
    let mut samples = Vec::with_capacity(n as usize);
    let mut action = 0;
    for _ in 0..n {
        let (a, d) = run()?;
        action = a;
        samples.push(d);
    }
    Ok((action, median(samples)))
}

/// One `BPF_PROG_TEST_RUN` of `prog` on `f`: verdict and kernel-measured duration.
fn run_once(prog: &Xdp, f: &[u8]) -> anyhow::Result<(u32, Duration)> {
    let mut out = vec![0u8; 4096];
    let r = prog.test_run(TestRunOptions {
        data_in: Some(f),
        data_out: Some(&mut out),
        repeat: 1,
        ..Default::default()
    })?;
    Ok((r.return_value, r.duration))
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["attach", object, which, iface, mode, rest @ ..] => {
            let port = rest.first().map_or(Ok(53), |p| p.parse())?;
            let names = rest.get(1).map_or(Ok(1000), |n| n.parse())?;
            let program = program_name(which)?;
            let mut ebpf = load(object, program, port, names)?;
            let flags = match *mode {
                "native" => XdpMode::Driver,
                "generic" => XdpMode::Skb,
                other => anyhow::bail!("unknown mode {other:?}: native or generic"),
            };
            let p: &mut Xdp = ebpf.program_mut(program).expect("loaded").try_into()?;
            p.attach(iface, flags)?;
            println!("attached {}", p.info()?.id());
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        ["test-run", object] => test_run(object),
        _ => anyhow::bail!(
            "usage: xdp-bench attach <object> <drop|minimal> <iface> <native|generic> [port] [names]\n       xdp-bench test-run <object>"
        ),
    }
}

/// `xdp-bench test-run`: see the module docs.
fn test_run(object: &str) -> anyhow::Result<()> {
    let (c, s): (IpAddr, IpAddr) = ("10.77.0.2".parse()?, "10.77.0.1".parse()?);
    let n = 20_000;
    let q = frame(None, c, s, 53, &query(1, "host7.lab.test", QTYPE_A, true, None));
    for which in ["drop", "minimal"] {
        let program = program_name(which)?;
        let ebpf = load(object, program, 53, 1000)?;
        let p: &Xdp = ebpf.program(program).expect("loaded").try_into()?;
        let (action, d) = per_run(n, || run_once(p, &q))?;
        println!("{program} {} (action {action})", d.as_nanos());
    }
    // Bootlane, with one scope configured (as a site with subnet views has).
    let mut entries = records(1000);
    let big: Vec<IpAddr> = (1..=8)
        .map(|i| format!("10.1.0.{i}").parse().expect("address"))
        .collect();
    entries.push((key("big.lab.test", QTYPE_A, 0), answer(60, &big)));
    let proj = Projection {
        entries,
        scopes: vec![("10.78.0.0/24".parse()?, 1)],
        server_addrs: vec![s, "fd77::1".parse()?],
        config: DnsConfig {
            port: 53,
            edns_udp_size: 1232,
            flags: 0,
            ..Default::default()
        },
    };
    let t = bootlane::dataplane::xdp::XdpTable::detached(bootlane_common::dns::DNS_MAP_CAPACITY)?;
    t.apply(&proj)?;
    let e = Edns {
        dnssec_ok: true,
        version: 0,
        cookie: true,
        udp: 1232,
    };
    let big6 = frame(
        None,
        "fd77::2".parse()?,
        "fd77::1".parse()?,
        53,
        &query(2, "big.lab.test", QTYPE_A, true, Some(e)),
    );
    for (what, f) in [("dns_responder", &q), ("dns_responder(IPv6,EDNS,8xA)", &big6)] {
        let (action, d) = per_run(n, || Ok(t.test_run_repeat(f, 1)?))?;
        println!("{what} {} (action {action})", d.as_nanos());
    }
    Ok(())
}
