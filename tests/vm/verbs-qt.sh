#!/bin/sh
# verbs-qt.sh N [polled] [ARGS...] - in the test VM: queue-tester's suite over
# the verbs transport with N processes, one rank each, started by accdma-run
# (polled: with ACCDMA_ENGINES=0, no engine threads: the waiting thread does
# all the work); the
# ranks take the two soft-RoCE devices in turn (rank 0 rxe0, rank 1 rxe1,
# ...), so half the pairs cross the veth between the two "hosts". Passes if
# the suite ran scenarios and every one passed; its summary goes to the console.
n=${1:?usage: verbs-qt.sh N [polled] [ARGS...]}
shift
engines=
if [ "${1:-}" = polled ]; then
	engines=ACCDMA_ENGINES=0
	shift
fi
bin=/vmtest/bin
out=/tmp/verbs-qt.$n${engines:+-polled}.out
# shellcheck disable=SC2086 # $engines: nothing, or one word
"$bin/accdma-run" -n "$n" -- env $engines ACCDMA_TRANSPORT=verbs ACCDMA_IB_DEV=rxe0,rxe1 \
	"$bin/queue-tester" -t verbs "$@" /vmtest/files/scenarios > "$out" 2>&1
rc=$?
cat "$out"
sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1)
echo "VMTEST INFO verbs-qt $n ranks ${engines:-with engines}: ${sum:-no summary} (exit $rc)" > /dev/console
[ "$rc" = 0 ] && echo "$sum" | grep -Eq '^[1-9][0-9]* passed, 0 failed'
