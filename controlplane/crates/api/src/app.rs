//! Builds every service in one place: the event bus, DNS, users and sessions, hosts
//! (inventory), the boot catalog, DHCP and TFTP administration, layered settings, and the
//! supervisor with its units (`dns`, `dhcp`, `tftp`, `http-boot`), and hands them to the
//! API as one [`AppState`]. Each service gets only its own configuration section, never
//! the whole [`Config`]. No global state.

use std::{
    sync::{atomic::AtomicBool, Arc},
    time::Instant,
};

use tokio_util::sync::CancellationToken;

use crate::api::{auth::Auth, boot::HttpBootUnit, AppState};
use bootlane_boot::{boot::catalog::BootCatalog, inventory::service::HostService};
use bootlane_config::config::Config;
use bootlane_core::{
    events::{EventBus, EventKind},
    store::Store,
    supervisor::{Service, Supervisor},
};
use bootlane_dhcp::dhcp::{control::DhcpControl, DhcpUnit};
use bootlane_dns::{
    dataplane::DnsTable,
    dns::service::{DnsService, DnsServiceConfig, DnsUnit},
};
use bootlane_media::settings::{Settings, SettingsDefaults};
use bootlane_tftp::tftp::{control::TftpControl, TftpUnit};

/// What the DNS service needs from the configuration.
pub fn dns_config(config: &Config) -> DnsServiceConfig {
    DnsServiceConfig {
        dns: config.dns.clone(),
        server_name: config.server.name.clone(),
        local_domain: config.local_domain(),
    }
}

/// Builds the services (nothing is bound yet: [`Supervisor::start_auto`] does that).
/// `admin_password` seeds the `admin` user on first start (`BOOTLANE_ADMIN_PASSWORD`).
///
/// # Errors
/// Store errors, or failing to write the initial admin password file.
pub async fn build(
    config: Arc<Config>,
    store: Store,
    dataplane: Arc<dyn DnsTable>,
    admin_password: Option<String>,
    logs: Arc<bootlane_core::logging::LogControl>,
    token: CancellationToken,
) -> anyhow::Result<AppState> {
    let events = EventBus::open_with_audit(&store, config.events.clone(), config.audit.clone())?;
    events.set_node(&config.server.node_name());
    let dns_cfg = dns_config(&config);
    let xdp = dataplane.status();
    if !matches!(xdp.mode.as_str(), "off" | "fake") {
        let (kind, summary) = if xdp.active {
            (EventKind::DataplaneXdpAttached, "XDP fast path attached".to_string())
        } else {
            (
                EventKind::DataplaneXdpFailed,
                format!("XDP fast path not attached: {}", xdp.reason.clone().unwrap_or_default()),
            )
        };
        events.publish(
            bootlane_core::events::NewEvent::new(kind, summary)
                .resource("dataplane", "xdp")
                .with(&xdp.event_data()),
        );
    }
    let dns = DnsService::open(&dns_cfg, &store, dataplane, events.clone(), token.clone()).await?;
    let settings = Settings::open(
        &store,
        &SettingsDefaults {
            server_name: config.server.name.clone(),
            api_listen: config.api.listen,
            session_ttl_secs: config.api.session_ttl_secs,
            boot_root: config.boot_root(),
            data_dir: config.data_dir.clone(),
            allowed_roots: config.boot.allowed_roots.clone(),
            builtin_general: {
                let d = Config::default();
                bootlane_media::settings::GeneralSettings {
                    server_name: d.server.name,
                    api_listen: d.api.listen.to_string(),
                    session_ttl_secs: d.api.session_ttl_secs,
                }
            },
        },
        events.clone(),
    )?;
    let ttl = std::time::Duration::from_secs(settings.general().session_ttl_secs);
    let auth = Auth::open(&store, &config.data_dir, ttl, admin_password, events.clone()).await?;
    let auth = match &config.auth.ldap {
        Some(l) => auth.with_directory(bootlane_identity::ldap::Directory::new(l)?),
        None => auth,
    };
    let auth = match &config.auth.oidc {
        Some(o) => auth.with_oidc(bootlane_identity::oidc::Oidc::new(o, &config.outbound)?),
        None => auth,
    };
    let hosts = HostService::open(&store, BootCatalog::profile_lookup(&store)?, events.clone())?;
    let catalog = BootCatalog::open(&store, config.boot.ipxe_script.clone(), hosts.clone(), events.clone()).await?;
    let dhcp = DhcpControl::open(&store, &config.dhcp, events.clone()).await?;
    let sessions = bootlane_sessions::recorder::Sessions::open(
        &store,
        config.boot_sessions.clone(),
        Some(hosts.clone()),
        Some(catalog.clone()),
    )?;
    if config.boot_sessions.enabled {
        // Set before the DHCP service starts: its handler takes the tracer when built.
        let (tracer, trace) = bootlane_dhcp::dhcp::trace::channel();
        dhcp.set_tracer(tracer);
        sessions
            .spawn(&events, trace, token.clone())
            .map_err(|e| anyhow::anyhow!("starting the boot-sessions thread: {e}"))?;
    }
    // `[dns] allow_recursion`'s `dhcp` keyword: the subnets DHCP serves now.
    let served = Arc::downgrade(&dhcp);
    dns.set_served_subnets(Arc::new(move || {
        use bootlane_dhcp::dhcp::config::SubnetMode;
        let Some(d) = served.upgrade() else { return Vec::new() };
        let mut nets: Vec<ipnet::IpNet> = d
            .effective_subnets()
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.mode != SubnetMode::Off)
            .map(|s| s.cidr.into())
            .collect();
        nets.extend(
            d.v6()
                .effective()
                .into_iter()
                .filter(|s| s.mode != SubnetMode::Off)
                .map(|s| ipnet::IpNet::from(s.prefix)),
        );
        nets
    }));
    let tftp_default = config.tftp.enabled.unwrap_or(dhcp.any_active()?);
    let tftp = TftpControl::open(
        &store,
        &config.tftp,
        tftp_default,
        settings.netboot_watch(),
        events.clone(),
    )?;
    let access = bootlane_boot::access::service::AccessService::open(
        &config.access,
        &store,
        Some(dhcp.leases()),
        events.clone(),
    )?;
    access.spawn_recorder(token.clone());
    let boot_serving = Arc::new(AtomicBool::new(false));
    let domain_src = dns.clone();
    let units: Vec<Arc<dyn Service>> = vec![
        Arc::new(DnsUnit(dns.clone())),
        Arc::new(
            DhcpUnit::new(
                dhcp.clone(),
                config.api.boot_addr().port(),
                settings.netboot_watch(),
                Arc::new(move || domain_src.settings().local_domain),
                token.clone(),
            )
            .with_access(access.gate())
            .with_secure_boot(hosts.secure_boot_hosts()),
        ),
        Arc::new(
            TftpUnit::new(tftp.clone(), token.clone())
                .with_access(access.gate())
                // pxelinux.cfg/... and grub/grub.cfg..., generated from the profiles.
                .with_generated(Arc::new(bootlane_boot::boot::generated::BootConfigFiles {
                    catalog: catalog.clone(),
                    netboot: settings.netboot_watch(),
                    http_port: config.api.boot_addr().port(),
                    events: events.clone(),
                })),
        ),
        Arc::new(HttpBootUnit {
            serving: boot_serving.clone(),
            listen: std::iter::once(config.api.boot_addr())
                .chain(bootlane_core::net::ipv6_twin(config.api.boot_addr()))
                .map(|a| a.to_string())
                .collect(),
        }),
    ];
    let supervisor = Supervisor::new(&store, events.clone(), units)?;
    let stats_dns = dns.clone();
    let activity = bootlane_dns::stats::Activity::new(Box::new(move || bootlane_dns::stats::read_counters(&stats_dns)));
    let wol = bootlane_machines::wol::service::WolService::open(
        &config.wol,
        &store,
        hosts.clone(),
        dhcp.clone(),
        events.clone(),
    )?;
    wol.spawn_scheduler(token.clone());
    let bmc = bootlane_machines::bmc::service::BmcService::open(
        &config.bmc,
        &config.outbound,
        &store,
        &config.data_dir,
        hosts.clone(),
        events.clone(),
    )?;
    // Hosts' own BMC passwords are sealed with the same key as the BMC configs'.
    let sealed = hosts
        .set_password_sealer(Arc::new(bootlane_machines::bmc::secret::SecretBox::open(
            &config.data_dir,
        )?))
        .await?;
    if sealed > 0 {
        tracing::info!(
            hosts = sealed,
            "sealed BMC passwords stored in plain text by an earlier version"
        );
    }
    let deadline_stop = token.clone();
    activity.spawn(token.clone());
    let files =
        bootlane_media::media::files::FileService::new(settings.netboot_watch(), config.files.clone(), events.clone());
    let bootloaders = bootlane_media::media::bootloader::Bootloaders::new(dhcp.clone(), settings.clone());
    let os_images = bootlane_media::media::images::OsImageService::open(&store, files.clone(), events.clone())?;
    os_images.recover().await?;
    let doctor = bootlane_doctor::doctor::Doctor::new(bootlane_doctor::doctor::Sources {
        dhcp: dhcp.clone(),
        bootloaders: bootloaders.clone(),
        settings: settings.clone(),
        tftp: tftp.clone(),
        dns: dns.clone(),
        http_port: config.api.boot_addr().port(),
        secure_boot: hosts.secure_boot_hosts(),
        events: events.clone(),
    });
    let netdiag = Arc::new(bootlane_machines::netdiag::NetDiag::system(config.diagnostics.clone()));
    let users = crate::api::users::Users::new(store.clone(), events.clone());
    let netboot = bootlane_install::netboot::NetbootService::open(
        &config.netboot,
        &config.outbound,
        &store,
        settings.netboot_watch(),
        events.clone(),
    )?;
    let nfs =
        bootlane_media::nfs::service::NfsService::open(&config.nfs, &store, settings.netboot_watch(), events.clone())?;
    let answers = bootlane_install::answers::templates::AnswerTemplates::open(
        &config.answers,
        &store,
        hosts.clone(),
        catalog.clone(),
        events.clone(),
    )?;
    let tasks = bootlane_install::install::service::TaskService::open(bootlane_install::install::service::TaskDeps {
        store: store.clone(),
        events: events.clone(),
        hosts: hosts.clone(),
        catalog: catalog.clone(),
        images: os_images.clone(),
        answers: answers.clone(),
        leases: dhcp.leases(),
        config: config.install_tasks.clone(),
        rate: (config.boot.rate_per_client > 0).then_some((config.boot.rate_per_client, config.boot.rate_burst)),
    })?;
    let updates = bootlane_updates::updates::service::UpdateService::open(
        &config.updates,
        &config.outbound,
        &config.data_dir,
        events.clone(),
        deadline_stop.clone(),
    )?;
    tasks.spawn_deadlines(std::time::Duration::from_secs(30), deadline_stop);
    let scripts = bootlane_install::scripts::service::ScriptService::open(
        &store,
        hosts.clone(),
        catalog.clone(),
        events.clone(),
    )?;
    let community = bootlane_install::community::service::CommunityService::open(
        &config.community,
        &config.outbound,
        bootlane_install::community::service::Targets {
            answers: answers.clone(),
            catalog: catalog.clone(),
            netboot: netboot.clone(),
            scripts: scripts.clone(),
            events: events.clone(),
        },
    )?;
    bootlane_cluster::report_link(&store, events.clone(), token.clone());
    bootlane_cluster::relay_events(&store, events.clone(), token.clone());
    let state = AppState {
        config,
        store,
        dns,
        auth: Arc::new(auth),
        catalog,
        hosts,
        dhcp,
        tftp,
        events,
        supervisor,
        settings,
        boot_serving,
        started: Instant::now(),
        logs,
        activity,
        files,
        bootloaders,
        wol,
        doctor,
        sessions,
        netdiag,
        access,
        bmc,
        users,
        netboot,
        os_images,
        nfs,
        tasks,
        answers,
        scripts,
        community,
        updates,
    };
    // Other nodes' writes (shared PostgreSQL store) rebuild what this node derived.
    bootlane_cluster::follow(&state.store, followers(&state), token);
    Ok(state)
}

/// The services that follow other nodes' writes ([`bootlane_cluster::follow`]), one line
/// each: each names the trees it derives from and rebuilds itself
/// ([`bootlane_core::store::follow::Follower`]).
pub fn followers(state: &AppState) -> bootlane_cluster::Followers {
    vec![
        state.dns.clone(),
        state.dhcp.clone(),
        state.access.clone(),
        state.hosts.clone(),
    ]
}
