#!/usr/bin/env bash
# API contract test: runs schemathesis against a running Bootlane's own
# /api/v1/openapi.json with the checks not_a_server_error, status_code_conformance,
# content_type_conformance, response_schema_conformance and negative_data_rejection.
#
#   scripts/contract.sh <bootlane-binary> [extra `st run` arguments]
#
# Starts `bootlane serve` on loopback (free API port, DNS on a high port, XDP, DHCP and TFTP
# off) with a temporary data directory and a known admin password, logs in, and hands the
# session token to schemathesis through the document's `bearer` security scheme (a config
# file, not a raw Cookie header, so its negative auth cases are judged correctly). Stops the
# server by its PID. The endless SSE routes (`/events/stream`, `/logs/stream`) are left out:
# such a stream never ends, so every case would wait for the request timeout; the router tests
# and the namespace test read them with a real client instead. Needs schemathesis from scripts/setup.sh (/opt/bootlane-venv).
# Environment: CONTRACT_EXAMPLES (cases per operation, default 50), CONTRACT_SEED;
# CONTRACT_STORE=postgres runs the server on a throwaway PostgreSQL cluster (initdb into a
# temporary directory, loopback port) instead of sled.
set -euo pipefail

bin=${1:?usage: contract.sh <bootlane-binary> [st run args]}
shift
st=${SCHEMATHESIS:-/opt/bootlane-venv/bin/st}
[[ -x $st ]] || { echo "contract: $st missing; run scripts/setup.sh" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

work=$(mktemp -d /tmp/bootlane-contract.XXXXXX)
api_port=$(free_port)
dns_port=$(free_port)
password="contract-$(head -c 18 /dev/urandom | base64 | tr -d "/+=")"
cat >"$work/bootlane.toml" <<EOF
data_dir = "$work/data"
log = "warn"

[api]
listen = "127.0.0.1:$api_port"

[dns]
port = $dns_port
listen = ["127.0.0.1"]

[dns.xdp]
mode = "off"

[tftp]
enabled = false

# Random schedules with MAC targets fire: keep magic packets off every real network
# (lo cannot broadcast, so WOL has no interface and wakes fail harmlessly).
[wol]
interfaces = ["lo"]

# Random ping/traceroute targets: probe loopback only, and look no names up (every random
# name would go to the machine's resolver and wait for its timeout).
[diagnostics]
allowed_targets = ["127.0.0.0/8", "::1/128"]
resolve_names = false

# Random probes and BMC configs may name any address: only loopback may be contacted
# (nothing listens there for IPMI or Redfish), each call gives up after 1 s, and power
# actions do not poll for a change.
[bmc]
allowed_networks = ["127.0.0.0/8"]
command_timeout_secs = 1
settle_secs = 0
EOF
mkdir -p "$work/data"

pgw=
stop_postgres() { :; }
if [[ ${CONTRACT_STORE:-sled} == postgres ]]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [[ -x $pgbin/initdb ]] || { echo "contract: PostgreSQL missing; run scripts/setup.sh" >&2; exit 1; }
  pgw=$(mktemp -d /tmp/bootlane-contract-pg.XXXXXX)
  pg_port=$(free_port)
  as_pg=()
  if [[ $(id -u) == 0 ]]; then chown postgres: "$pgw"; as_pg=(runuser -u postgres --); fi
  "${as_pg[@]}" "$pgbin/initdb" -U bootlane --auth=trust -E UTF8 --no-sync -D "$pgw/data" >/dev/null
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgw/data" -w -l "$pgw/log" \
    -o "-p $pg_port -k $pgw -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
  stop_postgres() { "${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgw/data" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$pgw"; }
  "${as_pg[@]}" env PGOPTIONS=-cclient_min_messages=warning "$pgbin/psql" -q -h 127.0.0.1 -p "$pg_port" -U bootlane -d postgres \
    -c "CREATE DATABASE contract" || { stop_postgres; exit 1; }
  printf '\n[store]\nbackend = "postgres"\nurl = "postgres://bootlane@127.0.0.1:%s/contract"\n' "$pg_port" >>"$work/bootlane.toml"
  echo "contract: on PostgreSQL (127.0.0.1:$pg_port)"
fi

BOOTLANE_ADMIN_PASSWORD=$password "$bin" serve --config "$work/bootlane.toml" >"$work/server.log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  stop_postgres
  rm -rf "$work"
}
trap cleanup EXIT

base="http://127.0.0.1:$api_port"
for _ in $(seq 100); do
  curl -fsS "$base/api/v1/status" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "contract: server exited" >&2; exit 1; }
  sleep 0.1
done

token=$(curl -fsS -c - -H 'Content-Type: application/json' \
  -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$base/api/v1/auth/login" \
  | awk '$6 == "bootlane_session" { print $7 }')
[[ -n $token ]] || { echo "contract: login failed" >&2; exit 1; }

cat >"$work/schemathesis.toml" <<EOF
[auth.openapi.bearer]
bearer = "\${BOOTLANE_CONTRACT_TOKEN}"

# The BMC routes answer 502 when the BMC fails or does not answer (documented in each
# operation); with no BMC on loopback that is the right answer, not a server bug.
[[operations]]
include-tag = "bmc"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "502"]
EOF

echo "contract: schemathesis against $base/api/v1/openapi.json"
status=0
# From the temp directory: schemathesis keeps its cache (.schemathesis/) in the working one.
(cd "$work" && BOOTLANE_CONTRACT_TOKEN=$token "$st" --config-file "$work/schemathesis.toml" run \
  "$base/api/v1/openapi.json" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection \
  --max-examples "${CONTRACT_EXAMPLES:-50}" \
  ${CONTRACT_SEED:+--seed "$CONTRACT_SEED"} \
  --generation-database none \
  --exclude-path-regex '/(events|logs)/stream$' \
  --report-dir "$work/report" \
  --no-color "$@") || status=$?
if ((status)); then
  echo "contract: FAILED (server log follows)" >&2
  tail -50 "$work/server.log" >&2
fi
exit "$status"
