#!/usr/bin/env bash
# Event-stream benchmark: what connected SSE subscribers cost the DNS path and API
# writes. Same server and client set-up as bench-dns.sh (bench-dns-lib.sh);
# each of $RUNS rounds measures, without subscribers and then with $SUBS `curl -N`
# processes on /api/v1/events/stream:
#   - DNS answered qps: dnsperf as in bench-dns.sh ($DURATION s; median over the rounds);
#   - API write latency: $WRITES sequential PUT /dns/records/{id} (alternating values, so
#     each is a real change that publishes dns.record.updated) over one keep-alive
#     connection (python3 http.client); p50/p99 over the pooled samples.
# Conditions alternate inside a round so drift on a busy machine hits both alike; read
# the ratios. Subscribers are counted as established connections to the API before each
# measurement, and each must have received every write's event.
# Usage: bench-events.sh <bootlane binary>. Prints a markdown table.
# Traffic stays inside two namespaces created and removed here; all started is killed by PID.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: bench-events.sh <bootlane binary>}")
SUBS=${SUBS:-50}
WRITES=${WRITES:-1000}
# The client the book's figures were measured with (one dnsperf thread); override to compare.
DNSPERF_OPTS=${DNSPERF_OPTS:--c 10 -T 1}
. "$(dirname "$0")/bench-dns-lib.sh"
dns_lab_up "$BIN"
dns_sanity 5301
cookie=$(cat "$work/cookie")

api_conns() { ip netns exec "$SRV" ss -Htn state established '( sport = :8080 )' | wc -l; }
sub_pids=()
subscribe() { # subscribe <round>: $SUBS curl -N on the stream, waits until all are connected
  for i in $(seq "$SUBS"); do
    ip netns exec "$SRV" curl -sN -H "Cookie: $cookie" http://127.0.0.1:8080/api/v1/events/stream \
      >"$work/sub-$1-$i.log" 2>/dev/null &
    sub_pids+=($!); pids+=($!)
  done
  for _ in $(seq 100); do (($(api_conns) >= SUBS)) && return; sleep 0.1; done
  echo "only $(api_conns) of $SUBS subscribers connected" >&2; exit 1
}
unsubscribe() {
  for p in "${sub_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  sub_pids=()
  for _ in $(seq 100); do (($(api_conns) == 0)) && return; sleep 0.1; done
  echo "subscribers still connected" >&2; exit 1
}
record_id=$(ip netns exec "$SRV" curl -sf -H "Cookie: $cookie" 'http://127.0.0.1:8080/api/v1/dns/records?name=host7' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["records"][0]["id"])')
writes() { # writes <samples file>: appends one latency (ms) per write
  ip netns exec "$SRV" python3 - "$WRITES" "$cookie" "$record_id" "$1" <<'PY'
import sys, json, time, http.client
n, cookie, rid, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", 8080)
h = {"Content-Type": "application/json", "Cookie": cookie}
lat = []
for i in range(n):
    body = json.dumps({"value": f"10.0.7.{1 + i % 2}"})
    t = time.perf_counter()
    c.request("PUT", f"/api/v1/dns/records/{rid}", body, h)
    r = c.getresponse(); r.read()
    lat.append((time.perf_counter() - t) * 1000)
    assert r.status == 200, r.status
with open(out, "a") as f:
    f.write("".join(f"{x:.4f}\n" for x in lat))
PY
}
pct() { sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int(NR*p/100+0.999999); if (i<1) i=1; printf "%.2f", a[i]}'; }

declare -A qs
min_got=$WRITES lagged=0
for r in $(seq "$RUNS"); do
  for n in 0 "$SUBS"; do
    ((n > 0)) && subscribe "$r"
    read -r q a e < <(dnsperf_run 5301)
    qs[$n]+="$q "
    writes "$work/lat-$n"
    if ((n > 0)); then
      # Every subscriber gets every write's event (the bus would lag a slow one rather than
      # wait, and say so); the last ones may still be in flight when the writes return.
      for _ in $(seq 50); do
        least=$WRITES
        for i in $(seq "$SUBS"); do
          got=$(grep -c '^event: dns.record.updated' "$work/sub-$r-$i.log" || true)
          ((got < least)) && least=$got
        done
        ((least == WRITES)) && break
        sleep 0.1
      done
      ((least < min_got)) && min_got=$least
      lagged=$((lagged + $(cat "$work"/sub-"$r"-*.log | grep -c '^event: lagged' || true)))
      unsubscribe
    fi
    echo "  round $r, $n subscribers: $q qps ($a% answered, $e% NOERROR); writes p50 $(pct "$work/lat-$n" 50) ms so far" >&2
  done
done
q0=$(printf '%s\n' ${qs[0]} | median)
q1=$(printf '%s\n' ${qs[$SUBS]} | median)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b ? a/b : 0)}'; }
p50_0=$(pct "$work/lat-0" 50) p99_0=$(pct "$work/lat-0" 99)
p50_1=$(pct "$work/lat-$SUBS" 50) p99_1=$(pct "$work/lat-$SUBS" 99)
echo
echo "### Events: cost of $SUBS SSE subscribers ($RUNS rounds; DNS: dnsperf -c 10 -T 1, $NAMES names, ${DURATION}s, median; writes: $((RUNS * WRITES)) sequential PUTs, keep-alive)"
echo
echo "| Measure | 0 subscribers | $SUBS subscribers | Ratio |"
echo "|---|---:|---:|---:|"
echo "| DNS answered qps | $q0 | $q1 | $(ratio "$q1" "$q0")x |"
echo "| API write (PUT /dns/records/{id}) p50 | ${p50_0} ms | ${p50_1} ms | $(ratio "$p50_1" "$p50_0")x |"
echo "| API write p99 | ${p99_0} ms | ${p99_1} ms | $(ratio "$p99_1" "$p99_0")x |"
echo
echo "Each subscriber received at least $min_got of the $WRITES write events per round; lag notices: $lagged."
