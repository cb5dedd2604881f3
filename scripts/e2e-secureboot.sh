#!/usr/bin/env bash
# End-to-end test of Secure Boot (OVMF with Microsoft keys enrolled and Secure Boot
# enforced boots shim, GRUB and the Debian installer kernel, whose log says Secure Boot is
# enabled; the same firmware handed plain iPXE refuses it), run by hand as root or by
# `cargo xtask test` (tests/tests/integration/firmware_netns.rs):
#
#   scripts/e2e-secureboot.sh <path to the bootlane binary>
#
# In a server namespace (a bridge with a tap for QEMU) and a client namespace (curl, tftp):
#   1. Bootlane starts with its defaults: the signed shim (shimx64.efi), MokManager and
#      Debian's signed network GRUB (grubx64.efi) are copied into the boot root at start;
#   2. the real Debian installer kernel and initrd go into the boot root through the file API;
#      a profile boots them (default), next to a local entry and an entry chaining iPXE; a
#      host with the QEMU machine's MAC uses it, with `secure_boot: true`;
#   3. the profile preview flags the iPXE entry as blocked under Secure Boot and the signed
#      kernel as fine; the host's `boot-config?format=grub`, its `grub/grub.cfg-<mac>` over
#      TFTP and over HTTP are the same text; `grub/grub.cfg` sends GRUB there;
#   4. QEMU q35 with OVMF_CODE_4M.ms.fd (Secure Boot on, Microsoft keys) PXE-boots: DHCP
#      hands it shimx64.efi (the host flag), shim loads grubx64.efi, GRUB loads
#      grub/grub.cfg and the machine's file (a boot.grub.served event over TFTP), then the
#      signed installer kernel, which prints "Secure boot enabled": the marker. The boot's
#      duration is printed;
#   5. the host's flag off: the same firmware is handed ipxe.efi (the arch map), which it
#      refuses ("Access Denied" on the console) and the kernel never starts.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
DI=/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64
[[ -f $DI/linux && -f $DI/initrd.gz ]] || { echo "missing $DI (scripts/setup.sh installs debian-installer-12-netboot-amd64)" >&2; exit 2; }
CODE=/usr/share/OVMF/OVMF_CODE_4M.ms.fd
VARS=/usr/share/OVMF/OVMF_VARS_4M.ms.fd
[[ -f $CODE && -f $VARS ]] || { echo "missing $CODE or $VARS (scripts/setup.sh installs ovmf)" >&2; exit 2; }
[[ -f /usr/lib/shim/shimx64.efi.signed && -f /usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed ]] ||
    { echo "missing the signed shim or GRUB (scripts/setup.sh installs shim-signed and grub-efi-amd64-signed)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-secureboot 10.88.0
MAC=52:54:00:88:00:01
CFG="grub/grub.cfg-$MAC"

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the boot files -------------------------------------------------------------------
ROOT=$(api GET /files/root | json 'd["data"]["path"]')
for f in shimx64.efi mmx64.efi grubx64.efi ipxe.efi; do
    [[ -f "$ROOT/$f" ]] || fail "$f is not in the boot root $ROOT"
done
cmp -s "$ROOT/shimx64.efi" /usr/lib/shim/shimx64.efi.signed || fail "shimx64.efi is not Debian's signed shim"
cmp -s "$ROOT/grubx64.efi" /usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed || fail "grubx64.efi is not Debian's signed network GRUB"
log "the signed shim, MokManager and network GRUB are in the boot root"

# ---- 2. the installer, a profile, the host -------------------------------------------------
mkdir -p "$ROOT/d-i"
e2e_upload d-i "$DI/linux" "$DI/initrd.gz"
PROFILE=$(api POST /profiles '{"name":"d-i secure boot","timeout_secs":1,"entries":[{"label":"Local disk","type":"local"},{"label":"Debian installer","type":"linux","kernel":"d-i/linux","initrds":["d-i/initrd.gz"],"cmdline":"console=ttyS0 priority=critical","is_default":true},{"label":"iPXE","type":"chain","url":"http://10.88.0.1:8080/boot/ipxe.efi"}]}' |
    json 'd["data"]["id"]') || fail "profile"
HOST=$(api POST /hosts "{\"name\":\"sb01\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE,\"secure_boot\":true}" | json 'd["data"]["id"]') || fail "host"
api GET "/hosts/$HOST" | json 'd["data"]["secure_boot"]' | grep -qx True || fail "the host's secure_boot flag was not stored"

# ---- 3. the preview and the generated files ------------------------------------------------
api GET "/profiles/$PROFILE/preview?format=grub" >"$WORK/preview.json" || fail "profile preview"
json '[f["verdict"] for f in d["data"]["secure_boot"]]' <"$WORK/preview.json" | grep -qx "\['ok', 'ok', 'blocked'\]" ||
    fail "Secure Boot findings: $(json 'd["data"]["secure_boot"]' <"$WORK/preview.json")"
json 'd["data"]["secure_boot"][2]["detail"]' <"$WORK/preview.json" | grep -q "unsigned iPXE" ||
    fail "the iPXE entry is not named as unsigned iPXE"
log "profile preview: the signed installer kernel is fine, the iPXE entry is blocked under Secure Boot"
api GET "/hosts/$HOST/boot-config?format=grub" >"$WORK/preview.cfg" || fail "boot-config?format=grub"
grep -qx "set default=e2" "$WORK/preview.cfg" || fail "the preview's default is not e2: $(cat "$WORK/preview.cfg")"
grep -qx "  linux /d-i/linux console=ttyS0 priority=critical" "$WORK/preview.cfg" || fail "no linux line in the preview"
grep -qx "  initrd /d-i/initrd.gz" "$WORK/preview.cfg" || fail "no initrd line in the preview"
grep -qx "  chainloader /ipxe.efi" "$WORK/preview.cfg" || fail "no chainloader line in the preview"
# curl's TFTP client (tftp-hpa would read the MAC's colons as host:file).
in_cli curl -fsS "tftp://$SERVER/$CFG" -o "$WORK/tftp.cfg" || fail "TFTP get $CFG"
in_cli curl -fsS "$BASE/boot/$CFG" -o "$WORK/http.cfg" || fail "HTTP GET /boot/$CFG"
cmp -s "$WORK/tftp.cfg" "$WORK/http.cfg" || fail "TFTP and HTTP serve different $CFG"
cmp -s "$WORK/tftp.cfg" "$WORK/preview.cfg" || fail "$CFG differs from the preview"
(cd "$WORK" && in_cli tftp "$SERVER" -m binary -c get grub/grub.cfg main.cfg) || fail "TFTP get grub/grub.cfg"
grep -q 'configfile "$prefix/grub.cfg-$net_default_mac"' "$WORK/main.cfg" || fail "grub/grub.cfg does not load the per-MAC file"
[[ ! -e "$ROOT/$CFG" && ! -e "$ROOT/grub/grub.cfg" ]] || fail "generated files were written to disk"
log "$CFG: the same over TFTP, HTTP and the preview; grub/grub.cfg sends GRUB there"

# ---- 4. OVMF Secure Boot -> shim -> GRUB -> the signed installer kernel ----------------------
boot() { # boot <tag> <seconds>: a Secure Boot OVMF machine; its serial console in $WORK/<tag>.log
    cp "$VARS" "$WORK/$1.vars.fd"
    : >"$WORK/$1.log"
    ip netns exec "$SRV" timeout "$2" qemu-system-x86_64 -accel tcg -m 1024 -machine q35,smm=on \
        -global driver=cfi.pflash01,property=secure,value=on \
        -drive if=pflash,format=raw,unit=0,file="$CODE",readonly=on \
        -drive if=pflash,format=raw,unit=1,file="$WORK/$1.vars.fd" \
        -display none -serial "file:$WORK/$1.log" -monitor none -no-reboot -boot n \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device virtio-net-pci,netdev=n0,mac=$MAC,romfile= >"$WORK/$1.qemu.log" 2>&1 &
    PIDS+=($!)
    Q_PID=$!
}
log "booting OVMF with Secure Boot enforced (Microsoft keys) through shim and GRUB (up to 300 s)"
T0=$(date +%s)
boot sb 320
e2e_wait_serial "$WORK/sb.log" "Secure boot enabled" 300 "$Q_PID"
DURATION=$(($(date +%s) - T0))
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
grep -aq "EFI stub: UEFI Secure Boot is enabled" "$WORK/sb.log" || fail "the EFI stub did not report Secure Boot"
log "the installer kernel started under Secure Boot after $DURATION s: $(grep -a -m1 -o 'Linux version [^ ]*' "$WORK/sb.log")"

# What the server saw: the DHCP boot file, the generated files over TFTP, the transfers.
plainlog | grep -q "DHCPACK mac=$MAC" || fail "no DHCPACK for $MAC"
api GET '/events?kind=boot.grub.served&size=50' >"$WORK/grub-events.json"
json '[e for e in d["data"]["events"] if e["data"]["protocol"] == "tftp" and e["data"]["file"].lstrip("/") == "'"$CFG"'" and not (e["remote_addr"] or "").startswith("'"$E2E_NET"'.9")][0]["data"]["profile"]' \
    <"$WORK/grub-events.json" | grep -qx "d-i secure boot" || fail "no boot.grub.served event for $CFG over TFTP from the machine"
for f in shimx64.efi grubx64.efi grub/grub.cfg "$CFG" d-i/linux d-i/initrd.gz; do
    e2e_transfer_complete "$f"
done
log "server: shimx64.efi, grubx64.efi, grub/grub.cfg, $CFG (event boot.grub.served), d-i/linux and d-i/initrd.gz sent over TFTP"

# ---- 5. the negative case: plain iPXE under the same firmware --------------------------------
api PUT "/hosts/$HOST" '{"secure_boot":false}' >/dev/null || fail "clearing the host's secure_boot flag"
log "the host's flag off: the same Secure Boot firmware is handed ipxe.efi (up to 150 s)"
boot plain 170
e2e_wait_serial "$WORK/plain.log" "Access Denied" 150 "$Q_PID"
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
grep -aq "Secure boot enabled\|iPXE initialising" "$WORK/plain.log" && fail "iPXE or a kernel ran under Secure Boot"
e2e_transfer_complete ipxe.efi
log "the firmware refused the unsigned ipxe.efi: $(tr -d '\r' <"$WORK/plain.log" | grep -a -m1 -o '[^]]*Access Denied')"
log "boot duration: ${DURATION} s (OVMF Secure Boot, shim, GRUB, TFTP of the installer, to 'Secure boot enabled')"
log PASS
