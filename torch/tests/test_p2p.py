# SPDX-License-Identifier: MIT
"""Point to point over accdma: data, statuses and order, ranks as processes."""
import pytest

DTYPES = ["torch.float32", "torch.float64", "torch.float16", "torch.bfloat16", "torch.int8",
          "torch.uint8", "torch.int16", "torch.int32", "torch.int64", "torch.bool",
          "torch.complex64", "torch.complex128"]


def test_p2p_two_ranks(accdma_run):
    res = accdma_run(2, "p2p")
    assert res.of("done") == {0: "p2p", 1: "p2p"}
    assert res.of("dtypes")[1] == DTYPES
    assert res.of("zero_then")[1] == [5.0, 6.0]
    assert res.of("tag_order")[1] == [20, 21, 22, 23, 10, 11, 12, 13]
    irecv = res.of("irecv")[1]
    assert irecv == {"before": False, "after": True, "data": [1.0, 2.0, 3.0, 4.0]}
    assert res.of("batch") == {0: 1.0, 1: 0.0}
    assert res.of("gil")[1] == [7.0, 8.0]
    nc = res.of("noncontig")[1]
    assert nc[0] == [-1.0, 0.0, -1.0, 2.0, -1.0, 4.0]
    assert "received 16 bytes" in res.of("short_recv")[1]
    assert res.of("dropped")[1] == [1.0, 2.0, 3.0]
    assert res.of("dropped_done")[1] == [[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]
    assert res.of("devmem")[1] == [999.0, [float(v) for v in range(10, 20)],
                                   [0.0] * 5 + [9.0] * 10 + [0.0] * 15]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_seed_patterns(accdma_run, n):
    res = accdma_run(n, "seed", timeout=150)
    half = n // 2
    assert res.of("done") == {r: "seed" for r in range(n)}
    assert res.of("pipeline") == {r: float(r if r < half else r - half) for r in range(n)}
    assert res.of("pipeline_exec") == {r: float(r if r < half else r - half + 3)
                                       for r in range(n)}
    prev = {r: float((r - 1) % n) for r in range(n)}
    assert res.of("permute_evenodd") == prev
    for size in (4, 16 << 20):
        assert res.of(f"permute_send_first_{size}") == {r: [prev[r], prev[r]] for r in range(n)}


def test_send_bound(accdma_run):
    res = accdma_run(2, "bound", env={"ACCDMA_TORCH_SEND_BUFFER": "2M"})
    assert res.of("bound") == {0: 2 << 20, 1: 2 << 20}
    assert res.of("held")[0] <= 2 << 20
    assert res.of("big_after_go")[1] == 5.0
    assert "sends now wait for their recvs" in res.out


def test_given_store(spawn_store):
    res = spawn_store(2, "p2p")
    assert res.of("done") == {0: "p2p", 1: "p2p"}
    assert res.of("tag_order")[1] == [20, 21, 22, 23, 10, 11, 12, 13]


def test_accdma_groups_beside_gloo_default(accdma_run):
    res = accdma_run(3, "gloo_default")
    assert res.of("done") == {r: "gloo_default" for r in range(3)}
    assert res.of("ring") == {0: 2.0, 1: 0.0, 2: 1.0}
    assert res.of("pair") == {1: [20.0] * 3, 2: [10.0] * 3}


@pytest.mark.parametrize("n", [2, 4])
def test_recv_any_source(accdma_run, n):
    res = accdma_run(n, "any")
    assert res.of("done") == {r: "any" for r in range(n)}
    for tag, got in res.of("any_order")[0].items():
        for s in range(1, n):  # every message once, FIFO per source
            assert [k for src, k in got if src == s] == list(range(4)), (tag, got)
    assert res.of("mixed")[0] == [[1.0, 1.0], [2.0, 2.0], 1]
    assert res.of("sub")[0] == [q for q in range(1, n) if q % 2]


def test_registered_tensors(accdma_run):
    """Ordinary tensors take the single-copy path (accdma_mem_register over shm)."""
    res = accdma_run(2, "register")
    assert res.of("done") == {0: "register", 1: "register"}
    c = res.of("counts")
    # recvs of 1 MiB into ordinary tensors: registered (2 + 1 + 1 large contiguous on rank 1)
    assert c[1]["registered_recvs"] == 3 and c[0]["registered_recvs"] == 2
    # with send_direct, each rank's large send came from the tensor itself
    assert c[0]["registered_sends"] == 1 and c[1]["registered_sends"] == 1
    # the small one, the non-contiguous one and the unregistered sends were staged,
    # and the sends whose receiver was late after their grace period
    assert c[1]["staged_recvs"] == 2 and c[0]["staged_sends"] == 4
    assert c[0]["restaged_sends"] == 1 and c[1]["restaged_sends"] == 1


def test_registered_off(accdma_run):
    res = accdma_run(2, "register", env={"ACCDMA_TORCH_REGISTER": "0"})
    c = res.of("counts")
    assert c[0]["registered_recvs"] == 0 and c[1]["registered_sends"] == 0


def test_engines_bound_rank(accdma_run):
    """accdma-run binds each rank to a CPU: one engine, unless ACCDMA_ENGINES says."""
    res = accdma_run(2, "engines")
    assert res.of("cpus") == {0: 1, 1: 1}
    assert res.of("engines") == {0: 1, 1: 1}
    assert res.of("registered_recvs") == {0: 2, 1: 2}
    res = accdma_run(2, "engines", env={"ACCDMA_ENGINES": "2"})
    assert res.of("engines") == {0: 2, 1: 2}
    assert res.of("done") == {0: "engines", 1: "engines"}


def test_engines_unbound(spawn_store):
    """A process free to use two CPUs or more (as under torchrun) gets two engines."""
    res = spawn_store(2, "engines")
    want = {r: 2 if c >= 2 else 1 for r, c in res.of("cpus").items()}
    assert res.of("engines") == want
    assert res.of("registered_recvs") == {0: 2, 1: 2}
    assert res.of("done") == {0: "engines", 1: "engines"}
