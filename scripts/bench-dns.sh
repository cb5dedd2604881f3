#!/usr/bin/env bash
# Userspace DNS benchmark: Bootlane (XDP off) against dnsmasq with the same records, in one
# run, dnsperf as the client from a separate network namespace (-c 20 -T 2: one client
# thread per core; a single dnsperf thread stalls near 145,000 qps here, below Bootlane's
# rate). Scores: answered qps at each server's best number of outstanding queries (median
# of $RUNS runs of $DURATION s per setting, runs alternating between the servers), with the
# shares answered and NOERROR. Prints a markdown table with the ratio.
# Then the same with dnsperf pinned to core 0 and the servers to core 1 (PINNED=0 skips it).
# Usage: bench-dns.sh <path to bootlane binary>
# Traffic stays inside two namespaces this script creates and removes.
set -euo pipefail
BIN=${1:?usage: bench-dns.sh <bootlane binary>}
. "$(dirname "$0")/bench-dns-lib.sh"
. "$(dirname "$0")/bench-cores.sh"
dns_lab_up "$BIN"
ip netns exec "$SRV" dnsmasq -k --no-resolv --no-hosts --conf-file="$work/dnsmasq.conf" --port 5302 \
  --listen-address 10.77.0.1 --bind-interfaces --pid-file= 2>"$work/dnsmasq.log" &
pids+=($!)
sleep 0.5
dns_sanity 5301
dns_sanity 5302

# Each server is scored at its best number of outstanding queries (dnsperf -q, from
# $OUTSTANDING): the median of $RUNS runs, counted only when at least 99 % were answered.
# Runs alternate between the servers so drift on the machine hits both alike.
OUTSTANDING=${OUTSTANDING:-100 200 500}
lower() { awk -v x="$1" -v y="$2" 'BEGIN {print (y == "" || x + 0 < y + 0) ? x : y}'; }
# dns_table <title>: every setting for both servers, as a table.
dns_table() {
  declare -A med ans nerr score best busy
  for q in $OUTSTANDING; do
    declare -A qs=([bootlane]="" [dnsmasq]="")
    for r in $(seq "$RUNS"); do
      for which in bootlane dnsmasq; do
        port=5301; [[ $which == dnsmasq ]] && port=5302
        j0=$(core_jiffies)
      read -r v a n < <(dnsperf_run $port "$q")
      busy[$which,$q]+="$(busy_pct "$j0" "$(core_jiffies)") "
        qs[$which]+="$v "
        # The worst answered share and NOERROR share over the runs at this setting.
        ans[$which,$q]=$(lower "$a" "${ans[$which,$q]:-}")
        nerr[$which,$q]=$(lower "$n" "${nerr[$which,$q]:-}")
        echo "  -q $q run $r $which: $v qps, $a% answered, $n% NOERROR, cores busy $(echo ${busy[$which,$q]} | awk '{print $NF}')" >&2
      done
    done
    for which in bootlane dnsmasq; do
      med[$which,$q]=$(printf '%s\n' ${qs[$which]} | median)
      if awk -v a="${ans[$which,$q]}" 'BEGIN {exit !(a >= 99)}' && (( ${med[$which,$q]} > ${score[$which]:-0} )); then
        score[$which]=${med[$which,$q]}; best[$which]=$q
      fi
    done
  done
  ratio=$(awk -v a="${score[bootlane]:-0}" -v b="${score[dnsmasq]:-0}" 'BEGIN {printf "%.2f", (b ? a/b : 0)}')
  echo
  echo "### DNS, userspace path, $1 (dnsperf ${DNSPERF_OPTS:--c 20 -T 2}, $NAMES names, median of $RUNS x ${DURATION}s per -q, alternating)"
  echo
  printf '| server |'; for q in $OUTSTANDING; do printf ' -q %s: qps (answered, NOERROR) |' "$q"; done; echo ' best (≥ 99 % answered) | ratio vs dnsmasq | cores 0/1 busy at the best -q, per run |'
  printf '|---|'; for q in $OUTSTANDING; do printf -- '---:|'; done; echo '---:|---:|---|'
  for which in bootlane dnsmasq; do
    label="Bootlane (userspace, XDP off)"; [[ $which == dnsmasq ]] && label="dnsmasq 2.90"
    r=$ratio; [[ $which == dnsmasq ]] && r=1.00
    printf '| %s |' "$label"
    for q in $OUTSTANDING; do printf ' %s (%s%%, %s%%) |' "${med[$which,$q]}" "${ans[$which,$q]}" "${nerr[$which,$q]}"; done
    printf ' %s (-q %s) | %sx | %s |\n' "${score[$which]:-0}" "${best[$which]:--}" "$r" "${busy[$which,${best[$which]:-}]:--}"
  done
}
dns_table "clients and servers sharing both cores"
# PINNED=1 (the default on two or more cores): dnsperf on core 0 with one thread, both
# servers (every thread) on core 1, so neither side takes the other's core.
PINNED=${PINNED:-$(( $(nproc) >= 2 ? 1 : 0 ))}
if ((PINNED)); then
  for p in "${pids[@]}"; do taskset -a -cp 1 "$p" >/dev/null; done
  CLI_PIN="taskset -c 0" DNSPERF_OPTS="-c 20 -T 1" dns_table "dnsperf pinned to core 0 (one thread), the servers to core 1"
fi
