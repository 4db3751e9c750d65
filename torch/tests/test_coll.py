# SPDX-License-Identifier: MIT
"""Collectives built from accdma ops, checked against gloo's results in the same job."""
import pytest


@pytest.mark.parametrize("n", [3, 4])
def test_collectives_match_gloo(accdma_run, n):
    res = accdma_run(n, "coll", timeout=120)
    assert res.of("done") == {r: "coll" for r in range(n)}
    # 4 sizes x (6 dtypes x 4 ops + check + n roots + 4 others) + 4 more, + 3 outside gloo
    assert res.of("checked") == {r: 4 * (24 + 1 + n + 4) + 4 + 3 for r in range(n)}
    assert res.of("other_reductions")[0] == [n * (n + 1) / 2, n, [True, False, True]]
    evens = list(range(0, n, 2))
    assert res.of("sub") == {r: float(sum(evens)) for r in evens}


def test_ddp_trains_like_gloo(accdma_run):
    res = accdma_run(2, "ddp", timeout=90)
    assert res.of("done") == {0: "ddp", 1: "ddp"}
    assert res.of("ddp_params")[0] == res.of("ddp_params")[1]
