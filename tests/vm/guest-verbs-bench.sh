#!/bin/sh
# make bench-verbs, in the guest: nine rounds of verbs-bench.sh,
# perftest and accdma-bw interleaved measure by measure on the two
# soft-RoCE "hosts"; tests/vm/verbs-bench-summary.sh takes the medians.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh
# shellcheck source=tests/vm/verbs-bench.sh
. /vmtest/verbs-bench.sh

vmtest_here rxe-ports rxe_up || exit 0
# Nine rounds, not five: one run of either tool moves by a quarter from the
# next, and a median of five gave 0.97x in one boot and 0.75x in the next.
BENCH_BUDGET=2700 # about 35 minutes on a loaded host
_r=1
while [ $_r -le 9 ]; do
	verbs_bench_round $_r
	_r=$((_r + 1))
done
