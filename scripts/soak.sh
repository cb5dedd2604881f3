#!/usr/bin/env bash
# Soak test: every service of one Bootlane under steady load for N minutes, with the
# server's resources and the clients' errors reported every minute.
# Load, all at once from a client namespace against the server namespace:
#   DNS:  dnsperf at $DNS_SHARE % (default 50) of the capacity measured first (a 5 s
#         unlimited dnsperf run against the idle server; XDP off, so the userspace path),
#         in slices ending on each minute mark; beside it a prober sending $PROBE_QPS
#         queries/s on its own socket, timing each answer (p99) and checking its address.
#   DHCP: $DHCP_CLIENTS clients (default 200, distinct MACs) of a small relay-style
#         client (giaddr set, like perfdhcp): DORA, then a renewal at T1 of every lease
#         ($LEASE_SECS = 60 s leases, so each client renews every 30 s); NAKs, timeouts
#         and an address changing on renewal are errors; each client's last lease is
#         remembered for the final check.
#   TFTP: `curl tftp://` of ipxe.efi back to back, compared byte for byte.
#   HTTP: `GET /boot/soak.bin` (1 MiB) and a Range request of it, alternating, back to
#         back, compared byte for byte ([boot] rate_per_client = 0: one client address).
#   API:  $API_RATE writes/s (default 20) on one keep-alive connection, in turn POST a
#         record soak<k>, PUT a new value on a live one, DELETE the oldest once more than
#         $API_LIVE are live; latency of each (p99); any non-2xx is an error.
#   SSE:  $SUBS (default 20) subscribers on /api/v1/events/stream all the time; a
#         disconnect or a `lagged` notice is an error; each must receive every write's
#         dns.record.* event.
# Every minute one markdown row: the server's RSS and open descriptors (medians of samples
# every 5 s from /proc/<pid>), the sled directory's size (du -sb), DNS qps, answered %
# and p99, API writes and p99, DHCP new leases and renewals, TFTP and HTTP downloads,
# SSE subscribers connected and events per subscriber, and the minute's errors.
# At the end: every record the API acknowledged (the 1000 host<i> records created at the
# start and the writer's live ones, with their last value) must be listed by
# GET /dns/records and answer over DNS, deleted ones must be gone; every client's lease
# that is still valid must be listed by GET /leases, active, with the same address.
# Verdict: RSS and descriptor growth from minute 5 (minute 1 when N < 6) to the last
# under $GOAL_PCT % (default 5), no error responses, no lost record or lease; exits 1 with
# the reasons when any fails. Prints a markdown summary for the book's performance chapter.
# Usage: soak.sh <bootlane binary> [minutes]   (or SOAK_BIN=<binary> SOAK_MINUTES=N soak.sh)
# Other environment variables: NAMES (1000), DNS_SHARE, PROBE_QPS (200), DHCP_CLIENTS,
# LEASE_SECS, API_RATE, API_LIVE (100), SUBS, GOAL_PCT, SOAK_EXTRA_CONFIG (TOML appended to
# the server's config, e.g. $'[events]\nretention_count = 5000'), SOAK_CMD (the command named
# in the report; `cargo xtask soak` sets it), KEEP_WORK=1 keeps the work directory.
# Everything runs in two network namespaces created and removed here; all started is
# recorded and killed by PID; nothing leaves the machine.
set -euo pipefail
BIN=$(readlink -f "${1:-${SOAK_BIN:?usage: soak.sh <bootlane binary> [minutes] (or SOAK_BIN=...)}}")
MINUTES=${2:-${SOAK_MINUTES:-30}}
NAMES=${NAMES:-1000}
DNS_SHARE=${DNS_SHARE:-50}
PROBE_QPS=${PROBE_QPS:-200}
DHCP_CLIENTS=${DHCP_CLIENTS:-200}
LEASE_SECS=${LEASE_SECS:-60}
API_RATE=${API_RATE:-20}
API_LIVE=${API_LIVE:-100}
SUBS=${SUBS:-20}
GOAL_PCT=${GOAL_PCT:-5}
[[ -x $BIN ]] || { echo "soak: $BIN is not an executable" >&2; exit 2; }
((MINUTES >= 1)) || { echo "soak: minutes must be at least 1" >&2; exit 2; }

tag="sk$$"
SRV="${tag}s" CLI="${tag}c"
WORK=$(mktemp -d /tmp/bootlane-soak.XXXXXX)
DL=$(mktemp -d /dev/shm/bootlane-soak.XXXXXX)
PIDS=()
cleanup() {
  touch "$WORK/stop" "$WORK/stop-sse" # the load loops end by themselves
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  rm -rf "$DL"
  if [[ -n ${KEEP_WORK:-} ]]; then echo "soak: work directory kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
say() { echo "soak: $*" >&2; }
die() { say "$*"; exit 1; }

ip netns add "$SRV"; ip netns add "$CLI"
ip link add "${tag}a" netns "$SRV" type veth peer name "${tag}b" netns "$CLI"
ip -n "$SRV" addr add 10.77.0.1/24 dev "${tag}a"; ip -n "$CLI" addr add 10.77.0.2/24 dev "${tag}b"
for ns in "$SRV" "$CLI"; do ip -n "$ns" link set lo up; done
ip -n "$SRV" link set "${tag}a" up; ip -n "$CLI" link set "${tag}b" up

mkdir -p "$WORK/data/boot" "$WORK/ev"
cp -L /usr/lib/ipxe/ipxe.efi "$WORK/data/boot/"
head -c $((1 << 20)) /dev/urandom >"$WORK/data/boot/soak.bin"
RANGE=100000-299999
dd if="$WORK/data/boot/soak.bin" of="$WORK/range.bin" bs=100000 skip=1 count=2 status=none # bytes $RANGE
cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"
log = "warn"
[api]
listen = "0.0.0.0:8080"
[dns]
port = 53
listen = ["10.77.0.1"]
local_domain = "lab.test"
# dnsperf from one client at a fixed share of capacity: response rate limiting off.
[dns.rrl]
enabled = false
[dns.xdp]
mode = "off"
[tftp]
enabled = true
[boot]
rate_per_client = 0
[[dhcp.subnets]]
mode = "server"
interface = "${tag}a"
cidr = "10.77.0.0/24"
range_start = "10.77.0.10"
range_end = "10.77.0.250"
lease_time_secs = $LEASE_SECS
${SOAK_EXTRA_CONFIG:-}
EOF

# ---- The measuring parts (Python), one file with one subcommand per part.
cat >"$WORK/soak.py" <<'PY'
import sys, os, json, time, socket, struct, random, select, threading, http.client, subprocess, re

W = os.environ["SOAK_WORK"]
SERVER = "10.77.0.1"
DOMAIN = "lab.test"


def t0():
    return float(open(f"{W}/t0").read())


def stopped(name="stop"):
    """The stop file exists, or the work directory is gone (the script ended)."""
    return os.path.exists(f"{W}/{name}") or not os.path.isdir(W)


class Log:
    """Appends "<unix time> <fields...>" lines to ev/<name>.<minute>, minute 0 starting at t0."""

    def __init__(self, name):
        self.name, self.m, self.f, self.t0 = name, None, None, t0()

    def __call__(self, *fields, m=None):
        ts = time.time()
        m = int((ts - self.t0) // 60) if m is None else m
        if m != self.m:
            if self.f:
                self.f.close()
            self.m, self.f = m, open(f"{W}/ev/{self.name}.{m}", "a", buffering=1)
        self.f.write(" ".join([f"{ts:.3f}", *map(str, fields)]) + "\n")


def api(cookie):
    return http.client.HTTPConnection(SERVER, 8080, timeout=10), {"Content-Type": "application/json", "Cookie": cookie}


def call(conn, h, method, path, body=None):
    conn.request(method, path, None if body is None else json.dumps(body), h)
    r = conn.getresponse()
    data = r.read()
    return r.status, (json.loads(data) if data else None)


def get_all(cookie, path, key):
    """Every item of a paginated list (page from 1, size 1000)."""
    conn, h = api(cookie)
    items, page = [], 1
    while True:
        st, d = call(conn, h, "GET", f"{path}{'&' if '?' in path else '?'}size=1000&page={page}")
        assert st == 200, (path, st, d)
        items += d["data"][key]
        if len(items) >= d["data"]["total"] or not d["data"][key]:
            return items
        page += 1


def host_ip(i):
    return f"10.{i // 250}.{i % 250}.1"


# ---- DNS wire format (A queries only)
def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def dns_answer(resp):
    """(id, rcode, first A address or None)."""
    qid, flags, _, an = struct.unpack("!HHHH", resp[:8])
    i = 12
    while resp[i]:
        i += resp[i] + 1
    i += 5
    addr = None
    for _ in range(an):
        if resp[i] & 0xC0 == 0xC0:
            i += 2
        else:
            while resp[i]:
                i += resp[i] + 1
            i += 1
        typ, _, _, rdlen = struct.unpack("!HHIH", resp[i : i + 10])
        i += 10
        if typ == 1 and rdlen == 4 and addr is None:
            addr = socket.inet_ntoa(resp[i : i + 4])
        i += rdlen
    return qid, flags & 0xF, addr


def resolve(s, name, tries=3):
    """(rcode, address) of one A query on connected socket s; (None, None) after timeouts."""
    for _ in range(tries):
        qid = random.randrange(65536)
        s.send(dns_query(qid, name))
        end = time.time() + 1
        while time.time() < end:
            if not select.select([s], [], [], max(0, end - time.time()))[0]:
                break
            got, rcode, addr = dns_answer(s.recv(4096))
            if got == qid:
                return rcode, addr
    return None, None


def dns_probe(qps, names):
    """PROBE_QPS queries/s for random host<i>: "ok <ms>", "bad <rcode> <addr>" or "timeout"."""
    log = Log("probe")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((SERVER, 53))
    pending, qid, interval = {}, 0, 1 / qps
    next_send = next_expire = time.perf_counter()
    while not stopped():
        now = time.perf_counter()
        if now >= next_send:
            qid = (qid + 1) & 0xFFFF
            i = random.randrange(names)
            s.send(dns_query(qid, f"host{i}.{DOMAIN}"))
            pending[qid] = (now, host_ip(i))
            next_send = max(next_send + interval, now - 1)
        if now >= next_expire:
            for k, (t, _) in list(pending.items()):
                if now - t > 1:
                    del pending[k]
                    log("timeout")
            next_expire = now + 0.1
        if select.select([s], [], [], max(0, min(next_send, next_expire) - time.perf_counter()))[0]:
            resp = s.recv(4096)
            t = time.perf_counter()
            got, rcode, addr = dns_answer(resp)
            if got in pending:
                sent, want = pending.pop(got)
                if rcode == 0 and addr == want:
                    log("ok", f"{(t - sent) * 1000:.3f}")
                else:
                    log("bad", rcode, addr)


def dnsperf(rate, queries, minutes):
    """dnsperf -Q rate in slices ending on each minute mark: one summary line per slice."""
    log, start = Log("dnsperf"), t0()
    while not stopped():
        now = time.time()
        m = int((now - start) // 60)
        if m >= minutes:
            break
        secs = start + 60 * (m + 1) - now
        if secs < 1:
            time.sleep(secs)
            continue
        out = subprocess.run(
            ["dnsperf", "-s", SERVER, "-p", "53", "-d", queries, "-c", "10", "-T", "1", "-q", "200",
             "-Q", str(rate), "-t", "1", "-l", f"{secs:.2f}"],
            capture_output=True, text=True).stdout
        num = lambda label: float((re.search(label + r"\s+([\d.]+)", out) or [0, 0])[1])
        qps, avg_ms = num(r"Queries per second:"), num(r"Average Latency \(s\):") * 1000
        log(int(num("Queries sent:")), int(num("Queries completed:")), int(num("Queries lost:")),
            int(num("NOERROR")), f"{qps:.0f}", f"{avg_ms:.3f}", m=m)  # the slice's minute


# ---- DHCP: relay-style clients (giaddr = our address; the server answers to giaddr:67)
GIADDR = "10.77.0.2"


def dhcp_msg(kind, xid, mac, ciaddr="0.0.0.0", requested=None, server_id=None):
    m = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 1, xid, 0, 0, socket.inet_aton(ciaddr),
                    bytes(4), bytes(4), socket.inet_aton(GIADDR), mac + bytes(10), b"", b"")
    m += b"\x63\x82\x53\x63" + bytes([53, 1, kind])
    if requested:
        m += bytes([50, 4]) + socket.inet_aton(requested)
    if server_id:
        m += bytes([54, 4]) + socket.inet_aton(server_id)
    return m + bytes([55, 4, 1, 51, 54, 58, 255])


def dhcp_parse(p):
    """(xid, mac bytes, yiaddr, {option: bytes})."""
    xid = struct.unpack("!I", p[4:8])[0]
    opts, i = {}, 240
    while i < len(p) and p[i] != 255:
        if p[i] == 0:
            i += 1
            continue
        opts[p[i]] = p[i + 2 : i + 2 + p[i + 1]]
        i += 2 + p[i + 1]
    return xid, p[28:34], socket.inet_ntoa(p[16:20]), opts


def dhcp(n):
    """n clients: DORA, renewal at T1; events "ack|renew <mac> <ip>", "nak|timeout|changed <mac>",
    "retry <mac>" (a retransmission). On stop: dhcp-state.json with each client's last lease."""
    log = Log("dhcp")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((GIADDR, 67))
    start = time.time()
    clients = [{"mac": bytes([2, 0x5A, 0, 0, i >> 8, i & 0xFF]), "state": "init", "next": start + i * 0.05,
                "ip": None, "expiry": 0, "xid": 0, "sent": 0, "tries": 0} for i in range(n)]
    by_xid = {}
    hexmac = lambda c: ":".join(f"{b:02x}" for b in c["mac"])

    def send(c, state, pkt_args, retry=False):
        if not retry:
            by_xid.pop(c["xid"], None)
            c["xid"], c["tries"] = random.getrandbits(32), 0
            by_xid[c["xid"]] = c
        c["state"], c["sent"], c["tries"] = state, time.time(), c["tries"] + 1
        c["args"] = pkt_args
        s.sendto(dhcp_msg(pkt_args[0], c["xid"], c["mac"], *pkt_args[1:]), (SERVER, 67))

    while not stopped():
        now = time.time()
        for c in clients:
            if c["state"] == "init" and now >= c["next"]:
                send(c, "discover", (1,))
            elif c["state"] == "bound" and now >= c["next"]:
                send(c, "renew", (3, c["ip"]))
            elif c["state"] in ("discover", "request", "renew") and now - c["sent"] > 2:
                if c["tries"] < 4:
                    log("retry", hexmac(c))
                    send(c, c["state"], c["args"], retry=True)
                else:
                    log("timeout", hexmac(c), c["state"])
                    if c["state"] == "renew" and now < c["expiry"] - 5:
                        c["state"], c["next"] = "bound", now + 5
                    else:
                        c["state"], c["next"] = "init", now + 1
        if not select.select([s], [], [], 0.05)[0]:
            continue
        while True:  # every datagram queued, then the timers again
            try:
                p = s.recv(2048, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if len(p) < 240 or p[0] != 2:
                continue
            xid, mac, yiaddr, opts = dhcp_parse(p)
            c = by_xid.get(xid)
            if c is None or c["mac"] != mac or not opts.get(53):
                continue
            kind = opts[53][0]
            if kind == 2 and c["state"] == "discover":  # OFFER
                send(c, "request", (3, "0.0.0.0", yiaddr, socket.inet_ntoa(opts[54])))
            elif kind == 5 and c["state"] in ("request", "renew"):  # ACK
                lease = struct.unpack("!I", opts[51])[0]
                t1 = struct.unpack("!I", opts[58])[0] if 58 in opts else lease // 2
                if c["state"] == "renew":
                    log("renew" if yiaddr == c["ip"] else "changed", hexmac(c), yiaddr)
                else:
                    log("ack", hexmac(c), yiaddr)
                now = time.time()
                c.update(state="bound", ip=yiaddr, expiry=now + lease, next=now + t1)
            elif kind == 6 and c["state"] in ("request", "renew"):  # NAK
                log("nak", hexmac(c), c["state"])
                c.update(state="init", next=time.time() + 1, ip=None, expiry=0)
    json.dump([{"mac": hexmac(c), "ip": c["ip"], "expiry": c["expiry"]} for c in clients],
              open(f"{W}/dhcp-state.json", "w"))


# ---- API writes
def writer(cookie, rate, live_max):
    """rate writes/s: POST soak<k>, PUT a live one, DELETE the oldest beyond live_max; events
    "<op> <status> <ms>" (status 0: no answer). On stop: api-state.json."""
    log = Log("api")
    conn, h = api(cookie)
    live, deleted, uncertain, acked, k, tick = {}, [], [], 0, 0, 0
    nxt = time.perf_counter()
    while not stopped():
        nxt += 1 / rate
        time.sleep(max(0, nxt - time.perf_counter()))
        tick += 1
        if tick % 3 == 1 or not live:
            name = f"soak{k}"
            k += 1
            op, method, path, body = "create", "POST", "/api/v1/dns/records", {
                "name": name, "type": "A", "value": f"10.200.{k // 250 % 250}.{k % 250 + 1}"}
        elif tick % 3 == 0 and len(live) > live_max:
            name = next(iter(live))
            op, method, path, body = "delete", "DELETE", f"/api/v1/dns/records/{live[name]['id']}", None
        else:
            name = random.choice(list(live))
            op, method, path, body = "update", "PUT", f"/api/v1/dns/records/{live[name]['id']}", {
                "value": f"10.201.{random.randrange(250)}.{random.randrange(1, 250)}"}
        t = time.perf_counter()
        try:
            st, d = call(conn, h, method, path, body)
        except (OSError, http.client.HTTPException) as e:
            log(op, 0, f"{(time.perf_counter() - t) * 1000:.3f}", type(e).__name__)
            uncertain.append(name)
            live.pop(name, None)
            conn, h = api(cookie)
            continue
        log(op, st, f"{(time.perf_counter() - t) * 1000:.3f}")
        if st // 100 != 2:
            continue
        acked += 1
        if op == "create":
            live[name] = {"id": d["data"]["id"], "value": body["value"]}
        elif op == "update":
            live[name]["value"] = body["value"]
        else:
            del live[name]
            deleted.append(name)
    json.dump({"acked": acked, "live": live, "deleted": deleted, "uncertain": uncertain},
              open(f"{W}/api-state.json", "w"))


# ---- SSE subscribers
def sse(cookie, n):
    """n subscribers in threads; each second "<connected> <disconnects> <lagged> <events of
    subscriber 0..n-1 in that second>". Runs until stop-sse; then sse-state.json."""
    log = Log("sse")
    lock = threading.Lock()
    st = [{"connected": False, "events": 0, "dns": 0, "disc": 0, "lagged": 0, "last_id": None} for _ in range(n)]
    prev = [0] * n

    def sub(i):
        me = st[i]
        while not stopped("stop-sse"):
            try:
                conn = http.client.HTTPConnection(SERVER, 8080, timeout=60)
                h = {"Cookie": cookie, "Accept": "text/event-stream"}
                if me["last_id"]:
                    h["Last-Event-ID"] = me["last_id"]
                conn.request("GET", "/api/v1/events/stream", headers=h)
                r = conn.getresponse()
                if r.status != 200:
                    raise OSError(f"status {r.status}")
                me["connected"] = True
                for raw in r:
                    line = raw.decode(errors="replace").rstrip("\r\n")
                    if line.startswith("id:"):
                        me["last_id"] = line[3:].strip()
                    elif line.startswith("event:"):
                        kind = line[6:].strip()
                        with lock:
                            me["events"] += 1
                            me["dns"] += kind.startswith("dns.record.")
                            me["lagged"] += kind == "lagged"
                    if stopped("stop-sse"):
                        return
                raise OSError("stream ended")
            except (OSError, http.client.HTTPException) as e:
                if stopped("stop-sse"):
                    return
                with lock:
                    me["connected"] = False
                    me["disc"] += 1
                print(f"soak: SSE subscriber {i} disconnected: {e}", file=sys.stderr)
                time.sleep(0.5)

    threads = [threading.Thread(target=sub, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    last = (0, 0)
    while not stopped("stop-sse"):
        time.sleep(1)
        with lock:
            ev = [s["events"] for s in st]
            disc, lag = sum(s["disc"] for s in st), sum(s["lagged"] for s in st)
            log(sum(s["connected"] for s in st), disc - last[0], lag - last[1], *[e - p for e, p in zip(ev, prev)])
            prev, last = ev, (disc, lag)
    with lock:
        json.dump(st, open(f"{W}/sse-state.json", "w"))
    os._exit(0)  # the threads are blocked reading their streams


# ---- Reporting
def lines(name, m):
    try:
        return [l.split() for l in open(f"{W}/ev/{name}.{m}")]
    except FileNotFoundError:
        return []


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(len(xs) * p / 100 + 0.999999) - 1))] if xs else float("nan")


def median(xs):
    return pct(xs, 50)


COLUMNS = ("| min | RSS MB | FDs | sled MB | server CPU % | load | DNS qps | DNS answered | DNS p99 ms | API writes | API p99 ms "
           "| DHCP new / renewed | TFTP ok | HTTP ok | SSE connected | SSE events/sub | errors |")


def row(m):
    """The row of minute m (0-based; printed 1-based), appended to rows.jsonl."""
    res = lines("res", m)
    rss = median([int(x[1]) for x in res]) / 1024 if res else float("nan")
    fds = median([int(x[2]) for x in res]) if res else float("nan")
    sled = int(res[-1][3]) / 1e6 if res else float("nan")
    cpu = (int(res[-1][4]) - int(res[0][4])) / (float(res[-1][0]) - float(res[0][0])) if len(res) > 1 else float("nan")
    load = max((float(x[5]) for x in res), default=float("nan"))
    anon = median([int(x[6]) for x in res]) / 1024 if res else float("nan")
    filemb = median([int(x[7]) for x in res]) / 1024 if res else float("nan")
    threads = max((int(x[8]) for x in res), default=0)
    perf = lines("dnsperf", m)
    sent, done, lost, noerr = (sum(int(x[i]) for x in perf) for i in (1, 2, 3, 4))
    qps = sum(float(x[5]) for x in perf)
    probe = lines("probe", m)
    lat = [float(x[2]) for x in probe if x[1] == "ok"]
    p_bad = sum(x[1] == "bad" for x in probe)
    p_timeout = sum(x[1] == "timeout" for x in probe)
    apil = lines("api", m)
    api_lat = [float(x[3]) for x in apil]
    api_err = sum(int(x[2]) // 100 != 2 for x in apil)
    dh = lines("dhcp", m)
    cnt = lambda k: sum(x[1] == k for x in dh)
    dhcp_err = cnt("nak") + cnt("timeout") + cnt("changed")
    tftp, http_ = lines("tftp", m), lines("http", m)
    tftp_fail, http_fail = sum(x[1] != "ok" for x in tftp), sum(x[1] != "ok" for x in http_)
    ss = lines("sse", m)
    per_sub = [sum(int(x[4 + i]) for x in ss) for i in range(len(ss[0]) - 4)] if ss else []
    sse_min_conn = min((int(x[1]) for x in ss), default=0)
    sse_err = sum(int(x[2]) + int(x[3]) for x in ss)
    dns_err = (done - noerr) + p_bad
    errors = dns_err + api_err + dhcp_err + tftp_fail + http_fail + sse_err
    r = dict(minute=m + 1, rss_mb=rss, fds=fds, sled_mb=sled, cpu_pct=cpu, load=load, anon_mb=anon, file_mb=filemb,
             threads=threads, dns_sent=sent, dns_done=done, dns_lost=lost,
             dns_qps=qps, dns_avg_ms=sum(float(x[6]) for x in perf) / max(1, len(perf)), dns_answered=100 * done / sent if sent else 0, dns_p99=pct(lat, 99),
             probe_sent=len(probe), probe_timeouts=p_timeout, dns_err=dns_err, api_writes=len(apil), api_p99=pct(api_lat, 99),
             api_err=api_err, dhcp_new=cnt("ack"), dhcp_renew=cnt("renew"), dhcp_retry=cnt("retry"),
             dhcp_err=dhcp_err, tftp_ok=len(tftp) - tftp_fail, tftp_fail=tftp_fail, http_ok=len(http_) - http_fail,
             http_fail=http_fail, sse_min_connected=sse_min_conn, sse_events_min=min(per_sub, default=0),
             sse_events_max=max(per_sub, default=0), sse_err=sse_err, errors=errors)
    with open(f"{W}/rows.jsonl", "a") as f:
        f.write(json.dumps(r) + "\n")
    if m == 0:
        print(COLUMNS)
        print("|" + "---:|" * (COLUMNS.count("|") - 1))
    print(fmt(r), flush=True)
    detail = {k: r[k] for k in ("dns_err", "api_err", "dhcp_err", "tftp_fail", "http_fail", "sse_err") if r[k]}
    if detail or lost or p_timeout:
        print(f"soak: minute {m + 1}: errors {detail or 0}; DNS unanswered: dnsperf {lost}, prober {p_timeout};"
              f" DHCP retransmissions {r['dhcp_retry']}", file=sys.stderr)


def fmt(r):
    return (f"| {r['minute']} | {r['rss_mb']:.1f} | {r['fds']:.0f} | {r['sled_mb']:.1f} | {r['cpu_pct']:.0f} "
            f"| {r['load']:.1f} | {r['dns_qps']:,.0f} "
            f"| {r['dns_answered']:.2f} % | {r['dns_p99']:.2f} | {r['api_writes']} | {r['api_p99']:.2f} "
            f"| {r['dhcp_new']} / {r['dhcp_renew']} | {r['tftp_ok']} | {r['http_ok']} "
            f"| {r['sse_min_connected']} | {r['sse_events_min']}-{r['sse_events_max']} | {r['errors']} |")


def final(cookie, names):
    """Lost leases, lost or changed records, records answering over DNS; final.json."""
    now = time.time()
    out = {}
    clients = json.load(open(f"{W}/dhcp-state.json"))
    leases = {l["mac"].lower(): l for l in get_all(cookie, "/api/v1/leases", "leases")}
    held = [c for c in clients if c["ip"] and c["expiry"] > now + 1]
    lost = [c for c in held if not (leases.get(c["mac"]) and leases[c["mac"]]["ip"] == c["ip"]
                                    and leases[c["mac"]]["state"] == "active")]
    out.update(clients=len(clients), leases_held=len(held), leases_lost=[c["mac"] for c in lost],
               leases_listed=len(leases))
    w = json.load(open(f"{W}/api-state.json"))
    want = {f"host{i}": host_ip(i) for i in range(names)}
    want.update({k: v["value"] for k, v in w["live"].items()})
    recs = {r["name"]: r for r in get_all(cookie, "/api/v1/dns/records", "records")}
    missing = [k for k in want if k not in recs]
    wrong = [k for k in want if k in recs and recs[k]["value"] != want[k]]
    zombies = [k for k in w["deleted"] if k in recs and k not in w["uncertain"]]
    # Neither created by the script nor automatic (the server's own names): a stray write.
    extra = [k for k, r in recs.items() if k not in want and k not in w["deleted"] and k not in w["uncertain"]
             and not r.get("auto")]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((SERVER, 53))
    dns_bad = []
    for k, v in want.items():
        rcode, addr = resolve(s, f"{k}.{DOMAIN}")
        if rcode != 0 or addr != v:
            dns_bad.append(f"{k}={addr}(rcode {rcode})")
    for k in w["deleted"][-200:]:
        rcode, addr = resolve(s, f"{k}.{DOMAIN}")
        if k not in w["uncertain"] and addr is not None:
            dns_bad.append(f"deleted {k} answers {addr}")
    out.update(records_expected=len(want), records_listed=len(recs), records_missing=missing,
               records_wrong=wrong, records_zombie=zombies, records_extra=extra, dns_bad=dns_bad, api_acked=w["acked"],
               api_uncertain=len(w["uncertain"]), api_deleted=len(w["deleted"]))
    conn, h = api(cookie)
    out["events_stored"] = call(conn, h, "GET", "/api/v1/events?size=1")[1]["data"]["total"]
    subs = json.load(open(f"{W}/sse-state.json"))
    short = [i for i, x in enumerate(subs) if not w["acked"] <= x["dns"] <= w["acked"] + len(w["uncertain"])]
    out.update(sse_dns_events=[x["dns"] for x in subs], sse_short=short,
               sse_connected_at_end=sum(x["connected"] for x in subs))
    json.dump(out, open(f"{W}/final.json", "w"))


def verdict(goal, capacity, rate, cmd):
    """The goals checked (exit 1 when one fails), then the performance chapter's tables."""
    rows = [json.loads(l) for l in open(f"{W}/rows.jsonl")]
    f = json.load(open(f"{W}/final.json"))
    base, last = rows[4] if len(rows) >= 6 else rows[0], rows[-1]
    growth = lambda k: 100 * (last[k] - base[k]) / base[k]
    tot = lambda k: sum(r[k] for r in rows)
    worst = lambda k: max(r[k] for r in rows)
    fails = []
    print(f"\nsoak: verdict after {len(rows)} minutes (growth from minute {base['minute']} to minute {last['minute']}):")

    def check(ok, text):
        print(f"  {'ok  ' if ok else 'FAIL'} {text}")
        if not ok:
            fails.append(text)

    for k, what in (("rss_mb", "RSS (MB)"), ("fds", "open descriptors")):
        check(growth(k) < goal, f"{what}: {base[k]:.1f} -> {last[k]:.1f}, {growth(k):+.1f} % (goal < {goal:g} %)")
    check(tot("errors") == 0, f"error responses: {tot('errors')} (DNS {tot('dns_err')}, API {tot('api_err')}, DHCP "
          f"{tot('dhcp_err')}, TFTP {tot('tftp_fail')}, HTTP {tot('http_fail')}, SSE disconnects/lag {tot('sse_err')})")
    bad = f["records_missing"] + f["records_wrong"] + f["records_zombie"] + f["records_extra"]
    check(not bad, f"records: {f['records_expected']} expected (the host records and the writer's live ones), "
          f"{len(f['records_missing'])} missing, {len(f['records_wrong'])} with a wrong value, "
          f"{len(f['records_zombie'])} deleted but listed, {len(f['records_extra'])} unexpected {bad[:5]}")
    check(not f["dns_bad"], f"records over DNS: {len(f['dns_bad'])} wrong or unanswered {f['dns_bad'][:5]}")
    check(not f["leases_lost"] and f["leases_held"] == f["clients"],
          f"leases: {f['leases_held']} of {f['clients']} clients hold one, {len(f['leases_lost'])} of those not "
          f"listed active with their address {f['leases_lost'][:5]}")
    n_subs = len(f["sse_dns_events"])
    check(not f["sse_short"] and f["sse_connected_at_end"] == n_subs,
          f"SSE: {f['sse_connected_at_end']} of {n_subs} connected at the end; dns.record events per subscriber "
          f"{min(f['sse_dns_events'])}-{max(f['sse_dns_events'])} for {f['api_acked']} acknowledged writes "
          f"({f['api_uncertain']} unanswered)")
    answered = 100 * tot("dns_done") / max(1, tot("dns_sent"))
    print(f"  info RSS, minute {base['minute']} -> {last['minute']}: anonymous {base['anon_mb']:.1f} -> "
          f"{last['anon_mb']:.1f} MB, file-backed {base['file_mb']:.1f} -> {last['file_mb']:.1f} MB; threads "
          f"{base['threads']} -> {last['threads']}; sled directory {base['sled_mb']:.1f} -> {last['sled_mb']:.1f} MB")
    print(f"  info DNS: capacity {capacity:,} qps, load {rate:,} qps; {answered:.3f} % of the dnsperf queries and "
          f"{tot('probe_sent') - tot('probe_timeouts'):,} of {tot('probe_sent'):,} prober queries answered "
          f"(unanswered UDP queries are losses, not error responses); {f['events_stored']:,} events stored at the end")

    print(f"\n### Soak, {len(rows)} minutes (`{cmd}`)\n")
    cols = [r for i, r in enumerate(rows) if i in (0, base["minute"] - 1, len(rows) - 1)]
    print("| Server | " + " | ".join(f"minute {r['minute']}" for r in cols) + f" | growth from minute {base['minute']} | goal |")
    print("|---|" + "---:|" * (len(cols) + 1) + "---|")
    print("| RSS (MB) | " + " | ".join(f"{r['rss_mb']:.1f}" for r in cols) + f" | {growth('rss_mb'):+.1f} % | < {goal:g} % |")
    print("| open descriptors | " + " | ".join(f"{r['fds']:.0f}" for r in cols) + f" | {growth('fds'):+.1f} % | < {goal:g} % |")
    print("| sled directory (MB) | " + " | ".join(f"{r['sled_mb']:.1f}" for r in cols) + " | | |")
    print("| CPU (% of one core) | " + " | ".join(f"{r['cpu_pct']:.0f}" for r in cols) + " | | |")
    print()
    print("| Load (all at once) | Done | Errors | Worst minute's p99 |")
    print("|---|---:|---:|---:|")
    print(f"| DNS: dnsperf at {rate:,} qps ({DNS_SHARE} % of the {capacity:,} measured) | {tot('dns_done'):,} answered "
          f"({answered:.2f} %) | {tot('dns_err')} | |")
    print(f"| DNS: prober, {PROBE_QPS} qps, answers checked | {tot('probe_sent') - tot('probe_timeouts'):,} of "
          f"{tot('probe_sent'):,} answered | (above) | {worst('dns_p99'):.1f} ms |")
    print(f"| DHCP: {f['clients']} clients, {LEASE_SECS} s leases, renewing at T1 | {tot('dhcp_new'):,} leases, "
          f"{tot('dhcp_renew'):,} renewals | {tot('dhcp_err')} | |")
    print(f"| TFTP: ipxe.efi back to back, byte-exact | {tot('tftp_ok'):,} | {tot('tftp_fail')} | |")
    print(f"| HTTP: `GET /boot/` 1 MiB and a Range, byte-exact | {tot('http_ok'):,} | {tot('http_fail')} | |")
    print(f"| API: {API_RATE} writes/s, POST/PUT/DELETE `/dns/records` | {tot('api_writes'):,} | {tot('api_err')} | "
          f"{worst('api_p99'):.1f} ms |")
    print(f"| SSE: {n_subs} subscribers on `/events/stream` | every write's event, {min(r['sse_min_connected'] for r in rows)}"
          f" connected at the lowest | {tot('sse_err')} | |")
    print(f"| At the end: records in the API and over DNS | {f['records_expected']:,} | "
          f"{len(bad) + len(f['dns_bad'])} lost or wrong | |")
    print(f"| At the end: leases in `GET /leases` | {f['leases_held']} | {len(f['leases_lost'])} lost | |")
    print()
    print("| min | RSS MB | FDs | sled MB | CPU % | load avg | DNS qps | DNS answered | DNS p99 ms | API p99 ms | errors |")
    print("|" + "---:|" * 11)
    for r in rows:
        print(f"| {r['minute']} | {r['rss_mb']:.1f} | {r['fds']:.0f} | {r['sled_mb']:.1f} | {r['cpu_pct']:.0f} | "
              f"{r['load']:.1f} | {r['dns_qps']:,.0f} | {r['dns_answered']:.2f} % | {r['dns_p99']:.1f} | "
              f"{r['api_p99']:.1f} | {r['errors']} |")
    if fails:
        print(f"\nsoak: FAILED: {'; '.join(fails)}")
        sys.exit(1)
    print("\nsoak: every goal met")


DNS_SHARE, PROBE_QPS, API_RATE, LEASE_SECS = (os.environ.get(k, "") for k in ("DNS_SHARE", "PROBE_QPS", "API_RATE", "LEASE_SECS"))

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "probe":
        dns_probe(int(args[0]), int(args[1]))
    elif cmd == "dnsperf":
        dnsperf(int(args[0]), args[1], int(args[2]))
    elif cmd == "dhcp":
        dhcp(int(args[0]))
    elif cmd == "writer":
        writer(args[0], float(args[1]), int(args[2]))
    elif cmd == "sse":
        sse(args[0], int(args[1]))
    elif cmd == "row":
        row(int(args[0]))
    elif cmd == "final":
        final(args[0], int(args[1]))
    elif cmd == "verdict":
        verdict(float(args[0]), int(args[1]), int(args[2]), args[3])
    else:
        sys.exit(f"unknown part {cmd}")
PY
export SOAK_WORK=$WORK DNS_SHARE PROBE_QPS API_RATE LEASE_SECS
py() { python3 "$WORK/soak.py" "$@"; }
inc() { ip netns exec "$CLI" "$@"; } # in the client namespace

# ---- Server, login, records
BOOTLANE_ADMIN_PASSWORD=soak-admin-Hv8qL2xD ip netns exec "$SRV" "$BIN" serve --config "$WORK/bootlane.toml" 2>"$WORK/bootlane.log" &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 100); do inc curl -fs -o /dev/null http://10.77.0.1:8080/api/v1/status && break; sleep 0.2; done
inc curl -fs -o /dev/null http://10.77.0.1:8080/api/v1/status || { cat "$WORK/bootlane.log" >&2; die "Bootlane did not start"; }
COOKIE=$(inc curl -fsi -H 'Content-Type: application/json' -d '{"username": "admin", "password": "soak-admin-Hv8qL2xD"}' \
  http://10.77.0.1:8080/api/v1/auth/login | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -1)
[[ -n $COOKIE ]] || die "login failed"
inc python3 - "$NAMES" "$COOKIE" "$WORK/queries" <<'PY'
import sys, json, random, http.client
n, cookie, queries = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPConnection("10.77.0.1", 8080)
h = {"Content-Type": "application/json", "Cookie": cookie}
for i in range(n):
    c.request("POST", "/api/v1/dns/records", json.dumps({"name": f"host{i}", "type": "A", "value": f"10.{i // 250}.{i % 250}.1"}), h)
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
random.seed(1)
with open(queries, "w") as f:
    f.writelines(f"host{random.randrange(n)}.lab.test A\n" for _ in range(20000))
PY
[[ $(inc dig +short @10.77.0.1 host7.lab.test A) == 10.0.7.1 ]] || die "host7.lab.test does not resolve"
inc curl -s --max-time 10 -o "$DL/tftp.bin" tftp://10.77.0.1/ipxe.efi && cmp -s "$DL/tftp.bin" "$WORK/data/boot/ipxe.efi" ||
  die "TFTP does not serve ipxe.efi"

# ---- DNS capacity, then the load at DNS_SHARE % of it
CAPACITY=$(inc dnsperf -s 10.77.0.1 -p 53 -d "$WORK/queries" -c 10 -T 1 -q 200 -l 5 2>&1 |
  awk '/Queries per second:/ {printf "%d", $4}')
((CAPACITY > 0)) || die "dnsperf measured no capacity"
RATE=$((CAPACITY * DNS_SHARE / 100))
say "DNS capacity $CAPACITY qps (5 s dnsperf, idle server); load $RATE qps; $MINUTES minutes from now"

T0=$(($(date +%s) + 1))
echo "$T0" >"$WORK/t0"
export T0 WORK DL RANGE
sleep_until() { local d=$(($1 - $(date +%s))); ((d <= 0)) || sleep "$d"; }
sleep_until "$T0"

tftp_loop() { # ipxe.efi over TFTP, back to back, byte for byte: "ok" or "fail"
  local r
  while [[ -d $WORK && ! -e $WORK/stop ]]; do
    r=fail
    curl -s --max-time 30 -o "$DL/tftp.bin" tftp://10.77.0.1/ipxe.efi && cmp -s "$DL/tftp.bin" "$WORK/data/boot/ipxe.efi" && r=ok
    echo "$EPOCHREALTIME $r" >>"$WORK/ev/tftp.$((($(date +%s) - T0) / 60))"
  done
}
http_loop() { # GET /boot/soak.bin, whole and a Range, alternating: "ok|fail <kind> <status>"
  local r code i=0 kind
  while [[ -d $WORK && ! -e $WORK/stop ]]; do
    r=fail
    if ((i++ % 2)); then
      kind=range
      code=$(curl -s --max-time 30 -r "$RANGE" -o "$DL/http.bin" -w '%{http_code}' http://10.77.0.1:8080/boot/soak.bin) || true
      [[ $code == 206 ]] && cmp -s "$DL/http.bin" "$WORK/range.bin" && r=ok
    else
      kind=full
      code=$(curl -s --max-time 30 -o "$DL/http.bin" -w '%{http_code}' http://10.77.0.1:8080/boot/soak.bin) || true
      [[ $code == 200 ]] && cmp -s "$DL/http.bin" "$WORK/data/boot/soak.bin" && r=ok
    fi
    echo "$EPOCHREALTIME $r $kind $code" >>"$WORK/ev/http.$((($(date +%s) - T0) / 60))"
  done
}
sampler() { # every 5 s: the server's VmRSS (KiB), open descriptors, sled bytes, CPU ticks
  # (user + system, 1/100 s), the machine's load average, RssAnon and RssFile (KiB), threads
  local rss anon file threads stat load _
  while [[ -d $WORK && ! -e $WORK/stop ]]; do
    read -r rss anon file threads < <(awk '$1 ~ /^(VmRSS|RssAnon|RssFile|Threads):$/ {v[$1] = $2}
      END {print v["VmRSS:"], v["RssAnon:"], v["RssFile:"], v["Threads:"]}' "/proc/$SPID/status")
    read -r -a stat <"/proc/$SPID/stat"
    read -r load _ </proc/loadavg
    echo "$EPOCHREALTIME $rss $(find "/proc/$SPID/fd" -mindepth 1 | wc -l) $(du -sb "$WORK/data/db" | cut -f1)" \
      "$((stat[13] + stat[14])) $load $anon $file $threads" >>"$WORK/ev/res.$((($(date +%s) - T0) / 60))"
    sleep 5
  done
}

declare -A WORKERS=()
# start <name> <command...>: a worker in the client namespace. Its PID is the command's own
# (ip netns exec execs it), so the cleanup's kill reaches it.
start() {
  local name=$1; shift
  ip netns exec "$CLI" "$@" 2>>"$WORK/$name.err" &
  WORKERS[$name]=$!; PIDS+=($!)
}
# SSE subscribers first, so every write's event reaches them.
start sse python3 "$WORK/soak.py" sse "$COOKIE" "$SUBS"
api_conns() { ip netns exec "$SRV" ss -Htn state established '( sport = :8080 )' | wc -l; }
for _ in $(seq 100); do (($(api_conns) >= SUBS)) && break; sleep 0.1; done
(($(api_conns) >= SUBS)) || die "only $(api_conns) of $SUBS SSE subscribers connected"
start dnsperf python3 "$WORK/soak.py" dnsperf "$RATE" "$WORK/queries" "$MINUTES"
start probe python3 "$WORK/soak.py" probe "$PROBE_QPS" "$NAMES"
start dhcp python3 "$WORK/soak.py" dhcp "$DHCP_CLIENTS"
start writer python3 "$WORK/soak.py" writer "$COOKIE" "$API_RATE" "$API_LIVE"
start tftp bash -c "$(declare -f tftp_loop); tftp_loop"
start http bash -c "$(declare -f http_loop); http_loop"
sampler 2>>"$WORK/sampler.err" & # in this namespace: /proc of the server
WORKERS[sampler]=$!; PIDS+=($!)

for ((m = 0; m < MINUTES; m++)); do
  if ((m == MINUTES - 1)); then
    # The load stops on the last minute mark: the writer and the DHCP clients write their
    # state; the subscribers keep reading until stop-sse.
    sleep_until $((T0 + 60 * MINUTES))
    touch "$WORK/stop"
  fi
  sleep_until $((T0 + 60 * (m + 1) + 3))
  kill -0 "$SPID" 2>/dev/null || { tail -20 "$WORK/bootlane.log" >&2; die "the server died in minute $((m + 1))"; }
  for w in "${!WORKERS[@]}"; do
    [[ $w == sse ]] || ((m < MINUTES - 1)) || continue # the others stopped on the mark
    kill -0 "${WORKERS[$w]}" 2>/dev/null || { cat "$WORK/$w.err" >&2; die "the $w worker died in minute $((m + 1))"; }
  done
  py row "$m"
done

wait_for() { # wait_for <pid>: up to 40 s
  for _ in $(seq 400); do kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null || true; return; }; sleep 0.1; done
  say "worker $1 did not stop"
}
for w in "${!WORKERS[@]}"; do [[ $w == sse ]] || wait_for "${WORKERS[$w]}"; done
sleep 2 # for the last events to reach the subscribers
touch "$WORK/stop-sse"
wait_for "${WORKERS[sse]}"
for f in dhcp-state api-state sse-state; do [[ -s $WORK/$f.json ]] || die "$f.json was not written"; done
inc python3 "$WORK/soak.py" final "$COOKIE" "$NAMES"
grep -v '^$' "$WORK"/*.err >&2 || true
py verdict "$GOAL_PCT" "$CAPACITY" "$RATE" "${SOAK_CMD:-scripts/soak.sh <release binary> $MINUTES}"
