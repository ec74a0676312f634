#!/bin/sh
# The udev comparison in a qemu guest: boots the boot harness's machine (testing/initramfs/
# qemu_boot.sh: virtio disk, e1000, virtio-net, USB keyboard; here also a USB mouse, a USB tablet,
# the PC's PS/2 keyboard and mouse, a virtio GPU (drm card, connector, render node and fb: seat
# tags), and a second serial port for the dumps) twice, with the same
# disk (a GPT with an ext4 and a vfat partition, both labelled):
#   udev     Debian's initramfs-tools image (mkinitramfs) with systemd-udevd, plus udev's
#            60-input-id.rules, 60-persistent-input.rules, 70-uaccess.rules and
#            73-seat-late.rules (initramfs-tools leaves them out, but has 71-seat.rules; a board
#            running udevd has them all);
#   hotring  hotring's image (mkimage.sh) with `hotring daemon --udev-compat`.
# Both images get the same Debian udevadm and libinput-tools (with the libraries ldd names), and
# run guest_dump.sh: `udevadm info --export-db`, the /dev/disk and /dev/input links, the input
# devices' sysfs capabilities, `libinput list-devices`. compare_guest.py then prints, per device,
# the differences in the properties issue 17 names and in the links, and compares libinput's
# view; exit status 0 when nothing differs but what docs/udev-compat.md explains.
#
# --rules: both guests run Debian's initramfs (testing/initramfs/mkimage_debian.sh), one with
# systemd-udevd and one with hotring's drop-in (`mkimage_debian.sh --hotring`), and both get
# this machine's whole udev setup from the same overlay: every file of /lib/udev/rules.d and
# /etc/udev/rules.d, hwdb.bin, the programs in /lib/udev the rules call (ata_id, scsi_id,
# cdrom_id, ...: with their libraries), /etc/passwd and /etc/group, and initramfs-tools' udev
# script with `--resolve-names=early` (udevd's default; --resolve-names WHEN, `never` as
# initramfs-tools has it) so that OWNER and GROUP names resolve. compare_guest.py --full then
# compares every property, link, link priority, tag, node owner/group/mode and network
# interface name of every device (docs/udev-rules.md, "Compared with systemd-udevd in a qemu
# guest").
#
#   guest_compare.sh [--rules [--resolve-names early|late|never]] [--hotring BIN] [--keep DIR]
#                    [--base MKINITRAMFS_IMAGE] [--smp N]
#                    [--timeout S (default 900)] [--parallel (both guests at once)]
# BIN: a static hotring (default bazel-bin/hotring). --base reuses an initramfs-tools image
# made by an earlier run (DIR/udev-base.img: it must have evdev and virtio_gpu) instead of running mkinitramfs. The dumps and consoles stay in
# --keep DIR (default: a temporary directory, removed; under `bazel test` the dumps, consoles and
# compare.txt go to the test's outputs). Minutes of TCG: run it alone.
# Needs (Debian): qemu-system-x86, busybox-static, initramfs-tools, udev, libinput-tools, gdisk,
# dosfstools, e2fsprogs, cpio, zstd, python3 (and iproute2 for the alternative names).
set -eu
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
initramfs="$here/../initramfs"
hotring="" keep="" base="" smp=1 timeout=900 parallel=0 outputs="" mode=fallback resolve=early
while [ $# -gt 0 ]; do
  case "$1" in
    --hotring) hotring=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --rules) mode=rules; shift ;;
    --resolve-names) resolve=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "guest_compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -n "${TEST_SRCDIR:-}" ]; then
  # Under `bazel test`: the runfiles' hotring, the dumps kept with the test's outputs.
  runfiles="$TEST_SRCDIR/${TEST_WORKSPACE:-hotring}"
  here="$runfiles/testing/udevcompat"
  initramfs="$runfiles/testing/initramfs"
  [ -n "$hotring" ] || hotring="$runfiles/hotring"
  outputs="${TEST_UNDECLARED_OUTPUTS_DIR:-}"
fi
[ -n "$hotring" ] || hotring="$here/../../bazel-bin/hotring"
if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else
  work=$(mktemp -d "${TMPDIR:-/tmp}/udev-compare.XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
work=$(cd "$work" && pwd)
version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
kernel="/boot/vmlinuz-$version"
. "$here/../debian_packages.sh"
install_missing initramfs-tools udev libinput-tools gdisk dosfstools

# --- the disk: GPT, partition 1 ext4 "hr-ext4", partition 2 vfat "HRVFAT" (names "hr-root",
# "hr-esp"); the filesystems are made in files and copied in (nothing is mounted).
disk="$work/disk.img"
rm -f "$disk" "$work/p1.img" "$work/p2.img"
truncate -s 64M "$disk"
sgdisk -n 1:2048:+32M -t 1:8300 -c 1:hr-root -n 2:0:+16M -t 2:ef00 -c 2:hr-esp "$disk" >/dev/null
mkfs.ext4 -q -L hr-ext4 "$work/p1.img" 32M >/dev/null 2>&1
mkfs.vfat -n HRVFAT -C "$work/p2.img" 16384 >/dev/null
p2start=$(sgdisk -i 2 "$disk" | sed -n 's/^First sector: \([0-9]*\).*/\1/p')
dd if="$work/p1.img" of="$disk" bs=512 seek=2048 conv=notrunc status=none
dd if="$work/p2.img" of="$disk" bs=512 seek="$p2start" conv=notrunc status=none

# --- the tools both guests run, under usr/ (Debian's initramfs has /lib -> usr/lib, which an
# archive entry "lib" would replace): udevadm, libinput's list-devices, their libraries, the
# libinput quirks and the libwacom database.
tools="$work/tools"
rm -rf "$tools"; mkdir -p "$tools"
. "$initramfs/copy_program.sh"
copy_program "$tools" usr /bin/udevadm /usr/libexec/libinput/libinput-list-devices
# iproute2's ip shows the interfaces' alternative names (busybox's does not).
if [ -x /bin/ip ]; then copy_program "$tools" usr /bin/ip; fi
copy_file_to "$tools" usr /usr/bin/libinput
# Debian's udevadm where hotring's drop-in takes /usr/bin/udevadm: guest_dump.sh reads the
# database and monitors with it in both guests (GUEST_UDEVADM).
mkdir -p "$tools/usr/lib/guest"
cp /bin/udevadm "$tools/usr/lib/guest/udevadm"
mkdir -p "$tools/usr/share"
cp -r /usr/share/libinput /usr/share/libwacom "$tools/usr/share/"
cp "$here/guest_dump.sh" "$tools/guest_dump.sh"
( cd "$tools" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/tools.img"

# --- hotring's image (not with --rules): /init is init_hotring.sh; /lib64 -> usr/lib64 for the
# loader.
if [ "$mode" = fallback ]; then
  sh "$initramfs/mkimage.sh" --hotring "$hotring" --out "$work/hotring-base.img" \
    --kernel-version "$version" --with-shell --init "$here/init_hotring.sh" \
    --add "$hotring=/bin/hotring" --mdev-conf "$initramfs/mdev.conf" --add-modules evdev,virtio_gpu
  mkdir -p "$work/hotring-extra"
  ln -sfn usr/lib64 "$work/hotring-extra/lib64"
  ( cd "$work/hotring-extra" && echo lib64 | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/hotring-extra.img"
  cat "$work/hotring-base.img" "$work/hotring-extra.img" "$work/tools.img" >"$work/hotring.img"
fi

# --- Debian's image: mkinitramfs (or --base) with evdev added as a user adds a module
# (initramfs-tools leaves the input event driver out; udevd loads it from MODALIAS), then an
# overlay with the input rules (--rules: the whole udev setup) and an init-top script after
# udev's that dumps and powers off; with --rules, the same again with hotring's drop-in.
if [ -z "$base" ]; then
  base="$work/udev-base.img"
  rm -rf "$work/conf"
  cp -r /etc/initramfs-tools "$work/conf"
  printf 'evdev\nvirtio_gpu\n' >>"$work/conf/modules"
  mkinitramfs -d "$work/conf" -o "$base" "$version" >/dev/null
fi
rm -rf "$work/x" "$work/overlay"
mkdir -p "$work/x" "$work/overlay/scripts/init-top" "$work/overlay/usr/lib/udev/rules.d"
unmkinitramfs "$base" "$work/x" >/dev/null
main="$work/x"
[ -d "$work/x/main" ] && main="$work/x/main"
cp "$here/udev-init-top.sh" "$work/overlay/scripts/init-top/zz_dump"
chmod 755 "$work/overlay/scripts/init-top/zz_dump"
cp "$main/scripts/init-top/ORDER" "$work/overlay/scripts/init-top/ORDER"
printf '/scripts/init-top/zz_dump "$@"\n' >>"$work/overlay/scripts/init-top/ORDER"
if [ "$mode" = rules ]; then
  # This machine's whole udev setup, the same in both images.
  o="$work/overlay"
  copy_udev_setup "$o"
  # initramfs-tools starts udevd with --resolve-names=never: OWNER/GROUP names would be
  # ignored by both daemons.
  sed "s/--resolve-names=never/--resolve-names=$resolve/" "$main/scripts/init-top/udev" \
    >"$o/scripts/init-top/udev"
  chmod 755 "$o/scripts/init-top/udev"
  grep -q -- "--resolve-names=$resolve" "$o/scripts/init-top/udev" || {
    echo "guest_compare.sh: initramfs-tools' init-top/udev has no --resolve-names=never" >&2; exit 1; }
  sh "$initramfs/mkimage_debian.sh" --base "$base" --overlay "$o" --overlay "$tools" --out "$work/udev.img"
  sh "$initramfs/mkimage_debian.sh" --base "$base" --overlay "$o" --overlay "$tools" \
    --hotring "$hotring" --out "$work/hotring.img"
else
  cp /lib/udev/rules.d/60-input-id.rules /lib/udev/rules.d/60-persistent-input.rules \
    /lib/udev/rules.d/70-uaccess.rules /lib/udev/rules.d/73-seat-late.rules \
    "$work/overlay/usr/lib/udev/rules.d/"
  ( cd "$work/overlay" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/overlay.img"
  cat "$base" "$work/overlay.img" "$work/tools.img" >"$work/udev.img"
fi

# --- the two boots (one after the other unless --parallel: the machine is shared).
qargs="-device usb-mouse,bus=xhci.0 -device usb-tablet,bus=xhci.0 -device virtio-gpu-pci"
boot() {
  echo "guest_compare.sh: booting the $1 image" >&2
  rm -f "$work/$1.dump"
  status=0
  sh "$initramfs/qemu_boot.sh" --kernel "$kernel" --initrd "$work/$1.img" --disk "$disk" \
    --log "$work/$1.console" --smp "$smp" --timeout "$timeout" \
    --qemu-args "$qargs -serial file:$work/$1.dump" || status=$?
  [ "$status" = 0 ] || echo "guest_compare.sh: the $1 guest: qemu exited $status (124: timeout)" >&2
}
if [ "$parallel" = 1 ]; then
  boot udev & boot hotring & wait
else
  boot udev; boot hotring
fi
for image in udev hotring; do
  tr -d '\r' <"$work/$image.dump" >"$work/$image.txt" 2>/dev/null || : >"$work/$image.txt"
  grep -q '^=== end' "$work/$image.txt" || {
    echo "guest_compare.sh: no complete dump from the $image guest; console tail:" >&2
    tail -n 20 "$work/$image.console" >&2
    exit 1
  }
done
status=0
full=""
[ "$mode" = fallback ] || full=--full
python3 "$here/compare_guest.py" $full "$work/udev.txt" "$work/hotring.txt" >"$work/compare.txt" || status=$?
cat "$work/compare.txt"
# Under bazel test: the dumps, consoles and comparison (not the images) with the outputs.
[ -z "$outputs" ] || cp "$work"/*.txt "$work"/*.console "$outputs/"
exit "$status"
