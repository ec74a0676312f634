#!/usr/bin/env bash
# Plots `hotring bench sysv` across queue counts, like the chart that came with pmsg: round
# trips per second for 1..N queues, with pmsg itself (built from the seed text at run time) on
# the same machine for reference. Writes the data next to the SVG (FILE.dat).
#
# Needs gnuplot; on Debian: apt-get install gnuplot-nox
#
# usage: testing/bench/plot_sysv.sh [--hotring BIN] [--seeds DIR] [--max-queues N]
#                                   [--seconds T] [--runs R] [--no-pmsg] [--out FILE.svg]
#                                   [--replot]
#   defaults: 8 queues, 3 s per run, 3 runs per point (median), docs/ipc_sysv.svg
#   --replot: draw FILE.svg again from an existing FILE.dat without measuring
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SEEDS="$ROOT/../shared/seeds"
HOTRING=""
MAX_QUEUES=8
SECONDS_PER_RUN=3
RUNS=3
PMSG=1
REPLOT=0
OUT="$ROOT/docs/ipc_sysv.svg"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --hotring) HOTRING="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --max-queues) MAX_QUEUES="$2"; shift 2 ;;
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --no-pmsg) PMSG=0; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --replot) REPLOT=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "plot_sysv.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "plot_sysv.sh: $*" >&2; exit 1; }
command -v gnuplot >/dev/null ||
  die "gnuplot is not installed (Debian: apt-get install gnuplot-nox)"

DATA="${OUT%.svg}.dat"
if (( ! REPLOT )); then
  # shellcheck source=testing/bench/seed_programs.sh
  source "$ROOT/testing/bench/seed_programs.sh"
  WORK="$(mktemp -d /tmp/hotring-plot.XXXXXX)"
  trap 'rm -rf "$WORK"' EXIT
  if (( PMSG )); then
    seed_programs_build "$SEEDS" "$WORK" || die "cannot build pmsg from the seeds"
  fi
  hotring_binary "$ROOT" || die "cannot build the benchmarks"

  median() {
    tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g |
      awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
  }

  NCPU=$(nproc)
  {
    echo "# queues  ours_round_trips_per_s  pmsg_round_trips_per_s  ($(uname -r), $NCPU CPUs, ${SECONDS_PER_RUN} s runs, median of $RUNS, load average $(cut -d" " -f1 /proc/loadavg) at start)"
    for q in $(seq "$MAX_QUEUES"); do
      ours="" seed=""
      for run in $(seq "$RUNS"); do
        echo "queues $q, run $run/$RUNS" >&2
        # Ours reports the rate over its measured window; pmsg only its total over T seconds.
        ours+="$("$HOTRING" bench sysv --queues "$q" --seconds "$SECONDS_PER_RUN" --json |
                 sed -n 's/.*"per_second": \([0-9.e+]*\).*/\1/p') "
        if (( PMSG )); then
          seed+="$("$WORK/pmsg" "$q" "$SECONDS_PER_RUN" |
                   awk -v t="$SECONDS_PER_RUN" '/^Total:/ { printf "%.0f", $2 / t }') "
        fi
      done
      if (( PMSG )); then
        echo "$q $(median "$ours") $(median "$seed")"
      else
        echo "$q $(median "$ours") NaN"
      fi
    done
  } >"$DATA"
fi
[[ -s "$DATA" ]] || die "no data in $DATA"
NCPU=$(sed -n 's/.*, \([0-9]*\) CPUs,.*/\1/p' "$DATA" | head -n1)
KERNEL=$(sed -n 's/^# .*(\([^,]*\), [0-9]* CPUs.*/\1/p' "$DATA" | head -n1)

TITLE="SysV message ping-pong, $KERNEL, $NCPU CPUs"
gnuplot <<GNUPLOT
set terminal svg size 720,420 dynamic font "sans,12"
set output "$OUT"
set title "$TITLE"
set xlabel "queues (2 threads each; pair i pinned to CPU i mod $NCPU)"
set ylabel "round trips per second (both threads' counts)"
set key bottom right box opaque
set grid
set xtics 1
set yrange [0:*]
set format y "%.0s%c"
plot "$DATA" using 1:2 with linespoints lw 2 pt 7 title "hotring bench sysv", \
     "$DATA" using 1:3 with linespoints lw 2 pt 5 dt 2 title "pmsg (seed; pairs >= $NCPU left unpinned)"
GNUPLOT
echo "wrote $OUT and $DATA" >&2
