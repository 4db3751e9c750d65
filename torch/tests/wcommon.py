# SPDX-License-Identifier: MIT
"""What every scenario of worker.py shares: starting a rank and reporting."""
import json
import os
import sys
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
