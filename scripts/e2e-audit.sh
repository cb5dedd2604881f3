#!/usr/bin/env bash
# End to end: the audit log's hash chain and its syslog copy against the real binary and
# a real rsyslogd. Starts bootlane on loopback with `[audit] syslog` pointed at a socket
# rsyslogd (imuxsock) reads and writes to a file, makes audited writes through the API,
# then checks: rsyslogd parsed each copy as RFC 5424 (APP-NAME bootlane, MSGID audit) with
# the entry's JSON; `bootlane audit verify` says ok while the server runs; an entry edited
# in the data directory makes it exit 1 naming the entry after it; the API agrees. Then
# logins through curl: the password policy's 400 and the failed-login 429.
# Usage: scripts/e2e-audit.sh [path/to/bootlane]   (needs rsyslog: scripts/setup.sh)
set -euo pipefail
bin=${1:-target/debug/bootlane}
command -v rsyslogd >/dev/null || { echo "e2e-audit: rsyslogd missing (apt-get install rsyslog)" >&2; exit 1; }
work=$(mktemp -d /tmp/bootlane-e2e-audit.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api_port=$(free_port)
dns_port=$(free_port)
password="audit-$(head -c 18 /dev/urandom | base64 | tr -d '/+=')"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "e2e-audit: FAIL: $*" >&2; exit 1; }

cat >"$work/rsyslog.conf" <<CONF
global(workDirectory="$work")
module(load="imuxsock" SysSock.Use="off")
input(type="imuxsock" Socket="$work/log.sock" UseSpecialParser="off" ParseHostname="on")
template(name="fields" type="string" string="app=%app-name% msgid=%msgid% host=%hostname% pri=%syslogfacility-text%.%syslogseverity-text% msg=%msg%\n")
*.* action(type="omfile" file="$work/syslog.out" template="fields")
CONF
rsyslogd -n -f "$work/rsyslog.conf" -i "$work/rsyslog.pid" 2>"$work/rsyslog.err" &
pids+=($!)
for _ in $(seq 50); do [[ -S $work/log.sock ]] && break; sleep 0.1; done
[[ -S $work/log.sock ]] || fail "rsyslogd did not open its socket: $(cat "$work/rsyslog.err")"

cat >"$work/bootlane.toml" <<CONF
data_dir = "$work/data"
log = "warn"
[server]
node_name = "audit-e2e"
[api]
listen = "127.0.0.1:$api_port"
[dns]
port = $dns_port
listen = ["127.0.0.1"]
[dns.xdp]
mode = "off"
[tftp]
enabled = false
[audit]
syslog = true
syslog_socket = "$work/log.sock"
CONF
mkdir -p "$work/data"
BOOTLANE_ADMIN_PASSWORD=$password "$bin" serve --config "$work/bootlane.toml" >"$work/server.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$api_port/api/v1"
for _ in $(seq 100); do curl -fsS "$base/status" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$base/status" >/dev/null || fail "server did not start: $(cat "$work/server.log")"
curl -fsS -c "$work/cookies" -H 'content-type: application/json' \
  -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$base/auth/login" >/dev/null || fail "login"
api() { curl -fsS -b "$work/cookies" -H 'content-type: application/json' "$@"; }
for n in 1 2 3; do
  api -d "{\"name\":\"audit$n\",\"type\":\"A\",\"value\":\"10.0.9.$n\"}" "$base/dns/records" >/dev/null || fail "write $n"
done

# The copies reached rsyslogd, parsed as RFC 5424.
for _ in $(seq 50); do [[ $(grep -c 'msgid=audit' "$work/syslog.out" 2>/dev/null) -ge 3 ]] && break; sleep 0.1; done
grep -q 'app=bootlane msgid=audit host=audit-e2e pri=authpriv.notice msg=.*"resource_id"' "$work/syslog.out" ||
  fail "no RFC 5424 audit copy in rsyslog's output: $(cat "$work/syslog.out" 2>/dev/null)"
grep -q 'audit2' "$work/syslog.out" || fail "entry 2 not copied"
echo "e2e-audit: rsyslogd received $(grep -c 'msgid=audit' "$work/syslog.out") audit copies as RFC 5424"

# Offline verification while the server runs, then after an edit.
out=$("$bin" audit verify --data-dir "$work/data") || fail "verify of an intact log: $out"
echo "e2e-audit: intact: $out"
api "$base/audit-logs/verify" | grep -q '"status":"ok"' || fail "API verify of an intact log"
seg=$(ls "$work/data/journal/audit_entries/"*.jsonl | head -1)
id2=$(grep -n 'audit2' "$seg" | head -1 | cut -d: -f1)
sed -i "${id2}s/10\.0\.9\.2/10.0.9.99/g" "$seg"
if out=$("$bin" audit verify --data-dir "$work/data"); then fail "an edited entry verified: $out"; fi
echo "e2e-audit: edited: $out"
echo "$out" | grep -q '^BROKEN at entry' || fail "verify did not name the break: $out"
api "$base/audit-logs/verify" | grep -q '"status":"broken"' || fail "API verify of an edited log"
# Logins through curl: a weak password is a 400 naming the rule; five failed logins from
# one address, then a 429 with Retry-After (before any password work).
code=$(curl -s -o "$work/weak.json" -w '%{http_code}' -b "$work/cookies" -H 'content-type: application/json' \
  -d '{"username":"ops","password":"password1234"}' "$base/users")
[[ $code == 400 ]] && grep -q 'too easy to guess' "$work/weak.json" || fail "weak password: $code $(cat "$work/weak.json")"
for i in 1 2 3 4 5; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"wrong-password-$i\"}" "$base/auth/login")
  [[ $code == 401 ]] || fail "failed login $i answered $code"
done
hdr=$(curl -s -D - -o "$work/throttled.json" -H 'content-type: application/json' \
  -d "{\"username\":\"admin\",\"password\":\"$password\"}" "$base/auth/login")
grep -q '^HTTP/1.1 429' <<<"$hdr" && grep -qi '^retry-after: [0-9]' <<<"$hdr" ||
  fail "no 429 with Retry-After after 5 failures: $hdr $(cat "$work/throttled.json")"
echo "e2e-audit: logins: weak password refused, 429 after 5 failures: $(cat "$work/throttled.json")"
echo "[e2e-audit] PASS"
