# SPDX-License-Identifier: MIT
"""examples/torch_pipeline.py, as a user would launch it: both stages end as one-process training."""
import os

from conftest import HERE, PY, _env, _launcher, _run


def test_pipeline_example():
    ex = os.path.join(HERE, "..", "..", "examples", "torch_pipeline.py")
    res = _run([_launcher(), "-n", "2", "--", PY, ex], _env(None), 90)
    assert res.rc == 0, res.out
    assert "rank 0: stage weights match one-process training" in res.out
    assert "rank 1: stage weights match one-process training" in res.out
    losses = [float(v) for v in res.out.split("losses:")[1].split("\n")[0].split()]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_pipeline_example_under_torchrun(tmp_path):
    # Debian 12's torchrun crashes at start under Python 3.11 unless its
    # output is redirected (Std.from_str("0") returns None): the launch that works.
    ex = os.path.join(HERE, "..", "..", "examples", "torch_pipeline.py")
    cmd = [PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--redirects", "1",
           "--tee", "1", "--log_dir", str(tmp_path), "--monitor_interval", "0.2", ex]
    res = _run(cmd, _env(None), 90)
    assert res.rc == 0, res.out
    assert "rank 0: stage weights match one-process training" in res.out
    assert "rank 1: stage weights match one-process training" in res.out
