#!/bin/sh
# Records the "qemu" board: boots Debian's kernel in a qemu guest (TCG, hotring's test guest:
# virtio disk, e1000 and virtio-net NICs, USB keyboard) with an initramfs whose /init starts
# hotring (modules loaded as on a real boot), coldplugs with `trigger --action add` (inside the
# guest), runs `hotring record` and prints the recording on the serial console, from where this
# script cuts it out into qemu.rec.
#
#   record_guest.sh HOTRING_BINARY [OUT (default: qemu.rec beside this script)]
# Needs root for nothing; needs qemu-system-x86_64, busybox-static, kmod and a kernel in /boot.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
initramfs=$(cd "$here/../../../initramfs" && pwd)
hotring=$1
out=${2:-$here/qemu.rec}
kernel=$(ls /boot/vmlinuz-*-amd64 | sort -V | tail -n 1)
version=${kernel#/boot/vmlinuz-}
work=$(mktemp -d "${TMPDIR:-/tmp}/record_guest.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat > "$work/init" <<'INIT'
#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
/bin/hotring daemon --daemonize --log-level warning
/bin/hotring trigger --action add --settle --timeout 60
/bin/hotring record --out /record.txt
echo "=====hotring-recording-begin====="
cat /record.txt
echo "=====hotring-recording-end====="
poweroff -f
INIT
sh "$initramfs/mkimage.sh" --hotring "$hotring" --out "$work/image" --kernel-version "$version" \
  --with-shell --init "$work/init" --add "$hotring=/bin/hotring" --compress gzip
sh "$initramfs/mkdisk.sh" --out "$work/disk.img"
sh "$initramfs/qemu_boot.sh" --kernel "$kernel" --initrd "$work/image" --disk "$work/disk.img" \
  --log "$work/console.log" --timeout 600 || true
sed -n '/^=====hotring-recording-begin=====/,/^=====hotring-recording-end=====/p' \
  "$work/console.log" | tr -d '\r' | sed '1d;$d' > "$work/rec"
head -n 1 "$work/rec" | grep -qx 'hotring-recording 1' || {
  echo "record_guest: no recording on the console; its end:" >&2
  tail -n 30 "$work/console.log" >&2
  exit 1
}
mv "$work/rec" "$out"
echo "record_guest: wrote $out ($(grep -c '^event' "$out") events)"
