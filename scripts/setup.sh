#!/usr/bin/env bash
# Idempotent machine set-up for Bootlane: system packages for the real-client tests,
# Node/npm and Chromium for the web UI and its browser tests, the eBPF toolchain
# (rust-src for nightly, LLVM 22, bpf-linker), schemathesis for the API contract test.
# Quick when already done.
# Called by `cargo xtask setup` (and so by `cargo xtask run|test|bench|lab`).
set -euo pipefail

need_pkgs=()
check() { # check <command-or-path> <debian package>
  if [[ "$1" == /* ]]; then [[ -e "$1" ]] || need_pkgs+=("$2")
  else command -v "$1" >/dev/null 2>&1 || need_pkgs+=("$2"); fi
}
check /usr/lib/llvm-22/lib/libLLVM.so llvm-22-dev
check dig bind9-dnsutils
check kdig knot-dnsutils
check kxdpgun knot-dnsutils
# The kernel's per-program statistics (run_time_ns, run_cnt) in `cargo xtask bench dns`.
check bpftool bpftool
check dnsperf dnsperf
check dnsmasq dnsmasq-base
check ip iproute2
check perfdhcp kea-admin
# The DHCP benchmark's stronger peer: ISC Kea's DHCPv4 server (never started as a daemon
# here: policy-rc.d below).
check kea-dhcp4 kea-dhcp4-server
# The shared store: PostgreSQL's server binaries (initdb, pg_ctl), for the throwaway
# clusters the store tests start (the Debian package's own cluster is not used).
check /usr/lib/postgresql/15/bin/initdb postgresql-15
check udhcpc udhcpc
# Update signatures (the book's "Updates" chapter): the updates test signs with the real minisign CLI.
check minisign minisign
check dhclient isc-dhcp-client
# The boot doctor's relay check: a real relay agent (never started as a service here).
check dhcrelay isc-dhcp-relay
check tftp tftp-hpa
# TFTP under loss: atftp is the RFC 7440 (windowsize) client, nftables drops datagrams
# at random (this kernel has no sch_netem).
check atftp atftp
check nft nftables
check tcpdump tcpdump
check busybox busybox
check curl curl
check qemu-system-x86_64 qemu-system-x86
check /usr/lib/ipxe/qemu/pxe-e1000.rom ipxe-qemu
check /usr/share/OVMF/OVMF_CODE_4M.fd ovmf
check /usr/lib/ipxe/undionly.kpxe ipxe
check /usr/lib/ipxe/ipxe.efi ipxe
# PXELINUX: pxelinux.0 and the BIOS modules its generated menu loads.
check /usr/lib/PXELINUX/pxelinux.0 pxelinux
check /usr/lib/syslinux/modules/bios/menu.c32 syslinux-common
check ldns-testns ldnsutils
check python3 python3
# The Debian package (cargo xtask package) and its test: unit checks, running the
# installed binary as an unprivileged user with chosen capabilities.
check systemd-analyze systemd
check setpriv util-linux
check dpkg-deb dpkg
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# The web UI: its build (Node, npm) and its browser tests (Debian's Chromium, driven by
# playwright-core; Playwright's own browser download cannot work here).
check node nodejs
check npm npm
check /usr/bin/chromium chromium
# BMC power: ipmitool is the IPMI client Bootlane runs; the tests' counterparts are OpenIPMI's
# ipmi_sim and sushy-emulator (below), with bcrypt htpasswd from apache2-utils.
check ipmitool ipmitool
check ipmi_sim openipmi
check htpasswd apache2-utils
# OS images: the tests build distro-shaped ISOs with xorriso.
check xorriso xorriso
# ... and boot one in QEMU: the real Debian installer kernel and initrd (133 MB, once).
check /usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64/linux debian-installer-12-netboot-amd64
# Secure Boot: the Microsoft-signed shim and Debian's signed GRUB (the d-i netboot set
# above carries the signed netboot pair and kernel the tests boot), and OVMF's Secure
# Boot build with Microsoft keys enrolled (OVMF_CODE_4M.ms.fd, in ovmf).
check /usr/lib/shim/shimx64.efi.signed shim-signed
check /usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed grub-efi-amd64-signed
# ARM64: qemu-system-aarch64 with AAVMF, and the d-i ARM64 netboot set (signed
# grubaa64.efi and shim, the ARM64 installer kernel and initrd; Debian has no
# grub-efi-arm64-signed for amd64 hosts).
check qemu-system-aarch64 qemu-system-arm
check /usr/share/AAVMF/AAVMF_CODE.fd qemu-efi-aarch64
check /usr/lib/debian-installer/images/12/arm64/text/debian-installer/arm64/grubaa64.efi debian-installer-12-netboot-arm64
# IPv6 netboot: radvd sends the lab link's router advertisements (managed flag).
check radvd radvd
# NFS exports: exportfs, rpc.nfsd and rpc.mountd for the server side Bootlane
# drives, mount.nfs4 for the test's client namespace.
check /usr/sbin/exportfs nfs-kernel-server
check /usr/sbin/rpc.nfsd nfs-kernel-server
check /usr/sbin/rpc.mountd nfs-kernel-server
check mount.nfs4 nfs-common
# Answer templates: xmllint judges rendered AutoYaST and autounattend files.
check xmllint libxml2-utils
# The audit log's syslog copy: scripts/e2e-audit.sh checks it against a real rsyslogd.
check rsyslogd rsyslog
# HTTPS and listeners: openssl makes the test CAs and checks fingerprints, prlimit runs the
# server under the unit's descriptor limit, pebble is the ACME server (RFC 8555) the
# certificate tests ask.
check openssl openssl
check prlimit util-linux
check pebble pebble
# ... and certutil puts pebble's root into the NSS database Chromium trusts, so the browser
# check of the UI over HTTPS verifies the chain as a user's browser would.
check certutil libnss3-tools
# Directory sign-in ([auth.ldap]): the LDAP test runs its own OpenLDAP slapd (a generated
# configuration in a temporary directory, in the test's network namespace; the package's
# own service is never started here: policy-rc.d) and loads it with ldapadd/ldapmodify.
check /usr/sbin/slapd slapd
check ldapadd ldap-utils
# TOTP second factors: the browser test computes the one-time codes with oathtool.
check oathtool oathtool
# The shipped alerting rules and dashboard: promtool checks and unit-tests the rules, and a
# real Prometheus (never started as a service here: policy-rc.d) scrapes a test server.
check promtool prometheus
check prometheus prometheus

# The pure-Rust cargo tools build in the background while the packages install (the
# package installs mostly wait on the network and dpkg; a fresh machine saves minutes).
# Their output goes to a log, shown if one fails; `wait_tools` below waits for them.
tools_log=$(mktemp)
(
  set -euo pipefail
  # `cargo xtask package`: cargo-deb, pinned (3.8.0 builds on rustc 1.95). Built in cargo's
  # own temporary directory, never in the project's target dir.
  cargo_deb_version=3.8.0
  if [[ "$(cargo deb --version 2>/dev/null)" != *" $cargo_deb_version" ]]; then
    echo "setup: installing cargo-deb $cargo_deb_version"
    env -u CARGO_TARGET_DIR cargo install --locked "cargo-deb@$cargo_deb_version"
  fi
  # `cargo xtask fuzz`: cargo-fuzz, pinned; it drives libFuzzer on the nightly toolchain
  # that is already on the machine.
  cargo_fuzz_version=0.13.2
  if [[ "$(cargo fuzz --version 2>/dev/null)" != *" $cargo_fuzz_version"* ]]; then
    echo "setup: installing cargo-fuzz $cargo_fuzz_version"
    env -u CARGO_TARGET_DIR cargo install --locked "cargo-fuzz@$cargo_fuzz_version"
  fi
  # `cargo xtask docs` (and so `cargo xtask test`): mdBook builds the book in docs/, pinned
  # (0.5.4 builds on rustc 1.95). Built in cargo's own temporary directory.
  mdbook_version=0.5.4
  if [[ "$(mdbook --version 2>/dev/null)" != "mdbook v$mdbook_version" ]]; then
    echo "setup: installing mdbook $mdbook_version"
    env -u CARGO_TARGET_DIR cargo install --locked mdbook --version "$mdbook_version"
  fi
) >"$tools_log" 2>&1 &
tools_pid=$!
wait_tools() {
  if ! wait "$tools_pid"; then
    cat "$tools_log" >&2
    echo "setup: installing the cargo tools failed (log above)" >&2
    exit 1
  fi
  grep '^setup:' "$tools_log" || true
  rm -f "$tools_log"
}

if ((${#need_pkgs[@]})); then
  mapfile -t uniq < <(printf '%s\n' "${need_pkgs[@]}" | sort -u)
  echo "setup: installing ${uniq[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Never let a package start a daemon (dnsmasq, kea) on this machine.
  cleanup_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; cleanup_policy=1
  fi
  apt-get update -qq || true
  apt-get install -y -qq --no-install-recommends "${uniq[@]}" >/dev/null
  ((cleanup_policy)) && rm -f /usr/sbin/policy-rc.d
fi
# The boot-media benchmark (scripts/bench-media.sh) serves the same file with nginx:
# best effort (nginx-light where the release still has it, else nginx); without it the
# benchmark measures Bootlane alone. Never started as a service here (policy-rc.d).
if ! command -v nginx >/dev/null 2>&1 && [[ ! -x /usr/sbin/nginx ]]; then
  echo "setup: installing nginx (best effort)"
  export DEBIAN_FRONTEND=noninteractive
  cleanup_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; cleanup_policy=1
  fi
  apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 ||
    apt-get install -y -qq --no-install-recommends nginx >/dev/null 2>&1 ||
    echo "setup: nginx is not installable here; bench-media.sh will measure Bootlane alone"
  ((cleanup_policy)) && rm -f /usr/sbin/policy-rc.d
fi

if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
  echo "setup: adding rust-src to nightly"
  rustup component add rust-src --toolchain nightly
fi

if ! bpf-linker --version >/dev/null 2>&1; then
  echo "setup: building bpf-linker (a few minutes, once)"
  LLVM_PREFIX=/usr/lib/llvm-22 cargo install --locked bpf-linker --no-default-features --features llvm-22 \
    || LLVM_PREFIX=/usr/lib/llvm-22 cargo install bpf-linker --no-default-features --features llvm-22
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
# API contract test (scripts/contract.sh): schemathesis, pinned, in its own venv.
schemathesis_version=4.32.5
venv=/opt/bootlane-venv
if [[ "$("$venv/bin/st" --version 2>/dev/null)" != *" $schemathesis_version" ]]; then
  echo "setup: installing schemathesis $schemathesis_version in $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
fi
# OS images: the UDF-only, Windows-shaped test ISO is made with pycdlib, pinned, in the
# same venv.
pycdlib_version=1.22.0
if [[ "$("$venv/bin/pip" show pycdlib 2>/dev/null | sed -n 's/^Version: //p')" != "$pycdlib_version" ]]; then
  echo "setup: installing pycdlib $pycdlib_version in $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pycdlib==$pycdlib_version"
fi
# Answer templates: ksvalidator (pykickstart) judges kickstart files, and the libraries
# Debian's cloud-init needs to run `cloud-init schema` from the venv (below), pinned, in
# the same venv.
answer_pips=(pykickstart==3.78 jsonschema==4.26.0 jinja2==3.1.6 configobj==5.0.9 jsonpatch==1.47 oauthlib==4.0.1 pyyaml requests)
if ! "$venv/bin/python3" -c 'import pykickstart, jsonschema, jinja2, configobj, jsonpatch, oauthlib, yaml, requests' >/dev/null 2>&1; then
  echo "setup: installing the answer-file validators' Python packages in $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${answer_pips[@]}"
fi
# ... and two validators from Debian packages, unpacked (never installed: cloud-init's
# package would enable its boot services on this machine) under /opt/bootlane-tools:
# `cloud-init schema` for cloud-config and Ubuntu autoinstall, `ignition-validate`.
tools=/opt/bootlane-tools
for pkg in cloud-init ignition; do
  marker=$tools/$pkg/usr/bin/$([[ $pkg == ignition ]] && echo ignition-validate || echo cloud-init)
  if [[ ! -x $marker ]]; then
    echo "setup: unpacking Debian's $pkg into $tools/$pkg"
    dl=$(mktemp -d)
    (cd "$dl" && apt-get download -qq "$pkg" 2>/dev/null || { apt-get update -qq && apt-get download -qq "$pkg"; })
    mkdir -p "$tools/$pkg"
    dpkg -x "$dl"/"$pkg"_*.deb "$tools/$pkg"
    rm -rf "$dl"
  fi
done
# Redfish counterpart of the BMC tests: sushy-emulator, pinned, in its own venv (its
# Flask/requests pins stay apart from schemathesis').
sushy_version=2.2.0
sushy_venv=/opt/bootlane-sushy
if [[ "$("$sushy_venv/bin/pip" show sushy-tools 2>/dev/null | sed -n 's/^Version: //p')" != "$sushy_version" ]]; then
  echo "setup: installing sushy-tools $sushy_version in $sushy_venv"
  python3 -m venv "$sushy_venv"
  "$sushy_venv/bin/pip" install -q --disable-pip-version-check "sushy-tools==$sushy_version"
fi
wait_tools
echo "setup: ok"
