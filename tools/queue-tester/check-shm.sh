#!/bin/sh
# check-shm.sh BUILD_DIR - queue-tester over shm when things go wrong (run by `make check`):
# a wrong byte on one rank fails the scenario everywhere, with the rank's details and the
# aggregated summary and status; a stall prints every process's watchdog report and the wait
# cycle across processes; a rank killed mid-scenario fails it without hanging the others.
set -u
B=$1
QT=$B/queue-tester
RUN=$B/accdma-run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

cat > "$T/bad.acc" <<'EOF'
name "bad-data"
devices 2 4
buffer snd int32 4 = rank
buffer rcv int32 4 = -1
program {
  send snd to (rank + 1) % N
  recv rcv from (rank - 1) % N
}
expect rcv = rank == 1 ? 42 : (rank - 1) % N
EOF
cat > "$T/cycle.acc" <<'EOF'
name "cycle"
devices 3
timeout 300
buffer b int32 4 = rank
program {
  recv b from (rank + 1) % N tag 5
}
EOF
cat > "$T/slow.acc" <<'EOF'
name "slow"
devices 3
buffer b int32 4 = rank
program {
  exec sleep 5000 as s
  send b to (rank + 1) % N after s
  recv b from (rank - 1) % N
}
EOF

# check WHAT WANT_STATUS OUTPUT_FILE PATTERN...: the status and every pattern (grep -E)
check() {
	what=$1 want=$2 out=$3 got=$4
	shift 4
	ok=1
	[ "$got" = "$want" ] || { echo "FAILED: $what: status $got, want $want"; ok=0; }
	for p in "$@"; do
		grep -Eq -- "$p" "$out" || { echo "FAILED: $what: no line matches '$p'"; ok=0; }
	done
	if [ $ok = 1 ]; then echo "ok: $what"; else fail=1; sed 's/^/    | /' "$out"; fi
}

timeout --kill-after=10 120 "$QT" -t shm "$T/bad.acc" > "$T/out1" 2>&1
check "a wrong byte on rank 1 (queue-tester starts the ranks)" 1 "$T/out1" $? \
	'^FAIL bad-data +N=2 ' '^FAIL bad-data +N=4 ' 'rank 1: rcv\[0\] = 0, expected 42' \
	'^0 passed, 2 failed$'

timeout --kill-after=10 120 "$RUN" -n 4 -- "$QT" -t shm "$T/bad.acc" > "$T/out2" 2>&1
check "a wrong byte on rank 1 (under accdma-run)" 1 "$T/out2" $? \
	'^FAIL bad-data +N=4 ' 'rank 1: rcv\[0\] = 0, expected 42' 'skipped 1 scenario run' \
	'^0 passed, 1 failed$'

timeout --kill-after=10 120 "$QT" -t shm "$T/cycle.acc" > "$T/out3" 2>&1
check "a stall across 3 processes" 1 "$T/out3" $? \
	'watchdog of rank 0 \(devices 0\.\.0\)' 'watchdog of rank 1 ' 'watchdog of rank 2 ' \
	'wait cycle across processes: 0 -> 1 -> 2 -> 0' '^FAIL cycle +N=3 .*stalled' \
	'^0 passed, 1 failed$'

timeout --kill-after=10 120 "$QT" -t shm "$T/slow.acc" > "$T/out4" 2>&1 &
qp=$!
kids=""
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	sleep 0.5
	# the timeout's child is queue-tester, whose children are the ranks
	for p in $(pgrep -P $qp); do kids=$(pgrep -P "$p" | tr '\n' ' '); done
	[ $(echo $kids | wc -w) -ge 3 ] && break
done
victim=$(echo $kids | cut -d' ' -f2)
t0=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait $qp
got=$?
dt=$(( $(date +%s) - t0 ))
check "a rank killed mid-scenario" 1 "$T/out4" $got '^FAIL slow +N=3 .*was killed by signal 9' \
	'^0 passed, 1 failed$'
[ $dt -le 15 ] || { echo "FAILED: the killed rank's scenario took ${dt}s to fail"; fail=1; }

[ $fail = 0 ] && echo "queue-tester shm failure checks: OK"
exit $fail
