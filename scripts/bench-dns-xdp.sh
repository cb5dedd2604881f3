#!/usr/bin/env bash
# XDP fast-path DNS benchmark (issue 3), called by `cargo xtask bench dns` with the path of
# the bootlane binary. In one run, with kxdpgun (AF_XDP) as the generator from a client
# namespace over veth, it scores:
#   - Bootlane, XDP fast path (native, then generic attach),
#   - Bootlane, userspace path (same server and data, [dns.xdp] mode = "off"),
#   - dnsmasq with the same records,
#   - the XDP_PASS fall-through: AAAA queries for A-only names (NODATA, answered by
#     userspace) with XDP attached vs XDP off, to price the program on passed traffic.
# Score: the highest offered rate (doubling ladder, then bisection) at which
# >= 99 % of queries were answered and every answer was NOERROR; median of $RUNS runs.
# The XDP counters (GET /api/v1/services/dns) prove which path answered each row.
# Traffic stays inside two namespaces this script creates; everything it starts is
# killed by PID and the namespaces are deleted on exit.
# Usage: bench-dns-xdp.sh <bootlane binary>   (env: DURATION=1 RUNS=3 NAMES=1000 BISECT=2)
# kxdpgun itself tops out near 0.4 M qps here (one AF_XDP thread over veth); rows where
# the server kept up with it are marked ">=".
set -euo pipefail
BIN=${1:?usage: bench-dns-xdp.sh <bootlane binary>}
DURATION=${DURATION:-1}
RUNS=${RUNS:-3}
NAMES=${NAMES:-1000}
START_RATE=${START_RATE:-50000}
BISECT=${BISECT:-2}
XDP_START_RATE=${XDP_START_RATE:-400000}
MAX_RATE=${MAX_RATE:-6400000}
tag="bx$$"
SRV="${tag}s" CLI="${tag}c" VS="${tag}a" VC="${tag}b"
work=$(mktemp -d /tmp/bootlane-bench-xdp.XXXXXX)
pids=()
server_pid=""
cleanup() {
  for p in "${pids[@]}" $server_pid; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
T0=$(date +%s)

ip netns add "$SRV"; ip netns add "$CLI"
ip link add "$VS" netns "$SRV" type veth peer name "$VC" netns "$CLI"
ip -n "$SRV" addr add 10.77.0.1/24 dev "$VS"; ip -n "$CLI" addr add 10.77.0.2/24 dev "$VC"
for ns in "$SRV" "$CLI"; do ip -n "$ns" link set lo up; done
ip -n "$SRV" link set "$VS" up; ip -n "$CLI" link set "$VC" up
# Static neighbour entries: no ARP resolution inside a measured run.
mac() { ip -n "$1" -j link show dev "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["address"])'; }
ip -n "$SRV" neigh replace 10.77.0.2 lladdr "$(mac "$CLI" "$VC")" dev "$VS" nud permanent
ip -n "$CLI" neigh replace 10.77.0.1 lladdr "$(mac "$SRV" "$VS")" dev "$VC" nud permanent

# Records host<i>.lab.test A 10.<i/250>.<i%250>.1; kxdpgun query files (random order).
python3 - "$work" "$NAMES" <<'PY'
import sys, random
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/dnsmasq.conf", "w") as f:
    for i in range(n):
        f.write(f"host-record=host{i}.lab.test,10.{i//250}.{i%250}.1\n")
random.seed(1)
names = [f"host{random.randrange(n)}.lab.test" for _ in range(5000)]
with open(f"{work}/q-a", "w") as f:
    f.writelines(f"{x} A\n" for x in names)
with open(f"{work}/q-aaaa", "w") as f:
    f.writelines(f"{x} AAAA\n" for x in names)
PY

api() { # api <python statements using c (HTTPConnection) and H (headers)>
  ip netns exec "$SRV" python3 -c "
import json, http.client
c = http.client.HTTPConnection('127.0.0.1', 8080)
c.request('POST', '/api/v1/auth/login', json.dumps({'username': 'admin', 'password': 'bench'}), {'Content-Type': 'application/json'})
r = c.getresponse(); r.read()
H = {'Content-Type': 'application/json', 'Cookie': r.getheader('Set-Cookie').split(';')[0]}
$1"
}
counters() { # -> "answered passed" (passed = every pass_* counter)
  api "
c.request('GET', '/api/v1/services/dns', headers=H)
x = json.loads(c.getresponse().read())['data']['xdp']['counters']
print(x['answered'], sum(v for k, v in x.items() if k.startswith('pass_')))"
}
start_server() { # start_server <xdp mode>
  cat >"$work/bootlane.toml" <<EOT
data_dir = "$work/data"
log = "warn"
[server]
name = "bootlane"
[api]
listen = "127.0.0.1:8080"
[dns]
port = 5301
listen = ["10.77.0.1"]
local_domain = "lab.test"
[dns.xdp]
mode = "$1"
EOT
  BOOTLANE_ADMIN_PASSWORD=bench ip netns exec "$SRV" "$BIN" serve --config "$work/bootlane.toml" 2>>"$work/bootlane.log" &
  server_pid=$!
  for _ in $(seq 100); do ip netns exec "$SRV" curl -sf -o /dev/null http://127.0.0.1:8080/api/v1/status && return 0; sleep 0.1; done
  echo "bootlane did not start:" >&2; cat "$work/bootlane.log" >&2; exit 1
}
stop_server() {
  kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}
xdp_status() {
  api "
c.request('GET', '/api/v1/services/dns', headers=H)
x = json.loads(c.getresponse().read())['data']['xdp']
print(x['active'], ','.join(i['name'] + ':' + i['attach_mode'] for i in x['interfaces']), x['map_entries'], x.get('reason'))"
}

# One kxdpgun run -> "ok <sent pps>" or "fail <sent pps>"; ok = >= 99 % of the sent queries
# answered and every answer NOERROR. The sent rate can fall short of the offered one
# when kxdpgun itself saturates (one busy-polling thread on this 2-core machine).
shot() { # shot <port> <query file> <rate>
  local out q r n pps
  out=$(ip netns exec "$CLI" timeout $((DURATION + 10)) kxdpgun -I "$VC" -p "$1" -t "$DURATION" -Q "$3" -i "$2" 10.77.0.1 2>&1 || true)
  ip -n "$CLI" link set dev "$VC" xdp off 2>/dev/null || true
  q=$(awk '/^total queries:/ {print $3}' <<<"$out"); r=$(awk '/^total replies:/ {print $3}' <<<"$out")
  n=$(awk '/^responded NOERROR:/ {print $3}' <<<"$out")
  pps=$(awk '/^total queries:/ {gsub(/[(]/, "", $4); print $4}' <<<"$out")
  q=${q:-0} r=${r:-0} n=${n:-0} pps=${pps:-0}
  if ((q > 0 && r * 100 >= q * 99 && n == r)); then echo "ok $pps"; else echo "fail $pps"; fi
}
# Best passing rate: double from <start> until a run fails, then bisect $BISECT times
# between the last good and the first failed rate (2 steps: about 19 % resolution). The credit for a passing run is min(offered, sent). When kxdpgun cannot
# send 90 % of the offered rate the ladder stops there and the score is marked with ">="
# (the server kept up with the generator).
ladder() { # ladder <port> <query file> <start rate> -> "<best> <saturated 0|1>"
  local rate=$3 best=0 fail=0 res pps credit
  while ((rate <= MAX_RATE)); do
    read -r res pps < <(shot "$1" "$2" "$rate")
    credit=$((pps < rate ? pps : rate))
    if [[ $res == ok ]]; then
      ((credit > best)) && best=$credit
      if ((pps * 10 < rate * 9)); then echo "$best 1"; return; fi
      rate=$((rate * 2))
    else
      fail=$rate; break
    fi
  done
  # Even the start rate failed: halve (down to start/16) until a run passes.
  if ((best == 0 && fail > 0)); then
    rate=$((fail / 2))
    while ((rate * 16 >= $3)); do
      read -r res pps < <(shot "$1" "$2" "$rate")
      credit=$((pps < rate ? pps : rate))
      if [[ $res == ok ]]; then best=$credit; break; fi
      fail=$rate; rate=$((rate / 2))
    done
  fi
  # Bisect (geometric) between the last good and the first failed rate, $BISECT times.
  local lo=$best hi=$fail mid i
  if ((best > 0 && fail > 0)); then
    for ((i = 0; i < BISECT; i++)); do
      mid=$(awk -v a="$lo" -v b="$hi" 'BEGIN {printf "%d", sqrt(a * b)}')
      read -r res pps < <(shot "$1" "$2" "$mid")
      credit=$((pps < mid ? pps : mid))
      if [[ $res == ok ]]; then lo=$mid; ((credit > best)) && best=$credit; else hi=$mid; fi
    done
  fi
  echo "$best 0"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
warmup() { shot "$1" "$2" "$START_RATE" >/dev/null; } # one unscored run after a (re)start
declare -A score dans dpass sat
measure() { # measure <key> <port> <query file> <start rate> [bootlane]
  local key=$1 s=() a0=0 p0=0 a1=0 p1=0 b x
  [[ ${5:-} == bootlane ]] && read -r a0 p0 < <(counters)
  sat[$key]=""
  for r in $(seq "$RUNS"); do
    read -r b x < <(ladder "$2" "$3" "$4")
    s+=("$b"); ((x)) && sat[$key]=">= "
    echo "  $key run $r: $b qps$( ((x)) && echo ' (generator limit)')" >&2
  done
  [[ ${5:-} == bootlane ]] && read -r a1 p1 < <(counters)
  score[$key]=$(printf '%s\n' "${s[@]}" | median)
  dans[$key]=$((a1 - a0)); dpass[$key]=$((p1 - p0))
}

# Load the records once through the API (they persist in the data directory).
start_server off
api "
for i in range($NAMES):
    c.request('POST', '/api/v1/dns/records', json.dumps({'name': f'host{i}', 'type': 'A', 'value': f'10.{i//250}.{i%250}.1'}), H)
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status"
out=$(ip netns exec "$CLI" dig +short @10.77.0.1 -p 5301 host7.lab.test A)
[[ "$out" == "10.0.7.1" ]] || { echo "sanity check failed (userspace): '$out'" >&2; exit 1; }
echo "bench-dns-xdp: $NAMES records loaded; kxdpgun ${DURATION}s per rung, $RUNS runs per path" >&2

echo "  userspace path (XDP off)" >&2
warmup 5301 "$work/q-a"
measure off_a 5301 "$work/q-a" "$START_RATE" bootlane
measure off_aaaa 5301 "$work/q-aaaa" "$START_RATE" bootlane
stop_server

for mode in native generic; do
  start_server "$mode"
  read -r active ifs entries reason < <(xdp_status)
  echo "  XDP $mode: active=$active interfaces=$ifs map_entries=$entries" >&2
  [[ $active == True ]] || { echo "XDP $mode did not attach: $reason" >&2; exit 1; }
  warmup 5301 "$work/q-a"
  measure "xdp_$mode" 5301 "$work/q-a" "$XDP_START_RATE" bootlane
  if [[ $mode == native ]]; then measure pass_aaaa 5301 "$work/q-aaaa" "$START_RATE" bootlane; fi
  stop_server
done

ip netns exec "$SRV" dnsmasq -k --no-resolv --no-hosts --conf-file="$work/dnsmasq.conf" --port 5302 \
  --listen-address 10.77.0.1 --bind-interfaces --pid-file= 2>"$work/dnsmasq.log" &
pids+=($!)
sleep 0.5
out=$(ip netns exec "$CLI" dig +short @10.77.0.1 -p 5302 host7.lab.test A)
[[ "$out" == "10.0.7.1" ]] || { echo "sanity check failed (dnsmasq): '$out'" >&2; exit 1; }
warmup 5302 "$work/q-a"
measure dnsmasq 5302 "$work/q-a" "$START_RATE"
dnsmasq_version=$(dnsmasq --version | awk 'NR==1 {print $3}')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf (b ? "%.2fx" : "n/a"), (b ? a / b : 0)}'; }
cost=$(awk -v on="${score[pass_aaaa]}" -v off="${score[off_aaaa]}" 'BEGIN {printf (off ? "%.1f %%" : "n/a"), (off ? 100 * (off - on) / off : 0)}')
echo
echo "### DNS fast path (kxdpgun over veth, $NAMES names, best rate with >= 99 % answered and all NOERROR, median of $RUNS, ${DURATION}s per rung)"
echo
echo "| path | queries | best rate (qps) | vs dnsmasq | vs userspace | XDP answered | XDP passed |"
echo "|---|---|---:|---:|---:|---:|---:|"
row() { # row <label> <key> <queries> <vs userspace key>
  echo "| $1 | $3 | ${sat[$2]}${score[$2]} | $(ratio "${score[$2]}" "${score[dnsmasq]}") | $(ratio "${score[$2]}" "${score[$4]}") | ${dans[$2]:-0} | ${dpass[$2]:-0} |"
}
row "Bootlane, XDP fast path (native)" xdp_native "A" off_a
row "Bootlane, XDP fast path (generic)" xdp_generic "A" off_a
row "Bootlane, userspace (XDP off)" off_a "A" off_a
row "dnsmasq $dnsmasq_version" dnsmasq "A" off_a
row "Bootlane, userspace behind XDP_PASS (native)" pass_aaaa "AAAA (NODATA)" off_aaaa
row "Bootlane, userspace (XDP off)" off_aaaa "AAAA (NODATA)" off_aaaa
echo
echo "XDP_PASS fall-through cost on the userspace path: $cost (goal < 10 %); runtime $(( $(date +%s) - T0 )) s."
