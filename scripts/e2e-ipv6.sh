#!/usr/bin/env bash
# End-to-end test of network boot over IPv6 (OVMF over IPv6 only, with no IPv4 address on
# the lab link, to its iPXE script), run by hand as root or by `cargo xtask test`
# (tests/tests/integration/firmware_netns.rs):
#
#   scripts/e2e-ipv6.sh <path to the bootlane binary>
#
# The lab link has no IPv4 address at all. radvd in the server namespace sends router
# advertisements with the managed and other-config flags (addresses and options come from
# DHCPv6; the prefix is on-link, not autonomous). Bootlane serves [[dhcp.subnets6]]
# fd00:91::/64 in server mode.
#   1. Real DHCPv6 clients: `dhclient -6` gets an IA_NA address from the pool and the
#      boot-file URL (option 59); the lease is in `GET /leases6` and `DELETE /leases6/<duid>` frees it; `dhclient -6 -S`
#      (Information-Request) gets option 59 too; TFTP over IPv6 with tftp-hpa.
#   2. OVMF (the firmware's own IPv6 PXE client; its PXEv4 option switched off through
#      fw_cfg) solicits, is given an address and `tftp://[fd00:91::1]/ipxe.efi`, loads
#      iPXE over TFTP/IPv6; iPXE does its own DHCPv6, gets its script URL
#      `http://[fd00:91::1]:8080/boot/ipxe?mac=...` and runs the script, whose
#      "Bootlane: booting <mac>" line on the serial console is the marker.
#   3. Proxy mode, switched live through `PUT /services/dhcp` (`subnets6`): no address
#      for a plain client, the boot-file URL still for an Information-Request.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary>}")
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
CODE=/usr/share/OVMF/OVMF_CODE_4M.fd
VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
[[ -f $CODE && -f $VARS ]] || { echo "missing $CODE (scripts/setup.sh installs ovmf)" >&2; exit 2; }
command -v radvd >/dev/null || { echo "missing radvd (scripts/setup.sh installs it)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init e2e-ipv6 10.91.0
P=fd00:91
SERVER6="$P::1"
BASE="http://[$SERVER6]:8080"
MAC=52:54:00:91:00:01
E2E_DHCP4=0
E2E_EXTRA_TOML="[[dhcp.subnets6]]
mode = \"server\"
interface = \"br0\"
prefix = \"$P::/64\"
range_start = \"$P::100\"
range_end = \"$P::1ff\"
lease_time_secs = 600"

# ---- the IPv6-only lab ----------------------------------------------------------------------
log "namespaces $SRV / $CLI, work dir $WORK (IPv6 only)"
ip netns add "$SRV"
ip netns add "$CLI"
for ns in "$SRV" "$CLI"; do
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
in_srv sysctl -qw net.ipv6.conf.all.forwarding=1
ip link add vsrv netns "$SRV" type veth peer name vcli netns "$CLI"
in_srv ip link set lo up
in_cli ip link set lo up
in_srv ip link add br0 type bridge
in_srv ip link set vsrv master br0
in_srv ip tuntap add dev tap0 mode tap
in_srv ip link set tap0 master br0
in_srv ip addr add "$SERVER6/64" dev br0 nodad
for l in vsrv tap0 br0; do in_srv ip link set "$l" up; done
in_cli ip addr add "$P::9/64" dev vcli nodad
in_cli ip link set vcli up
in_srv ip -4 addr show dev br0 | grep -q inet && fail "br0 has an IPv4 address"

cat >"$WORK/radvd.conf" <<EOF
interface br0 {
    AdvSendAdvert on;
    MinRtrAdvInterval 3;
    MaxRtrAdvInterval 10;
    AdvManagedFlag on;
    AdvOtherConfigFlag on;
    prefix $P::/64 {
        AdvOnLink on;
        AdvAutonomous off;
    };
};
EOF
ip netns exec "$SRV" radvd -n -C "$WORK/radvd.conf" -p "$WORK/radvd.pid" -m stderr >"$WORK/radvd.log" 2>&1 &
PIDS+=($!)

e2e_start_bootlane "$BIN"
api GET /services/dhcp >"$WORK/dhcp.json"
json 'd["data"]["subnets6"][0]["server"]' <"$WORK/dhcp.json" | grep -qx "$SERVER6" ||
    fail "GET /services/dhcp does not show the IPv6 subnet served from $SERVER6: $(cat "$WORK/dhcp.json")"
log "Bootlane serves DHCPv6 on br0, its API answers at $BASE"

# ---- 1. dhclient -6, Information-Request, TFTP over IPv6 --------------------------------------
cat >"$WORK/dhclient6.conf" <<'EOF'
also request dhcp6.bootfile-url;
EOF
cat >"$WORK/dhclient-script" <<EOF
#!/bin/sh
env | sort >"$WORK/dhclient.\$reason.env"
EOF
chmod +x "$WORK/dhclient-script"
# dhclient6 <name> [dhclient args...]: one dhclient -6 -1 run on vcli with the config and
# script above, its lease, pid and log files named <name>; its daemon is stopped on exit.
dhclient6() {
    local name=$1 rc=0
    shift
    in_cli timeout "${DHCLIENT_SECS:-30}" dhclient -6 -1 -v "$@" -cf "$WORK/dhclient6.conf" -sf "$WORK/dhclient-script" \
        -lf "$WORK/$name.leases" -pf "$WORK/$name.pid" vcli >"$WORK/$name.log" 2>&1 || rc=$?
    [[ -f "$WORK/$name.pid" ]] && PIDS+=("$(cat "$WORK/$name.pid")")
    return $rc
}
dhclient6 dhclient6 || fail "dhclient -6 got no lease: $(tail -n 5 "$WORK/dhclient6.log")"
ADDR=$(sed -n 's/^new_ip6_address=//p' "$WORK/dhclient.BOUND6.env")
[[ "$ADDR" == "$P::1"* ]] || fail "dhclient -6 was bound to '$ADDR', not a pool address"
grep -q "^new_dhcp6_bootfile_url=tftp://\[$SERVER6\]/ipxe.efi" "$WORK/dhclient.BOUND6.env" ||
    fail "no boot-file URL in dhclient's reply: $(grep -i bootfile "$WORK/dhclient.BOUND6.env")"
api GET /leases6 >"$WORK/leases6.json"
json '[l["state"] for l in d["data"]["leases"] if l["ip"] == "'"$ADDR"'"][0]' <"$WORK/leases6.json" | grep -qx active ||
    fail "GET /leases6 does not list $ADDR: $(cat "$WORK/leases6.json")"
log "dhclient -6 leased $ADDR with the boot-file URL; GET /leases6 lists it"
# Stop the daemon so later script runs are the Information-Requests' (dhclient reports a
# stateless reply as reason RENEW6).
kill "$(cat "$WORK/dhclient6.pid")" 2>/dev/null || true
rm -f "$WORK"/dhclient.*.env
DUID=$(json '[l["duid"] for l in d["data"]["leases"] if l["ip"] == "'"$ADDR"'"][0]' <"$WORK/leases6.json")
api DELETE "/leases6/$DUID" >/dev/null || fail "DELETE /leases6/$DUID"
api GET /leases6 | grep -q "\"$ADDR\"" && fail "$ADDR is still listed after DELETE /leases6/$DUID"
api GET "/events?kind=dhcp6.lease.deleted&size=5" | grep -q "$DUID" || fail "no dhcp6.lease.deleted event for $DUID"
[[ $(status DELETE "/api/v1/leases6/$DUID") == 404 ]] || fail "a second DELETE /leases6/$DUID is not a 404"
log "DELETE /leases6/<duid> freed $ADDR (event dhcp6.lease.deleted; again: 404)"

dhclient6 dhclient6-info -S || fail "dhclient -6 -S got no reply: $(tail -n 5 "$WORK/dhclient6-info.log")"
grep -q "^new_dhcp6_bootfile_url=tftp://\[$SERVER6\]/ipxe.efi" "$WORK/dhclient.RENEW6.env" ||
    fail "no boot-file URL in the Information-Request's reply"
log "dhclient -6 -S (Information-Request) got the boot-file URL"

in_cli tftp -6 "$SERVER6" -m octet -c get ipxe.efi "$WORK/ipxe.efi" || fail "tftp -6 get ipxe.efi"
cmp -s "$WORK/ipxe.efi" /usr/lib/ipxe/ipxe.efi || fail "ipxe.efi over TFTP/IPv6 differs from Debian's"
log "TFTP over IPv6: ipxe.efi fetched intact"

# ---- 2. OVMF PXEv6 -> ipxe.efi over TFTP/IPv6 -> iPXE's DHCPv6 -> the script over HTTP/IPv6 --
log "booting OVMF over IPv6 only (PXEv4 off through fw_cfg; up to 300 s)"
e2e_ovmf "$MAC" -fw_cfg name=opt/org.tianocore/IPv4PXESupport,string=n
e2e_wait_serial "$WORK/serial.log" "Bootlane: booting $MAC" 300 "$Q_PID"
DURATION=$(($(date +%s) - T0))
kill "$Q_PID" 2>/dev/null || true
wait "$Q_PID" 2>/dev/null || true
log "OVMF booted over IPv6 and iPXE ran its script after $DURATION s"

api GET /leases6 >"$WORK/leases6.json"
json '[l["ip"] for l in d["data"]["leases"] if l["mac"] == "'"$MAC"'" and l["arch"] == 7][0]' <"$WORK/leases6.json" |
    grep -q "^$P::1" || fail "no DHCPv6 lease of the firmware (MAC $MAC, arch 7): $(cat "$WORK/leases6.json")"
plainlog | grep -a "TFTP transfer ended" | grep -a "file=ipxe.efi" | grep -a "outcome=Complete" |
    grep -v "$P::9\]" | grep -aq "peer=\[$P::1" || fail "no complete TFTP transfer of ipxe.efi to the firmware's IPv6 address"
api GET "/events?kind=boot.ipxe.served&size=50" >"$WORK/ipxe-events.json"
grep -q "served to $MAC" "$WORK/ipxe-events.json" || fail "no boot.ipxe.served event for $MAC"
grep -aq "Start PXE over IPv6" "$WORK/serial.log" || fail "the firmware did not boot through PXE over IPv6"
grep -aq "Filename: http://\[$SERVER6\]:8080/boot/ipxe?mac=$MAC" "$WORK/serial.log" ||
    fail "iPXE did not get its script URL over DHCPv6"
log "server: firmware lease in /leases6, ipxe.efi sent over TFTP/IPv6, then the iPXE script over HTTP/IPv6"

# ---- 3. proxy mode, live ----------------------------------------------------------------------
api PUT /services/dhcp '{"subnets6":[{"prefix":"'"$P"'::/64","mode":"proxy"}]}' >"$WORK/put.json" ||
    fail "PUT /services/dhcp subnets6 mode proxy"
json 'd["data"]["subnets6"][0]["mode"]' <"$WORK/put.json" | grep -qx proxy || fail "the subnet is not in proxy mode"
for _ in $(seq 1 20); do
    api GET /services/dhcp | grep -q '"running":true' && break
    sleep 0.5
done
rm -f "$WORK"/dhclient.*.env
dhclient6 dhclient6-proxy -S || fail "dhclient -6 -S got no reply in proxy mode"
grep -q "^new_dhcp6_bootfile_url=tftp://\[$SERVER6\]/ipxe.efi" "$WORK/dhclient.RENEW6.env" ||
    fail "no boot-file URL for an Information-Request in proxy mode"
if DHCLIENT_SECS=12 dhclient6 dhclient6-p2; then
    fail "a plain client got an address in proxy mode"
fi
log "proxy mode (set live): Information-Request answered with the boot-file URL, no address handed out"
log "boot duration: ${DURATION} s (OVMF under TCG: PXEv6 to ipxe.efi, iPXE's DHCPv6, the script over HTTP)"
log PASS
