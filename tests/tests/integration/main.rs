//! Bootlane's privileged integration tests (one binary; run by `cargo xtask test` as root).

// DNS against the real binary in network namespaces: dig/kdig from two client subnets,
// dnsmasq as upstream, live settings, kill -9 durability, garbage input.
mod dns_netns;

// XDP fast path: frame/query builders and the checksum-checking answer parser.
use bootlane_tests::xdp_frames;
// XDP fast path: map names, test_run on crafted frames (hits and pass-throughs), 100k load.
mod xdp_program;
// XDP fast path: differential test, XDP answer bytes == userspace DnsHandler bytes.
mod xdp_differential;
// XDP fast path end to end: real binary in netns, generic and native mode, dig/kdig, counters.
mod xdp_netns;
// Response rate limiting under a kxdpgun flood from a spoofed /24 while a real client on
// another subnet stays answered; the XDP counters show the flood cut to the limit.
mod xdp_rrl_netns;

// The boot path: DHCP/proxyDHCP, TFTP, HTTP boot, QEMU BIOS and UEFI machines booting.
mod boot_netns;

// Boot sessions with QEMU BIOS machines: a missing kernel and a rival DHCP server's offer
// named by the verdict; the doctor names the rival.
mod sessions_netns;

// TFTP under 5 % loss each way: curl, tftp-hpa and atftp (windowsize), byte-exact,
// with the server's retransmissions counted (no Sorcerer's Apprentice).
mod tftp_netns;

// The operations backbone: events over SSE with curl, Last-Event-ID resumption, DHCP
// stop/start, and a DHCP interface moved through /settings/interfaces without a restart.
mod backbone_netns;

// Wake-on-LAN: magic packets captured in a namespace (both broadcast forms, ports 9
// and 7, SecureOn), batch stagger, and a schedule that fires once.
mod wol_netns;

// Network diagnostics: real ICMP ping and traceroute through a router namespace,
// plain and streamed over SSE, one run per user.
mod netdiag_netns;

// Backup and restore: `bootlane backup` through the running server's API, a refused
// damaged file, `restore --force`, and every host, profile, record, lease and user
// back.
mod backup_roundtrip;

// The tamper-evident audit log: the hash chain verified by the CLI and the API, an edit
// found, every entry copied to a real rsyslogd as RFC 5424; login limits through curl.
mod audit_e2e;

// Access control: a blacklisted udhcpc gets no lease, TFTP and HTTP boot refuse by lease;
// a QEMU machine not on the whitelist is recorded, then boots once whitelisted.
mod access_netns;

// BMC power: ipmi_sim with a chassis-control hook and sushy-emulator on a namespace's
// loopback, driven through the API (power, boot device, PXE, CSV import, errors).
mod bmc_sim;

// The Debian package: installed into a scratch root, its files, user and unit checked, the
// installed binary run as the bootlane user with only the unit's capabilities.
mod package_install;

// NFS exports: a boot-root directory exported through the API, mounted over NFSv4 from a
// client namespace and read, then disabled; nfsd runs in the server namespace.
mod nfs_netns;

// Boot media: the file API with curl, an ISO uploaded with curl -F, a profile made from it,
// and a QEMU BIOS machine booting the real Debian installer from it, mounted and extracted.
mod media_netns;

// Unattended installs: the real Debian installer fetches its preseed from an install
// task, reports progress, and the machine boots locally once done; token abuse.
mod install_netns;

// Post-install scripts: a machine pulls its baselines' bundle with its install task's
// token, runs it, and its reports reach the host's list and the event log.
mod baseline_netns;

// The store: an HTTP catalog source served by python3 -m http.server, imports from it and
// from the built-in source, a tampered item refused, a stopped source reported.
mod store_netns;

// Verified updates: an update source served by python3 -m http.server in a second namespace;
// check, a verified download, a tampered and a badly signed one refused with nothing kept,
// `bootlane update install` over a copy of the binary, a stopped source (502).
mod updates_netns;

// PXELINUX: generated pxelinux.cfg/01-<mac> over TFTP and HTTP, and a QEMU SeaBIOS
// machine booting the Debian installer kernel through PXELINUX.
mod pxelinux_netns;

// The firmware boots, side by side: OVMF with Microsoft keys and Secure Boot enforced
// through shim and signed GRUB to the signed installer kernel (and refusing iPXE);
// OVMF's own UEFI HTTP boot client to the iPXE script; AAVMF under qemu-system-aarch64
// through Debian's signed ARM64 GRUB to the ARM64 installer kernel.
mod firmware_netns;

// Several nodes: two Bootlane nodes on one PostgreSQL serving one DHCP pool:
// perfdhcp and udhcpc against both, no address to two MACs, a record through A answered by
// B's XDP path, kill -9 of B under load, the database stopped for 10 s.
mod cluster_netns;

// The management plane's HTTP server: an idle-connection flood from one address under the
// unit's descriptor limit while another address is served within 1 s (caps, header-read
// timeout, refusals counted, graceful shutdown).
mod https_netns;

// Directory sign-in: a real OpenLDAP slapd (StartTLS with a test CA) in a namespace;
// groups mapped to roles, refusals, group changes at the next sign-in, a directory down.
mod ldap_netns;

// The boot doctor: a rival dnsmasq with a boot file, a real dhcrelay forwarding for a
// subnet that is not configured, a small MTU; every finding through `POST /doctor`.
mod doctor_netns;

// The shipped alerting rules and Grafana dashboard: promtool, and a real Prometheus that
// scrapes a server with real client traffic over HTTPS.
mod prometheus_netns;
