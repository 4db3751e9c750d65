#!/usr/bin/env bash
# Prints the version of the Debian kernel the VM boots: VM_KVER if set, else
# the newest version that has both /boot/vmlinuz-<ver> and /lib/modules/<ver>
# (linux-image-amd64). Not `uname -r`: the host may run another kernel, and
# the guest needs the modules that match its own.
set -eu
if [ -n "${VM_KVER:-}" ]; then
	echo "$VM_KVER"
	exit 0
fi
best=""
for d in /lib/modules/*/; do
	v=$(basename "$d")
	if [ ! -f "/boot/vmlinuz-$v" ] || [ ! -f "$d/modules.dep" ]; then continue; fi
	best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
done
if [ -z "$best" ]; then
	echo "kver.sh: no kernel with /boot/vmlinuz-<ver> and /lib/modules/<ver>;" \
	     "VM=1 bash scripts/install-deps.sh installs linux-image-amd64" >&2
	exit 1
fi
echo "$best"
