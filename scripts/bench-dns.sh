#!/usr/bin/env bash
# Userspace DNS benchmark: Bootlane (XDP off) against dnsmasq with the same records, in one
# run, dnsperf as the client from a separate network namespace. Scores: answered qps
# (median of 3 runs of $DURATION s each), with the share of NOERROR answers. Prints a
# markdown table with the ratio. Usage: bench-dns.sh <path to bootlane binary>
# Traffic stays inside two namespaces this script creates and removes.
set -euo pipefail
BIN=${1:?usage: bench-dns.sh <bootlane binary>}
. "$(dirname "$0")/bench-dns-lib.sh"
dns_lab_up "$BIN"
ip netns exec "$SRV" dnsmasq -k --no-resolv --no-hosts --conf-file="$work/dnsmasq.conf" --port 5302 \
  --listen-address 10.77.0.1 --bind-interfaces --pid-file= 2>"$work/dnsmasq.log" &
pids+=($!)
sleep 0.5
dns_sanity 5301
dns_sanity 5302

declare -A score answered noerr
for which in bootlane dnsmasq; do
  port=5301; [[ $which == dnsmasq ]] && port=5302
  qs=()
  for r in $(seq "$RUNS"); do
    read -r q a n < <(dnsperf_run $port)
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
