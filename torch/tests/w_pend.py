# SPDX-License-Identifier: MIT
"""Sends of ordinary tensors: from the tensor itself when the receiver is
ready (its note came), staged when its grace period ends; FIFO per (dst, tag)
either way. Who is ready first is fixed by barriers, never by timing."""
import time

import torch
import torch.distributed as dist

from wcommon import report, init

BIG = 1 << 18  # 1 MiB of float32: registered (>= 64 KiB)


def payload(i, n=BIG):
    """Message i: distinct in every element, so a mix-up or a torn copy shows."""
    return torch.arange(n, dtype=torch.float32) + 1000.0 * i


def counts(pg, before):
    after = pg.copy_counts()
    return {k: after[k] - before[k] for k in after}


def sc_pend_ready():
    """The receiver posts every recv first: every send goes from its tensor."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    # A loaded machine may delay the note: waiting longer costs nothing here.
    pg.send_grace_us_per_mib = 10_000_000
    tags = [5, 6, 5, 5, 6]
    before = pg.copy_counts()
    if r == 1:
        bufs = [torch.zeros(BIG) for _ in tags]
        ws = [dist.irecv(b, 0, tag=t) for b, t in zip(bufs, tags)]
        dist.barrier()  # every recv (and its note) is posted
        for w in ws:
            w.wait()
        got = [int(b[0].item()) // 1000 for b in bufs]
        for i, b in enumerate(bufs):
            assert torch.equal(b, payload(i)), i
        report("order", got)
    else:
        dist.barrier()
        src = [payload(i) for i in range(len(tags))]
        ws = [dist.isend(s, 1, tag=t) for s, t in zip(src, tags)]
        ws[0].wait()
        for w in ws:
            w.wait()
        dist.send(payload(9), 1, tag=7)  # a blocking one, its recv posted below
    if r == 1:
        x = torch.zeros(BIG)
        dist.recv(x, 0, tag=7)
        assert torch.equal(x, payload(9))
    report("counts", counts(pg, before))
    dist.barrier()
    report("done", "pend_ready")


def sc_pend_late():
    """The receiver posts after the sender's calls return: each send is
    staged once its grace period ends, and the tensor may be reused at once."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    before = pg.copy_counts()
    if r == 0:
        a = payload(1)
        dist.send(a, 1)
        a.fill_(-1.0)  # returned: the tensor is the caller's again
        b = payload(2)
        w = dist.isend(b, 1)
        while not w.is_completed():  # polling alone ends the grace period
            time.sleep(0.001)
        b.fill_(-1.0)
        c = payload(3)
        dist.isend(c, 1)  # its work dropped: the group finishes it
        dist.barrier()  # a blocking wait: the dropped send is staged first
        c.fill_(-1.0)
    else:
        dist.barrier()
        got = []
        for _ in range(3):
            x = torch.zeros(BIG)
            dist.recv(x, 0)
            got.append(int(x[0].item()) // 1000)
            assert torch.equal(x, payload(got[-1])), got
        report("order", got)
    report("counts", counts(pg, before))
    dist.barrier()
    report("done", "pend_late")


def sc_pend_fifo():
    """Several isends on one (dst, tag) and on another tag, the first waited
    on while the receiver is late: every message arrives, in order per tag."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    tags = [5, 6, 5, 5, 6]
    before = pg.copy_counts()
    if r == 0:
        src = [payload(i) for i in range(len(tags))]
        ws = [dist.isend(s, 1, tag=t) for s, t in zip(src, tags)]
        ws[0].wait()
        for w in ws:
            w.wait()
        for s in src:
            s.fill_(-1.0)
        dist.barrier()
    else:
        dist.barrier()
        got = {}
        for t in (6, 6, 5, 5, 5):  # the other tag first: tags are separate channels
            x = torch.zeros(BIG)
            dist.recv(x, 0, tag=t)
            i = int(x[0].item()) // 1000
            assert torch.equal(x, payload(i)), (t, i)
            got.setdefault(t, []).append(i)
        report("order", {str(k): v for k, v in got.items()})
    report("counts", counts(pg, before))
    dist.barrier()
    report("done", "pend_fifo")


def sc_pend_permute(rounds="3", mib="16"):
    """Every rank dist.send()s to the next, then recvs from the one before,
    with the same program everywhere: sends whose receiver is not there yet
    are staged after their grace period, and nothing waits on a cycle."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    count = int(mib) << 18
    nxt, prev = (r + 1) % n, (r - 1) % n
    before = pg.copy_counts()
    got = []
    for k in range(int(rounds)):
        t = payload(100 * r + k, count)
        dist.send(t, nxt)
        t.fill_(-1.0)
        x = torch.zeros(count)
        dist.recv(x, prev)
        assert torch.equal(x, payload(100 * prev + k, count)), (k, x[:4])
        got.append(int(x[0].item()) // 1000)
    report("got", got)
    report("counts", counts(pg, before))
    dist.barrier()
    report("done", "pend_permute")


def sc_pend_any(count="300"):
    """Recvs from any source send no notes: the sends are staged, and once
    too many note recvs wait the channel stops posting them."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    small = 1 << 14  # 64 KiB of float32: the smallest registered size
    before = pg.copy_counts()
    if r == 0:
        for i in range(int(count)):
            dist.send(payload(i, small), 1)
    else:
        got = []
        for _ in range(int(count)):
            x = torch.zeros(small)
            dist.recv(x)
            i = int(x[0].item()) // 1000
            assert torch.equal(x, payload(i, small)), i
            got.append(i)
        assert got == list(range(int(count))), got
        report("ordered", True)
    report("counts", counts(pg, before))
    dist.barrier()
    report("done", "pend_any")
