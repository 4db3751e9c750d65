#!/usr/bin/env python3
"""Fail if the files of a part call each other in a cycle (make check, via
check-seams.sh): a file's calls go down the part's layers, never back up.
Usage: check-calls.py DIR PREFIX (e.g. fw_stub fw_)."""
import glob
import os
import re
import sys

part, prefix = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(part, '*.c')))
src = {f: open(f).read() for f in files}
defs = {}
for f, s in src.items():
    for m in re.finditer(r'^(?!static)[a-z][\w \*]*?\b(' + prefix + r'\w+)\(', s, re.M):
        defs[m.group(1)] = f
calls = {f: {defs[n] for n in defs if defs[n] != f and re.search(r'\b' + n + r'\(', s)}
         for f, s in src.items()}
cycle = None


def visit(f, path):
    global cycle
    for g in sorted(calls[f]):
        if cycle:
            return
        if g in path:
            cycle = path[path.index(g):] + [g]
            return
        visit(g, path + [g])


for f in files:
    visit(f, [f])
    if cycle:
        print('check-calls: %s calls itself round: %s' % (part, ' -> '.join(cycle)))
        sys.exit(1)
print('check-calls: %s: no call cycle among its %d files' % (part, len(files)))
