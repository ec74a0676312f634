# Sourced by shell tests that cannot run in some builds (a sanitizer build's hotring is not
# static): `skip_test NAME REASON` says so and exits 0. Under `bazel test` it also writes the
# test's test.xml ($XML_OUTPUT_FILE) with one skipped case, so that the skip is counted as one
# (testing/run_tests.sh) and not as a pass; Bazel writes that file only for a test that did not.
skip_test() {
  echo "$1: SKIPPED: $2"
  if [ -n "${XML_OUTPUT_FILE:-}" ]; then
    # The reason goes into an attribute: no markup characters in it.
    reason=$(printf '%s' "$2" | tr '<>&"' '____')
    cat >"$XML_OUTPUT_FILE" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="0" errors="0" skipped="1">
  <testsuite name="$1" tests="1" failures="0" errors="0" skipped="1">
    <testcase name="$1" status="run" result="skipped"><skipped message="$reason"/></testcase>
  </testsuite>
</testsuites>
XML
  fi
  exit 0
}
