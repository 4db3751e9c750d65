#!/bin/sh
# guest-kmod.sh - the kernel module's checks, run inside the test VM (busybox
# sh, as root): load accdma.ko with its self-test (engines as kernel threads
# running the core; kmod/selftest.c), read the result, unload it, then load
# and unload it again and again. Prints the VM harness's markers:
# "VMTEST PASS|FAIL <name>", "N passed, M failed", "VMTEST DONE".
# With the static kmod-ioctl (make kmod-tests), also checks /dev/accdma's
# ioctls and that an open /dev/accdma keeps rmmod from unloading the module.
# Usage: guest-kmod.sh [path/to/accdma.ko] [devices] [path/to/kmod-ioctl]
ko=${1:-/accdma.ko}
ndev=${2:-4}
ioctl=${3:-/kmod-ioctl}
loads=${KMOD_LOADS:-20}
passed=0
failed=0

result() { # name status
	if [ "$2" = 0 ]; then
		echo "VMTEST PASS $1"
		passed=$((passed + 1))
	else
		echo "VMTEST FAIL $1"
		failed=$((failed + 1))
	fi
}

# the log from here on is ours: the checks below read only its new lines
base=$(dmesg | wc -l)
ourlog() { dmesg | tail -n +$((base + 1)); }

# selftest: every test of the self-test passed, and the module unloads
st=1
if insmod "$ko" selftest=1 selftest_devices="$ndev"; then
	ourlog | grep 'accdma: selftest'
	nfail=$(cat /sys/module/accdma/parameters/selftest_failed)
	ourlog | grep -q 'accdma: selftest [0-9]* passed, 0 failed' && [ "$nfail" = 0 ] && st=0
	rmmod accdma || st=1
else
	echo "guest-kmod: insmod $ko failed"
fi
result selftest $st

# ioctl: /dev/accdma's ioctls answer, refuse what breaks the ABI's rules,
# and run the self-test on demand
if [ -x "$ioctl" ]; then
	io=1
	if insmod "$ko"; then
		"$ioctl" /dev/accdma && io=0
		rmmod accdma || io=1
	fi
	result ioctl $io
fi

# rmmod-busy: an open /dev/accdma pins the module (EBUSY), its close frees it
rb=1
if insmod "$ko"; then
	exec 3</dev/accdma
	if rmmod accdma 2>/dev/null; then
		echo "guest-kmod: rmmod succeeded with /dev/accdma open"
		exec 3<&-
	else
		exec 3<&-
		rmmod accdma && rb=0
	fi
fi
result rmmod-busy $rb

# load-unload: the module loads and unloads cleanly, again and again
lu=0
i=0
while [ $i -lt "$loads" ]; do
	insmod "$ko" || { lu=1; break; }
	rmmod accdma || { lu=1; break; }
	i=$((i + 1))
done
result load-unload $lu

# no warning, oops or hung task was logged meanwhile
bad='WARNING:|BUG[: ]|Oops|Call Trace:|blocked for more than|soft lockup -|general protection'
if ourlog | grep -Eq "$bad"; then
	ourlog | grep -E -A20 "$bad" | head -60
	result kernel-log 1
else
	result kernel-log 0
fi

echo "$passed passed, $failed failed"
echo "VMTEST DONE"
