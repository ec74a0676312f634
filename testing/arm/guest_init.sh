#!/bin/busybox sh
# /init of the test guest (run_arm_tests.sh packs it with busybox and the test binaries). Runs
# every test listed in /tests.txt (a runfiles-relative path a line, optionally followed by a
# GoogleTest filter for cases the guest cannot run) as Bazel would: from the runfiles tree, with
# TEST_SRCDIR, TEST_WORKSPACE and a fresh TEST_TMPDIR. Prints one line per
# test on the console, `TEST path PASS|FAIL ...` (a failed test's output follows it, each line
# prefixed by `| `), then one closing `SUMMARY` line, runs the commands of /bench.txt if there
# is one, and powers the guest off.
# The kernel command line's hotring_test_timeout=S bounds each test (default 900 s: TCG runs
# ARM code ten to fifty times slower than the host).
# Its hotring_test_time_scale=N (default 10) becomes HOTRING_TEST_TIME_SCALE, by which the
# tests multiply the deadlines that only guard against a hang (testing::ScaledForEmulation);
# the bounds a test asserts as behaviour stay as they are.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /tmp /run
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ip link set lo up 2>/dev/null
per_test=900
time_scale=10
for word in $(cat /proc/cmdline); do
  case "$word" in
    hotring_test_timeout=*) per_test=${word#*=} ;;
    hotring_test_time_scale=*) time_scale=${word#*=} ;;
  esac
done
export HOTRING_TEST_TIME_SCALE="$time_scale"
echo "RUNNER $(uname -m) $(uname -r) $(nproc) cpu, HOTRING_TEST_TIME_SCALE=$time_scale"
# High memory (32-bit kernels) and what hotring's reactor chose on this kernel.
grep -E '^(MemTotal|HighTotal):' /proc/meminfo | sed 's/^/RUNNER /'
(cd /runfiles/hotring && ./hotring selfcheck 2>&1) | sed 's/^/RUNNER /'
tests=0 failed=0 cases_passed=0 cases_skipped=0 cases_failed=0
while read -r path filter; do
  [ -n "$path" ] || continue
  tests=$((tests + 1))
  tmp=/tmp/t$tests
  mkdir -p "$tmp"
  start=$(cut -d' ' -f1 /proc/uptime)
  status=0
  (cd /runfiles/hotring && TEST_SRCDIR=/runfiles TEST_WORKSPACE=hotring TEST_TMPDIR="$tmp" \
    HOME="$tmp" GTEST_COLOR=no GTEST_FILTER="${filter:-*}" timeout "$per_test" "./$path" >"$tmp.log" 2>&1) || status=$?
  end=$(cut -d' ' -f1 /proc/uptime)
  # GoogleTest's own count of cases: "[  PASSED  ] N tests." (skipped ones not among them),
  # "[  SKIPPED ] N tests, listed below:", "[  FAILED  ] N tests, listed below:"
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$tmp.log" | tail -n 1)
  s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}, listed below.*/\1/p' "$tmp.log" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\}, listed below.*/\1/p' "$tmp.log" | tail -n 1)
  p=${p:-0}
  s=${s:-0}
  f=${f:-0}
  # A crash or a timeout before GoogleTest's summary counts as one failed case.
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  cases_passed=$((cases_passed + p))
  cases_skipped=$((cases_skipped + s))
  cases_failed=$((cases_failed + f))
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  if [ "$status" -eq 0 ]; then
    echo "TEST $path PASS ($p cases, $s skipped, ${secs} s)"
  else
    failed=$((failed + 1))
    echo "TEST $path FAIL (exit $status, $p cases passed, $f failed, ${secs} s)"
    grep -E '^\[  FAILED  \]|Failure|rror' "$tmp.log" | head -n 40 | sed 's/^/| /'
    tail -n 30 "$tmp.log" | sed 's/^/| /'
  fi
  rm -rf "$tmp" "$tmp.log"
done </tests.txt
echo "SUMMARY $tests tests, $failed failed; cases: $cases_passed passed, $cases_skipped skipped, $cases_failed failed"
# run_arm_tests.sh --bench: commands to measure, each line's output prefixed by BENCH.
if [ -s /bench.txt ]; then
  while read -r command; do
    echo "BENCH \$ $command"
    (cd /runfiles/hotring && sh -c "$command" 2>&1 </dev/null) | sed 's/^/BENCH /'
  done </bench.txt
fi
sync
poweroff -f
