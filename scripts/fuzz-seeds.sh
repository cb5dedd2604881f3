#!/usr/bin/env bash
# Seed corpora for the fuzz targets, from real clients talking to the real server:
# Bootlane runs in a namespace (DNS on port 53 over IPv4 and IPv6, a DHCPv4 and a DHCPv6
# subnet, TFTP with the fuzz fixture's file), tcpdump records the client side of the link
# while dig, kdig, udhcpc, dhclient -6, tftp-hpa and busybox tftp do their usual
# exchanges, and the capture is cut into one seed file per datagram (or per TFTP
# transfer) in each target's input format (see fuzz/fuzz_targets/*.rs):
#   dns_handler  <selector><query>         selector 0x00 (IPv4 client), 0x02 (IPv6 client)
#   xdp          0x00 <selector><query>    and 0x01 <whole frame>, readdressed to the fixture
#   dhcp4/dhcp6  <selector><datagram>      selector 0x00 (server mode), 0x01 (proxy)
#   tftp_packet  <datagram>                every TFTP datagram, both directions
#   tftp_session <len><datagram>...        each transfer's client datagrams in order
# Usage: fuzz-seeds.sh <bootlane binary> <corpus dir>   (root; leaves the pcap beside the
# corpora as capture.pcap). Everything runs in two namespaces this script creates and
# removes; processes it starts are killed by PID.
set -euo pipefail
BIN=${1:?usage: fuzz-seeds.sh <bootlane binary> <corpus dir>}
OUT=${2:?usage: fuzz-seeds.sh <bootlane binary> <corpus dir>}
tag="fz$$"
SRV="${tag}s" CLI="${tag}c"
work=$(mktemp -d /tmp/bootlane-fuzz-seeds.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  ip netns del "$SRV" 2>/dev/null || true
  ip netns del "$CLI" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$OUT"

ip netns add "$SRV"; ip netns add "$CLI"
ip link add "${tag}a" netns "$SRV" type veth peer name "${tag}b" netns "$CLI"
for ns in "$SRV" "$CLI"; do
  ip -n "$ns" link set lo up
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
ip -n "$SRV" addr add 10.79.0.1/24 dev "${tag}a"; ip -n "$SRV" addr add fd79::1/64 dev "${tag}a" nodad
ip -n "$CLI" addr add fd79::2/64 dev "${tag}b" nodad
ip -n "$SRV" link set "${tag}a" up; ip -n "$CLI" link set "${tag}b" up

mkdir -p "$work/data/boot"
# The fuzz fixture's file (fuzz/src/lib.rs: TFTP_FILE, TFTP_FILE_SIZE, tftp_byte).
python3 -c "import sys; sys.stdout.buffer.write(bytes(i * 7 % 251 for i in range(3300)))" >"$work/data/boot/small.bin"
cat >"$work/bootlane.toml" <<EOT
data_dir = "$work/data"
log = "warn"
[api]
listen = "127.0.0.1:8080"
[dns]
listen = ["10.79.0.1", "fd79::1"]
local_domain = "lab.test"
[dns.xdp]
mode = "off"
[[dhcp.subnets]]
mode = "server"
interface = "${tag}a"
cidr = "10.79.0.0/24"
range_start = "10.79.0.100"
range_end = "10.79.0.150"
router = "10.79.0.1"
lease_time_secs = 600
[[dhcp.subnets6]]
mode = "server"
interface = "${tag}a"
prefix = "fd79::/64"
range_start = "fd79::100"
range_end = "fd79::1ff"
lease_time_secs = 600
EOT
BOOTLANE_ADMIN_PASSWORD=seeds-admin-Wp3nT6yH ip netns exec "$SRV" "$BIN" serve --config "$work/bootlane.toml" 2>"$work/bootlane.log" &
pids+=($!)
for _ in $(seq 100); do ip netns exec "$SRV" curl -sf -o /dev/null http://127.0.0.1:8080/api/v1/status && break; sleep 0.1; done
ip netns exec "$SRV" python3 - <<'PY'
import json, http.client
c = http.client.HTTPConnection("127.0.0.1", 8080)
c.request("POST", "/api/v1/auth/login", json.dumps({"username": "admin", "password": "seeds-admin-Wp3nT6yH"}), {"Content-Type": "application/json"})
r = c.getresponse(); r.read()
h = {"Content-Type": "application/json", "Cookie": r.getheader("Set-Cookie").split(";")[0]}
for body in [{"name": "host1", "type": "A", "value": "10.0.0.11"}, {"name": "host1", "type": "AAAA", "value": "fd00::11"},
             {"name": "www", "type": "CNAME", "value": "host1"}, {"name": "@", "type": "MX", "value": "10 host1"}]:
    c.request("POST", "/api/v1/dns/records", json.dumps(body), h)
    r = c.getresponse(); r.read()
PY

ip netns exec "$CLI" tcpdump -i "${tag}b" -U -s 0 -w "$work/capture.pcap" udp 2>"$work/tcpdump.log" &
pids+=($!)
sleep 1
cli() { ip netns exec "$CLI" "$@" >/dev/null 2>&1 || true; }
# DNS: the shapes resolvers and operators send.
for name in host1.lab.test HOST1.Lab.Test www.lab.test lab.test nope.lab.test other.example; do
  for t in A AAAA MX TXT ANY SOA NS; do cli dig +tries=1 +time=1 @fd79::1 "$name" "$t"; done
done
ip netns exec "$CLI" ip addr add 10.79.0.2/24 dev "${tag}b"
for opts in "" "+dnssec" "+cookie" "+nsid" "+norec" "+bufsize=1232" "+noedns" "+subnet=10.0.0.0/24"; do
  # shellcheck disable=SC2086
  cli dig +tries=1 +time=1 @10.79.0.1 $opts host1.lab.test A
done
cli kdig +tries=1 +time=1 @10.79.0.1 host1.lab.test AAAA +dnssec
cli kdig +tries=1 +time=1 @10.79.0.1 www.lab.test A +nsid +padding=64
# DHCPv4 (udhcpc: DISCOVER, REQUEST, RELEASE) with the address removed first.
ip netns exec "$CLI" ip addr del 10.79.0.2/24 dev "${tag}b"
cli timeout 10 udhcpc -i "${tag}b" -n -q -R -t 3 -T 1 -s /bin/true -V "PXEClient:Arch:00007:UNDI:003016"
cli timeout 10 udhcpc -i "${tag}b" -n -q -t 3 -T 1 -s /bin/true
# DHCPv6: Solicit, Request, Release; then an Information-Request.
cli timeout 10 dhclient -6 -1 -v -lf "$work/d6.leases" -pf "$work/d6.pid" -sf /bin/true "${tag}b"
cli timeout 10 dhclient -6 -r -v -lf "$work/d6.leases" -pf "$work/d6.pid" -sf /bin/true "${tag}b"
cli timeout 10 dhclient -6 -S -1 -v -lf "$work/d6i.leases" -pf "$work/d6i.pid" -sf /bin/true "${tag}b"
for f in "$work"/d6.pid "$work"/d6i.pid; do [[ -s $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
# TFTP: plain (IPv4 and IPv6), blksize (busybox), a missing file and an escape attempt.
ip netns exec "$CLI" ip addr add 10.79.0.2/24 dev "${tag}b"
cli tftp 10.79.0.1 -m binary -c get small.bin "$work/t1"
cli busybox tftp -g -b 1024 -r small.bin -l "$work/t2" 10.79.0.1
cli tftp -6 fd79::1 -m binary -c get small.bin "$work/t3"
cli tftp 10.79.0.1 -m binary -c get missing.bin "$work/t5"
cli tftp 10.79.0.1 -m binary -c get ../../etc/passwd "$work/t6"
sleep 1
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
unset 'pids[-1]'
cp "$work/capture.pcap" "$OUT/capture.pcap"

python3 - "$work/capture.pcap" "$OUT" <<'PY'
import hashlib, ipaddress, os, struct, sys
pcap, out = sys.argv[1], sys.argv[2]
data = open(pcap, "rb").read()
assert struct.unpack("<I", data[:4])[0] == 0xA1B2C3D4, "little-endian microsecond pcap expected"
assert struct.unpack("<I", data[20:24])[0] == 1, "Ethernet capture expected"
def seed(target, b):
    d = os.path.join(out, target); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "cap-" + hashlib.sha1(b).hexdigest()[:16]), "wb").write(b)
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack(f"!{len(b)//2}H", b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
FIX4 = (ipaddress.ip_address("10.77.0.2").packed, ipaddress.ip_address("10.77.0.1").packed)
FIX6 = (ipaddress.ip_address("fd77::2").packed, ipaddress.ip_address("fd77::1").packed)
def readdress(frame, off, v6):
    """The frame with the fixture's client/server addresses and fresh checksums."""
    f = bytearray(frame)
    if v6:
        f[off + 8:off + 24], f[off + 24:off + 40] = FIX6
        u = off + 40; plen = struct.unpack("!H", f[off + 4:off + 6])[0]
        udp = f[u:u + plen]; udp[6:8] = b"\0\0"
        c = csum(bytes(f[off + 8:off + 40]) + struct.pack("!IxxxB", len(udp), 17) + bytes(udp))
    else:
        f[off + 12:off + 16], f[off + 16:off + 20] = FIX4
        f[off + 10:off + 12] = b"\0\0"; f[off + 10:off + 12] = struct.pack("!H", csum(bytes(f[off:off + 20])))
        u = off + 20; tot = struct.unpack("!H", f[off + 2:off + 4])[0]
        udp = f[u:off + tot]; udp[6:8] = b"\0\0"
        c = csum(bytes(f[off + 12:off + 20]) + struct.pack("!xBH", 17, len(udp)) + bytes(udp))
    udp[6:8] = struct.pack("!H", c or 0xffff)
    f[u:u + len(udp)] = udp
    return bytes(f)
sessions, tftp_ports = {}, set()
pos, counts = 24, {}
while pos + 16 <= len(data):
    incl = struct.unpack("<I", data[pos + 8:pos + 12])[0]
    frame = data[pos + 16:pos + 16 + incl]; pos += 16 + incl
    off = 12
    et = struct.unpack("!H", frame[off:off + 2])[0]; off += 2
    if et == 0x0800 and frame[off + 9] == 17:
        v6, ihl = False, (frame[off] & 15) * 4
        u = off + ihl
    elif et == 0x86DD and frame[off + 6] == 17:
        v6, u = True, off + 40
    else:
        continue
    sport, dport, ulen = struct.unpack("!HHH", frame[u:u + 6])
    payload = frame[u + 8:u + ulen]
    if dport == 53:
        seed("dns_handler", bytes([2 if v6 else 0]) + payload)
        seed("xdp", bytes([0, 2 if v6 else 0]) + payload)
        seed("xdp", b"\x01" + readdress(frame, off, v6))
    elif dport in (67, 547):
        for sel in (0, 1):
            seed("dhcp6" if v6 else "dhcp4", bytes([sel]) + payload)
    elif sport in (68, 67, 546, 547, 53):
        continue
    else:
        seed("tftp_packet", payload)
        if dport == 69:
            sessions[sport] = [payload]
        elif dport != 69 and sport in sessions:
            sessions[sport].append(payload)
    counts[dport] = counts.get(dport, 0) + 1
for client_port, pkts in sessions.items():
    seed("tftp_session", b"".join(bytes([len(p)]) + p for p in pkts if len(p) < 256))
print("fuzz seeds:", {t: len(os.listdir(os.path.join(out, t))) for t in sorted(os.listdir(out)) if os.path.isdir(os.path.join(out, t))})
PY
