#!/usr/bin/env bash
# make install, then use what it installed as a user would, then make uninstall:
#  - every file is where it belongs: header, static and shared libraries (SONAME
#    libaccdma.so.0, only accdma_* exported), accdma.pc, the three tools, the
#    section 1 and section 3 manual pages;
#  - examples/permute8 builds against the install through pkg-config and runs on the
#    shared library; the installed tools run (--help) and the pages render with man;
#  - the same with DESTDIR staging (packaging): files land under DESTDIR, accdma.pc
#    names PREFIX;
#  - make uninstall leaves no file behind.
set -euo pipefail
b=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-install: $*"; exit 1; }

expect_files() { # $1: root of the installed tree
  local r=$1 f
  for f in include/accdma.h lib/libaccdma.a lib/libaccdma.so lib/libaccdma.so.0 \
           lib/pkgconfig/accdma.pc bin/queue-tester bin/accdma-bw bin/accdma-run; do
    [ -e "$r/$f" ] || fail "make install did not install $f"
  done
  for f in man/man1/*.1 man/man3/*.3; do
    [ -f "$r/share/$f" ] || fail "make install did not install share/$f"
  done
  for f in bin/queue-tester bin/accdma-bw bin/accdma-run; do
    [ -x "$r/$f" ] || fail "$f is not executable"
  done
}

# 1. PREFIX install, used in place
p=$tmp/prefix
make -s install B="$b" PREFIX="$p" >/dev/null
expect_files "$p"
export PKG_CONFIG_PATH="$p/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags accdma) -o "$tmp/permute8" examples/permute8.c \
  $(pkg-config --libs accdma) -lnuma -pthread
LD_LIBRARY_PATH="$p/lib" "$tmp/permute8" 4 | tail -1 | grep -q "all devices ok" || fail "permute8 against the install failed"
soname=$(objdump -p "$p/lib/libaccdma.so" | awk '/SONAME/{print $2}')
[ "$soname" = libaccdma.so.0 ] || fail "SONAME is '$soname'"
bad=$(nm -D --defined-only "$p/lib/libaccdma.so" | awk '$2 ~ /[TDBR]/ && $3 !~ /^accdma_/ && $3 !~ /^ACCDMA_/')
[ -z "$bad" ] || fail "exported non-public symbols: $bad"
for t in queue-tester accdma-bw accdma-run; do
  "$p/bin/$t" --help | grep -q "usage: $t" || fail "installed $t --help does not print its usage"
done
if command -v man >/dev/null; then
  for pg in "1 accdma-bw" "1 accdma-run" "1 queue-tester" "3 accdma_send" "3 accdma_recv" "3 accdma_wait_any"; do
    # shellcheck disable=SC2086
    MANWIDTH=80 man -M "$p/share/man" $pg 2>/dev/null | grep -q "^NAME" || fail "man $pg does not render from the install"
  done
fi
make -s uninstall B="$b" PREFIX="$p" >/dev/null
left=$(find "$p" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"

# 2. DESTDIR staging
d=$tmp/stage
make -s install B="$b" DESTDIR="$d" PREFIX=/opt/accdma >/dev/null
expect_files "$d/opt/accdma"
grep -qx 'prefix=/opt/accdma' "$d/opt/accdma/lib/pkgconfig/accdma.pc" || fail "accdma.pc does not name PREFIX under DESTDIR"
make -s uninstall B="$b" DESTDIR="$d" PREFIX=/opt/accdma >/dev/null
left=$(find "$d" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall DESTDIR=... left: $left"

echo "check-install: ok (header, libraries, accdma.pc, $(ls man/man1/*.1 | wc -l) tools and their pages," \
  "$(ls man/man3/*.3 | wc -l) section 3 pages; pkg-config build, SONAME $soname, only accdma_* exported;" \
  "DESTDIR; uninstall leaves nothing)"
