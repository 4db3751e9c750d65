#!/usr/bin/env bash
# The structure's seams, checked on the sources (make check):
#  - fw_stub/: only the peer seam's implementation (peer_*.c) navigates to a
#    device's block by any device but the engine's own (fd->id): everything
#    an engine does to another device goes through fw_stub/peer.h;
#  - driver/: the generic files name no transport: what differs is behind
#    driver/transport.h, in driver/<transport>/;
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
python3 tests/check-calls.py fw_stub fw_ || fail=1
[ $fail = 0 ] && echo "check-seams: fw_stub/ and driver/ keep to their seams"
exit $fail
