#!/usr/bin/env python3
"""make check: bench-ratio.py on a made-up set whose per-round ratios are known.

Three rounds; in each, config "new" is 0.8 of "old" in round mean and 1.25x in
chain rate, while the rounds themselves differ 2x (a noisy machine): the
median ratio must be exact although the configurations' own medians are not
in that ratio. A round without "old" drops out of the ratio, not of "new"'s
own median.
"""
import os
import subprocess
import sys
import tempfile

HEAD = "pattern,mode,bytes,mops,mean_us\n"


def write(d, name, measure, rows):
    with open(os.path.join(d, "%s.%s.csv" % (name, measure)), "w") as f:
        f.write(HEAD)
        for mode, mops, mean in rows:
            f.write("permute,%s,8,%g,%g\n" % (mode, mops, mean))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as out:
        for k, scale in enumerate((1.0, 2.0, 0.5), start=1):
            d = os.path.join(out, "r%d" % k)
            os.mkdir(d)
            write(d, "new", "m", [("chain", 12.5 * scale, 0.8 / scale), ("fence", 5 * scale, 1)])
            if k != 3:
                write(d, "old", "m", [("chain", 10 * scale, 1.0 / scale), ("fence", 5 * scale, 1)])
        got = subprocess.run([sys.executable, os.path.join(here, "bench-ratio.py"), out, "old",
                              "m:mean_us:chain", "m:mops:chain"],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    want = [
        "m mean_us:chain new: median 0.8; / old per round: median 0.800x (0.80..0.80, 2 rounds)",
        "m mean_us:chain old: median 0.75; / old per round: median 1.000x (1.00..1.00, 2 rounds)",
        "m mops:chain new: median 12.5; / old per round: median 1.250x (1.25..1.25, 2 rounds)",
        "m mops:chain old: median 15; / old per round: median 1.000x (1.00..1.00, 2 rounds)",
    ]
    if got != want:
        print("bench-ratio-test: got\n  %s\nwanted\n  %s" % ("\n  ".join(got), "\n  ".join(want)))
        sys.exit(1)
    print("bench-ratio-test: OK")


if __name__ == "__main__":
    main()
