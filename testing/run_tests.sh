#!/bin/sh
# Builds hotring and runs every test twice: the normal build and the address+undefined
# sanitizer build; then the tests tagged `tsan` (those with a second thread) under the thread
# sanitizer, the example consumer workspace (testing/example_consumer), and every fuzz target
# for FUZZ_SECONDS (default 30; 0 skips) on its corpus (testing/run_fuzz.sh). Prints one
# closing line "tests: N passed, N failed" (GoogleTest cases).
set -u
cd "$(dirname "$0")/.."
status=0
bazel build //:hotring || exit 1
sh testing/check_clocks.sh || status=1
file -L "$(bazel info bazel-bin 2>/dev/null)/hotring" | grep -q 'statically linked' || { echo "hotring is not static" >&2; status=1; }
bazel test //... || status=1
passed=0
failed=0
count() {
  # Each test.xml lists one <testcase> per GoogleTest case and one <failure> per failed one.
  # Arguments: the config whose test logs to count (the tsan config has its own tree).
  for xml in $(find -L "$(bazel info "$@" bazel-testlogs 2>/dev/null)/" -name test.xml 2>/dev/null); do
    c=$(grep -o '<testcase ' "$xml" | wc -l)
    f=$(grep -c '<failure' "$xml")
    passed=$((passed + c - f))
    failed=$((failed + f))
  done
}
count
bazel test --config=asan //... || status=1
count
bazel test --config=tsan --test_tag_filters=tsan --build_tests_only //... || status=1
count --config=tsan
# The example consumer: a separate workspace that tests device rules through @hotring's
# hotring_device_test and fixture library (docs/device-tests.md).
cd testing/example_consumer
bazel test //... || status=1
count
cd ../..
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then
  sh testing/run_fuzz.sh || status=1
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
