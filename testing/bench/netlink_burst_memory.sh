#!/bin/bash
# The daemon's memory with kernel uevents on: idle after start-up, peak (VmHWM) over a burst of
# N kernel-format uevents injected on netlink group 1 as fast as one sender can, and idle again
# after it; checks the burst was lossless (every event received and handled, no overrun).
# Runs in a private network namespace (the events never leave it). Needs root and python3.
# `hotring bench memory` is the same through the control socket.
#
# usage: testing/bench/netlink_burst_memory.sh HOTRING [EVENTS]
set -euo pipefail
hotring="$(readlink -f "$1")"
events="${2:-100000}"
if [ -z "${HOTRING_BENCH_IN_NETNS:-}" ]; then
  export HOTRING_BENCH_IN_NETNS=1
  exec unshare --net -- "$0" "$hotring" "$events"
fi
dir="$(mktemp -d)"
trap 'kill $daemon 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
socket="@hotring-nlmem-$$"
"$hotring" daemon --socket "$socket" --netlink-trust-userspace --seqnum-file '' \
  --expect-seqnum 1 --config /dev/null --dev-root "$dir" --no-modules --log-level warning \
  2>"$dir/log" &
daemon=$!
until "$hotring" control status --socket "$socket" --timeout 1 >/dev/null 2>&1; do sleep 0.1; done
mem() {
  printf '%-22s rss %5s KiB  anon %5s KiB  peak %5s KiB\n' "$1" \
    "$(awk '/^Rss:/{print $2}' /proc/$daemon/smaps_rollup)" \
    "$(awk '/^Anonymous:/{print $2}' /proc/$daemon/smaps_rollup)" \
    "$(awk '/^VmHWM:/{print $2}' /proc/$daemon/status)"
}
sleep 4
mem "idle after start-up"
python3 - "$events" <<'PY'
import socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
s.bind((0, 0))
for seq in range(1, int(sys.argv[1]) + 1):
    dev = "/devices/virtual/hotring_bench/dev%d" % seq
    s.sendto(("add@%s\0ACTION=add\0DEVPATH=%s\0SUBSYSTEM=bench\0SEQNUM=%d\0" % (dev, dev, seq)).encode(), (0, 1))
PY
"$hotring" settle --socket "$socket" --timeout 600 >/dev/null
mem "burst settled"
sleep 4
mem "idle after the burst"
"$hotring" control status --socket "$socket" | grep -E '^(received|handled|netlink_received|netlink_overruns|resyncs|dropped_[a-z_]*)[:= ]' | grep -v ' 0$' | tr '\n' ' '
echo
