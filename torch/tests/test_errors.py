# SPDX-License-Identifier: MIT
"""Errors, not hangs: a timeout names the stuck op and breaks the group; a dead peer is PEER_LOST."""


def test_timeout_names_op_and_breaks_group(accdma_run):
    res = accdma_run(2, "timeout", timeout=60)
    assert res.of("done") == {0: "timeout", 1: "timeout"}
    msg = res.of("timeout")[0]
    assert "recv from rank 1 (tag 7, 32 bytes)" in msg and "timed out after 500 ms" in msg
    assert "broken" in res.of("later")[0]
    assert "recv from rank 1 (tag 7" in res.of("reason")[0]
    assert res.of("sub")[0] == [4.0, 5.0]   # another group of the same world still works


def test_dead_peer_is_peer_lost(accdma_run):
    res = accdma_run(2, "peer_lost", timeout=60)
    assert res.of("done") == {0: "peer_lost"}
    assert "PEER_LOST" in res.of("lost")[0]


def test_timeout_names_cycle(accdma_run):
    res = accdma_run(3, "cycle", timeout=60)
    assert res.of("done") == {r: "cycle" for r in range(3)}
    # each rank waits on the one before it: 0 -> 2 -> 1 -> 0, seen from each
    assert res.of("cycle") == {0: "0 -> 2 -> 1 -> 0", 1: "1 -> 0 -> 2 -> 1",
                               2: "2 -> 1 -> 0 -> 2"}
