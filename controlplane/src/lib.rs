//! Bootlane's control plane as a library: [`run`] starts every service from a validated
//! [`config::Config`] and stops them when the cancellation token fires. `main.rs` is a
//! thin shim over it, and tests start the same code in-process.

pub mod api;
pub mod boot;
pub mod config;
pub mod dataplane;
pub mod dhcp;
pub mod dns;
pub mod logging;
pub mod metrics;
pub mod net;
pub mod service_error;
pub mod store;
pub mod tftp;

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

/// Starts the store, the data plane, the DNS service, the boot directory, DHCP and TFTP
/// (when configured) and the REST API (with HTTP boot), and runs until `token` is
/// cancelled. DHCP and TFTP get child tokens.
///
/// # Errors
/// Start-up failures (data directory, store, boot directory, binding the API, DNS, DHCP
/// or TFTP sockets), with context.
pub async fn run(config: config::Config, token: CancellationToken) -> anyhow::Result<()> {
    // Before any service starts, so their first counters are not lost.
    metrics::install();
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
    let store = store::Store::open(&config.data_dir)
        .with_context(|| format!("opening the store in {}", config.data_dir.display()))?;
    // The XDP program attaches where the DNS server listens: the stored settings win over
    // the file once they exist (see DnsService::start), so pick the interfaces from them.
    let mut xdp_config = config.clone();
    if let Some(stored) = dns::service::DnsService::stored_settings(&store)? {
        xdp_config.dns.listen = stored.listen;
    }
    let dataplane = dataplane::load(&xdp_config);
    let dns = dns::service::DnsService::start(&config, &store, dataplane, token.clone())
        .await
        .context("starting the DNS service")?;
    let admin_password = std::env::var("BOOTLANE_ADMIN_PASSWORD").ok();
    let state = api::AppState::new(Arc::new(config.clone()), store.clone(), dns, admin_password)
        .await
        .context("preparing the API")?;
    let boot_root = config.boot_root();
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
    let domain_src = state.dns.clone();
    let dhcp = dhcp::DhcpService::start(
        &config,
        &state.dhcp,
        Box::new(move || domain_src.settings().local_domain),
        token.child_token(),
    )
    .await
    .context("starting the DHCP service")?;
    let tftp = if config.tftp_enabled() {
        let root = config.tftp.root.clone().unwrap_or_else(|| boot_root.clone());
        let t = tftp::TftpService::start(&state.tftp.effective(), root, token.child_token())
            .context("starting the TFTP service")?;
        state.tftp.attach(t.server.limits());
        Some(t)
    } else {
        tracing::info!("TFTP off ([tftp] enabled = false, or unset with no active DHCP subnet)");
        None
    };
    let listener = tokio::net::TcpListener::bind(config.api.listen)
        .await
        .with_context(|| format!("binding the API on {}", config.api.listen))?;
    tracing::info!(addr = %config.api.listen, "REST API listening on /api/v1");
    let app = api::router(state);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(token.clone().cancelled_owned())
    .await
    .context("serving the API")?;
    if let Some(d) = dhcp {
        d.shutdown().await;
    }
    if let Some(t) = tftp {
        t.shutdown().await;
    }
    store.flush().await.ok();
    tracing::info!("stopped");
    Ok(())
}
