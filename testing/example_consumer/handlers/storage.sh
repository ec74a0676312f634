#!/bin/sh
# The board's hotplug handler (what `hotring daemon --exec` runs on the board): it accepts disks
# and partitions that have a node, refuses block devices without one (exit 1), and ignores the
# rest. Its exit status and environment end up in the manifest.
case "$1" in
  block)
    [ -n "${DEVNAME:-}" ] || exit 1
    exit 0 ;;
esac
exit 0
