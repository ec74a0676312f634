#!/bin/sh
# Installs what hotring needs on Debian 12 (run as root). Idempotent: does nothing when
# everything is present.
#
#   install_deps.sh         what the main job needs (testing/run_main_job.sh): Bazel, g++ and
#                           the static libraries of the binary; the kernel, qemu and image tools
#                           of its boot demo
#   install_deps.sh --all   also what the tests need (testing/run_tests.sh): GoogleTest, the
#                           prober and fault tests' tools, clang for the fuzz targets, the
#                           ARM cross compilers, libraries and qemu of the board builds, and
#                           Abseil rebuilt with a section per function (testing/absl/)
set -eu
. "$(dirname "$0")/debian_packages.sh"
all=0
case "${1:-}" in
  --all) all=1 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "install_deps.sh: unknown option $1 (--all installs what the tests need too)" >&2; exit 2 ;;
esac

# The main job: the static binary (bazel build //:hotring: the archives of liburing, Abseil and
# libblkid; `file` checks that it is static), then the boot demo: Debian's kernel and its modules, the guest, the
# image tools (mkimage.sh: depmod, cpio, zstd; mkdisk.sh: mkfs.ext4) and busybox for the marker
# root.
pkgs="bazel-bootstrap g++ liburing-dev libabsl-dev libblkid-dev file"
pkgs="$pkgs linux-image-amd64 qemu-system-x86 cpio e2fsprogs zstd busybox-static kmod"
if [ "$all" = 1 ]; then
  # Abseil rebuilt from Debian's source with a section per function (testing/absl/build_absl.sh,
  # below): apt-get source (dpkg-dev), cmake and make.
  pkgs="$pkgs dpkg-dev cmake make"
  # The unit tests (GoogleTest, GoogleMock).
  pkgs="$pkgs libgtest-dev libgmock-dev"
  # clang-16 + libclang-rt-16-dev: the fuzz targets (--config=fuzz, libFuzzer); libtsan2: --config=tsan.
  pkgs="$pkgs clang-16 libclang-rt-16-dev libtsan2"
  # Debian's own initramfs booted on hotring (testing/initramfs/debian_boot_test.sh) needs
  # initramfs-tools (mkinitramfs), udev (its udevd and rules in the image, installed without
  # starting it, see below) and libinput-tools (its root runs `libinput list-devices`); so do
  # bench_boot.sh's udev images and the manual guest comparison (guest_compare.sh).
  pkgs="$pkgs initramfs-tools libinput-tools"
  # The udev compatibility stage's prober tests make images with the real tools and compare with
  # libblkid (util-linux's blkid and partx); its monitor test builds against Debian's libudev.
  pkgs="$pkgs dosfstools gdisk fdisk squashfs-tools libudev-dev"
  # The fault tests (hotplug/daemon_faults_test): setpriv and prlimit start the daemon as another
  # user under RLIMIT_NPROC; hotplug/replay:replay_test replays as nobody with setpriv
  # (util-linux is essential in Debian; named so a slim image gets it).
  pkgs="$pkgs util-linux"
  # Debian's own udevadm 252 and hwdb.bin (package udev): the udev control tests run the real
  # udevadm against the daemon, the builtins' comparison needs the hwdb.bin its goldens were made
  # with. Installed without starting systemd-udevd (see below).
  pkgs="$pkgs udev"
  # python3: the netlink injectors of testing/soak.sh and testing/bench/netlink_burst_memory.sh,
  # and the layout check.
  pkgs="$pkgs python3"
fi

# Boards (bazel --config=aarch64 / --config=armhf, testing/arm/run_arm_tests.sh, which
# run_tests.sh runs): Debian's cross compilers, the static libraries of arm64 and armhf from
# Debian's multiarch archive, and qemu for ARM. The ARM kernels and busybox are fetched by
# run_arm_tests.sh with apt-get download, never installed. liburing-dev of each architecture
# comes last (see below).
update=""
if [ "$all" = 1 ]; then
  for arch in arm64 armhf; do
    dpkg --print-foreign-architectures | grep -qx "$arch" || { dpkg --add-architecture "$arch"; update=1; }
    pkgs="$pkgs libabsl-dev:$arch libblkid-dev:$arch libgtest-dev:$arch libgmock-dev:$arch liburing2:$arch"
  done
  pkgs="$pkgs g++-aarch64-linux-gnu g++-arm-linux-gnueabihf qemu-system-arm"
fi
# shellcheck disable=SC2086
missing=$(missing_packages $pkgs)
if [ -n "$missing" ]; then
  echo "installing: $missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  # One architecture's index may be mid-sync on the mirror; what was fetched still serves.
  apt-get update -qq || echo "apt-get update failed for some index; going on with the rest" >&2
  update=""
  # Nothing installed here may start a service (udev's systemd-udevd).
  # shellcheck disable=SC2086
  install_without_starting $missing
fi
[ "$all" = 1 ] || exit 0
# The tests build and run against Abseil's archives with a section per function, built once
# into the cache outside the repository and reused (third_party/BUILD links them instead of
# Debian's, whose whole objects come along: 254 KB more in the stripped binary). The first time
# takes one to three and a half minutes on 2 CPUs, which the main job does not wait for (its
# binary is only larger). Without them (no network, a failed build) hotring links Debian's
# archives. A board's (sh testing/absl/build_absl.sh --arch arm64|armhf) is built on request.
sh "$(dirname "$0")/absl/build_absl.sh" >/dev/null ||
  echo "install_deps.sh: no section-built Abseil; hotring links Debian's archives" >&2
# liburing.a for each board. liburing-dev:ARCH needs linux-libc-dev:ARCH at exactly the host's
# linux-libc-dev version (Multi-Arch: same), which the archive may not have for ARCH (a
# security update ahead for amd64 only): apt then refuses the package. Its archive alone is
# what the build needs (headers are the host's, identical), so then it is unpacked into
# /usr/local/lib/TRIPLET, which the library wrappers search (third_party/BUILD).
for pair in arm64:aarch64-linux-gnu armhf:arm-linux-gnueabihf; do
  arch=${pair%%:*}
  triplet=${pair#*:}
  [ -e "/usr/lib/$triplet/liburing.a" ] || [ -e "/usr/local/lib/$triplet/liburing.a" ] && continue
  export DEBIAN_FRONTEND=noninteractive
  [ -z "$update" ] || { apt-get update -qq || true; update=""; }
  if ! apt-get install -y -qq --no-install-recommends "liburing-dev:$arch" >/dev/null 2>&1; then
    echo "installing: liburing.a of liburing-dev:$arch into /usr/local/lib/$triplet" >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download "liburing-dev:$arch" 2>/dev/null && dpkg-deb -x liburing-dev_*.deb x)
    mkdir -p "/usr/local/lib/$triplet"
    cp "$tmp/x/usr/lib/$triplet/liburing.a" "/usr/local/lib/$triplet/liburing.a"
    rm -rf "$tmp"
  fi
done
