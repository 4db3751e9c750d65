# SPDX-License-Identifier: MIT
"""Collectives against gloo, and DistributedDataParallel."""
import torch
import torch.distributed as dist

from wcommon import report, init, raises


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
