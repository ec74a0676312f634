#!/bin/sh
# The guest's virtio disk: an ext4 filesystem labelled hotring-root (the boot test mounts it with
# root=LABEL=hotring-root), made with mkfs.ext4 -d (nothing is mounted), whose /sbin/init is a
# marker program: it prints "hotring-marker: switched to the ext4 root" and powers the guest
# off. busybox-static is its shell and its poweroff.
#
#   mkdisk.sh --out IMAGE [--busybox FILE] [--report-root [--input-tools]]
# --busybox: another architecture's busybox-static (default /bin/busybox, this machine's).
# --report-root: /sbin/init is root_report.sh instead (what an initramfs left behind: time to
#   the root, modules, /dev/disk links, the device database, daemons still running).
# --input-tools: Debian's udevadm and libinput (libinput-tools, installed when missing) with
#   their libraries, quirks and libwacom's database: the report then says what they see.
set -eu
# Bazel's strict action environment leaves out the sbin directories (depmod, mkfs.ext4).
export PATH="$PATH:/usr/sbin:/sbin"
out="" busybox=/bin/busybox report=0 input=0 size=32M
here=$(cd "$(dirname "$0")" && pwd)
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --busybox) busybox=$2; shift 2 ;;
    --report-root) report=1; shift ;;
    --input-tools) input=1; size=160M; shift ;;
    *) echo "mkdisk.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "mkdisk.sh: --out is required" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/mkdisk.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/sbin" "$work/dev" "$work/proc" "$work/sys" "$work/run" "$work/tmp"
cp "$busybox" "$work/bin/busybox"
ln -s busybox "$work/bin/sh"
cat >"$work/sbin/init" <<'INIT'
#!/bin/sh
/bin/busybox echo "hotring-marker: switched to the ext4 root, pid $$, root $(/bin/busybox awk '$2 == "/" {print $1, $3}' /proc/mounts | /bin/busybox tail -n 1)"
/bin/busybox poweroff -f
INIT
[ "$report" = 0 ] || cp "$here/root_report.sh" "$work/sbin/init"
chmod 755 "$work/sbin/init"
if [ "$input" = 1 ]; then
  . "$here/../debian_packages.sh"
  install_missing libinput-tools
  . "$here/copy_program.sh"
  copy_program "$work" as-is /bin/udevadm /usr/libexec/libinput/libinput-list-devices
  mkdir -p "$work/usr/share"
  cp -r /usr/share/libinput /usr/share/libwacom "$work/usr/share/"
fi
rm -f "$out"
mkfs.ext4 -q -L hotring-root -d "$work" "$out" "$size"
