#!/bin/sh
# Runs every fuzz target (Bazel tag hotring_fuzz; see testing/fuzz/fuzz.bzl) for a while on its
# seed corpus, one after the other in one process each (one core), with clang-16's libFuzzer + ASan + UBSan
# (--config=fuzz). New inputs go to a scratch directory, never into the repository's corpus.
# A crash, a hang or a broken property fails the run and prints the input (base64) to reproduce
# with `bazel run //testing/fuzz:<target> -- FILE` in any build.
#
#   testing/run_fuzz.sh                 30 s per target (CI)
#   FUZZ_SECONDS=600 testing/run_fuzz.sh  longer runs
#   FUZZ_RUNS=10000000 testing/run_fuzz.sh  a number of executions instead of a time
#   testing/run_fuzz.sh //testing/fuzz:wire_fuzz   only these targets
#
# Prints one line per target, then "fuzz: N targets, N failed".
set -u
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
runs=${FUZZ_RUNS:-}
if [ $# -gt 0 ]; then
  targets="$*"
else
  targets=$(bazel query --noshow_progress 'attr(tags, "\bhotring_fuzz\b", //...)' 2>/dev/null) || {
    echo "fuzz: cannot list the fuzz targets" >&2
    exit 1
  }
fi
# shellcheck disable=SC2086
bazel build --config=fuzz $targets || { echo "fuzz: build failed"; exit 1; }
bin=$(bazel info --config=fuzz bazel-bin 2>/dev/null)
work=$(mktemp -d /tmp/hotring-fuzz.XXXXXX)
if [ -n "$runs" ]; then limit="-runs=$runs"; else limit="-max_total_time=$seconds"; fi
count=0
failed=0
for target in $targets; do
  pkg=${target#//}
  pkg=${pkg%%:*}
  name=${target##*:}
  corpus=$pkg/corpus/$name
  mkdir -p "$work/$name"
  log=$work/$name.log
  count=$((count + 1))
  # -timeout: one input taking over 10 s is a hang. -rss_limit_mb: a leak or a blow-up.
  "$bin/$pkg/$name" "$limit" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/$name-" "$work/$name" "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  new=$(find "$work/$name" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz: $name ok: ${execs:-?} runs (${speed:-?}/s), ${cov:-cov: ?}, $new new inputs"
  else
    failed=$((failed + 1))
    echo "fuzz: $name FAILED (exit $rc) after ${execs:-?} runs; log $log"
    grep -E 'ERROR|property broken|SUMMARY|Test unit written' "$log" | head -n 20
    for artifact in "$work/$name"-*; do
      [ -f "$artifact" ] || continue
      echo "fuzz: input $artifact (base64):"
      base64 -w 0 "$artifact" | head -c 20000
      echo
    done
  fi
done
echo "fuzz: $count targets, $failed failed (work files in $work)"
[ "$failed" -eq 0 ]
