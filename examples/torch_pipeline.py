# SPDX-License-Identifier: MIT
"""A two-stage pipeline-parallel training step over accdma.

    build/accdma-run -n 2 -- env PYTHONPATH=build/torch /usr/bin/python3 examples/torch_pipeline.py

Rank 0 holds the first half of a small MLP, rank 1 the second half and the
loss. Each step runs four micro-batches: activations go forward 0 -> 1 with
dist.send / dist.recv, the gradients of those activations come back 1 -> 0,
and both ranks step their optimizer. At the end each rank checks its half
against the same model trained in one process, and prints the losses.
"""
import sys

import torch
import torch.distributed as dist

import accdma_torch  # noqa: F401  registers the "accdma" backend

STEPS, MICRO, BATCH, DIM, HID = 5, 4, 8, 16, 32


def model():
    torch.manual_seed(0)
    return (torch.nn.Sequential(torch.nn.Linear(DIM, HID), torch.nn.Tanh()),
            torch.nn.Sequential(torch.nn.Linear(HID, HID), torch.nn.Tanh(), torch.nn.Linear(HID, 1)))


def data(step, m):
    g = torch.Generator().manual_seed(1000 * step + m)
    x = torch.randn(BATCH, DIM, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def reference():
    """The same training in one process: what each stage must end with."""
    s0, s1 = model()
    opt = torch.optim.SGD(list(s0.parameters()) + list(s1.parameters()), lr=0.05)
    for step in range(STEPS):
        opt.zero_grad()
        for m in range(MICRO):
            x, y = data(step, m)
            (torch.nn.functional.mse_loss(s1(s0(x)), y) / MICRO).backward()
        opt.step()
    return s0, s1


def main():
    dist.init_process_group("accdma")
    rank = dist.get_rank()
    assert dist.get_world_size() == 2, "run with two ranks"
    stage = model()[rank]
    opt = torch.optim.SGD(stage.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for m in range(MICRO):
            x, y = data(step, m)
            if rank == 0:
                act = stage(x)
                dist.send(act.detach(), 1, tag=m)          # activations forward
                grad = torch.empty_like(act)
                dist.recv(grad, 1, tag=m)                  # their gradients back
                act.backward(grad)
            else:
                act = torch.empty(BATCH, HID)
                dist.recv(act, 0, tag=m)
                act.requires_grad_()
                loss = torch.nn.functional.mse_loss(stage(act), y) / MICRO
                loss.backward()
                dist.send(act.grad, 0, tag=m)
                total += loss.item()
        opt.step()
        losses.append(total)
    ref = reference()[rank]
    for a, b in zip(stage.parameters(), ref.parameters()):
        assert torch.allclose(a, b, atol=1e-6), "stage weights differ from one-process training"
    # one write per line: the ranks share the launcher's pipe, and print() under
    # PYTHONUNBUFFERED writes a line's pieces one by one, which the other rank's
    # line can land between
    if rank == 1:
        sys.stdout.write("losses: " + " ".join(f"{v:.4f}" for v in losses) + "\n")
    sys.stdout.write(f"rank {rank}: stage weights match one-process training\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
