#!/usr/bin/env bash
# The medians of a verbs benchmark file (build/vm/verbs-bench.txt or
# build/vm/verbs-bench-bench.txt: VMBENCH lines of tests/vm/verbs-bench.sh)
# and the ratios issue 26 asks for: accdma-bw's pair bandwidth against
# ib_write_bw and ib_read_bw, and its 8-byte round's p50 against
# ib_send_lat's typical latency (half a round trip, as perftest reports
# it) and against the round trip (twice that). Each ratio is also taken
# round by round, and its median given.
#   tests/vm/verbs-bench-summary.sh FILE
set -euo pipefail
file=${1:?usage: verbs-bench-summary.sh FILE}
awk '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : "none"
}
$1 == "VMBENCH" && $6 == "round" && $4 != "none" {
	v[$2, $3] = v[$2, $3] " " $4; r[$2, $3, $7] = $4; rounds[$7] = 1
}
END {
	printf "%-10s %14s %14s %14s %10s %10s\n", "size", "accdma-bw", "ib_write_bw", "ib_read_bw", "/write", "/read"
	split("65536 1048576 4194304", sizes, " ")
	for (k = 1; k <= 3; k++) {
		s = sizes[k]; rw = ""; rr = ""
		for (n in rounds) {
			if (r["accdma-bw-pair", s, n] && r["ib_write_bw", s, n]) rw = rw " " r["accdma-bw-pair", s, n] / r["ib_write_bw", s, n]
			if (r["accdma-bw-pair", s, n] && r["ib_read_bw", s, n]) rr = rr " " r["accdma-bw-pair", s, n] / r["ib_read_bw", s, n]
		}
		printf "%-10s %9s Gb/s %9s Gb/s %9s Gb/s %9.2fx %9.2fx\n", s, median(v["accdma-bw-pair", s]),
		       median(v["ib_write_bw", s]), median(v["ib_read_bw", s]), median(rw), median(rr)
	}
	rl = ""
	for (n in rounds)
		if (r["accdma-bw-pair", 8, n] && r["ib_send_lat", 8, n]) rl = rl " " r["accdma-bw-pair", 8, n] / r["ib_send_lat", 8, n]
	printf "8 bytes: accdma-bw round p50 %s us, ib_send_lat typical %s us: %.2fx (%.2fx a round trip)\n",
	       median(v["accdma-bw-pair", 8]), median(v["ib_send_lat", 8]), median(rl), median(rl) / 2
	printf "(medians of %d rounds; ratios: the median of the per-round ratios)\n", length(rounds)
}' "$file"
