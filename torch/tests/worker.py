# SPDX-License-Identifier: MIT
"""One rank of a test: python3 worker.py SCENARIO [ARGS]. Each scenario checks
its data as a user's program would (assert), and reports what it received as
'@R<rank> key json' lines, which the pytest side checks again. The scenarios
are sc_<name> functions of the w_*.py files, by theme."""
import sys

import torch.distributed as dist

import w_coll
import w_errors
import w_p2p
import w_patterns
import w_pend

THEMES = (w_p2p, w_patterns, w_pend, w_errors, w_coll)


def main():
    name = "sc_" + sys.argv[1]
    fn = next(getattr(m, name) for m in THEMES if hasattr(m, name))
    fn(*sys.argv[2:])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
