#!/usr/bin/env python3
"""make check: trace-summary.py on two made-up traces whose steps are known.

Each process: a 100 ns round, its stamp 30 ns after its post, the peer's message
landing 70 ns after it (so 60 ns of its own steps from a landing to its next
stamp: the hand-off is 40 ns). The second process's TSC is offset and runs at
a different rate from the first's: neither may show in the result.
"""
import os
import re
import subprocess
import sys
import tempfile

STEPS = [(0, 0), (1, 30), (2, 40), (3, 70), (4, 80), (5, 85)]  # (point, ns after the post)


def write(path, rate, offset, rounds=2000):
    with open(path, "w") as f:
        f.write("tsc_per_ns %.6f\n" % rate)
        for k in range(rounds):
            for p, t in STEPS:
                f.write("%d %d\n" % (p, offset + int((100 * k + t) * rate)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "t.1"), 2.0, 0)
        write(os.path.join(d, "t.2"), 3.0, 123457)
        out = subprocess.run([sys.executable, os.path.join(here, "trace-summary.py"), os.path.join(d, "t")],
                             capture_output=True, text=True, check=True).stdout
    want = {"post -> stamp": 30.0, "stamp -> post returns": 10.0, "post returns -> landed": 30.0,
            "landed -> recv done": 10.0, "recv done -> wait returns": 5.0,
            "wait returns -> next post": 15.0, "round": 100.0}
    for name, ns in want.items():
        got = [float(m) for m in re.findall(r"^  %s +([0-9.]+)" % re.escape(name), out, re.M)]
        if got != [ns, ns]:
            sys.exit("trace-summary-test: %s: want %.1f in both processes, got %s\n%s" % (name, ns, got, out))
    m = re.search(r"hand-off .*: ([0-9.]+) ns of a ([0-9.]+) ns round", out)
    if not m or (float(m.group(1)), float(m.group(2))) != (40.0, 100.0):
        sys.exit("trace-summary-test: want a 40.0 ns hand-off of a 100.0 ns round\n" + out)
    print("trace-summary: OK")


if __name__ == "__main__":
    main()
