# Per-core load for the benchmarks that pin clients and servers to separate cores
# (sourced by bench-boot.sh and bench-dns.sh).
# core_jiffies: "<busy jiffies> <total jiffies>" per core, from /proc/stat ("cpu0 ... cpu1 ...").
core_jiffies() { awk '/^cpu[0-9]/ {b = $2 + $3 + $4 + $7 + $8; t = b + $5 + $6; printf "%s %s ", b, t}' /proc/stat; }
# busy_pct <before> <after>: per-core busy share over the interval, "c0%/c1%".
busy_pct() {
  awk -v a="$1" -v b="$2" 'BEGIN {n = split(a, x, " "); split(b, y, " "); s = "";
    for (i = 1; i < n; i += 2) s = s (s ? "/" : "") sprintf("%.0f%%", 100 * (y[i] - x[i]) / (y[i + 1] - x[i + 1]));
    print s}'
}
