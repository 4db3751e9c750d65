#!/bin/sh
# The kernel module's suite, in the guest (run by /init; make check-kmod,
# tests/README.md "The VM"). accdma.ko comes as EXTRA_KO (in
# /lib/modules/<ver>/extra/), the static kmod-ioctl as EXTRA_BINS.
#  - selftest: load with selftest=1 (worlds whose engines are kernel threads
#    running the core; kmod/selftest.c): every test passed, and it unloads
#  - ioctl: /dev/accdma's ioctls answer and refuse what breaks the ABI's rules
#  - rmmod-busy: an open /dev/accdma pins the module (EBUSY); its close frees it
#  - pair: two processes join a world through /dev/accdma (kmod-pair):
#    8-byte ping-pong, 1 MiB each way, a forked child without the mapping
#  - kill: a rank killed with a send in flight; its partner gets PEER_LOST
#  - scribble: a rank writes junk over all it mapped; the kernel lives on
#  - poll: ACCDMA_IOC_POLL's checks (kmod-poll): its ABI, a bounded spin, a
#    signal during it, two waiters of one device, a peer killed while polling
#  - pair-signal: pair with SIGALRM every millisecond in both ranks: the
#    waits a signal ends in the module go on
#  - poll-drive: waiters run their devices' passes in the module (its
#    poll_moved counter grows), and with ACCDMA_POLL=0 they do not
#  - qt-kmod-N: queue-tester's scenarios (tests/scenarios) with -t kmod
#    through accdma-run, one process per device, N = 2 and 4
#  - the cmocka tests in /vmtest/files/kmod-tests.list, with
#    ACCDMA_TRANSPORT=kmod (each opens its worlds through the module)
#  - rmmod-mapped: rmmod fails while a world is open, succeeds after
#  - load-unload: KMOD_LOADS (100) loads and unloads
# Each test is a function run by vmtest (a time limit, PASS/FAIL markers);
# /init adds a kernel-log check of its own.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh

KO=/lib/modules/$(cat /vmtest/kver)/extra/accdma.ko
NDEV=${KMOD_DEVICES:-4}
LOADS=${KMOD_LOADS:-100}

loaded() { grep -q '^accdma ' /proc/modules; }

selftest() {
	_base=$(dmesg | wc -l)
	insmod "$KO" selftest=1 selftest_devices="$NDEV" || return 1
	dmesg | tail -n +$((_base + 1)) | grep 'accdma'
	_nfail=$(cat /sys/module/accdma/parameters/selftest_failed)
	rmmod accdma || return 1
	[ "$_nfail" = 0 ] || { echo "selftest_failed=$_nfail"; return 1; }
	dmesg | tail -n +$((_base + 1)) | grep -q 'accdma: selftest [0-9]* passed, 0 failed'
}

ioctl_checks() {
	insmod "$KO" || return 1
	kmod-ioctl /dev/accdma
	_rc=$?
	rmmod accdma || return 1
	return $_rc
}

rmmod_busy() {
	insmod "$KO" || return 1
	exec 3</dev/accdma
	if rmmod accdma 2>/dev/null; then
		echo "rmmod succeeded with /dev/accdma open"
		exec 3<&-
		return 1
	fi
	exec 3<&-
	rmmod accdma
}

# kmod-pair pair, its VMBENCH lines recorded
pair_bench() {
	kmod-pair pair 200 > /tmp/pair.out 2>&1
	_rc=$?
	# the same over shm, for the ratio (recorded, not judged); kmod with
	# engines that do not spin; and both with every op a sleep and a
	# wake-up: a host that does not run engine passes itself (ACCDMA_POLL=0)
	KMOD_PAIR_TRANSPORT=shm kmod-pair pair 200 >> /tmp/pair.out 2>&1
	KMOD_PAIR_NOTE=spin0 ACCDMA_SPIN_US=0 kmod-pair pair 200 >> /tmp/pair.out 2>&1
	KMOD_PAIR_NOTE=poll0 ACCDMA_POLL=0 kmod-pair pair 200 >> /tmp/pair.out 2>&1
	KMOD_PAIR_NOTE=poll0 KMOD_PAIR_TRANSPORT=shm ACCDMA_POLL=0 kmod-pair pair 200 \
		>> /tmp/pair.out 2>&1
	cat /tmp/pair.out
	grep '^VMBENCH ' /tmp/pair.out | while read -r _v _rest; do vmbench $_rest; done
	return $_rc
}

# kmod-poll, its VMBENCH lines recorded
poll_checks() {
	kmod-poll /dev/accdma > /tmp/poll.out 2>&1
	_rc=$?
	cat /tmp/poll.out
	grep '^VMBENCH ' /tmp/poll.out | while read -r _v _rest; do vmbench $_rest; done
	return $_rc
}

# A waiter drives its devices: a ping-pong moves poll_moved; without host
# polling (ACCDMA_POLL=0) it stays.
poll_drive() {
	_p=/sys/module/accdma/parameters/poll_moved
	_a=$(cat $_p)
	kmod-pair pair 20 > /dev/null || return 1
	_b=$(cat $_p)
	ACCDMA_POLL=0 kmod-pair pair 20 > /dev/null || return 1
	_c=$(cat $_p)
	echo "poll_moved: $_a; after a pair $_b; after a pair with ACCDMA_POLL=0 $_c"
	[ "$_b" -gt "$_a" ] && [ "$_c" = "$_b" ]
}

# The listed cmocka tests: one per line, `[VMTEST_TIMEOUT=SECS] PATH`
# (shipped as /vmtest/bin/NAME), run with ACCDMA_TRANSPORT=kmod.
run_list() {
	[ -s /vmtest/files/kmod-tests.list ] || return 0
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' /vmtest/files/kmod-tests.list |
	while read -r _prog _rest; do
		_limit=$VMTEST_TIMEOUT
		case $_prog in
		VMTEST_TIMEOUT=*)
			_limit=${_prog#*=}
			_prog=$_rest
			;;
		esac
		_prog=$(basename "$_prog")
		VMTEST_TIMEOUT=$_limit vmtest "$_prog" env ACCDMA_TRANSPORT=kmod "/vmtest/bin/$_prog" \
			< /dev/null
	done
}

# a world open (files and mappings) keeps the module; it unloads after
rmmod_mapped() {
	kmod-pair hold 3 &
	_p=$!
	sleep 1
	if rmmod accdma 2>/dev/null; then
		echo "rmmod succeeded with a world open"
		return 1
	fi
	wait $_p || return 1
	rmmod accdma
}

load_unload() {
	_i=0
	while [ $_i -lt "$LOADS" ]; do
		insmod "$KO" || { echo "insmod $_i failed"; return 1; }
		rmmod accdma || { echo "rmmod $_i failed"; return 1; }
		_i=$((_i + 1))
	done
	echo "$LOADS loads and unloads"
}

vmtest selftest selftest
loaded && rmmod accdma
vmtest ioctl ioctl_checks
loaded && rmmod accdma
vmtest rmmod-busy rmmod_busy
loaded && rmmod accdma
# mem_max_mb=128: test_split_copy's regions are 33 MiB
if insmod "$KO" mem_max_mb=128; then
	vmtest pair pair_bench
	vmtest kill kmod-pair kill
	vmtest scribble kmod-pair scribble
	vmtest poll poll_checks
	vmtest pair-signal kmod-pair signal 500
	vmtest poll-drive poll_drive
	for _n in 2 4; do
		vmtest qt-kmod-$_n env ACCDMA_TRANSPORT=kmod accdma-run -n $_n -- \
			queue-tester -t kmod /vmtest/files/scenarios
	done
	run_list
	vmtest rmmod-mapped rmmod_mapped
	loaded && rmmod accdma
fi
vmtest load-unload load_unload
loaded && rmmod accdma
exit 0
