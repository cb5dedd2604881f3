//! Every kind of event the server publishes, as one enum: [`EventKind`].
//!
//! A publisher names its event's kind with a variant ([`NewEvent::new`](super::NewEvent::new),
//! [`NewEvent::write`](super::NewEvent::write)); the stored and served [`Event`](super::Event)
//! keeps the dotted wire name (`dns.record.created`) as a string, so the JSON of `/events`,
//! the SSE `event:` line, the journals and the audit log read as before and an event a newer
//! node relays with a kind this one does not know still passes through.
//!
//! One flat enum rather than one per domain joined into one: a kind is only ever named, never
//! taken apart by domain, and one enum gives one exhaustive list ([`EventKind::ALL`], which
//! the book's table and the OpenAPI description of the `kind` filter are checked against),
//! one `match` for the wire names and no wrapper to unwrap at the call sites. The domain is
//! the wire name's first segment ([`EventKind::domain`]). Variants are in the order of their
//! wire names; each one's doc line is the line the book shows for it.
//!
//! [`strum`] derives the wire name ([`EventKind::as_str`], `Display`), its parser
//! (`FromStr`, for names read back from the journal), the list and the doc lines.

use strum::{EnumMessage, VariantArray};

/// The kind of an event: its variant names it in code, [`EventKind::as_str`] gives the dotted
/// name stored in [`Event::kind`](super::Event::kind) and sent on the SSE `event:` line.
/// `data` shapes are in braces; "write" means `data` is `{action, before, after}` and the
/// event is copied into the audit log.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::EnumMessage,
)]
#[non_exhaustive]
pub enum EventKind {
    /// Access control: a blacklist or whitelist entry was created (write).
    #[strum(serialize = "access.entry.created")]
    AccessEntryCreated,
    /// Access control: a blacklist or whitelist entry was deleted (write).
    #[strum(serialize = "access.entry.deleted")]
    AccessEntryDeleted,
    /// Access control: the mode (off, blacklist, whitelist) changed (write).
    #[strum(serialize = "access.mode.changed")]
    AccessModeChanged,
    /// A client was refused {mac, ip, protocol, reason (blacklisted, not_whitelisted, unknown_client), entry (blacklisted only), arch, vendor_class, suppressed}; at most one per device per minute.
    #[strum(serialize = "access.refused")]
    AccessRefused,
    /// A record of the unauthorised-clients list was deleted (write).
    #[strum(serialize = "access.unauthorized.deleted")]
    AccessUnauthorizedDeleted,
    /// The site install settings changed {timezone, locale, keyboard, ssh_keys, mirror, root_password_changed}.
    #[strum(serialize = "answer_settings.updated")]
    AnswerSettingsUpdated,
    /// An answer template was created {name, format, version}.
    #[strum(serialize = "answer_template.created")]
    AnswerTemplateCreated,
    /// An answer template was deleted {name, format, version}.
    #[strum(serialize = "answer_template.deleted")]
    AnswerTemplateDeleted,
    /// An answer template was rolled back to an earlier version {name, format, version}.
    #[strum(serialize = "answer_template.rolled_back")]
    AnswerTemplateRolledBack,
    /// An answer template was changed {name, format, version}.
    #[strum(serialize = "answer_template.updated")]
    AnswerTemplateUpdated,
    /// A user logged in (resource `user`).
    #[strum(serialize = "auth.login")]
    AuthLogin,
    /// A login was refused (resource `user`, the name tried).
    #[strum(serialize = "auth.login_failed")]
    AuthLoginFailed,
    /// A user logged out.
    #[strum(serialize = "auth.logout")]
    AuthLogout,
    /// A script baseline was created {name, script_ids, is_default}.
    #[strum(serialize = "baseline.created")]
    BaselineCreated,
    /// A script baseline was deleted {name, script_ids, is_default}.
    #[strum(serialize = "baseline.deleted")]
    BaselineDeleted,
    /// A script baseline was changed {name, script_ids, is_default}.
    #[strum(serialize = "baseline.updated")]
    BaselineUpdated,
    /// A BMC's boot device was set {device, persistent, uefi, kept}.
    #[strum(serialize = "bmc.boot_device.set")]
    BmcBootDeviceSet,
    /// A BMC configuration was created (write; no password in it).
    #[strum(serialize = "bmc.config.created")]
    BmcConfigCreated,
    /// A BMC configuration was deleted (write; no password in it).
    #[strum(serialize = "bmc.config.deleted")]
    BmcConfigDeleted,
    /// BMC configurations were imported from CSV {imported, failed, ids}.
    #[strum(serialize = "bmc.config.imported")]
    BmcConfigImported,
    /// A BMC configuration was changed (write; no password in it).
    #[strum(serialize = "bmc.config.updated")]
    BmcConfigUpdated,
    /// A machine's power state changed {before, after, host_id}.
    #[strum(serialize = "bmc.power.changed")]
    BmcPowerChanged,
    /// A power action failed {action, pxe, error, host_id}.
    #[strum(serialize = "bmc.power.failed")]
    BmcPowerFailed,
    /// A power action was asked of a BMC {action, pxe, host_id}.
    #[strum(serialize = "bmc.power.requested")]
    BmcPowerRequested,
    /// A boot file was served over HTTP {file, bytes, status} (and `image` from a mounted OS image).
    #[strum(serialize = "boot.file.served")]
    BootFileServed,
    /// A generated GRUB menu was served {file, mac, profile, host, protocol}.
    #[strum(serialize = "boot.grub.served")]
    BootGrubServed,
    /// An iPXE script was served {mac, profile, host}, or an install task's {mac, install_task}.
    #[strum(serialize = "boot.ipxe.served")]
    BootIpxeServed,
    /// The iPXE script template was changed or reset (write).
    #[strum(serialize = "boot.ipxe_script.updated")]
    BootIpxeScriptUpdated,
    /// A generated PXELINUX menu was served {file, mac, profile, host, protocol}.
    #[strum(serialize = "boot.pxelinux.served")]
    BootPxelinuxServed,
    /// The XDP fast path attached (at start, or when DNS or its interfaces change); `data` is the XDP status.
    #[strum(serialize = "dataplane.xdp.attached")]
    DataplaneXdpAttached,
    /// The XDP fast path detached; `data` is the XDP status.
    #[strum(serialize = "dataplane.xdp.detached")]
    DataplaneXdpDetached,
    /// The XDP fast path could not attach; `data` is the XDP status.
    #[strum(serialize = "dataplane.xdp.failed")]
    DataplaneXdpFailed,
    /// The DHCP architecture map changed (write).
    #[strum(serialize = "dhcp.archmap.changed")]
    DhcpArchmapChanged,
    /// A client declined its DHCPv4 address {mac, ip, subnet}.
    #[strum(serialize = "dhcp.lease.declined")]
    DhcpLeaseDeclined,
    /// A DHCPv4 lease was deleted through the API (write).
    #[strum(serialize = "dhcp.lease.deleted")]
    DhcpLeaseDeleted,
    /// A DHCPv4 lease ran out {mac, ip, subnet} (checked every 10 s while DHCP runs).
    #[strum(serialize = "dhcp.lease.expired")]
    DhcpLeaseExpired,
    /// A DHCPv4 lease was granted {mac, ip, subnet, hostname, lease_time_secs, state}.
    #[strum(serialize = "dhcp.lease.granted")]
    DhcpLeaseGranted,
    /// A client released its DHCPv4 lease {mac, ip, subnet}.
    #[strum(serialize = "dhcp.lease.released")]
    DhcpLeaseReleased,
    /// A DHCPv4 lease was renewed {mac, ip, subnet, hostname, lease_time_secs, state}, or answered from memory while the shared store was unreachable {mac, ip, subnet, lease_time_secs, state, degraded}.
    #[strum(serialize = "dhcp.lease.renewed")]
    DhcpLeaseRenewed,
    /// Expired DHCPv4 leases were pruned through the API (write).
    #[strum(serialize = "dhcp.leases.pruned")]
    DhcpLeasesPruned,
    /// A DHCP reservation was created (write).
    #[strum(serialize = "dhcp.reservation.created")]
    DhcpReservationCreated,
    /// A DHCP reservation was deleted (write).
    #[strum(serialize = "dhcp.reservation.deleted")]
    DhcpReservationDeleted,
    /// A DHCP reservation was changed (write).
    #[strum(serialize = "dhcp.reservation.updated")]
    DhcpReservationUpdated,
    /// The DHCP settings changed (write).
    #[strum(serialize = "dhcp.settings.changed")]
    DhcpSettingsChanged,
    /// A client declined its DHCPv6 address {duid, iaid, ip, subnet, mac, arch, expires_at}.
    #[strum(serialize = "dhcp6.lease.declined")]
    Dhcp6LeaseDeclined,
    /// A DHCPv6 lease was deleted through the API (write).
    #[strum(serialize = "dhcp6.lease.deleted")]
    Dhcp6LeaseDeleted,
    /// A DHCPv6 lease was granted {duid, iaid, ip, subnet, mac, arch, expires_at}.
    #[strum(serialize = "dhcp6.lease.granted")]
    Dhcp6LeaseGranted,
    /// A client released its DHCPv6 lease {duid, iaid, ip, subnet, mac, arch, expires_at}.
    #[strum(serialize = "dhcp6.lease.released")]
    Dhcp6LeaseReleased,
    /// A DHCPv6 lease was renewed {duid, iaid, ip, subnet, mac, arch, expires_at} (`degraded` when the shared store was unreachable).
    #[strum(serialize = "dhcp6.lease.renewed")]
    Dhcp6LeaseRenewed,
    /// A DNS record was created (write).
    #[strum(serialize = "dns.record.created")]
    DnsRecordCreated,
    /// A DNS record was deleted (write).
    #[strum(serialize = "dns.record.deleted")]
    DnsRecordDeleted,
    /// A DNS record was changed (write).
    #[strum(serialize = "dns.record.updated")]
    DnsRecordUpdated,
    /// The DNS settings changed (write).
    #[strum(serialize = "dns.settings.changed")]
    DnsSettingsChanged,
    /// A boot doctor run ended; the summary counts its errors and warnings.
    #[strum(serialize = "doctor.finished")]
    DoctorFinished,
    /// A file or folder under the boot root was deleted (write; before: {path, type, recursive}).
    #[strum(serialize = "file.deleted")]
    FileDeleted,
    /// A file was uploaded to the boot root (write; after: {path, size, sha256, replaced}).
    #[strum(serialize = "file.uploaded")]
    FileUploaded,
    /// A host was created (write; BMC password never included).
    #[strum(serialize = "host.created")]
    HostCreated,
    /// A host was deleted (write; BMC password never included).
    #[strum(serialize = "host.deleted")]
    HostDeleted,
    /// A host was changed (write; BMC password never included).
    #[strum(serialize = "host.updated")]
    HostUpdated,
    /// An install task was created {id, mac, state, reason}.
    #[strum(serialize = "install.task.created")]
    InstallTaskCreated,
    /// An install task was deleted {id, mac, state, reason}.
    #[strum(serialize = "install.task.deleted")]
    InstallTaskDeleted,
    /// An installer reported on its task (progress, log line, result) {id, mac, kind, message}.
    #[strum(serialize = "install.task.report")]
    InstallTaskReport,
    /// An install task changed state {id, mac, from, state, reason}.
    #[strum(serialize = "install.task.state")]
    InstallTaskState,
    /// An install task was changed {id, mac, state, reason}.
    #[strum(serialize = "install.task.updated")]
    InstallTaskUpdated,
    /// A request with a bad install token was refused {what, task_id}.
    #[strum(serialize = "install.token.refused")]
    InstallTokenRefused,
    /// A netboot file could not be fetched into the cache {path, upstream, error}.
    #[strum(serialize = "netboot.cache.fetch_failed")]
    NetbootCacheFetchFailed,
    /// A netboot file was fetched into the cache {path, upstream, bytes}.
    #[strum(serialize = "netboot.cache.filled")]
    NetbootCacheFilled,
    /// A distribution's netboot overlay was removed.
    #[strum(serialize = "netboot.overlay.deleted")]
    NetbootOverlayDeleted,
    /// A distribution's netboot overlay was stored; `data` is the overlay.
    #[strum(serialize = "netboot.overlay.updated")]
    NetbootOverlayUpdated,
    /// The NFS exports could not be applied {error, wanted}.
    #[strum(serialize = "nfs.apply.failed")]
    NfsApplyFailed,
    /// The NFS settings changed (a write: {action, before, after} with `applied`, whether `exportfs` ran).
    #[strum(serialize = "nfs.updated")]
    NfsUpdated,
    /// An OS image was deleted (write).
    #[strum(serialize = "os_image.deleted")]
    OsImageDeleted,
    /// An OS image could not be extracted {extracted, extract_error}.
    #[strum(serialize = "os_image.extract.failed")]
    OsImageExtractFailed,
    /// An OS image's extraction progressed {bytes, total, percent} (every 5 %).
    #[strum(serialize = "os_image.extract.progress")]
    OsImageExtractProgress,
    /// An OS image was extracted into its tree {extracted, extract_error}.
    #[strum(serialize = "os_image.extracted")]
    OsImageExtracted,
    /// An OS image failed inspection {state, reason, detection}.
    #[strum(serialize = "os_image.failed")]
    OsImageFailed,
    /// An OS image was mounted under /boot.
    #[strum(serialize = "os_image.mounted")]
    OsImageMounted,
    /// An OS image passed inspection and is ready {state, reason, detection}.
    #[strum(serialize = "os_image.ready")]
    OsImageReady,
    /// An OS image was unmounted.
    #[strum(serialize = "os_image.unmounted")]
    OsImageUnmounted,
    /// An OS image was changed (write).
    #[strum(serialize = "os_image.updated")]
    OsImageUpdated,
    /// An OS image upload progressed {bytes, total, percent} (every 5 % of the announced length).
    #[strum(serialize = "os_image.upload.progress")]
    OsImageUploadProgress,
    /// An OS image was uploaded or imported (write).
    #[strum(serialize = "os_image.uploaded")]
    OsImageUploaded,
    /// A boot profile was created (write).
    #[strum(serialize = "profile.created")]
    ProfileCreated,
    /// A boot profile was deleted (write).
    #[strum(serialize = "profile.deleted")]
    ProfileDeleted,
    /// A boot profile was rolled back to an earlier version (write).
    #[strum(serialize = "profile.rolled_back")]
    ProfileRolledBack,
    /// A boot profile was changed (write).
    #[strum(serialize = "profile.updated")]
    ProfileUpdated,
    /// A post-install script was created {name, type, version}.
    #[strum(serialize = "script.created")]
    ScriptCreated,
    /// A post-install script was deleted {name, type, version}.
    #[strum(serialize = "script.deleted")]
    ScriptDeleted,
    /// A post-install script was rolled back to an earlier version {name, type, version}.
    #[strum(serialize = "script.rolled_back")]
    ScriptRolledBack,
    /// A machine reported a failed script run {mac, host_id, task_id, script, exit_code, duration_ms, report_id}.
    #[strum(serialize = "script.run.failed")]
    ScriptRunFailed,
    /// A machine reported a successful script run {mac, host_id, task_id, script, exit_code, duration_ms, report_id}.
    #[strum(serialize = "script.run.succeeded")]
    ScriptRunSucceeded,
    /// A post-install script was changed {name, type, version}.
    #[strum(serialize = "script.updated")]
    ScriptUpdated,
    /// A service's automatic start was switched (write).
    #[strum(serialize = "service.auto_start.changed")]
    ServiceAutoStartChanged,
    /// A service failed {reason}.
    #[strum(serialize = "service.failed")]
    ServiceFailed,
    /// A service started {listen}.
    #[strum(serialize = "service.started")]
    ServiceStarted,
    /// A service stopped.
    #[strum(serialize = "service.stopped")]
    ServiceStopped,
    /// General, netboot or logging settings changed (write).
    #[strum(serialize = "settings.changed")]
    SettingsChanged,
    /// The shared PostgreSQL store is reachable again and this node caught up.
    #[strum(serialize = "store.connected")]
    StoreConnected,
    /// The shared PostgreSQL store became unreachable {error}.
    #[strum(serialize = "store.disconnected")]
    StoreDisconnected,
    /// An item of the community catalog was imported {type, id, source, sha256, installed}.
    #[strum(serialize = "store.item.imported")]
    StoreItemImported,
    /// A backup was taken {bytes}.
    #[strum(serialize = "system.backup.created")]
    SystemBackupCreated,
    /// The TFTP settings changed (write).
    #[strum(serialize = "tftp.settings.changed")]
    TftpSettingsChanged,
    /// A client stopped a TFTP transfer on purpose, as UEFI does after its `tsize` probe {file, client, bytes, duration_ms, outcome}.
    #[strum(serialize = "tftp.transfer.aborted")]
    TftpTransferAborted,
    /// A TFTP transfer completed {file, client, bytes, duration_ms, outcome}.
    #[strum(serialize = "tftp.transfer.completed")]
    TftpTransferCompleted,
    /// A TFTP transfer timed out {file, client, bytes, duration_ms, outcome} or was refused {file, client, error, code}.
    #[strum(serialize = "tftp.transfer.failed")]
    TftpTransferFailed,
    /// An API token was created (write: its name, role, owner and expiry; never the secret or its hash).
    #[strum(serialize = "token.created")]
    TokenCreated,
    /// An API token was revoked (write: the token as it was).
    #[strum(serialize = "token.revoked")]
    TokenRevoked,
    /// A downloaded update was verified and kept {version, size, sha256, path}.
    #[strum(serialize = "update.download.completed")]
    UpdateDownloadCompleted,
    /// An update download was refused; nothing was kept {version, url, reason}.
    #[strum(serialize = "update.download.failed")]
    UpdateDownloadFailed,
    /// An update download progressed {version, received, size, percent} (every 5 %).
    #[strum(serialize = "update.download.progress")]
    UpdateDownloadProgress,
    /// An update download started {version, url, size}.
    #[strum(serialize = "update.download.started")]
    UpdateDownloadStarted,
    /// A user was created (write; no password or hash).
    #[strum(serialize = "user.created")]
    UserCreated,
    /// A user was deleted (write; no password or hash).
    #[strum(serialize = "user.deleted")]
    UserDeleted,
    /// A user's password was changed (write; no password or hash).
    #[strum(serialize = "user.password_changed")]
    UserPasswordChanged,
    /// A user's role was changed (write: before and after, without password or hash).
    #[strum(serialize = "user.role_changed")]
    UserRoleChanged,
    /// A user's second factor (TOTP) was turned off by the user or an admin, also through `bootlane user totp-reset` while the server runs (write: before and after, never the secret or a code).
    #[strum(serialize = "user.totp_disabled")]
    UserTotpDisabled,
    /// A user confirmed a second factor (TOTP) enrolment and it is now on (write: before and after, never the secret or a code).
    #[strum(serialize = "user.totp_enabled")]
    UserTotpEnabled,
    /// Nothing could be sent to wake a machine; `data` is the history record.
    #[strum(serialize = "wol.failed")]
    WolFailed,
    /// The wake-on-LAN history was cleared (a write: {action, before, after} with `deleted`, the count).
    #[strum(serialize = "wol.history.cleared")]
    WolHistoryCleared,
    /// A wake-on-LAN schedule was created (write).
    #[strum(serialize = "wol.schedule.created")]
    WolScheduleCreated,
    /// A wake-on-LAN schedule was deleted (write).
    #[strum(serialize = "wol.schedule.deleted")]
    WolScheduleDeleted,
    /// A wake-on-LAN schedule ran {slot, status, error}.
    #[strum(serialize = "wol.schedule.fired")]
    WolScheduleFired,
    /// Runs of a wake-on-LAN schedule fell while the server was down {missed, last_slot}.
    #[strum(serialize = "wol.schedule.missed")]
    WolScheduleMissed,
    /// A magic packet was sent (resource `host`, or `mac` for a MAC no host has); `data` is the history record.
    #[strum(serialize = "wol.sent")]
    WolSent,
}

impl EventKind {
    /// Every kind, in the order of their wire names.
    pub const ALL: &'static [EventKind] = Self::VARIANTS;

    /// The dotted wire name, e.g. `dns.record.created` (what [`Event::kind`](super::Event::kind)
    /// holds).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The kind of a stored or relayed event's dotted name; `None` for a name this version
    /// does not know.
    pub fn from_wire(name: &str) -> Option<Self> {
        name.parse().ok()
    }

    /// The first segment of the wire name (`dns`, `dhcp6`, `os_image`, ...).
    pub fn domain(self) -> &'static str {
        let s = self.as_str();
        s.split_once('.').map_or(s, |(d, _)| d)
    }

    /// The last segment of the wire name (`created`, `granted`, ...), as event summaries
    /// say it.
    pub fn verb(self) -> &'static str {
        let s = self.as_str();
        s.rsplit_once('.').map_or(s, |(_, v)| v)
    }

    /// The one-line description (the variant's doc line; the book's table shows it).
    pub fn description(self) -> &'static str {
        self.get_documentation().unwrap_or_default()
    }

    /// The Markdown table of every kind the book's events chapter holds, with the type of
    /// its `data` ([`super::data::SHAPES`]; checked by a test, which prints it when the
    /// chapter drifts).
    pub fn markdown_table() -> String {
        let mut out = String::from("| Kind | What happened (`data`) | `data` type |\n|---|---|---|\n");
        for &k in Self::ALL {
            let shapes: Vec<String> = super::data::shapes_of(k).map(|s| format!("`{s}`")).collect();
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                k.as_str(),
                k.description().trim(),
                shapes.join(", ")
            ));
        }
        out
    }

    /// The sentence the OpenAPI document adds to the descriptions of the events' `kind`
    /// field and filters: "The kinds: `access.entry.created`, ...".
    pub fn openapi_list() -> String {
        let names: Vec<String> = Self::ALL.iter().map(|k| format!("`{}`", k.as_str())).collect();
        format!("The kinds: {}.", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's events chapter holds the table of every kind between these markers.
    const BEGIN: &str = "<!-- event kinds: generated from EventKind, checked by a test -->\n";
    const END: &str = "<!-- end of event kinds -->";

    #[test]
    fn every_kind_has_one_wire_name_and_one_doc_line() {
        assert!(EventKind::ALL.len() > 100);
        for w in EventKind::ALL.windows(2) {
            assert!(
                w[0].as_str() < w[1].as_str(),
                "{} before {}: keep them ordered",
                w[0],
                w[1]
            );
        }
        for &k in EventKind::ALL {
            assert_eq!(EventKind::from_wire(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
            let d = k.description();
            assert!(
                !d.trim().is_empty() && !d.contains('\n') && !d.contains('|'),
                "{k}: {d:?}"
            );
            assert!(
                k.as_str().split('.').all(|s| !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')),
                "{k}"
            );
        }
        assert_eq!(EventKind::from_wire("dns.record"), None);
        assert_eq!(
            (
                EventKind::Dhcp6LeaseGranted.domain(),
                EventKind::Dhcp6LeaseGranted.verb()
            ),
            ("dhcp6", "granted")
        );
        assert_eq!(EventKind::ProfileRolledBack.verb(), "rolled_back");
    }

    #[test]
    fn the_books_table_of_kinds_is_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/src/events.md");
        let book = std::fs::read_to_string(path).unwrap();
        let start = book.find(BEGIN).expect("the events chapter holds the begin marker") + BEGIN.len();
        let end = start + book[start..].find(END).expect("and the end marker");
        let want = EventKind::markdown_table();
        if std::env::var_os("BOOTLANE_BLESS").is_some() {
            std::fs::write(path, format!("{}{want}{}", &book[..start], &book[end..])).unwrap();
            return;
        }
        assert!(
            book[start..end] == want,
            "docs/src/events.md: the table of event kinds differs from EventKind; regenerate it with `BOOTLANE_BLESS=1 cargo test -p bootlane-core events` or put this between the markers:\n{want}"
        );
    }
}
