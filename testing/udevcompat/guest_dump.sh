#!/bin/sh
# Runs in the comparison guest (both images), once the device manager has coldplugged: waits for
# the devices the comparison needs, settles, and writes to the second serial port (/dev/ttyS1,
# apart from the kernel's console) what libudev's consumers see:
#   === export-db    `udevadm info --export-db` (Debian's udevadm reads /run/udev/data)
#   === links        every symlink under /dev/disk and /dev/input: "L: LINK -> NODE"
#   === devlinks     every symlink under /dev: "L: LINK -> TARGET"
#   === nodes        every device node under /dev: "F: NODE c|b MAJ:MIN UID GID MODE"
#   === run-udev     every file, directory and symlink under /run/udev: "R: PATH d|f|l [TARGET]"
#                    (the tag index, link claims, watches, static node tags, ...)
#   === net          each network interface: "N: NAME DEVPATH address=... name_assign_type=...
#                    addr_assign_type=..." and `ip -o link` (its alternative names)
#   === sysfs        each input device's name, id/ and capabilities/, each USB device's and
#                    interface's ids, strings and descriptors (hex) (the unit tests' data)
#   === libinput     `libinput list-devices` (Debian's libinput-tools, through libudev)
#   === monitor      `udevadm monitor --udev --property` while $GUEST_TRIGGER_CHANGE (the
#                    device manager's trigger of a change of vda1) and $GUEST_TRIGGER_SEAT
#                    (of every inputN) run: one monitor filtered on subsystem block, and one
#                    on tag seat (=== monitor-seat)
#   === watch        `udevadm monitor --udev` (block) while a writer closes vda1, then vda:
#                    what the watches of 60-block.rules make of it
#   === end
#
#   guest_dump.sh SETTLE_COMMAND...     e.g. guest_dump.sh udevadm settle
# $GUEST_UDEVADM (default: udevadm on PATH) reads the database and monitors: Debian's udevadm
# where the image's own udevadm is hotring's.
# The expected devices: three USB input devices (keyboard, mouse, tablet), the PS/2 mouse
# (psmouse on serio1) and the two partitions of the virtio disk; at most 240 s for them.
bb=/bin/busybox
# A tty on stdout would start a pager.
export SYSTEMD_PAGER=cat PAGER=cat SYSTEMD_COLORS=0
out=/dev/ttyS1
udevadm=${GUEST_UDEVADM:-udevadm}
have() {
  usb=0 ps2=0
  for i in /sys/class/input/input*; do
    [ -e "$i" ] || continue
    p=$($bb readlink -f "$i")
    case "$p" in
      */usb*) usb=$((usb + 1)) ;;
      */serio1/*) ps2=$((ps2 + 1)) ;;
    esac
  done
  [ "$usb" -ge 3 ] && [ "$ps2" -ge 1 ] && [ -e /sys/class/block/vda2 ]
}
n=0
until have; do
  n=$((n + 1))
  [ "$n" -gt 240 ] && { echo "guest_dump: timed out waiting for the input devices and vda2" >"$out"; break; }
  $bb sleep 1
done
"$@"
# The idle state is what is compared: udevd stops its idle workers 3 s after its queue empties and
# only then removes the claim directories' .lock files (udevd 252's on_post and
# udev_node_cleanup); hotring has no workers and removes them once no event runs. At most 20 s.
n=0
while $bb grep -qsx '(udev-worker)' /proc/[0-9]*/comm; do
  n=$((n + 1))
  [ "$n" -gt 40 ] && break
  $bb sleep 0.5
done
$bb sleep 1
{
  echo "=== export-db"
  $udevadm info --export-db | $bb cat
  echo "=== links"
  for l in $($bb find /dev/disk /dev/input -type l 2>/dev/null | $bb sort); do
    echo "L: $l -> $($bb readlink -f "$l")"
  done
  echo "=== devlinks"
  for l in $($bb find /dev -type l 2>/dev/null | $bb sort); do
    echo "L: $l -> $($bb readlink "$l")"
  done
  echo "=== nodes"
  for n in $($bb find /dev \( -type c -o -type b \) 2>/dev/null | $bb sort); do
    t=c; [ -b "$n" ] && t=b
    echo "F: $n $t $($bb stat -c '%t:%T %u %g %a' "$n")"
  done
  echo "=== run-udev"
  for f in $($bb find /run/udev 2>/dev/null | $bb sort); do
    # printf: a claim's name holds backslashes (disk\x2fby-uuid\x2f...)
    if [ -L "$f" ]; then printf 'R: %s l %s\n' "$f" "$($bb readlink "$f")"
    elif [ -d "$f" ]; then printf 'R: %s d\n' "$f"
    else printf 'R: %s f\n' "$f"; fi
  done
  echo "=== net"
  for n in /sys/class/net/*; do
    [ -e "$n" ] || continue
    echo "N: ${n##*/} $($bb readlink -f "$n" | $bb sed 's|^/sys||') address=$($bb cat "$n/address")" \
      "name_assign_type=$($bb cat "$n/name_assign_type" 2>/dev/null)" \
      "addr_assign_type=$($bb cat "$n/addr_assign_type" 2>/dev/null)"
  done
  ip -o link show 2>&1 | $bb sed 's/^/I: /'
  echo "=== sysfs"
  for i in /sys/class/input/input*; do
    [ -e "$i" ] || continue
    echo "D: $($bb readlink -f "$i" | $bb sed 's|^/sys||')"
    echo "A: name=$($bb cat "$i/name")"
    for f in "$i"/id/* "$i"/capabilities/* "$i/properties"; do
      echo "A: ${f#$i/}=$($bb cat "$f")"
    done
  done
  for u in /sys/bus/usb/devices/*; do
    echo "D: $($bb readlink -f "$u" | $bb sed 's|^/sys||')"
    for a in idVendor idProduct manufacturer product serial bcdDevice bInterfaceNumber \
      bInterfaceClass bInterfaceSubClass bInterfaceProtocol; do
      [ -r "$u/$a" ] && echo "A: $a=$($bb cat "$u/$a")"
    done
    [ -r "$u/descriptors" ] && echo "A: descriptors=$($bb od -An -v -tx1 "$u/descriptors" | $bb tr -d ' \n')"
    [ -e "$u/driver" ] && echo "A: driver=$($bb basename "$($bb readlink "$u/driver")")"
  done
  echo "=== libinput"
  libinput list-devices 2>&1 | $bb cat
  # A libudev-format monitor (Debian's udevadm, sd-device's monitor with an in-kernel filter
  # for block) receives the device manager's announcement of a `change` of vda1.
  echo "=== monitor"
  $udevadm monitor --udev --property --subsystem-match=block >/run/monitor.txt 2>&1 &
  mon=$!
  # The same change events through the tag bloom filter: only seat-tagged devices pass.
  $udevadm monitor --udev --property --tag-match=seat >/run/monitor-seat.txt 2>&1 &
  mon_seat=$!
  $bb sleep 2
  $GUEST_TRIGGER_CHANGE
  # (no pathname expansion of the trigger's glob)
  set -f; $GUEST_TRIGGER_SEAT; set +f
  "$@"
  $bb sleep 2
  kill "$mon" "$mon_seat"
  $bb cat /run/monitor.txt
  echo "=== monitor-seat"
  $bb cat /run/monitor-seat.txt
  # OPTIONS+="watch" (60-block.rules): a writer closes the watched vda1, then the whole disk, as
  # mkfs or a partitioning tool leaves them (opened for writing, nothing written): what a block
  # monitor receives after each (vda's partition table re-read, or changes written for it).
  echo "=== watch"
  $udevadm monitor --udev --subsystem-match=block >/run/monitor-watch.txt 2>&1 &
  mon=$!
  $bb sleep 2
  : >>/dev/vda1
  $bb sleep 2
  "$@"
  : >>/dev/vda
  $bb sleep 2
  "$@"
  $bb sleep 1
  kill "$mon"
  $bb cat /run/monitor-watch.txt
  echo "=== end"
} >"$out" 2>&1
