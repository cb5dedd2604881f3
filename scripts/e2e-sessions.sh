#!/usr/bin/env bash
# End-to-end test of boot sessions and the doctor with real firmware, run by hand as root or
# by `cargo xtask test` (tests/tests/integration/sessions_netns.rs):
#
#   scripts/e2e-sessions.sh <path to the bootlane binary>
#
# In a server namespace (a bridge with a tap for QEMU) and a client namespace (curl):
#   1. a QEMU BIOS machine (iPXE ROM) registered with a profile whose kernel is not in the
#      boot root: its boot session shows DHCP, the iPXE script and the kernel's 404, and
#      its verdict is `stalled` naming the missing file;
#   2. a rival dnsmasq in a third namespace on the same bridge hands out addresses and its
#      own boot file: the doctor reports it as an error naming it; then it answers first
#      (Bootlane is paused until the rival has leased the machine an address) and a second
#      QEMU BIOS machine takes its offer: that machine's boot session says it took another
#      server's offer, naming the rival.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-sessions 10.82.0
MAC_A=52:54:00:82:00:0a
MAC_B=52:54:00:82:00:0b
RIVAL=10.82.0.5
RIV="bl-r-$$-$RANDOM"
trap 'rc=$?; ip netns del "$RIV" 2>/dev/null; (exit $rc); e2e_cleanup' EXIT INT TERM

e2e_netns
e2e_start_bootlane "$BIN"

# qemu_bios <mac> <serial log> <seconds>: a QEMU BIOS machine with the iPXE ROM on tap0;
# sets Q_PID.
qemu_bios() {
    : >"$2"
    ip netns exec "$SRV" timeout "$3" qemu-system-x86_64 -accel tcg -m 256 -machine pc,graphics=off \
        -display none -serial "file:$2" -monitor none -no-reboot -boot n \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device e1000,netdev=n0,mac="$1" >"$WORK/qemu-$1.log" 2>&1 &
    Q_PID=$!
    PIDS+=("$Q_PID")
}

# ---- 1. a profile whose kernel is missing ------------------------------------------------
PROFILE=$(api POST /profiles '{"name":"gone","timeout_secs":1,"entries":[{"label":"Gone","type":"linux","kernel":"gone/vmlinuz","initrds":["gone/initrd.img"],"cmdline":"console=ttyS0"}]}' |
    json 'd["data"]["id"]') || fail "profile"
api POST /hosts "{\"name\":\"gone01\",\"mac\":\"$MAC_A\",\"profile_id\":$PROFILE}" >/dev/null || fail "host"
log "booting a QEMU BIOS machine whose profile names gone/vmlinuz (not in the boot root)"
qemu_bios "$MAC_A" "$WORK/serial-a.log" 150
boot_session_check "$MAC_A" stalled dhcp:discover ipxe http
[[ $SESSION_REASON == 'asked for "gone/vmlinuz" over HTTP: not found' ]] || fail "the verdict does not name the missing kernel: $SESSION_REASON"
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true

# ---- 2. a rival DHCP server that answers first ---------------------------------------------
ip netns add "$RIV"
ip link add vrb netns "$SRV" type veth peer name vriv netns "$RIV"
in_srv ip link set vrb master br0
in_srv ip link set vrb up
ip netns exec "$RIV" ip link set lo up
ip netns exec "$RIV" ip addr add "$RIVAL/24" dev vriv
ip netns exec "$RIV" ip link set vriv up
ip netns exec "$RIV" dnsmasq -k --no-resolv --no-hosts --conf-file=/dev/null --port=0 -u root \
    --interface=vriv --bind-interfaces --dhcp-range=10.82.0.200,10.82.0.220,255.255.255.0,10m --no-ping \
    --dhcp-boot=rival.kpxe,rival,$RIVAL --dhcp-leasefile="$WORK/rival.leases" --log-dhcp --log-facility=- \
    >"$WORK/rival.log" 2>&1 &
PIDS+=($!)
sleep 1
DOCTOR=$(api POST /doctor) || fail "the doctor run"
python3 -c '
import json, sys
found = [f for f in json.load(sys.stdin)["data"]["findings"] if f["severity"] == "error" and sys.argv[1] in f["summary"]]
sys.exit(0 if found and "rival.kpxe" in found[0]["summary"] else 1)' "$RIVAL" <<<"$DOCTOR" || fail "the doctor did not report the rival as an error: $DOCTOR"
log "doctor: $(json '[f["summary"] for f in d["data"]["findings"] if f["severity"] == "error"]' <<<"$DOCTOR")"
# The rival answers first, whatever the timing: Bootlane is paused (SIGSTOP) from before
# the machine starts until the rival has leased it an address; the machine's DISCOVER and
# its REQUEST for the rival's offer wait in Bootlane's socket meanwhile.
BL_PID=${PIDS[0]}
log "booting a QEMU BIOS machine beside the rival, Bootlane paused"
kill -STOP "$BL_PID"
qemu_bios "$MAC_B" "$WORK/serial-b.log" 120
T0=$(date +%s)
until grep -q "DHCPACK.* $MAC_B" "$WORK/rival.log"; do
    if (($(date +%s) - T0 >= 90)); then kill -CONT "$BL_PID"; fail "the rival did not lease to $MAC_B"; fi
    sleep 1
done
sleep 2
kill -CONT "$BL_PID"
log "the rival leased $MAC_B an address after $(($(date +%s) - T0)) s; Bootlane resumed"
boot_session_check "$MAC_B" stalled dhcp:discover dhcp:request
[[ $SESSION_REASON == "took another server's offer: $RIVAL answered first" ]] || fail "the verdict does not name the rival: $SESSION_REASON"
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
log PASS
