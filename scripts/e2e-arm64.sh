#!/usr/bin/env bash
# End-to-end test of ARM64 network boot (AAVMF on qemu-system-aarch64 to the ARM64
# kernel), run by hand as root or by `cargo xtask test`
# (tests/tests/integration/firmware_netns.rs):
#
#   scripts/e2e-arm64.sh <path to the bootlane binary>
#
# In a server namespace (a bridge with a tap for QEMU) and a client namespace (curl):
#   1. Bootlane starts with its defaults: Debian's signed ARM64 GRUB (grubaa64.efi, the
#      default boot file of client architecture 11) and shim (shimaa64.efi) are copied from
#      the d-i ARM64 netboot set into the boot root at start;
#   2. the real ARM64 Debian installer kernel and initrd go into the boot root through the
#      file API; a profile boots them, a host with the QEMU machine's MAC uses it;
#   3. the host's `boot-config?format=grub` is what `debian-installer/arm64/grub/grub.cfg-<mac>`
#      (the d-i GRUB's prefix) serves over HTTP;
#   4. `qemu-system-aarch64 -M virt` with AAVMF (Debian's `qemu-efi-aarch64`) PXE-boots:
#      DHCP sees architecture 11 and hands it grubaa64.efi; GRUB loads its generated menu
#      (a boot.grub.served event over TFTP) and the ARM64 installer kernel and initrd, and
#      the kernel's "Linux version" line on the serial console is the marker. The boot's
#      duration is printed (software emulation: allow several minutes).
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
DI=/usr/lib/debian-installer/images/12/arm64/text/debian-installer/arm64
[[ -f $DI/linux && -f $DI/initrd.gz && -f $DI/grubaa64.efi ]] ||
    { echo "missing $DI (scripts/setup.sh installs debian-installer-12-netboot-arm64)" >&2; exit 2; }
CODE=/usr/share/AAVMF/AAVMF_CODE.fd
VARS=/usr/share/AAVMF/AAVMF_VARS.fd
[[ -f $CODE && -f $VARS ]] || { echo "missing $CODE (scripts/setup.sh installs qemu-efi-aarch64)" >&2; exit 2; }
command -v qemu-system-aarch64 >/dev/null || { echo "missing qemu-system-aarch64 (scripts/setup.sh installs qemu-system-arm)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-arm64 10.89.0
MAC=52:54:00:89:00:01
CFG="debian-installer/arm64/grub/grub.cfg-$MAC"
LIMIT=${E2E_ARM64_SECS:-540}

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the boot files -------------------------------------------------------------------
ROOT=$(api GET /files/root | json 'd["data"]["path"]')
cmp -s "$ROOT/grubaa64.efi" "$DI/grubaa64.efi" || fail "grubaa64.efi in the boot root is not the d-i set's"
cmp -s "$ROOT/shimaa64.efi" "$DI/bootnetaa64.efi" || fail "shimaa64.efi in the boot root is not the d-i set's shim"
api GET /services/archmap >"$WORK/archmap.json" || fail "GET /services/archmap"
grep -q '"grubaa64.efi"' "$WORK/archmap.json" || fail "architecture 11 is not mapped to grubaa64.efi: $(cat "$WORK/archmap.json")"
log "grubaa64.efi (architecture 11's boot file) and shimaa64.efi are in the boot root"

# ---- 2. the installer, a profile, the host -------------------------------------------------
mkdir -p "$ROOT/d-i-arm64"
e2e_upload d-i-arm64 "$DI/linux" "$DI/initrd.gz"
PROFILE=$(api POST /profiles '{"name":"d-i arm64","timeout_secs":1,"entries":[{"label":"Local disk","type":"local"},{"label":"Debian installer (ARM64)","type":"linux","kernel":"d-i-arm64/linux","initrds":["d-i-arm64/initrd.gz"],"cmdline":"console=ttyAMA0 priority=critical","is_default":true}]}' |
    json 'd["data"]["id"]') || fail "profile"
HOST=$(api POST /hosts "{\"name\":\"arm01\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE}" | json 'd["data"]["id"]') || fail "host"

# ---- 3. the generated file at the d-i GRUB's prefix -----------------------------------------
api GET "/hosts/$HOST/boot-config?format=grub" >"$WORK/preview.cfg" || fail "boot-config?format=grub"
grep -qx "  linux /d-i-arm64/linux console=ttyAMA0 priority=critical" "$WORK/preview.cfg" || fail "no linux line in the preview"
in_cli curl -fsS "$BASE/boot/$CFG" -o "$WORK/http.cfg" || fail "HTTP GET /boot/$CFG"
cmp -s "$WORK/http.cfg" "$WORK/preview.cfg" || fail "$CFG differs from the preview"
log "$CFG is the host's profile, as previewed"

# ---- 4. AAVMF -> GRUB -> the ARM64 installer kernel ------------------------------------------
log "booting qemu-system-aarch64 (virt, AAVMF) through GRUB (software emulation, up to $LIMIT s)"
cp "$VARS" "$WORK/vars.fd"
: >"$WORK/serial.log"
T0=$(date +%s)
ip netns exec "$SRV" timeout $((LIMIT + 20)) qemu-system-aarch64 -accel tcg -M virt -cpu cortex-a57 -m 1024 \
    -drive if=pflash,format=raw,unit=0,file="$CODE",readonly=on \
    -drive if=pflash,format=raw,unit=1,file="$WORK/vars.fd" \
    -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
    -device virtio-net-pci,netdev=n0,mac=$MAC,romfile= >"$WORK/qemu.log" 2>&1 &
PIDS+=($!)
Q_PID=$!
e2e_wait_serial "$WORK/serial.log" "Linux version" "$LIMIT" "$Q_PID"
DURATION=$(($(date +%s) - T0))
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
grep -a -m1 -o 'Linux version [^ ]*' "$WORK/serial.log" | grep -q arm64 || fail "the kernel that started is not the ARM64 one"
log "the ARM64 installer kernel started after $DURATION s: $(grep -a -m1 -o 'Linux version [^ ]*' "$WORK/serial.log")"

# What the server saw: architecture 11, the generated file over TFTP, the transfers.
plainlog | grep -q "DHCPACK mac=$MAC" || fail "no DHCPACK for $MAC"
api GET '/events?kind=boot.grub.served&size=50' >"$WORK/grub-events.json"
json '[e for e in d["data"]["events"] if e["data"]["protocol"] == "tftp" and e["data"]["file"].lstrip("/") == "'"$CFG"'"][0]["data"]["profile"]' \
    <"$WORK/grub-events.json" | grep -qx "d-i arm64" || fail "no boot.grub.served event for $CFG over TFTP"
for f in grubaa64.efi d-i-arm64/linux d-i-arm64/initrd.gz; do
    e2e_transfer_complete "$f"
done
log "server: grubaa64.efi, $CFG (event boot.grub.served), d-i-arm64/linux and d-i-arm64/initrd.gz sent over TFTP"
log "boot duration: ${DURATION} s (AAVMF under TCG, GRUB, TFTP of the ARM64 installer, to 'Linux version')"
log PASS
