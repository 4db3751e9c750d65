# SPDX-License-Identifier: MIT
"""accdma against gloo in one job: the 8-byte send/recv round and 16 MiB.

    build/accdma-run -n 2 -- /usr/bin/python3 torch/bench/bench_p2p.py [--rounds N] [--big-rounds N]

(PYTHONPATH=build/torch.) The default group is accdma; a gloo group of the
same two ranks runs the same loops. Rank 0 prints one line per measure:
the round's mean and p50 in microseconds (rank 0 send, rank 1 recv and
send back, rank 0 recv), and for 16 MiB the bandwidth 2 x 16 MiB / round.
"device memory" rows use accdma_torch.empty() tensors (no staging copy);
the plain "accdma" 16 MiB row is the default: the recv lands in the tensor
itself (registered) and the send goes from its tensor once the receiver's
ready note came (1 copy: cross-memory attach), else staged after a grace
period (2); "staged" stages both sides (3), "send_direct" always sends from
the tensor (1, no grace period). The line after the table says how the
default row's sends went.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import accdma_torch


def rounds(r, a, b, n, group):
    """n rounds of a ping-pong between ranks 0 and 1; per-round times (s) on rank 0."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        if r == 0:
            dist.send(a, 1, group=group)
            dist.recv(b, 1, group=group)
        else:
            dist.recv(b, 0, group=group)
            dist.send(b if b.data_ptr() != a.data_ptr() else a, 0, group=group)
        times.append(time.perf_counter() - t0)
    return times


def pg_rounds(r, a, b, n, pg):
    """rounds() through the process group's own send/recv (no torch.distributed wrappers)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        if r == 0:
            pg.send([a], 1, 0).wait()
            pg.recv([b], 1, 0).wait()
        else:
            pg.recv([b], 0, 0).wait()
            pg.send([b], 0, 0).wait()
        times.append(time.perf_counter() - t0)
    return times


def permute_rounds(r, a, b, n, group):
    """The same-program permutation: both ranks dist.send first, then recv
    (the receiver is never ready in time: the sends wait out their grace period)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        dist.send(a, 1 - r, group=group)
        dist.recv(b, 1 - r, group=group)
        times.append(time.perf_counter() - t0)
    return times


def measure(r, name, a, b, n, group, warm, rounds=rounds):
    rounds(r, a, b, warm, group)
    dist.barrier()
    t0 = time.perf_counter()
    rounds(r, a, b, n, group)
    mean = (time.perf_counter() - t0) / n
    p50 = statistics.median(rounds(r, a, b, n, group))
    return {"name": name, "bytes": a.numel() * a.element_size(), "mean_us": mean * 1e6,
            "p50_us": p50 * 1e6}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--big-rounds", type=int, default=40)
    args = ap.parse_args()
    dist.init_process_group("accdma")
    r = dist.get_rank()
    gl = dist.new_group(backend="gloo")
    res = []
    small = args.rounds
    for name, group in (("accdma", None), ("gloo", gl)):
        n = small if name == "accdma" else max(200, small // 20)
        res.append(measure(r, name, torch.zeros(1, dtype=torch.float64),
                           torch.zeros(1, dtype=torch.float64), n, group, n // 10))
    big = 16 << 20
    pg = dist.distributed_c10d._get_default_group()
    res.append(measure(r, "accdma pg.send/recv", torch.zeros(1, dtype=torch.float64),
                       torch.zeros(1, dtype=torch.float64), small, pg, small // 10, pg_rounds))
    before = pg.copy_counts()
    for name, group in (("accdma", None), ("gloo", gl)):
        res.append(measure(r, name, torch.ones(big // 4), torch.zeros(big // 4),
                           args.big_rounds, group, 3))
    after = pg.copy_counts()
    moved = {k: after[k] - before[k] for k in ("registered_sends", "restaged_sends")}
    # ordinary tensors, two more ways: staged both sides (3 copies), and
    # always from the tensor (1, as the default when its receiver is ready)
    res.append(measure(r, "accdma permute", torch.ones(big // 4), torch.zeros(big // 4),
                       args.big_rounds, None, 3, permute_rounds))
    pg.register_tensors = False
    res.append(measure(r, "accdma permute staged", torch.ones(big // 4), torch.zeros(big // 4),
                       args.big_rounds, None, 3, permute_rounds))
    res.append(measure(r, "accdma staged", torch.ones(big // 4), torch.zeros(big // 4),
                       args.big_rounds, None, 3))
    pg.register_tensors = True
    pg.send_direct = True
    res.append(measure(r, "accdma send_direct", torch.ones(big // 4), torch.zeros(big // 4),
                       args.big_rounds, None, 3))
    pg.send_direct = False
    res.append(measure(r, "accdma device memory", accdma_torch.empty(big // 4),
                       accdma_torch.empty(big // 4), args.big_rounds, None, 3))
    res.append(measure(r, "accdma device memory", accdma_torch.empty(1, dtype=torch.float64),
                       accdma_torch.empty(1, dtype=torch.float64), small, None, small // 10))
    if r == 0:
        print(f"{'backend':24} {'bytes':>9} {'mean[us]':>10} {'p50[us]':>10} {'GB/s':>7}")
        for m in res:
            bw = 2 * m["bytes"] / (m["mean_us"] * 1e-6) / 1e9
            print(f"{m['name']:24} {m['bytes']:9d} {m['mean_us']:10.2f} {m['p50_us']:10.2f} "
                  f"{bw:7.3f}")
        by = {(m["name"], m["bytes"]): m["mean_us"] for m in res}
        print(f"8 B round: gloo / accdma = {by[('gloo', 8)] / by[('accdma', 8)]:.1f}x")
        print(f"16 MiB: accdma / gloo bandwidth = {by[('gloo', big)] / by[('accdma', big)]:.2f}x"
              f" (device memory: {by[('gloo', big)] / by[('accdma device memory', big)]:.2f}x,"
              f" staged: {by[('gloo', big)] / by[('accdma staged', big)]:.2f}x,"
              f" send_direct: {by[('gloo', big)] / by[('accdma send_direct', big)]:.2f}x)")
        print(f"16 MiB accdma sends on rank 0: {moved['registered_sends']} from the tensor, "
              f"{moved['restaged_sends']} staged after the grace period")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
