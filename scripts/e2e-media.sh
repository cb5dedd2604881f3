#!/usr/bin/env bash
# End-to-end test of boot media, run by hand as root or by
# `cargo xtask test` (tests/tests/integration/media_netns.rs):
#
#   scripts/e2e-media.sh <path to the bootlane binary> --mounted|--extracted [--no-qemu]
#
# Builds a Debian-netinst-shaped ISO with xorriso from the real installer kernel and initrd
# of Debian's debian-installer-12-netboot-amd64 package (install.amd/vmlinuz,
# install.amd/initrd.gz, .disk/info), creates a server namespace (a bridge with a tap for
# QEMU) and a client namespace (curl, over a veth on the same bridge), starts Bootlane with
# one DHCP subnet, and checks, failing on the first miss:
#   1. the file API from the client with curl: upload (multipart), list, the file served
#      at /boot/<path> whole and by Range, hostile paths refused with a 400, delete;
#   2. the ISO uploaded with `curl -F` from the client; its progress events seen on the
#      event stream (curl -N); the image `ready` with the detected kernel and initrd;
#   3. --mounted: a profile made from the image in one call (which mounts it; nothing is
#      extracted on disk) / --extracted: the image extracted first (its tree on disk, not
#      mounted), then the profile;
#   4. (unless --no-qemu) a QEMU BIOS machine with the iPXE ROM, registered as a host with
#      that profile, boots: iPXE fetches the kernel and initrd over HTTP from
#      /boot/images/<id>/ and the installer starts: the kernel's boot line ("Linux
#      version"), then the installer's first question ("Select a language") on the
#      serial console (60-150 s under TCG);
#   5. (--extracted) the netboot cache with curl: a local mirror (python http.server over
#      the real installer files) as the Debian overlay's mirror, the catalog's kernel
#      fetched through /boot/netboot/ twice: one upstream fetch, then a cache hit.
# Traffic stays inside the namespaces it creates; everything it started is stopped by PID
# and the namespaces are deleted on exit. KEEP=1 keeps the work directory after a pass.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: $0 <bootlane binary> --mounted|--extracted [--no-qemu]}")
shift
MODE=""
QEMU=1
for a in "$@"; do
    case "$a" in
    --mounted) MODE=mounted ;;
    --extracted) MODE=extracted ;;
    --no-qemu) QEMU=0 ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
    esac
done
[[ -n "$MODE" ]] || { echo "give --mounted or --extracted" >&2; exit 2; }
[[ -x "$BIN" ]] || { echo "not executable: $BIN" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "must run as root (namespaces)" >&2; exit 2; }
DI=/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64
[[ -f $DI/linux && -f $DI/initrd.gz ]] || { echo "missing $DI (scripts/setup.sh installs debian-installer-12-netboot-amd64)" >&2; exit 2; }

# shellcheck source=scripts/e2e-lib.sh
source "$(dirname "$(readlink -f "$0")")/e2e-lib.sh"
e2e_init "e2e-media $MODE" 10.79.0
# One MAC per mode: the two runs may share nothing, but distinct values read better in logs.
if [[ $MODE == mounted ]]; then MAC=52:54:00:77:09:01; else MAC=52:54:00:77:09:02; fi

# ---- the ISO --------------------------------------------------------------------------
mkdir -p "$WORK/tree/install.amd" "$WORK/tree/.disk"
cp "$DI/linux" "$WORK/tree/install.amd/vmlinuz"
cp "$DI/initrd.gz" "$WORK/tree/install.amd/initrd.gz"
printf 'Debian GNU/Linux 12 "Bookworm" - Official amd64 NETINST (e2e)\n' >"$WORK/tree/.disk/info"
xorriso -as mkisofs -quiet -R -J -V DEBIAN_E2E -o "$WORK/debian.iso" "$WORK/tree" || fail "xorriso"
ISO_SHA=$(sha256sum "$WORK/debian.iso" | cut -d' ' -f1)
log "ISO $(stat -c %s "$WORK/debian.iso") bytes, sha256 $ISO_SHA"

e2e_netns
e2e_start_bootlane "$BIN"

# ---- 1. the file API with curl --------------------------------------------------------
head -c 300000 /dev/urandom >"$WORK/tool.bin"
[[ $(status POST /api/v1/files/upload -F "file=@$WORK/tool.bin;filename=tool.bin") == 201 ]] ||
    fail "file upload: $(cat "$WORK/body")"
api GET '/files?path=' | grep -q '"name":"tool.bin"' || fail "the uploaded file is not listed"
in_cli curl -fsS -o "$WORK/tool.back" "$BASE/boot/tool.bin" || fail "GET /boot/tool.bin"
cmp -s "$WORK/tool.bin" "$WORK/tool.back" || fail "the served file differs from the upload"
[[ $(in_cli curl -fsS -r 100-199 "$BASE/boot/tool.bin" | cmp -s - <(tail -c +101 "$WORK/tool.bin" | head -c 100) && echo same) == same ]] ||
    fail "Range on the uploaded file"
[[ $(status POST /api/v1/files/upload -F "file=@$WORK/tool.bin;filename=tool.bin") == 409 ]] ||
    fail "an upload over an existing file without overwrite was not refused"
for bad in '../escape' '/etc' '%2e%2e' 'ipxe/../../x'; do
    # A curl error (000) is reported by the check below rather than ending the script.
    code=$(status POST /api/v1/files/upload -F "dir=$bad" -F "file=@$WORK/tool.bin;filename=x.bin") || true
    [[ $code == 400 ]] || fail "upload into $bad answered $code, not 400"
done
[[ ! -e "$WORK/escape" && ! -e "$WORK/data/escape" ]] || fail "a hostile upload left a file"
[[ $(status DELETE '/api/v1/files?path=tool.bin') == 200 ]] || fail "delete: $(cat "$WORK/body")"
[[ $(in_cli curl -s -o /dev/null -w '%{http_code}' "$BASE/boot/tool.bin") == 404 ]] || fail "the deleted file is still served"
log "file API ok (upload, list, serve, Range, 409, hostile paths, delete)"

# ---- 2. upload the ISO, watch its events ----------------------------------------------
ip netns exec "$CLI" curl -sS -N -b "$WORK/jar" "$BASE/api/v1/events/stream?kind=os_image." >"$WORK/events.sse" 2>/dev/null &
PIDS+=($!)
sleep 0.5
T0=$(date +%s)
in_cli curl -fsS -m 120 -b "$WORK/jar" -F name="Debian e2e" -F "file=@$WORK/debian.iso;filename=debian-e2e.iso" \
    "$BASE/api/v1/os-images/upload" >"$WORK/upload.json" || fail "ISO upload"
IMG=$(json 'd["data"]["id"]' <"$WORK/upload.json")
[[ $(json 'd["data"]["sha256"]' <"$WORK/upload.json") == "$ISO_SHA" ]] || fail "the sha256 computed while uploading differs"
for _ in $(seq 1 100); do
    state=$(api GET "/os-images/$IMG" | json 'd["data"]["state"]')
    [[ $state == ready || $state == failed ]] && break
    sleep 0.2
done
api GET "/os-images/$IMG" >"$WORK/image.json"
[[ $(json 'd["data"]["state"]' <"$WORK/image.json") == ready ]] || fail "image not ready: $(cat "$WORK/image.json")"
[[ $(json 'd["data"]["detection"]["kernel"]' <"$WORK/image.json") == install.amd/vmlinuz ]] || fail "kernel not detected"
[[ $(json 'd["data"]["detection"]["initrds"]' <"$WORK/image.json") == "['install.amd/initrd.gz']" ]] || fail "initrd not detected"
log "image $IMG ready after $(($(date +%s) - T0)) s: $(json 'd["data"]["detection"]["family"], d["data"]["detection"]["kernel"]' <"$WORK/image.json")"
PROGRESS=$(grep -c '^event: os_image.upload.progress' "$WORK/events.sse" || true)
((PROGRESS >= 5)) || fail "only $PROGRESS progress events on the stream"
grep -q '^event: os_image.ready' "$WORK/events.sse" || fail "no os_image.ready on the stream"
log "events: $PROGRESS upload progress events, then os_image.ready"

# ---- 3. mounted or extracted, then a profile ------------------------------------------
ROOT=$(api GET /files/root | json 'd["data"]["path"]')
if [[ $MODE == extracted ]]; then
    api POST "/os-images/$IMG/extract" >/dev/null || fail "extract"
    for _ in $(seq 1 150); do
        api GET "/os-images/$IMG" >"$WORK/image.json"
        [[ $(json 'd["data"]["state"]' <"$WORK/image.json") == ready ]] && break
        sleep 0.2
    done
    [[ $(json 'd["data"]["extracted"]["files"]' <"$WORK/image.json") == 3 ]] || fail "not extracted: $(cat "$WORK/image.json")"
    cmp -s "$ROOT/images/$IMG/install.amd/vmlinuz" "$DI/linux" || fail "the extracted kernel differs"
    grep -q '^event: os_image.extracted' "$WORK/events.sse" || fail "no os_image.extracted event"
fi
api POST /profiles/from-image "{\"image_id\":$IMG,\"name\":\"di-$MODE\",\"extra_cmdline\":\"console=ttyS0 loglevel=6\"}" >"$WORK/profile.json" ||
    fail "profile from image"
PROFILE=$(json 'd["data"]["id"]' <"$WORK/profile.json")
api GET "/os-images/$IMG" >"$WORK/image.json"
STATE=$(json 'd["data"]["state"]' <"$WORK/image.json")
if [[ $MODE == mounted ]]; then
    [[ $STATE == mounted ]] || fail "the image is $STATE, not mounted"
    [[ ! -e "$ROOT/images/$IMG" ]] || fail "a mounted image has a tree on disk"
else
    [[ $STATE == ready ]] || fail "the extracted image is $STATE"
fi
in_cli curl -fsS -r 0-1 "$BASE/boot/images/$IMG/install.amd/vmlinuz" | od -An -c | tr -d ' \n' | grep -q '^MZ' ||
    fail "the kernel is not served at /boot/images/$IMG/"
[[ $(status DELETE "/api/v1/os-images/$IMG") == 409 ]] || fail "an image in use by a profile was deleted"
grep -q "di-$MODE" "$WORK/body" || fail "the 409 does not name the profile: $(cat "$WORK/body")"
api POST /hosts "{\"name\":\"di-$MODE\",\"mac\":\"$MAC\",\"profile_id\":$PROFILE}" >/dev/null || fail "creating the host"
log "profile di-$MODE ($STATE image) for host $MAC"

# ---- 4. QEMU BIOS machine boots the installer ----------------------------------------
if [[ $QEMU -eq 1 ]]; then
    log "booting a QEMU BIOS machine with the iPXE ROM into the installer (up to 240 s)"
    : >"$WORK/serial.log"
    ip netns exec "$SRV" timeout 260 qemu-system-x86_64 -accel tcg -m 1024 -machine pc,graphics=off \
        -display none -serial "file:$WORK/serial.log" -monitor none -no-reboot -boot n \
        -netdev tap,id=n0,ifname=tap0,script=no,downscript=no \
        -device e1000,netdev=n0,mac=$MAC >"$WORK/qemu.log" 2>&1 &
    PIDS+=($!)
    Q_PID=$!
    T0=$(date +%s)
    KERNEL_AT=""
    while :; do
        if [[ -z $KERNEL_AT ]] && grep -aq "Linux version" "$WORK/serial.log"; then
            KERNEL_AT=$(($(date +%s) - T0))
            log "kernel boot line on serial after $KERNEL_AT s"
        fi
        if [[ -n $KERNEL_AT ]] && grep -aq "Select a language" "$WORK/serial.log"; then
            log "the installer's first question on serial after $(($(date +%s) - T0)) s"
            break
        fi
        kill -0 "$Q_PID" 2>/dev/null || fail "QEMU ended before the installer started; see $WORK/serial.log"
        sleep 2
    done
    kill "$Q_PID" 2>/dev/null || true
    plainlog | grep -q "serving the iPXE script mac=$MAC" || fail "the script was not served to $MAC"
    if [[ $MODE == mounted ]]; then
        [[ ! -e "$ROOT/images/$IMG" ]] || fail "files appeared on disk for a mounted image"
    fi
    for f in install.amd/vmlinuz install.amd/initrd.gz; do
        n=$(api GET "/events?kind=boot.file.served&resource=file&resource_id=images/$IMG/$f" | json 'd["data"]["total"]')
        ((n >= 1)) || fail "no boot.file.served event for images/$IMG/$f"
    done
    log "iPXE fetched images/$IMG/install.amd/{vmlinuz,initrd.gz} over HTTP ($MODE)"
fi
# ---- 5. (--extracted) the netboot cache with a real client --------------------------
# A local "mirror" in the server namespace (python's http.server over a Debian-shaped tree
# holding the real installer files), set as the Debian overlay's mirror; curl fetches the
# catalog's kernel through /boot/netboot/ twice: a miss that fills the cache, then a hit.
if [[ $MODE == extracted ]]; then
    M="$WORK/mirror/debian/dists/bookworm/main/installer-amd64/current/images/netboot/debian-installer/amd64"
    mkdir -p "$M"
    cp "$DI/linux" "$DI/initrd.gz" "$M/"
    ip netns exec "$SRV" python3 -m http.server 8099 --bind "$SERVER" --directory "$WORK/mirror" >"$WORK/mirror.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 50); do in_srv curl -fs -o /dev/null "http://$SERVER:8099/" && break; sleep 0.1; done
    api PUT /netboot/overlays/debian '{"mirror":"http://'"$SERVER"':8099/debian"}' >/dev/null || fail "overlay"
    NB=$(api GET /netboot/catalog/debian | json '[f["path"] for v in d["data"]["entries"] for f in [v["kernel"]] if v["version"]=="12" and v["arch"]=="amd64"][0]')
    for round in miss hit; do
        in_cli curl -fsS -m 60 -o "$WORK/nb-$round" "$BASE/boot/$NB" || fail "GET /boot/$NB ($round)"
        cmp -s "$WORK/nb-$round" "$DI/linux" || fail "the netboot kernel ($round) differs from the mirror's"
    done
    api GET /netboot/cache-stats >"$WORK/cache.json"
    [[ $(json 'd["data"]["misses"] >= 1 and d["data"]["hits"] >= 1 and d["data"]["entries"] >= 1' <"$WORK/cache.json") == True ]] ||
        fail "cache stats: $(cat "$WORK/cache.json")"
    [[ $(grep -c "GET /debian/dists/bookworm/.*/linux" "$WORK/mirror.log") == 1 ]] || fail "the mirror was not asked exactly once"
    log "netboot cache: $NB fetched from the mirror once, then served from the cache ($(json 'd["data"]' <"$WORK/cache.json"))"
fi
log PASS
