#!/usr/bin/env bash
# The structure's seams, checked on the sources (make check):
#  - fw_stub/: only the peer seam's implementation (peer_*.c) navigates to a
#    device's block by any device but the engine's own (fd->id): everything
#    an engine does to another device goes through fw_stub/peer.h;
#  - driver/: the generic files name no transport: what differs is behind
#    driver/transport.h, in driver/<transport>/;
#  - queue/abi.h, the layout host and device share, has fixed-width fields only;
#  - queue/, fw_stub/ and dma/ reach the OS only through queue/os.h;
#  - fw_stub/'s files call each other in no cycle (check-calls.py).
set -u
cd "$(dirname "$0")/.."
fail=0
nav='q_(dev|queue|cpls|descs|sq|rdv_table|eager_ring)\('
bad=$(grep -nE "$nav" fw_stub/*.c | grep -v '^fw_stub/peer_' |
      grep -vE "$nav(fd->w|w), fd->id[,)]" | grep -v 'fd->sh = q_dev(w, dev);')
if [ -n "$bad" ]; then
  echo "check-seams: fw_stub/ reaches another device's block outside the peer seam:"
  echo "$bad"
  fail=1
fi
bad=$(grep -nE 'ACCDMA_TRANSPORT_(LOCAL|SHM|VERBS|KMOD)|drv_shm|tp_state' driver/*.c |
      grep -v '^driver/transport.c:' | grep -v '^driver/opts.c:')
if [ -n "$bad" ]; then
  echo "check-seams: the generic driver names a transport (use driver/transport.h):"
  echo "$bad"
  fail=1
fi
# queue/abi.h: fixed-width types only, no pointer, no public-API or pthread type,
# and it compiles on its own
bad=$(gcc -fpreprocessed -dD -E -P queue/abi.h 2>/dev/null |
      grep -nE '\b(int|unsigned|long|short|char|size_t|bool|pthread_[a-z_]+|accdma_[a-z_]+)\b|\*')
if [ -n "$bad" ] || ! echo '#include "queue/abi.h"' | gcc -std=c11 -Wall -Werror -fsyntax-only -I. -x c -; then
  echo "check-seams: queue/abi.h must hold fixed-width fields only:"
  echo "$bad"
  fail=1
fi
# queue/, fw_stub/ and dma/ reach the OS only through queue/os.h: no file of
# theirs but the OS layer's own (os.h, os_user*.c, the kernel's os_kernel*,
# abi.h's fixed-width types)
# includes a system header
bad=$(grep -n '#include <' queue/*.[ch] fw_stub/*.[ch] dma/*.[ch] |
      grep -vE '^queue/(os\.h|os_user[a-z_]*\.c|os_kernel[a-z_]*\.[ch]|abi\.h):')
if [ -n "$bad" ]; then
  echo "check-seams: a file includes a system header instead of queue/os.h:"
  echo "$bad"
  fail=1
fi
bad=$(grep -nE '\batomic_[a-z_]+\(|memory_order_|\b(pthread_[a-z_]+|sched_yield|syscall|malloc|calloc|free|getenv)\(' \
      queue/*.[ch] fw_stub/*.[ch] dma/*.[ch] | grep -vE '^queue/(os\.h|os_user[a-z_]*\.c|os_kernel[a-z_]*\.[ch]):')
if [ -n "$bad" ]; then
  echo "check-seams: a call that belongs behind queue/os.h (atomics with an explicit order, threads, memory):"
  echo "$bad"
  fail=1
fi
# The kernel build makes the shared words plain (queue/os_kernel.h): the core
# must reach them through os_*() only, never by an implicit C11 atomic access
# (x++ on an _Atomic); clang names each one.
if command -v clang >/dev/null; then
  for f in queue/doorbell.c queue/layout.c queue/slot.c dma/*.c fw_stub/*.c; do
    clang -std=gnu11 -D_GNU_SOURCE -I. -Iinclude -fsyntax-only -Wno-everything -Watomic-implicit-seq-cst "$f" 2>&1
  done | grep -E 'warning|error' > /tmp/check-seams.$$ && {
    echo "check-seams: an implicit atomic access (the kernel build has none; use os_load/os_store/...):"
    cat /tmp/check-seams.$$
    fail=1
  }
  rm -f /tmp/check-seams.$$
fi
python3 tests/check-calls.py fw_stub fw_ || fail=1
[ $fail = 0 ] && echo "check-seams: transports, peer seam, layout, OS header and call graph hold"
exit $fail
