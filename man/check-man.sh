#!/usr/bin/env bash
# The manual pages are true to what they document:
#  - section 3: man/gen-man3.py --check (every public function of include/accdma.h has a page,
#    each synopsis is the header's prototype, each description its kernel-doc);
#  - section 1: every option a tool's --help prints appears in its page;
#  - every page formats without a groff warning.
# Usage: man/check-man.sh BUILD_DIR
set -euo pipefail
b=${1:-build}
fail=0
python3 man/gen-man3.py --check || fail=1
for tool in queue-tester accdma-bw accdma-run; do
  page=man/man1/$tool.1
  [ -f "$page" ] || { echo "check-man: $page is missing"; fail=1; continue; }
  help=$("$b/$tool" --help 2>&1 || true)
  for opt in $(printf '%s\n' "$help" | grep -oE -- '(^|[ ,|\[])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' | sort -u); do
    # the page spells an option with escaped hyphens: --max-procs is \-\-max\-procs
    esc=$(printf '%s' "$opt" | sed 's/-/\\-/g')
    grep -qF -- "$esc" "$page" || { echo "check-man: $page does not describe $opt ($tool --help prints it)"; fail=1; }
  done
done
# .so pages are resolved relative to the manual's root
(cd man && for p in man1/*.1 man3/*.3; do
  out=$(groff -man -Tutf8 -ww -z "$p" 2>&1) || true
  [ -z "$out" ] || { echo "check-man: $p: $out"; exit 1; }
done) || fail=1
[ $fail = 0 ] && echo "check-man: ok ($(ls man/man1/*.1 | wc -l) section 1 pages, $(ls man/man3/*.3 | wc -l) section 3 pages)"
exit $fail
