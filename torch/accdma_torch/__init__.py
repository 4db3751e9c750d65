# SPDX-License-Identifier: MIT
"""accdma as a torch.distributed backend.

``import accdma_torch`` registers the backend ``"accdma"``::

    import torch.distributed as dist
    import accdma_torch
    dist.init_process_group("accdma")          # env:// (accdma-run, torchrun)
    dist.init_process_group("accdma", store=store, rank=r, world_size=n)

Every group runs over accdma's shm transport, one device per process.
Tensors are staged through accdma device memory. A send returns once its
tensor is copied there (the tensor may be reused), up to
ACCDMA_TORCH_SEND_BUFFER bytes (default 64 MiB) of sends per group not yet
received; past that bound a send waits for its recv. See torch/README.md.
"""
import atexit
from datetime import timedelta

import torch  # noqa: F401  (the extension needs torch's libraries loaded)
import torch.distributed as dist

from . import _C
from ._C import ProcessGroupAccdma

__all__ = ["ProcessGroupAccdma", "BACKEND", "broken_reason", "empty"]

BACKEND = "accdma"


def _ms(timeout):
    if isinstance(timeout, timedelta):
        return max(1, int(timeout.total_seconds() * 1000))
    return max(1, int(timeout))


def _create(opts, pg_options=None):
    """The creator torch calls for the default group and for every new_group."""
    globals_ = list(opts.global_ranks_in_group or [])
    return _C.create(opts.store, opts.group_rank, opts.group_size, globals_, _ms(opts.timeout))


def broken_reason(group=None):
    """Why the accdma group is broken ('' while it is usable)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    return pg.broken_reason()


def empty(*size, dtype=torch.float32, group=None):
    """A zeroed CPU tensor in accdma device memory: a send or recv of it (or of a
    contiguous part of it) moves with no staging copy. A send of it returns once
    the recv has it (there is no copy to buffer)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupAccdma):
        raise ValueError("accdma_torch.empty: the group is not an accdma group")
    return _C.empty(pg, list(size), dtype)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True)

atexit.register(_C.shutdown)
