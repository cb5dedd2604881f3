#!/usr/bin/env bash
# `cargo xtask lab`: watch Bootlane boot a machine. Creates a server namespace with a
# bridge (10.77.0.1/24) and a tap device, starts Bootlane there with a DHCP subnet in
# server mode, TFTP and HTTP boot, and starts a QEMU machine on the tap whose serial
# console is this terminal. The machine PXE-boots from Bootlane and runs the iPXE script
# of its profile (by default: "Boot from local disk", so it then falls through to the
# BIOS's next boot device). Ctrl-C or the time limit stops everything; the namespace,
# processes and work directory are removed on exit. Nothing leaves the namespace.
#
# Usage: lab.sh <bootlane binary> [--uefi] [--seconds N]   (default 180 s)
# While it runs, the API answers inside the namespace, e.g.:
#   ip netns exec <ns> curl -s http://10.77.0.1:8080/api/v1/status
set -euo pipefail
BIN=$(readlink -f "${1:?usage: lab.sh <bootlane binary> [--uefi] [--seconds N]}"); shift
UEFI=0 SECS=180
while (($#)); do
  case "$1" in
    --uefi) UEFI=1 ;;
    --seconds) SECS=${2:?--seconds needs a value}; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $(id -u) -eq 0 ]] || { echo "lab.sh must run as root (namespaces, tap)" >&2; exit 2; }
NS="bl-lab-$$"
WORK=$(mktemp -d /tmp/bootlane-lab.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
  echo "[lab] cleaned up"
}
trap cleanup EXIT INT TERM
ip netns add "$NS"
nsx() { ip netns exec "$NS" "$@"; }
nsx ip link set lo up
nsx ip link add br0 type bridge
nsx ip addr add 10.77.0.1/24 dev br0
nsx ip link set br0 up
nsx ip tuntap add dev tap0 mode tap
nsx ip link set tap0 master br0
nsx ip link set tap0 up
cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"
log = "info"
[api]
listen = "0.0.0.0:8080"
[dns]
local_domain = "lab.test"
[[dhcp.subnets]]
mode = "server"
interface = "br0"
cidr = "10.77.0.0/24"
range_start = "10.77.0.100"
range_end = "10.77.0.150"
router = "10.77.0.1"
EOF
echo "[lab] namespace $NS; Bootlane log: $WORK/bootlane.log; admin password: lab-admin-Jc5rN9tB"
BOOTLANE_ADMIN_PASSWORD=lab-admin-Jc5rN9tB ip netns exec "$NS" "$BIN" serve --config "$WORK/bootlane.toml" >"$WORK/bootlane.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 60); do nsx curl -fs -o /dev/null http://10.77.0.1:8080/api/v1/status && break; sleep 0.5; done
nsx curl -fs -o /dev/null http://10.77.0.1:8080/api/v1/status || { echo "[lab] Bootlane did not start:"; cat "$WORK/bootlane.log"; exit 1; }
echo "[lab] Bootlane is up; try: ip netns exec $NS curl -s http://10.77.0.1:8080/boot/ipxe?mac=52:54:00:77:00:42"
if ((UEFI)); then
  cp /usr/share/OVMF/OVMF_VARS_4M.fd "$WORK/vars.fd"
  echo "[lab] starting a UEFI (OVMF) machine; its firmware PXE client fetches ipxe.efi, then the script (1-5 min under TCG)"
  nsx timeout "$SECS" qemu-system-x86_64 -accel tcg -m 512 -machine q35 -display none -serial stdio -monitor none -no-reboot \
    -drive if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
    -drive if=pflash,format=raw,file="$WORK/vars.fd" -boot n \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:44,romfile= || true
else
  echo "[lab] starting a BIOS machine with the iPXE ROM (about 20 s to the script under TCG)"
  nsx timeout "$SECS" qemu-system-x86_64 -accel tcg -m 256 -machine pc,graphics=off -display none -serial stdio -monitor none \
    -no-reboot -boot n -netdev tap,id=n0,ifname=tap0,script=no,downscript=no -device e1000,netdev=n0,mac=52:54:00:77:00:42 || true
fi
echo "[lab] machine stopped; last Bootlane log lines:"
sed 's/\x1b\[[0-9;]*m//g' "$WORK/bootlane.log" | tail -n 15
