#!/bin/sh
# init-top script of Debian's comparison image: runs after initramfs-tools' udev script
# (systemd-udevd started, `udevadm trigger`, `udevadm settle`), dumps, and powers off. The
# device manager's udevadm triggers and settles (hotring's where its drop-in replaced udevd);
# Debian's udevadm, kept apart by the tools archive, reads the database and monitors.
[ "$1" = prereqs ] && exit 0
[ -x /usr/lib/guest/udevadm ] && export GUEST_UDEVADM=/usr/lib/guest/udevadm
GUEST_TRIGGER_SEAT="udevadm trigger --action=change --subsystem-match=input --sysname-match=input*" \
  GUEST_TRIGGER_CHANGE="udevadm trigger --action=change --subsystem-match=block --sysname-match=vda1" \
  sh /guest_dump.sh udevadm settle
echo o >/proc/sysrq-trigger
sleep 30
