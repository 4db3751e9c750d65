#!/usr/bin/env bash
# kmod-boot.sh - INTERIM, until tests/vm/'s harness takes guest-kmod.sh:
# boot Debian's kernel under qemu (TCG, no KVM) with an initramfs holding
# busybox-static, accdma.ko and guest-kmod.sh, and print the guest's console.
# Exits 0 if the guest printed "VMTEST DONE" and "0 failed".
# Needs: linux-image-amd64, busybox-static, qemu-system-x86, cpio; `make kmod`
# (and `make kmod-tests` for the ioctl checks).
# Usage: tests/vm/kmod-boot.sh [build/kmod/accdma.ko] [devices]
set -euo pipefail
cd "$(dirname "$0")/../.."
ko=${1:-build/kmod/accdma.ko}
ndev=${2:-4}
kver=$(modinfo -F vermagic "$ko" | cut -d' ' -f1)
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || { echo "kmod-boot: no $kernel (apt-get install linux-image-amd64)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root/bin" "$tmp/root/proc" "$tmp/root/sys" "$tmp/root/dev"
cp /bin/busybox "$tmp/root/bin/busybox"
cp "$ko" "$tmp/root/accdma.ko"
cp tests/vm/guest-kmod.sh "$tmp/root/guest-kmod.sh"
ioctl=$(dirname "$ko")/kmod-ioctl # make kmod-tests: /dev/accdma's ioctl checks
[ -x "$ioctl" ] && cp "$ioctl" "$tmp/root/kmod-ioctl"
cat > "$tmp/root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "kmod-boot: guest up, kernel \$(uname -r)"
sh /guest-kmod.sh /accdma.ko $ndev /kmod-ioctl
poweroff -f
INIT
chmod +x "$tmp/root/init"
(cd "$tmp/root" && find . | cpio -o -H newc --quiet | gzip -1) > "$tmp/initrd.gz"
timeout "${KMOD_BOOT_TIMEOUT:-600}" qemu-system-x86_64 -cpu max -smp 2 -m 1024 -nographic -no-reboot \
	-kernel "$kernel" -initrd "$tmp/initrd.gz" \
	-append 'console=ttyS0 panic=-1 panic_on_warn=1 softlockup_panic=1 hung_task_panic=1 slub_debug=FZPU page_poison=1 quiet loglevel=4' \
	| tee "$tmp/console.log"
grep -q 'VMTEST DONE' "$tmp/console.log" && grep -q '^[0-9]* passed, 0 failed' "$tmp/console.log"
