#!/usr/bin/env bash
# Userspace DNS benchmark: Bootlane (XDP off) against dnsmasq with the same records, in one
# run, dnsperf as the client from a separate network namespace. Scores: answered qps
# (median of 3 runs of $DURATION s each), with the share of NOERROR answers. Prints a
# markdown table with the ratio. Usage: bench-dns.sh <path to bootlane binary>
# Traffic stays inside two namespaces this script creates and removes.
set -euo pipefail
BIN=${1:?usage: bench-dns.sh <bootlane binary>}
DURATION=${DURATION:-8}
RUNS=${RUNS:-3}
NAMES=${NAMES:-1000}
tag="bb$$"
SRV="${tag}s" CLI="${tag}c"
work=$(mktemp -d /tmp/bootlane-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$SRV"; ip netns add "$CLI"
ip link add "${tag}a" netns "$SRV" type veth peer name "${tag}b" netns "$CLI"
ip -n "$SRV" addr add 10.77.0.1/24 dev "${tag}a"; ip -n "$CLI" addr add 10.77.0.2/24 dev "${tag}b"
for ns in "$SRV" "$CLI"; do ip -n "$ns" link set lo up; done
ip -n "$SRV" link set "${tag}a" up; ip -n "$CLI" link set "${tag}b" up

# Records: host<i>.lab.test A 10.<i/250>.<i%250>.1 ; queries in shuffled order.
python3 - "$work" "$NAMES" <<'PY'
import sys, random
work, n = sys.argv[1], int(sys.argv[2])
with open(f"{work}/dnsmasq.conf", "w") as f:
    for i in range(n):
        f.write(f"host-record=host{i}.lab.test,10.{i//250}.{i%250}.1\n")
random.seed(1)
with open(f"{work}/queries", "w") as f:
    for _ in range(20000):
        f.write(f"host{random.randrange(n)}.lab.test A\n")
PY

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
mode = "off"
EOT
BOOTLANE_ADMIN_PASSWORD=bench ip netns exec "$SRV" "$BIN" serve --config "$work/bootlane.toml" 2>"$work/bootlane.log" &
pids+=($!)
for _ in $(seq 100); do ip netns exec "$SRV" curl -sf -o /dev/null http://127.0.0.1:8080/api/v1/status && break; sleep 0.1; done
ip netns exec "$SRV" python3 - "$NAMES" <<'PY'
import sys, json, http.client
n = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", 8080)
c.request("POST", "/api/v1/auth/login", json.dumps({"username": "admin", "password": "bench"}), {"Content-Type": "application/json"})
r = c.getresponse(); r.read()
cookie = r.getheader("Set-Cookie").split(";")[0]
for i in range(n):
    body = json.dumps({"name": f"host{i}", "type": "A", "value": f"10.{i//250}.{i%250}.1"})
    c.request("POST", "/api/v1/dns/records", body, {"Content-Type": "application/json", "Cookie": cookie})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
PY
ip netns exec "$SRV" dnsmasq -k --no-resolv --no-hosts --conf-file="$work/dnsmasq.conf" --port 5302 \
  --listen-address 10.77.0.1 --bind-interfaces --pid-file= 2>"$work/dnsmasq.log" &
pids+=($!)
sleep 0.5
for port in 5301 5302; do
  out=$(ip netns exec "$CLI" dig +short @10.77.0.1 -p $port host7.lab.test A)
  [[ "$out" == "10.0.7.1" ]] || { echo "sanity check failed on port $port: '$out'" >&2; exit 1; }
done

run() { # run <port> -> "qps noerror%"
  ip netns exec "$CLI" dnsperf -s 10.77.0.1 -p "$1" -d "$work/queries" -c 10 -T 1 -q 200 -l "$DURATION" 2>&1 |
    awk '/Queries completed:/ {c=$3} /Queries sent:/ {s=$3} /Response codes:/ {for (i = 1; i <= NF; i++) if ($i == "NOERROR") {p = $(i + 2); gsub(/[()%,]/, "", p); n = p}} /Queries per second:/ {q=$4}
         END {printf "%d %.2f %.2f\n", q, (s ? 100 * c / s : 0), n}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A score answered noerr
for which in bootlane dnsmasq; do
  port=5301; [[ $which == dnsmasq ]] && port=5302
  qs=()
  for r in $(seq "$RUNS"); do
    read -r q a n < <(run $port)
    qs+=("$q"); answered[$which]=$a; noerr[$which]=$n
    echo "  $which run $r: $q qps, $a% answered, $n% NOERROR" >&2
  done
  score[$which]=$(printf '%s\n' "${qs[@]}" | median)
done
ratio=$(awk -v a="${score[bootlane]}" -v b="${score[dnsmasq]}" 'BEGIN {printf "%.2f", (b ? a/b : 0)}')
echo
echo "### DNS, userspace path (dnsperf -c 10 -T 1, $NAMES names, median of $RUNS x ${DURATION}s)"
echo
echo "| server | answered qps | answered | NOERROR | ratio vs dnsmasq |"
echo "|---|---:|---:|---:|---:|"
echo "| Bootlane (userspace, XDP off) | ${score[bootlane]} | ${answered[bootlane]}% | ${noerr[bootlane]}% | ${ratio}x |"
echo "| dnsmasq 2.90 | ${score[dnsmasq]} | ${answered[dnsmasq]}% | ${noerr[dnsmasq]}% | 1.00x |"
