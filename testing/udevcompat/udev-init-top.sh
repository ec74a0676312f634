#!/bin/sh
# init-top script of Debian's comparison image: runs after initramfs-tools' udev script
# (systemd-udevd started, `udevadm trigger`, `udevadm settle`), dumps, and powers off.
[ "$1" = prereqs ] && exit 0
GUEST_TRIGGER_SEAT="udevadm trigger --action=change --subsystem-match=input --sysname-match=input*" \
  GUEST_TRIGGER_CHANGE="udevadm trigger --action=change --subsystem-match=block --sysname-match=vda1" \
  sh /guest_dump.sh udevadm settle
echo o >/proc/sysrq-trigger
sleep 30
