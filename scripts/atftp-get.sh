#!/usr/bin/env bash
# One TFTP download by atftp with a 1 s `timeout` option, for the loss test
# (e2e-tftp-loss.sh) and benchmark (bench-boot.sh). When ACK 0 is lost the server must send
# its OACK again (RFC 2347 §2: it is the packet awaiting acknowledgement); atftp 0.8.0 then
# aborts with "unexpected OACK" instead of acknowledging it again. Such a run is started
# again, at most 3 runs in all, each restart printed as "atftp: unexpected OACK, started
# again" so the callers can count them; any other failure ends the script with atftp's
# last lines and status 1.
# Usage: atftp-get.sh <server> <remote file> <local file> <blksize> [windowsize]
set -uo pipefail
server=$1 file=$2 out=$3 blksize=$4 window=${5:-}
opts=(--option "blksize $blksize" --option "timeout 1")
[[ -n $window ]] && opts+=(--option "windowsize $window")
for _ in 1 2 3; do
  atftp "${opts[@]}" -g -r "$file" -l "$out" "$server" >"$out.try" 2>&1 && exit 0
  grep -q 'unexpected OACK' "$out.try" || { tail -n 3 "$out.try"; exit 1; }
  echo "atftp: unexpected OACK, started again"
done
exit 1
