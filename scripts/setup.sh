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
check dnsperf dnsperf
check dnsmasq dnsmasq-base
check ip iproute2
check perfdhcp kea-admin
check udhcpc udhcpc
check dhclient isc-dhcp-client
check tftp tftp-hpa
check curl curl
check qemu-system-x86_64 qemu-system-x86
check /usr/lib/ipxe/qemu/pxe-e1000.rom ipxe-qemu
check /usr/share/OVMF/OVMF_CODE_4M.fd ovmf
check /usr/lib/ipxe/undionly.kpxe ipxe
check /usr/lib/ipxe/ipxe.efi ipxe
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
# BMC power (issue 11): ipmitool is the IPMI client Bootlane runs; the tests' counterparts
# are OpenIPMI's ipmi_sim and sushy-emulator (below), with bcrypt htpasswd from apache2-utils.
check ipmitool ipmitool
check ipmi_sim openipmi
check htpasswd apache2-utils
# OS images (issue 9): the tests build distro-shaped ISOs with xorriso.
check xorriso xorriso

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

if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
  echo "setup: adding rust-src to nightly"
  rustup component add rust-src --toolchain nightly
fi

if ! bpf-linker --version >/dev/null 2>&1; then
  echo "setup: building bpf-linker (a few minutes, once)"
  LLVM_PREFIX=/usr/lib/llvm-22 cargo install --locked bpf-linker --no-default-features --features llvm-22 \
    || LLVM_PREFIX=/usr/lib/llvm-22 cargo install bpf-linker --no-default-features --features llvm-22
fi
# `cargo xtask package`: cargo-deb, pinned (3.8.0 builds on rustc 1.95). Built in cargo's
# own temporary directory, never in the project's target dir.
cargo_deb_version=3.8.0
if [[ "$(cargo deb --version 2>/dev/null)" != *" $cargo_deb_version" ]]; then
  echo "setup: installing cargo-deb $cargo_deb_version"
  env -u CARGO_TARGET_DIR cargo install --locked "cargo-deb@$cargo_deb_version"
fi
# API contract test (scripts/contract.sh): schemathesis, pinned, in its own venv.
schemathesis_version=4.32.5
venv=/opt/bootlane-venv
if [[ "$("$venv/bin/st" --version 2>/dev/null)" != *" $schemathesis_version" ]]; then
  echo "setup: installing schemathesis $schemathesis_version in $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
fi
# OS images (issue 9): the UDF-only, Windows-shaped test ISO is made with pycdlib, pinned,
# in the same venv.
pycdlib_version=1.22.0
if [[ "$("$venv/bin/pip" show pycdlib 2>/dev/null | sed -n 's/^Version: //p')" != "$pycdlib_version" ]]; then
  echo "setup: installing pycdlib $pycdlib_version in $venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pycdlib==$pycdlib_version"
fi
# Redfish counterpart of the BMC tests (issue 11): sushy-emulator, pinned, in its own venv
# (its Flask/requests pins stay apart from schemathesis').
sushy_version=2.2.0
sushy_venv=/opt/bootlane-sushy
if [[ "$("$sushy_venv/bin/pip" show sushy-tools 2>/dev/null | sed -n 's/^Version: //p')" != "$sushy_version" ]]; then
  echo "setup: installing sushy-tools $sushy_version in $sushy_venv"
  python3 -m venv "$sushy_venv"
  "$sushy_venv/bin/pip" install -q --disable-pip-version-check "sushy-tools==$sushy_version"
fi
echo "setup: ok"
