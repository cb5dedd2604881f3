# Shared set-up of the DNS benchmarks, sourced by bench-dns.sh and bench-events.sh (not run
# on its own). `dns_lab_up <bootlane binary>` creates two namespaces joined by a veth pair
# (server 10.77.0.1, client 10.77.0.2), writes $NAMES records host<i>.lab.test A
# 10.<i/250>.<i%250>.1 and a shuffled query file, starts Bootlane (XDP off, DNS on
# 10.77.0.1:5301, API on 127.0.0.1:8080 inside the server namespace), logs in (the session
# cookie is left in $work/cookie) and creates the records through the API.
# `dnsperf_run <port> [outstanding]` prints "qps answered% noerror%" for one $DURATION s
# dnsperf run from the client namespace ($DNSPERF_OPTS, default -c 20 -T 2: twenty
# sockets on two threads, so the client is not the limit; -q outstanding, default 200).
# `median` reads numbers and prints their median.
# Everything started is recorded in pids[] and killed, and the namespaces deleted, on exit.
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

dns_lab_up() { # dns_lab_up <bootlane binary>
  local bin=$1
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
# One client at full speed is exactly what response rate limiting stops: off here.
[dns.rrl]
enabled = false
[dns.xdp]
mode = "off"
EOT
  BOOTLANE_ADMIN_PASSWORD=bench-admin-Kq7vX2pL ip netns exec "$SRV" "$bin" serve --config "$work/bootlane.toml" 2>"$work/bootlane.log" &
  pids+=($!)
  for _ in $(seq 100); do ip netns exec "$SRV" curl -sf -o /dev/null http://127.0.0.1:8080/api/v1/status && break; sleep 0.1; done
  ip netns exec "$SRV" python3 - "$NAMES" "$work/cookie" <<'PY'
import sys, json, http.client
n = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", 8080)
c.request("POST", "/api/v1/auth/login", json.dumps({"username": "admin", "password": "bench-admin-Kq7vX2pL"}), {"Content-Type": "application/json"})
r = c.getresponse(); r.read()
cookie = r.getheader("Set-Cookie").split(";")[0]
open(sys.argv[2], "w").write(cookie)
for i in range(n):
    body = json.dumps({"name": f"host{i}", "type": "A", "value": f"10.{i//250}.{i%250}.1"})
    c.request("POST", "/api/v1/dns/records", body, {"Content-Type": "application/json", "Cookie": cookie})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
PY
}

dns_sanity() { # dns_sanity <port>: host7 must resolve
  local out
  out=$(ip netns exec "$CLI" dig +short @10.77.0.1 -p "$1" host7.lab.test A)
  [[ "$out" == "10.0.7.1" ]] || { echo "sanity check failed on port $1: '$out'" >&2; exit 1; }
}

dnsperf_run() { # dnsperf_run <port> -> "qps answered% noerror%"
  ip netns exec "$CLI" ${CLI_PIN:-} dnsperf -s 10.77.0.1 -p "$1" -d "$work/queries" ${DNSPERF_OPTS:--c 20 -T 2} -q "${2:-200}" -l "$DURATION" 2>&1 |
    awk '/Queries completed:/ {c=$3} /Queries sent:/ {s=$3} /Response codes:/ {for (i = 1; i <= NF; i++) if ($i == "NOERROR") {p = $(i + 2); gsub(/[()%,]/, "", p); n = p}} /Queries per second:/ {q=$4}
         END {printf "%d %.2f %.2f\n", q, (s ? 100 * c / s : 0), n}'
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
