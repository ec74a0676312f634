#!/bin/sh
# The board's hotplug handler under test: it refuses serial ports (exit 3), accepts the rest.
case "$1" in
  tty) exit 3 ;;
esac
exit 0
