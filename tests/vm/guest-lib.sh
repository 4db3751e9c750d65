# shellcheck shell=sh
# The guest's library (busybox sh), sourced by /init and by suite scripts.
# Markers go to the console (ttyS0, with the kernel's messages, for reading)
# and to ttyS1 alone, which the host parses: no kernel line can break them.
#   vmtest NAME CMD...      run CMD with a time limit; VMTEST PASS/FAIL NAME
#   vmtest_here NAME CMD... the same in this shell (setup that exports variables)
#   vmbench TOOL SIZE VALUE record a benchmark result (never pass/fail)
#   rxe_up                  two soft-RoCE "hosts" in this VM (see below)
VMTEST_TIMEOUT=${VMTEST_TIMEOUT:-120}

# Debian's busybox sh runs its own applets before searching PATH; its `ip`
# has no policy routing or veth peers: iproute2's, by a function (functions
# come before applets).
ip() { /usr/sbin/ip "$@"; }

vmtest_mark() {
	echo "$*"
	[ -c /dev/ttyS1 ] && echo "$*" > /dev/ttyS1
	return 0
}
vmtest_info() { vmtest_mark "VMTEST INFO $*"; }
vmbench() { vmtest_mark "VMBENCH $*"; }

# Mounts what tools expect, brings lo up, lifts the memlock limit (verbs
# register memory), and loads nothing else: suites ask for what they need.
vm_setup() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev 2>/dev/null
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t tmpfs tmpfs /tmp
	ip link set lo up
	# shellcheck disable=SC3045 # busybox sh has it
	ulimit -l unlimited
	hostname vmtest
}

# vmtest NAME CMD...: runs CMD (a program or a function of the suite's
# script) in a subshell, with a watchdog that kills it and its children after
# VMTEST_TIMEOUT seconds, then prints VMTEST PASS NAME or VMTEST FAIL NAME,
# and on failure the tail of CMD's output. Returns CMD's status, so a script
# can skip what a failed prerequisite makes pointless. NAME is one word.
vmtest() {
	_name=$1
	shift
	rm -f /tmp/vmtest.timedout
	_t0=$(cut -d' ' -f1 /proc/uptime)
	( "$@" ) > /tmp/vmtest.out 2>&1 &
	_pid=$!
	( sleep "$VMTEST_TIMEOUT"; touch /tmp/vmtest.timedout; kill_tree "$_pid" ) &
	_wd=$!
	wait "$_pid"
	_rc=$?
	kill_tree "$_wd" 2>/dev/null
	wait "$_wd" 2>/dev/null
	_why="exit $_rc"
	[ -e /tmp/vmtest.timedout ] && _why="timed out after $VMTEST_TIMEOUT s"
	vmtest_report "$_name" "$_rc" "$_why" "$_t0"
}

# vmtest_here NAME CMD...: the same in this shell, without the watchdog: for
# a setup step whose variables the rest of the script needs (rxe_up). CMD
# must bound its own waits.
vmtest_here() {
	_name=$1
	shift
	_t0=$(cut -d' ' -f1 /proc/uptime)
	"$@" > /tmp/vmtest.out 2>&1
	_rc=$?
	vmtest_report "$_name" "$_rc" "exit $_rc" "$_t0"
}

vmtest_report() { # NAME RC WHY T0
	_secs=$(awk -v a="$4" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }')
	if [ "$2" = 0 ]; then
		vmtest_mark "VMTEST PASS $1 (${_secs} s)"
	else
		vmtest_mark "VMTEST FAIL $1 ($3, ${_secs} s)"
		tail -n 40 /tmp/vmtest.out | while IFS= read -r _l; do vmtest_mark "    $_l"; done
	fi
	rm -f /tmp/vmtest.out
	return "$2"
}

# kill_tree PID: PID and its descendants (a test's servers), children first.
# Children from /proc: Debian's busybox has no pgrep.
kill_tree() {
	for _c in $(grep -l "^PPid:[[:space:]]*$1\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
		kill_tree "$_c"
	done
	kill -9 "$1" 2>/dev/null
}

# Loads modules by name: busybox modprobe (reads the shipped modules.dep),
# else insmod of each dependency first, as modules.dep lists them.
kmod_load() {
	for _m in "$@"; do
		modprobe "$_m" 2>/dev/null && continue
		_kv=$(cat /vmtest/kver)
		_rel=$(grep -E "(^|/)$(echo "$_m" | sed 's/[-_]/[-_]/g')\.ko:" "/lib/modules/$_kv/modules.dep" | head -n 1)
		[ -n "$_rel" ] || { echo "kmod_load: no module $_m" >&2; return 1; }
		# modules.dep lists a module's dependencies top-down: insmod them bottom-up.
		for _ko in $(echo "${_rel#*:}" | tr ' ' '\n' | sed '/^$/d' | tac) "${_rel%%:*}"; do
			_n=$(basename "$_ko" .ko | tr - _)
			grep -q "^$_n " /proc/modules || insmod "/lib/modules/$_kv/$_ko" || return 1
		done
	done
}

# rxe_up: two soft-RoCE "hosts" in this one VM. Two network namespaces do not
# work on 6.1 (rxe's UDP socket lives in the initial one), so both ends of a
# veth pair stay in the initial namespace, each with a /32 address and an rxe
# device on top:
#   rxe0 on veth0, 203.0.113.11    rxe1 on veth1, 203.0.113.12
# (documentation range; never 192.0.2.1, which a cmocka test assumes is not local).
# For the packets to really cross the veth: policy routing sends what this
# host generates for the other end out of the right veth (instead of the
# local table's loopback shortcut), accept_local lets the other end take a
# packet from a local source, rp_filter=0 stops the reverse-path check from
# dropping it, and permanent neighbour entries save ARP (which the
# loopback-looking addresses would confuse). MTU 9000 gives 4096-byte RoCE MTU.
# Exports ACCDMA_TEST_RXE0=rxe0@203.0.113.11, ACCDMA_TEST_RXE1=rxe1@203.0.113.12,
# ACCDMA_TEST_RXE0_GID / _RXE1_GID: the GID index of each address (RoCE v2),
# and ACCDMA_TEST_RXE0_NETDEV=veth0, ACCDMA_TEST_RXE1_NETDEV=veth1 (the links
# test_verbs may take down or silence).
RXE0_IP=203.0.113.11
RXE1_IP=203.0.113.12
rxe_up() {
	kmod_load veth crc32_generic rdma_rxe ib_uverbs rdma_ucm sch_netem || return 1
	ip link add veth0 type veth peer name veth1 || return 1
	for _i in 0 1; do
		# No IPv6 on the veths: one GID per port beside the default one.
		echo 1 > /proc/sys/net/ipv6/conf/veth$_i/disable_ipv6 2>/dev/null
		ip link set veth$_i mtu 9000 up || return 1
	done
	ip addr add $RXE0_IP/32 dev veth0
	ip addr add $RXE1_IP/32 dev veth1
	for _f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$_f"; done
	echo 1 > /proc/sys/net/ipv4/conf/veth0/accept_local
	echo 1 > /proc/sys/net/ipv4/conf/veth1/accept_local
	ip rule add pref 10 iif lo to $RXE1_IP lookup 100
	ip rule add pref 11 iif lo to $RXE0_IP lookup 101
	ip rule add pref 20 lookup local
	ip rule del pref 0
	rxe_paths || return 1
	rdma link add rxe0 type rxe netdev veth0 || return 1
	rdma link add rxe1 type rxe netdev veth1 || return 1
	rxe_active || return 1
	ACCDMA_TEST_RXE0_GID=$(rxe_gid_index rxe0 $RXE0_IP) || return 1
	ACCDMA_TEST_RXE1_GID=$(rxe_gid_index rxe1 $RXE1_IP) || return 1
	export ACCDMA_TEST_RXE0=rxe0@$RXE0_IP ACCDMA_TEST_RXE1=rxe1@$RXE1_IP
	export ACCDMA_TEST_RXE0_GID ACCDMA_TEST_RXE1_GID ACCDMA_TEST_RXE0_NETDEV=veth0 ACCDMA_TEST_RXE1_NETDEV=veth1
}

# rxe_paths: each end's route to the other out of its own veth, and the
# neighbour entries; again after a test took a veth down (that drops them).
rxe_paths() {
	ip route replace $RXE1_IP dev veth0 src $RXE0_IP table 100 || return 1
	ip route replace $RXE0_IP dev veth1 src $RXE1_IP table 101 || return 1
	ip neigh replace $RXE1_IP lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent
	ip neigh replace $RXE0_IP lladdr "$(cat /sys/class/net/veth0/address)" dev veth1 nud permanent
}

# rxe2_up: a third soft-RoCE port, rxe2 on mv1 (203.0.113.13), a macvlan
# on veth1: taking mv1 down takes only rxe2's port down, where veth1 down
# takes both veths' carriers and so both other ports. It talks to rxe0
# alone, across the veth, with routes of its own as rxe_up's. Exports
# ACCDMA_TEST_RXE2=rxe2@203.0.113.13 and ACCDMA_TEST_RXE2_NETDEV=mv1.
RXE2_IP=203.0.113.13
rxe2_up() {
	kmod_load macvlan || return 1
	ip link add link veth1 name mv1 type macvlan mode bridge || return 1
	echo 1 > /proc/sys/net/ipv6/conf/mv1/disable_ipv6 2>/dev/null
	ip link set mv1 mtu 9000 up || return 1
	ip addr add $RXE2_IP/32 dev mv1
	echo 0 > /proc/sys/net/ipv4/conf/mv1/rp_filter
	echo 1 > /proc/sys/net/ipv4/conf/mv1/accept_local
	ip rule add pref 8 iif lo from $RXE2_IP to $RXE0_IP lookup 102
	ip rule add pref 9 iif lo to $RXE2_IP lookup 103
	rdma link add rxe2 type rxe netdev mv1 || return 1
	rxe2_paths || return 1
	rxe_gid_index rxe2 $RXE2_IP > /dev/null || return 1
	export ACCDMA_TEST_RXE2=rxe2@$RXE2_IP ACCDMA_TEST_RXE2_NETDEV=mv1
}

# rxe2_paths: rxe2's routes and neighbours (again after mv1 went down, which
# drops them), and its port active.
rxe2_paths() {
	ip route replace $RXE0_IP dev mv1 src $RXE2_IP table 102 || return 1
	ip route replace $RXE2_IP dev veth0 src $RXE0_IP table 103 || return 1
	ip neigh replace $RXE2_IP lladdr "$(cat /sys/class/net/mv1/address)" dev veth0 nud permanent
	ip neigh replace $RXE0_IP lladdr "$(cat /sys/class/net/veth0/address)" dev mv1 nud permanent
	rxe_active rxe2
}

# rxe_active [DEV...]: wait up to 10 s for each port (rxe0's and rxe1's by
# default) to be PORT_ACTIVE.
rxe_active() {
	[ $# -gt 0 ] || set -- rxe0 rxe1
	for _d in "$@"; do
		_n=0
		until ibv_devinfo -d $_d 2>/dev/null | grep -q PORT_ACTIVE; do
			_n=$((_n + 1))
			[ $_n -le 100 ] || { echo "rxe_active: $_d not PORT_ACTIVE after 10 s" >&2; return 1; }
			sleep 0.1
		done
	done
}

# rxe_gid_index DEV IPV4: the index of the GID ::ffff:IPV4 on port 1 (waits
# up to 10 s for the address to reach the table).
rxe_gid_index() {
	_want=$(echo "$2" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	_n=0
	while [ $_n -le 100 ]; do
		for _g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
			if [ "$(cat "$_g" 2>/dev/null)" = "$_want" ]; then
				basename "$_g"
				return 0
			fi
		done
		_n=$((_n + 1))
		sleep 0.1
	done
	echo "rxe_gid_index: no GID for $2 on $1" >&2
	return 1
}

# net_bytes IF tx|rx: the interface's byte counter.
net_bytes() { cat "/sys/class/net/$1/statistics/$2_bytes"; }

# vm_kernel_check: a test of its own when the kernel logged a warning, a BUG
# or an Oops that did not stop it (the host also greps the console).
vm_kernel_check() {
	if dmesg | grep -E 'WARNING:|BUG:|kernel BUG at|BUG [^ ]+ \(|Oops|general protection fault|Call Trace:' \
		> /tmp/kcheck; then
		vmtest_mark "VMTEST FAIL kernel-log"
		sed 's/^/    /' /tmp/kcheck | head -n 40 | while IFS= read -r l; do vmtest_mark "$l"; done
	fi
}
