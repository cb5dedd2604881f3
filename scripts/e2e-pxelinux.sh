#!/usr/bin/env bash
# End-to-end test of PXELINUX (SeaBIOS through PXELINUX to the installer kernel), run by
# hand as root or by `cargo xtask test` (tests/tests/integration/pxelinux_netns.rs):
#
#   scripts/e2e-pxelinux.sh <path to the bootlane binary>
#
# In a server namespace (a bridge with a tap for QEMU) and a client namespace (curl, tftp):
#   1. Bootlane starts with `[dhcp.arch_map] "0" = "pxelinux.0"`; pxelinux.0 and the syslinux
#      modules are in the boot root (copied at start from Debian's pxelinux/syslinux-common);
#   2. the real Debian installer kernel and initrd go into the boot root through the file API;
#      a profile boots them (`console=ttyS0`), a host with the QEMU machine's MAC uses it;
#   3. the generated files: `boot-config?format=pxelinux`, `pxelinux.cfg/01-<mac>` over TFTP
#      (tftp-hpa) and HTTP are the same text, `default` is the default profile's, an
#      unregistered MAC's file and a hex-IP name are "file not found";
#   4. a QEMU SeaBIOS machine (`-boot n`, e1000, whose option ROM is iPXE: the arch map's
#      pxelinux.0 is handed to it too) gets pxelinux.0 by DHCP/TFTP, loads its generated
#      `pxelinux.cfg/01-<mac>` (a `boot.pxelinux.served` event over TFTP) and boots the
#      installer kernel: its "Linux version" line on the serial console is the marker.
#      The boot's duration (QEMU start to the marker) is printed.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
DI=/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64
[[ -f $DI/linux && -f $DI/initrd.gz ]] || { echo "missing $DI (scripts/setup.sh installs debian-installer-12-netboot-amd64)" >&2; exit 2; }
[[ -f /usr/lib/PXELINUX/pxelinux.0 && -f /usr/lib/syslinux/modules/bios/menu.c32 ]] ||
    { echo "missing pxelinux.0 or menu.c32 (scripts/setup.sh installs pxelinux and syslinux-common)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-pxelinux 10.87.0
MAC=52:54:00:87:00:01
CFG="pxelinux.cfg/01-${MAC//:/-}"
E2E_EXTRA_TOML='[dhcp.arch_map]
"0" = "pxelinux.0"'

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the boot files -------------------------------------------------------------------
ROOT=$(api GET /files/root | json 'd["data"]["path"]')
for f in pxelinux.0 ldlinux.c32 menu.c32 libutil.c32 libcom32.c32; do
    [[ -f "$ROOT/$f" ]] || fail "$f is not in the boot root $ROOT"
done
log "pxelinux.0 and its modules are in the boot root"

# ---- 2. the installer, a profile, the host -------------------------------------------------
mkdir -p "$ROOT/d-i"
e2e_upload d-i "$DI/linux" "$DI/initrd.gz"
PROFILE=$(api POST /profiles '{"name":"d-i pxelinux","timeout_secs":1,"entries":[{"label":"Local disk","type":"local"},{"label":"Debian installer","type":"linux","kernel":"d-i/linux","initrds":["d-i/initrd.gz"],"cmdline":"console=ttyS0 priority=critical","is_default":true},{"label":"iPXE only","type":"chain","url":"http://10.87.0.1:8080/boot/ipxe"}]}' |
    json 'd["data"]["id"]') || fail "profile"
HOST=$(api POST /hosts "{\"name\":\"pxl01\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE}" | json 'd["data"]["id"]') || fail "host"

# ---- 3. the generated files ------------------------------------------------------------------
api GET "/hosts/$HOST/boot-config?format=pxelinux" >"$WORK/preview.cfg" || fail "boot-config?format=pxelinux"
grep -qx "DEFAULT e2" "$WORK/preview.cfg" || fail "the preview's default is not e2: $(cat "$WORK/preview.cfg")"
grep -qx "  LINUX d-i/linux" "$WORK/preview.cfg" || fail "no LINUX line in the preview"
grep -qx "  APPEND initrd=d-i/initrd.gz console=ttyS0 priority=critical" "$WORK/preview.cfg" || fail "no APPEND line in the preview"
grep -q '^# e3 "iPXE only" is left out' "$WORK/preview.cfg" || fail "the chain entry is not a comment"
(cd "$WORK" && in_cli tftp "$SERVER" -m binary -c get "$CFG" tftp.cfg) || fail "TFTP get $CFG"
in_cli curl -fsS "$BASE/boot/$CFG" -o "$WORK/http.cfg" || fail "HTTP GET /boot/$CFG"
cmp -s "$WORK/tftp.cfg" "$WORK/http.cfg" || fail "TFTP and HTTP serve different $CFG"
cmp -s "$WORK/tftp.cfg" "$WORK/preview.cfg" || fail "$CFG differs from the preview"
(cd "$WORK" && in_cli tftp "$SERVER" -m binary -c get pxelinux.cfg/default default.cfg) || fail "TFTP get default"
grep -q 'profile "Default"' "$WORK/default.cfg" || fail "pxelinux.cfg/default is not the default profile's"
for name in 01-52-54-00-87-00-99 0A570064 0A57; do
    OUT=$(cd "$WORK" && in_cli tftp "$SERVER" -m binary -c get "pxelinux.cfg/$name" missing.cfg 2>&1 || true)
    grep -qi "not found" <<<"$OUT" || fail "pxelinux.cfg/$name: expected file not found, got: $OUT"
done
[[ ! -e "$ROOT/$CFG" && ! -e "$ROOT/pxelinux.cfg/default" ]] || fail "generated files were written to disk"
log "$CFG: the same over TFTP, HTTP and the preview; default is the default profile's; other names not found"

# ---- 4. SeaBIOS -> PXELINUX -> the installer kernel ----------------------------------------
log "booting a QEMU SeaBIOS machine (e1000) through PXELINUX (up to 300 s)"
: >"$WORK/serial.log"
ip netns exec "$SRV" timeout 320 qemu-system-x86_64 -accel tcg -m 1024 -machine pc,graphics=off \
    -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot -boot n \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
    -device e1000,netdev=n0,mac=$MAC >"$WORK/qemu.log" 2>&1 &
PIDS+=($!)
Q_PID=$!
T0=$(date +%s)
e2e_wait_serial "$WORK/serial.log" "Linux version" 300 "$Q_PID"
DURATION=$(($(date +%s) - T0))
log "the installer kernel started after $DURATION s: $(grep -a -m1 -o 'Linux version [^ ]*' "$WORK/serial.log")"
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true

# What the server saw: the DHCP boot file, the generated file over TFTP, the transfers.
plainlog | grep -q "DHCPACK mac=$MAC" || fail "no DHCPACK for $MAC"
plainlog | grep -aq "serving the generated PXELINUX configuration for $MAC.*protocol=tftp\|protocol=tftp.*serving the generated PXELINUX configuration for $MAC" ||
    fail "the log does not show $CFG served over TFTP"
api GET '/events?kind=boot.pxelinux.served&size=50' >"$WORK/pxl-events.json"
# The machine's own request (from its lease, not the client namespace's .9).
json '[e for e in d["data"]["events"] if e["data"]["protocol"] == "tftp" and e["data"]["file"] == "'"$CFG"'" and not (e["remote_addr"] or "").startswith("'"$E2E_NET"'.9")][0]["data"]["profile"]' \
    <"$WORK/pxl-events.json" | grep -qx "d-i pxelinux" || fail "no boot.pxelinux.served event for $CFG over TFTP from the machine"
for f in pxelinux.0 ldlinux.c32 "$CFG" d-i/linux d-i/initrd.gz; do
    e2e_transfer_complete "$f"
done
log "server: pxelinux.0, ldlinux.c32, $CFG (event boot.pxelinux.served), d-i/linux and d-i/initrd.gz sent over TFTP"
log "boot duration: ${DURATION} s (SeaBIOS, PXELINUX, TFTP of the installer, to 'Linux version')"
log PASS
