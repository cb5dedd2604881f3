# Shared set-up of the namespace end-to-end scripts (e2e-media.sh, e2e-install.sh):
# sourced, never run. Call `e2e_init <tag> <net>` (net: the /24's first three octets, e.g.
# 10.79.0), then `e2e_netns` and `e2e_start_bootlane`. Defines, for the caller:
#   SRV, CLI, WORK, PIDS, SERVER (<net>.1), BASE (http://<net>.1:8080, the boot routes);
#   a script may set E2E_API_TOML (the [api] section's lines), E2E_MGMT (the API's base
#   URL when it is not $BASE) and E2E_CURL_TLS (curl arguments for it, e.g. --cacert);
#   log, fail, in_srv, in_cli, plainlog, json, api (METHOD PATH [JSON], from the client,
#   2xx or fail), status (METHOD PATH [curl args] -> HTTP code, body in $WORK/body);
#   a trap that stops every PID in PIDS (start long-lived processes with
#   `ip netns exec "$SRV" ... &`, never through a function: its subshell's PID would not
#   reach them) and deletes the namespaces; KEEP=1 keeps $WORK after a pass.

e2e_init() {
    E2E_TAG=$1
    E2E_NET=$2
    local id="$$-$RANDOM"
    SRV="bl-s-$id"
    CLI="bl-c-$id"
    WORK=$(mktemp -d /tmp/bootlane-e2e.XXXXXX)
    PIDS=()
    SERVER="$E2E_NET.1"
    BASE="http://$SERVER:8080"
    trap e2e_cleanup EXIT INT TERM
}

log() { printf '[%s] %s\n' "$E2E_TAG" "$*"; }
fail() {
    printf '[%s] FAIL: %s\n' "$E2E_TAG" "$*" >&2
    if [[ -f "$WORK/bootlane.log" ]]; then
        echo "---- last lines of the Bootlane log ----" >&2
        tail -n 40 "$WORK/bootlane.log" >&2 || true
    fi
    exit 1
}
e2e_cleanup() {
    local rc=$?
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    ip netns del "$CLI" 2>/dev/null || true
    ip netns del "$SRV" 2>/dev/null || true
    if [[ $rc -eq 0 && -z "${KEEP:-}" ]]; then rm -rf "$WORK"; else echo "[$E2E_TAG] artefacts kept in $WORK" >&2; fi
    exit $rc
}
in_srv() { ip netns exec "$SRV" "$@"; }
in_cli() { ip netns exec "$CLI" "$@"; }
plainlog() { sed 's/\x1b\[[0-9;]*m//g' "$WORK/bootlane.log" || true; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
api() {
    # shellcheck disable=SC2086 # E2E_CURL_TLS is a list of curl arguments
    in_cli curl -fsS -m 20 ${E2E_CURL_TLS:-} -b "$WORK/jar" -c "$WORK/jar" -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data-binary "$3"} "${E2E_MGMT:-$BASE}/api/v1$2"
}
status() {
    local m=$1 p=$2
    shift 2
    in_cli curl -sS -m 20 -b "$WORK/jar" -o "$WORK/body" -w '%{http_code}' -X "$m" "$@" "$BASE$p"
}

# The server namespace (a bridge br0 at $SERVER with a tap for QEMU) and the client
# namespace (<net>.9 on a veth into the bridge).
e2e_netns() {
    log "namespaces $SRV / $CLI, work dir $WORK"
    ip netns add "$SRV"
    ip netns add "$CLI"
    ip link add vsrv netns "$SRV" type veth peer name vcli netns "$CLI"
    in_srv ip link set lo up
    in_cli ip link set lo up
    in_srv ip link add br0 type bridge
    in_srv ip addr add "$SERVER/24" dev br0
    in_srv ip link set vsrv master br0
    in_srv ip link set vsrv up
    in_srv ip link set br0 up
    in_cli ip addr add "$E2E_NET.9/24" dev vcli
    in_cli ip link set vcli up
    in_srv ip tuntap add dev tap0 mode tap
    in_srv ip link set tap0 master br0
    in_srv ip link set tap0 up
}

# Bootlane <binary> in the server namespace with one DHCP subnet on br0 (<net>.100-150,
# unless E2E_DHCP4=0), XDP off; waits for it (at $BASE) and logs in as admin.
e2e_start_bootlane() {
    # Set apart: quotes inside ${...:-...} in a here-document would be removed.
    local api_toml=${E2E_API_TOML:-'listen = "0.0.0.0:8080"'}
    cat >"$WORK/bootlane.toml" <<EOF2
data_dir = "$WORK/data"

[api]
$api_toml

[dns.xdp]
mode = "off"
EOF2
    # E2E_DHCP4=0: no IPv4 DHCP subnet (an IPv6-only link, e2e-ipv6.sh).
    if [[ "${E2E_DHCP4:-1}" != 0 ]]; then
        cat >>"$WORK/bootlane.toml" <<EOF2

[[dhcp.subnets]]
mode = "server"
interface = "br0"
cidr = "$E2E_NET.0/24"
range_start = "$E2E_NET.100"
range_end = "$E2E_NET.150"
router = "$SERVER"
lease_time_secs = 600
EOF2
    fi
    # Extra sections a script needs (E2E_EXTRA_TOML), appended as is.
    printf '%s\n' "${E2E_EXTRA_TOML:-}" >>"$WORK/bootlane.toml"
    log "starting Bootlane"
    ip netns exec "$SRV" env BOOTLANE_LOG="info,bootlane=debug" BOOTLANE_ADMIN_PASSWORD=e2e-admin-Rk4mZ8qW "$1" serve \
        --config "$WORK/bootlane.toml" >"$WORK/bootlane.log" 2>&1 &
    PIDS+=($!)
    local pid=$!
    for _ in $(seq 1 60); do
        if in_cli curl -fs -o /dev/null "$BASE/boot/ipxe"; then break; fi
        kill -0 "$pid" 2>/dev/null || fail "Bootlane exited during start-up"
        sleep 0.5
    done
    in_cli curl -fs -o /dev/null "$BASE/boot/ipxe" || fail "Bootlane did not come up"
    api POST /auth/login '{"username":"admin","password":"e2e-admin-Rk4mZ8qW"}' >/dev/null || fail "API login"
}

# e2e_upload <dir> <file...>: uploads each file into <dir> of the boot root through the file
# API (multipart, as an operator's curl would), failing the test on the first refusal.
e2e_upload() {
    local dir=$1 f
    shift
    for f in "$@"; do
        # shellcheck disable=SC2086 # E2E_CURL_TLS is a list of curl arguments
        in_cli curl -fsS ${E2E_CURL_TLS:-} -b "$WORK/jar" -F "dir=$dir" -F "file=@$f;filename=$(basename "$f")" \
            "${E2E_MGMT:-$BASE}/api/v1/files/upload" >/dev/null || fail "uploading $f into $dir"
    done
}

# e2e_ovmf <mac> [qemu args...]: a QEMU q35 machine with OVMF ($CODE, a copy of $VARS; the
# firmware's own network stack, no iPXE ROM) on tap0 of the server namespace, its serial
# console in $WORK/serial.log, killed after 320 s at the latest; sets Q_PID and T0.
e2e_ovmf() {
    local mac=$1
    shift
    cp "$VARS" "$WORK/vars.fd"
    : >"$WORK/serial.log"
    T0=$(date +%s)
    ip netns exec "$SRV" timeout 320 qemu-system-x86_64 -accel tcg -m 512 -machine q35 \
        -drive if=pflash,format=raw,unit=0,file="$CODE",readonly=on \
        -drive if=pflash,format=raw,unit=1,file="$WORK/vars.fd" "$@" \
        -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device virtio-net-pci,netdev=n0,mac="$mac",romfile= >"$WORK/qemu.log" 2>&1 &
    Q_PID=$!
    PIDS+=("$Q_PID")
}

# e2e_transfer_complete <file>: the server logged a completed TFTP transfer of <file> (with
# or without a leading slash). The machine can start the kernel a moment before the server
# has taken in the initrd's last ACK (the transfer threads run niced, behind the emulators),
# so the line is awaited for up to 30 s before the check fails.
e2e_transfer_complete() {
    local f=$1 t0
    t0=$(date +%s)
    until plainlog | grep -a "TFTP transfer ended" | grep -a "file=/\?$f " | grep -q "Complete"; do
        (($(date +%s) - t0 >= 30)) && fail "no completed TFTP transfer of $f"
        sleep 1
    done
}

# e2e_wait_serial <serial log> <pattern> <seconds> <qemu pid>: waits until the pattern is on
# the serial console; on timeout or when QEMU ends first, prints the last TFTP transfers and
# the console (escape sequences stripped) and fails.
e2e_wait_serial() {
    local log=$1 pattern=$2 secs=$3 pid=$4 t0
    t0=$(date +%s)
    until grep -aq -- "$pattern" "$log"; do
        if (($(date +%s) - t0 >= secs)) || ! kill -0 "$pid" 2>/dev/null; then
            echo "---- TFTP transfers ----" >&2
            plainlog | grep -a "TFTP" | tail -n 20 >&2 || true
            echo "---- serial console ($log) ----" >&2
            tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | grep -av '^ *$' | tail -n 30 >&2 || true
            fail "no '$pattern' on the serial console after $(($(date +%s) - t0)) s"
        fi
        sleep 2
    done
}

# Waits up to 30 s for the newest boot session of MAC (`GET /boot-sessions?mac=`) to have
# the verdict VERDICT and a step of each KIND given (`http:kernel`: a step of kind http
# whose role is kernel; `installer:answer`: the answer-file fetch; `ipxe`: any iPXE
# script), then logs its timeline and sets SESSION_ID and SESSION_REASON; fails with the
# timeline otherwise. Usage: boot_session_check MAC VERDICT [KIND...]
boot_session_check() {
    local mac=$1 verdict=$2 t0 id
    shift 2
    t0=$(date +%s)
    while :; do
        id=$(api GET "/boot-sessions?mac=$mac&limit=1" | json 'd["data"][0]["id"] if d["data"] else ""') || id=""
        if [[ -n $id ]] && api GET "/boot-sessions/$id" >"$WORK/session-$id.json" &&
            python3 - "$WORK/session-$id.json" "$verdict" "$@" >"$WORK/session-$id.txt" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))["data"]
want, kinds = sys.argv[2], sys.argv[3:]
print(f"session {s['id']} of {s['mac']} ({s['host']}): {s['verdict']}: {s['reason']}; kernel after {s['kernel_ms']} ms")
for st in s["steps"]:
    print(f"  +{st['offset_ms']:>7} ms {st['kind']:<10} {'ok' if st['ok'] else 'FAILED':<6} {st['summary']}")
def has(k):
    kind, _, role = k.partition(":")
    for st in s["steps"]:
        d = st["details"]
        if st["kind"] != kind:
            continue
        if not role or d.get("role") == role or (role == "answer" and d.get("state") == "installing") \
                or (role == "report" and d.get("report")) or d.get("message") == role:
            return True
    return False
missing = [k for k in kinds if not has(k)]
print(f"missing steps: {missing}" if missing else "all expected steps seen")
sys.exit(0 if s["verdict"] == want and not missing else 1)
PY
            SESSION_ID=$id
            SESSION_REASON=$(json 'd["data"]["reason"]' <"$WORK/session-$id.json")
            while IFS= read -r l; do log "$l"; done <"$WORK/session-$id.txt"
            return 0
        fi
        if (($(date +%s) - t0 >= 30)); then
            cat "$WORK/session-$id.txt" >&2 2>/dev/null || true
            fail "the boot session of $mac is not $verdict with steps $*"
        fi
        sleep 1
    done
}
