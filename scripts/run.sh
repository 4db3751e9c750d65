#!/usr/bin/env bash
# The main job: install what is missing, build everything, run queue-tester's
# shipped scenario suite on the default transport (and the permutation example).
# Usage: bash scripts/run.sh [queue-tester options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -s all
echo "== examples/permute8: the permutation that deadlocks blocking runtimes, on 8 devices"
./build/examples/permute8 8
if [ -x build/queue-tester ]; then
  echo "== queue-tester: the shipped scenario suite"
  ./build/queue-tester "$@" tests/scenarios
fi
