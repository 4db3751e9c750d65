#!/usr/bin/env python3
"""Per-round ratios of every configuration of a bench.sh set against one of them.

    python3 tools/accdma-bw/bench-ratio.py OUT BASE [measure:column[:mode] ...]

OUT is a bench.sh output directory (OUT/rN/<config>.<measure>.csv), BASE the
configuration the others are divided by. A ratio is taken inside each round, so
a slow minute hits both sides of it; the line gives the median of the rounds'
ratios, their range and count, and the configuration's own median. The
default columns are the round's mean and p50 (lat8), the 8-byte permute's
chain and fence rates (perm8), the one-pair rate (pair8) and 16 MiB (perm16M).
"""
import csv
import glob
import os
import statistics
import sys

DEFAULT = ["lat8:mean_us", "lat8:p50_us", "perm8:mops:chain", "perm8:mops:fence",
           "pair8:mops", "perm16M:bw_dev_gbs"]


def value(path, column, mode):
    """The column of the CSV's row for mode (the first row if mode is None), or None."""
    try:
        with open(path) as f:
            for row in csv.DictReader(f):
                if mode is None or row.get("mode") == mode:
                    return float(row[column])
    except (OSError, KeyError, ValueError):
        pass
    return None


def rounds_of(out):
    rs = [d for d in glob.glob(os.path.join(out, "r*")) if os.path.basename(d)[1:].isdigit()]
    return sorted(rs, key=lambda d: int(os.path.basename(d)[1:]))


def configs_of(rounds):
    names = set()
    for r in rounds:
        for f in glob.glob(os.path.join(r, "*.csv")):
            names.add(os.path.basename(f).split(".")[0])
    return sorted(names)


def report(out, base, spec):
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise SystemExit("bench-ratio: '%s' is not measure:column[:mode]" % spec)
    measure, column = parts[0], parts[1]
    mode = parts[2] if len(parts) == 3 else None
    rounds = rounds_of(out)
    lines = []
    for c in configs_of(rounds):
        own, ratios = [], []
        for r in rounds:
            a = value(os.path.join(r, "%s.%s.csv" % (c, measure)), column, mode)
            b = value(os.path.join(r, "%s.%s.csv" % (base, measure)), column, mode)
            if a is not None:
                own.append(a)
                if b:
                    ratios.append(a / b)
        if ratios:
            lines.append("%s %s%s %s: median %.4g; / %s per round: median %.3fx (%.2f..%.2f, %d rounds)"
                         % (measure, column, ":" + mode if mode else "", c, statistics.median(own),
                            base, statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
    return lines


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    out, base = argv[1], argv[2]
    if not rounds_of(out):
        raise SystemExit("bench-ratio: no rounds (r1, r2, ...) in %s" % out)
    for spec in argv[3:] or DEFAULT:
        for line in report(out, base, spec):
            print(line)


if __name__ == "__main__":
    main(sys.argv)
