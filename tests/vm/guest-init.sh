#!/bin/sh
# /init in the guest (busybox sh): sets the VM up, runs the suite's script
# (/vmtest/guest.sh), then prints `VMTEST DONE` and powers off. DONE tells the
# host that the guest got to the end: without it the run crashed or hung.
# A suite script that exits non-zero is itself a failure (VMTEST FAIL guest-script).
export PATH=/vmtest/bin:/bin:/sbin:/usr/bin:/usr/sbin
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh
vm_setup
vmtest_info "boot $(cut -d' ' -f1 /proc/uptime) s to /init, kernel $(uname -r)"
if sh /vmtest/guest.sh; then :; else
	vmtest_mark "VMTEST FAIL guest-script (exit $?)"
fi
vm_kernel_check
vmtest_mark "VMTEST DONE"
sync
poweroff -f
