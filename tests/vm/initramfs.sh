#!/usr/bin/env bash
# Builds the guest's initramfs (an uncompressed cpio: the kernel unpacks it
# faster under TCG than it would decompress one).
#   tests/vm/initramfs.sh OUT.cpio GUEST_SCRIPT
# The guest gets: busybox, iproute2's ip, tc and rdma (busybox's ip cannot do
# policy routing or rdma links), the verbs tools and perftest, libibverbs with
# its rxe provider, every library `ldd` lists for each binary, the modules
# soft-RoCE needs (with their dependencies from modules.dep, decompressed),
# tests/vm/guest-lib.sh and tests/vm/guest-init.sh as /init, which runs
# GUEST_SCRIPT (shipped as /vmtest/guest.sh).
# What a suite adds (space-separated; the suite's maker names them):
#   EXTRA_BINS   executables, shipped as /vmtest/bin/<name> with their libraries
#   EXTRA_FILES  files, SRC or SRC:DEST (DEST absolute in the guest; default /vmtest/files/<name>)
#   EXTRA_KO     kernel modules: a .ko path (shipped in /lib/modules/<ver>/extra/)
#                or a module name from /lib/modules/<ver>; dependencies come along
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: initramfs.sh OUT.cpio GUEST_SCRIPT}
guest=${2:?usage: initramfs.sh OUT.cpio GUEST_SCRIPT}
kver=$(bash "$here/kver.sh")
moddir=/lib/modules/$kver

root=$(mktemp -d "${TMPDIR:-/tmp}/vm-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

die() { echo "initramfs.sh: $*" >&2; exit 1; }

# Copies a host file to the same path in the guest, following symlinks.
ship() {
	[ -e "$1" ] || die "missing $1 (VM=1 bash scripts/install-deps.sh)"
	mkdir -p "$root$(dirname "$1")"
	cp -L "$1" "$root$1"
}

# Ships an ELF file's libraries (ldd lists them with their paths; the loader
# on a line of its own). Scripts and static binaries have none.
ship_libs() {
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
		[ -e "$root$lib" ] || ship "$lib"
	done
}

mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,vmtest/bin,vmtest/files}

# busybox and its applets; the full tools below win over its applets.
ship /bin/busybox
for a in $(/bin/busybox --list | grep -vx busybox); do
	ln -sf /bin/busybox "$root/bin/$a"
done

# Full tools: iproute2, the verbs utilities, perftest.
tools="ip tc rdma ibv_devinfo ibv_devices ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw
       ib_send_lat ib_write_lat"
for t in $tools; do
	p=$(command -v "$t") || die "no $t on the host (VM=1 bash scripts/install-deps.sh)"
	ship "$p"
	ship_libs "$p"
	ln -sf "$p" "$root/bin/$t"
done

# libibverbs loads the provider named in /etc/libibverbs.d/*.driver from its
# own directory: ship rxe's (libibverbs itself comes with the tools).
ship /etc/libibverbs.d/rxe.driver
for so in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so; do
	ship "$so"
	ship_libs "$so"
done

# The suite's own executables and files.
for b in ${EXTRA_BINS:-}; do
	[ -x "$b" ] || die "EXTRA_BINS: $b is not an executable (built?)"
	cp -L "$b" "$root/vmtest/bin/$(basename "$b")"
	ship_libs "$b"
done
for f in ${EXTRA_FILES:-}; do
	src=${f%%:*}
	dst=/vmtest/files/$(basename "$src")
	[ "$src" = "$f" ] || dst=${f#*:}
	[ -e "$src" ] || die "EXTRA_FILES: no $src"
	mkdir -p "$root$(dirname "$dst")"
	cp -rL "$src" "$root$dst"
done

# Modules: soft-RoCE's (rdma_rxe needs a crc32 provider that modules.dep does
# not name: crc32_generic), veth for the two "hosts", rdma_ucm for rdma_cm,
# sch_netem to silence a link (test_verbs test_host_silent), macvlan for a
# third port of its own (test_verbs test_port_relayed),
# and the suite's. Each with its dependencies, decompressed, listed in a
# modules.dep of what is shipped (busybox's modprobe reads it; guest-lib.sh
# falls back to insmod in its order).
declare -A seen=()
depfile=$root/modules.dep.tmp
: > "$depfile"
unz() { local r=${1%.xz}; r=${r%.zst}; echo "${r%.gz}"; }
relpath_of() { # NAME -> its path in modules.dep (names use - and _ alike)
	local n=${1//[-_]/[-_]}
	grep -m1 -E "(^|/)$n\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | cut -d: -f1
}
add_mod() { # RELPATH (as in modules.dep), dependencies first
	local rel=$1 d deps="" dst
	[ -n "${seen[$rel]:-}" ] && return 0
	seen[$rel]=1
	# shellcheck disable=SC2013 # one line; its words are the dependencies
	for d in $(grep -m1 "^$rel:" "$moddir/modules.dep" | cut -d: -f2); do
		add_mod "$d"
		deps="$deps $(unz "$d")"
	done
	dst=$root$moddir/$(unz "$rel")
	mkdir -p "$(dirname "$dst")"
	case $rel in
	*.xz) xz -dc "$moddir/$rel" > "$dst" ;;
	*.zst) zstd -dcq "$moddir/$rel" > "$dst" ;;
	*.gz) gzip -dc "$moddir/$rel" > "$dst" ;;
	*) cp "$moddir/$rel" "$dst" ;;
	esac
	echo "$(unz "$rel"):$deps" >> "$depfile"
}
add_name() { # MODULE-NAME WHO-ASKED
	local rel
	rel=$(relpath_of "$1")
	[ -n "$rel" ] || die "$2: no module $1 in $moddir (built in? then drop it)"
	add_mod "$rel"
}
for m in crc32_generic veth rdma_rxe rdma_ucm sch_netem macvlan; do
	add_name "$m" initramfs.sh
done
for k in ${EXTRA_KO:-}; do
	case $k in
	*.ko)
		modinfo "$k" > /dev/null 2>&1 || die "EXTRA_KO: $k is not a kernel module (built?)"
		deps=""
		for d in $(modinfo -F depends "$k" | tr , ' '); do
			add_name "$d" "EXTRA_KO $k"
			deps="$deps $(unz "$(relpath_of "$d")")"
		done
		mkdir -p "$root$moddir/extra"
		cp "$k" "$root$moddir/extra/"
		echo "extra/$(basename "$k"):$deps" >> "$depfile"
		;;
	*) add_name "$k" EXTRA_KO ;;
	esac
done
mv "$depfile" "$root$moddir/modules.dep"
echo "$kver" > "$root/vmtest/kver"

# The guest side: /init, the library, the suite's script.
cp "$here/guest-init.sh" "$root/init"
cp "$here/guest-lib.sh" "$root/vmtest/guest-lib.sh"
cp "$guest" "$root/vmtest/guest.sh"
chmod 755 "$root/init" "$root/vmtest/guest.sh"

mkdir -p "$(dirname "$out")"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$out.tmp"
mv "$out.tmp" "$out"
echo "initramfs.sh: $out ($(du -h "$out" | cut -f1), kernel $kver, modules:" \
     "$(cd "$root$moddir" && find . -name '*.ko' -printf '%f ' | sed 's/\.ko//g'))" >&2
