#!/usr/bin/env bash
# The tests: install what is missing, build, run every test (make check).
# Usage: bash scripts/test.sh [SAN=address|SAN=thread]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -s check "$@"
