#!/usr/bin/env bash
# The medians of a verbs benchmark file (build/vm/verbs-bench.txt or
# build/vm/verbs-bench-bench.txt: VMBENCH lines of tests/vm/verbs-bench.sh)
# and the ratios issue 26 asks for: accdma-bw's pair bandwidth against
# ib_write_bw and ib_read_bw, and its 8-byte rounds' p50 against
# ib_send_lat's typical latency (half a round trip, as perftest reports
# it): the ping-pong's round trip, halved as perftest halves its own; the
# pair stream's time per send; the permute's round (both ranks send at
# once). Each ratio is taken round by round, and its median given.
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
	printf "retransmissions a run (soft-RoCE, both devices): median (most)\n"
	for (k = 1; k <= 3; k++) {
		s = sizes[k]; line = ""
		split("ib_write_bw ib_read_bw accdma-bw-pair", tl, " ")
		for (j = 1; j <= 3; j++) {
			t = tl[j] "-retries"; n = split(v[t, s], all, " "); most = 0
			for (i = 1; i <= n; i++) if (all[i] + 0 > most) most = all[i] + 0
			if (n) line = line sprintf("  %s %s (%d)", tl[j], median(v[t, s]), most)
		}
		if (line != "") printf "  %-8s%s\n", s, line
	}
	printf "8 bytes: ib_send_lat typical %s us (half a round trip); accdma-bw p50, and its ratio:\n",
	       median(v["ib_send_lat", 8])
	split("pingpong pingpong-e0 pair permute", pats, " ")
	split("ping-pong round trip, halved|the same, ACCDMA_ENGINES=0|pair stream, time per send|permute round", what, "|")
	for (k = 1; k <= 4; k++) {
		t = "accdma-bw-" pats[k]; h = pats[k] ~ /^pingpong/ ? 2 : 1; rl = ""
		for (n in rounds)
			if (r[t, 8, n] && r["ib_send_lat", 8, n]) rl = rl " " r[t, 8, n] / h / r["ib_send_lat", 8, n]
		if (rl != "")
			printf "  %-30s %8.1f us  %6.2fx\n", what[k], median(v[t, 8]) / h, median(rl)
	}
	printf "(medians of %d rounds; ratios: the median of the per-round ratios)\n", length(rounds)
}' "$file"
