# SPDX-License-Identifier: MIT
"""Errors, not hangs: timeouts, cycles, a lost peer."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import accdma_torch

from wcommon import report, init, raises


def sc_timeout():
    r, n = init()
    gl = dist.new_group(backend="gloo")      # coexists; used to line the ranks up
    sub = dist.new_group([0, 1])             # accdma too: broken on its own only
    if r == 0:
        x = torch.zeros(8)
        w = dist.irecv(x, 1, tag=7)
        msg = raises(lambda: w.wait(timeout=timedelta(milliseconds=500)),
                     "timed out after 500 ms", "recv from rank 1 (tag 7, 32 bytes)",
                     "waiting for the matching op on the peer", "broken")
        report("timeout", msg)
        assert w.is_completed() and not w.is_success()
        raises(w.wait, "timed out after 500 ms")   # and again on a later wait
        later = raises(lambda: dist.send(torch.ones(1), 1), "broken", "timed out")
        report("later", later)
        report("reason", accdma_torch.broken_reason())
        y = torch.zeros(2)
        dist.recv(y, 1, group=sub)
        report("sub", y.tolist())
    else:
        dist.send(torch.tensor([4.0, 5.0]), 0, group=sub)
    dist.barrier(group=gl)
    report("done", "timeout")


def sc_cycle():
    """Every rank receives from the previous one first: a cycle, named by each."""
    r, n = init()
    gl = dist.new_group(backend="gloo")
    x = torch.zeros(2)
    w = dist.irecv(x, (r - 1) % n, tag=4)
    msg = raises(lambda: w.wait(timeout=timedelta(milliseconds=800)), "timed out after 800 ms",
                 f"recv from rank {(r - 1) % n} (tag 4, 8 bytes)", "cycle of ranks")
    report("cycle", msg.split("cycle of ranks waiting on each other: ")[1].split(";")[0])
    dist.barrier(group=gl)
    report("done", "cycle")


def sc_peer_lost():
    r, n = init(timeout=120)
    gl = dist.new_group(backend="gloo")
    dist.barrier()
    if r == 1:
        dist.barrier(group=gl)
        os._exit(0)   # dies with no clean-up: nothing closes its world
    dist.barrier(group=gl)
    x = torch.zeros(4)
    t0 = time.monotonic()
    msg = raises(lambda: dist.recv(x, 1, tag=3), "PEER_LOST", "recv from rank 1 (tag 3",
                 "the peer's process died")
    report("lost", msg)
    report("lost_after_s", round(time.monotonic() - t0, 3))
    raises(lambda: dist.send(torch.ones(1), 1), "broken", "PEER_LOST")
    report("done", "peer_lost")
    os._exit(0)   # the gloo group's peer is gone too: skip torch's tear-down
