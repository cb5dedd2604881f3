#!/usr/bin/env bash
# End-to-end test of post-install scripts: a machine (a shell in a network namespace
# standing in for the installed system) pulls its bundle with curl, runs it, and its
# reports appear as events and in its host's report list. Steps:
#   1. scripts (sh, python, bash) and two baselines (the host's, and the site default that
#      repeats one script and has a failing one before a last one) over the API;
#   2. the machine gets a DHCP lease for its MAC, its boot script gives it the install
#      task's token (as the installer's kernel command line would), and it fetches its
#      answer file (the task becomes `installing`);
#   3. a wrong token and an unknown task get the same 403 from the pull and report routes;
#   4. the machine pulls `bundle.sh` with curl and runs it with sh: the scripts run in
#      order, each once, rendered with the baselines' variables; the bundle stops at the
#      failing script with its exit code; the last script never runs;
#   5. its three reports are in GET /hosts/{id}/script-reports (exit codes, output) and
#      are events (two `script.run.succeeded`, one `script.run.failed`).
# Traffic stays inside the namespaces it creates; everything it started is stopped and
# the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-baseline 10.84.0
MAC=52:54:00:84:00:01

e2e_netns
e2e_start_bootlane "$BIN"
ROOT="$WORK/installed"
mkdir -p "$ROOT"

# ---- 1. scripts and baselines ------------------------------------------------------------
mkscript() { api POST /scripts "$1" | json 'd["data"]["id"]'; }
MOTD=$(mkscript "$(python3 -c 'import json,sys; print(json.dumps({"name":"motd","type":"sh","variables":[{"name":"greeting","default":"hello"},{"name":"root"}],
  "content":"echo \"{{ greeting }} {{ host.name }} ({{ host.mac }})\" > {{ root }}/motd\necho motd written\n"}))')") || fail "script motd"
FACTS=$(mkscript "$(python3 -c 'import json; print(json.dumps({"name":"facts","type":"python","variables":[{"name":"root"}],
  "content":"import json, platform\nwith open(\"{{ root }}/facts.json\", \"w\") as f:\n    json.dump({\"system\": platform.system(), \"baseline\": \"{{ baseline.name }}\"}, f)\nprint(\"facts written\")\n"}))')") || fail "script facts"
NTP=$(mkscript "$(python3 -c 'import json; print(json.dumps({"name":"ntp","type":"bash","render":False,
  "content":"arr=(a b)\necho \"checking ${#arr[@]} NTP servers\"\necho \"no NTP server answers\" >&2\nexit 4\n"}))')") || fail "script ntp"
NEVER=$(mkscript "$(python3 -c 'import json; print(json.dumps({"name":"never","type":"sh","variables":[{"name":"root"}],
  "content":"touch {{ root }}/never\n"}))')") || fail "script never"
HOSTB=$(api POST /baselines "{\"name\":\"web\",\"script_ids\":[$MOTD,$FACTS],\"variables\":{\"greeting\":\"welcome to\",\"root\":\"$ROOT\"}}" |
    json 'd["data"]["id"]') || fail "baseline web"
api POST /baselines "{\"name\":\"site\",\"is_default\":true,\"script_ids\":[$MOTD,$NTP,$NEVER],\"variables\":{\"root\":\"$ROOT\"}}" >/dev/null ||
    fail "baseline site"
HOST=$(api POST /hosts "{\"name\":\"web1\",\"mac\":\"$MAC\",\"baseline_id\":$HOSTB}" | json 'd["data"]["id"]') || fail "host"
PROFILE=$(api POST /profiles '{"name":"d-i","entries":[{"label":"Debian installer","type":"linux","kernel":"d-i/linux","initrds":["d-i/initrd.gz"]}]}' |
    json 'd["data"]["id"]') || fail "profile"
TPL=$(api POST /netboot/answer-templates '{"name":"deb","preset":"debian"}' | json 'd["data"]["id"]') || fail "template"
TASK=$(api POST /netboot/tasks "{\"host_id\":$HOST,\"source\":{\"type\":\"profile\",\"profile_id\":$PROFILE},\"template_id\":$TPL}" |
    json 'd["data"]["id"]') || fail "task"
log "scripts motd=$MOTD facts=$FACTS ntp=$NTP never=$NEVER; host web1 ($MAC) with baseline web; site default; task $TASK"

# ---- 2. the machine: a lease, its boot script, its answer --------------------------------
cat >"$WORK/udhcpc.sh" <<'EOF'
#!/bin/sh
[ "$1" = "bound" ] || exit 0
ip addr flush dev "$interface"
ip addr add "$ip/$mask" dev "$interface"
EOF
chmod +x "$WORK/udhcpc.sh"
in_cli ip link set vcli address "$MAC"
in_cli udhcpc -i vcli -f -q -n -t 4 -T 2 -s "$WORK/udhcpc.sh" >"$WORK/udhcpc.log" 2>&1 || fail "no DHCP lease (see udhcpc.log)"
in_cli curl -fsS "$BASE/boot/ipxe?mac=$MAC" >"$WORK/boot.ipxe" || fail "boot script"
TOKEN=$(grep -o 'token=[0-9a-f]\{64\}' "$WORK/boot.ipxe" | head -n 1 | cut -d= -f2)
[[ -n $TOKEN ]] || fail "no token in the machine's boot script: $(cat "$WORK/boot.ipxe")"
in_cli curl -fsS -o "$WORK/answer" "$BASE/api/v1/netboot/answer/$TASK?token=$TOKEN" || fail "answer file"
grep -q "baseline/$TASK/bundle.sh?token=$TOKEN" "$WORK/answer" || fail "the preseed does not call the bundle"
log "lease $(in_cli ip -4 -o addr show vcli | awk '{print $4}'), token from the boot script, answer fetched (it calls the bundle)"

# ---- 3. refusals --------------------------------------------------------------------------
ZERO=$(printf '%064d' 0)
A=$(in_cli curl -s -w ' %{http_code}' "$BASE/api/v1/netboot/baseline/$TASK/bundle.sh?token=$ZERO")
B=$(in_cli curl -s -w ' %{http_code}' "$BASE/api/v1/netboot/baseline/424242/bundle.sh?token=$ZERO")
C=$(in_cli curl -s -w ' %{http_code}' -X POST "$BASE/api/v1/netboot/baseline/$TASK/report?token=$ZERO&script=$MOTD&exit_code=0")
[[ $A == "$B" && $A == "$C" && $A == *" 403" ]] || fail "refusals differ: '$A' / '$B' / '$C'"
grep -q "web1\|$MAC\|motd" <<<"$A" && fail "the refusal leaks: $A"
log "wrong token, unknown task and a forged report: the same 403, nothing named"

# ---- 4. pull and run ----------------------------------------------------------------------
in_cli curl -fsS -o "$WORK/bundle.sh" "$BASE/api/v1/netboot/baseline/$TASK/bundle.sh?token=$TOKEN" || fail "bundle"
set +e
in_cli sh "$WORK/bundle.sh" >"$WORK/bundle.out" 2>&1
RC=$?
set -e
[[ $RC -eq 4 ]] || fail "the bundle exited $RC, not the failing script's 4: $(cat "$WORK/bundle.out")"
grep -qx "welcome to web1 ($MAC)" "$ROOT/motd" || fail "motd: $(cat "$ROOT/motd" 2>&1)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d=={"system":"Linux","baseline":"web"}, d' "$ROOT/facts.json" ||
    fail "facts.json"
[[ -e $ROOT/never ]] && fail "the script after the failure ran"
[[ $(grep -c "running script motd" "$WORK/bundle.out") -eq 1 ]] || fail "motd did not run exactly once"
grep -q "checking 2 NTP servers" "$WORK/bundle.out" || fail "a verbatim (render=false) script was changed"
log "bundle: motd, facts, ntp ran in order (exit 4 stops it), never did not run"

# ---- 5. reports ---------------------------------------------------------------------------
api GET "/hosts/$HOST/script-reports" >"$WORK/reports.json" || fail "reports"
python3 - "$WORK/reports.json" "$MOTD" "$FACTS" "$NTP" <<'EOF' || fail "reports: $(cat "$WORK/reports.json")"
import json, sys
d = json.load(open(sys.argv[1]))["data"]
got = [(r["script_id"], r["exit_code"]) for r in reversed(d)]
want = [(int(sys.argv[2]), 0), (int(sys.argv[3]), 0), (int(sys.argv[4]), 4)]
assert got == want, (got, want)
assert "no NTP server answers" in d[0]["output"], d[0]
assert all(r["duration_ms"] >= 0 and r["from"] for r in d), d
EOF
OK=$(api GET '/events?kind=script.run.succeeded&size=1' | json 'd["data"]["total"]')
BAD=$(api GET '/events?kind=script.run.failed&size=1' | json 'd["data"]["total"]')
[[ $OK -eq 2 && $BAD -eq 1 ]] || fail "events: $OK succeeded, $BAD failed"
log "reports: motd 0, facts 0, ntp 4 (with its output) in the host's list; events: $OK succeeded, $BAD failed"
log PASS
