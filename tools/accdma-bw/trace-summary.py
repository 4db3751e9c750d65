#!/usr/bin/env python3
"""Where an 8-byte round's time goes, from an ACCDMA_TRACE build's files.

    python3 tools/accdma-bw/trace-summary.py PREFIX     (reads PREFIX.<pid>, two processes)

Each file: "tsc_per_ns R", then "point tsc" lines (queue/trace.h: 0 post, 1 stamp,
2 posted, 3 landed, 4 recv done, 5 waited). A round runs from one accdma_post() to
the next; its steps are the first of each point after its post. The hand-off is
what is left of the round once each process's own steps from a landing to its next
stamp are taken out (the round is a cycle: my stamp, your landing, your next stamp,
my landing), so no TSC of one vCPU is compared with the other's. The TSC
here ticks in ~10 ns steps: the trimmed mean (1st..99th percentile) resolves
below that, the median does not.
"""
import glob
import statistics
import sys

POST, STAMP, POSTED, LANDED, RECV_DONE, WAITED = range(6)
STEPS = [
    ("post -> stamp", POST, STAMP),
    ("stamp -> post returns", STAMP, POSTED),
    ("post returns -> landed", POSTED, LANDED),
    ("landed -> recv done", LANDED, RECV_DONE),
    ("recv done -> wait returns", RECV_DONE, WAITED),
]


def load(path):
    with open(path) as f:
        rate = float(f.readline().split()[1])
        ev = [tuple(map(int, line.split())) for line in f]
    return rate, ev


def trimmed(xs):
    xs = sorted(xs)
    lo, hi = len(xs) // 100, len(xs) - len(xs) // 100
    xs = xs[lo:hi] or xs
    return sum(xs) / len(xs)


def rounds(ev):
    """Per round (post to next post): the first tsc of each point, or None."""
    out, cur = [], None
    for p, t in ev:
        if p == POST:
            if cur is not None:
                cur["next"] = t
                out.append(cur)
            cur = {POST: t}
        elif cur is not None and p not in cur:
            cur[p] = t
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    files = sorted(glob.glob(sys.argv[1] + ".*"))
    if len(files) != 2:
        sys.exit("trace-summary: want the files of 2 processes, found %d (%s.*)" % (len(files), sys.argv[1]))
    procs = [load(f) for f in files]
    skip = 0.1  # the first tenth: warm-up
    print("%-28s %8s %8s   (ns; trimmed mean, median; per process)" % ("step", "mean", "median"))
    totals, crit = [], []
    for i, (rate, ev) in enumerate(procs):
        rs = rounds(ev)
        rs = rs[int(len(rs) * skip):]
        full = [r for r in rs if all(p in r for p in range(6)) and r[POST] < r[STAMP] < r[POSTED] < r[LANDED]
                < r[RECV_DONE] < r[WAITED] < r["next"]]
        print("process %d: %d rounds, %d with every step in order (send read in the post)" % (i, len(rs), len(full)))
        if not full:
            continue
        steps = STEPS + [("wait returns -> next post", WAITED, "next"), ("round", POST, "next")]
        for name, a, b in steps:
            xs = [(r[b] - r[a]) / rate for r in full]
            print("  %-26s %8.1f %8.1f" % (name, trimmed(xs), statistics.median(xs)))
        totals.append(trimmed([(r["next"] - r[POST]) / rate for r in full]))
        # the next round's stamp: this round's landing is what it waited for
        nxt = [(b[STAMP] - a[LANDED]) / rate for a, b in zip(full, full[1:]) if a["next"] == b[POST]]
        crit.append(trimmed(nxt))
    if len(totals) == 2:
        own = statistics.mean(crit)
        print("own steps from landed to the next stamp: %s ns" % " and ".join("%.1f" % c for c in crit))
        print("hand-off (round - own steps, mean of the two processes): %.1f ns of a %.1f ns round"
              % (statistics.mean(totals) - own, statistics.mean(totals)))

if __name__ == "__main__":
    main()
