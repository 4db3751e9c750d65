#!/bin/sh
# The verbs suite, in the guest (run by /init; tests/README.md, "The VM"). Soft-RoCE between two "hosts" of this VM:
# rxe0 on veth0 (203.0.113.11) and rxe1 on veth1 (203.0.113.12).
#  - rxe-ports: both ports come up (PORT_ACTIVE)
#  - rc-pingpong: ibv_rc_pingpong from rxe1 to rxe0
#  - rc-pingpong-veth: its data crossed the veth (byte counters grew by at
#    least what was sent), so the routing of rxe_up is real
#  - the programs listed in /vmtest/files/verbs-tests.list, one test each
#  - perftest (write/read bandwidth, send latency): VMBENCH lines, recorded,
#    never pass/fail (TCG numbers are functional, compare them as ratios)
# perftest and pingpong exchange their QP numbers over TCP on 127.0.0.1, so
# only RoCE traffic counts on the veth.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh

vmtest_here rxe-ports rxe_up || exit 0

# wait_listen PORT: until a server listens on the TCP port (10 s).
wait_listen() {
	_wl=0
	until netstat -ltn 2>/dev/null | grep -q ":$1 "; do
		_wl=$((_wl + 1))
		[ $_wl -le 100 ] || return 1
		sleep 0.1
	done
}

PP_SIZE=4096
PP_ITERS=200
pingpong() {
	ibv_rc_pingpong -d rxe0 -g "$ACCDMA_TEST_RXE0_GID" -s $PP_SIZE -n $PP_ITERS -p 18515 > /tmp/pp-server.out 2>&1 &
	_srv=$!
	wait_listen 18515 || { kill $_srv; cat /tmp/pp-server.out; return 1; }
	ibv_rc_pingpong -d rxe1 -g "$ACCDMA_TEST_RXE1_GID" -s $PP_SIZE -n $PP_ITERS -p 18515 127.0.0.1 || return 1
	wait $_srv || { echo "server:"; cat /tmp/pp-server.out; return 1; }
}
# The veth's counters grew by at least the payload each way.
veth_crossed() {
	_min=$((PP_SIZE * PP_ITERS))
	for _c in "veth0 tx" "veth0 rx" "veth1 tx" "veth1 rx"; do
		# shellcheck disable=SC2086 # two words: interface and direction
		_now=$(net_bytes $_c)
		_was=$(grep "^$_c " /tmp/veth-before | cut -d' ' -f3)
		echo "$_c: $_was -> $_now bytes"
		[ $((_now - _was)) -ge $_min ] || { echo "$_c grew by less than $_min"; return 1; }
	done
}
for _c in "veth0 tx" "veth0 rx" "veth1 tx" "veth1 rx"; do
	# shellcheck disable=SC2086
	echo "$_c $(net_bytes $_c)"
done > /tmp/veth-before
vmtest rc-pingpong pingpong && vmtest rc-pingpong-veth veth_crossed

# The suite's own programs: one per line, `[VMTEST_TIMEOUT=SECS] PATH [ARGS...]`
# (shipped as /vmtest/bin/NAME).
if [ -s /vmtest/files/verbs-tests.list ]; then
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' /vmtest/files/verbs-tests.list |
	while read -r _prog _args; do
		_limit=$VMTEST_TIMEOUT
		case $_prog in
		VMTEST_TIMEOUT=*)
			_limit=${_prog#*=}
			_prog=${_args%% *}
			_args=${_args#"$_prog"}
			;;
		esac
		_prog=$(basename "$_prog")
		_name=$(echo "$_prog $_args" | sed 's/^ *//; s/ *$//; s/  */_/g')
		# shellcheck disable=SC2086 # the list's arguments, split
		VMTEST_TIMEOUT=$_limit vmtest "$_name" "/vmtest/bin/$_prog" $_args < /dev/null
	done
fi

# bench_once TOOL SIZE ITERS: server on rxe0, client on rxe1; prints the
# result (Gb/s, or the median latency in usec), or nothing. perftest
# calibrates its clock at start and can get it wrong on a busy host (0, inf,
# or an r^2 warning): such a run is repeated, up to 3 times in all.
BENCH_PORT=18600
bench_once() {
	_tool=$1 _size=$2 _iters=$3
	case $_tool in
	*_lat) _col=5 _extra="" ;;                   # t_typical: the median
	*) _col=4 _extra=--report_gbits ;;           # BW average
	esac
	_try=1
	while :; do
		BENCH_PORT=$((BENCH_PORT + 1))
		# Not under busybox's `timeout`: a server under it measured 3-40x the
		# latency. A watchdog kills both sides after 60 s instead.
		"$_tool" -d rxe0 -x "$ACCDMA_TEST_RXE0_GID" -F $_extra -s "$_size" -n "$_iters" \
			-p $BENCH_PORT > /tmp/bench-server.out 2>&1 &
		_srv=$!
		( sleep 60; pkill -9 -x "$_tool" ) &
		_wd=$!
		if wait_listen $BENCH_PORT; then
			"$_tool" -d rxe1 -x "$ACCDMA_TEST_RXE1_GID" -F $_extra -s "$_size" -n "$_iters" \
				-p $BENCH_PORT 127.0.0.1 > /tmp/bench.out 2>&1
		else
			{ echo "bench: $_tool server did not listen:"; cat /tmp/bench-server.out; } > /tmp/bench.out
		fi
		wait $_srv
		kill_tree $_wd
		wait $_wd 2>/dev/null
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

# bench TOOL SIZE ITERS [RUNS]: `VMBENCH TOOL SIZE VALUE UNIT`, the median of
# RUNS clean results (1). Latency under TCG is bimodal, ~90 us or a timer
# tick (4 ms) when both vCPUs poll and the kernel's network work waits for
# the tick: three runs and their median.
bench() {
	_runs=${4:-1}
	case $1 in *_lat) _unit=usec ;; *) _unit=Gb/s ;; esac
	if over_budget; then
		vmbench "$1 $2 none (skipped: the guest is past BENCH_BUDGET=$BENCH_BUDGET s)"
		return 0
	fi
	: > /tmp/bench.vals
	_r=0
	while [ $_r -lt "$_runs" ]; do
		bench_once "$1" "$2" "$3" >> /tmp/bench.vals
		_r=$((_r + 1))
	done
	_med=$(sort -g /tmp/bench.vals | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	_note=""
	[ "$_runs" -gt 1 ] && _note=" (median of $(wc -l < /tmp/bench.vals): $(tr '\n' ' ' < /tmp/bench.vals | sed 's/ $//'))"
	vmbench "$1 $2 ${_med:-none} $_unit$_note"
}
# Benchmarks stop being started once the guest has been up BENCH_BUDGET
# seconds (the rest are recorded as skipped), so a slow host cannot push the
# whole boot past its limit.
BENCH_BUDGET=${BENCH_BUDGET:-360}
over_budget() { [ "$(cut -d. -f1 /proc/uptime)" -ge "$BENCH_BUDGET" ]; }
# accdma_once SIZE ITERS [lat]: accdma-bw over the verbs transport, two ranks
# (rank 0 on rxe0, rank 1 on rxe1) started by accdma-run: the pair pattern's
# bandwidth in Gb/s (its GB/s times 8, perftest's unit), or with "lat" the
# p50 of an 8-byte round in usec. Prints the value, or nothing.
accdma_once() {
	_a="-p pair -m chain -s $1 -n $2 -r 1 --csv --no-memcpy"
	[ -n "${3:-}" ] && _a="$_a -l"
	# shellcheck disable=SC2086 # the options, split
	/vmtest/bin/accdma-run -n 2 -- env ACCDMA_TRANSPORT=verbs ACCDMA_IB_DEV=rxe0,rxe1 \
		/vmtest/bin/accdma-bw -t verbs $_a > /tmp/abw.out 2>&1
	awk -F, -v s="$1" -v lat="${3:-}" '$1 == "pair" && $2 == "chain" && $3 == s {
		v = lat ? $17 : $10 * 8 } END { if (v != "") print v }' /tmp/abw.out
}
# bench_accdma SIZE ITERS RUNS [lat]: `VMBENCH accdma-bw-pair SIZE VALUE UNIT`, the median of RUNS.
bench_accdma() {
	_u=Gb/s
	[ -n "${4:-}" ] && _u=usec
	if over_budget; then
		vmbench "accdma-bw-pair $1 none (skipped: the guest is past BENCH_BUDGET=$BENCH_BUDGET s)"
		return 0
	fi
	: > /tmp/abw.vals
	_k=0
	while [ $_k -lt "$3" ]; do
		accdma_once "$1" "$2" "${4:-}" >> /tmp/abw.vals
		_k=$((_k + 1))
	done
	[ -s /tmp/abw.vals ] || { echo "bench: accdma-bw $1 gave no result:" >&2; tail -n 8 /tmp/abw.out >&2; }
	_med=$(sort -g /tmp/abw.vals | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }')
	vmbench "accdma-bw-pair $1 ${_med:-none} $_u (median of $(wc -l < /tmp/abw.vals): $(tr '\n' ' ' < /tmp/abw.vals | sed 's/ $//'))"
}
# (The functions' variables are global in sh: these loop variables are named apart.)
# perftest and accdma-bw interleaved, size by size, in the same boot.
for size in 65536 1048576 4194304; do
	case $size in 65536) iters=200 ;; 1048576) iters=40 ;; *) iters=12 ;; esac
	bench ib_write_bw $size $iters
	bench ib_read_bw $size $iters
	bench_accdma $size $iters 1
done
bench ib_send_lat 8 1000 3
bench_accdma 8 1000 3 lat
