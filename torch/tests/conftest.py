# SPDX-License-Identifier: MIT
"""Launch helpers: every test runs its ranks as processes (accdma-run, or a
plain spawn with a given store) and has its own time limit."""
import json
import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
PY = "/usr/bin/python3"


def _launcher():
    run = os.environ.get("ACCDMA_RUN")
    if not run:
        run = os.path.join(HERE, "..", "..", "build", "accdma-run")
    return os.path.abspath(run)


class Result:
    """The ranks' reports: report[rank][key] = value, parsed from 'R<rank> key json' lines."""

    def __init__(self, proc, out):
        self.rc = proc.returncode
        self.out = out
        self.report = {}
        for line in out.splitlines():
            if not line.startswith("@R"):
                continue
            head, key, val = line.split(" ", 2)
            self.report.setdefault(int(head[2:]), {})[key] = json.loads(val)

    def of(self, key):
        """{rank: value} of one key."""
        return {r: d[key] for r, d in self.report.items() if key in d}


def _run(cmd, env, timeout):
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(cmd)}\n{out}")
    return Result(proc, out)


def _env(extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), HERE) if p)
    env.pop("ACCDMA_TRANSPORT", None)
    env.update(extra or {})
    return env


@pytest.fixture
def accdma_run():
    """accdma_run(n, scenario, *args, timeout=, env=) -> Result; ranks under accdma-run."""

    def go(n, scenario, *args, timeout=90, env=None, expect_rc=0):
        cmd = [_launcher(), "-n", str(n), "--", PY, WORKER, scenario, *map(str, args)]
        res = _run(cmd, _env(env), timeout)
        if expect_rc is not None:
            assert res.rc == expect_rc, f"exit {res.rc}\n{res.out}"
        return res

    return go


@pytest.fixture
def spawn_store():
    """spawn_store(n, scenario, *args) -> Result; ranks as plain processes, a given store."""

    def go(n, scenario, *args, timeout=90, env=None):
        procs = []
        store = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"accdma-torch-store-{os.getpid()}")
        if os.path.exists(store):
            os.unlink(store)
        base = _env(env)
        for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            base.pop(k, None)
        outs = []
        try:
            for r in range(n):
                e = dict(base, STORE_RANK=str(r), STORE_SIZE=str(n), STORE_FILE=store)
                procs.append(subprocess.Popen([PY, WORKER, scenario, *map(str, args)], env=e,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              text=True, start_new_session=True))
            rc = 0
            for p in procs:
                try:
                    out, _ = p.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    for q in procs:
                        try:  # a rank that already ended has no group left to kill
                            os.killpg(q.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    outs.append(p.communicate()[0])
                    said = "\n".join(f"rank {i}: {o}" for i, o in enumerate(outs))
                    pytest.fail(f"timed out after {timeout} s: {scenario}; the ranks said:\n{said}")
                outs.append(out)
                rc = rc or p.returncode
        finally:
            if os.path.exists(store):
                os.unlink(store)

        class P:
            returncode = rc

        res = Result(P, "\n".join(outs))
        assert res.rc == 0, "\n".join(outs)
        return res

    return go
