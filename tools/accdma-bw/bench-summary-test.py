#!/usr/bin/env python3
"""make check: bench-summary.py on a made-up set whose verdict lines are known.

Two rounds of one configuration beside a made-up peers.txt: chain / fence is
exactly 3 in the first round (a hit: the target is ">= 3x") and 2.5 in the
second; 16 MiB is measured twice, with accdma-bw's default buffers (perm16M)
and with one buffer pair (perm16M1), and each is divided by OpenMPI's figure of
its own round (1.3 exactly in one round is a hit). A row whose data was not
verified must be named on stderr.
"""
import os
import subprocess
import sys
import tempfile

HEAD = "pattern,mode,bytes,mops,bw_dev_gbs,memcpy_gbs,pct_memcpy,verified\n"


def write(d, measure, rows, verified=1):
    with open(os.path.join(d, "shm.%s.csv" % measure), "w") as f:
        f.write(HEAD)
        for mode, mops, bw in rows:
            f.write("permute,%s,8,%g,%g,1,1,%d\n" % (mode, mops, bw, verified))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    # per round: chain and fence rates, OpenMPI's 16 MiB GB/s, accdma's default and one-pair GB/s
    rounds = [(12, 4, 8.0, 8.0, 12.0), (5, 2, 10.0, 8.0, 13.0)]
    with tempfile.TemporaryDirectory() as out:
        for k, (chain, fence, ompi, dflt, one) in enumerate(rounds, start=1):
            d = os.path.join(out, "r%d" % k)
            os.mkdir(d)
            with open(os.path.join(d, "peers.txt"), "w") as f:
                f.write("memcpy   16777216       40   1000.0000 us   16.000 GB/s\n"
                        "openmpi permute           8  20000      0.500 us    0.016 GB/s\n"
                        "openmpi permute    16777216     20   2000.000 us    %.3f GB/s\n" % ompi)
            write(d, "perm8", [("chain", chain, 0.1), ("fence", fence, 0.03)])
            write(d, "perm16M", [("chain", 0.0005, dflt)], verified=0 if k == 2 else 1)
            write(d, "perm16M1", [("chain", 0.0007, one)])
        res = subprocess.run([sys.executable, os.path.join(here, "bench-summary.py"), out],
                             check=True, capture_output=True, text=True)
    got = [l for l in res.stdout.splitlines() if l.startswith("shm ")]
    want = [
        "shm chain/fence 8B permute: median 2.75x (2.50..3.00), >= 3x in 1 of 2 [near - / far 2.75 (2)]",
        "shm 16M / OpenMPI (same round): median 0.90x (0.80..1.00), >= 1.3x in 0 of 2 [near - / far 0.9 (2)]",
        "shm 16M / peers.sh memcpy (same round): median 50% (50..50) [near - / far 50 (2)]",
        "shm 16M1 / OpenMPI (same round): median 1.40x (1.30..1.50), >= 1.3x in 2 of 2 [near - / far 1.4 (2)]",
        "shm 16M1 / peers.sh memcpy (same round): median 78% (75..81) [near - / far 78.1 (2)]",
    ]
    if got != want:
        print("bench-summary-test: got\n  %s\nwanted\n  %s" % ("\n  ".join(got), "\n  ".join(want)))
        sys.exit(1)
    if "NOT VERIFIED:" not in res.stderr or "r2/shm.perm16M.csv" not in res.stderr or "perm16M1" in res.stderr:
        print("bench-summary-test: the unverified row was not named alone on stderr:\n" + res.stderr)
        sys.exit(1)
    print("bench-summary-test: OK")


if __name__ == "__main__":
    main()
