#!/usr/bin/env bash
# The configuration tables stay complete: every ACCDMA_* variable the library's
# sources name is a row of README.md's "Configuration" table, and every
# ACCDMA_TEST_* variable the tests read is in tests/README.md's knobs table.
# (The other environment the library reads, RANK, MASTER_PORT and the launchers'
# job ids, is listed there by hand.)
# Usage: tests/check-docs.sh
# (grep reads a here-string, not a pipe: under pipefail a grep -q that quits
# early fails the writer with SIGPIPE, a false "missing" on a busy machine.)
set -euo pipefail
fail=0
table() { # $1: file, $2: heading: the rows of the first table after the heading
  awk -v h="$2" '$0 ~ "^## " h { on = 1; next } on && /^## / { exit } on && /^\|/' "$1"
}
conf=$(table README.md Configuration)
for v in $(grep -rhoE '"ACCDMA_[A-Z_]+"' driver queue dma fw_stub | tr -d '"' | sort -u); do
  grep -q "\`$v\`" <<< "$conf" || { echo "check-docs: $v is read by the library but not in README.md's Configuration table"; fail=1; }
done
knobs=$(table tests/README.md Knobs)
for v in $(grep -rhoE '"ACCDMA_TEST_[A-Z_]+"' tests | tr -d '"' | sort -u); do
  grep -q "\`$v\`" <<< "$knobs" || { echo "check-docs: $v is read by the tests but not in tests/README.md's Knobs table"; fail=1; }
done
[ $fail = 0 ] && echo "check-docs: ok (every ACCDMA_* variable the library and the tests read is documented)"
exit $fail
