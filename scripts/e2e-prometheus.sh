#!/usr/bin/env bash
# End-to-end test of the shipped Prometheus alerting rules and Grafana dashboard
# (integrations/), run by hand as root or by `cargo xtask test`
# (tests/tests/integration/prometheus_netns.rs):
#
#   scripts/e2e-prometheus.sh <path to the bootlane binary>
#
#   1. `promtool check rules` passes and `promtool test rules` runs every alert's unit test;
#   2. Bootlane runs in a server namespace (HTTPS management listener with its self-signed
#      certificate, plain HTTP boot listener, a DHCP subnet, TFTP, DNS, boot sessions) and
#      a client gets a lease as PXE firmware (udhcpc), fetches the NBP by TFTP, its iPXE
#      script and a kernel over HTTP, and asks DNS (dig);
#   3. every metric name the rules and the dashboard use is a series on that server's
#      `GET /api/v1/metrics`;
#   4. a real Prometheus (Debian's) in the client namespace scrapes it over HTTPS with a
#      static configuration and the `[metrics] bearer_token`, trusting the server's
#      certificate: the target is up, the rules load and evaluate without error, no alert
#      fires on the healthy server, the names are in Prometheus too, and every dashboard
#      query runs on Prometheus without error.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
HERE=$(dirname "$(readlink -f "$0")")
INTEG=$(readlink -f "$HERE/../integrations")
RULES=$INTEG/prometheus/bootlane-rules.yml
DASHBOARD=$INTEG/grafana/bootlane-dashboard.json

# shellcheck source=scripts/e2e-lib.sh
source "$HERE/e2e-lib.sh"
e2e_init e2e-prometheus 10.92.0
TOKEN=scrape-e2e-7Yq2mW9pLx4v
MAC=52:54:00:92:00:01

# ---- 1. the rules on their own ------------------------------------------------------------
promtool check rules "$RULES" >"$WORK/check-rules.log" 2>&1 || { cat "$WORK/check-rules.log" >&2; fail "promtool check rules"; }
(cd "$INTEG/prometheus/tests" && promtool test rules bootlane-rules.test.yml) >"$WORK/test-rules.log" 2>&1 ||
    { cat "$WORK/test-rules.log" >&2; fail "promtool test rules"; }
log "rules: $(grep -o 'SUCCESS: [0-9]* rules found' "$WORK/check-rules.log"); their unit tests pass"

# ---- 2. a server with some traffic --------------------------------------------------------
e2e_netns
E2E_API_TOML='listen = "0.0.0.0:8443"
boot_listen = "0.0.0.0:8080"
tls = "self-signed"
tls_names = ["pxe.test"]'
E2E_MGMT="https://pxe.test:8443"
E2E_CURL_TLS="--cacert $WORK/data/tls/cert.pem --resolve pxe.test:8443:$SERVER"
E2E_EXTRA_TOML="[metrics]
bearer_token = \"$TOKEN\"

[boot_sessions]
quiet_secs = 2"
e2e_start_bootlane "$BIN"

mkdir -p "$WORK/kern"
head -c 300000 /dev/urandom >"$WORK/kern/vmlinuz"
e2e_upload "" "$WORK/kern/vmlinuz"
api POST /dns/records '{"name":"metrics-probe","type":"A","value":"10.92.0.77"}' >/dev/null || fail "DNS record"

in_cli ip link set vcli down
in_cli ip link set vcli address "$MAC"
in_cli ip link set vcli up
cat >"$WORK/udhcpc.sh" <<'EOF'
#!/bin/sh
[ "$1" = bound ] && ip addr add "$ip/24" dev "$interface" || true
EOF
chmod +x "$WORK/udhcpc.sh"
in_cli ip addr flush dev vcli
in_cli udhcpc -i vcli -f -q -n -t 4 -T 2 -s "$WORK/udhcpc.sh" -V PXEClient:Arch:00000:UNDI:002001 \
    -x 0x5d:0000 >"$WORK/udhcpc.log" 2>&1 || fail "udhcpc got no lease (as PXE firmware)"
in_cli curl -fsS -o /dev/null "tftp://$SERVER/undionly.kpxe" || fail "TFTP download of the NBP"
in_cli curl -fsS -o /dev/null "$BASE/boot/ipxe?mac=$MAC" || fail "the iPXE script"
in_cli curl -fsS -o /dev/null "$BASE/boot/vmlinuz" || fail "the kernel over HTTP"
[[ $(in_cli dig +short +time=2 +tries=2 "@$SERVER" metrics-probe.bootlane.local) == 10.92.0.77 ]] || fail "DNS answer"
# The boot session ends after quiet_secs.
sleep 4

# ---- 3. every name the rules and the dashboard use is on /metrics -----------------------
# shellcheck disable=SC2086 # E2E_CURL_TLS is a list of curl arguments
in_cli curl -fsS $E2E_CURL_TLS -H "Authorization: Bearer $TOKEN" "$E2E_MGMT/api/v1/metrics" >"$WORK/metrics.txt" ||
    fail "scraping /api/v1/metrics with the bearer token"
python3 - "$RULES" "$DASHBOARD" "$WORK/metrics.txt" "$WORK/names.txt" <<'EOF' || fail "names missing from /metrics (above)"
import json, re, sys
rules, dashboard, metrics, out = sys.argv[1:5]
used = set(re.findall(r"\bbootlane_[a-z0-9_]+", open(rules).read()))
exprs = [t["expr"] for p in json.load(open(dashboard))["panels"] for t in p.get("targets", [])]
used |= {n for e in exprs for n in re.findall(r"\bbootlane_[a-z0-9_]+", e)}
served = {re.split(r"[{ ]", l, 1)[0] for l in open(metrics) if l.strip() and not l.startswith("#")}
missing = sorted(used - served)
for n in missing:
    print(f"not on /metrics: {n}", file=sys.stderr)
open(out, "w").write("\n".join(sorted(used)) + "\n")
sys.exit(1 if missing else 0)
EOF
log "the $(wc -l <"$WORK/names.txt") metric names the rules and the dashboard use are all on /metrics"

# ---- 4. a real Prometheus scrapes it ------------------------------------------------------
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $RULES
scrape_configs:
  - job_name: bootlane
    scheme: https
    metrics_path: /api/v1/metrics
    authorization:
      credentials: $TOKEN
    tls_config:
      ca_file: $WORK/data/tls/cert.pem
      server_name: pxe.test
    static_configs:
      - targets: ["$SERVER:8443"]
EOF
promtool check config "$WORK/prometheus.yml" >"$WORK/check-config.log" 2>&1 || { cat "$WORK/check-config.log" >&2; fail "promtool check config"; }
ip netns exec "$CLI" prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address=127.0.0.1:9090 >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
PROM=http://127.0.0.1:9090
prom() { in_cli curl -fsS -m 10 "$PROM/api/v1/$1" "${@:2}"; }
up=
for _ in $(seq 1 60); do
    sleep 1
    up=$(prom targets 2>/dev/null | json '[t["health"] for t in d["data"]["activeTargets"]]' 2>/dev/null) || continue
    [[ $up == "['up']" ]] && break
done
[[ $up == "['up']" ]] || { tail -20 "$WORK/prometheus.log" >&2; fail "Prometheus did not scrape Bootlane: target health $up"; }
log "Prometheus scrapes Bootlane over HTTPS with the bearer token: target up"

# A few evaluations of the rules.
sleep 6
RULES_JSON=$(prom rules) || fail "Prometheus rules"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])["data"]["groups"]
rules = [r for g in d for r in g["rules"]]
bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules if r.get("health") != "ok"]
firing = [(r["name"], r["state"]) for r in rules if r.get("state") not in (None, "inactive")]
sys.exit(0 if len(rules) == 6 and not bad and not firing else 1)' "$RULES_JSON" ||
    fail "the rules did not all load and evaluate cleanly, or one fires on a healthy server: $RULES_JSON"
log "6 alerting rules loaded and evaluated without error; none pending or firing"

NAMES=$(prom label/__name__/values) || fail "Prometheus metric names"
python3 -c '
import json, sys
have = set(json.loads(sys.argv[1])["data"])
missing = [n for n in open(sys.argv[2]).read().split() if n not in have]
print("missing in Prometheus:", missing) if missing else None
sys.exit(1 if missing else 0)' "$NAMES" "$WORK/names.txt" || fail "names missing in Prometheus"

# Every dashboard query, with Grafana's variables given values, runs on Prometheus.
n=0
while IFS= read -r q; do
    r=$(prom query --data-urlencode "query=$q") || fail "dashboard query refused by Prometheus: $q"
    [[ $(json 'd["status"]' <<<"$r") == success ]] || fail "dashboard query failed: $q: $r"
    n=$((n + 1))
done < <(python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p.get("targets", []):
        print(t["expr"].replace("$__rate_interval", "1m").replace("$instance", ".*"))' "$DASHBOARD")
log "the dashboard's $n queries all run on Prometheus"
V=$(prom query --data-urlencode 'query=bootlane_tls_certificate_expiry_timestamp_seconds - time()' | json 'd["data"]["result"][0]["value"][1]') ||
    fail "certificate expiry through Prometheus"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 800 * 86400 else 1)' "$V" ||
    fail "the self-signed certificate should have about 825 days left: $V s"
log "through Prometheus: the certificate expires in $(python3 -c "print(round(float('$V') / 86400))") days"
log PASS
