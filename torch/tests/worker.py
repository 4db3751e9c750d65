# SPDX-License-Identifier: MIT
"""One rank of a test: python3 worker.py SCENARIO [ARGS]. Each scenario checks
its data as a user's program would (assert), and reports what it received as
'@R<rank> key json' lines, which the pytest side checks again."""
import json
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import accdma_torch  # noqa: F401  registers "accdma"

RANK = -1


def report(key, val):
    # One write: the ranks share the pipe, and a line must not interleave.
    sys.stdout.flush()
    os.write(1, f"@R{RANK} {key} {json.dumps(val)}\n".encode())


def init(timeout=30):
    global RANK
    if "STORE_FILE" in os.environ:
        r, n = int(os.environ["STORE_RANK"]), int(os.environ["STORE_SIZE"])
        store = dist.FileStore(os.environ["STORE_FILE"], n)
        dist.init_process_group("accdma", store=store, rank=r, world_size=n,
                                timeout=timedelta(seconds=timeout))
    else:
        dist.init_process_group("accdma", timeout=timedelta(seconds=timeout))
    RANK = dist.get_rank()
    return dist.get_rank(), dist.get_world_size()


def raises(fn, *words):
    """Run fn, which must raise; returns the message, checked to hold every word."""
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        msg = str(e)
        for w in words:
            assert w in msg, f"'{w}' not in: {msg}"
        return msg
    raise AssertionError(f"no exception (expected one naming {words})")


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128]


def sample(dtype, n, seed):
    """Distinct values of dtype for a (seed, index)."""
    if dtype == torch.bool:
        return (torch.arange(n) + seed) % 3 == 0
    if dtype.is_complex:
        return torch.complex(torch.arange(n, dtype=torch.float64) + seed,
                             -torch.arange(n, dtype=torch.float64)).to(dtype)
    return ((torch.arange(n) * 7 + seed) % 100).to(dtype)


# ---- point to point --------------------------------------------------------

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
        while dropped.sum() == 0:          # a later call on the group finishes it
            pg.buffered_bytes()
            time.sleep(0.01)
        assert dropped.tolist() == [1.0, 2.0, 3.0] and nxt.tolist() == [4.0, 5.0, 6.0]
        report("dropped", dropped.tolist())
    else:
        dist.send(torch.tensor([1.0, 2.0, 3.0]), 1, tag=14)
        dist.send(torch.tensor([4.0, 5.0, 6.0]), 1, tag=14)

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


# ---- the seed's patterns -----------------------------------------------------

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
    recvs by default, sends with send_direct; small and non-contiguous ones staged."""
    r, n = init()
    pg = dist.distributed_c10d._get_default_group()
    peer = 1 - r
    big = 1 << 18  # 1 MiB of float32
    before = pg.copy_counts()
    # a staged send into a registered recv, both ways
    for k in range(2):
        if r == k:
            dist.send(torch.arange(big, dtype=torch.float32) + k, peer)
        else:
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
    # small and non-contiguous: staged
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
    after = pg.copy_counts()
    report("counts", {k: after[k] - before[k] for k in after})
    dist.barrier()
    report("done", "register")


def sc_gloo_default():
    """The default group on gloo, point to point on accdma groups made after it."""
    global RANK
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    r, n = dist.get_rank(), dist.get_world_size()
    RANK = r
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


# ---- errors, not hangs ---------------------------------------------------------

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


# ---- collectives against gloo -----------------------------------------------------

def sc_coll():
    r, n = init()
    gl = dist.new_group(backend="gloo")
    checked = []

    def same(name, fn, make, ref=None, only=None):
        """fn(tensors, group) on accdma and on gloo (or ref(tensors, gloo) where gloo
        lacks the collective) from the same inputs: equal results."""
        a, b = make(), make()
        fn(a, None)
        (ref or fn)(b, gl)
        for x, y in zip(a[:only], b[:only]):
            assert x.dtype == y.dtype and torch.equal(x, y), (name, x, y)
        checked.append(name)
        return a

    def a2a_by_single(t, g):
        """gloo has no list all_to_all: its all_to_all_single, split by hand."""
        out = torch.empty(sum(x.numel() for x in t[n:]), dtype=t[n].dtype)
        dist.all_to_all_single(out, torch.cat(t[:n]), group=g)
        for p in range(n):
            t[n + p].copy_(out[p * t[n].numel():(p + 1) * t[n].numel()])

    for numel in (1, 5, 1000, 4099):
        for dt in (torch.float32, torch.int64, torch.float64, torch.int32, torch.float16, torch.uint8):
            base = lambda: [((torch.arange(numel) * (r + 1) + r) % 3 + 1).to(dt)]
            for op in ("SUM", "PRODUCT", "MIN", "MAX"):
                same(f"all_reduce {op} {dt} {numel}",
                     lambda t, g, op=op: dist.all_reduce(t[0], op=getattr(dist.ReduceOp, op),
                                                         group=g), base)
        out = same(f"all_reduce check {numel}",
                   lambda t, g: dist.all_reduce(t[0], group=g),
                   lambda: [torch.full((numel,), float(r + 1))])
        assert torch.all(out[0] == n * (n + 1) / 2)
        for root in range(n):
            same(f"broadcast {root} {numel}",
                 lambda t, g, root=root: dist.broadcast(t[0], root, group=g),
                 lambda: [torch.arange(numel, dtype=torch.float32) + 10 * r])
        same(f"all_gather {numel}",
             lambda t, g: dist.all_gather(t[1:], t[0], group=g),
             lambda: [torch.arange(numel) + 100 * r] + [torch.zeros(numel, dtype=torch.int64)
                                                        for _ in range(n)])
        same(f"reduce_scatter {numel}",
             lambda t, g: dist.reduce_scatter(t[0], t[1:], group=g),
             lambda: [torch.zeros(numel)] + [torch.arange(numel, dtype=torch.float32) * (p + 1)
                                             + r for p in range(n)],
             ref=lambda t, g: [dist.all_reduce(x, group=g) for x in t[1:]]
             and t[0].copy_(t[1 + r]), only=1)
        same(f"all_to_all {numel}",
             lambda t, g: dist.all_to_all(t[n:], t[:n], group=g),
             lambda: [torch.arange(numel) + 10 * p + 100 * r for p in range(n)]
             + [torch.zeros(numel, dtype=torch.int64) for _ in range(n)],
             ref=a2a_by_single)
        same(f"reduce {numel}",
             lambda t, g: dist.reduce(t[0], 1 % n, op=dist.ReduceOp.MAX, group=g) if r == 1 % n
             else dist.reduce(t[0].clone(), 1 % n, op=dist.ReduceOp.MAX, group=g),
             lambda: [torch.arange(numel, dtype=torch.float32) * (r - 1)])
    # uneven splits (rank p sends p+1 rows to everyone... each its own count)
    in_splits = [(r + p) % 3 + 1 for p in range(n)]
    out_splits = [(p + r) % 3 + 1 for p in range(n)]
    same("all_to_all_single uneven",
         lambda t, g: dist.all_to_all_single(t[1], t[0], out_splits, in_splits, group=g),
         lambda: [torch.arange(sum(in_splits) * 2).view(-1, 2) + 1000 * r,
                  torch.zeros(sum(out_splits), 2, dtype=torch.int64)])
    same("all_reduce_coalesced",
         lambda t, g: dist.all_reduce_coalesced(t, group=g),
         lambda: [torch.ones(3) * r, torch.arange(7, dtype=torch.float32) + r])
    same("gather",
         lambda t, g: dist.gather(t[0], t[1:] if r == 0 else None, 0, group=g),
         lambda: [torch.arange(4) + r] + [torch.zeros(4, dtype=torch.int64) for _ in range(n)])
    same("scatter",
         lambda t, g: dist.scatter(t[0], t[1:] if r == 0 else None, 0, group=g),
         lambda: [torch.zeros(4)] + [torch.arange(4, dtype=torch.float32) + p for p in range(n)])
    # what gloo cannot reduce, against the value computed here
    for dt, op, want in ((torch.bfloat16, "SUM", float(sum(range(1, n + 1)))),
                         (torch.bfloat16, "MAX", float(n)),
                         (torch.int8, "SUM", float(sum(range(1, n + 1)) % 256 - 256
                                                   if sum(range(1, n + 1)) > 127 else
                                                   sum(range(1, n + 1))))):
        x = torch.full((7,), r + 1, dtype=dt)
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        assert torch.all(x == torch.tensor(want, dtype=dt)), (dt, op, x)
        checked.append(f"{dt} {op}")
    # torch hands a complex sum over as real pairs (and refuses other ops itself)
    z = torch.full((5,), complex(r + 1, 1), dtype=torch.complex64)
    dist.all_reduce(z)
    assert torch.allclose(z, torch.full((5,), complex(n * (n + 1) / 2, n), dtype=torch.complex64))
    b_or = torch.tensor([r == 0, False, True])
    b_and = b_or.clone()
    dist.all_reduce(b_or, op=dist.ReduceOp.MAX)
    dist.all_reduce(b_and, op=dist.ReduceOp.MIN)
    assert b_or.tolist() == [True, False, True] and b_and.tolist() == [False, False, True]
    raises(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16), op=dist.ReduceOp.BAND),
           "is not supported (sum, product, min, max are)")
    report("other_reductions", [z[0].real.item(), z[0].imag.item(), b_or.tolist()])

    # a subgroup of the even ranks, on the same world
    evens = list(range(0, n, 2))
    sub = dist.new_group(evens)
    if r in evens:
        x = torch.tensor([float(r)])
        dist.all_reduce(x, group=sub)
        assert x.item() == sum(evens), x
        dist.barrier(group=sub)
        report("sub", x.item())
    dist.barrier()
    report("checked", len(checked))
    report("done", "coll")


def sc_ddp():
    """Three steps of DistributedDataParallel on accdma and on gloo: the same weights."""
    r, n = init()
    gl = dist.new_group(backend="gloo")
    results = []
    for group in (None, gl):
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(100 + r)
        for _ in range(3):
            x = torch.randn(4, 8, generator=g)
            loss = ddp(x).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        results.append([p.detach().clone() for p in model.parameters()])
    for a, b in zip(*results):
        assert torch.allclose(a, b, atol=1e-6), (a, b)
    report("ddp_params", [round(float(p.sum()), 5) for p in results[0]])
    report("done", "ddp")


def main():
    sc = sys.argv[1]
    globals()["sc_" + sc](*sys.argv[2:])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
