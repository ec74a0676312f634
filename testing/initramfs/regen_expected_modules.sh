#!/bin/sh
# Regenerates expected_modules.txt: builds Debian's initramfs-tools + udev image for the
# installed kernel (mkinitramfs into a temporary file), boots it in the boot test's guest, and
# writes the modules it had loaded when `udevadm settle` returned.
#
#   regen_expected_modules.sh [--kernel-version V] [--smp N]
set -eu
# Bazel's strict action environment leaves out the sbin directories (depmod, mkfs.ext4).
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
version="" smp=1
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel-version) version=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    *) echo "regen_expected_modules.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$version" ] || version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/regen-modules.XXXXXX")
trap 'rm -rf "$work"' EXIT
sh "$here/mkimage_udev.sh" --out "$work/udev.img" --kernel-version "$version"
sh "$here/mkdisk.sh" --out "$work/disk.img"
sh "$here/qemu_boot.sh" --kernel "/boot/vmlinuz-$version" --initrd "$work/udev.img" \
  --disk "$work/disk.img" --log "$work/console.log" --smp "$smp"
modules=$(sed -n 's/^hotring-report: modules //p' "$work/console.log" | tr -d '\r')
[ -n "$modules" ] || { echo "regen_expected_modules.sh: no modules line:" >&2; tail -n 30 "$work/console.log" >&2; exit 1; }
{
  sed -n '/^#/p' "$here/expected_modules.txt" | sed "s/linux-image [^ ]*/linux-image $version/"
  printf '%s\n' $modules | sort -u
} >"$here/expected_modules.txt.new"
mv "$here/expected_modules.txt.new" "$here/expected_modules.txt"
echo "regen_expected_modules.sh: $(grep -vc '^#' "$here/expected_modules.txt") modules written"
