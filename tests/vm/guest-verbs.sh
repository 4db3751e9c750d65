#!/bin/sh
# The verbs suite, in the guest (run by /init; tests/README.md, "The VM"). Soft-RoCE between two "hosts" of this VM:
# rxe0 on veth0 (203.0.113.11) and rxe1 on veth1 (203.0.113.12).
#  - rxe-ports: both ports come up (PORT_ACTIVE)
#  - rc-pingpong: ibv_rc_pingpong from rxe1 to rxe0
#  - rc-pingpong-veth: its data crossed the veth (byte counters grew by at
#    least what was sent), so the routing of rxe_up is real
#  - the programs listed in /vmtest/files/verbs-tests.list, one test each
#  - rxe2-up, test_verbs_cut_test_port_relayed, _test_path_one_way: a third
#    port (rxe2 on a macvlan of veth1), a port-down that only it sees,
#    relayed by rank 0, and a path from it that drops every packet
#  - one round of verbs-bench.sh (perftest and accdma-bw): VMBENCH lines,
#    recorded, never pass/fail (TCG numbers are functional, compare ratios)
# perftest and pingpong exchange their QP numbers over TCP on 127.0.0.1, so
# only RoCE traffic counts on the veth.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh
# shellcheck source=tests/vm/verbs-bench.sh
. /vmtest/verbs-bench.sh

vmtest_here rxe-ports rxe_up || exit 0

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

# The port-down case (last in the list) took veth1 down and up: its routes
# and neighbour entries go back, and the ports must carry traffic again.
paths_back() { rxe_paths && rxe_active; }
vmtest rxe-restored paths_back && vmtest rc-pingpong-again pingpong

# A port-down that only one rank's device sees, relayed to a third rank by
# rank 0: rank 1 alone on rxe2 (a macvlan on veth1), then its port back up.
# Then a path that works one way only: every rank's open fails and says why.
relayed() { /vmtest/bin/test_verbs_cut test_port_relayed; }
one_way() { /vmtest/bin/test_verbs_cut test_path_one_way; }
if vmtest_here rxe2-up rxe2_up; then
	vmtest test_verbs_cut_test_port_relayed relayed
	vmtest rxe2-restored rxe2_paths && vmtest test_verbs_cut_test_path_one_way one_way
fi

# perftest and accdma-bw, one round (make bench-verbs runs nine: guest-verbs-bench.sh).
verbs_bench_round 1
