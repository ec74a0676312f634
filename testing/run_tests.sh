#!/bin/sh
# Builds hotring and runs every test twice: the normal build (followed by kmod 30's own
# modprobe fixtures and the side-by-side comparisons with Debian's modprobe, testing/kmod/) and
# the address+undefined sanitizer build; then the tests tagged `tsan` (those with a second
# thread) under the thread sanitizer, the example consumer workspace
# (testing/example_consumer), the core, io and hotplug unit tests on aarch64 in qemu
# (testing/arm/run_arm_tests.sh), and every fuzz target for FUZZ_SECONDS (default 30; 0 skips)
# on its corpus (testing/run_fuzz.sh). Prints one closing line
# "tests: N passed, N skipped, N failed" (GoogleTest cases, an sh_test as one, and one per kmod
# comparison). A skip is no pass: a GTEST_SKIP case, a test that cannot run in a sanitizer
# build, a kmod suite that cannot run here (without root, kmod or its source package).
set -u
cd "$(dirname "$0")/.."
status=0
# Every step that fails is named again just above the closing line, so that the end of a long
# log says what went wrong.
failed_steps=""
step_failed() {
  status=1
  failed_steps="$failed_steps $1"
}
bazel build //:hotring || exit 1
sh testing/check_clocks.sh || step_failed check_clocks
python3 testing/check_layout.py || step_failed check_layout
file -L "$(bazel info bazel-bin 2>/dev/null)/hotring" | grep -q 'statically linked' || { echo "hotring is not static" >&2; step_failed static; }
bazel test //... || step_failed "bazel-test"
passed=0
skipped=0
failed=0
count() {
  # Every case of every test.xml (arguments: the config whose test logs to count; the tsan
  # config has its own tree). GoogleTest writes one <testcase> per case: skipped when
  # result="skipped" (GTEST_SKIP) or status="notrun" (DISABLED_), failed with a <failure>
  # (one per failed assertion, so cases are counted, not failures). Bazel writes the file of a
  # test that wrote none (an sh_test, a crashed or timed-out binary): one case, failed with an
  # <error>. An sh_test that skips writes its own, with a skipped case (testing/skip_test.sh).
  # An unreadable file counts as one failed case.
  set -- $(find -L "$(bazel info "$@" bazel-testlogs 2>/dev/null)/" -name test.xml 2>/dev/null |
    python3 -c '
import sys
import xml.etree.ElementTree as ET
counts = {"passed": 0, "skipped": 0, "failed": 0}
for path in sys.stdin.read().splitlines():
    try:
        cases = list(ET.parse(path).getroot().iter("testcase"))
    except (ET.ParseError, OSError):
        counts["failed"] += 1
        continue
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif (case.get("result") == "skipped" or case.get("status") == "notrun"
              or case.find("skipped") is not None):
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
print(counts["passed"], counts["skipped"], counts["failed"])
')
  passed=$((passed + ${1:-0}))
  skipped=$((skipped + ${2:-0}))
  failed=$((failed + ${3:-1}))
}
count
# kmod 30's own test fixtures (its source package, fetched once into a cache outside the tree)
# and `modprobe -c` / damaged indexes, each run by Debian's modprobe and by hotring in a chroot
# (testing/kmod/*.sh, docs/architecture.md). Their closing lines count: "N agree, N differ";
# exit status 77 is a skip, printed and counted, never a silent pass. They run here, while
# bazel-bin/hotring is still the plain static build (the sanitizer builds replace it).
for kmod_suite in run_kmod_fixtures.sh compare_modprobe.sh; do
  kmod_log=$(mktemp)
  sh "testing/kmod/$kmod_suite" --hotring "$(bazel info bazel-bin 2>/dev/null)/hotring" >"$kmod_log" 2>&1
  kmod_status=$?
  kmod_line=$(tail -n 1 "$kmod_log")
  if [ "$kmod_status" = 77 ]; then
    echo "$kmod_line"
    skipped=$((skipped + 1))
  else
    # The rows that disagree (with their outputs), and the closing line.
    grep -v -e '| agree |$' -e '^| --- |' -e '^| kmod test |' -e '^| part |' "$kmod_log"
    kmod_agree=$(echo "$kmod_line" | sed -n 's/.*: \([0-9]*\) agree.*/\1/p')
    kmod_differ=$(echo "$kmod_line" | sed -n 's/.*agree, \([0-9]*\) differ.*/\1/p')
    passed=$((passed + ${kmod_agree:-0}))
    failed=$((failed + ${kmod_differ:-1}))
    [ "$kmod_status" = 0 ] || step_failed "$kmod_suite"
  fi
  rm -f "$kmod_log"
done
bazel test --config=asan //... || step_failed "bazel-test-asan"
count
bazel test --config=tsan --test_tag_filters=tsan --build_tests_only //... || step_failed "bazel-test-tsan"
count --config=tsan
# The example consumer: a separate workspace that tests device rules through @hotring's
# hotring_device_test and fixture library (docs/device-tests.md), in Bazel's sandbox as a
# consumer runs it.
cd testing/example_consumer
bazel test --spawn_strategy=linux-sandbox //... || step_failed example_consumer
count
cd ../..

# The core, io and hotplug unit tests again on 64-bit ARM: built by the aarch64 toolchain and
# run in a qemu guest with Debian's arm64 kernel (testing/arm/run_arm_tests.sh); ARM_TESTS=0
# skips it, ARM_TEST_TARGETS="LABEL..." chooses others ("//core/... //io/... //hotplug/..." for
# all of them: longer than CI should wait under TCG). Its GoogleTest cases count in the
# closing line. Opt-in, since each takes minutes of TCG: ARM_ARCHES="aarch64 armhf" runs the
# same tests on 32-bit ARM too (qemu-system-arm), and ARM_BOOT=1 the boot test on aarch64
# (run_arm_tests.sh --boot: hotring as /init of an initramfs on qemu's virt machine).
ARM_TEST_TARGETS=${ARM_TEST_TARGETS:-"//core/... //io/... //hotplug:reorderer_test //hotplug:scheduler_test //hotplug:event_parser_test //hotplug:wire_test //hotplug/daemon:daemon_test //hotplug/probe:fs_probe_test //hotplug:handler_test //hotplug/rules:engine_test"}
if [ "${ARM_TESTS:-1}" != 0 ]; then
  for arm_arch in ${ARM_ARCHES:-aarch64}; do
    arm_log=$(mktemp)
    { sh testing/arm/run_arm_tests.sh --arch "$arm_arch" ${ARM_TEST_TARGETS:-}; echo "arm-exit $?"; } 2>&1 | tee "$arm_log"
    arm_line=$(grep "^arm tests ($arm_arch): " "$arm_log" | tail -n 1)
    arm_passed=$(echo "$arm_line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
    arm_skipped=$(echo "$arm_line" | sed -n 's/.* \([0-9]*\) skipped,.*/\1/p')
    arm_failed=$(echo "$arm_line" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
    passed=$((passed + ${arm_passed:-0}))
    skipped=$((skipped + ${arm_skipped:-0}))
    failed=$((failed + ${arm_failed:-1}))
    grep -q '^arm-exit 0$' "$arm_log" || step_failed "arm-$arm_arch"
    rm -f "$arm_log"
  done
fi
if [ "${ARM_BOOT:-0}" != 0 ]; then
  sh testing/arm/run_arm_tests.sh --arch aarch64 --boot --timeout 1200 || step_failed arm-boot
fi
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
  sh testing/run_fuzz.sh || step_failed fuzz
fi
[ -z "$failed_steps" ] || echo "failed steps:$failed_steps"
echo "tests: $passed passed, $skipped skipped, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
