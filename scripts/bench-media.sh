#!/usr/bin/env bash
# Boot-media benchmarks, each against a reference in the same run:
#   Upload: a $SIZE_MIB MiB file of random bytes through `POST /api/v1/files/upload` and
#           `POST /api/v1/os-images/upload` (curl -F, logged in as admin) against
#           `cp --reflink=never` of the same file, all on the same filesystem (one temporary
#           directory); cp is timed with `sync <copy>` after it, since the server fsyncs an
#           upload before answering. Median of $RUNS rounds; the server's RSS is sampled
#           from /proc/<pid>/status every 50 ms during the uploads (and VmHWM, the kernel's
#           own peak, read after them). The OS image is not an ISO: its inspection ends
#           `failed`, which does not touch the upload's figure; it is awaited and deleted.
#   Serving: the same file in the boot root fetched by $PARTS parallel curl Range requests
#           (each a different 1/$PARTS slice) through Bootlane's public `GET /boot/<path>`
#           and from nginx serving the same directory (Debian's defaults: sendfile on,
#           tcp_nopush on, worker_processes auto, an access log); page cache warm; slices
#           written to /dev/shm; the slices concatenated must hash to the file's SHA-256,
#           or the run fails. Median of $RUNS rounds, servers alternating inside a round.
#           `[boot] rate_per_client = 0`: the per-client limiter is off, since all
#           requests come from one address (with the default burst of 200 it would not
#           refuse 20 either, but then the figure does not depend on it).
#   Fleet: $FLEET clients at once, each fetching a $FLEET_MB MB initrd (random
#           bytes) as 4 consecutive Range requests on one keep-alive connection (curl
#           --next), from Bootlane's `GET /boot/<path>` and from nginx; every answer must be a
#           206 of the right length and the first client's four slices must hash to the
#           file's SHA-256. Score: aggregate throughput, median of $RUNS, alternating.
# Usage: bench-media.sh <bootlane binary>. Prints markdown tables. MB = 10^6 bytes.
#   WHAT=all|upload|serving|fleet picks the rounds (default all); FLEET=200 FLEET_MB=40.
# Everything runs on the loopback of one network namespace created and removed here; all
# started is killed by PID; the temporary directories are removed on exit.
set -euo pipefail
BIN=$(readlink -f "${1:?usage: bench-media.sh <bootlane binary>}")
SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-3}
PARTS=${PARTS:-20}
WHAT=${WHAT:-all}
FLEET=${FLEET:-200}
FLEET_MB=${FLEET_MB:-40}
want() { [[ $WHAT == all || $WHAT == "$1" ]]; }

if [[ -z ${BENCH_MEDIA_NS:-} ]]; then
  # Outer level: the namespace, then this script again inside it.
  NS="bm$$"
  # Whatever is left in the namespace (nginx workers outliving their master) is killed by
  # PID before it goes.
  trap 'for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$NS" 2>/dev/null || true' EXIT
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  BENCH_MEDIA_NS=$NS ip netns exec "$NS" bash "$0" "$@"
  exit
fi

WORK=$(mktemp -d /tmp/bootlane-bench-media.XXXXXX)
DL=$(mktemp -d /dev/shm/bootlane-bench-media.XXXXXX)
PIDS=()
cleanup() {
  # TERM first: nginx's master takes its workers down with it.
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK" "$DL"
}
trap cleanup EXIT
API=http://127.0.0.1:8080
SIZE=$((SIZE_MIB << 20))
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}'; }
mbps() { awk -v s="$SIZE" -v t="$1" 'BEGIN {printf "%.0f", s / t / 1e6}'; }
median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
json() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

mkdir -p "$WORK/data/boot" "$WORK/cp"
if want upload || want serving; then
  echo "bench-media: writing a $SIZE_MIB MiB file of random bytes in $WORK" >&2
  head -c "$SIZE" /dev/urandom >"$WORK/src.bin"
  SHA=$(sha256sum "$WORK/src.bin" | cut -d' ' -f1)
  sync
fi

cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"
log = "warn"
[api]
listen = "127.0.0.1:8080"
# The whole fleet comes from one address: lift the per-client connection cap (default 64).
max_connections_per_client = 1024
[dns]
enabled = false
[dns.xdp]
mode = "off"
[boot]
rate_per_client = 0
EOF
BOOTLANE_ADMIN_PASSWORD=bench-admin-Kq7vX2pL "$BIN" serve --config "$WORK/bootlane.toml" 2>"$WORK/bootlane.log" &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 100); do curl -fs -o /dev/null "$API/api/v1/status" && break; sleep 0.1; done
curl -fs -o /dev/null "$API/api/v1/status" || { echo "Bootlane did not start" >&2; cat "$WORK/bootlane.log" >&2; exit 1; }
COOKIE=$(curl -fsi -H 'Content-Type: application/json' -d '{"username": "admin", "password": "bench-admin-Kq7vX2pL"}' \
  "$API/api/v1/auth/login" | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -1)
[[ -n $COOKIE ]] || { echo "login failed" >&2; exit 1; }

status_kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$SPID/status"; }
# Samples VmRSS (KiB) every 50 ms into $WORK/rss until $WORK/rss.stop exists.
rss_sampler() {
  local k v _
  while [[ ! -e $WORK/rss.stop ]]; do
    while read -r k v _; do [[ $k == VmRSS: ]] && { echo "$v"; break; }; done <"/proc/$SPID/status"
    sleep 0.05
  done >>"$WORK/rss"
}

cp_once() { # -> seconds of cp + sync of the copy
  local t0
  sync; t0=$(now)
  cp --reflink=never "$WORK/src.bin" "$WORK/cp/copy.bin"
  sync "$WORK/cp/copy.bin"
  elapsed "$t0"
  rm -f "$WORK/cp/copy.bin"
}
files_once() { # -> seconds of POST /files/upload (answered after the server's fsync)
  local t0 out
  sync; t0=$(now)
  out=$(curl -fsS -H "Cookie: $COOKIE" -F overwrite=true -F "file=@$WORK/src.bin;filename=media.img" \
    "$API/api/v1/files/upload")
  elapsed "$t0"
  [[ $(json 'd["data"]["sha256"], d["data"]["size"]' <<<"$out") == "('$SHA', $SIZE)" ]] ||
    { echo "the file upload answered $out, expected sha256 $SHA size $SIZE" >&2; exit 1; }
}
image_once() { # -> seconds of POST /os-images/upload; then awaits the inspection, deletes the image
  local t0 out id state
  sync; t0=$(now)
  out=$(curl -fsS -H "Cookie: $COOKIE" -F name=bench -F "file=@$WORK/src.bin;filename=bench.iso" \
    "$API/api/v1/os-images/upload")
  elapsed "$t0"
  id=$(json 'd["data"]["id"]' <<<"$out")
  for _ in $(seq 600); do
    out=$(curl -fsS -H "Cookie: $COOKIE" "$API/api/v1/os-images/$id")
    state=$(json 'd["data"]["state"]' <<<"$out")
    [[ $state == ready || $state == failed ]] && break
    sleep 0.2
  done
  [[ $(json 'd["data"]["sha256"]' <<<"$out") == "$SHA" ]] ||
    { echo "the OS image upload answered $out, expected sha256 $SHA" >&2; exit 1; }
  echo "  OS image $id: $state ($(json 'd["data"]["reason"]' <<<"$out"))" >&2
  curl -fsS -o /dev/null -H "Cookie: $COOKIE" -X DELETE "$API/api/v1/os-images/$id"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b / a}'; } # throughput ratio from times
mb() { awk -v k="$1" 'BEGIN {printf "%.1f", k * 1024 / 1e6}'; }

# ---- Upload
if want upload; then
rss_before=$(status_kib VmRSS)
rss_sampler &
SAMPLER=$!
PIDS+=("$SAMPLER")
for r in $(seq "$RUNS"); do
  c=$(cp_once); f=$(files_once); i=$(image_once)
  echo "  upload round $r: cp ${c}s, files ${f}s, os-images ${i}s" >&2
  echo "$c" >>"$WORK/t-cp"; echo "$f" >>"$WORK/t-files"; echo "$i" >>"$WORK/t-image"
done
touch "$WORK/rss.stop"; wait "$SAMPLER" || true
rss_peak=$(sort -n "$WORK/rss" | tail -1)
hwm=$(status_kib VmHWM)
tc=$(median <"$WORK/t-cp"); tf=$(median <"$WORK/t-files"); ti=$(median <"$WORK/t-image")
echo
echo "### Upload of a $SIZE_MIB MiB file (same filesystem, median of $RUNS; MB = 10^6 bytes)"
echo
echo "| path | time (s) | MB/s | vs cp |"
echo "|---|---:|---:|---:|"
echo "| \`cp\` + \`sync\` of the copy | $tc | $(mbps "$tc") | 1.00x |"
echo "| \`POST /api/v1/files/upload\` (curl -F) | $tf | $(mbps "$tf") | $(ratio "$tf" "$tc")x |"
echo "| \`POST /api/v1/os-images/upload\` (curl -F) | $ti | $(mbps "$ti") | $(ratio "$ti" "$tc")x |"
echo
echo "Server RSS: $(mb "$rss_before") MB before the uploads, peak $(mb "$rss_peak") MB sampled every 50 ms" \
  "during them ($(wc -l <"$WORK/rss") samples), VmHWM $(mb "$hwm") MB after them."
fi

# ---- Serving
# The file uploaded above (its SHA-256 checked) is the one served.
if want serving; then
  [[ -e $WORK/data/boot/media.img ]] || cp "$WORK/src.bin" "$WORK/data/boot/media.img"
  cat "$WORK/data/boot/media.img" >/dev/null # warm page cache, for both servers alike
fi
echo ok >"$WORK/data/boot/probe.txt"
NGINX=$(command -v nginx || { [[ -x /usr/sbin/nginx ]] && echo /usr/sbin/nginx; } || true)
if [[ -n $NGINX ]]; then
  mkdir -p "$WORK/nginx"
  cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off;
user root;
worker_processes auto;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 1024; }
http {
  sendfile on;
  tcp_nopush on;
  default_type application/octet-stream;
  access_log $WORK/nginx/access.log;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  fastcgi_temp_path $WORK/nginx/fastcgi;
  uwsgi_temp_path $WORK/nginx/uwsgi;
  scgi_temp_path $WORK/nginx/scgi;
  server {
    listen 127.0.0.1:8081;
    root $WORK/data/boot;
  }
}
EOF
  "$NGINX" -e "$WORK/nginx/error.log" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
  PIDS+=($!)
  for _ in $(seq 50); do curl -fs -o /dev/null http://127.0.0.1:8081/probe.txt && break; sleep 0.1; done
  curl -fs -o /dev/null http://127.0.0.1:8081/probe.txt || { echo "nginx did not start" >&2; cat "$WORK/nginx/error.log" >&2; exit 1; }
  NGINX_VERSION=$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')
else
  echo "bench-media: nginx is not installed (scripts/setup.sh installs it where it can); Bootlane alone" >&2
fi

ranges() { # ranges <url> -> seconds for $PARTS parallel Range fetches; verifies the bytes
  local url=$1 t0 i start end pids=() fails=0 part=$((SIZE / PARTS))
  rm -f "$DL"/part.* "$DL"/code.*
  t0=$(now)
  for ((i = 0; i < PARTS; i++)); do
    start=$((i * part)); end=$((i == PARTS - 1 ? SIZE - 1 : start + part - 1))
    curl -s --max-time 300 -r "$start-$end" -o "$DL/part.$i" -w '%{http_code}' "$url" >"$DL/code.$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
  elapsed "$t0"
  for ((i = 0; i < PARTS; i++)); do [[ $(cat "$DL/code.$i") == 206 ]] || fails=$((fails + 1)); done
  local got
  got=$(for ((i = 0; i < PARTS; i++)); do cat "$DL/part.$i"; done | sha256sum | cut -d' ' -f1)
  if ((fails)) || [[ $got != "$SHA" ]]; then
    echo "$url: $fails failed or non-206 fetches; slices hash to $got, the file is $SHA" >&2
    exit 1
  fi
}
if want serving; then
for r in $(seq "$RUNS"); do
  b=$(ranges "$API/boot/media.img"); echo "$b" >>"$WORK/s-bootlane"
  line="  serving round $r: Bootlane ${b}s"
  if [[ -n $NGINX ]]; then
    n=$(ranges http://127.0.0.1:8081/media.img); echo "$n" >>"$WORK/s-nginx"; line+=", nginx ${n}s"
  fi
  echo "$line" >&2
done
sb=$(median <"$WORK/s-bootlane")
echo
echo "### Serving a $SIZE_MIB MiB file: $PARTS parallel Range downloads (loopback, warm cache, median of $RUNS)"
echo
if [[ -n $NGINX ]]; then
  sn=$(median <"$WORK/s-nginx")
  echo "| server | wall time (s) | aggregate MB/s | vs nginx |"
  echo "|---|---:|---:|---:|"
  echo "| Bootlane \`GET /boot/<path>\` | $sb | $(mbps "$sb") | $(ratio "$sb" "$sn")x |"
  echo "| nginx $NGINX_VERSION (sendfile on) | $sn | $(mbps "$sn") | 1.00x |"
else
  echo "| server | wall time (s) | aggregate MB/s |"
  echo "|---|---:|---:|"
  echo "| Bootlane \`GET /boot/<path>\` | $sb | $(mbps "$sb") |"
fi
fi

# ---- Fleet
fleet() { # fleet <base url> -> seconds for $FLEET clients each fetching initrd.img in 4 ranges
  local url=$1/initrd.img t0 i k a b q=$((FSIZE / 4)) pids=() fails=0 args
  rm -f "$DL"/fleet.*
  t0=$(now)
  for ((i = 0; i < FLEET; i++)); do
    args=()
    for k in 0 1 2 3; do
      a=$((k * q)); b=$((k == 3 ? FSIZE - 1 : a + q - 1))
      ((k)) && args+=(--next)
      args+=(-s --max-time 300 -r "$a-$b" -w '%{http_code} %{size_download}\n' "$url")
      if ((i == 0)); then args+=(-o "$DL/fleet.slice.$k"); else args+=(-o /dev/null); fi
    done
    curl "${args[@]}" >"$DL/fleet.codes.$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
  elapsed "$t0"
  local bad
  bad=$(cat "$DL"/fleet.codes.* | awk -v q="$q" -v last=$((FSIZE - 3 * q)) -v n=$((FLEET * 4)) \
    '$1 == 206 && ($2 == q || $2 == last) {ok++} END {print n - ok}')
  local got
  got=$(cat "$DL"/fleet.slice.{0,1,2,3} | sha256sum | cut -d' ' -f1)
  if ((fails || bad)) || [[ $got != "$FSHA" ]]; then
    echo "$url: $fails clients failed, $bad answers not a 206 of the slice's length; client 0's slices hash to $got, the file is $FSHA" >&2
    exit 1
  fi
}
if want fleet; then
  FSIZE=$((FLEET_MB * 1000000))
  head -c "$FSIZE" /dev/urandom >"$WORK/data/boot/initrd.img"
  FSHA=$(sha256sum "$WORK/data/boot/initrd.img" | cut -d' ' -f1)
  for r in $(seq "$RUNS"); do
    b=$(fleet "$API/boot"); echo "$b" >>"$WORK/f-bootlane"
    line="  fleet round $r: Bootlane ${b}s"
    if [[ -n $NGINX ]]; then
      n=$(fleet http://127.0.0.1:8081); echo "$n" >>"$WORK/f-nginx"; line+=", nginx ${n}s"
    fi
    echo "$line" >&2
  done
  gbps() { awk -v s=$((FLEET * FSIZE)) -v t="$1" 'BEGIN {printf "%.0f", s / t / 1e6}'; }
  fb=$(median <"$WORK/f-bootlane")
  echo
  echo "### A fleet: $FLEET clients at once, each a $FLEET_MB MB initrd in 4 Range requests (loopback, warm cache, median of $RUNS)"
  echo
  echo "| server | wall time (s) | aggregate MB/s | vs nginx |"
  echo "|---|---:|---:|---:|"
  if [[ -n $NGINX ]]; then
    fn=$(median <"$WORK/f-nginx")
    echo "| Bootlane \`GET /boot/<path>\` | $fb | $(gbps "$fb") | $(ratio "$fb" "$fn")x |"
    echo "| nginx $NGINX_VERSION (sendfile on) | $fn | $(gbps "$fn") | 1.00x |"
  else
    echo "| Bootlane \`GET /boot/<path>\` | $fb | $(gbps "$fb") | |"
  fi
fi
