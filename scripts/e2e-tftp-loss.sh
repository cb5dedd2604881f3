#!/usr/bin/env bash
# TFTP under packet loss: with 5 % of the UDP datagrams dropped at random in each direction,
# parallel downloads by three real clients must all arrive byte-exact, and the server must
# retransmit only on its own timeout (RFC 1350; RFC 1123 §4.2.3.1: never on a duplicate ACK,
# or the Sorcerer's Apprentice syndrome sends every later block twice):
#   1. lock-step (RFC 1350 + blksize): curl at 512-byte blocks, tftp-hpa on a file that is
#      an exact multiple of 512 (so the transfer ends with an empty block), atftp at 1468;
#   2. windowed (RFC 7440): atftp with windowsize 8 and 16.
# The loss is independent per datagram, netem's `loss 5%` model, made with an nftables
# `numgen random` rule on each namespace's input: this kernel is built without sch_netem
# (CONFIG_NET_SCH_NETEM is not set), and the rule's counters give what the server sent.
# For each phase the datagrams the server sent (dropped or not) are compared with the
# DATA blocks the files need. With 5 % loss each way
# lock-step needs about 1/0.95² = 1.11x; the Sorcerer's Apprentice would approach 2x.
# Usage: e2e-tftp-loss.sh <bootlane binary>. Prints "[e2e-tftp-loss] PASS" at the end.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: e2e-tftp-loss.sh <bootlane binary>}")
LOSS_PCT=${LOSS_PCT:-5}
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-tftp-loss 10.83.0
e2e_netns

mkdir -p "$WORK/data/boot" "$WORK/out"
BOOT="$WORK/data/boot"
cp -L /usr/lib/ipxe/ipxe.efi "$BOOT/"
head -c 300000 /dev/urandom >"$BOOT/rand300k.bin"
head -c 262144 /dev/urandom >"$BOOT/exact256k.bin"
# The server's first retransmission timeout is 200 ms here (default 1 s) so the test
# takes seconds; the back-off and the rules are the same.
E2E_EXTRA_TOML=$'[tftp]\nenabled = true\ntimeout_ms = 200\nretries = 8\nmax_transfers_per_client = 256'
e2e_start_bootlane "$BIN"

# loss <namespace>: drop $LOSS_PCT % of the UDP datagrams arriving in it (on input, so the
# sender's sendto() succeeds as on a lossy wire), and count every UDP datagram it sends.
loss() {
    ip netns exec "$1" nft -f - <<EOF
table inet loss {
    counter sent {}
    counter dropped {}
    chain in {
        type filter hook input priority 0; policy accept;
        meta l4proto udp numgen random mod 100 < $LOSS_PCT counter name "dropped" drop
    }
    chain out {
        type filter hook output priority 0; policy accept;
        meta l4proto udp counter name "sent"
    }
}
EOF
}
loss "$SRV"
loss "$CLI"
log "$LOSS_PCT % of UDP datagrams dropped at random each way"

# counter <namespace> <name>: packets through the loss table's counter.
counter() {
    ip netns exec "$1" nft -j list counter inet loss "$2" |
        python3 -c 'import json,sys; print([x["counter"]["packets"] for x in json.load(sys.stdin)["nftables"] if "counter" in x][0])'
}
server_sent() { counter "$SRV" sent; }
# blocks <file> <blksize>: DATA blocks a transfer needs (the last one shorter, maybe empty).
blocks() { echo $(($(stat -c %s "$BOOT/$1") / $2 + 1)); }

# run_phase <name> <max ratio> <command lines...>: each line "<file> <blksize> <client cmd>"
# with @OUT@ for the output path; runs all at once and checks every output.
run_phase() {
    local name=$1 max=$2 need=0 i=0 before after t0 pids=() specs=() fails=0
    shift 2
    before=$(server_sent)
    t0=$(date +%s.%N)
    for spec in "$@"; do
        read -r file blk cmd <<<"$spec"
        need=$((need + $(blocks "$file" "$blk")))
        local out="$WORK/out/$name-$i"
        in_cli timeout 180 bash -c "${cmd//@OUT@/$out}" >"$out.log" 2>&1 &
        pids+=($!)
        specs+=("$file $out")
        i=$((i + 1))
    done
    for n in "${!pids[@]}"; do
        if ! wait "${pids[$n]}"; then
            log "client $n (${specs[$n]}) exited non-zero: $(tail -n 3 "$WORK/out/$name-$n.log" | tr '\n' ' ')"
            fails=$((fails + 1))
        fi
    done
    local secs
    secs=$(echo "$(date +%s.%N) - $t0" | bc)
    # A client that failed also left a differing file: count the larger of the two.
    local differ=0
    for s in "${specs[@]}"; do
        read -r file out <<<"$s"
        cmp -s "$BOOT/$file" "$out" && continue
        log "$out differs from $file ($(stat -c %s "$out" 2>/dev/null || echo missing) bytes)"
        differ=$((differ + 1))
    done
    ((differ > fails)) && fails=$differ
    local again
    again=$(cat "$WORK/out/$name"-*.log | grep -c 'started again' || true)
    ((again == 0)) || log "$name: atftp started again $again times after an unexpected OACK"
    [[ $fails == 0 ]] || fail "$name: $fails of ${#specs[@]} downloads failed or differ"
    sleep 1.5 # the server's last retransmissions of final blocks whose ACK was lost
    after=$(server_sent)
    local ratio
    ratio=$(awk -v s=$((after - before)) -v n="$need" 'BEGIN {printf "%.2f", s / n}')
    log "$name: $(counter "$CLI" dropped) datagrams to the client and $(counter "$SRV" dropped) to the server dropped so far"
    log "$name: ${#specs[@]} downloads byte-exact in $(printf '%.1f' "$secs") s; server sent $((after - before)) datagrams for $need blocks: ${ratio}x (limit ${max}x)"
    awk -v r="$ratio" -v m="$max" 'BEGIN {exit !(r <= m)}' || fail "$name: ${ratio}x the blocks needed: retransmitting more than loss explains"
}

# Clients that negotiate the `timeout` option (RFC 2349) get it: curl always asks for 5 s,
# so here it runs with --tftp-no-options (plain RFC 1350, as much firmware does) and atftp
# asks for 1 s; otherwise every lost datagram would cost 5 s.
curl_get() { echo "curl -sS --max-time 170 --tftp-no-options -o @OUT@ tftp://$SERVER/$1"; }
# atftp <file> <blksize> [windowsize]: scripts/atftp-get.sh, which starts atftp again when
# it aborts on a repeated OACK (counted below).
atftp_get() { echo "$(dirname "$(readlink -f "$0")")/atftp-get.sh $SERVER $1 @OUT@ $2 ${3:-}"; }
specs=()
for _ in $(seq 10); do specs+=("rand300k.bin 512 $(curl_get rand300k.bin)"); done
for _ in $(seq 4); do specs+=("exact256k.bin 512 tftp -m binary $SERVER -c get exact256k.bin @OUT@"); done
for _ in $(seq 6); do specs+=("rand300k.bin 1468 $(atftp_get rand300k.bin 1468)"); done
run_phase lockstep 1.35 "${specs[@]}"

specs=()
for _ in $(seq 6); do specs+=("ipxe.efi 1428 $(atftp_get ipxe.efi 1428 8)"); done
for _ in $(seq 3); do specs+=("exact256k.bin 512 $(atftp_get exact256k.bin 512 16)"); done
run_phase windowed 2.50 "${specs[@]}"

plainlog | grep -q 'panicked' && fail "the server panicked"
log PASS
