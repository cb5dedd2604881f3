#!/usr/bin/env bash
# End-to-end test of unattended installs, run by hand as root or by `cargo xtask test`
# (tests/tests/integration/install_netns.rs):
#
#   scripts/e2e-install.sh <path to the bootlane binary>
#
# In a server namespace (a bridge with a tap for QEMU) and a client namespace (curl):
#   1. the real Debian installer kernel and initrd (debian-installer-12-netboot-amd64) go
#      into the boot root through the file API; a profile boots them;
#   2. an answer template is made from the Debian preset, a QEMU BIOS machine is registered
#      as a host, and an install task binds them;
#   3. abuse: 1,000 answer requests with random tokens from the client are all refused or
#      rate-limited (never served), and every refusal is the same text;
#   4. the machine boots through iPXE with `auto=true priority=critical url=<answer URL>`:
#      the installer fetches its preseed from Bootlane (the task becomes `installing`), the
#      preseed's early command reports progress (seen as an event); the test reads the
#      serial console for the installer's progress and says where it stopped (no package
#      mirror offline);
#   5. a `done` report (with the token the machine's own console shows on its kernel
#      command line) from another address is refused, and from the machine's leased
#      address (taken over by the client once the VM is stopped) makes the task `installed`, and booting the same machine again gets
#      the local-boot script (the loop guard), seen on its serial console;
#   6. each boot is one boot session: the install's shows DHCP, the task's iPXE script,
#      the kernel and initrd over HTTP, the answer-file fetch and the installer's reports
#      (verdict `handed_to_installer`, then `installed` after the done report), and the
#      second boot is a new session with the verdict `booted_local_disk`.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
DI=/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64
[[ -f $DI/linux && -f $DI/initrd.gz ]] || { echo "missing $DI (scripts/setup.sh installs debian-installer-12-netboot-amd64)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-install 10.81.0
MAC=52:54:00:77:10:01
task_state() { api GET "/netboot/tasks/$TASK" | json 'd["data"]["state"]'; }
# Strips the installer's screen/newt escape sequences from the serial log.
serial_text() { tr -d '\r' <"$1" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1b[()][0-9A-Z]//g' | tr -s ' ' || true; }

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the installer's files, a profile -------------------------------------------------
ROOT=$(api GET /files/root | json 'd["data"]["path"]')
mkdir -p "$ROOT/d-i"
for f in linux initrd.gz; do
    in_cli curl -fsS -b "$WORK/jar" -F dir=d-i -F "file=@$DI/$f;filename=$f" "$BASE/api/v1/files/upload" >/dev/null ||
        fail "uploading $f"
done
PROFILE=$(api POST /profiles '{"name":"d-i","entries":[{"label":"Debian installer","type":"linux","kernel":"d-i/linux","initrds":["d-i/initrd.gz"],"cmdline":"console=ttyS0"}]}' |
    json 'd["data"]["id"]') || fail "profile"

# ---- 2. the Debian preset as a template, the host, the task -----------------------------
api GET /netboot/answer-templates/presets >"$WORK/presets.json" || fail "presets"
PRESET=$(json '[p for p in d["data"]["presets"] if p["format"] == "preseed"][0]' <"$WORK/presets.json")
python3 - "$WORK/presets.json" >"$WORK/template.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["data"]["presets"]
p = [p for p in d if p["format"] == "preseed"][0]
print(json.dumps({"name": "e2e-debian", "format": "preseed", "content": p["content"], "description": "from the Debian preset"}))
EOF
TEMPLATE=$(api POST /netboot/answer-templates "$(cat "$WORK/template.json")" | json 'd["data"]["id"]') || fail "template"
HOST=$(api POST /hosts "{\"name\":\"inst01\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE}" | json 'd["data"]["id"]') || fail "host"
TASK=$(api POST /netboot/tasks "{\"host_id\":$HOST,\"source\":{\"type\":\"profile\",\"profile_id\":$PROFILE},\"template_id\":$TEMPLATE,\"extra_cmdline\":\"DEBIAN_FRONTEND=text\"}" |
    json 'd["data"]["id"]') || fail "task"
[[ $(task_state) == pending ]] || fail "the new task is not pending"
[[ $(in_cli curl -fsS "$BASE/api/v1/netboot/task/by-mac/$MAC" | json 'd["data"]["action"]') == install ]] || fail "by-mac"
log "task $TASK: host inst01 ($MAC), profile d-i, template e2e-debian (the preseed preset)"

# ---- 3. abuse: random tokens ------------------------------------------------------------
python3 - "$BASE" "$TASK" >"$WORK/abuse.cfg" <<'EOF'
import secrets, sys
base, task = sys.argv[1], int(sys.argv[2])
for i in range(1000):
    # Half on the real task id, half on others: the answers must not differ.
    tid = task if i % 2 == 0 else task + 1 + i
    print(f'url = "{base}/api/v1/netboot/answer/{tid}?token={secrets.token_hex(32)}"')
    print(f'output = "/dev/null"')
    print('write-out = "%{http_code}\\n"')
EOF
in_cli curl -s -K "$WORK/abuse.cfg" >"$WORK/abuse.codes" || true
OK=$(grep -c '^200$' "$WORK/abuse.codes" || true)
F=$(grep -c '^403$' "$WORK/abuse.codes" || true)
L=$(grep -c '^429$' "$WORK/abuse.codes" || true)
((OK == 0 && F + L == 1000 && F > 0 && L > 0)) || fail "random tokens: $OK served, $F refused, $L rate-limited"
# Let the client's rate bucket refill first: otherwise one of the two requests below may be
# rate-limited (429) and the other refused (403), which says nothing about leaks.
sleep 2
A=$(in_cli curl -s -w " %{http_code}" "$BASE/api/v1/netboot/answer/$TASK?token=$(printf '%064d' 0)")
B=$(in_cli curl -s -w " %{http_code}" "$BASE/api/v1/netboot/answer/999999?token=$(printf '%064d' 0)")
[[ "$A" == "$B" ]] || fail "the refusal differs for an existing task: '$A' vs '$B'"
grep -q "inst01\|$MAC" <<<"$A" && fail "the refusal leaks the task: $A"
REFUSED_EVENTS=$(api GET '/events?kind=install.token.refused&size=1' | json 'd["data"]["total"]')
log "1000 random tokens: $F refused (403), $L rate-limited (429), 0 served; refusals identical; $REFUSED_EVENTS refusal events"
sleep 2 # let the client's rate bucket refill

# ---- 4. the machine installs -------------------------------------------------------------
log "booting the machine into the Debian installer (up to 300 s)"
: >"$WORK/serial.log"
ip netns exec "$SRV" timeout 400 qemu-system-x86_64 -accel tcg -m 1024 -machine pc,graphics=off \
    -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot -boot n \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
    -device e1000,netdev=n0,mac=$MAC >"$WORK/qemu.log" 2>&1 &
PIDS+=($!)
Q_PID=$!
T0=$(date +%s)
STATE=pending
while :; do
    STATE=$(task_state)
    PROGRESS=$(api GET "/events?kind=install.task.report&resource=install_task&resource_id=$TASK&size=1" | json 'd["data"]["total"]')
    if [[ $STATE == installing && $PROGRESS -ge 1 ]]; then break; fi
    (($(date +%s) - T0 < 300)) || fail "after 300 s the task is $STATE with $PROGRESS reports; see $WORK/serial.log"
    kill -0 "$Q_PID" 2>/dev/null || fail "QEMU ended; the task is $STATE"
    sleep 3
done
log "the installer fetched its preseed (task installing) and reported progress after $(($(date +%s) - T0)) s"
api GET "/netboot/tasks/$TASK" >"$WORK/task.json"
log "its reports: $(json '[(r["kind"], r["message"][:60]) for r in d["data"]["reports"]]' <"$WORK/task.json")"
# The boot session: DHCP, the install task's iPXE script, the installer's kernel and
# initrd over HTTP, the answer-file fetch and the installer's report, handed to the
# installer.
boot_session_check "$MAC" handed_to_installer dhcp:discover ipxe http:kernel http:initrd installer:answer installer:report
INSTALL_SESSION=$SESSION_ID
# Let the installer go on until it needs the package mirror, then say where it stopped.
sleep 45
# The last distinct lines of text the installer put on its console.
STOPPED=$(serial_text "$WORK/serial.log" | grep -ao "[A-Za-z][A-Za-z ,.'()/:-]\{12,\}" | awk '!seen[$0]++' | tail -n 4 | tr '\n' '|' || true)
log "the installer's last screens on the serial console: ${STOPPED:-unknown}"
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true

# ---- 5. done, then the local boot ----------------------------------------------------------
TOKEN=$(tr -d '\r' <"$WORK/serial.log" | grep -aoE "answer/$TASK\?token=[0-9a-f]{64}" | head -n1 | sed 's/.*token=//')
[[ ${#TOKEN} -eq 64 ]] || fail "the answer URL is not on the machine's kernel command line (serial)"
# The token is bound to the machine: from the client's own address the report is refused
# like a wrong token; from the machine's leased address (taken over now that the VM is
# stopped) it is taken.
in_cli curl -fsS -o /dev/null -X POST --data-binary 'x' "$BASE/api/v1/netboot/report/$TASK/$TOKEN/done" 2>/dev/null &&
    fail "a report from another address than the machine's was taken"
MIP=$(api GET "/leases" | json "[l['ip'] for l in d['data']['leases'] if l['mac'] == '$MAC'][0]") || fail "the machine's lease"
in_cli ip addr add "$MIP/24" dev vcli
R=$(in_cli curl -fsS --interface "$MIP" -X POST --data-binary 'installed by e2e (no mirror offline)' "$BASE/api/v1/netboot/report/$TASK/$TOKEN/done") ||
    fail "the done report"
in_cli ip addr del "$MIP/24" dev vcli
[[ $(json 'd["data"]["state"]' <<<"$R") == installed ]] || fail "done did not make the task installed: $R"
[[ $(in_cli curl -fsS "$BASE/api/v1/netboot/task/by-mac/$MAC" | json 'd["data"]["action"]') == local ]] || fail "by-mac after done"
log "done reported: task installed"
boot_session_check "$MAC" installed
[[ $SESSION_ID == "$INSTALL_SESSION" ]] || fail "the done report began another session ($SESSION_ID, not $INSTALL_SESSION)"
: >"$WORK/serial2.log"
ip netns exec "$SRV" timeout 120 qemu-system-x86_64 -accel tcg -m 256 -machine pc,graphics=off \
    -display none -serial "file:$WORK/serial2.log" -monitor none -no-reboot -boot n \
    -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
    -device e1000,netdev=n0,mac=$MAC >"$WORK/qemu2.log" 2>&1 &
PIDS+=($!)
Q_PID=$!
T0=$(date +%s)
until grep -aq "booting from the local disk" "$WORK/serial2.log"; do
    (($(date +%s) - T0 < 110)) || fail "the second boot did not get the local-boot script; see $WORK/serial2.log"
    sleep 2
done
grep -aq "install task $TASK for $MAC is installed" "$WORK/serial2.log" || fail "the local-boot script does not name the task"
log "second boot: the local-boot script after $(($(date +%s) - T0)) s (no reinstall)"
boot_session_check "$MAC" booted_local_disk dhcp:discover ipxe
[[ $SESSION_ID != "$INSTALL_SESSION" ]] || fail "the second boot did not begin a new session"
kill "$Q_PID" 2>/dev/null || true
log PASS
