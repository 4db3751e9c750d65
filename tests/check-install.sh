#!/usr/bin/env bash
# Install into a scratch prefix, then build examples/permute8 against the
# installed library the way a user would (pkg-config), run it on the shared
# library, and check that only accdma_* symbols are exported.
set -euo pipefail
b=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s install PREFIX="$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags accdma) -o "$tmp/permute8" examples/permute8.c \
  $(pkg-config --libs accdma) -lnuma -pthread
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/permute8" 4 | tail -1 | grep -q "all devices ok"
soname=$(objdump -p "$tmp/prefix/lib/libaccdma.so" | awk '/SONAME/{print $2}')
[ "$soname" = libaccdma.so.0 ] || { echo "check-install: SONAME is '$soname'"; exit 1; }
bad=$(nm -D --defined-only "$tmp/prefix/lib/libaccdma.so" | awk '$2 ~ /[TDBR]/ && $3 !~ /^accdma_/ && $3 !~ /^ACCDMA_/')
[ -z "$bad" ] || { echo "check-install: exported non-public symbols:"; echo "$bad"; exit 1; }
echo "check-install: ok (pkg-config build, SONAME $soname, only accdma_* exported)"
