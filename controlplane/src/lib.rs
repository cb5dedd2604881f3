//! Bootlane's control plane as a library: [`run`] starts every service from a validated
//! [`config::Config`] and stops them when the cancellation token fires. `main.rs` is a
//! thin shim over it, and tests start the same code in-process.

pub mod cli;

pub use bootlane_backup as backup;
pub use bootlane_core::{
    audit, escape, events, leases, logging, memory, metrics, net, service_error, store, supervisor, swap, systemd,
    web_server,
};

pub use bootlane_boot::{access, boot, inventory};

pub use bootlane_dns::{dataplane, dns, stats};

pub use bootlane_dhcp::dhcp;

pub use bootlane_tftp::tftp;

pub use bootlane_install::{answers, community, install, netboot, scripts};

pub use bootlane_media::{media, nfs, settings};

pub use bootlane_machines::{bmc, netdiag, wol};

pub use bootlane_updates::updates;

pub use bootlane_config::config;

pub use bootlane_api::{api, app};

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

/// Waits for SIGINT (Ctrl-C) or SIGTERM, then cancels `token`.
pub async fn shutdown_signal(token: CancellationToken) {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutdown requested");
    token.cancel();
}

/// Opens the store, loads the data plane, builds every service ([`app::build`]), starts
/// those whose `auto_start` is set through the supervisor, prepares the boot directory,
/// and serves the REST API (with HTTP boot) until `token` is cancelled; then stops every
/// service in reverse order. `logs` (from [`logging::init`]) gets the store's logging
/// settings and goes to the API.
///
/// # Errors
/// Start-up failures (data directory, store, boot directory, binding the API), with
/// context. A service that fails to start does not stop the server: its state is
/// `failed` with the reason (`GET /api/v1/services`).
pub async fn run(
    config: config::Config,
    token: CancellationToken,
    logs: Arc<logging::LogControl>,
) -> anyhow::Result<()> {
    // Before any service starts, so their first counters are not lost.
    metrics::install();
    tokio::spawn(metrics::upkeep(token.clone()));
    tokio::spawn(memory::trim_every(memory::TRIM_EVERY, token.clone()));
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
    let store = store::Store::open_configured(&config.data_dir, &config.store, token.clone())
        .await
        .with_context(|| match config.store.postgres() {
            Some(pg) => format!("opening the PostgreSQL store {}", store::pg::redact(&pg.url)),
            None => format!("opening the store in {}", config.data_dir.display()),
        })?;
    // On a shared store this node's own settings trees.
    let store = store
        .for_node(&config.server.node_name())
        .await
        .context("opening this node's settings")?;
    logs.attach(&store, token.clone())
        .await
        .context("applying the stored logging settings")?;
    // The XDP program attaches where the DNS server listens: the file's listen list or
    // the one stored through the API over it.
    let listen = dns::service::DnsService::effective_settings(&app::dns_config(&config), &store)?.listen;
    let dataplane = dataplane::load(&config.dns.xdp, &listen);
    let admin_password = std::env::var("BOOTLANE_ADMIN_PASSWORD").ok();
    let state = app::build(
        Arc::new(config.clone()),
        store.clone(),
        dataplane,
        admin_password,
        logs,
        token.clone(),
    )
    .await
    .context("preparing the services")?;
    let boot_root = state.settings.boot_root();
    let ipxe_source = config
        .boot
        .ipxe_source
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("/usr/lib/ipxe"));
    let copied = boot::populate(&boot_root, &ipxe_source)
        .with_context(|| format!("preparing the boot directory {}", boot_root.display()))?;
    if !copied.is_empty() {
        tracing::info!(?copied, from = %ipxe_source.display(), "iPXE binaries copied into the boot directory");
    }
    // PXELINUX and its menu modules, for BIOS clients mapped to pxelinux.0.
    let pxelinux_source = config
        .boot
        .pxelinux_source
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("/usr/lib/PXELINUX"));
    let syslinux_modules = config
        .boot
        .syslinux_modules
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("/usr/lib/syslinux/modules/bios"));
    let copied = boot::populate_pxelinux(&boot_root, &pxelinux_source, &syslinux_modules)
        .with_context(|| format!("preparing the boot directory {}", boot_root.display()))?;
    if !copied.is_empty() {
        tracing::info!(?copied, "PXELINUX files copied into the boot directory");
    }
    // The Secure Boot chain (signed shim, MokManager, signed network GRUB).
    let shim_source = config
        .boot
        .shim_source
        .clone()
        .unwrap_or_else(|| "/usr/lib/shim".into());
    let grub_source = config
        .boot
        .grub_efi_source
        .clone()
        .unwrap_or_else(|| "/usr/lib/grub/x86_64-efi-signed".into());
    let copied = boot::populate_secure_boot(&boot_root, &shim_source, &grub_source)
        .with_context(|| format!("preparing the boot directory {}", boot_root.display()))?;
    if !copied.is_empty() {
        tracing::info!(?copied, "Secure Boot files (shim, GRUB) copied into the boot directory");
    }
    // Debian's signed ARM64 GRUB and shim (the d-i netboot set).
    let arm64_source = config
        .boot
        .arm64_source
        .clone()
        .unwrap_or_else(|| boot::ARM64_SOURCE.into());
    let copied = boot::populate_arm64(&boot_root, &arm64_source)
        .with_context(|| format!("preparing the boot directory {}", boot_root.display()))?;
    if !copied.is_empty() {
        tracing::info!(?copied, "ARM64 GRUB and shim copied into the boot directory");
    }
    let (tls, acme_challenges) = web_server_tls(&config, &token).context("preparing HTTPS ([api] tls)")?;
    // The management listener (API and UI; everything when not split) and the boot
    // listener (`[api] boot_listen`: /boot and the machine routes, plain HTTP).
    let listener = tokio::net::TcpListener::bind(config.api.listen)
        .await
        .with_context(|| format!("binding the API on {}", config.api.listen))?;
    let boot_listener = match config.api.boot_listen {
        Some(b) => Some(
            tokio::net::TcpListener::bind(b)
                .await
                .with_context(|| format!("binding the boot listener on {b}"))?,
        ),
        None => None,
    };
    let supervisor = state.supervisor.clone();
    supervisor.start_auto().await;
    // Type=notify: ready once the API is bound and every auto-start service started.
    systemd::notify_ready(&supervisor.list());
    systemd::stopping_on_cancel(token.clone());
    tracing::info!(addr = %config.api.listen, "REST API listening on /api/v1");
    let (mut app, boot_app) = match boot_listener {
        Some(_) => {
            let r = api::routers(state);
            (r.management, Some(r.boot))
        }
        None => (api::router(state), None),
    };
    if let Some(store) = &tls {
        let info = store.info();
        tracing::info!(
            source = %info.source,
            fingerprint_sha256 = %info.fingerprint_sha256,
            not_after = %info.not_after,
            "HTTPS on {}",
            config.api.listen
        );
        let max_age = config.api.hsts_max_age_secs;
        app = app
            .layer(axum::middleware::from_fn(move |r, n| {
                web_server::https_headers(max_age, r, n)
            }))
            .layer(axum::Extension(store.clone()));
    }
    // One set of caps over every HTTP listener (see `web_server`).
    let tracker =
        web_server::limits::ConnTracker::new(config.api.max_connections, config.api.max_connections_per_client);
    let header_read_timeout = std::time::Duration::from_secs(config.api.header_read_timeout_secs);
    let write_timeout = std::time::Duration::from_secs(config.api.write_timeout_secs);
    let mut servers = Vec::new();
    let opts = web_server::ListenerOptions {
        name: "api",
        header_read_timeout,
        write_timeout,
        tls: tls.as_ref().map(|s| s.acceptor()).transpose()?,
    };
    servers.extend(serve_twin(config.api.listen, &app, &tracker, &opts, &token));
    servers.push(tokio::spawn(web_server::serve(
        listener,
        app,
        tracker.clone(),
        opts,
        token.clone(),
    )));
    let boot_app = match (boot_app, acme_challenges) {
        (Some(b), Some(c)) => Some(b.merge(web_server::acme::challenge_router(c))),
        (b, _) => b,
    };
    if let (Some(l), Some(boot_app), Some(addr)) = (boot_listener, boot_app, config.api.boot_listen) {
        tracing::info!(%addr, "HTTP boot listening on /boot (plain HTTP)");
        let opts = web_server::ListenerOptions {
            name: "boot",
            header_read_timeout,
            write_timeout,
            tls: None,
        };
        servers.extend(serve_twin(addr, &boot_app, &tracker, &opts, &token));
        servers.push(tokio::spawn(web_server::serve(
            l,
            boot_app,
            tracker.clone(),
            opts,
            token.clone(),
        )));
    }
    for s in servers {
        let _ = s.await;
    }
    supervisor.stop_all().await;
    store.flush().await.ok();
    tracing::info!("stopped");
    Ok(())
}

/// The certificate store of `[api] tls` (`None` when off), with its reloader or ACME
/// renewal started; for ACME also the pending HTTP-01 challenges the boot listener answers.
#[allow(
    clippy::type_complexity,
    reason = "the store and the ACME challenges, both optional; named in the doc"
)]
fn web_server_tls(
    config: &config::Config,
    token: &CancellationToken,
) -> anyhow::Result<(
    Option<Arc<web_server::tls::CertStore>>,
    Option<Arc<web_server::acme::Challenges>>,
)> {
    use web_server::{acme, tls};
    if config.api.tls == config::TlsMode::Acme {
        let settings = acme::AcmeSettings {
            directory_url: config
                .api
                .acme_directory_url
                .clone()
                .context("[api] acme_directory_url")?,
            contact: config.api.acme_contact.clone(),
            ca_file: config.api.acme_ca_file.clone(),
            names: config.tls_names(),
            dir: config.data_dir.join("tls/acme"),
        };
        // A stored ACME certificate, else a self-signed one until the first is issued.
        let first = match settings.stored() {
            Some(l) => l,
            None => tls::self_signed(&config.data_dir.join("tls"), &config.tls_names())?,
        };
        let store = tls::CertStore::new(first);
        let challenges = Arc::new(acme::Challenges::default());
        acme::spawn_renewal(store.clone(), settings, challenges.clone(), token.clone());
        return Ok((Some(store), Some(challenges)));
    }
    Ok((
        match config.api.tls {
            config::TlsMode::Off => None,
            config::TlsMode::SelfSigned => Some(tls::CertStore::new(tls::self_signed(
                &config.data_dir.join("tls"),
                &config.tls_names(),
            )?)),
            config::TlsMode::Files => {
                let (Some(cert), Some(key)) = (&config.api.tls_cert_file, &config.api.tls_key_file) else {
                    anyhow::bail!("[api] tls = \"files\" needs tls_cert_file and tls_key_file");
                };
                let store = tls::CertStore::new(tls::load_files(cert, key, "files")?);
                tls::spawn_file_reloader(store.clone(), cert.clone(), key.clone(), token.clone());
                Some(store)
            }
            config::TlsMode::Acme => unreachable!("handled above"),
        },
        None,
    ))
}

/// `0.0.0.0:port` also listens on `[::]:port` (iPXE scripts, boot files and the API over
/// IPv6): the serving task of that twin, if `addr` has one and it binds.
fn serve_twin(
    addr: std::net::SocketAddr,
    app: &axum::Router,
    tracker: &Arc<web_server::limits::ConnTracker>,
    opts: &web_server::ListenerOptions,
    token: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    let a = net::ipv6_twin(addr)?;
    match net::bind_v6only(a, socket2::Type::STREAM).and_then(|s| tokio::net::TcpListener::from_std(s.into())) {
        Ok(l) => {
            tracing::info!(addr = %a, listener = opts.name, "HTTP listening over IPv6");
            Some(tokio::spawn(web_server::serve(
                l,
                app.clone(),
                tracker.clone(),
                opts.clone(),
                token.clone(),
            )))
        }
        Err(e) => {
            tracing::warn!(listener = opts.name, "HTTP: not listening on {a}: {e}");
            None
        }
    }
}
