#!/usr/bin/env bash
# Prints the path of the kernel image the VM boots, extracting it first if needed.
#   tests/vm/vmlinux.sh [CACHE_DIR]     (default build/vm/kernel)
# Under TCG an uncompressed ELF vmlinux boots through PVH about 4 s faster
# than Debian's xz bzImage (whose decompressor runs emulated). The bzImage
# holds the compressed vmlinux as one stream: find the stream's magic bytes,
# decompress from there, keep the first candidate that yields an ELF file,
# and cache it by kernel version. If none does, print the bzImage itself.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kver=$(bash "$here/kver.sh")
cache=${1:-build/vm/kernel}
bz=/boot/vmlinuz-$kver
out=$cache/vmlinux-$kver
mkdir -p "$cache"
if [ -s "$out" ] && [ "$out" -nt "$bz" ]; then
	echo "$out"
	exit 0
fi

is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d " \n")" = 7f454c46 ]; }

# try FORMAT MAGIC(grep -P bytes) DECOMPRESSOR...: each offset of the magic, in order.
# Trailing bytes after the stream (the rest of the bzImage) make the
# decompressors complain; the output is kept if it is a whole ELF file.
try() {
	local magic=$1 off
	shift
	# shellcheck disable=SC2013 # one offset a line, numbers only
	for off in $(LC_ALL=C grep -obUaP "$magic" "$bz" 2>/dev/null | cut -d: -f1); do
		tail -c +"$((off + 1))" "$bz" | "$@" > "$out.tmp" 2>/dev/null || true
		if [ -s "$out.tmp" ] && is_elf "$out.tmp"; then
			mv "$out.tmp" "$out"
			return 0
		fi
	done
	rm -f "$out.tmp"
	return 1
}

if try '\xfd7zXZ\x00' xz -dc --single-stream ||
   try '\x28\xb5\x2f\xfd' zstd -dcq ||
   try '\x1f\x8b\x08' gzip -dc; then
	echo "$out"
else
	echo "vmlinux.sh: no vmlinux found inside $bz; booting the bzImage (slower under TCG)" >&2
	echo "$bz"
fi
