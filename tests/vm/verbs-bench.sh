# shellcheck shell=sh
# The verbs benchmarks, in the guest (sourced by guest-verbs.sh, one round,
# and guest-verbs-bench.sh, several): perftest and accdma-bw on the two
# soft-RoCE "hosts" of rxe_up (rank 0 / server on rxe0, rank 1 / client on
# rxe1), interleaved measure by measure, so that every ratio compares runs
# of the same minute. VMBENCH lines only: recorded, never judged.
#   verbs_bench_round N   one round: write, read and accdma-bw pair
#                         bandwidth at 64 KiB, 1 MiB and 4 MiB, then the
#                         8-byte ib_send_lat and accdma-bw's 8-byte rounds:
#                         the pair stream's time per send, the ping-pong's
#                         round trip (also with ACCDMA_ENGINES=0), the
#                         permute's round
# Each line: `VMBENCH TOOL SIZE VALUE UNIT round N` (tests/vm/verbs-bench-summary.sh),
# and after each bandwidth, `VMBENCH TOOL-retries SIZE N retransmits round N`: how many
# times soft-RoCE retransmitted during that run (a lost packet stalls its queue pair for
# a retry timeout, so one run's bandwidth can halve).

# rxe_retries: the retransmissions both soft-RoCE devices made so far (their
# requesters' timeouts and NAKs).
rxe_retries() {
	cat /sys/class/infiniband/rxe0/ports/1/hw_counters/completer_retry_err \
		/sys/class/infiniband/rxe1/ports/1/hw_counters/completer_retry_err 2>/dev/null |
		awk '{ s += $1 } END { print s + 0 }'
}

# wait_listen PORT: until a server listens on the TCP port (10 s).
wait_listen() {
	_wl=0
	until netstat -ltn 2>/dev/null | grep -q ":$1 "; do
		_wl=$((_wl + 1))
		[ $_wl -le 100 ] || return 1
		sleep 0.1
	done
}

# perftest_once TOOL SIZE ITERS: server on rxe0, client on rxe1; prints the
# result (Gb/s, or the median latency in usec), or nothing. perftest
# calibrates its clock at start and can get it wrong on a busy host (0, inf,
# or an r^2 warning): such a run is repeated, up to 3 times in all.
BENCH_PORT=18600
perftest_once() {
	_tool=$1 _size=$2 _iters=$3
	case $_tool in
	*_lat) _col=5 _extra="" ;;                   # t_typical: the median
	*) _col=4 _extra=--report_gbits ;;           # BW average
	esac
	_try=1
	while :; do
		BENCH_PORT=$((BENCH_PORT + 1))
		_r0=$(rxe_retries)
		# Not under busybox's `timeout`: a server under it measured 3-40x the
		# latency. A watchdog kills both sides after 60 s instead, while its
		# flag file says this run is still on (Debian's busybox has no pkill,
		# and its sleep outlives a killed subshell).
		"$_tool" -d rxe0 -x "$ACCDMA_TEST_RXE0_GID" -F $_extra -s "$_size" -n "$_iters" \
			-p $BENCH_PORT > /tmp/bench-server.out 2>&1 &
		_srv=$!
		_cli=$_srv
		if wait_listen $BENCH_PORT; then
			"$_tool" -d rxe1 -x "$ACCDMA_TEST_RXE1_GID" -F $_extra -s "$_size" -n "$_iters" \
				-p $BENCH_PORT 127.0.0.1 > /tmp/bench.out 2>&1 &
			_cli=$!
		else
			{ echo "bench: $_tool server did not listen:"; cat /tmp/bench-server.out; } > /tmp/bench.out
		fi
		: > /tmp/bench.on.$BENCH_PORT
		# (its output is not ours: a $(...) around us would wait for its sleep)
		( sleep 60; [ -e /tmp/bench.on.$BENCH_PORT ] && kill -9 $_srv $_cli ) > /dev/null 2>&1 &
		wait $_cli
		wait $_srv
		rm -f /tmp/bench.on.$BENCH_PORT
		echo $(($(rxe_retries) - _r0)) > /tmp/bench.retries
		_v=$(awk -v s="$_size" -v c=$_col '$1 == s && NF >= c { v = $c } END { print v }' /tmp/bench.out)
		case $_v in
		""|0|0.0*|inf|-inf|nan|-nan) _ok=0 ;;
		*) _ok=1 ;;
		esac
		case $_v in 0.0*[1-9]*) _ok=1 ;; esac
		grep -qiE 'r\^2|warning' /tmp/bench.out && _ok=0
		if [ $_ok = 1 ]; then
			echo "$_v"
			return 0
		fi
		if [ $_try -ge 3 ]; then
			echo "bench: $_tool $_size: no clean result in 3 runs; the last:" >&2
			tail -n 8 /tmp/bench.out >&2
			return 1
		fi
		_try=$((_try + 1))
	done
}

# accdma_once SIZE ITERS [lat [PATTERN]]: accdma-bw over the verbs
# transport, two ranks started by accdma-run: the pattern's (default pair)
# bandwidth in Gb/s (its GB/s times 8, perftest's unit), or with "lat" the
# p50 of a round in usec. Prints the value, or nothing.
accdma_once() {
	_p=${4:-pair}
	_a="-p $_p -m chain -s $1 -n $2 -r 1 --csv --no-memcpy"
	[ -n "${3:-}" ] && _a="$_a -l"
	_r0=$(rxe_retries)
	# shellcheck disable=SC2086 # the options, split
	/vmtest/bin/accdma-run -n 2 -- env ACCDMA_TRANSPORT=verbs ACCDMA_IB_DEV=rxe0,rxe1 \
		/vmtest/bin/accdma-bw -t verbs $_a > /tmp/abw.out 2>&1
	echo $(($(rxe_retries) - _r0)) > /tmp/bench.retries
	_v=$(awk -F, -v p="$_p" -v s="$1" -v lat="${3:-}" '$1 == p && $2 == "chain" && $3 == s {
		v = lat ? $17 : $10 * 8 } END { if (v != "") print v }' /tmp/abw.out)
	[ -n "$_v" ] || { echo "bench: accdma-bw $1 gave no result:" >&2; tail -n 8 /tmp/abw.out >&2; }
	echo "$_v"
}

# Benchmarks stop being started once the guest has been up BENCH_BUDGET
# seconds (the rest are recorded as skipped), so a slow host cannot push the
# whole boot past its limit.
BENCH_BUDGET=${BENCH_BUDGET:-360}
over_budget() { [ "$(cut -d. -f1 /proc/uptime)" -ge "$BENCH_BUDGET" ]; }

# record ROUND TOOL SIZE UNIT VALUE
record() {
	vmbench "$2 $3 ${5:-none} $4 round $1"
}

# record_bw ROUND TOOL SIZE VALUE: a bandwidth, and the retransmissions of its run
record_bw() {
	record "$1" "$2" "$3" Gb/s "$4"
	record "$1" "$2-retries" "$3" retransmits "$(cat /tmp/bench.retries 2>/dev/null)"
}

verbs_bench_round() {
	for _size in 65536 1048576 4194304; do
		# 50 MiB a run at 64 KiB, where a retransmission's stall weighs most
		case $_size in 65536) _iters=800 ;; 1048576) _iters=40 ;; *) _iters=12 ;; esac
		if over_budget; then
			vmbench "skipped: the guest is past BENCH_BUDGET=$BENCH_BUDGET s"
			return 0
		fi
		record_bw "$1" ib_write_bw $_size "$(perftest_once ib_write_bw $_size $_iters)"
		record_bw "$1" ib_read_bw $_size "$(perftest_once ib_read_bw $_size $_iters)"
		record_bw "$1" accdma-bw-pair $_size "$(accdma_once $_size $_iters)"
	done
	record "$1" ib_send_lat 8 usec "$(perftest_once ib_send_lat 8 1000)"
	record "$1" accdma-bw-pair 8 usec "$(accdma_once 8 1000 lat)"
	record "$1" accdma-bw-pingpong 8 usec "$(accdma_once 8 1000 lat pingpong)"
	# the same with no engine threads: the waiting thread does all the work
	record "$1" accdma-bw-pingpong-e0 8 usec "$(ACCDMA_ENGINES=0 accdma_once 8 1000 lat pingpong)"
	record "$1" accdma-bw-permute 8 usec "$(accdma_once 8 1000 lat permute)"
}
