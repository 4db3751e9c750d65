# SPDX-License-Identifier: MIT
"""Point-to-point scenarios: data, dtypes, tags, irecv, batch, dropped works, device memory."""
import os
import threading
import time

import torch
import torch.distributed as dist

import accdma_torch

from wcommon import report, init, raises, DTYPES, sample


def until_landed(t, pg):
    """Until tensor t is no longer all zeros (10 s at most), each look a call
    on the group, which finishes the ops of dropped Works."""
    end = time.monotonic() + 10
    while t.sum() == 0 and time.monotonic() < end:
        pg.buffered_bytes()
        time.sleep(0.01)


def sc_p2p():
    r, n = init()
    assert n == 2
    peer = 1 - r
    # every dtype, both directions
    got = []
    for i, dt in enumerate(DTYPES):
        if r == 0:
            dist.send(sample(dt, 33, i), 1, tag=i)
            back = torch.empty(33, dtype=dt)
            dist.recv(back, 1, tag=i)
            assert torch.equal(back, sample(dt, 33, i + 100)), (dt, back)
        else:
            x = torch.empty(33, dtype=dt)
            dist.recv(x, 0, tag=i)
            assert torch.equal(x, sample(dt, 33, i)), (dt, x)
            dist.send(sample(dt, 33, i + 100), 0, tag=i)
        got.append(str(dt))
    report("dtypes", got)

    # zero-length tensors keep their place in the tag's FIFO
    if r == 0:
        dist.send(torch.empty(0), 1, tag=3)
        dist.send(torch.tensor([5.0, 6.0]), 1, tag=3)
    else:
        z, x = torch.full((0,), 1.0), torch.zeros(2)
        dist.recv(z, 0, tag=3)
        dist.recv(x, 0, tag=3)
        assert z.numel() == 0 and x.tolist() == [5.0, 6.0], x
        report("zero_then", x.tolist())

    # non-contiguous source and destination
    if r == 0:
        m = torch.arange(24, dtype=torch.float32).view(4, 6)
        dist.send(m[:, ::2], 1)          # a 4x3 view, stride 2
        dist.send(m.t(), 1)              # transposed
    else:
        dst = torch.full((4, 6), -1.0)
        dist.recv(dst[:, 1::2], 0)
        want = torch.arange(24, dtype=torch.float32).view(4, 6)[:, ::2]
        assert torch.equal(dst[:, 1::2], want), dst
        assert torch.all(dst[:, ::2] == -1.0), "recv wrote outside its view"
        t = torch.empty(6, 4)
        dist.recv(t, 0)
        assert torch.equal(t, torch.arange(24, dtype=torch.float32).view(4, 6).t())
        report("noncontig", dst.tolist())

    # tags out of order and FIFO within a tag
    if r == 0:
        for k in range(4):
            dist.send(torch.tensor([10 + k]), 1, tag=1)
            dist.send(torch.tensor([20 + k]), 1, tag=2)
    else:
        order = []
        for tag in (2, 1):
            for k in range(4):
                x = torch.zeros(1, dtype=torch.int64)
                dist.recv(x, 0, tag=tag)
                order.append(int(x))
        assert order == [20, 21, 22, 23, 10, 11, 12, 13], order
        report("tag_order", order)

    # isend / irecv: a recv posted first is not complete until its send
    if r == 1:
        x = torch.zeros(4)
        w = dist.irecv(x, 0, tag=9)
        before = w.is_completed()
        dist.send(torch.ones(1), 0, tag=10)  # now rank 0 sends
        assert w.wait()
        assert w.is_completed() and x.tolist() == [1.0, 2.0, 3.0, 4.0], x
        report("irecv", {"before": before, "after": True, "data": x.tolist()})
        assert before is False
    else:
        go = torch.zeros(1)
        dist.recv(go, 1, tag=10)
        w = dist.isend(torch.tensor([1.0, 2.0, 3.0, 4.0]), 1, tag=9)
        w.wait()
        assert w.is_completed()

    # batch_isend_irecv: both send first, then receive, in one batch
    mine = torch.full((1000,), float(r))
    other = torch.empty(1000)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer, tag=4),
                                   dist.P2POp(dist.irecv, other, peer, tag=4)])
    for q in reqs:
        q.wait()
    assert torch.all(other == float(peer)), other[:4]
    report("batch", float(other[0]))

    # the GIL is released while a recv waits: a thread of this process makes
    # the peer send (if the wait held the GIL, the thread could not run).
    if r == 1:
        def poke():
            time.sleep(0.2)
            dist.send(torch.ones(1), 0, tag=12)
        th = threading.Thread(target=poke)
        th.start()
        x = torch.zeros(2)
        dist.recv(x, 0, tag=11)
        th.join()
        assert x.tolist() == [7.0, 8.0]
        report("gil", x.tolist())
    else:
        go = torch.zeros(1)
        dist.recv(go, 1, tag=12)
        dist.send(torch.tensor([7.0, 8.0]), 1, tag=11)

    # tensors in device memory (whole and a contiguous part: no staging) and
    # ordinary ones, in both directions
    dm = accdma_torch.empty(1000)
    assert dm.dtype == torch.float32 and torch.all(dm == 0)
    if r == 0:
        dm.copy_(torch.arange(1000, dtype=torch.float32))
        dist.send(dm, 1, tag=13)
        dist.send(dm[10:20], 1, tag=13)
        dist.send(torch.full((10,), 9.0, dtype=torch.float64), 1, tag=13)
    else:
        dist.recv(dm, 0, tag=13)
        assert torch.equal(dm, torch.arange(1000, dtype=torch.float32))
        part = torch.zeros(10)
        dist.recv(part, 0, tag=13)
        assert part.tolist() == list(range(10, 20)), part
        dm2 = accdma_torch.empty(30, dtype=torch.float64)
        dist.recv(dm2[5:15], 0, tag=13)
        assert dm2[5:15].tolist() == [9.0] * 10 and torch.all(dm2[:5] == 0)
        assert torch.all(dm2[15:] == 0)
        report("devmem", [float(dm[999]), part.tolist(), dm2.tolist()])

    # a Work dropped before it completes: its recv still lands (FIFO: before the next)
    pg = dist.distributed_c10d._get_default_group()
    if r == 1:
        dropped = torch.zeros(3)
        dist.irecv(dropped, 0, tag=14)     # the Work is dropped at once
        nxt = torch.zeros(3)
        dist.recv(nxt, 0, tag=14)
        until_landed(dropped, pg)          # a later call on the group finishes it
        assert dropped.tolist() == [1.0, 2.0, 3.0] and nxt.tolist() == [4.0, 5.0, 6.0], (dropped, nxt)
        report("dropped", dropped.tolist())
        # dropped after its recv completed, unseen: the data still lands (it
        # was lost while it waited in a staging buffer)
        late = torch.zeros(3)
        w = dist.irecv(late, 0, tag=15)
        end = time.monotonic() + 10
        while not w.is_completed() and time.monotonic() < end:
            time.sleep(0.01)
        late2 = torch.zeros(3)
        w = dist.irecv(late2, 0, tag=15)
        time.sleep(0.3)                    # done on the device, nobody has looked
        del w
        until_landed(late2, pg)
        assert late2.tolist() == [10.0, 11.0, 12.0], late2
        report("dropped_done", [late.tolist(), late2.tolist()])
    else:
        dist.send(torch.tensor([1.0, 2.0, 3.0]), 1, tag=14)
        dist.send(torch.tensor([4.0, 5.0, 6.0]), 1, tag=14)
        dist.send(torch.tensor([7.0, 8.0, 9.0]), 1, tag=15)
        dist.send(torch.tensor([10.0, 11.0, 12.0]), 1, tag=15)

    # clear errors
    raises(lambda: dist.send(torch.ones(1), peer, tag=-1), "tag -1 is negative")
    raises(lambda: dist.send(torch.ones(1), 5), "not in the group")

    # a recv bigger than the message: named, and the group still works
    if r == 0:
        dist.send(torch.ones(4), 1, tag=5)
        dist.send(torch.tensor([3.0]), 1, tag=6)
    else:
        msg = raises(lambda: dist.recv(torch.zeros(8), 0, tag=5), "received 16 bytes",
                     "holds 32", "recv from rank 0 (tag 5")
        x = torch.zeros(1)
        dist.recv(x, 0, tag=6)
        assert x.tolist() == [3.0]
        report("short_recv", msg)
    dist.barrier()
    report("done", "p2p")


def sc_engines():
    """The device's engine count, and 16 MiB ordinary tensors both ways
    (registered: with two engines each copy is shared between them)."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    report("engines", pg.engines)
    report("cpus", len(os.sched_getaffinity(0)))
    peer = 1 - r
    big = 4 << 20  # 16 MiB of float32
    pg.send_direct = True
    for k in range(4):
        want = torch.arange(big, dtype=torch.float32) * (k + 1) + r
        if k % 2 == r:
            dist.send(want, peer)
        else:
            t = torch.zeros(big)
            dist.recv(t, peer)
            assert torch.equal(t, torch.arange(big, dtype=torch.float32) * (k + 1) + peer), k
    report("registered_recvs", pg.copy_counts()["registered_recvs"])
    report("done", "engines")
