#!/bin/sh
# /init of hotring's comparison image: hotring as the device manager with --udev-compat (and the
# modules of MODALIAS, and the rules of /etc/mdev.conf), a coldplug, then guest_dump.sh.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs -o mode=0755 devtmpfs /dev
mount -t tmpfs -o mode=0755 tmpfs /run
hotring daemon --daemonize --log-kmsg --config /etc/mdev.conf --udev-compat
hotring trigger --action add
hotring settle
GUEST_TRIGGER_SEAT="hotring trigger --action change --subsystem-match input --sysname-match input*" \
  GUEST_TRIGGER_CHANGE="hotring trigger --action change --subsystem-match block --sysname-match vda1" \
  sh /guest_dump.sh hotring settle
hotring control status >/dev/ttyS1 2>&1
echo "=== status end" >/dev/ttyS1
poweroff -f
