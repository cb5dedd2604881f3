#!/usr/bin/env bash
# Where the boot sessions' recording cost goes, in CPU time: Bootlane (server mode, /16
# pool) on core 1, perfdhcp on core 0 sending PXE clients (option 60
# `PXEClient:Arch:00007:UNDI:003016`, option 93 = 7, 50,000 distinct) at a fixed rate that
# both set-ups keep up with, once with `[boot_sessions]` on and once off; prints the CPU
# seconds each of the server's threads used (from /proc/<pid>/task/*/stat) and the
# recorder's time per session.
# Usage: bench-sessions-cpu.sh <bootlane binary> [rate (7000)] [seconds (12)]. As root;
# traffic stays in two namespaces this script creates and removes.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: bench-sessions-cpu.sh <bootlane binary> [rate] [seconds]}")
RATE=${2:-7000}
SECS=${3:-12}
tag="bc$$"
SRV="${tag}s" CLI="${tag}c"
WORK=$(mktemp -d /tmp/bootlane-bench-cpu.XXXXXX)
PID=""
RMEM_DEFAULT=$(sysctl -n net.core.rmem_default)
cleanup() {
  [[ -n $PID ]] && { kill -9 "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  sysctl -qw net.core.rmem_default="$RMEM_DEFAULT" || true
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$SRV"; ip netns add "$CLI"
ip link add vsrv netns "$SRV" type veth peer name vcli netns "$CLI"
ip -n "$SRV" addr add 10.77.0.1/16 dev vsrv; ip -n "$CLI" addr add 10.77.0.2/16 dev vcli
for n in "$SRV" "$CLI"; do ip -n "$n" link set lo up; done
ip -n "$SRV" link set vsrv up; ip -n "$CLI" link set vcli up
# perfdhcp gets every client's replies on one socket (as in bench-boot.sh).
sysctl -qw net.core.rmem_default=4194304
# threads <pid>: "<thread name> <CPU ticks>" summed per name.
threads() {
  for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
    awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
}
hz=$(getconf CLK_TCK)
for mode in on off; do
  rm -rf "$WORK/data"; mkdir -p "$WORK/data"
  cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"
log = "warn"
[api]
listen = "127.0.0.1:8080"
[dns]
enabled = false
[dns.xdp]
mode = "off"
[[dhcp.subnets]]
mode = "server"
interface = "vsrv"
cidr = "10.77.0.0/16"
range_start = "10.77.1.0"
range_end = "10.77.250.250"
lease_time_secs = 3600
[boot_sessions]
enabled = $([[ $mode == on ]] && echo true || echo false)
EOF
  BOOTLANE_ADMIN_PASSWORD=bench-admin-Kq7vX2pL ip netns exec "$SRV" taskset -c 1 "$BIN" serve \
    --config "$WORK/bootlane.toml" 2>"$WORK/bootlane.log" &
  PID=$!
  for _ in $(seq 60); do ip netns exec "$SRV" curl -fs -o /dev/null http://127.0.0.1:8080/api/v1/status && break; sleep 0.5; done
  sleep 1
  threads "$PID" >"$WORK/before"
  out=$(ip netns exec "$CLI" taskset -c 0 perfdhcp -4 -r "$RATE" -R 50000 -p "$SECS" \
    -o 60,505845436c69656e743a417263683a30303030373a554e44493a303033303136 -o 93,0007 -l vcli 2>&1 || true)
  threads "$PID" >"$WORK/after"
  kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  sent=$(awk '/^Rate:/ {print $2}' <<<"$out")
  echo "### sessions $mode: perfdhcp at $RATE/s for $SECS s (achieved ${sent:-?} exchanges/s)"
  join "$WORK/before" "$WORK/after" | awk -v hz="$hz" -v n="$(awk -v r="${sent:-0}" -v s="$SECS" 'BEGIN {print r * s}')" '
    {d = ($3 - $2) / hz; if (d > 0) {printf "  %-16s %6.2f CPU s\n", $1, d; t += d; if ($1 == "boot-sessions") b = d}}
    END {printf "  %-16s %6.2f CPU s\n", "total", t; if (b && n) printf "  recorder: %.1f µs per session (%d sessions)\n", 1e6 * b / n, n}'
done
