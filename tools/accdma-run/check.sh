#!/bin/sh
# check.sh BUILD_DIR - accdma-run's checks (run by `make check`).
set -u
B=$1
RUN=$B/accdma-run
SEED=$B/tests/test_shm_seed
fail=0

expect() { # expect WANT_STATUS MAX_SECONDS DESCRIPTION -- command...
	want=$1 max=$2 what=$3
	shift 4
	t0=$(date +%s)
	"$@"
	got=$?
	dt=$(( $(date +%s) - t0 ))
	if [ "$got" != "$want" ] || [ "$dt" -gt "$max" ]; then
		echo "FAILED: $what: status $got (want $want), ${dt}s (max ${max}s)"
		fail=1
	else
		echo "ok: $what"
	fi
}

for n in 2 4 8; do
	expect 0 120 "pipeline on $n processes" -- $RUN -n $n -- $SEED --shm-env pipeline
	expect 0 120 "permute on $n processes" -- $RUN -n $n -- $SEED --shm-env permute
done
expect 0 120 "pipeline with exec on 4 processes" -- $RUN -n 4 $SEED --shm-env pipeline_exec
expect 0 30 "environment" -- $RUN -n 3 -- sh -c \
	'test "$WORLD_SIZE" = 3 && test "$RANK" = "$LOCAL_RANK" && test "$RANK" -lt 3 &&
	 test "$MASTER_ADDR" = 127.0.0.1 && test "$MASTER_PORT" -gt 0 && test "$ACCDMA_TRANSPORT" = shm &&
	 test "$ACCDMA_BOOT_PORT" -gt 0 && test "$ACCDMA_BOOT_PORT" != "$MASTER_PORT"'
# The verbs join's port is one accdma-run found free (the join's own default, MASTER_PORT + 1,
# may be the local port of someone's connection), never the port -p names; a set one stays.
ports=$(mktemp)
for _ in 1 2 3 4 5 6 7 8; do
	$RUN -n 1 -- sh -c 'echo "$MASTER_PORT $ACCDMA_BOOT_PORT"' >> "$ports"
done
expect 0 5 "a boot port of its own" -- awk 'NF != 2 || $2 <= 0 || $2 == $1 { bad++ }
	END { exit bad ? 1 : 0 }' "$ports"
rm -f "$ports"
expect 0 10 "-p: the boot port is another" -- $RUN -n 2 -p 29500 -- sh -c \
	'test "$MASTER_PORT" = 29500 && test "$ACCDMA_BOOT_PORT" -gt 0 && test "$ACCDMA_BOOT_PORT" != 29500'
expect 0 10 "a boot port set stays" -- env ACCDMA_BOOT_PORT=4242 $RUN -n 2 -- sh -c \
	'test "$ACCDMA_BOOT_PORT" = 4242'
expect 7 20 "first failure's status, the others stopped" -- $RUN -n 3 -- sh -c \
	'if [ "$RANK" = 1 ]; then exit 7; fi; exec sleep 60'
expect 137 20 "a rank killed by a signal" -- $RUN -n 2 -- sh -c \
	'if [ "$RANK" = 0 ]; then kill -9 $$; fi; exec sleep 60'
# --bind core (the default for no more ranks than CPUs): rank r on the r-th usable CPU
ncpu=$(nproc)
bound=$(mktemp)
expect 0 30 "ranks bound one per CPU" -- $RUN -n "$ncpu" -- sh -c \
	'cpu=$(taskset -c -p $$ | sed "s/.*: //"); case "$cpu" in *[,-]*) exit 1;; esac; echo "$cpu" >> '"$bound"
if [ "$(sort -u "$bound" | wc -l)" != "$ncpu" ]; then
	echo "FAILED: ranks bound one per CPU: got CPUs $(tr '\n' ' ' < "$bound")"
	fail=1
fi
rm -f "$bound"
expect 0 30 "--bind none leaves every CPU" -- $RUN -n 2 --bind none -- sh -c \
	'test "$(taskset -c -p $$ | sed "s/.*: //")" = "$(taskset -c -p $PPID | sed "s/.*: //")"'
expect 0 30 "more ranks than CPUs: not bound" -- $RUN -n $((ncpu + 1)) -- sh -c \
	'test "$(taskset -c -p $$ | sed "s/.*: //")" = "$(taskset -c -p $PPID | sed "s/.*: //")"'
expect 2 5 "--bind core with more ranks than CPUs" -- $RUN -n $((ncpu + 1)) --bind core true
expect 2 5 "usage error" -- $RUN -n 0 true
expect 127 10 "no such program" -- $RUN -n 2 -- /nonexistent/accdma-prog

# SIGTERM to the launcher reaches every rank; each exits 42, so does the launcher
sh -c "exec $RUN -n 2 -- sh -c 'trap \"exit 42\" TERM; sleep 60 & wait'" &
lp=$!
sleep 1
kill -TERM $lp
t0=$(date +%s)
wait $lp
got=$?
if [ "$got" != 42 ] || [ $(( $(date +%s) - t0 )) -gt 10 ]; then
	echo "FAILED: SIGTERM forwarding: status $got (want 42)"
	fail=1
else
	echo "ok: SIGTERM forwarded"
fi
[ $fail = 0 ] && echo "accdma-run checks: OK"
exit $fail
