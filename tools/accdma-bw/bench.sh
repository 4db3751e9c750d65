#!/bin/bash
# BENCHMARKS.md's measurements: accdma-bw beside peers.sh, rounds interleaved.
#   bash tools/accdma-bw/bench.sh [rounds=7] [outdir=build/bench]
#   BENCH_CONFIGS='local-E2|env ACCDMA_ENGINES=2|' BENCH_MEASURES='perm16M|-p permute -s 16M -m chain' bash ... 
# Every round runs peers.sh, then every (configuration x measure) once, in turn,
# so that a noisy minute (other sessions building) hits all of them alike.
# Raw output: OUT/rN/<config>.<measure>.csv, OUT/rN/peers.txt, OUT/rN/load.txt;
# summary: python3 tools/accdma-bw/bench-summary.py OUT
set -u
rounds=${1:-7} out=${2:-build/bench}
bw=build/accdma-bw run=build/accdma-run
peers=${PEERS:-/work/shared/bench/peers.sh}
# configuration: name | environment | launcher [| accdma-bw binary, to set another build beside this one]
configs=(
	"local|env|"                        # 1 engine thread per device + polled waits (default)
	"local-E0|env ACCDMA_ENGINES=0|"    # polled devices: no engine threads
	"local-poll0|env ACCDMA_POLL=0|"    # engine threads only (the old behaviour)
	"shm|env|$run -n 2 --"              # one process per device
	"shm-E0|env ACCDMA_ENGINES=0|$run -n 2 --"
)
# measure | accdma-bw arguments (2 devices)
measures=(
	"lat8|--latency -p permute -s 8 -n 20000 -w 2000"
	"perm16M|-p permute -s 16M -m chain"
	"perm8|-p permute -s 8 -n 100000 --no-memcpy"
	"perm8sync|-p permute -s 8 -n 20000 -m sync --no-memcpy"   # the host waits on every fence
	"pair8|-p pair -s 8 -m chain -n 200000 --no-memcpy"
	"pair8P16|-p pair -s 8 -m chain -n 200000 -P 16 -W 256 --no-memcpy"
	"pair8P64|-p pair -s 8 -m chain -n 400000 -P 64 -W 1024 --no-memcpy"
)
# BENCH_CONFIGS / BENCH_MEASURES: ';'-separated lists in the same form, to run another set
[ -n "${BENCH_CONFIGS:-}" ] && IFS=';' read -r -a configs <<< "$BENCH_CONFIGS"
[ -n "${BENCH_MEASURES:-}" ] && IFS=';' read -r -a measures <<< "$BENCH_MEASURES"
mkdir -p "$out"
# vCPU probe: are both vCPUs really running at once right now? (docs/perf/2026-12-01.md, "Set-up, and the noise")
gcc -O2 -pthread -o "$out/vcpu-probe" tools/accdma-bw/probe/vcpu-probe.c || exit 1
for ((r = 1; r <= rounds; r++)); do
	d=$out/r$r
	mkdir -p "$d"
	# noise record: time, load, the cpu line of /proc/stat (user nice system idle iowait irq
	# softirq steal) before and after, and the busiest other processes
	{ date +%T; cat /proc/loadavg; head -1 /proc/stat; ps -eo pcpu=,comm= --sort=-pcpu | head -4; "$out/vcpu-probe"; } > "$d/load.txt"
	bash "$peers" 2 > "$d/peers.txt" 2>&1
	for c in "${configs[@]}"; do
		IFS='|' read -r name envs launch cbw <<< "$c"
		for m in "${measures[@]}"; do
			IFS='|' read -r mname margs <<< "$m"
			# shellcheck disable=SC2086
			timeout 300 $envs $launch ${cbw:-$bw} -d 2 -r 1 --csv --no-progress $margs \
				> "$d/$name.$mname.csv" 2> "$d/$name.$mname.err" ||
				echo "round $r $name $mname: exit $?" >&2
		done
	done
	{ cat /proc/loadavg; head -1 /proc/stat; "$out/vcpu-probe"; } >> "$d/load.txt"
	echo "round $r done $(date +%T)" >&2
done
