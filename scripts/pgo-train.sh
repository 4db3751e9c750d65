#!/bin/bash
# The training run of the profile-guided build (Makefile, PGO=1): the shapes
# accdma-bw measures, run by the instrumented accdma-bw ($1) one process per
# device through the launcher ($2), with engine threads and with polled
# devices. shm covers the op path local worlds take as well, and the setup
# of both. Each run is bounded; one that fails only thins the profile (a
# source with no profile is compiled as without PGO).
#   bash scripts/pgo-train.sh build/accdma-bw build/accdma-run
set -u
bw=$1 run=$2
args="-d 2 -r 1 --no-progress --no-memcpy"
shapes=(
	"--latency -p permute -s 8 -n 50000 -w 100 -m chain"
	"-p permute -s 8 -n 100000 -m both"
	"-p pair -s 8 -n 100000 -m chain"
	"-p permute -s 64K -n 2000 -m both"
	"-p permute -s 16M -n 30 -m chain"
)
ok=0
for s in "${shapes[@]}"; do
	for engines in 1 0; do
		# shellcheck disable=SC2086
		if timeout 60 env ACCDMA_ENGINES=$engines "$run" -n 2 -- "$bw" $args $s > /dev/null 2>&1; then
			ok=$((ok + 1))
		else
			echo "pgo-train: 'ACCDMA_ENGINES=$engines $run -n 2 -- $bw $args $s' failed; the profile is thinner" >&2
		fi
	done
done
echo "pgo-train: $ok of $((${#shapes[@]} * 2)) training runs done"
