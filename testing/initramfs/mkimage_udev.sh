#!/bin/sh
# Debian's own initramfs-tools + systemd-udevd image, made measurable: mkinitramfs's image for
# kernel V followed by a small overlay archive (the kernel unpacks concatenated archives in
# order, later files replacing earlier ones) that
#   - wraps /init to print CLOCK_BOOTTIME (/proc/uptime) when it starts, and
#   - after init-top's udev script (udevd, `udevadm trigger`, `udevadm settle`) prints the same
#     `hotring-report:` time and modules lines as `hotring init`, then powers off.
# So bench_boot.sh and the expected-modules script read every image the same way.
#
#   mkimage_udev.sh --out IMAGE [--kernel-version V] [--base EXISTING_MKINITRAMFS_IMAGE]
#
# Without --base it runs `mkinitramfs -o` into a temporary file (the machine's /boot is not
# touched). Needs initramfs-tools, udev, busybox (all Debian packages).
set -eu
# Bazel's strict action environment leaves out the sbin directories (depmod, mkfs.ext4).
export PATH="$PATH:/usr/sbin:/sbin"
out="" version="" base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --kernel-version) version=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    *) echo "mkimage_udev.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "mkimage_udev.sh: --out is required" >&2; exit 2; }
[ -n "$version" ] || version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/mkimage-udev.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$base" ]; then
  # The tests do not need these, so testing/install_deps.sh leaves them out; install on demand.
  . "$(dirname "$0")/../debian_packages.sh"
  install_missing initramfs-tools udev
  base="$work/base.img"
  mkinitramfs -o "$base" "$version" >/dev/null
fi
# The original /init, to wrap: unpack only the main archive's init.
mkdir -p "$work/x" "$work/overlay/scripts/init-top"
unmkinitramfs "$base" "$work/x" >/dev/null
main="$work/x"
[ -d "$work/x/main" ] && main="$work/x/main"
cp "$main/init" "$work/overlay/init.debian"
cat >"$work/overlay/init" <<'INIT'
#!/bin/sh
mkdir -p /proc && mount -t proc proc /proc
read -r up _ </proc/uptime
echo "$up" >/init.start
umount /proc
exec /init.debian "$@"
INIT
cat >"$work/overlay/scripts/init-top/zz_report" <<'REPORT'
#!/bin/sh
[ "$1" = prereqs ] && exit 0
read -r up _ </proc/uptime
read -r start </init.start
ms() { echo "$1" | awk '{printf "%.1f", $1 * 1000}'; }
echo "hotring-report: time init_ms=$(ms "$start") settled_ms=$(ms "$up")"
echo "hotring-report: modules $(cut -d' ' -f1 /proc/modules | sort | tr '\n' ' ')"
for n in /sys/class/net/*; do
  echo "hotring-report: net ${n##*/} driver=$(basename "$(readlink "$n/device/driver" 2>/dev/null || echo -)")"
done
echo "hotring-report: end"
echo o >/proc/sysrq-trigger
sleep 10
REPORT
chmod 755 "$work/overlay/init" "$work/overlay/scripts/init-top/zz_report"
cp "$main/scripts/init-top/ORDER" "$work/overlay/scripts/init-top/ORDER"
printf '/scripts/init-top/zz_report "$@"\n' >>"$work/overlay/scripts/init-top/ORDER"
( cd "$work/overlay" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | gzip -1 >"$work/overlay.img"
cat "$base" "$work/overlay.img" >"$out"
