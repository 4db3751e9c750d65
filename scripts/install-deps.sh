#!/usr/bin/env bash
# Install the Debian packages accdma needs to build and test, skipping those present.
#   build:     gcc make libnuma-dev libcmocka-dev libibverbs-dev (the verbs transport) pkg-config
#   tests:     numactl (placement checks), clang (make fuzz), gnuplot-nox (make plot),
#              python3 (accdma-bw's trace-summary check, man/gen-man3.py),
#              groff-base, man-db (the manual pages' check and `man`)
#   torch:     python3-torch libtorch-dev pybind11-dev python3-pytest (the accdma_torch
#              backend, torch/; optional: TORCH=1, which .ci/run sets)
#   peers:     openmpi-bin libopenmpi-dev ucx-utils (the peers of BENCHMARKS.md; optional: PEERS=1)
#   vm:        qemu-system-x86 linux-image-amd64 linux-headers-amd64 rdma-core ibverbs-providers
#              libibverbs-dev ibverbs-utils perftest busybox-static iproute2 cpio xz-utils zstd
#              kmod (tests/vm/: Debian's kernel under qemu with soft-RoCE, `make check-verbs`;
#              optional: VM=1, which .ci/run sets)
#   kmod:      linux-headers-amd64 (`make kmod` builds accdma.ko against it; optional: KMOD=1,
#              which .ci/run sets)
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -eu
pkgs="gcc make libc6-dev libnuma-dev libcmocka-dev libibverbs-dev pkg-config numactl clang gnuplot-nox python3 groff-base man-db"
[ "${TORCH:-0}" = 1 ] && pkgs="$pkgs python3-torch libtorch-dev pybind11-dev python3-pytest"
[ "${PEERS:-0}" = 1 ] && pkgs="$pkgs openmpi-bin libopenmpi-dev ucx-utils"
[ "${VM:-0}" = 1 ] && pkgs="$pkgs qemu-system-x86 linux-image-amd64 linux-headers-amd64 rdma-core \
  ibverbs-providers libibverbs-dev ibverbs-utils perftest busybox-static iproute2 cpio xz-utils zstd kmod"
[ "${KMOD:-0}" = 1 ] && pkgs="$pkgs linux-headers-amd64"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all present"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists" >&2
# Another apt-get (a second engineer, unattended upgrades) may hold the lock: wait for it.
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 $missing
