#!/usr/bin/env bash
# End-to-end test of UEFI HTTP boot (OVMF's own HTTP boot client), run by hand as root or
# by `cargo xtask test` (tests/tests/integration/firmware_netns.rs):
#
#   scripts/e2e-httpboot.sh <path to the bootlane binary>
#
# Debian's OVMF has its own HTTP boot client (its boot options are PXEv4, PXEv6, HTTPv4,
# HTTPv6, in that order; its DHCPDISCOVER carries `HTTPClient:Arch:00016`). OVMF tries
# HTTP only after PXE has failed, so Bootlane's arch map points the PXE architectures (7,
# 9) at a file that does not exist, as on a network that offers HTTP boot only: PXEv4
# fails at once ("file not found"), PXEv6 after its own timeout (no DHCPv6 here).
#   1. `GET /boot/ipxe.efi` answers `Content-Type: application/efi` (UEFI 2.10 §24.7.3.2);
#   2. a QEMU q35 OVMF machine (the firmware's own network stack, no iPXE ROM) sends its
#      HTTPClient DISCOVER; Bootlane answers with the URL of architecture 16
#      (`http://<server>:8080/boot/ipxe.efi`) and vendor class `HTTPClient`; the firmware
#      downloads ipxe.efi over HTTP (a `boot.file.served` event from the machine) and
#      starts it ("UEFI HTTPv4" and the URL on the console); iPXE then fetches its script,
#      whose "Bootlane: booting <mac>" line on the serial console is the marker. The boot's
#      duration is printed.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
CODE=/usr/share/OVMF/OVMF_CODE_4M.fd
VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
[[ -f $CODE && -f $VARS ]] || { echo "missing $CODE (scripts/setup.sh installs ovmf)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-httpboot 10.90.0
MAC=52:54:00:90:00:01
E2E_EXTRA_TOML='[dhcp.arch_map]
"7" = "pxe-is-not-offered-here.efi"
"9" = "pxe-is-not-offered-here.efi"'

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the boot file's media type ---------------------------------------------------------
in_cli curl -fsS -o /dev/null -D "$WORK/head" "$BASE/boot/ipxe.efi" || fail "GET /boot/ipxe.efi"
tr -d '\r' <"$WORK/head" | grep -qix "content-type: application/efi" ||
    fail "ipxe.efi is not served as application/efi: $(grep -i content-type "$WORK/head")"
api GET /services/archmap | grep -q '/boot/ipxe.efi' || fail "architecture 16 is not mapped to /boot/ipxe.efi"
log "/boot/ipxe.efi is served as application/efi; architecture 16 is mapped to its URL"

# ---- 2. OVMF's HTTP boot client -> ipxe.efi over HTTP -> the iPXE script ---------------------
log "booting OVMF, whose PXE attempts fail first, into UEFI HTTP boot (up to 300 s)"
e2e_ovmf "$MAC"
e2e_wait_serial "$WORK/serial.log" "Bootlane: booting $MAC" 300 "$Q_PID"
DURATION=$(($(date +%s) - T0))
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
grep -aq 'UEFI HTTPv4' "$WORK/serial.log" || fail "the firmware did not boot through its HTTPv4 option"
grep -aq "URI: $BASE/boot/ipxe.efi" "$WORK/serial.log" || fail "the firmware did not show the URL it was given"
log "OVMF booted ipxe.efi by UEFI HTTP boot and iPXE ran the script after $DURATION s"

# What the server saw: ipxe.efi over HTTP to the machine (its lease, not the client's .9).
api GET '/events?kind=boot.file.served&size=50' >"$WORK/events.json"
json '[e for e in d["data"]["events"] if e["data"]["file"] == "ipxe.efi" and (e["remote_addr"] or "").startswith("'"$E2E_NET"'.1") and e["remote_addr"] != "'"$SERVER"'"][0]["data"]["status"]' \
    <"$WORK/events.json" | grep -qx 200 || fail "no boot.file.served event for ipxe.efi from the machine"
plainlog | grep -q "DHCPACK mac=$MAC" || fail "no DHCPACK for $MAC"
log "server: ipxe.efi sent over HTTP to the machine (event boot.file.served), then its script"
log "boot duration: ${DURATION} s (OVMF under TCG: PXEv4 fails at once, PXEv6 times out, then HTTPv4 to the iPXE script)"
log PASS
