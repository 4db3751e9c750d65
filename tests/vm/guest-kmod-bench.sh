#!/bin/sh
# The kernel module's benchmarks, in the guest (make bench-kmod; issue 28's
# point 8): over shm and over kmod in the same boot, interleaved:
#  - accdma-bw under accdma-run, two processes, twice each: the 16 MiB
#    permute (BW per device, median of 3 runs) and the 8-byte permute round
#    (p50)
#  - kmod-pair's 8-byte ping-pong (median of 500 rounds), three times each:
#    shm, kmod (waiters poll in the module), kmod with ACCDMA_POLL=0 (every
#    op a kernel thread's kick and a wake-up)
#  - kmod-poll's cost of one ioctl here: the floor under a round over kmod
# VMBENCH lines only: recorded, never judged (TCG numbers are functional,
# compare them as ratios within one boot).
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh

KO=/lib/modules/$(cat /vmtest/kver)/extra/accdma.ko
# two 16 MiB buffers a device, and room (a test of its own: the harness
# wants one passed test)
vmtest_here load insmod "$KO" mem_max_mb=128 || exit 1

bw() { # TRANSPORT ARGS...: the result line's 5th column (BW/dev or p50)
	_t=$1
	shift
	ACCDMA_TRANSPORT=$_t accdma-run -n 2 -- accdma-bw -t "$_t" -p permute -m chain \
		--no-memcpy -r 3 "$@" 2>/dev/null | awk '$1 == "chain" { v = $5 } END { print v }'
}

pair() { # kmod-pair's VMBENCH line, forwarded
	kmod-pair pair 500 2>/dev/null | grep '^VMBENCH ' | while read -r _v _rest; do
		vmbench $_rest
	done
}

for _round in 1 2 3; do
	if [ $_round -le 2 ]; then
		for _t in shm kmod; do
			vmbench "accdma-bw $_t permute-16M $(bw $_t -s 16M -n 20 --buf-budget 32M) GB/s/dev"
			vmbench "accdma-bw $_t round-8B-p50 $(bw $_t -s 8 -l -n 300) us"
		done
	fi
	KMOD_PAIR_TRANSPORT=shm pair
	pair
	KMOD_PAIR_NOTE=poll0 ACCDMA_POLL=0 pair
done
kmod-poll /dev/accdma 2>/dev/null | grep '^VMBENCH ' | while read -r _v _rest; do
	vmbench $_rest
done
vmtest_here unload rmmod accdma
