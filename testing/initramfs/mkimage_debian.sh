#!/bin/sh
# Debian's own initramfs (initramfs-tools' mkinitramfs for kernel V, as Debian builds it), and
# the same image with udev's two programs replaced by hotring: with --hotring BIN a second
# archive is appended (the kernel unpacks concatenated archives in order, a later entry
# replacing an earlier one) holding only
#   /usr/bin/hotring                  BIN
#   /usr/bin/udevadm                  -> hotring
#   /usr/lib/systemd/systemd-udevd    -> ../../bin/hotring
# Nothing else changes: initramfs-tools' scripts call `systemd-udevd --daemon`, `udevadm
# trigger`, `udevadm settle` and `udevadm control --exit` as they would with udev, and the
# daemon runs the image's own rules.d. The image does not measure anything itself: the root
# disk's /sbin/init (mkdisk.sh --report-root) reports once the root is mounted.
#
#   mkimage_debian.sh --out IMAGE [--hotring BIN] [--kernel-version V] [--base MKINITRAMFS_IMAGE]
#                     [--input] [--overlay DIR]...
#
# --input: the image gets what input devices need in an initramfs, as a user adds it
# (initramfs-tools leaves both out): the evdev driver (with the image's module indexes remade by
# depmod) and udev's 60-input-id.rules and 60-persistent-input.rules. An archive appended to the
# base image, before hotring's.
# --overlay DIR: the tree DIR as one more archive (owned by root), after --input's and before
# hotring's, in the order given: what a test adds to both images alike (rules, hwdb.bin, tools).
# Without --base it runs `mkinitramfs -o` into a temporary file (the machine's /boot is not
# touched). Needs initramfs-tools and udev (installed on demand, udev without being started).
set -eu
# Bazel's strict action environment leaves out the sbin directories (mkinitramfs, depmod).
export PATH="$PATH:/usr/sbin:/sbin"
out="" hotring="" version="" base="" input=0 overlays=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --hotring) hotring=$2; shift 2 ;;
    --kernel-version) version=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --input) input=1; shift ;;
    --overlay) [ -d "$2" ] || { echo "mkimage_debian.sh: --overlay $2: not a directory" >&2; exit 2; }
      overlays="$overlays $(cd "$2" && pwd)"; shift 2 ;;
    *) echo "mkimage_debian.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "mkimage_debian.sh: --out is required" >&2; exit 2; }
[ -n "$version" ] || version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/mkimage-debian.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$base" ]; then
  . "$(dirname "$0")/../debian_packages.sh"
  install_missing initramfs-tools udev  # udev without starting its daemon on this machine
  base="$work/base.img"
  mkinitramfs -o "$base" "$version" >/dev/null
fi
if [ "$input" = 1 ]; then
  mkdir -p "$work/x"
  unmkinitramfs "$base" "$work/x" >/dev/null
  main="$work/x"
  [ -d "$work/x/main" ] && main="$work/x/main"
  kdir="usr/lib/modules/$version"
  [ -d "$main/$kdir" ] || { echo "mkimage_debian.sh: the image has no $kdir" >&2; exit 1; }
  mkdir -p "$work/input/$kdir/kernel/drivers/input" "$work/input/usr/lib/udev/rules.d"
  cp "/lib/modules/$version/kernel/drivers/input/evdev.ko" "$main/$kdir/kernel/drivers/input/"
  cp "/lib/modules/$version/kernel/drivers/input/evdev.ko" "$work/input/$kdir/kernel/drivers/input/"
  depmod -b "$main/usr" "$version"
  cp "$main/$kdir"/modules.* "$work/input/$kdir/"
  cp /lib/udev/rules.d/60-input-id.rules /lib/udev/rules.d/60-persistent-input.rules \
    "$work/input/usr/lib/udev/rules.d/"
  ( cd "$work/input" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/input.img"
  cat "$base" "$work/input.img" >"$work/with-input.img"
  base="$work/with-input.img"
fi
n=0
for dir in $overlays; do
  n=$((n + 1))
  ( cd "$dir" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/overlay$n.img"
  cat "$base" "$work/overlay$n.img" >"$work/with-overlay$n.img"
  base="$work/with-overlay$n.img"
done
if [ -z "$hotring" ]; then
  cp "$base" "$out"
  exit 0
fi
mkdir -p "$work/overlay/usr/bin" "$work/overlay/usr/lib/systemd"
cp "$hotring" "$work/overlay/usr/bin/hotring"
strip "$work/overlay/usr/bin/hotring" 2>/dev/null || true
chmod 755 "$work/overlay/usr/bin/hotring"
ln -s hotring "$work/overlay/usr/bin/udevadm"
ln -s ../../bin/hotring "$work/overlay/usr/lib/systemd/systemd-udevd"
( cd "$work/overlay" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/overlay.img"
cat "$base" "$work/overlay.img" >"$out"
