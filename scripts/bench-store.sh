#!/usr/bin/env bash
# Store benchmark: the embedded sled store against the shared PostgreSQL store, in the
# same invocation, on this machine.
#   API write latency: $WRITES sequential writes through the REST API (keep-alive, one
#         client), alternating PUT /dns/records/{id} (a one-row update) and
#         POST + DELETE /dns/records (a new row and its removal); p50 and p99 per
#         backend. PostgreSQL 15 runs as a throwaway cluster in the server namespace with
#         its defaults (fsync and synchronous_commit on); sled fsyncs each write.
#   DHCP leases/s: bench-boot.sh's DHCP ladder for Bootlane on both backends
#         (WITH_POSTGRES=1, Kea and dnsmasq left out: `cargo xtask bench boot` has them).
# Usage: bench-store.sh <bootlane binary>. Prints markdown tables. (env: WRITES=2000;
#   SKIP_DHCP=1 leaves the DHCP ladder out)
# Everything runs in a namespace this script creates; all it starts is killed by PID.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: bench-store.sh <bootlane binary>}")
WRITES=${WRITES:-2000}
SCRIPTS=$(dirname "$(readlink -f "$0")")
SRV="bs$$"
WORK=$(mktemp -d /tmp/bootlane-bench-store.XXXXXX)
PGW=$(mktemp -d /tmp/bootlane-bench-store-pg.XXXXXX)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
SPID=
cleanup() {
  [[ -n $SPID ]] && { kill -9 "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGW/data" -m immediate -w stop >/dev/null 2>&1 || true
  ip netns del "$SRV" 2>/dev/null || true
  rm -rf "$WORK" "$PGW"
}
trap cleanup EXIT
ip netns add "$SRV"
ip -n "$SRV" link set lo up
chown postgres: "$PGW"
runuser -u postgres -- "$PGBIN/initdb" -U bootlane --auth=trust -D "$PGW/data" >/dev/null
ip netns exec "$SRV" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGW/data" -w -l "$PGW/log" \
  -o "-p 5499 -k $PGW -c listen_addresses=127.0.0.1" start >/dev/null

start() { # start sled|postgres
  rm -rf "$WORK/data"; mkdir -p "$WORK/data"
  cat >"$WORK/bootlane.toml" <<TOML
data_dir = "$WORK/data"
log = "warn"
[api]
listen = "127.0.0.1:8080"
[dns]
enabled = false
local_domain = "bench.test"
[dns.xdp]
mode = "off"
TOML
  if [[ $1 == postgres ]]; then
    ip netns exec "$SRV" runuser -u postgres -- env PGOPTIONS=-cclient_min_messages=warning "$PGBIN/psql" -q -h "$PGW" -p 5499 -U bootlane -d postgres \
      -c "DROP DATABASE IF EXISTS bench" -c "CREATE DATABASE bench" >/dev/null
    printf '[store]\nbackend = "postgres"\nurl = "postgres://bootlane@127.0.0.1:5499/bench"\n' >>"$WORK/bootlane.toml"
  fi
  BOOTLANE_ADMIN_PASSWORD=bench-admin-Kq7vX2pL ip netns exec "$SRV" "$BIN" serve --config "$WORK/bootlane.toml" 2>"$WORK/bootlane.log" &
  SPID=$!
  for _ in $(seq 60); do ip netns exec "$SRV" curl -fs -o /dev/null http://127.0.0.1:8080/api/v1/status && return; sleep 0.5; done
  echo "Bootlane ($1) did not start" >&2; cat "$WORK/bootlane.log" >&2; exit 1
}
stop() { kill -9 "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; SPID=; }

writes() { # writes <backend> -> "<update p50> <update p99> <create+delete p50> <create+delete p99>"
  ip netns exec "$SRV" python3 - "$WRITES" "$1" <<'PY'
import sys, json, time, http.client
n, backend = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", 8080)
def call(method, path, body=None, h={}):
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json", **h})
    r = c.getresponse(); data = r.read()
    return r.status, r.getheader("Set-Cookie"), data
s, cookie, _ = call("POST", "/api/v1/auth/login", {"username": "admin", "password": "bench-admin-Kq7vX2pL"})
assert s == 200, s
h = {"Cookie": cookie.split(";")[0]}
s, _, d = call("POST", "/api/v1/dns/records", {"name": "bench", "type": "A", "value": "10.0.7.1"}, h)
assert s == 201, (s, d)
rid = json.loads(d)["data"]["id"]
upd, cre = [], []
for i in range(n // 2):
    t = time.perf_counter()
    s, _, _ = call("PUT", f"/api/v1/dns/records/{rid}", {"value": f"10.0.7.{1 + i % 2}"}, h)
    upd.append((time.perf_counter() - t) * 1000); assert s == 200, s
    t = time.perf_counter()
    s, _, d = call("POST", "/api/v1/dns/records", {"name": f"n{i}", "type": "A", "value": "10.0.8.1"}, h)
    assert s == 201, (s, d)
    s, _, _ = call("DELETE", f"/api/v1/dns/records/{json.loads(d)['data']['id']}", None, h)
    cre.append((time.perf_counter() - t) * 1000); assert s == 200, s
def pct(a, p):
    a = sorted(a); return a[min(len(a) - 1, max(0, int(len(a) * p / 100 + 0.999999) - 1))]
print(f"{pct(upd, 50):.2f} {pct(upd, 99):.2f} {pct(cre, 50):.2f} {pct(cre, 99):.2f}")
PY
}

declare -A res
for b in sled postgres; do
  start "$b"
  res[$b]=$(writes "$b")
  echo "  $b: $WRITES writes: ${res[$b]} (ms: update p50 p99, create+delete p50 p99)" >&2
  stop
done
read -r su50 su99 sc50 sc99 <<<"${res[sled]}"
read -r pu50 pu99 pc50 pc99 <<<"${res[postgres]}"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b ? a / b : 0)}'; }
echo
echo "### Store: API write latency, sled against PostgreSQL ($WRITES sequential writes per backend, one keep-alive client)"
echo
echo "| Write | sled p50 | sled p99 | PostgreSQL p50 | PostgreSQL p99 | PostgreSQL / sled (p50) |"
echo "|---|---:|---:|---:|---:|---:|"
echo "| PUT /dns/records/{id} | $su50 ms | $su99 ms | $pu50 ms | $pu99 ms | $(ratio "$pu50" "$su50")x |"
echo "| POST then DELETE /dns/records | $sc50 ms | $sc99 ms | $pc50 ms | $pc99 ms | $(ratio "$pc50" "$sc50")x |"
if [[ -z ${SKIP_DHCP:-} ]]; then
  SKIP_KEA=1 SKIP_DNSMASQ=1 WITH_POSTGRES=1 bash "$SCRIPTS/bench-boot.sh" "$BIN" dhcp
fi
