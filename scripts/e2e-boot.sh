#!/usr/bin/env bash
# End-to-end test of the boot path, run by hand as root:
#
#   scripts/e2e-boot.sh <path to the bootlane binary> [--no-qemu] [--uefi] [--proxy] [--tls]
#
# Creates two network namespaces with unique names (server and client, joined by a veth
# pair through a bridge that also carries a tap device for QEMU), starts Bootlane in the
# server namespace with one DHCP subnet in server mode, then checks:
#   1. udhcpc gets a lease with the expected options (plain, PXE BIOS and iPXE clients);
#   2. curl and tftp-hpa fetch undionly.kpxe by TFTP (with and without options);
#   3. HTTP boot: the iPXE script and a Range request on a boot file;
#   4. (unless --no-qemu) the BIOS machine's MAC is registered through the API as a host
#      with its own profile (a custom entry printing a profile marker), and a QEMU BIOS
#      machine with the iPXE ROM boots to that profile's script: the profile marker on
#      the serial console proves the per-host choice end to end;
#   5. (with --uefi) a QEMU UEFI (OVMF) machine with the firmware's own PXE client fetches
#      ipxe.efi by TFTP (after its tsize-only probe), and that iPXE then gets the script
#      and prints the marker (150-300 s under TCG); its boot session holds the firmware's
#      DHCP, the NBP over TFTP, iPXE's DHCP and the script.
# With --proxy, Bootlane runs in proxyDHCP mode next to a dnsmasq DHCP server in a third
# namespace on the same bridge: clients get their address from dnsmasq and only the boot
# information from Bootlane (ports 67 and 4011); plain clients are left to dnsmasq.
# With --tls, the management plane and the boot plane listen apart: the API and the UI
# over HTTPS on 8443 with a certificate that Bootlane orders from pebble (the ACME test
# server, RFC 8555, started in the server namespace; HTTP-01 answered on the boot
# listener), and /boot over plain HTTP on 8080. curl verifies the chain against pebble's
# root for every API call, Chromium (web/tests/https-check.mjs) loads the UI over HTTPS,
# refusing it without the root and accepting it with it, and the QEMU BIOS machine boots
# through the plain boot listener.
# Traffic stays inside the namespaces it creates; everything it started is stopped by
# PID and the namespaces are deleted on exit. Exits non-zero on the first failure.
# KEEP=1 keeps the work directory (logs, serial console, leases) after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary> [--no-qemu] [--uefi] [--proxy] [--tls]}")
shift
QEMU=1
UEFI=0
PROXY=0
TLS=0
for a in "$@"; do
    case "$a" in
    --no-qemu) QEMU=0 ;;
    --uefi) UEFI=1 ;;
    --proxy) PROXY=1 ;;
    --tls) TLS=1 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
    esac
done
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }

ID="$$-$RANDOM"
SRV="bl-srv-$ID"
CLI="bl-cli-$ID"
DHNS="bl-dhcp-$ID"
WORK=$(mktemp -d /tmp/bootlane-e2e.XXXXXX)
PIDS=()
MAC=52:54:00:77:00:42
SERVER=10.77.0.1
ADMIN_PASSWORD=e2e-admin-Rk4mZ8qW
# The management plane's name in --tls mode (in the namespace's hosts file).
MGMT_NAME=bootlane.test

log() { printf '[e2e-boot] %s\n' "$*"; }
fail() {
    printf '[e2e-boot] FAIL: %s\n' "$*" >&2
    if [[ -f "$WORK/bootlane.log" ]]; then
        echo "---- last lines of the Bootlane log ----" >&2
        tail -n 40 "$WORK/bootlane.log" >&2 || true
    fi
    exit 1
}

cleanup() {
    local rc=$?
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    ip netns del "$CLI" 2>/dev/null || true
    ip netns del "$DHNS" 2>/dev/null || true
    ip netns del "$SRV" 2>/dev/null || true
    rm -rf "/etc/netns/$SRV"
    if [[ $rc -eq 0 && -z "${KEEP:-}" ]]; then
        rm -rf "$WORK"
    else
        echo "[e2e-boot] artefacts kept in $WORK" >&2
    fi
    exit $rc
}
trap cleanup EXIT INT TERM

in_srv() { ip netns exec "$SRV" "$@"; }
# The Bootlane log without ANSI colour codes.
# Readers piped into `grep -q`: grep exits at the first match and the reader may then die
# of SIGPIPE, which `pipefail` would count as a failed pipeline (a false "not found" that
# grows likelier as the log grows). `|| true` keeps the reader's status out of it.
plainlog() { sed 's/\x1b\[[0-9;]*m//g' "$WORK/bootlane.log" || true; }
serial() { tr -d '\r' <"$1" || true; }
in_cli() { ip netns exec "$CLI" "$@"; }

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
in_cli ip link set vcli up
if [[ $PROXY -eq 1 ]]; then
    # The "existing" DHCP server: dnsmasq in its own namespace on the bridge.
    ip netns add "$DHNS"
    ip link add vdh netns "$SRV" type veth peer name vdhcp netns "$DHNS"
    in_srv ip link set vdh master br0
    in_srv ip link set vdh up
    ip netns exec "$DHNS" ip link set lo up
    ip netns exec "$DHNS" ip addr add 10.77.0.2/24 dev vdhcp
    ip netns exec "$DHNS" ip link set vdhcp up
    ip netns exec "$DHNS" dnsmasq -k --no-resolv --no-hosts --conf-file=/dev/null --port=0 -u root \
        --interface=vdhcp --bind-interfaces --dhcp-range=10.77.0.200,10.77.0.220,255.255.255.0,10m \
        --dhcp-option=3,10.77.0.2 --dhcp-leasefile="$WORK/dnsmasq.leases" --log-dhcp --log-facility=- \
        >"$WORK/dnsmasq.log" 2>&1 &
    PIDS+=($!)
fi
if [[ $QEMU -eq 1 ]]; then
    in_srv ip tuntap add dev tap0 mode tap
    in_srv ip link set tap0 master br0
    in_srv ip link set tap0 up
fi

if [[ $TLS -eq 1 ]]; then
    # `ip netns exec` puts /etc/netns/<ns>/hosts over /etc/hosts: the management name is
    # loopback for pebble (which validates HTTP-01 there), curl and Chromium.
    mkdir -p "/etc/netns/$SRV"
    printf '127.0.0.1 localhost %s\n::1 localhost\n' "$MGMT_NAME" >"/etc/netns/$SRV/hosts"
    # Pebble's own HTTPS certificate from a throwaway CA (Debian's package ships none).
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=pebble-test-ca \
        -keyout "$WORK/pebble-ca.key" -out "$WORK/pebble-ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
        -keyout "$WORK/pebble.key" -out "$WORK/pebble.csr" 2>/dev/null
    openssl x509 -req -in "$WORK/pebble.csr" -CA "$WORK/pebble-ca.pem" -CAkey "$WORK/pebble-ca.key" -days 2 \
        -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n') -out "$WORK/pebble.pem" 2>/dev/null
    cat >"$WORK/pebble.json" <<EOF
{"pebble": {"listenAddress": "127.0.0.1:14000", "managementListenAddress": "127.0.0.1:15000",
 "certificate": "$WORK/pebble.pem", "privateKey": "$WORK/pebble.key",
 "httpPort": 8080, "tlsPort": 5001, "ocspResponderURL": "", "externalAccountBindingRequired": false}}
EOF
    # Straight through `ip netns exec` (not the in_srv function, whose background subshell
    # would be the PID recorded): cleanup must stop pebble itself.
    ip netns exec "$SRV" env PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 pebble -config "$WORK/pebble.json" >"$WORK/pebble.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 60); do
        in_srv curl -fs --cacert "$WORK/pebble-ca.pem" -o /dev/null https://localhost:14000/dir && break
        sleep 0.25
    done
    in_srv curl -fs --cacert "$WORK/pebble-ca.pem" -o /dev/null https://localhost:14000/dir || fail "pebble did not come up"
    cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"

[api]
listen = "0.0.0.0:8443"
boot_listen = "0.0.0.0:8080"
tls = "acme"
tls_names = ["$MGMT_NAME"]
acme_directory_url = "https://localhost:14000/dir"
acme_ca_file = "$WORK/pebble-ca.pem"

[dns.xdp]
mode = "off"

EOF
    MGMT="https://$MGMT_NAME:8443"
else
    cat >"$WORK/bootlane.toml" <<EOF
data_dir = "$WORK/data"

[api]
listen = "0.0.0.0:8080"

[dns.xdp]
mode = "off"

EOF
    MGMT="http://127.0.0.1:8080"
fi
if [[ $PROXY -eq 1 ]]; then
    cat >>"$WORK/bootlane.toml" <<EOF
[[dhcp.subnets]]
mode = "proxy"
interface = "br0"
cidr = "10.77.0.0/24"
EOF
else
    cat >>"$WORK/bootlane.toml" <<EOF
[[dhcp.subnets]]
mode = "server"
interface = "br0"
cidr = "10.77.0.0/24"
range_start = "10.77.0.100"
range_end = "10.77.0.150"
router = "$SERVER"
lease_time_secs = 600
EOF
fi

log "starting Bootlane"
ip netns exec "$SRV" env BOOTLANE_LOG="info,bootlane=debug" BOOTLANE_ADMIN_PASSWORD="$ADMIN_PASSWORD" "$BIN" serve --config "$WORK/bootlane.toml" \
    >"$WORK/bootlane.log" 2>&1 &
PIDS+=($!)
BL_PID=$!
for _ in $(seq 1 60); do
    if in_srv curl -fs -o /dev/null "http://$SERVER:8080/boot/ipxe"; then break; fi
    kill -0 "$BL_PID" 2>/dev/null || fail "Bootlane exited during start-up"
    sleep 0.5
done
in_srv curl -fs -o /dev/null "http://$SERVER:8080/boot/ipxe" || fail "Bootlane API did not come up"
# curl's options for the management plane: with --tls, the chain is verified against the
# root pebble issues from (a new one at every pebble start).
MGMT_CURL=()
if [[ $TLS -eq 1 ]]; then
    in_srv curl -fsS --cacert "$WORK/pebble-ca.pem" -o "$WORK/acme-root.pem" https://localhost:15000/roots/0 ||
        fail "pebble's root"
    MGMT_CURL=(--cacert "$WORK/acme-root.pem")
    for _ in $(seq 1 120); do
        in_srv curl -fs "${MGMT_CURL[@]}" -o "$WORK/status.json" "$MGMT/api/v1/status" && break
        kill -0 "$BL_PID" 2>/dev/null || fail "Bootlane exited while ordering its certificate"
        sleep 0.25
    done
    in_srv curl -fsS "${MGMT_CURL[@]}" -o "$WORK/status.json" "$MGMT/api/v1/status" ||
        fail "curl does not verify the management certificate against pebble's root"
    grep -q '"source":"acme"' "$WORK/status.json" || fail "the certificate is not from ACME: $(cat "$WORK/status.json")"
    # The planes refuse each other's routes.
    [[ $(in_srv curl -s -o /dev/null -w '%{http_code}' "http://$SERVER:8080/api/v1/status") == 404 ]] ||
        fail "the boot listener answers the API"
    [[ $(in_srv curl -s "${MGMT_CURL[@]}" -o /dev/null -w '%{http_code}' "$MGMT/boot/ipxe") == 404 ]] ||
        fail "the management listener answers /boot"
    log "HTTPS ok: pebble issued the management certificate, curl verifies it; the planes are apart"
    (cd "$(dirname "$0")/../web" && in_srv node tests/https-check.mjs "$MGMT" "$WORK/acme-root.pem" "$ADMIN_PASSWORD") \
        >"$WORK/https-check.log" 2>&1 || { cat "$WORK/https-check.log" >&2; fail "Chromium over HTTPS"; }
    log "$(grep -h 'https-check: PASS' "$WORK/https-check.log")"
fi

# ---- 1. DHCP with udhcpc ------------------------------------------------------------
cat >"$WORK/udhcpc.sh" <<'EOF'
#!/bin/sh
# Records what udhcpc got; configures nothing but the address (for the TFTP/HTTP steps).
[ "$1" = "bound" ] || exit 0
env | grep -E '^(ip|subnet|router|dns|domain|lease|serverid|siaddr|boot_file|bootfile|tftp)=' | sort >"$OUT"
ip addr flush dev "$interface"
ip addr add "$ip/$mask" dev "$interface"
EOF
chmod +x "$WORK/udhcpc.sh"

dhcp() { # <name> <extra udhcpc args...>
    local name=$1
    shift
    in_cli env OUT="$WORK/lease-$name.env" \
        udhcpc -i vcli -f -q -n -t 4 -T 2 -s "$WORK/udhcpc.sh" "$@" >"$WORK/udhcpc-$name.log" 2>&1 ||
        fail "udhcpc ($name) got no lease; see $WORK/udhcpc-$name.log"
    log "lease ($name): $(tr '\n' ' ' <"$WORK/lease-$name.env")"
}
expect() { # <file> <line>
    grep -qxF "$2" "$1" || fail "expected '$2' in $(basename "$1"): $(tr '\n' ' ' <"$1")"
}

if [[ $PROXY -eq 1 ]]; then
    # A plain client is dnsmasq's: Bootlane stays silent, so the lease and its options
    # come from dnsmasq alone and carry no boot file.
    dhcp plain
    L="$WORK/lease-plain.env"
    grep -qE '^ip=10\.77\.0\.(20[0-9]|21[0-9]|220)$' "$L" || fail "address not from dnsmasq: $(cat "$L")"
    expect "$L" "serverid=10.77.0.2"
    grep -q '^boot_file=.' "$L" && fail "a plain client must not get a boot file"
    plainlog | grep -q "proxyDHCP reply" && fail "Bootlane answered a non-PXE client in proxy mode"
else
    dhcp plain
    L="$WORK/lease-plain.env"
    grep -qE '^ip=10\.77\.0\.(1[0-4][0-9]|150)$' "$L" || fail "address not from the pool: $(cat "$L")"
    expect "$L" "subnet=255.255.255.0"
    expect "$L" "router=$SERVER"
    expect "$L" "dns=$SERVER"
    expect "$L" "domain=bootlane.local"
    expect "$L" "lease=600"
    expect "$L" "serverid=$SERVER"
    grep -q '^boot_file=.' "$L" && fail "a plain client must not get a boot file"
    PLAIN_IP=$(sed -n 's/^ip=//p' "$L")

    dhcp pxe -V "PXEClient:Arch:00000:UNDI:002001" -x 0x5d:0000
    L="$WORK/lease-pxe.env"
    expect "$L" "ip=$PLAIN_IP" # same MAC, same address
    expect "$L" "siaddr=$SERVER"
    expect "$L" "boot_file=undionly.kpxe"
    expect "$L" "tftp=$SERVER"

    dhcp uefi -V "PXEClient:Arch:00007:UNDI:003016"
    expect "$WORK/lease-uefi.env" "boot_file=ipxe.efi"

    dhcp ipxe -V "PXEClient:Arch:00000:UNDI:002001" -x 0x4d:69505845
    expect "$WORK/lease-ipxe.env" 'boot_file=http://10.77.0.1:8080/boot/ipxe?mac=${netX/mac}'
fi
log "DHCP ok"

# ---- 2. TFTP --------------------------------------------------------------------------
REF=/usr/lib/ipxe/undionly.kpxe
in_cli curl -fsS "tftp://$SERVER/undionly.kpxe" -o "$WORK/u1.kpxe" || fail "curl tftp (plain)"
cmp -s "$REF" "$WORK/u1.kpxe" || fail "TFTP download differs (plain)"
in_cli curl -fsS --tftp-blksize 1468 "tftp://$SERVER/undionly.kpxe" -o "$WORK/u2.kpxe" || fail "curl tftp (blksize)"
cmp -s "$REF" "$WORK/u2.kpxe" || fail "TFTP download differs (blksize 1468)"
(cd "$WORK" && in_cli tftp "$SERVER" -m binary -c get undionly.kpxe u3.kpxe) || fail "tftp-hpa get"
cmp -s "$REF" "$WORK/u3.kpxe" || fail "TFTP download differs (tftp-hpa)"
if in_cli curl -fsS "tftp://$SERVER/../../etc/passwd" -o "$WORK/escape" 2>/dev/null; then
    fail "TFTP served a path outside the boot root"
fi
log "TFTP ok"

# ---- 3. HTTP boot -------------------------------------------------------------------
in_cli curl -fsS "http://$SERVER:8080/boot/ipxe?mac=$MAC" -o "$WORK/script.ipxe" || fail "GET /boot/ipxe"
head -n1 "$WORK/script.ipxe" | grep -qx '#!ipxe' || fail "the script does not start with #!ipxe"
grep -qF "echo Bootlane: booting $MAC" "$WORK/script.ipxe" || fail "no marker in the script"
RANGE=$(in_cli curl -fsS -r 0-3 "http://$SERVER:8080/boot/ipxe.efi" | od -An -c | tr -d ' \n')
[[ "$RANGE" == "MZ"* ]] || fail "Range request on ipxe.efi returned '$RANGE'"
log "HTTP boot ok"

# ---- 4. QEMU BIOS + iPXE ROM ----------------------------------------------------------
# The BIOS machine is registered as a host with its own profile, whose default entry is a
# custom script that prints a profile marker and reboots: the boot must reach that entry.
api() { # api METHOD PATH [JSON] -> body; fails unless 2xx
    in_srv curl -fsS -m 10 "${MGMT_CURL[@]}" -b "$WORK/jar" -c "$WORK/jar" -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data-binary "$3"} "$MGMT/api/v1$2"
}
PROFILE_MARK="Bootlane-profile: lab-custom-$ID"
if [[ $QEMU -eq 1 ]]; then
    api POST /auth/login "{\"username\":\"admin\",\"password\":\"$ADMIN_PASSWORD\"}" >/dev/null || fail "API login"
    PID_JSON=$(api POST /profiles "{\"name\":\"lab-custom\",\"timeout_secs\":1,\"entries\":[{\"label\":\"Custom\",\"type\":\"custom\",\"is_default\":true,\"script\":\"echo $PROFILE_MARK .\\nsleep 3\\nreboot\"}]}") ||
        fail "creating the profile"
    PROFILE_ID=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])' <<<"$PID_JSON")
    api POST /hosts "{\"name\":\"bios42\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE_ID}" >/dev/null || fail "creating the host"
    api GET "/hosts/$(api GET '/hosts?q=bios42' | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["hosts"][0]["id"])')/boot-config" |
        grep -qF "$PROFILE_MARK" || fail "boot-config of the host lacks its profile's script"
    log "host bios42 ($MAC) registered with profile lab-custom"
fi
if [[ $QEMU -eq 1 ]]; then
    log "booting a QEMU BIOS machine with the iPXE ROM (up to 170 s)"
    : >"$WORK/serial.log"
    ip netns exec "$SRV" timeout 170 qemu-system-x86_64 -accel tcg -m 256 -machine pc,graphics=off \
        -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot -boot n \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device e1000,netdev=n0,mac=$MAC >"$WORK/qemu.log" 2>&1 &
    PIDS+=($!)
    Q_PID=$!
    T0=$(date +%s)
    while :; do
        if serial "$WORK/serial.log" | grep -qF "$PROFILE_MARK"; then
            log "profile marker seen on serial after $(($(date +%s) - T0)) s"
            break
        fi
        # The profile's script ends with `reboot`, which ends QEMU (-no-reboot): look once
        # more after it is gone.
        if ! kill -0 "$Q_PID" 2>/dev/null; then
            serial "$WORK/serial.log" | grep -qF "$PROFILE_MARK" && continue
            fail "QEMU ended without the profile marker; see $WORK/serial.log"
        fi
        sleep 1
    done
    kill "$Q_PID" 2>/dev/null || true
    wait "$Q_PID" 2>/dev/null || true
    if [[ $PROXY -eq 1 ]]; then
        plainlog | grep -q "proxyDHCP reply mac=$MAC port=67" || fail "no proxyDHCP offer to $MAC"
        # iPXE takes the boot file from the proxy offer itself; a PXE ROM that asks on
        # port 4011 shows up here too.
        log "proxyDHCP replies to $MAC: $(plainlog | grep -c "proxyDHCP reply mac=$MAC")"
        grep -q "DHCPACK.*10.77.0.2[0-9][0-9] $MAC" "$WORK/dnsmasq.log" || fail "dnsmasq did not lease to $MAC"
    else
        plainlog | grep -q "DHCPACK mac=$MAC" || fail "no DHCPACK for $MAC in the Bootlane log"
    fi
    plainlog | grep -q "serving the iPXE script mac=$MAC" || fail "the script was not served to $MAC"
    log "QEMU BIOS ok"
fi

# ---- 5. QEMU UEFI (OVMF) with the firmware's PXE client ------------------------------
if [[ $QEMU -eq 1 && $UEFI -eq 1 ]]; then
    UMAC=52:54:00:77:00:44
    log "booting a QEMU UEFI machine with the firmware's PXE client (up to 300 s)"
    cp /usr/share/OVMF/OVMF_VARS_4M.fd "$WORK/vars.fd"
    : >"$WORK/serial-uefi.log"
    ip netns exec "$SRV" timeout 300 qemu-system-x86_64 -accel tcg -m 512 -machine q35 \
        -display none -serial "file:$WORK/serial-uefi.log" -monitor none -no-reboot -boot n \
        -drive if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd \
        -drive if=pflash,format=raw,file="$WORK/vars.fd" \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device virtio-net-pci,netdev=n0,mac=$UMAC,romfile= >"$WORK/qemu-uefi.log" 2>&1 &
    PIDS+=($!)
    Q_PID=$!
    T0=$(date +%s)
    while :; do
        if serial "$WORK/serial-uefi.log" | grep -qF "Bootlane: booting $UMAC"; then
            log "UEFI marker seen on serial after $(($(date +%s) - T0)) s"
            break
        fi
        kill -0 "$Q_PID" 2>/dev/null || fail "UEFI QEMU ended without the marker; see $WORK/serial-uefi.log"
        sleep 2
    done
    kill "$Q_PID" 2>/dev/null || true
    plainlog | grep -qE "TFTP transfer ended .*file=ipxe.efi .*outcome=Complete" ||
        fail "no complete TFTP transfer of ipxe.efi in the Bootlane log"
    log "TFTP transfers of ipxe.efi: $(plainlog | grep -E 'TFTP transfer ended .*file=ipxe.efi' | sed 's/.*outcome=/outcome=/' | tr '\n' ' ')"
    # The boot session: the firmware's DISCOVER (x86-64 UEFI), ipxe.efi over TFTP (the NBP),
    # iPXE's own DHCP and its script, one session.
    SID=$(api GET "/boot-sessions?mac=$UMAC&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])') ||
        fail "no boot session of $UMAC"
    api GET "/boot-sessions/$SID" | python3 -c '
import json, sys
s = json.load(sys.stdin)["data"]
steps = s["steps"]
for st in steps:
    print("  +%7d ms %-9s %s" % (st["offset_ms"], st["kind"], st["summary"]))
firmware = any(st["kind"] == "dhcp" and st["details"].get("arch") == 7 and not st["details"]["ipxe"] for st in steps)
nbp = any(st["kind"] == "tftp" and st["details"]["file"].lstrip("/") == "ipxe.efi" and st["ok"] for st in steps)
ipxe = any(st["kind"] == "dhcp" and st["details"]["ipxe"] for st in steps) and any(st["kind"] == "ipxe" for st in steps)
print("session %s: %s: %s" % (s["id"], s["verdict"], s["reason"]))
sys.exit(0 if firmware and nbp and ipxe else 1)' >"$WORK/session-uefi.txt" || { cat "$WORK/session-uefi.txt" >&2; fail "the UEFI boot session lacks the firmware DHCP, the ipxe.efi TFTP or the iPXE script"; }
    while IFS= read -r l; do log "$l"; done <"$WORK/session-uefi.txt"
    log "QEMU UEFI ok"
fi

log "PASS"
