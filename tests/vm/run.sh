#!/usr/bin/env bash
# Boots the VM once and turns the guest's markers into a result.
#   tests/vm/run.sh KERNEL INITRD [OUT_DIR]      (OUT_DIR default build/vm)
# Writes OUT_DIR/console.log (ttyS0: the kernel and the guest's output) and
# OUT_DIR/markers.log (ttyS1: the guest's VMTEST/VMBENCH lines only), prints
# each VMTEST line and `N passed, M failed`, appends VMBENCH lines to
# $VM_BENCH_OUT when set. Exits non-zero on a failed test, a missing
# `VMTEST DONE` (the guest crashed or the time ran out: it says which, with
# the console's tail), or a panic/WARN/BUG/Oops in the console.
# Knobs:
#   VM_TIMEOUT   host-side limit of the whole boot, seconds (600)
#   VM_APPEND    extra kernel command line (default: the kernel-module
#                checks, cheap: a WARN panics, a soft lockup or hung task too,
#                SLUB checks and poisoning of freed memory and pages)
#   VM_SMP, VM_MEM  (2, 1536)
# Software emulation (TCG) only: /dev/kvm here cannot run Debian's kernel.
set -uo pipefail
kernel=${1:?usage: run.sh KERNEL INITRD [OUT_DIR]}
initrd=${2:?usage: run.sh KERNEL INITRD [OUT_DIR]}
out=${3:-build/vm}
timeout_s=${VM_TIMEOUT:-600}
append=${VM_APPEND-panic_on_warn=1 softlockup_panic=1 hung_task_panic=1 slub_debug=FZPU page_poison=1}
mkdir -p "$out"
console=$out/console.log
markers=$out/markers.log
rm -f "$console" "$markers"

# panic=-1 with -no-reboot: a panic ends qemu at once instead of waiting for
# the timeout. Two serial ports: the console, and the markers alone.
t0=$(date +%s.%N)
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
	-machine q35 -cpu max -smp "${VM_SMP:-2}" -m "${VM_MEM:-1536}" \
	-nographic -no-reboot -nodefaults -monitor none \
	-serial "file:$console" -serial "file:$markers" \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 rdinit=/init $append" </dev/null
qrc=$?
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

# The tests' lines, and under a failure its output (indented).
tr -d '\r' < "$markers" 2>/dev/null | grep -E '^(VMTEST |    )' || true
if [ -n "${VM_BENCH_OUT:-}" ]; then
	tr -d '\r' < "$markers" 2>/dev/null | grep '^VMBENCH ' >> "$VM_BENCH_OUT" || true
fi
pass=$(tr -d '\r' < "$markers" 2>/dev/null | grep -c '^VMTEST PASS ')
fail=$(tr -d '\r' < "$markers" 2>/dev/null | grep -c '^VMTEST FAIL ')
bad=0
if ! tr -d '\r' < "$markers" 2>/dev/null | grep -q '^VMTEST DONE'; then
	bad=1
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		echo "vm: no VMTEST DONE: timed out after $timeout_s s (host-side)"
	elif grep -q 'Kernel panic' "$console"; then
		echo "vm: no VMTEST DONE: the kernel panicked"
	else
		echo "vm: no VMTEST DONE: qemu exited ($qrc) before the guest finished"
	fi
fi
# Kernel lines only (printk's timestamp first), so a test's own output cannot
# match: panics, WARN, BUG: (soft lockups too), kernel BUG at, SLUB's
# "BUG cache (...)" reports, Oopses, GPFs, stack traces.
problems='Kernel panic|WARNING:|BUG:|kernel BUG at|BUG [^ ]+ \(|Oops|general protection fault|Call Trace:'
if grep -nE "^\[ *[0-9]+\.[0-9]+\] .*($problems)" "$console" > "$out/kernel-problems.txt"; then
	bad=1
	echo "vm: the kernel reported problems ($console):"
	head -n 20 "$out/kernel-problems.txt" | tr -d '\r' | sed 's/^/    /'
fi
if [ "$bad" = 1 ]; then
	echo "vm: the console's last lines ($console):"
	tail -n 40 "$console" | tr -d '\r' | sed 's/^/    /'
fi
echo "vm: $secs s in qemu (console: $console)"
echo "$pass passed, $fail failed"
[ "$bad" = 0 ] && [ "$fail" = 0 ] && [ "$pass" -gt 0 ]
