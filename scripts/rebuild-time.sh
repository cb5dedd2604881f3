#!/usr/bin/env bash
# Times the edit-and-rebuild loop of a developer: in the workspace at DIR (default: this
# one), changes the first string literal on line LINE of FILE (a character appended to it,
# then taken away again), rebuilds the server with `cargo build -p bootlane` (dev profile,
# incremental) and prints each rebuild's seconds and their median. The file is restored
# whatever happens. Run it on a tree that is already built, on an idle machine.
#
#   scripts/rebuild-time.sh controlplane/crates/dns/src/dns/handler.rs 713 [RUNS] [DIR]
set -euo pipefail
file=$1 line=$2 runs=${3:-3} dir=${4:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$dir"
cp "$file" "$file.rebuild-time.orig"
trap 'mv "$file.rebuild-time.orig" "$file"; cargo build -q -p bootlane 2>/dev/null || true' EXIT
cargo build -q -p bootlane 2>/dev/null
times=()
for i in $(seq "$runs"); do
  # Alternate two edits so each build sees a change: `"` -> `"~` on even runs, back on odd.
  if (( i % 2 )); then sed -i "${line}s/\"/\"~/" "$file"; else cp "$file.rebuild-time.orig" "$file"; fi
  start=$(date +%s.%N)
  cargo build -q -p bootlane 2>/dev/null
  end=$(date +%s.%N)
  times+=("$(awk "BEGIN { printf \"%.1f\", $end - $start }")")
  echo "run $i: ${times[-1]} s"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median of %d: %.1f s\n", NR, a[int((NR+1)/2)]}'
