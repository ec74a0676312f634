#!/bin/sh
# `hotring bench boot` runs this checkout's bench_boot.sh with the binary itself as the image's
# hotring, and says what to do where there is no checkout; `hotring bench` lists the
# benchmarks (it runs hotring-bench, beside it), and says where they are when hotring-bench is
# not there. (The benchmark itself boots qemu guests for minutes: not run here.)
set -u
hotring="$PWD/$1"
fail=0
check() { if eval "$2"; then echo "PASS: $1"; else echo "FAIL: $1"; fail=1; fi; }

# From the checkout (the runfiles tree has the script at its path).
out=$("$hotring" bench boot --help 2>&1); rc=$?
check "bench boot --help runs bench_boot.sh's help (exit $rc)" '[ $rc = 0 ] && echo "$out" | grep -q "^bench boot: boots the test guest"'

# Elsewhere: a clear error, exit 2.
empty=$(mktemp -d "${TEST_TMPDIR:-/tmp}/nocheckout.XXXXXX")
out=$(cd "$empty" && "$hotring" bench boot --runs 1 2>&1); rc=$?
check "bench boot outside a checkout exits 2 (exit $rc)" '[ $rc = 2 ]'
check "and says to run it from a checkout" 'echo "$out" | grep -q "run it from a hotring checkout"'

# The list, with boot in it; no name is a usage error.
out=$("$hotring" bench 2>&1); rc=$?
check "bench without a name exits 2 (exit $rc)" '[ $rc = 2 ]'
for name in reactor events coldplug startup rules modules memory boot dgram-fanin; do
  check "bench lists $name" 'echo "$out" | grep -q "^  $name\|, $name\|  sysv.*$name"'
done
# A board's binary alone: no benchmarks in it, and it says where they are.
alone=$(mktemp -d "${TEST_TMPDIR:-/tmp}/alone.XXXXXX")
cp "$hotring" "$alone/hotring"
out=$("$alone/hotring" bench events 2>&1); rc=$?
check "bench without hotring-bench beside exits 2 (exit $rc)" '[ $rc = 2 ]'
check "and names hotring-bench" 'echo "$out" | grep -q "bazel build //:hotring-bench"'
exit $fail
