#!/bin/sh
# Two builds of hotring side by side: runs `DIR/hotring bench ARGS...` for each directory in
# turn (A, B, A, B, ...), ROUNDS times, so that drift in the machine's load hits both alike, and
# prints each run's summary lines (those starting "median", "ratio" or "hotring idle") under a
# label with the load average. A directory holds a `hotring` and the `hotring-bench` beside it
# (`bazel build //:hotring //:hotring-bench`, then copy both out of bazel-bin; a checkout of an
# older commit builds the other).
#
# usage: testing/bench/interleave.sh [--rounds N (default 7)] DIR_A DIR_B -- BENCH ARGS...
#   e.g. testing/bench/interleave.sh /tmp/before /tmp/after -- udev-rules --runs 3
set -eu

rounds=7
if [ "${1:-}" = "--rounds" ]; then
  rounds=$2
  shift 2
fi
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
a=$1
b=$2
shift 3
for dir in "$a" "$b"; do
  [ -x "$dir/hotring" ] && [ -x "$dir/hotring-bench" ] || {
    echo "interleave.sh: $dir needs hotring and hotring-bench" >&2
    exit 2
  }
done

i=1
while [ "$i" -le "$rounds" ]; do
  for dir in "$a" "$b"; do
    echo "== round $i, $dir, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$dir/hotring" bench "$@" 2>&1 | grep -E '^(median|ratio|hotring idle)' || {
      echo "interleave.sh: $dir/hotring bench $*: no summary (failed?)" >&2
      exit 1
    }
  done
  i=$((i + 1))
done
