#!/usr/bin/env bash
# Boot-path benchmarks, Bootlane against dnsmasq and ISC Kea in the same invocation:
#   DHCP: perfdhcp (full DORA) from a client namespace; ladder of offered rates 250, 500,
#         1000, ... per second, $DHCP_SECS s per rung; a rung passes when both exchanges
#         dropped at most 2.5 % (Kea's published method) and perfdhcp really sent at least
#         90 % of the offered rate (it shares the two cores with the server: above that
#         the generator, not the server, is the limit); score = the 4-way exchanges per
#         second perfdhcp achieved at the best passing rung; two pools: a /16
#         (10.77.1.0-10.77.250.250) with 50,000 distinct clients, and a /24
#         (10.77.0.10-10.77.0.250) with 200 (a /24 cannot lease to 50,000 clients: with
#         one-hour leases it is exhausted after 241). Lease durability: Bootlane fsyncs every
#         acknowledged lease before the DHCPACK (group commit: one fsync per receive
#         batch); Kea's memfile appends each lease to its CSV file before the ACK without
#         fsync (persist on, lfc off); dnsmasq rewrites its lease file, without fsync.
#         net.core.rmem_default is 4 MiB during these rounds (perfdhcp's one socket gets
#         every client's replies), restored on exit. Then Bootlane alone with boot sessions
#         on and off (sessions_round below): its cost on the DHCP path.
#   TFTP: 500 parallel `curl tftp://.../ipxe.efi` from the client namespace; wall time and
#         failures (dnsmasq with --tftp-max=1000: its default of 50 fails most of them),
#         median of $TFTP_RUNS runs, the servers alternating; then the same 500 downloads
#         with 5 % of the UDP datagrams dropped at random each way (nftables `numgen` on
#         input: this kernel has no sch_netem) by atftp (blksize 1468, timeout 1 s: curl
#         always asks for a 5 s timeout), every file compared with the original.
# Usage: bench-boot.sh <bootlane binary> [dhcp|tftp|sessions|sessions-cpu|all]. Prints markdown tables
#   (sessions: only the boot sessions on/off round; sessions-cpu: the recorder's CPU time,
#   below, not part of all).
#   (env: DHCP_SECS=5 RATES="250 ... 20000" TFTP_RUNS=3 LOSS_PCT=5 LOSSY_N=500 (0 skips the lossy round);
#   PINNED=0 skips the pinned TFTP rounds; SESSIONS_ROUND=0 skips the boot sessions on/off round, SESSIONS_PAIRS=3 its runs each way, SESSIONS_RATES its ladder, SESSIONS_CLIENTS its client kinds (default "plain pxe pinned"); SKIP_BOOTLANE/SKIP_KEA/SKIP_DNSMASQ=1 leave a server out; WITH_POSTGRES=1 adds Bootlane
#   on a PostgreSQL store; PERFDHCP_LOG=<file> keeps perfdhcp's whole output)
# Traffic stays in two namespaces this script creates; all it starts is killed by PID.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: bench-boot.sh <bootlane binary> [dhcp|tftp|all]}")
WHAT=${2:-all}
DHCP_SECS=${DHCP_SECS:-5}
TFTP_RUNS=${TFTP_RUNS:-3}
LOSS_PCT=${LOSS_PCT:-5}
LOSSY_N=${LOSSY_N:-500}
SCRIPTS=$(dirname "$(readlink -f "$0")")
. "$SCRIPTS/bench-cores.sh"
RATES=${RATES:-"250 500 1000 2000 3000 4000 5000 6000 7000 8000 10000 12000 14000 16000 20000"}
# Core pinning of the TFTP rounds: none at first (clients and server share both cores), then
# (PINNED=1, the default on a machine with two or more cores) the clients on core 0 and the
# server on core 1, for Bootlane and dnsmasq alike.
PINNED=${PINNED:-$(( $(nproc) >= 2 ? 1 : 0 ))}
SRV_PIN="" CLI_PIN=""
tag="bt$$"
SRV="${tag}s" CLI="${tag}c"
WORK=$(mktemp -d /tmp/bootlane-bench-boot.XXXXXX)
PIDS=()
RMEM_DEFAULT=$(sysctl -n net.core.rmem_default)
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  sysctl -qw net.core.rmem_default="$RMEM_DEFAULT" || true
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  if [[ -n ${PGW:-} ]]; then
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGW/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PGW"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
ip netns add "$SRV"; ip netns add "$CLI"
ip link add vsrv netns "$SRV" type veth peer name vcli netns "$CLI"
ip -n "$SRV" addr add 10.77.0.1/16 dev vsrv; ip -n "$CLI" addr add 10.77.0.2/16 dev vcli
for n in "$SRV" "$CLI"; do ip -n "$n" link set lo up; done
ip -n "$SRV" link set vsrv up; ip -n "$CLI" link set vcli up
mkdir -p "$WORK/data/boot"
cp -L /usr/lib/ipxe/ipxe.efi "$WORK/data/boot/"
cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"
log = "warn"
[api]
listen = "127.0.0.1:8080"
[dns]
enabled = false
[dns.xdp]
mode = "off"
[tftp]
enabled = true
# The benchmark's 500 parallel clients share one address.
max_transfers_per_client = 1024
[[dhcp.subnets]]
mode = "server"
interface = "vsrv"
cidr = "10.77.0.0/16"
range_start = "@START@"
range_end = "@END@"
lease_time_secs = 3600
EOF
cp "$WORK/bootlane.toml" "$WORK/bootlane.toml.in"
# pool <start> <end>: the pool every server gets next.
pool() {
  POOL_START=$1 POOL_END=$2
  sed "s/@START@/$1/; s/@END@/$2/" "$WORK/bootlane.toml.in" >"$WORK/bootlane.toml"
}
pool 10.77.1.0 10.77.250.250

start_bootlane() {
  rm -rf "$WORK/data/db"
  BOOTLANE_ADMIN_PASSWORD=bench-admin-Kq7vX2pL ip netns exec "$SRV" $SRV_PIN "$BIN" serve --config "$WORK/bootlane.toml" 2>"$WORK/bootlane.log" &
  SPID=$!; PIDS+=($SPID)
  for _ in $(seq 60); do ip netns exec "$SRV" curl -fs -o /dev/null http://127.0.0.1:8080/api/v1/status && return; sleep 0.5; done
  echo "Bootlane did not start" >&2; cat "$WORK/bootlane.log" >&2; exit 1
}
# WITH_POSTGRES=1: a PostgreSQL 15 cluster in the server namespace (fsync and
# synchronous_commit on, as a shared store would run), and a fourth DHCP row for Bootlane
# on it, each ladder on a fresh database.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
start_postgres() {
  PGW=$(mktemp -d /tmp/bootlane-bench-pg.XXXXXX); chown postgres: "$PGW"
  runuser -u postgres -- "$PGBIN/initdb" -U bootlane --auth=trust -D "$PGW/data" >/dev/null
  ip netns exec "$SRV" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGW/data" -w -l "$PGW/log" \
    -o "-p 5499 -k $PGW -c listen_addresses=127.0.0.1" start >/dev/null
}
start_bootlane_pg() {
  ip netns exec "$SRV" runuser -u postgres -- env PGOPTIONS=-cclient_min_messages=warning "$PGBIN/psql" -q -h "$PGW" -p 5499 -U bootlane -d postgres \
    -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench" >/dev/null
  cp "$WORK/bootlane.toml" "$WORK/bootlane.sled.toml"
  printf '[store]\nbackend = "postgres"\nurl = "postgres://bootlane@127.0.0.1:5499/bench"\n' >>"$WORK/bootlane.toml"
  start_bootlane
  cp "$WORK/bootlane.sled.toml" "$WORK/bootlane.toml"
}
start_dnsmasq() {
  rm -f "$WORK/dnsmasq.leases"
  ip netns exec "$SRV" $SRV_PIN dnsmasq -k --no-resolv --no-hosts --conf-file=/dev/null --port=0 -u root --interface=vsrv \
    --bind-interfaces --pid-file= "$@" 2>"$WORK/dnsmasq.log" &
  SPID=$!; PIDS+=($SPID)
  sleep 1
}
start_kea() {
  rm -f "$WORK"/kea-leases4.csv*
  cat >"$WORK/kea.json" <<EOF
{"Dhcp4": {
  "interfaces-config": {"interfaces": ["vsrv"], "dhcp-socket-type": "raw"},
  "lease-database": {"type": "memfile", "persist": true, "name": "$WORK/kea-leases4.csv", "lfc-interval": 0},
  "valid-lifetime": 3600,
  "subnet4": [{"id": 1, "subnet": "10.77.0.0/16", "pools": [{"pool": "$POOL_START - $POOL_END"}]}],
  "loggers": [{"name": "kea-dhcp4", "severity": "ERROR", "output_options": [{"output": "$WORK/kea.log"}]}]
}}
EOF
  KEA_PIDFILE_DIR="$WORK" KEA_LOCKFILE_DIR="$WORK" ip netns exec "$SRV" kea-dhcp4 -c "$WORK/kea.json" >"$WORK/kea.out" 2>&1 &
  SPID=$!; PIDS+=($SPID)
  sleep 1.5
  kill -0 "$SPID" 2>/dev/null || { echo "Kea did not start" >&2; cat "$WORK/kea.out" "$WORK/kea.log" >&2; exit 1; }
}
stop() { kill -9 "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }

# perfdhcp at <rate> -> "<worst drop ratio (percent) of the two exchanges> <achieved 4-way
# exchanges per second>".
dhcp_shot() {
  # perfdhcp exits non-zero whenever anything was dropped; the ratio decides here.
  # shellcheck disable=SC2086 # PERFDHCP_EXTRA: options as separate words
  { ip netns exec "$CLI" $CLI_PIN timeout $((DHCP_SECS + 15)) perfdhcp -4 -r "$1" -R "$CLIENTS" -p "$DHCP_SECS" ${PERFDHCP_EXTRA:-} -l vcli 2>&1 || true; } |
    tee -a "${PERFDHCP_LOG:-/dev/null}" |
    awk 'BEGIN {w = 0; a = 0} /^Rate:/ {a = $2 + 0} /drops ratio:/ {gsub(/%/, "", $3); if ($3 + 0 > w) w = $3 + 0; n++}
      END {if (n < 2) print 100, a; else print w, a}'
}
# dhcp_ladder <label>: climbs $RATES until a rung fails (more than 2.5 % dropped, or less
# than 90 % of the offered rate sent); with RUNG_RETRY=1 a failed rung is run once more
# before the ladder stops, so one blip does not end it.
dhcp_ladder() { # -> "<achieved rate at the best rung> <drops there> <offered rate there>"
  local best=0 bestd=- besto=0 d a try
  for r in $RATES; do
    for try in 0 1; do
      read -r d a < <(dhcp_shot "$r")
      echo "  $1 DHCP @ $r/s offered, $a/s sent: worst drops $d %" >&2
      if awk -v d="$d" -v a="$a" -v r="$r" 'BEGIN {exit !(d <= 2.5 && a >= 0.9 * r)}'; then
        best=$(printf '%.0f' "$a") bestd=$d besto=$r
        continue 2
      fi
      [[ ${RUNG_RETRY:-0} == 1 ]] || break
    done
    break
  done
  echo "$best $bestd $besto"
}
# cpu_secs <pid>: user + system CPU seconds the process has used so far.
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat"; }
tftp500() { # -> "<seconds> <failures> <server CPU seconds> <busy share per core>"
  local t0 fails=0 pids=() c0 j0
  c0=$(cpu_secs "$SPID")
  j0=$(core_jiffies)
  t0=$(date +%s.%N)
  for _ in $(seq 500); do
    ip netns exec "$CLI" $CLI_PIN curl -s --max-time 120 tftp://10.77.0.1/ipxe.efi -o /dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
  echo "$(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f') $fails $(echo "$(cpu_secs "$SPID") - $c0" | bc) $(busy_pct "$j0" "$(core_jiffies)")"
}

# dhcp_round <label> <start> <end> <distinct clients>: the three servers on one pool.
dhcp_round() {
  local label=$1 bl bld blo dm dmd dmo kr krd kro pl=0 pld=- plo=-
  pool "$2" "$3"
  CLIENTS=$4
  if [[ -z ${SKIP_BOOTLANE:-} ]]; then start_bootlane; read -r bl bld blo < <(dhcp_ladder bootlane); stop; else bl=0 bld=- blo=-; fi
  if [[ -n ${WITH_POSTGRES:-} ]]; then start_bootlane_pg; read -r pl pld plo < <(dhcp_ladder bootlane-pg); stop; fi
  if [[ -z ${SKIP_KEA:-} ]]; then start_kea; read -r kr krd kro < <(dhcp_ladder kea); stop; else kr=0 krd=- kro=-; fi
  if [[ -z ${SKIP_DNSMASQ:-} ]]; then
    start_dnsmasq --dhcp-range="$2,$3,255.255.0.0,1h" --dhcp-leasefile="$WORK/dnsmasq.leases" \
      --no-ping --dhcp-lease-max=200000
    read -r dm dmd dmo < <(dhcp_ladder dnsmasq); stop
  else dm=0 dmd=- dmo=-; fi
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b ? a / b : 0)}'; }
  echo
  echo "### DHCP, $label pool $2-$3, $4 distinct clients (perfdhcp -4, full DORA, ${DHCP_SECS}s per rate; best rung with <= 2.5 % drops and >= 90 % of the offered rate sent)"
  echo
  echo "| server | leases/s (4-way exchanges perfdhcp achieved) | offered rate | worst drops | ratio vs Kea | ratio vs dnsmasq |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "| Bootlane (fsync per batch) | $bl | $blo | $bld % | $(ratio "$bl" "$kr")x | $(ratio "$bl" "$dm")x |"
  if [[ -n ${WITH_POSTGRES:-} ]]; then
    echo "| Bootlane, PostgreSQL store (a commit per batch) | $pl | $plo | $pld % | $(ratio "$pl" "$kr")x | $(ratio "$pl" "$dm")x |"
  fi
  echo "| Kea $(kea-dhcp4 -v 2>/dev/null | head -1) (memfile, no fsync) | $kr | $kro | $krd % | 1.00x | $(ratio "$kr" "$dm")x |"
  echo "| dnsmasq 2.90 (--no-ping) | $dm | $dmo | $dmd % | $(ratio "$dm" "$kr")x | 1.00x |"
}
# sessions_round <label> [perfdhcp options]: Bootlane alone with boot sessions on and off,
# alternating (on, off, on, off), on the /16 pool with 50,000 distinct clients: the
# benchmark's own plain DORA clients (no options: they open no session, the recorder only
# sees their messages go by), then PXE clients (option 60 `PXEClient:Arch:00007:UNDI:003016`
# and option 93 = 7, x86-64 UEFI): every client begins a boot session, so the recorder
# keeps 4,096 open and ends and stores the oldest as new ones begin, the heaviest load it
# has.
# The ladder here climbs in steps of about 5 % (SESSIONS_RATES) so that a small cost shows
# as a lower rung rather than vanishing between the coarse ones, a failed rung is tried
# once more, and the median of SESSIONS_PAIRS (3) runs each way is compared.
sessions_round() {
  local label=$1 on=() off=() a d o
  local RUNG_RETRY=1
  local RATES=${SESSIONS_RATES:-"2000 3000 4000 4400 4800 5000 5250 5500 5750 6000 6300 6600 6900 7200 7600 8000 8400 8800 9200 9600 10000 10500 11000 11500 12000 13000 14000 15000 16000 17000 18000 19000 20000 21000 22000 23000 24000 26000 28000 30000"}
  pool 10.77.1.0 10.77.250.250
  CLIENTS=50000
  PERFDHCP_EXTRA=${2:-}
  for _ in $(seq "${SESSIONS_PAIRS:-3}"); do
    start_bootlane; read -r a d o < <(dhcp_ladder "bootlane-sessions-on ($label)"); stop; on+=("$a")
    cp "$WORK/bootlane.toml" "$WORK/bootlane.on.toml"
    printf '\n[boot_sessions]\nenabled = false\n' >>"$WORK/bootlane.toml"
    start_bootlane; read -r a d o < <(dhcp_ladder "bootlane-sessions-off ($label)"); stop; off+=("$a")
    cp "$WORK/bootlane.on.toml" "$WORK/bootlane.toml"
  done
  PERFDHCP_EXTRA=""
  local bon boff
  bon=$(printf '%s\n' "${on[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  boff=$(printf '%s\n' "${off[@]}" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
  echo
  echo "### DHCP with boot sessions on and off, /16 pool, 50,000 distinct $label (perfdhcp -4${2:+ with options 60 and 93}; ${SESSIONS_PAIRS:-3} runs each, alternating on, off, ...; ladder in steps of about 5 %, a failed rung tried twice; the median of each)"
  echo
  echo "| Bootlane | leases/s (each run) | median | ratio vs sessions off |"
  echo "|---|---:|---:|---:|"
  echo "| boot sessions on | ${on[*]} | $bon | $(awk -v a="$bon" -v b="$boff" 'BEGIN {printf "%.2f", (b ? a / b : 0)}')x |"
  echo "| boot sessions off | ${off[*]} | $boff | 1.00x |"
}
if [[ $WHAT == dhcp || $WHAT == all || $WHAT == sessions ]]; then
  if [[ -n ${WITH_POSTGRES:-} ]]; then start_postgres; fi
  # perfdhcp receives every simulated client's replies on one socket, which the default
  # 208 KiB buffer cannot hold when a server answers a batch at once (its
  # UdpRcvbufErrors, not the server, then decided the upper rungs). 4 MiB for every
  # socket opened from here on (servers' too, so alike for all; this sysctl is not per
  # namespace), restored on exit.
  sysctl -qw net.core.rmem_default=4194304
  if [[ $WHAT != sessions ]]; then
    dhcp_round /16 10.77.1.0 10.77.250.250 50000
    dhcp_round /24 10.77.0.10 10.77.0.250 200
  fi
  if [[ -z ${SKIP_BOOTLANE:-} && ${SESSIONS_ROUND:-1} != 0 ]]; then
    pxe_options="-o 60,505845436c69656e743a417263683a30303030373a554e44493a303033303136 -o 93,0007"
    for c in ${SESSIONS_CLIENTS:-plain pxe pinned}; do
      case $c in
        plain) sessions_round "plain DORA clients" ;;
        pxe) sessions_round "PXE clients" "$pxe_options" ;;
        # The server on one core, perfdhcp on the other: the recorder's thread shares the
        # server's core, so its whole cost shows.
        pinned)
          SRV_PIN="taskset -c 1" CLI_PIN="taskset -c 0"
          sessions_round "PXE clients, perfdhcp pinned to core 0 and the server to core 1" "$pxe_options"
          SRV_PIN="" CLI_PIN="" ;;
      esac
    done
  fi
fi
# sessions-cpu: where the boot sessions' cost goes, in CPU time. Bootlane on core 1,
# perfdhcp on core 0 sending PXE clients at CPU_RATE (7000) a second for CPU_SECS (12), a
# rate both set-ups keep up with, once with boot sessions on and once off; prints the CPU
# seconds each of the server's threads used (/proc/<pid>/task/*/stat), the recorder's
# time per session and the DHCP messages it left out (its queue full).
if [[ $WHAT == sessions-cpu ]]; then
  sysctl -qw net.core.rmem_default=4194304
  SRV_PIN="taskset -c 1"
  threads() { # <pid> -> "<thread name> <CPU ticks>" summed per name
    for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"; done |
      awk '{a[$1] += $2} END {for (k in a) print k, a[k]}' | sort
  }
  for mode in on off; do
    pool 10.77.1.0 10.77.250.250
    [[ $mode == on ]] || printf '\n[boot_sessions]\nenabled = false\n' >>"$WORK/bootlane.toml"
    # The recorder's dropped-steps counter is read at the end (a server in this namespace only).
    printf '\n[metrics]\npublic = true\n' >>"$WORK/bootlane.toml"
    start_bootlane; sleep 1
    threads "$SPID" >"$WORK/before"
    out=$(ip netns exec "$CLI" taskset -c 0 perfdhcp -4 -r "${CPU_RATE:-7000}" -R 50000 -p "${CPU_SECS:-12}" \
      -o 60,505845436c69656e743a417263683a30303030373a554e44493a303033303136 -o 93,0007 -l vcli 2>&1 || true)
    threads "$SPID" >"$WORK/after"
    # An absent counter was never counted: 0; no answer at all: "?".
    if m=$(ip netns exec "$SRV" curl -fs http://127.0.0.1:8080/api/v1/metrics); then
      dropped=$(awk '/^bootlane_boot_session_steps_dropped_total / {n = $2} END {print n + 0}' <<<"$m")
    else
      dropped="?"
    fi
    stop
    sent=$(awk '/^Rate:/ {print $2}' <<<"$out")
    echo "### boot sessions $mode: perfdhcp at ${CPU_RATE:-7000}/s for ${CPU_SECS:-12} s (achieved ${sent:-?} exchanges/s)"
    join "$WORK/before" "$WORK/after" | awk -v hz="$(getconf CLK_TCK)" -v n="$(awk -v r="${sent:-0}" -v s="${CPU_SECS:-12}" 'BEGIN {print r * s}')" '
      {d = ($3 - $2) / hz; if (d > 0) {printf "  %-16s %6.2f CPU s\n", $1, d; t += d; if ($1 == "boot-sessions") b = d}}
      END {printf "  %-16s %6.2f CPU s\n", "total", t; if (b && n) printf "  recorder: %.1f µs per session (%d sessions)\n", 1e6 * b / n, n}'
    if [[ $mode == on ]]; then echo "  DHCP messages left out of sessions (recorder's queue full): ${dropped:-0}"; fi
  done
  SRV_PIN=""
fi
# loss on|off: drop $LOSS_PCT % of the UDP datagrams arriving in either namespace.
loss() {
  local ns
  for ns in "$SRV" "$CLI"; do
    if [[ $1 == on ]]; then
      ip netns exec "$ns" nft -f - <<EOF
table inet loss {
  chain in {
    type filter hook input priority 0; policy accept;
    meta l4proto udp numgen random mod 100 < $LOSS_PCT drop
  }
}
EOF
    else
      ip netns exec "$ns" nft delete table inet loss 2>/dev/null || true
    fi
  done
}
# tftp_lossy: $LOSSY_N parallel atftp downloads under loss -> "<seconds> <failed or
# differing> <restarts>", through scripts/atftp-get.sh (atftp 0.8.0 aborts with "unexpected
# OACK" when a lost ACK 0 makes the server repeat its OACK, as RFC 2347 requires; such a
# download is started again and counted).
tftp_lossy() {
  local t0 pids=() bad=0 i
  rm -rf "$WORK/lossy"; mkdir -p "$WORK/lossy"
  t0=$(date +%s.%N)
  for i in $(seq "$LOSSY_N"); do
    ip netns exec "$CLI" timeout 300 "$SCRIPTS/atftp-get.sh" 10.77.0.1 ipxe.efi "$WORK/lossy/$i" 1468 >"$WORK/lossy/$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || true; done
  local secs
  secs=$(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.1f')
  for i in $(seq "$LOSSY_N"); do cmp -s "$WORK/data/boot/ipxe.efi" "$WORK/lossy/$i" || bad=$((bad + 1)); done
  echo "$secs $bad $(cat "$WORK/lossy/"*.log | grep -c 'started again' || true)"
}
# tftp_table <title>: $TFTP_RUNS alternating rounds of 500 downloads per server, as a table.
tftp_table() {
  local bts=() dts=() bcs=() dcs=() bbs=() dbs=() bf=0 df=0 r t f c b t2 f2 c2 b2
  for r in $(seq "$TFTP_RUNS"); do
    start_bootlane; read -r t f c b < <(tftp500); stop; bts+=("$t"); bf=$((bf + f)); bcs+=("$c"); bbs+=("$b")
    start_dnsmasq --enable-tftp --tftp-root="$WORK/data/boot" --tftp-max=1000
    read -r t2 f2 c2 b2 < <(tftp500); stop; dts+=("$t2"); df=$((df + f2)); dcs+=("$c2"); dbs+=("$b2")
    echo "  TFTP run $r ($1): Bootlane $t s ($f failed, $c s CPU, cores busy $b), dnsmasq $t2 s ($f2 failed, $c2 s CPU, cores busy $b2)" >&2
  done
  local bt dt
  bt=$(med "${bts[@]}"); dt=$(med "${dts[@]}")
  echo
  echo "### TFTP, $1 (500 parallel curl downloads of ipxe.efi, $(stat -c %s "$WORK/data/boot/ipxe.efi") bytes, default block size; median of $TFTP_RUNS runs)"
  echo
  echo "| server | wall time (s), median | runs (s) | server CPU (s) per run | cores 0/1 busy per run | failures (all runs) | time vs dnsmasq |"
  echo "|---|---:|---|---|---|---:|---:|"
  echo "| Bootlane | $bt | ${bts[*]} | ${bcs[*]} | ${bbs[*]} | $bf | $(awk -v a="$bt" -v b="$dt" 'BEGIN {printf "%.2f", a / b}')x |"
  echo "| dnsmasq 2.90 (--tftp-max=1000) | $dt | ${dts[*]} | ${dcs[*]} | ${dbs[*]} | $df | 1.00x |"
}
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
if [[ $WHAT == tftp || $WHAT == all ]]; then
  pool 10.77.1.0 10.77.250.250
  tftp_table "clients and server sharing both cores"
  if ((PINNED)); then
    SRV_PIN="taskset -c 1" CLI_PIN="taskset -c 0"
    tftp_table "clients pinned to core 0, the server to core 1"
    SRV_PIN="" CLI_PIN=""
  fi
  if ((LOSSY_N > 0)); then
    loss on
    start_bootlane; read -r blt blb bla < <(tftp_lossy); stop
    start_dnsmasq --enable-tftp --tftp-root="$WORK/data/boot" --tftp-max=1000
    read -r dlt dlb dla < <(tftp_lossy); stop
    loss off
  fi
  ((LOSSY_N > 0)) || exit 0
  echo
  echo "### TFTP with $LOSS_PCT % of datagrams lost each way ($LOSSY_N parallel atftp, blksize 1468, timeout 1 s)"
  echo
  echo "| server | wall time (s) | failed or not byte-exact | atftp restarts (unexpected OACK) | time vs dnsmasq |"
  echo "|---|---:|---:|---:|---:|"
  echo "| Bootlane | $blt | $blb | $bla | $(awk -v a="$blt" -v b="$dlt" 'BEGIN {printf "%.2f", a / b}')x |"
  echo "| dnsmasq 2.90 | $dlt | $dlb | $dla | 1.00x |"
fi
