#!/bin/bash
# The levers issue 4 names, each turned off against the default, rounds interleaved
# (BENCHMARKS.md, "The levers, on and off"):
#   bash tools/accdma-bw/levers.sh [rounds=21] [outdir=build/levers]
#   python3 tools/accdma-bw/levers-summary.py build/levers/res.csv
# Builds two variants of this tree beside the default one:
#   nt      no non-temporal stores (DMA_NT_THRESHOLD out of reach);
#   nospin  a waiting host polls 16 times, then sleeps (WAIT_SPIN_NS=0);
# and runs a third, engspin0, as the default binary with ACCDMA_SPIN_US=0 (an
# idle engine thread sleeps at once). Every round reads the vCPU probe first
# (near/far, BENCHMARKS.md "Set-up"), then runs every variant on every measure,
# the order reversed on even rounds. Output: OUT/res.csv, one accdma-bw CSV row
# per line behind "round,state,variant,launcher,".
set -u
rounds=${1:-21} out=${2:-build/levers}
mkdir -p "$out"
make -s build/accdma-bw build/accdma-run || exit 1
make -s B="$out/nt" OPT="-O2 -g -DDMA_NT_THRESHOLD=0x4000000000000000ull" "$out/nt/accdma-bw" || exit 1
make -s B="$out/nospin" OPT="-O2 -g -DWAIT_SPIN_NS=0" "$out/nospin/accdma-bw" || exit 1
gcc -O2 -pthread -o "$out/vcpu-probe" -x c - <<'PROBE' || exit 1
/* Two threads on CPUs 0 and 1 ping-pong a line: the median round trip (ns). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Atomic long ball __attribute__((aligned(64)));
static _Atomic int stop;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static void *pong(void *a){(void)a;pin(1);long v=1;while(!atomic_load(&stop)){if(atomic_load_explicit(&ball,memory_order_acquire)==v){atomic_store_explicit(&ball,v+1,memory_order_release);v+=2;}}return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(void){pthread_t t;static double ch[100000];int n=0;pin(0);pthread_create(&t,0,pong,0);
 long v=0;double end=now()+0.3;
 while(now()<end&&n<100000){double c0=now();for(int i=0;i<256;i++){atomic_store_explicit(&ball,v+1,memory_order_release);while(atomic_load_explicit(&ball,memory_order_acquire)!=v+2);v+=2;}ch[n++]=(now()-c0)/256*1e9;}
 atomic_store(&stop,1);atomic_store(&ball,-5);pthread_join(t,0);qsort(ch,n,sizeof*ch,cmp);
 printf("%.0f\n",ch[n/2]);return 0;}
PROBE

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
	st=$("$out/vcpu-probe" | awk '{ print ($1 < 200) ? "near" : "far" }')
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
