#!/usr/bin/env python3
"""Builds (or checks) the index of a Bootlane community catalog source.

A source is a directory (or the same tree served over HTTP) holding `index.json` and one
JSON file per item at `items/<type>/<id>.json` (a fixed layout: the index has no paths). Each item's `sha256` is the SHA-256 of
its `content` in canonical JSON: keys sorted, no whitespace, UTF-8, no floats, i.e.
`json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
This tool recomputes every item's sha256 (writing it into the item file) and rewrites
`index.json` from the items' metadata, in a stable order.

    scripts/catalog-index.py controlplane/crates/install/catalog          # rewrite
    scripts/catalog-index.py --check controlplane/crates/install/catalog  # exit 1 when out of date
"""
import hashlib
import json
import pathlib
import sys

META = ("type", "id", "name", "version", "description", "author", "tags")
TYPES = ("answer-template", "profile", "netboot", "script", "baseline")


def canonical_sha256(content):
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dump(obj):
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    root = pathlib.Path(args[0])
    entries, stale = [], []
    for path in sorted(root.glob("items/*/*.json")):
        item = json.loads(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()
        if item.get("type") not in TYPES:
            sys.exit(f"{rel}: 'type' must be one of {', '.join(TYPES)}")
        if f"items/{item['type']}/{item['id']}.json" != rel:
            sys.exit(f"{rel}: must be at items/<type>/<id>.json")
        digest = canonical_sha256(item["content"])
        if item.get("sha256") != digest:
            stale.append(rel)
            item["sha256"] = digest
            if not check:
                path.write_text(dump(item), encoding="utf-8")
        entry = {k: item[k] for k in META if k in item}
        entry["sha256"] = digest
        entries.append(entry)
    index = dump({"format": 1, "items": entries})
    index_path = root / "index.json"
    if not index_path.exists() or index_path.read_text(encoding="utf-8") != index:
        stale.append("index.json")
        if not check:
            index_path.write_text(index, encoding="utf-8")
    if check and stale:
        sys.exit("out of date (run scripts/catalog-index.py): " + ", ".join(stale))
    print(f"{len(entries)} item(s); {'checked' if check else 'written'}")


if __name__ == "__main__":
    main(sys.argv[1:])
