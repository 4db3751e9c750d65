#!/bin/sh
# A quick suite (make check-vm-smoke, ~20 s): the VM boots, the modules load
# and soft-RoCE's two ports come up. A start for a suite of one's own.
# shellcheck source=tests/vm/guest-lib.sh
. /vmtest/guest-lib.sh
vmtest_here rxe-ports rxe_up
