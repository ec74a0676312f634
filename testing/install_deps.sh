#!/bin/sh
# Installs what hotring needs to build and test on Debian 12 (run as root). Idempotent: does
# nothing when everything is present.
set -eu
pkgs="bazel-bootstrap g++ liburing-dev libabsl-dev libgtest-dev libgmock-dev file"
# clang-16 + libclang-rt-16-dev: the fuzz targets (--config=fuzz, libFuzzer); libtsan2: --config=tsan.
pkgs="$pkgs clang-16 libclang-rt-16-dev libtsan2"
# The boot test and bench boot (testing/initramfs/): Debian's kernel and its modules, the guest,
# the image tools, busybox for the marker root, mdev and the comparison images. Debian's own
# udev image (bench_boot.sh, regen_expected_modules.sh) also needs initramfs-tools and udev:
# those scripts install them, since the tests do not need them.
pkgs="$pkgs linux-image-amd64 qemu-system-x86 cpio e2fsprogs zstd busybox-static kmod"
# The udev compatibility stage's prober tests make images with the real tools and compare with
# libblkid (util-linux's blkid and partx); its monitor test builds against Debian's libudev.
pkgs="$pkgs dosfstools gdisk fdisk squashfs-tools libudev-dev"
# The fault tests (hotplug/daemon_faults_test): setpriv and prlimit start the daemon as another
# user under RLIMIT_NPROC (util-linux is essential in Debian; named so a slim image gets it).
pkgs="$pkgs util-linux"
# python3: the netlink injectors of testing/soak.sh and testing/bench/netlink_burst_memory.sh.
pkgs="$pkgs python3"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
