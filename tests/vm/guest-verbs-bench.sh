#!/bin/sh
# make bench-verbs, in the guest: five rounds of verbs-bench.sh,
# perftest and accdma-bw interleaved measure by measure on the two
# soft-RoCE "hosts"; tests/vm/verbs-bench-summary.sh takes the medians.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh
# shellcheck source=tests/vm/verbs-bench.sh
. /vmtest/verbs-bench.sh

vmtest_here rxe-ports rxe_up || exit 0
BENCH_BUDGET=1500 # five rounds: about 20 minutes on a loaded host
_r=1
while [ $_r -le 5 ]; do
	verbs_bench_round $_r
	_r=$((_r + 1))
done
