#!/usr/bin/env bash
# The store end to end: an HTTP catalog source served by `python3 -m http.server` in the
# client namespace, Bootlane in the server namespace with it configured; an item is
# imported from it and one from the built-in source, a tampered item (changed after its
# index was written) is refused with nothing written, and once the HTTP source stops, the
# built-in items still list while the source is reported (502 when asked for alone). Run
# as root: scripts/e2e-store.sh <bootlane binary>.
set -euo pipefail
BIN=${1:?usage: e2e-store.sh <bootlane binary>}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e-lib.sh
source "$HERE/e2e-lib.sh"
e2e_init e2e-store 10.83.0
e2e_netns

CAT="$WORK/catalog"
mkdir -p "$CAT"
python3 - "$CAT" <<'PY'
import hashlib, json, pathlib, sys
root = pathlib.Path(sys.argv[1])
def sha(c):
    return hashlib.sha256(json.dumps(c, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
items = [
    ("answer-template", "lab-ks", "Lab kickstart", {"format": "kickstart", "template": "text\nreboot\n"}),
    ("script", "lab-hello", "Lab hello", {"type": "sh", "content": "#!/bin/sh\necho hello {{ who }}\n",
                                           "variables": [{"name": "who", "default": "lab"}]}),
    ("answer-template", "lab-tampered", "Lab tampered", {"format": "kickstart", "template": "text\n"}),
]
index = []
for kind, id_, name, content in items:
    meta = {"type": kind, "id": id_, "name": name, "version": "1", "description": "e2e", "author": "e2e",
            "tags": ["e2e"], "sha256": sha(content)}
    index.append(meta)
    if id_ == "lab-tampered":  # changed after the index was written
        content = {"format": "kickstart", "template": "text\nrootpw --plaintext evil\n"}
        meta = dict(meta, sha256=sha(content))
    p = root / "items" / kind / f"{id_}.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(dict(meta, content=content)))
(root / "index.json").write_text(json.dumps({"format": 1, "items": index}))
PY

log "catalog source: python3 -m http.server on 10.83.0.9:8000"
ip netns exec "$CLI" python3 -m http.server 8000 --bind 10.83.0.9 --directory "$CAT" >"$WORK/http.log" 2>&1 &
HTTP_PID=$!
PIDS+=($HTTP_PID)
for _ in $(seq 1 40); do in_cli curl -fs -o /dev/null http://10.83.0.9:8000/index.json && break; sleep 0.25; done

E2E_EXTRA_TOML='[community]
cache_ttl_secs = 0
timeout_secs = 3

[[community.sources]]
name = "lab"
url = "http://10.83.0.9:8000"'
e2e_start_bootlane "$BIN"

cat_json=$(api GET '/store/catalog?size=1000') || fail "catalog"
[[ $(echo "$cat_json" | json '[s["ok"] for s in d["data"]["sources"]]') == "[True, True]" ]] || fail "sources: $cat_json"
echo "$cat_json" | json '[i["id"] for i in d["data"]["items"] if i["source"]=="lab"]' | grep -q lab-ks || fail "lab-ks not listed"
log "catalog lists both sources"

r=$(api POST /store/import '{"type":"answer-template","id":"lab-ks"}') || fail "import from the HTTP source"
[[ $(echo "$r" | json 'd["data"]["source"]') == lab ]] || fail "source: $r"
r=$(api POST /store/import '{"type":"script","id":"lab-hello","source":"lab"}') || fail "import a script from the HTTP source"
r=$(api POST /store/import '{"type":"baseline","id":"debian-base"}') || fail "import from the built-in source"
[[ $(echo "$r" | json 'len(d["data"]["installed"])') == 4 ]] || fail "baseline: $r"
log "imported lab-ks and lab-hello from lab, debian-base (with its scripts) from builtin"

before=$(api GET /netboot/answer-templates | json 'd["data"]["total"]')
code=$(status POST /api/v1/store/import -H 'Content-Type: application/json' --data '{"type":"answer-template","id":"lab-tampered"}')
[[ $code == 502 ]] || fail "tampered item: HTTP $code $(cat "$WORK/body")"
grep -q 'the index says' "$WORK/body" || fail "tampered: $(cat "$WORK/body")"
after=$(api GET /netboot/answer-templates | json 'd["data"]["total"]')
[[ $before == "$after" ]] || fail "a refused import wrote something ($before -> $after)"
log "tampered item refused (502), nothing written"

kill "$HTTP_PID"
wait "$HTTP_PID" 2>/dev/null || true
cat_json=$(api GET /store/catalog) || fail "catalog with the source down"
[[ $(echo "$cat_json" | json 'd["data"]["sources"][1]["ok"]') == False ]] || fail "lab still ok: $cat_json"
[[ $(echo "$cat_json" | json 'd["data"]["total"]') -ge 20 ]] || fail "builtin hidden: $cat_json"
code=$(status GET '/api/v1/store/catalog?source=lab')
[[ $code == 502 ]] && grep -q 'catalog source \\"lab\\" failed' "$WORK/body" || fail "source=lab: HTTP $code $(cat "$WORK/body")"
log "source down: reported, built-in items still listed, 502 naming it when asked alone"
log "PASS"
