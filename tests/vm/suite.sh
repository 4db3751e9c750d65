#!/usr/bin/env bash
# Runs one VM suite end to end: the kernel (vmlinux.sh), an initramfs with
# the suite's guest script (initramfs.sh, which reads EXTRA_BINS,
# EXTRA_FILES, EXTRA_KO), one boot (run.sh, which reads VM_TIMEOUT,
# VM_APPEND, ...). The suite's VMBENCH lines go to OUT/NAME-bench.txt.
#   tests/vm/suite.sh NAME GUEST_SCRIPT        (OUT: VM_OUT, default build/vm)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?usage: suite.sh NAME GUEST_SCRIPT}
guest=${2:?usage: suite.sh NAME GUEST_SCRIPT}
out=${VM_OUT:-build/vm}
mkdir -p "$out"
t0=$(date +%s)
kernel=$(bash "$here/vmlinux.sh" "$out/kernel")
bash "$here/initramfs.sh" "$out/$name.cpio" "$guest"
bench=$out/$name-bench.txt
echo "# $name, $(date -u +%Y-%m-%dT%H:%MZ), kernel $(bash "$here/kver.sh"), qemu TCG" > "$bench"
rc=0
VM_BENCH_OUT=$bench bash "$here/run.sh" "$kernel" "$out/$name.cpio" "$out/$name" || rc=$?
if [ "$(grep -vc '^#' "$bench")" -gt 0 ]; then
	echo "vm: benchmarks (recorded, not judged) in $bench:"
	grep -v '^#' "$bench" | sed 's/^VMBENCH /    /'
else
	rm -f "$bench"
fi
echo "vm: $name suite: $(($(date +%s) - t0)) s in all"
exit "$rc"
