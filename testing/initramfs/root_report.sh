#!/bin/sh
# The root disk's /sbin/init for Debian's initramfs (mkdisk.sh --report-root): once the
# initramfs has mounted the root and switched to it, it prints what the initramfs left behind,
# in `hotring-report:` lines, and powers the guest off:
#   time init_ms=T0 settled_ms=T1   T0: the kernel's "Run /init" (printk time), T1: now
#                                   (/proc/uptime): /init -> root mounted and switched to
#   modules M...                    /proc/modules, sorted
#   link by-uuid/NAME -> TARGET     every link under /dev/disk, sorted
#   db N / tags N                   entries of the device database in /run/udev
#   rootdb LINE                     the root device's database entry (but its I: time)
#   left PID COMM                   a device manager still running (none should be)
#   root DEV FSTYPE                 what is mounted on /
# With Debian's udevadm and libinput on the disk (mkdisk.sh --input-tools), what they read from
# the database the initramfs handed over:
#   input NAME | PROPERTY=VALUE...  `udevadm info -q property` of each event node (the input
#                                   and link properties; DEVLINKS one DEVLINK= per link), by
#                                   the device's name
#   libinput Device|Capabilities: ... `libinput list-devices`
bb=/bin/busybox
$bb mount -t proc proc /proc 2>/dev/null
read -r t1 _ </proc/uptime
t0=$($bb dmesg | $bb sed -n 's/^\[ *\([0-9.]*\)\] Run \/init as init process.*/\1/p' | $bb head -n 1)
ms() { $bb awk "BEGIN {printf \"%.1f\", $1 * 1000}"; }
echo "hotring-report: time init_ms=$(ms "${t0:-0}") settled_ms=$(ms "$t1")"
echo "hotring-report: modules $($bb cut -d' ' -f1 /proc/modules | $bb sort | $bb tr '\n' ' ')"
for d in /dev/disk/by-*; do
  [ -d "$d" ] || continue
  for l in "$d"/*; do
    [ -L "$l" ] && echo "hotring-report: link ${d#/dev/disk/}/${l##*/} -> $($bb readlink "$l")"
  done
done | $bb sort
echo "hotring-report: db $($bb ls /run/udev/data 2>/dev/null | $bb wc -l) tags $($bb ls /run/udev/tags 2>/dev/null | $bb wc -l)"
rootdev=$($bb awk '$2 == "/" {print $1}' /proc/mounts | $bb tail -n 1)
majmin=$($bb cat "/sys/class/block/${rootdev##*/}/dev" 2>/dev/null)
[ -n "$majmin" ] && $bb grep -v '^I:' "/run/udev/data/b$majmin" 2>/dev/null | $bb sed 's/^/hotring-report: rootdb /'
for p in /proc/[0-9]*; do
  read -r comm 2>/dev/null <"$p/comm" || continue
  case "$comm" in
    systemd-udevd|udevd|udevadm|hotring) echo "hotring-report: left ${p#/proc/} $comm" ;;
  esac
done
if [ -x /bin/udevadm ]; then
  export SYSTEMD_PAGER=cat PAGER=cat SYSTEMD_COLORS=0
  for e in /dev/input/event*; do
    [ -e "$e" ] || continue
    name=$($bb cat "/sys/class/input/${e##*/}/device/name" 2>/dev/null)
    # DEVLINKS in name order: udevadm joins them in the order of a hash set, not a fixed one.
    props=$(/bin/udevadm info -q property -n "$e" | $bb grep -E '^(ID_INPUT[A-Z_]*|ID_BUS|ID_SERIAL|ID_PATH|DEVLINKS)=' |
      $bb awk '/^DEVLINKS=/ {n = split(substr($0, 10), l, " "); for (i = 1; i <= n; i++) print "DEVLINK=" l[i]; next} {print}' |
      $bb sort | $bb tr '\n' ' ')
    echo "hotring-report: input $name | $props"
  done | $bb sort
  /usr/libexec/libinput/libinput-list-devices 2>&1 | $bb grep -E '^(Device|Capabilities):' |
    $bb sed 's/  */ /g; s/^/hotring-report: libinput /'
fi
echo "hotring-report: root $($bb awk '$2 == "/" {print $1, $3}' /proc/mounts | $bb tail -n 1)"
echo "hotring-report: end"
$bb poweroff -f
