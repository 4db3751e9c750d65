# SPDX-License-Identifier: MIT
"""The seed's patterns, the send bound, any-source recvs, registered tensors, gloo beside."""
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import wcommon
from wcommon import report, init


def sc_seed():
    r, n = init()
    half = n // 2
    count = 1024
    # pipeline: the first half sends to the second half
    buf = torch.full((count,), float(r))
    if r < half:
        dist.send(buf, r + half, tag=7)
        assert torch.all(buf == float(r))
    else:
        dist.recv(buf, r - half, tag=7)
        assert torch.all(buf == float(r - half)), buf[:4]
    report("pipeline", float(buf[0]))

    # pipeline with computation: the receiver adds 3 to what arrived
    buf = torch.full((count,), float(r))
    if r < half:
        dist.send(buf, r + half, tag=8)
    else:
        dist.recv(buf, r - half, tag=8)
        buf += 3
        assert torch.all(buf == float(r - half) + 3), buf[:4]
    report("pipeline_exec", float(buf[0]))

    # permutation, the even/odd order a blocking runtime needs
    nxt, prv = (r + 1) % n, (r - 1) % n
    src, dst = torch.full((count,), float(r)), torch.full((count,), -1.0)
    if r % 2 == 0:
        dist.send(src, nxt, tag=1)
        dist.recv(dst, prv, tag=1)
    else:
        dist.recv(dst, prv, tag=1)
        dist.send(src, nxt, tag=1)
    assert torch.all(dst == float(prv)) and torch.all(src == float(r))
    report("permute_evenodd", float(dst[0]))

    # the same program on every rank: blocking send first, then recv
    for nbytes in (4, 16 << 20):
        src = torch.full((nbytes // 4,), float(r))
        dst = torch.full((nbytes // 4,), -1.0)
        dist.send(src, nxt, tag=2)
        dist.recv(dst, prv, tag=2)
        assert torch.all(dst == float(prv)), (nbytes, dst[:4])
        report(f"permute_send_first_{nbytes}", [float(dst[0]), float(dst[-1])])
    dist.barrier()
    report("done", "seed")


def sc_bound():
    """Sends past ACCDMA_TORCH_SEND_BUFFER wait for their recvs (and say so)."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    bound = pg.send_bound
    nxt, prv = (r + 1) % n, (r - 1) % n
    # several 1 MiB sends in a row, all sent before any recv: the bound is
    # small, so the later ones wait for the peer's recvs, which come after.
    k = 6
    if r == 0:
        for i in range(k):
            dist.send(torch.full((1 << 18,), float(i)), nxt, tag=i)
        held = pg.buffered_bytes()
        report("held", held)
        for i in range(k):
            x = torch.empty(1 << 18)
            dist.recv(x, prv, tag=i)
            assert torch.all(x == float(i))
    else:
        xs = [torch.empty(1 << 18) for i in range(k)]
        for i in range(k):
            dist.recv(xs[i], prv, tag=i)
            assert torch.all(xs[i] == float(i))
        for i in range(k):
            dist.send(xs[i], nxt, tag=i)
    # a send past the bound waits without holding up the process's other
    # threads: here another thread's send is what lets its recv come
    if r == 0:
        def go():
            time.sleep(0.2)
            dist.send(torch.ones(1), nxt, tag=20)
        th = threading.Thread(target=go)
        th.start()
        dist.send(torch.full((3 << 18,), 5.0), nxt, tag=21)   # 3 MiB: past the bound
        th.join()
    else:
        g = torch.zeros(1)
        dist.recv(g, prv, tag=20)
        big = torch.empty(3 << 18)
        dist.recv(big, prv, tag=21)
        assert torch.all(big == 5.0)
        report("big_after_go", float(big[-1]))
    dist.barrier()
    report("bound", bound)
    report("done", "bound")


def sc_any():
    """dist.recv(t) without src: rank 0 takes every other rank's messages as they
    come, FIFO per source, returning the source; small and large; mixed with
    a recv from a given source on the same tag; irecv; a subgroup."""
    r, n = init()
    K = 4
    got = {}
    for tag, size in ((0, 3), (1, 1 << 20)):  # eager, and rendezvous (4 MiB)
        if r == 0:
            got[tag], nxt = [], {s: 0 for s in range(1, n)}
            for _ in range((n - 1) * K):
                t = torch.full((size,), -1.0)
                src = dist.recv(t, tag=tag)
                k = nxt[src]
                assert torch.all(t == 100.0 * src + k), (tag, src, k, t[0].item())
                nxt[src] += 1
                got[tag].append([src, k])
            assert all(v == K for v in nxt.values()), nxt
        else:
            for k in range(K):
                dist.send(torch.full((size,), 100.0 * r + k), 0, tag=tag)
    if r == 0:
        report("any_order", got)
    dist.barrier()

    # a given recv first, then any: rank 1's two messages, in order
    if r == 0:
        a, b = torch.zeros(2), torch.zeros(2)
        dist.recv(a, 1, tag=9)
        work = dist.irecv(b, tag=9)            # no src: any source
        work.wait()
        assert a.tolist() == [1.0, 1.0] and b.tolist() == [2.0, 2.0]
        report("mixed", [a.tolist(), b.tolist(), work._source_rank()])
    elif r == 1:
        dist.send(torch.full((2,), 1.0), 0, tag=9)
        dist.send(torch.full((2,), 2.0), 0, tag=9)
    dist.barrier()

    # a subgroup of the odd ranks and 0: sources come back as global ranks
    members = [0] + [q for q in range(1, n) if q % 2]
    sub = dist.new_group(members)
    if r == 0:
        seen = sorted(dist.recv(torch.zeros(1), group=sub) for _ in members[1:])
        assert seen == members[1:], seen
        report("sub", seen)
    elif r in members:
        dist.send(torch.tensor([float(r)]), 0, group=sub)
    dist.barrier()
    report("done", "any")


def sc_register(mode="on"):
    """Ordinary tensors moved with no staging copy (registered with the library):
    recvs always, sends with send_direct (or when their receiver is ready: w_pend.py);
    small and non-contiguous ones staged."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    peer = 1 - r
    big = 1 << 18  # 1 MiB of float32
    before = pg.copy_counts()
    # a staged send into a registered recv, both ways: the receiver is behind
    # a barrier, so the send's grace period ends and it is staged
    for k in range(2):
        if r == k:
            dist.send(torch.arange(big, dtype=torch.float32) + k, peer)
            dist.barrier()
        else:
            dist.barrier()
            t = torch.zeros(big)
            dist.recv(t, peer)
            assert torch.equal(t, torch.arange(big, dtype=torch.float32) + k)
    # registered on both sides: the recv's engine reads the sender's tensor
    pg.send_direct = True
    for k in range(2):
        if r == k:
            src = torch.arange(big, dtype=torch.float32) * 2 + k
            dist.isend(src, peer).wait()
        else:
            t = torch.zeros(big)
            dist.recv(t, peer)
            assert torch.equal(t, torch.arange(big, dtype=torch.float32) * 2 + k)
    pg.send_direct = False
    # small and non-contiguous recvs: staged (rank 0's sends too: not registered)
    pg.register_tensors = r != 0
    if r == 0:
        dist.send(torch.tensor([1.0, 2.0, 3.0]), 1)
        dist.send(torch.arange(2 * big, dtype=torch.float32), 1)
    else:
        x = torch.zeros(3)
        dist.recv(x, 0)
        yy = torch.zeros(2 * big)
        dist.recv(yy, 0)
        assert x.tolist() == [1.0, 2.0, 3.0] and torch.equal(yy, torch.arange(2 * big,
                                                                           dtype=torch.float32))
        nc = torch.zeros(4 * big)[::2]  # non-contiguous: gathered and scattered by torch
    if r == 0:
        dist.send(torch.arange(2 * big, dtype=torch.float32) + 5, 1)
    else:
        dist.recv(nc, 0)
        assert torch.equal(nc, torch.arange(2 * big, dtype=torch.float32) + 5)
    pg.register_tensors = True
    after = pg.copy_counts()
    report("counts", {k: after[k] - before[k] for k in after})
    dist.barrier()
    report("done", "register")


def sc_gloo_default():
    """The default group on gloo, point to point on accdma groups made after it."""
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    r, n = dist.get_rank(), dist.get_world_size()
    wcommon.RANK = r
    ac = dist.new_group(backend="accdma")            # opens a world of all three
    pair = dist.new_group([1, 2], backend="accdma")  # reuses it, its own tags
    x = torch.full((100,), float(r))
    y = torch.empty(100)
    dist.send(x, (r + 1) % n, group=ac)
    dist.recv(y, (r - 1) % n, group=ac)
    assert torch.all(y == float((r - 1) % n))
    if r in (1, 2):
        # group ranks: global 1 is 0 in `pair`, global 2 is 1
        z = torch.full((3,), 10.0 * r)
        w = torch.empty(3)
        other = 3 - r
        dist.send(z, other, group=pair)
        dist.recv(w, other, group=pair)
        assert w.tolist() == [10.0 * other] * 3
        report("pair", w.tolist())
    s_ = torch.tensor([float(r)])
    dist.all_reduce(s_)                              # on gloo
    assert s_.item() == n * (n - 1) / 2
    report("ring", float(y[0]))
    report("done", "gloo_default")
