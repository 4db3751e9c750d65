#!/usr/bin/env python3
"""Summarise tools/accdma-bw/bench.sh output: medians over rounds, with min..max.
   python3 tools/accdma-bw/bench-summary.py build/bench"""
import csv, glob, os, re, statistics, sys

out = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
rounds = sorted(glob.glob(os.path.join(out, "r*")), key=lambda p: int(p.rsplit("r", 1)[1]))
vals = {}  # key -> [per round]

def add(key, v):
    vals.setdefault(key, []).append(v)

for rd in rounds:
    for f in sorted(glob.glob(os.path.join(rd, "*.csv"))):
        cfg, meas = os.path.basename(f)[:-4].split(".", 1)
        for row in csv.DictReader(open(f)):
            if row["verified"] != "1":
                print("NOT VERIFIED:", f, file=sys.stderr)
            m = row["mode"]
            if meas.startswith("lat"):  # lat8, lat128, ...: one iteration in flight
                add((cfg, meas + " p50 us", m), float(row["p50_us"]))
                add((cfg, meas + " p99 us", m), float(row["p99_us"]))
                # the mean round, as OpenMPI's loop and ucx_perftest's average report it
                add((cfg, meas + " mean us", m), float(row["bytes"]) / float(row["bw_dev_gbs"]) / 1e3)
            elif meas.startswith("perm16M"):  # perm16M, and variants such as perm16M1 (one buffer pair)
                tag = "16M" + meas[len("perm16M"):]
                add((cfg, tag + " GB/s/dev", m), float(row["bw_dev_gbs"]))
                add((cfg, tag + " memcpy ref GB/s", m), float(row["memcpy_gbs"]))
                add((cfg, tag + " % memcpy", m), float(row["pct_memcpy"]))
            else:
                add((cfg, meas + " Mops", m), float(row["mops"]))
    pt = open(os.path.join(rd, "peers.txt")).read()
    for mm in re.finditer(r"^openmpi (permute|pipeline)\s+(\d+)\s+\d+\s+([\d.]+) us\s+([\d.]+) GB/s", pt, re.M):
        if mm.group(2) == "8":
            add(("peers", "openmpi %s 8 us" % mm.group(1), ""), float(mm.group(3)))
        if mm.group(2) == "16777216":
            add(("peers", "openmpi %s 16M GB/s" % mm.group(1), ""), float(mm.group(4)))
    mm = re.search(r"^memcpy\s+16777216\s+\d+\s+[\d.]+ us\s+([\d.]+) GB/s", pt, re.M)
    if mm: add(("peers", "memcpy 16M GB/s", ""), float(mm.group(1)))
    mm = re.search(r"^ucx tag_bw \d+ ([\d.]+) MB/s", pt, re.M)
    if mm: add(("peers", "ucx tag_bw 4M GB/s", ""), float(mm.group(1)) / 1000)
    mm = re.search(r"^ucx tag_lat 8 ([\d.]+) us", pt, re.M)
    if mm: add(("peers", "ucx tag_lat 8 us one way", ""), float(mm.group(1)))
# regime of each round (docs/perf/2026-12-01.md, "Set-up, and the noise"): OpenMPI's 8-byte round of the same round
# is 0.13-0.16 us when the two vCPUs sit on nearby cores and ~0.40 us when they do not
near = [v < 0.25 for v in vals.get(("peers", "openmpi permute 8 us", ""), [])]

def fmt(v):
    return "%.3g" % v if v < 100 else "%.0f" % v

def med(v, sel=None):
    v = [x for i, x in enumerate(v) if sel is None or (i < len(near) and near[i] == sel)]
    return (fmt(statistics.median(v)) + " (%d)" % len(v)) if v else "-"

print("| config | measure | mode | median (all) | min..max | near rounds | far rounds | per round |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(vals, key=lambda k: (k[0] != "peers", k)):
    v = vals[k]
    print("| %s | %s | %s | **%s** | %s..%s | %s | %s | %s |" % (k[0], k[1], k[2], fmt(statistics.median(v)),
          fmt(min(v)), fmt(max(v)), med(v, True), med(v, False), " ".join(fmt(x) for x in v)))
print("\nrounds: %d, near (OpenMPI 8 B round < 0.25 us): %s" % (len(rounds), " ".join("r%d" % (i + 1) for i, x in enumerate(near) if x)))
# ratios per round, with the medians over near and over far rounds
def rat(r, target=None):
    """The median of per-round ratios r, their range, near/far medians; with a target, how many
    rounds reach it (a target is met by the median, and the count says by how much)."""
    hit = "" if target is None else ", >= %gx in %d of %d" % (target, sum(x >= target for x in r), len(r))
    return "median %.2fx (%.2f..%.2f)%s [near %s / far %s]" % (statistics.median(r), min(r), max(r), hit,
            med(r, True), med(r, False))

print()
for cfg in sorted({k[0] for k in vals if k[0] != "peers"}):
    # OpenMPI's figure is the mean of its loop, UCX's (ucx_perftest "average") too: the mean
    # is the like-for-like comparison, the p50 is given beside it
    for stat in ("mean", "p50"):
        l = vals.get((cfg, "lat8 %s us" % stat, "chain"), [])
        for peer, key in (("OpenMPI round", "openmpi permute 8 us"), ("UCX tag_lat", "ucx tag_lat 8 us one way")):
            o = vals.get(("peers", key, ""), [])
            if l and o:
                r = [a / x for a, x in zip(l, o)]
                print("%s 8B round %s / %s (same round): %s" % (cfg, stat, peer, rat(r)))
    c = vals.get((cfg, "perm8 Mops", "chain"), []); f = vals.get((cfg, "perm8 Mops", "fence"), [])
    if c and f:
        r = [a / b for a, b in zip(c, f)]
        print("%s chain/fence 8B permute: %s" % (cfg, rat(r, 3)))
    s = vals.get((cfg, "perm8sync Mops", "sync"), [])
    if c and s:
        r = [a / b for a, b in zip(c, s)]
        print("%s chain/sync 8B permute: %s" % (cfg, rat(r)))
    for tag in sorted({k[1][:-len(" GB/s/dev")] for k in vals if k[0] == cfg and k[1].startswith("16M")
                       and k[1].endswith(" GB/s/dev")}):
        b = vals.get((cfg, tag + " GB/s/dev", "chain"), []); o = vals.get(("peers", "openmpi permute 16M GB/s", ""), [])
        if b and o:
            r = [a / x for a, x in zip(b, o)]
            print("%s %s / OpenMPI (same round): %s" % (cfg, tag, rat(r, 1.3)))
            m = vals.get(("peers", "memcpy 16M GB/s", ""), [])
            r = [a / x * 100 for a, x in zip(b, m)]
            if r:
                print("%s %s / peers.sh memcpy (same round): median %.0f%% (%.0f..%.0f) [near %s / far %s]" % (cfg, tag, statistics.median(r), min(r), max(r), med(r, True), med(r, False)))
