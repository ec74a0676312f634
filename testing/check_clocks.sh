#!/bin/sh
# The daemon's timeouts and deadlines run on CLOCK_MONOTONIC (core/clock.h, io_uring timeouts)
# or CLOCK_BOOTTIME, never on the realtime clock: setting the date (hwclock, NTP, a user) must
# change nothing about when an event times out, a reorder gap is given up or a child is killed.
# This check fails when product code (not tests, not benchmarks) reads the realtime clock or
# waits on it (Abseil's Mutex/CondVar/Notification timeouts count: this Abseil turns them into
# realtime deadlines). A use that truly needs the date says so on its line with "realtime-ok: WHY".
#
#   sh testing/check_clocks.sh        (testing/run_tests.sh runs it)
set -u
cd "$(dirname "$0")/.."
pattern='absl::Now\(|GetCurrentTimeNanos|CLOCK_REALTIME|gettimeofday|system_clock|[^_a-z]time\((nullptr|NULL|0)\)|IORING_TIMEOUT_REALTIME|(WaitForNotification|Await|LockWhen|Wait)With(Timeout|Deadline)\(|timerfd_create\(CLOCK_REALTIME'
found=$(grep -rnE "$pattern" --include='*.cc' --include='*.h' core io hotplug ipc main.cc |
  grep -vE '_test\.cc:|/bench[^/]*\.(cc|h):|/bench/|realtime-ok:')
if [ -n "$found" ]; then
  echo "check_clocks: product code uses the realtime clock (use core/clock.h's MonoNow):"
  echo "$found"
  exit 1
fi
echo "check_clocks: no realtime clock in product code"
