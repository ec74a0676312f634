#!/bin/sh
# hotring's main job on the machine it runs on: build the static binary, check the kernel's
# io_uring, then run hotring for real: a daemon listening to the kernel's uevents (netlink) with
# a handler that logs each event, coldplug over the real /sys with `trigger --action change
# --settle` (change is harmless: the kernel only re-sends each device's uevent), and the
# daemon's status counters. The daemon is stopped before the script ends, whatever happens.
# Then hotring as the device manager of a real boot: an initramfs whose /init is hotring (rules
# from an mdev.conf, drivers loaded in process from MODALIAS) boots Debian's kernel in qemu
# (TCG) on emulated hardware (virtio disk, e1000 and virtio-net NICs, USB keyboard), settles,
# prints its report and powers off (HOTRING_MAIN_BOOT=0 skips this part).
#
# Environment: HOTRING_MAIN_SOCKET (default @hotring-main-<pid>), HOTRING_MAIN_KEEP=1 to keep the
# temporary directory with the handler's and the daemon's logs, BAZEL_OUTPUT_BASE to build in
# another Bazel output base.
set -eu
cd "$(dirname "$0")/.."
bazel() { command bazel ${BAZEL_OUTPUT_BASE:+--output_base="$BAZEL_OUTPUT_BASE"} "$@"; }
bazel build //:hotring
bin="$(bazel info bazel-bin 2>/dev/null)/hotring"
file -L "$bin"
"$bin" --version
"$bin" selfcheck

socket="${HOTRING_MAIN_SOCKET:-@hotring-main-$$}"
work="$(mktemp -d "${TMPDIR:-/tmp}/hotring-main.XXXXXX")"
daemon_pid=""
cleanup() {
  status=$?
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  if [ "${HOTRING_MAIN_KEEP:-0}" = 1 ]; then
    echo "logs kept in $work"
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The handler: one line per event, appended by a single write (so lines of handlers running at
# the same time never mix). The daemon runs it as `handler SUBSYSTEM` with the event's
# variables as its whole environment.
handler="$work/log-event"
cat >"$handler" <<EOF
#!/bin/sh
printf '%s %s %s (%s)\n' "\${SEQNUM:--}" "\${ACTION:-?}" "\${DEVPATH:-?}" "\${1:-?}" >>"$work/events.log"
EOF
chmod 755 "$handler"
if ! "$handler" selftest || [ ! -s "$work/events.log" ]; then
  echo "run_main_job: cannot run a handler from $work (noexec mount?); set TMPDIR" >&2
  exit 1
fi
: >"$work/events.log"

echo "== hotring daemon: kernel uevents on, --exec $handler, socket $socket"
# No polling for the daemon: it writes a newline on fd 3 (--ready-fd) once its sockets are bound
# and it serves, or closes fd 3 without one when it gives up (another daemon on $socket?). A
# watchdog stops a daemon that has said neither after 30 s, which also ends the read.
mkfifo "$work/ready"
"$bin" daemon --socket "$socket" --exec "$handler" --ready-fd 3 3>"$work/ready" 2>"$work/daemon.log" &
daemon_pid=$!
(
  trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
  sleep 30 &
  sleeper=$!
  wait "$sleeper" && kill -TERM "$daemon_pid" 2>/dev/null
) &
watchdog_pid=$!
if ! read -r _ <"$work/ready"; then
  kill "$watchdog_pid" 2>/dev/null || true
  echo "run_main_job: the daemon did not start:" >&2
  cat "$work/daemon.log" >&2
  exit 1
fi
kill "$watchdog_pid" 2>/dev/null || true
wait "$watchdog_pid" 2>/dev/null || true

echo "== hotring trigger --action change --settle"
trigger_status=0
"$bin" trigger --action change --settle --socket "$socket" >"$work/trigger.out" || trigger_status=$?
cat "$work/trigger.out"
triggered=$(sed -n 's/^\([0-9][0-9]*\) triggered.*/\1/p' "$work/trigger.out")

# trigger --settle returned: the daemon has read and handled every uevent the writes made, so
# its netlink counter must already cover what was triggered (more is fine: other devices may
# send events too). Checked below, not waited for.
received=$("$bin" control status --socket "$socket" | sed -n 's/^netlink_received //p')

echo "== hotring control status"
"$bin" control status --socket "$socket"

echo "== stopping the daemon"
"$bin" control exit --socket "$socket" >/dev/null
daemon_status=0
wait "$daemon_pid" || daemon_status=$?
daemon_pid=""
cat "$work/daemon.log"

logged=$(wc -l <"$work/events.log")
echo "== the handler logged $logged events; the first and the last:"
head -n 3 "$work/events.log"
[ "$logged" -gt 6 ] && echo "..."
[ "$logged" -gt 3 ] && tail -n 3 "$work/events.log"

ok=1
# A device that refuses the write is the device's business (trigger printed which and why);
# hotring's job is to handle every uevent that did come.
[ "$trigger_status" -eq 0 ] || echo "run_main_job: warning: trigger exited $trigger_status" >&2
[ "${triggered:-0}" -gt 0 ] || { echo "run_main_job: nothing was triggered" >&2; ok=0; }
[ "$daemon_status" -eq 0 ] || { echo "run_main_job: the daemon exited $daemon_status" >&2; ok=0; }
if [ "${received:-0}" -lt "${triggered:-0}" ]; then
  echo "run_main_job: the daemon received $received kernel uevents for $triggered triggered" >&2
  ok=0
fi
if [ "$logged" -lt "${triggered:-0}" ]; then
  echo "run_main_job: the handler logged $logged events for $triggered triggered" >&2
  ok=0
fi
if [ "$ok" = 1 ]; then
  echo "main job: ok: ${triggered:-0} devices triggered, $received kernel uevents received, $logged handled and logged"
else
  echo "main job: FAILED" >&2
  exit 1
fi

[ "${HOTRING_MAIN_BOOT:-1}" = 0 ] && exit 0
echo "== boot: hotring as /init of an initramfs, Debian's kernel in qemu (TCG)"
version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
if [ -z "$version" ] || [ ! -r "/boot/vmlinuz-$version" ] || ! command -v qemu-system-x86_64 >/dev/null; then
  echo "main job: boot skipped: no Debian kernel or qemu (testing/install_deps.sh installs them)" >&2
  exit 1
fi
sh testing/initramfs/mkimage.sh --hotring "$bin" --out "$work/hotring.img" --kernel-version "$version" \
  --mdev-conf testing/initramfs/mdev.conf
sh testing/initramfs/mkdisk.sh --out "$work/disk.img"
boot_status=0
sh testing/initramfs/qemu_boot.sh --kernel "/boot/vmlinuz-$version" --initrd "$work/hotring.img" \
  --disk "$work/disk.img" --log "$work/console.log" --timeout 360 \
  --append "hotring.test hotring.stat=/dev/vda hotring.settle_timeout=240 hotring.settle_for=SUBSYSTEM=hid" \
  || boot_status=$?
tr -d '\r' <"$work/console.log" | grep -E '^hotring(:| init:|-report: (time|node|net|input|modules))' | cut -c1-400
status_line=$(tr -d '\r' <"$work/console.log" | sed -n 's/^hotring-report: status //p')
boot_received=$(echo " $status_line " | sed -n 's/.* received=\([0-9]*\) .*/\1/p')
boot_handled=$(echo " $status_line " | sed -n 's/.* handled=\([0-9]*\) .*/\1/p')
if [ "$boot_status" -ne 0 ] || [ -z "$boot_received" ] || [ "$boot_received" != "$boot_handled" ]; then
  echo "main job: boot FAILED (qemu $boot_status, received ${boot_received:-?}, handled ${boot_handled:-?}); console:" >&2
  tail -n 20 "$work/console.log" >&2
  exit 1
fi
echo "main job: boot ok: the guest settled $boot_received uevents, all handled"
