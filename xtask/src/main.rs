//! `cargo xtask`: the project's two entry points and their helpers.
//! - `setup`: idempotent machine set-up (`scripts/setup.sh`: packages, nightly rust-src,
//!   bpf-linker). Every other command runs it first; it is quick when all is there.
//! - `ui`: build the web UI (`web/`): `npm ci` when `node_modules` is missing or older
//!   than `package-lock.json`, then `npm run build` into `web/dist`, which the next
//!   `cargo build` embeds. `cargo build` itself never runs npm.
//! - `run`: build the UI and the server and run it (`bootlane serve`), as root.
//! - `docs`: build the book (`mdbook build docs` into `target/book`) and check that every
//!   relative link and `#anchor` in it, and every relative link of `README.md`, resolves
//!   ([`links`]). `test` runs it right after the UI build.
//! - `test`: every test — the UI build, unit and API tests of the default members (the API
//!   tests twice: on sled, then on PostgreSQL with `BOOTLANE_TEST_STORE=postgres`), the API
//!   contract test (`scripts/contract.sh`: schemathesis against the running server's
//!   openapi.json) and the privileged integration tests (XDP `test_run`, network namespaces,
//!   real clients) as root, in tiers (the QEMU boots in one lane, the light tests and then
//!   the contract runs in another, then the timing-sensitive ones alone; see
//!   `integration_lanes`), then the browser tests of the UI (`node --test web/tests/`,
//!   headless Chromium against a real `bootlane`).
//! - `bench`: benchmarks against dnsmasq in the same invocation, and what SSE subscribers
//!   cost the DNS path and API writes (`bench events`), and boot media: upload vs `cp`,
//!   Range serving vs nginx (`bench media`).
//! - `fuzz`: coverage-guided fuzzing of every parser and renderer: cargo-fuzz targets in
//!   `fuzz/`, seeds captured from real clients (`scripts/fuzz-seeds.sh`), each target for
//!   `--seconds` (CI: 60), one target per core at a time.
//! - `soak`: the soak test: every service of the release build under steady load for
//!   `--minutes` (default 30; `scripts/soak.sh`), RSS, descriptors, sled size and p99
//!   latencies every minute, then the goals checked (flat RSS and descriptors, no errors,
//!   no lost record or lease).
//! - `lab`: Bootlane and a QEMU machine in a namespace, the machine's console on the terminal.
//! - `package`: the Debian package: the UI, the release binary (eBPF object and UI embedded),
//!   its man pages and completions (`bootlane generate`), then cargo-deb with `--no-build`
//!   (the metadata is in `controlplane/Cargo.toml`). `--debug` packages the debug binary
//!   instead: `test` does that for the package test, so CI builds no release.
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "xtask is a CLI tool")]

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    time::Instant,
};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

#[cfg(test)]
mod layers;
mod links;

#[derive(Parser)]
#[command(name = "xtask", about = "Bootlane developer tasks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install what the build and the tests need (idempotent).
    Setup,
    /// Build the web UI into web/dist (npm ci when needed, then npm run build).
    Ui,
    /// Build the book (mdBook, `docs/` into `target/book`) and check every relative link and
    /// anchor in it and in README.md, and that neither cites an issue number.
    Docs,
    /// Build the UI and the server and run it; extra arguments go to `bootlane serve`.
    Run {
        /// Build in release mode.
        #[arg(long)]
        release: bool,
        /// Arguments for `bootlane serve` (e.g. `-- --config bootlane.toml`).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Run every test: Rust (the privileged integration tests included), then the browser tests.
    Test {
        /// Skip the privileged integration tests.
        #[arg(long)]
        unit_only: bool,
        /// Skip the browser tests of the web UI.
        #[arg(long)]
        no_browser: bool,
        /// Only integration tests whose name contains this filter.
        filter: Option<String>,
    },
    /// Start Bootlane and a QEMU machine in a namespace and show the machine's console as it
    /// PXE-boots from Bootlane (Ctrl-C stops and cleans up).
    Lab {
        /// A UEFI (OVMF) machine with the firmware's PXE client instead of BIOS + iPXE ROM.
        #[arg(long)]
        uefi: bool,
        /// Stop after this many seconds.
        #[arg(long, default_value_t = 180)]
        seconds: u32,
    },
    /// Build the Debian package (cargo-deb) into `<target>/debian/` and print its path.
    Package {
        /// Package the debug build instead of a release build (faster; what `test` uses).
        #[arg(long)]
        debug: bool,
    },
    /// Benchmarks against dnsmasq (`dns`, `boot`), SSE subscriber cost (`events`), or `all`.
    Bench {
        /// Which benchmark: `dns` (userspace and XDP vs dnsmasq), `boot` (DHCP and TFTP vs
        /// dnsmasq), `events` (DNS qps and API write latency with 0 and 50 SSE subscribers),
        /// `media` (1 GiB upload vs cp, 20 parallel Range downloads vs nginx), `store` (API
        /// write latency and DHCP leases/s on sled against PostgreSQL) or `all`.
        #[arg(default_value = "all")]
        what: String,
    },
    /// Fuzz every parser and renderer with cargo-fuzz on nightly, each target for
    /// `--seconds`, from seeds captured off real clients (`scripts/fuzz-seeds.sh`).
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
        /// Build optimised (several times the executions per second, several times the
        /// build time: for long runs; CI's 45 s per target uses the quicker build).
        #[arg(long)]
        release: bool,
        /// Targets to run (default: all of them, see `fuzz/Cargo.toml`).
        targets: Vec<String>,
    },
    /// Soak test: DNS at half its measured capacity, 200 DHCP clients renewing, TFTP and
    /// HTTP downloads, API writes with 20 SSE subscribers, all at once; RSS, descriptors,
    /// sled size and p99 latencies every minute; fails when RSS or descriptors grow by 5 %
    /// or more after minute 5, on any error response, or a lost record or lease.
    Soak {
        /// How long the load runs.
        #[arg(long, default_value_t = 30)]
        minutes: u32,
    },
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: {cmd:?}");
    let started = Instant::now();
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    eprintln!("xtask: {status} after {} s", started.elapsed().as_secs());
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

/// Runs `program args` as root: directly when we are root, else through `sudo -E`.
fn privileged(program: &Path, args: &[String]) -> Command {
    if is_root() {
        let mut c = Command::new(program);
        c.args(args);
        c
    } else {
        let mut c = Command::new("sudo");
        c.arg("-E").arg(program).args(args);
        c
    }
}

fn setup() -> Result<()> {
    let script = root().join("scripts/setup.sh");
    if is_root() {
        run(Command::new("bash").arg(&script))
    } else {
        run(Command::new("sudo").arg("-E").arg("bash").arg(&script))
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

/// Builds the web UI: `npm ci` if `node_modules` is missing or older than the lock file
/// (npm writes `node_modules/.package-lock.json` on every install), then `npm run build`
/// unless `web/dist` is newer than every source of the UI. A build rewrites `web/dist`,
/// which the API crate embeds: skipping a build that would change nothing spares cargo
/// a rebuild of that crate and the server.
fn ui() -> Result<()> {
    let web = root().join("web");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let lock = modified(&web.join("package-lock.json"));
    let installed = modified(&web.join("node_modules/.package-lock.json"));
    if installed.is_none() || installed < lock {
        run(Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&web))?;
    }
    let built = modified(&web.join("dist/index.html"));
    let sources = [
        "src",
        "index.html",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
        "vite.config.ts",
    ]
    .iter()
    .filter_map(|p| newest(&web.join(p)))
    .chain(modified(&web.join("node_modules/.package-lock.json")))
    .max();
    if built.is_some() && sources.is_some_and(|s| Some(s) < built) {
        println!("xtask: web/dist is newer than the UI's sources, not rebuilt");
        return Ok(());
    }
    run(Command::new("npm").args(["run", "build"]).current_dir(&web))
}

/// The newest modification time of `p` and, for a directory, of everything under it.
fn newest(p: &Path) -> Option<std::time::SystemTime> {
    let m = std::fs::metadata(p).ok()?;
    let mut t = m.modified().ok()?;
    if m.is_dir() {
        for e in std::fs::read_dir(p).ok()?.flatten() {
            t = t.max(newest(&e.path()).unwrap_or(t));
        }
    }
    Some(t)
}

/// Builds the book with mdBook (`docs/` into `target/book`; `scripts/setup.sh` installs the
/// pinned mdBook) and checks its links: every relative link and `#anchor` of the rendered
/// pages, and every relative link of `README.md`, must resolve. Fails listing each broken
/// link, and each line of the README or the book that cites an issue number.
fn docs() -> Result<()> {
    let book = root().join("target/book");
    run(Command::new("mdbook")
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(&book))
    .context("building the book (mdbook is installed by `cargo xtask setup`)")?;
    let mut broken = links::check_book(&book)?;
    broken.extend(links::check_readme(&root(), &root().join("README.md"), &book)?);
    // Product text speaks about the product: no tracker issue numbers in it.
    let mut texts = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs/src")).context("listing docs/src")? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "md") {
            texts.push(p);
        }
    }
    let mut cited = 0;
    for p in &texts {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        for (n, line) in links::issue_citations(&text) {
            eprintln!("issue number in product text: {}:{n}: {line}", p.display());
            cited += 1;
        }
    }
    if cited > 0 {
        bail!("{cited} line(s) of README.md or docs/src cite an issue number; say what the product does instead");
    }
    if !broken.is_empty() {
        for b in &broken {
            eprintln!("broken link: {b}");
        }
        bail!("{} broken link(s) in the book or README.md", broken.len());
    }
    println!("docs: {} checked, no broken link", book.display());
    Ok(())
}

/// The browser tests of the UI against the server binary `bin` (`web/tests/*.test.mjs`).
fn browser_tests(bin: &Path) -> Result<()> {
    let web = root().join("web");
    let mut tests: Vec<PathBuf> = std::fs::read_dir(web.join("tests"))
        .context("listing web/tests")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    tests.sort();
    run(Command::new("node")
        .arg("--test")
        .arg("--test-concurrency=1")
        .args(&tests)
        .current_dir(&web)
        .env("BOOTLANE_BIN", bin))
}

/// Cargo's own rule: `CARGO_TARGET_DIR` (relative to the workspace) wins over `./target`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), |d| root().join(d))
}

fn build_server(release: bool) -> Result<PathBuf> {
    let mut c = cargo();
    c.args(["build", "-p", "bootlane"]);
    if release {
        c.arg("--release");
    }
    run(&mut c)?;
    Ok(target_dir()
        .join(if release { "release" } else { "debug" })
        .join("bootlane"))
}

/// Builds the integration test binaries and returns their paths (aya's xtask approach:
/// `--no-run --message-format=json`, then run each executable as root).
fn integration_binaries() -> Result<Vec<PathBuf>> {
    let out = cargo()
        .args(["test", "-p", "bootlane-tests", "--no-run", "--message-format=json"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("building the integration tests")?;
    if !out.status.success() {
        bail!("building the integration tests failed");
    }
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] == "compiler-artifact" && v["profile"]["test"] == true {
            if let Some(exe) = v["executable"].as_str() {
                bins.push(PathBuf::from(exe));
            }
        }
    }
    Ok(bins)
}

/// Builds the benchmark's `xdp-bench` tool (release) and returns it with the reference
/// XDP object (`bench-responders`) that the `bootlane` build script leaves beside the
/// embedded program in its `OUT_DIR` (read from cargo's build-script message).
fn xdp_bench_tools() -> Result<(PathBuf, PathBuf)> {
    let out = cargo()
        .args([
            "build",
            "--release",
            "-p",
            "bootlane-tests",
            "--bin",
            "xdp-bench",
            "--message-format=json",
        ])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("building xdp-bench")?;
    if !out.status.success() {
        bail!("building xdp-bench failed");
    }
    let (mut exe, mut object) = (None, None);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == "xdp-bench" {
            exe = v["executable"].as_str().map(PathBuf::from);
        }
        if v["reason"] == "build-script-executed"
            && v["package_id"]
                .as_str()
                .is_some_and(|id| id.contains("/controlplane/crates/dns#"))
        {
            object = v["out_dir"].as_str().map(|d| Path::new(d).join("bench-responders"));
        }
    }
    match (exe, object) {
        (Some(e), Some(o)) if o.exists() => Ok((e, o)),
        (e, o) => bail!("xdp-bench build: tool {e:?}, reference object {o:?} not found"),
    }
}

fn test(unit_only: bool, no_browser: bool, filter: Option<String>) -> Result<()> {
    setup()?;
    ui()?;
    docs()?;
    run(cargo().args([
        "test",
        "--workspace",
        "--exclude",
        "bootlane-tests",
        "--exclude",
        "dataplane-ebpf",
    ]))?;
    // The API suite once more on the PostgreSQL store (the API tests run against both
    // backends): one throwaway cluster, a database per test. About three minutes: with
    // the integration tests, it runs in the light lane beside the QEMU boots.
    let mut api_on_postgres = cargo();
    api_on_postgres
        .args(["test", "-p", "bootlane-api", "--lib"])
        .env("BOOTLANE_TEST_STORE", "postgres");
    if unit_only || filter.is_some() {
        run(&mut api_on_postgres)?;
    }
    let bin = build_server(false)?;
    if !unit_only {
        // The API contract: schemathesis against the server's own openapi.json, 15 cases per
        // operation on sled, then 10 on the PostgreSQL store; no privileges needed. About
        // six minutes together, run beside the QEMU boots (see `integration_lanes`).
        let contract = |store: &str, examples: &str| {
            let mut c = Command::new("bash");
            c.arg(root().join("scripts/contract.sh"))
                .arg(&bin)
                .env("CONTRACT_STORE", store)
                .env("CONTRACT_EXAMPLES", examples);
            c
        };
        let contracts = [contract("sled", "15"), contract("postgres", "10")];
        std::env::set_var("BOOTLANE_BIN", &bin);
        // The package test (tests/tests/integration/package_install.rs) installs the debug
        // build's package: a release build here would double CI's build time.
        const PACKAGE_TEST: &str = "package_install::package_installs_and_runs_unprivileged_with_only_its_capabilities";
        if filter.as_deref().is_none_or(|f| PACKAGE_TEST.contains(f)) {
            std::env::set_var("BOOTLANE_DEB", package(false)?);
        }
        let exes = integration_binaries()?;
        match &filter {
            // A filter that is part of "contract" selects the contract test.
            Some(f) => {
                if "contract".contains(f.as_str()) {
                    for mut c in contracts {
                        run(&mut c)?;
                    }
                }
                for exe in &exes {
                    run(privileged(exe, &["--test-threads=1".to_string(), f.clone()]).env("BOOTLANE_BIN", &bin))?
                }
            }
            None => {
                let mut after_light: Vec<Command> = contracts.into();
                after_light.push(api_on_postgres);
                integration_lanes(&exes, &bin, after_light)?
            }
        }
    }
    if !no_browser {
        browser_tests(&bin)?;
    }
    Ok(())
}

/// Integration tests that boot QEMU machines under software emulation: each keeps about
/// one core busy for a minute or more, so they run in a lane of their own beside the
/// light tests ([`integration_lanes`]).
const QEMU_TESTS: &[&str] = &[
    "boot_netns::",
    "firmware_netns::",
    "install_netns::",
    "media_netns::",
    "pxelinux_netns::",
    "access_netns::whitelist_qemu",
];

/// Integration tests whose verdict rests on timing or throughput (a cost ratio, a flood
/// cut to a rate, a latency bound, a drop rate, datagram counts under loss) or that install
/// the package system-wide: they run one at a time after both lanes, with the machine to
/// themselves.
const ALONE_TESTS: &[&str] = &[
    "xdp_program::xdp_per_packet_cost",
    "xdp_program::xdp_map_load_100k",
    "xdp_rrl_netns::",
    "cluster_netns::",
    "https_netns::",
    "tftp_netns::",
    "package_install::",
];

/// Runs the integration binaries `exes` in tiers: the [`QEMU_TESTS`] in one lane and every
/// other light test, then the `after_light` commands (the API contract runs), in a second
/// lane beside it (each one test at a time; every test makes its own namespaces, so the
/// lanes do not meet), then the [`ALONE_TESTS`] on their own. The QEMU lane keeps one core
/// busy for about ten minutes, the light tests take about three: the contract runs fill the
/// other core meanwhile. Every lane runs to its end even when a command in it fails, and
/// all failures are reported together.
fn integration_lanes(exes: &[PathBuf], bin: &Path, after_light: Vec<Command>) -> Result<()> {
    let one = "--test-threads=1".to_string();
    let qemu: Vec<String> = std::iter::once(one.clone())
        .chain(QEMU_TESTS.iter().map(|t| t.to_string()))
        .collect();
    let light: Vec<String> = std::iter::once(one.clone())
        .chain(
            QEMU_TESTS
                .iter()
                .chain(ALONE_TESTS)
                .flat_map(|t| ["--skip".to_string(), t.to_string()]),
        )
        .collect();
    let alone: Vec<String> = std::iter::once(one)
        .chain(ALONE_TESTS.iter().map(|t| t.to_string()))
        .collect();
    let tests = |args: &[String]| -> Vec<Command> {
        exes.iter()
            .map(|exe| {
                let mut c = privileged(exe, args);
                c.env("BOOTLANE_BIN", bin);
                c
            })
            .collect()
    };
    let mut light_lane = tests(&light);
    light_lane.extend(after_light);
    // Each lane writes to a file of its own, printed whole when it ends, so the two
    // outputs do not interleave line by line.
    let logs = target_dir().join("integration-lanes");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let failed: Vec<String> = std::thread::scope(|scope| {
        let lanes: Vec<_> = [("qemu", tests(&qemu)), ("light", light_lane)]
            .into_iter()
            .map(|(name, commands)| {
                let path = logs.join(format!("{name}.log"));
                scope.spawn(move || lane(name, &path, commands))
            })
            .collect();
        lanes
            .into_iter()
            .flat_map(|l| l.join().unwrap_or_else(|_| vec!["a lane panicked".to_string()]))
            .collect()
    });
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    for mut c in tests(&alone) {
        run(&mut c)?;
    }
    Ok(())
}

/// Runs `commands` one after the other with their output in the file `path`, printed whole
/// when the lane ends; returns what failed.
fn lane(name: &str, path: &Path, commands: Vec<Command>) -> Vec<String> {
    let mut failed = Vec::new();
    let started = Instant::now();
    let out = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => return vec![format!("creating {}: {e}", path.display())],
    };
    for mut c in commands {
        let what = format!("{c:?}");
        eprintln!("xtask: {what} (lane {name}, output in {})", path.display());
        let begun = Instant::now();
        let status = out.try_clone().and_then(|o| {
            let e = o.try_clone()?;
            c.stdout(o).stderr(e).status()
        });
        match status {
            Ok(s) => {
                eprintln!("xtask: lane {name}: {s} after {} s: {what}", begun.elapsed().as_secs());
                if !s.success() {
                    failed.push(format!("{what} failed: {s}"));
                }
            }
            Err(e) => failed.push(format!("starting {what}: {e}")),
        }
    }
    eprintln!("xtask: lane {name} ended after {} s", started.elapsed().as_secs());
    eprint!("{}", std::fs::read_to_string(path).unwrap_or_default());
    failed
}

/// Builds the `.deb` and returns its path: the UI, the server (`release` or debug), the man
/// pages (gzipped, as Debian wants them) and completions next to the binary in
/// `<profile dir>/generated/`, then `cargo deb --no-build` for that profile. The debug
/// package goes to `<target>/debian/dev/` with fast compression; cargo-deb warns that dev
/// profiles are unsupported, which is fine for a test package.
fn package(release: bool) -> Result<PathBuf> {
    ui()?;
    let bin = build_server(release)?;
    let generated = bin.parent().context("binary directory")?.join("generated");
    if generated.exists() {
        std::fs::remove_dir_all(&generated).with_context(|| format!("removing {}", generated.display()))?;
    }
    for what in ["man", "completions"] {
        run(Command::new(&bin)
            .args(["generate", what, "--out"])
            .arg(generated.join(what))
            .stdout(std::process::Stdio::null()))?;
    }
    let pages: Vec<PathBuf> = std::fs::read_dir(generated.join("man"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    run(Command::new("gzip").arg("-9nf").args(&pages))?;
    let out_dir = if release {
        target_dir().join("debian")
    } else {
        target_dir().join("debian/dev")
    };
    std::fs::create_dir_all(&out_dir)?;
    let mut c = cargo();
    c.args(["deb", "-p", "bootlane", "--no-build", "--strip", "--output"])
        .arg(&out_dir);
    c.args(["--profile", if release { "release" } else { "dev" }]);
    if !release {
        c.arg("--fast");
    }
    eprintln!("xtask: {c:?}");
    let out = c
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("starting cargo deb (cargo xtask setup installs it)")?;
    if !out.status.success() {
        bail!("cargo deb failed: {}", out.status);
    }
    // cargo-deb prints the path of the package it wrote.
    let printed = String::from_utf8_lossy(&out.stdout);
    let deb = printed
        .lines()
        .map(str::trim)
        .find(|l| l.ends_with(".deb"))
        .map(PathBuf::from)
        .with_context(|| format!("cargo deb printed no .deb path: {printed}"))?;
    Ok(root().join(deb))
}

fn bench(what: &str) -> Result<()> {
    if !matches!(what, "dns" | "boot" | "events" | "media" | "store" | "all") {
        bail!("unknown benchmark {what:?}: use dns, boot, events, media, store or all");
    }
    setup()?;
    let bin = build_server(true)?.display().to_string();
    let script = |name: &str| root().join("scripts").join(name).display().to_string();
    if matches!(what, "dns" | "all") {
        run(&mut privileged(
            Path::new("bash"),
            &[script("bench-dns.sh"), bin.clone()],
        ))?;
        let (xdp_bench, object) = xdp_bench_tools()?;
        run(
            privileged(Path::new("bash"), &[script("bench-dns-xdp.sh"), bin.clone()])
                .env("XDP_BENCH", xdp_bench)
                .env("BENCH_XDP_OBJECT", object),
        )?;
    }
    if matches!(what, "events" | "all") {
        run(&mut privileged(
            Path::new("bash"),
            &[script("bench-events.sh"), bin.clone()],
        ))?;
    }
    if matches!(what, "boot" | "all") {
        run(&mut privileged(
            Path::new("bash"),
            &[script("bench-boot.sh"), bin.clone(), "all".into()],
        ))?;
    }
    if matches!(what, "store" | "all") {
        run(&mut privileged(
            Path::new("bash"),
            &[script("bench-store.sh"), bin.clone()],
        ))?;
    }
    if matches!(what, "media" | "all") {
        run(&mut privileged(Path::new("bash"), &[script("bench-media.sh"), bin]))?;
    }
    Ok(())
}

/// The XDP object of the newest build under `build_dir` (`<profile>/build`).
fn newest_ebpf_object(build_dir: &Path) -> Result<PathBuf> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(build_dir).with_context(|| format!("reading {}", build_dir.display()))? {
        let p = e?.path().join("out").join("dataplane-ebpf");
        if let Ok(m) = p.metadata().and_then(|m| m.modified()) {
            if best.as_ref().is_none_or(|(t, _)| m > *t) {
                best = Some((m, p));
            }
        }
    }
    best.map(|(_, p)| p)
        .with_context(|| format!("no XDP object under {}: build the server first", build_dir.display()))
}

/// Every fuzz target, in the order `cargo xtask fuzz` runs them.
const FUZZ_TARGETS: &[&str] = &[
    "dns_handler",
    "dhcp4",
    "dhcp6",
    "tftp_packet",
    "tftp_session",
    "render",
    "xdp",
];

/// Builds the fuzz targets (cargo-fuzz, nightly; unoptimised unless `release`, debug
/// assertions and overflow checks on either way; no AddressSanitizer: the targets drive safe Rust, where ASan finds
/// nothing the assertions and bounds checks don't, at several times the build time), captures seed
/// corpora from real clients into `target/fuzz/seeds/` when missing, and runs each target
/// for `seconds` over its working corpus `target/fuzz/corpus/<target>/` (kept between
/// runs) seeded from them. A crash stops the run with the reproducing input in
/// `target/fuzz/artifacts/<target>/` and the command that replays it.
fn fuzz(seconds: u32, release: bool, targets: Vec<String>) -> Result<()> {
    let targets: Vec<String> = if targets.is_empty() {
        FUZZ_TARGETS.iter().map(|t| t.to_string()).collect()
    } else {
        targets
    };
    if let Some(t) = targets.iter().find(|t| !FUZZ_TARGETS.contains(&t.as_str())) {
        bail!("unknown fuzz target {t:?}: one of {}", FUZZ_TARGETS.join(", "));
    }
    if !is_root() {
        bail!("`cargo xtask fuzz` needs root: the xdp target loads the XDP program, the seeds come from namespaces");
    }
    setup()?;
    // The server's debug build: the seed captures run it, and its XDP object is embedded
    // in the fuzz build as is (BOOTLANE_EBPF_OBJECT) rather than built a second time.
    let bin = build_server(false)?;
    let object = newest_ebpf_object(&target_dir().join("debug").join("build"))?;
    let profile: &[&str] = if release { &["-O"] } else { &["--dev"] };
    let fuzz_cmd = || {
        let mut c = Command::new("cargo");
        c.current_dir(root())
            .env("BOOTLANE_EBPF_OBJECT", &object)
            .args(["+nightly", "fuzz"]);
        c
    };
    run(fuzz_cmd().arg("build").args(profile).args(["-a", "-s", "none"]))?;
    let dir = target_dir().join("fuzz");
    let seeds = dir.join("seeds");
    if !seeds.join("dns_handler").exists() {
        run(Command::new("bash").args([
            root().join("scripts/fuzz-seeds.sh").display().to_string(),
            bin.display().to_string(),
            seeds.display().to_string(),
        ]))?;
    }
    // One target per core at a time (libFuzzer is single-threaded), each with its output in
    // a file of its own: the last lines (the final stats) are printed when it ends, and the
    // whole file is named when it fails.
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let width = std::thread::available_parallelism().map_or(1, |n| n.get());
    for batch in targets.chunks(width) {
        let mut running = Vec::new();
        for t in batch {
            let corpus = dir.join("corpus").join(t);
            let artifacts = dir.join("artifacts").join(t);
            std::fs::create_dir_all(&corpus)?;
            std::fs::create_dir_all(&artifacts)?;
            let mut c = fuzz_cmd();
            c.arg("run").args(profile).args(["-a", "-s", "none", t]).arg(&corpus);
            if seeds.join(t).exists() {
                c.arg(seeds.join(t));
            }
            c.arg("--").args([
                format!("-max_total_time={seconds}"),
                format!("-artifact_prefix={}/", artifacts.display()),
                "-rss_limit_mb=4096".into(),
                "-timeout=20".into(),
                "-print_final_stats=1".into(),
            ]);
            let log = logs.join(format!("{t}.log"));
            let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
            c.stdout(out.try_clone()?).stderr(out);
            println!("xtask: fuzzing {t} for {seconds} s (output in {})", log.display());
            let child = c.spawn().with_context(|| format!("starting {c:?}"))?;
            running.push((t, artifacts, log, child));
        }
        let mut failed = Vec::new();
        for (t, artifacts, log, mut child) in running {
            let status = child.wait()?;
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let keep = if status.success() { 12 } else { 80 };
            println!("xtask: fuzz target {t}: {status}; the end of {}:", log.display());
            for l in &lines[lines.len().saturating_sub(keep)..] {
                println!("  {l}");
            }
            if !status.success() {
                failed.push(format!(
                    "fuzz target {t} failed: the input is in {}; replay it with `cargo +nightly fuzz run {} -a -s none {t} <file>`",
                    artifacts.display(),
                    profile[0]
                ));
            }
        }
        if !failed.is_empty() {
            bail!("{}", failed.join("; "));
        }
    }
    Ok(())
}

/// `scripts/soak.sh <release binary> <minutes>` as root; the command line is named in its
/// report (`SOAK_CMD`).
fn soak(minutes: u32) -> Result<()> {
    if minutes == 0 {
        bail!("--minutes must be at least 1");
    }
    setup()?;
    let bin = build_server(true)?.display().to_string();
    let script = root().join("scripts/soak.sh").display().to_string();
    std::env::set_var("SOAK_CMD", format!("cargo xtask soak --minutes {minutes}"));
    run(&mut privileged(Path::new("bash"), &[script, bin, minutes.to_string()]))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Setup => setup(),
        Cmd::Ui => ui(),
        Cmd::Docs => docs(),
        Cmd::Run { release, args } => setup()
            .and_then(|_| ui())
            .and_then(|_| build_server(release))
            .and_then(|bin| {
                let mut a = vec!["serve".to_string()];
                if args.is_empty() && root().join("bootlane.toml").exists() {
                    a.extend(["--config".into(), root().join("bootlane.toml").display().to_string()]);
                }
                a.extend(args);
                run(&mut privileged(&bin, &a))
            }),
        Cmd::Test {
            unit_only,
            no_browser,
            filter,
        } => test(unit_only, no_browser, filter),
        Cmd::Package { debug } => setup()
            .and_then(|_| package(!debug))
            .map(|deb| println!("{}", deb.display())),
        Cmd::Bench { what } => bench(&what),
        Cmd::Fuzz {
            seconds,
            release,
            targets,
        } => fuzz(seconds, release, targets),
        Cmd::Soak { minutes } => soak(minutes),
        Cmd::Lab { uefi, seconds } => setup().and_then(|_| build_server(false)).and_then(|bin| {
            let mut a = vec![
                root().join("scripts/lab.sh").display().to_string(),
                bin.display().to_string(),
            ];
            if uefi {
                a.push("--uefi".into());
            }
            a.extend(["--seconds".into(), seconds.to_string()]);
            run(&mut privileged(Path::new("bash"), &a))
        }),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
