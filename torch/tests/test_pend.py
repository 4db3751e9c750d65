# SPDX-License-Identifier: MIT
"""Sends of ordinary tensors: one copy when the receiver is ready, staged
after a grace period when it is not, in order per (dst, tag) either way."""
import pytest


def test_receiver_ready_first(accdma_run):
    res = accdma_run(2, "pend_ready")
    assert res.of("done") == {0: "pend_ready", 1: "pend_ready"}
    assert res.of("order")[1] == [0, 1, 2, 3, 4]
    c = res.of("counts")[0]
    # every send from its tensor: none staged, none waited out its grace period
    assert c["registered_sends"] == 6
    assert c["staged_sends"] == 0 and c["restaged_sends"] == 0


def test_receiver_late(accdma_run):
    res = accdma_run(2, "pend_late")
    assert res.of("done") == {0: "pend_late", 1: "pend_late"}
    assert res.of("order")[1] == [1, 2, 3]
    c = res.of("counts")[0]
    assert c["restaged_sends"] == 3 and c["staged_sends"] == 3
    assert c["registered_sends"] == 0
    assert res.of("counts")[1]["registered_recvs"] == 3


def test_isends_fifo_receiver_late(accdma_run):
    res = accdma_run(2, "pend_fifo")
    assert res.of("done") == {0: "pend_fifo", 1: "pend_fifo"}
    # message i was sent on tags [5, 6, 5, 5, 6][i]
    assert res.of("order")[1] == {"6": [1, 4], "5": [0, 2, 3]}
    c = res.of("counts")[0]
    assert c["restaged_sends"] == 5 and c["registered_sends"] == 0


@pytest.mark.parametrize("n", [2, 4])
def test_permutation_blocking_sends(accdma_run, n):
    res = accdma_run(n, "pend_permute", 3, 16, timeout=150)
    assert res.of("done") == {r: "pend_permute" for r in range(n)}
    assert res.of("got") == {r: [100 * ((r - 1) % n) + k for k in range(3)] for r in range(n)}
    for r, c in res.of("counts").items():
        # each send went one way or the other, and each recv into the tensor
        assert c["registered_sends"] + c["restaged_sends"] == 3, (r, c)
        assert c["registered_recvs"] == 3, (r, c)


def test_any_source_receiver(accdma_run):
    res = accdma_run(2, "pend_any", 300)
    assert res.of("done") == {0: "pend_any", 1: "pend_any"}
    assert res.of("ordered")[1] is True
    c = res.of("counts")[0]
    # no notes: all staged; past 256 waiting note recvs the channel stops posting them
    assert c["staged_sends"] == 300 and c["registered_sends"] == 0
    assert c["restaged_sends"] == 256
