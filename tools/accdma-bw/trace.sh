#!/bin/bash
# Where the 8-byte round's time goes (docs/perf/2026-12-01.md, section 8):
#   bash tools/accdma-bw/trace.sh [rounds=3] [outdir=build/trace]
# Builds this tree with -DACCDMA_TRACE (queue/trace.h: a TSC read at six steps of
# a post-then-wait round) into OUTDIR, then, for each round, reads the vCPU
# probe (near/far), runs the 8-byte latency round over shm with the traced and
# the default binaries, and prints trace-summary.py's steps for the traced run.
# The default binary's round beside it shows what the six TSC reads cost.
set -u
rounds=${1:-3} out=${2:-build/trace}
make -s build/accdma-bw build/accdma-run || exit 1
make -s B="$out" OPT="-O2 -g -DACCDMA_TRACE" "$out/accdma-bw" "$out/accdma-run" || exit 1
gcc -O2 -pthread -o "$out/vcpu-probe" tools/accdma-bw/probe/vcpu-probe.c || exit 1
args=(-d 2 -r 1 --latency -p permute -s 8 -n 100000 -w 2000 -m chain --csv)
for ((r = 1; r <= rounds; r++)); do
	echo "== round $r: $("$out/vcpu-probe")"
	rm -f "$out/run.$r".*
	plain=$(build/accdma-run -n 2 -- build/accdma-bw "${args[@]}" | tail -1 | cut -d, -f19)
	ACCDMA_TRACE_OUT="$out/run.$r" "$out/accdma-run" -n 2 -- "$out/accdma-bw" "${args[@]}" >/dev/null || exit 1
	echo "default binary: mean round $(awk -v m="$plain" 'BEGIN { printf "%.1f", m * 1000 }') ns"
	python3 tools/accdma-bw/trace-summary.py "$out/run.$r" || exit 1
done
