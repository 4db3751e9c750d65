#!/bin/bash
# The levers issue 4 names, each turned off against the default, rounds interleaved
# (docs/perf/2026-12-01.md, section 7):
#   bash tools/accdma-bw/levers.sh [rounds=21] [outdir=build/levers]
#   python3 tools/accdma-bw/levers-summary.py build/levers/res.csv
# Builds two variants of this tree beside the default one:
#   nt      no non-temporal stores (DMA_NT_THRESHOLD out of reach);
#   nospin  a waiting host polls 16 times, then sleeps (WAIT_SPIN_NS=0);
# and runs a third, engspin0, as the default binary with ACCDMA_SPIN_US=0 (an
# idle engine thread sleeps at once). Every round reads the vCPU probe first
# (near/far, docs/perf/2026-12-01.md, "Set-up"), then runs every variant on every measure,
# the order reversed on even rounds. Output: OUT/res.csv, one accdma-bw CSV row
# per line behind "round,state,variant,launcher,".
set -u
rounds=${1:-21} out=${2:-build/levers}
mkdir -p "$out"
make -s build/accdma-bw build/accdma-run || exit 1
make -s B="$out/nt" OPT="-O2 -g -DDMA_NT_THRESHOLD=0x4000000000000000ull" "$out/nt/accdma-bw" || exit 1
make -s B="$out/nospin" OPT="-O2 -g -DWAIT_SPIN_NS=0" "$out/nospin/accdma-bw" || exit 1
gcc -O2 -pthread -o "$out/vcpu-probe" tools/accdma-bw/probe/vcpu-probe.c || exit 1

res="$out/res.csv"
: > "$res"
# one VARIANT BINDIR ENV LAUNCHER accdma-bw-args...
one() {
	local tag=$1 b=$2 e=$3 l=$4 pre=""
	shift 4
	[ "$l" = shm ] && pre="build/accdma-run -n 2 --"
	env $e $pre "$b/accdma-bw" -d 2 -r 1 --csv "$@" | grep -v -e '^#' -e '^pattern' |
		sed "s/^/$r,$st,$tag,$l,/" >> "$res"
}
for ((r = 1; r <= rounds; r++)); do
	st=$("$out/vcpu-probe" | awk '{ print ($3 < 200) ? "near" : "far" }')
	copies=("main build" "nt $out/nt")
	spins=("main build X=1" "nospin $out/nospin X=1" "engspin0 build ACCDMA_SPIN_US=0")
	if ((r % 2 == 0)); then
		copies=("${copies[1]}" "${copies[0]}")
		spins=("${spins[2]}" "${spins[1]}" "${spins[0]}")
	fi
	for l in shm local; do
		for v in "${copies[@]}"; do
			set -- $v
			one "$1" "$2" X=1 "$l" -p permute -s 16M -m chain
			one "$1" "$2" X=1 "$l" -p permute -s 4M -m chain
			one "$1" "$2" X=1 "$l" -p pair -s 16M -m chain
		done
	done
	for v in "${spins[@]}"; do
		set -- $v
		one "$1" "$2" "$3" shm --latency -p permute -s 8 -n 20000 -w 2000 -m chain
		one "$1" "$2" "$3" shm -p permute -s 8 -n 20000 -m sync --no-memcpy
		one "$1" "$2" "$3" shm -p permute -s 8 -n 100000 --no-memcpy
		one "$1" "$2" "$3" shm -p pair -s 8 -m chain -n 200000 --no-memcpy
		one "$1" "$2" "$3" shm -p permute -s 32K -n 20000 --no-memcpy
		one "$1" "$2" "$3" local --latency -p permute -s 8 -n 20000 -w 2000 -m chain
		one "$1" "$2" "$3" local -p permute -s 8 -n 20000 -m sync --no-memcpy
	done
	echo "levers: round $r/$rounds ($st) done" >&2
done
