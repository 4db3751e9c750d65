#!/usr/bin/env python3
"""Summarise levers.sh: per state (near/far) and measure, each variant's median
(min..max) and its ratio to the default ("main") taken per round, then the median.
Values: GB/s per device from 1 MiB up, the mean round (us) in latency runs, else Mops.
usage: levers-summary.py build/levers/res.csv"""
import collections
import csv
import statistics
import sys

# columns: round, state, variant, launcher, then accdma-bw's CSV
# (pattern, mode, bytes, ..., bw_dev_gbs at 13, mops 17, pct_memcpy 19, p50_us 20, mean_us 22)
data = collections.defaultdict(dict)
for x in csv.reader(open(sys.argv[1] if len(sys.argv) > 1 else "build/levers/res.csv")):
    lat = x[20] != ""
    size = int(x[6])
    if lat:
        value, unit = float(x[22]), "us"
    elif size >= 1 << 20:
        value, unit = float(x[13]), "GB/s/dev"
    else:
        value, unit = float(x[17]), "Mops"
    pct = float(x[19]) if x[19] else None
    measure = (x[3], x[4], x[5], size, "round" if lat else "")
    data[(x[1], measure)][(x[0], x[2])] = (value, pct, unit)

for (state, m), runs in sorted(data.items()):
    rounds = sorted({r for r, _ in runs}, key=int)
    line = f"{state:4} {m[0]:5} {m[1]:7} {m[2]:5} {m[3]:>8} {m[4]:5} rounds={len(rounds):2}"
    for tag in sorted({t for _, t in runs}):
        have = [r for r in rounds if (r, tag) in runs]
        vals = [runs[(r, tag)][0] for r in have]
        unit = runs[(have[0], tag)][2]
        line += f" | {tag}: {statistics.median(vals):.3f} {unit} ({min(vals):.3f}..{max(vals):.3f})"
        if tag != "main":
            ratio = [runs[(r, tag)][0] / runs[(r, "main")][0] for r in have if (r, "main") in runs]
            if ratio:
                line += f" x{statistics.median(ratio):.2f}"
        pct = [runs[(r, tag)][1] for r in have if runs[(r, tag)][1] is not None]
        if pct:
            line += f" {statistics.median(pct):.0f}% of memcpy"
    print(line)
