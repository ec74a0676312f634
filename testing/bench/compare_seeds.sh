#!/usr/bin/env bash
# Runs the IPC seed programs and hotring's bench commands side by side and prints a table of
# medians with the ratio ours/seed.
#
# The seed programs (the 2010 datagram select() test, pmsg, and the SEQPACKET server/client of
# the kdbus thread) are not part of this repository: they are cut out of the seed text files at
# run time into a temporary directory and compiled there with cc/c++.
#
# Every figure is taken with the same settings and the same CPU placement for seed and ours
# ("same": every process on CPU 0; "split": server on CPU 0, clients on CPU 1), interleaved
# (seed, ours, ours, seed, ...) so that drift in the machine's load hits both alike, several
# times; the table shows medians. Two more rows set ours against the floor of a sync round trip
# on one CPU without the reactor (testing/bench/uds_floor.c: a blocking write/read pair, and raw
# liburing with the send linked to the receive).
#
# usage: testing/bench/compare_seeds.sh [--seeds DIR] [--hotring BIN] [--runs N] [--quick]
#                                       [--only uds|sysv|dgram] [--sysv-seconds T]
#                                       [--loops-same N] [--loops-split N] [--raw FILE]
#   --seeds DIR     where the seed text files are (default: ../shared/seeds from the repo root)
#   --hotring BIN   the hotring binary (default: build //:hotring with bazel; the output base
#                   can be chosen with BAZEL_OUTPUT_BASE). Any binary that takes
#                   `bench <name> ...` works, e.g. bazel-bin/ipc/ipc_bench.
#   --runs N        repetitions of every figure (default 5)
#   --quick         3 runs and a fifth of the loops (a smoke test, not a measurement)
#   --raw FILE      also write every single measurement to FILE
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SEEDS="$ROOT/../shared/seeds"
HOTRING=""
RUNS=5
ONLY=""
SYSV_SECONDS=3
LOOPS_SAME=100000
LOOPS_SPLIT=5000
SIZE=4096
RAW=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) SEEDS="$2"; shift 2 ;;
    --hotring) HOTRING="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --quick) RUNS=3; LOOPS_SAME=20000; LOOPS_SPLIT=1000; SYSV_SECONDS=1; shift ;;
    --only) ONLY="$2"; shift 2 ;;
    --sysv-seconds) SYSV_SECONDS="$2"; shift 2 ;;
    --loops-same) LOOPS_SAME="$2"; shift 2 ;;
    --loops-split) LOOPS_SPLIT="$2"; shift 2 ;;
    --raw) RAW="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_seeds.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "compare_seeds.sh: $*" >&2; exit 1; }
want() { [[ -z "$ONLY" || "$ONLY" == "$1" ]]; }

WORK="$(mktemp -d /tmp/hotring-seeds.XXXXXX)"
SEED_PIDS=()
cleanup() {
  for pid in "${SEED_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the seed programs and ours ----

# shellcheck source=testing/bench/seed_programs.sh
source "$ROOT/testing/bench/seed_programs.sh"

# ---- measuring ----

declare -A SAMPLES  # key -> space-separated values

record() {  # key value
  SAMPLES["$1"]+="$2 "
  [[ -n "$RAW" ]] && echo "$1 $2" >>"$RAW"
  return 0
}

# The best sample: the smallest for times (best=min), the largest for rates (best=max).
best() {  # values min|max
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | if [[ "$2" == min ]]; then head -n1; else tail -n1; fi
}

median() {
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
                              else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

now_ns() { date +%s%N; }

# Waits until the seed server listens on its abstract socket (Flags 00010000 = listening; the
# seed binds the whole sun_path, so the name is followed by NUL bytes).
wait_for_seed_server() {
  for _ in $(seq 500); do
    if awk '$4 == "00010000" && index($NF, "@udsbench.socket") == 1 { found = 1 } END { exit !found }' \
        /proc/net/unix; then
      return 0
    fi
    sleep 0.01
  done
  die "the seed server never listened on @udsbench.socket"
}

# Waits until `count` clients are connected to the seed server (their server-side sockets show
# up with the server's name in state 03).
wait_for_seed_clients() {
  for _ in $(seq 500); do
    if awk -v n="$1" '$6 == "03" && index($NF, "@udsbench.socket") == 1 { c++ } END { exit !(c >= n) }' \
        /proc/net/unix; then
      return 0
    fi
    sleep 0.01
  done
  die "the seed client never connected"
}

# The seed client's line "%f s, ..." -> seconds. Sets VALUE to the caller's (client 1's)
# seconds. Not run in a subshell, so that cleanup knows the pids.
#
# In relay ("dbus") mode the seed server gives the caller role to the first client to connect,
# and exits when the second one leaves. The caller is started first and the echo peer only once
# the caller is connected; the echo peer is given more loops than the caller can send, so it is
# still there when the caller finishes (the seed's async caller sends more than it counts) and
# simply fails when the server goes away afterwards. Otherwise the caller races the server's
# exit and dies with ECONNRESET before printing its line.
seed_uds() {  # mode(single|dbus) calls(sync|async) loops server_cpu client_cpu
  local mode=$1 calls=$2 loops=$3 scpu=$4 ccpu=$5
  rm -f "$WORK"/client*.out
  taskset -c "$scpu" "$WORK/server" "$mode" >"$WORK/server.out" 2>&1 &
  local spid=$!
  SEED_PIDS+=("$spid")
  wait_for_seed_server
  timeout 600 taskset -c "$ccpu" "$WORK/client" "$calls" "$SIZE" "$loops" >"$WORK/client1.out" 2>&1 &
  local caller=$!
  SEED_PIDS+=("$caller")
  local echo_pid=""
  if [[ "$mode" == dbus ]]; then
    wait_for_seed_clients 1
    timeout 600 taskset -c "$ccpu" "$WORK/client" "$calls" "$SIZE" $((2 * loops + 10000)) \
      >"$WORK/client2.out" 2>&1 &
    echo_pid=$!
    SEED_PIDS+=("$echo_pid")
  fi
  wait "$caller" || die "seed client failed: $(cat "$WORK/client1.out")"
  timeout 10 tail --pid="$spid" -f /dev/null || kill -9 "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  if [[ -n "$echo_pid" ]]; then
    timeout 10 tail --pid="$echo_pid" -f /dev/null || kill -9 "$echo_pid" 2>/dev/null || true
    wait "$echo_pid" 2>/dev/null || true
  fi
  grep -q "this is client 1" "$WORK/client1.out" ||
    die "the first seed client did not get the caller role: $(cat "$WORK/client1.out")"
  VALUE=$(awk '/ us\/msg/ { print $1 }' "$WORK/client1.out")
  [[ -n "$VALUE" ]] || die "no timing from the seed client: $(cat "$WORK/client1.out")"
}

ours_uds() {  # mode(single|relay) calls loops server_cpu client_cpu
  local out
  out=$(timeout 600 "$HOTRING" bench uds --mode "$1" "--$2" --size "$SIZE" --loops "$3" \
        --server-cpu "$4" --client-cpu "$5") || die "hotring bench uds failed: $out"
  awk '/ us\/msg/ { print $1 }' <<<"$out"
}

measure_uds() {  # run mode calls placement
  local run=$1 mode=$2 calls=$3 placement=$4 scpu ccpu loops seedmode
  scpu=0
  if [[ "$placement" == same ]]; then ccpu=0; loops=$LOOPS_SAME; else ccpu=1; loops=$LOOPS_SPLIT; fi
  # Pipelined calls take far fewer microseconds each: same loops either way.
  [[ "$calls" == async ]] && loops=$LOOPS_SAME
  seedmode=$mode
  [[ "$mode" == relay ]] && seedmode=dbus
  local key="uds|$mode|$calls|$placement|$loops" s o
  if (( run % 2 )); then
    seed_uds "$seedmode" "$calls" "$loops" "$scpu" "$ccpu"
    s=$VALUE
    o=$(ours_uds "$mode" "$calls" "$loops" "$scpu" "$ccpu")
  else
    o=$(ours_uds "$mode" "$calls" "$loops" "$scpu" "$ccpu")
    seed_uds "$seedmode" "$calls" "$loops" "$scpu" "$ccpu"
    s=$VALUE
  fi
  record "$key|seed" "$s"
  record "$key|ours" "$o"
}

# The floor of a sync round trip on CPU 0 without the reactor (testing/bench/uds_floor.c): a
# blocking write/read pair, and raw liburing with the send linked to the receive as ours does.
measure_floor() {  # run
  local run=$1 f key b u o
  [[ -x "$WORK/uds_floor" ]] || return 0
  key="floor|$LOOPS_SAME"
  f() { "$WORK/uds_floor" "$1" "$SIZE" "$LOOPS_SAME" | awk '{ printf "%.6f", $2 * '"$LOOPS_SAME"' / 1e6 }'; }
  if (( run % 2 )); then
    b=$(f blocking); u=$(f uring); o=$(ours_uds single sync "$LOOPS_SAME" 0 0)
  else
    o=$(ours_uds single sync "$LOOPS_SAME" 0 0); u=$(f uring); b=$(f blocking)
  fi
  record "$key|blocking" "$b"
  record "$key|uring" "$u"
  record "$key|ours" "$o"
}

measure_sysv() {  # run queues
  local run=$1 q=$2 s o key="sysv|$2"
  local seed_cmd=("$WORK/pmsg" "$q" "$SYSV_SECONDS")
  local ours_cmd=("$HOTRING" bench sysv --queues "$q" --seconds "$SYSV_SECONDS")
  if (( run % 2 )); then
    s=$("${seed_cmd[@]}" | awk '/^Total:/ { print $2 }')
    o=$("${ours_cmd[@]}" | awk '/^Total:/ { print $2 }')
  else
    o=$("${ours_cmd[@]}" | awk '/^Total:/ { print $2 }')
    s=$("${seed_cmd[@]}" | awk '/^Total:/ { print $2 }')
  fi
  [[ -n "$s" && -n "$o" ]] || die "sysv run produced no total"
  record "$key|seed" "$s"
  record "$key|ours" "$o"
}

time_ms() {  # command... -> wall milliseconds
  local t0 t1
  t0=$(now_ns)
  "$@" >/dev/null 2>&1 || die "failed: $*"
  t1=$(now_ns)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'
}

# The seed's select() time, precisely: the program prints whole seconds, so an LD_PRELOAD shim
# of ours (select_timer.c) times its select() call; nothing else in it changes.
seed_select_ms() {  # pin... command...
  rm -f "$WORK/select.out"
  SELECT_TIMER_OUT="$WORK/select.out" LD_PRELOAD="$WORK/select_timer.so" "$@" >/dev/null 2>&1 ||
    die "failed: $*"
  awk '/^select_ns / { v = $2 } END { if (v == "") exit 1; printf "%.3f", v / 1e6 }' \
    "$WORK/select.out" || die "the seed's select() was not timed"
}

json_ms() {  # json field
  sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" <<<"$1" | awk '{ printf "%.3f", $1 * 1000 }'
}

measure_dgram() {  # run connected|unconnected placement(same|free)
  local run=$1 conn=$2 placement=$3 pin=() s o key="dgram|$2|$3" json
  [[ "$placement" == same ]] && pin=(taskset -c 0)
  local seed_whole=("${pin[@]}" "$WORK/dgram" "$conn")
  local ours_whole=("${pin[@]}" "$HOTRING" bench dgram-fanin "--$conn" --waiter uring)
  # Whole programs, wall clock: everything each does (set-up, fork, exchange, tear-down).
  if (( run % 2 )); then
    s=$(time_ms "${seed_whole[@]}"); o=$(time_ms "${ours_whole[@]}")
  else
    o=$(time_ms "${ours_whole[@]}"); s=$(time_ms "${seed_whole[@]}")
  fi
  record "$key|seed" "$s"
  record "$key|ours" "$o"
  # The waits alone: the seed's select() against our io_uring wait (our own figure).
  if (( run % 2 )); then
    s=$(seed_select_ms "${seed_whole[@]}"); json=$("${ours_whole[@]}" --json)
  else
    json=$("${ours_whole[@]}" --json); s=$(seed_select_ms "${seed_whole[@]}")
  fi
  record "$key|seed_wait" "$s"
  record "$key|ours_wait" "$(json_ms "$json" uring_wait_s)"
  # Our own split of the same scenario: io_uring and select() waits in one run.
  json=$("${pin[@]}" "$HOTRING" bench dgram-fanin "--$conn" --waiter both --json)
  record "$key|uring_wait" "$(json_ms "$json" uring_wait_s)"
  record "$key|select_wait" "$(json_ms "$json" select_wait_s)"
}

# ---- main ----

seed_programs_build "$SEEDS" "$WORK" || die "cannot build the seed programs"
hotring_binary "$ROOT" || die "cannot build the benchmarks"
[[ -x "$HOTRING" ]] || die "not executable: $HOTRING"
NCPU=$(nproc)
[[ -n "$RAW" ]] && : >"$RAW"
cc -O2 -shared -fPIC -o "$WORK/select_timer.so" "$ROOT/testing/bench/select_timer.c" -ldl ||
  die "cannot build the select() timer"
# Needs liburing-dev; without it the floor rows are left out.
cc -O2 -o "$WORK/uds_floor" "$ROOT/testing/bench/uds_floor.c" -luring 2>/dev/null ||
  echo "compare_seeds.sh: cannot build uds_floor (liburing-dev missing?); no floor rows" >&2

PLACEMENTS=(same)
(( NCPU >= 2 )) && PLACEMENTS+=(split)
SYSV_QUEUES=(1)
(( NCPU >= 2 )) && SYSV_QUEUES+=(2)

LOAD_START=$(cut -d' ' -f1 /proc/loadavg)
echo "seeds: $SEEDS; ours: $HOTRING; $RUNS runs; $NCPU CPUs; $(uname -r)" >&2
for run in $(seq "$RUNS"); do
  echo "run $run/$RUNS" >&2
  if want uds; then
    for placement in "${PLACEMENTS[@]}"; do
      for mode in single relay; do
        for calls in sync async; do
          measure_uds "$run" "$mode" "$calls" "$placement"
        done
      done
    done
    measure_floor "$run"
  fi
  if want sysv; then
    for q in "${SYSV_QUEUES[@]}"; do measure_sysv "$run" "$q"; done
  fi
  if want dgram; then
    for conn in connected unconnected; do
      for placement in same free; do measure_dgram "$run" "$conn" "$placement"; done
    done
  fi
done

# ---- table ----

# The median over runs of ours/seed, each run's pair taken back to back: slow drift in the
# machine's load cancels out of each pair, where it would not between two separate medians.
# `invert` for figures recorded as times but compared as rates (ratio seed/ours).
pair_ratio() {  # seed_values ours_values [invert]
  paste <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') |
    awk -v inv="${3:-}" '{ if ($1 > 0 && $2 > 0) print (inv == "invert") ? $1 / $2 : $2 / $1 }' |
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
                                         else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
verdict() {  # ratio op bound
  awk -v r="$1" -v op="$2" -v b="$3" 'BEGIN { ok = (op == "<=") ? (r <= b) : (r >= b); print ok ? "yes" : "NO" }'
}

placement_text() {
  case "$1" in
    same) echo "all on CPU 0" ;;
    split) echo "server CPU 0, clients CPU 1" ;;
    free) echo "unpinned" ;;
  esac
}

echo
echo "Medians of $RUNS interleaved runs, best run in parentheses; ours/seed is the median of the"
echo "per-run ratios (seed and ours back to back). $NCPU CPUs, $(uname -r);"
echo "load average $LOAD_START at the start, $(cut -d' ' -f1 /proc/loadavg) at the end."
echo
echo "| benchmark | placement | metric | seed | ours | ours/seed | goal | met |"
echo "| --- | --- | --- | ---: | ---: | ---: | --- | --- |"
if want uds; then
  for placement in "${PLACEMENTS[@]}"; do
    for mode in single relay; do
      for calls in sync async; do
        loops=$LOOPS_SAME
        [[ "$placement" == split && "$calls" == sync ]] && loops=$LOOPS_SPLIT
        key="uds|$mode|$calls|$placement|$loops"
        s=$(median "${SAMPLES[$key|seed]}")
        o=$(median "${SAMPLES[$key|ours]}")
        sb=$(best "${SAMPLES[$key|seed]}" min)
        ob=$(best "${SAMPLES[$key|ours]}" min)
        if [[ "$calls" == sync ]]; then
          us() { awk -v t="$1" -v n="$loops" 'BEGIN { printf "%.2f", t * 1e6 / n }'; }
          sv=$(us "$s"); ov=$(us "$o")
          r=$(pair_ratio "${SAMPLES[$key|seed]}" "${SAMPLES[$key|ours]}")
          echo "| uds $mode sync ($SIZE B, $loops calls) | $(placement_text "$placement") | us/msg | $sv ($(us "$sb")) | $ov ($(us "$ob")) | $r | <= 1.05 | $(verdict "$r" "<=" 1.05) |"
        else
          rate() { awk -v t="$1" -v n="$loops" 'BEGIN { printf "%.0f", n / t }'; }
          sv=$(rate "$s"); ov=$(rate "$o")
          r=$(pair_ratio "${SAMPLES[$key|seed]}" "${SAMPLES[$key|ours]}" invert)
          echo "| uds $mode async ($SIZE B, $loops calls) | $(placement_text "$placement") | msg/s | $sv ($(rate "$sb")) | $ov ($(rate "$ob")) | $r | >= 1.0 | $(verdict "$r" ">=" 1.0) |"
        fi
      done
    done
  done
fi
if want uds && [[ -x "$WORK/uds_floor" ]]; then
  key="floor|$LOOPS_SAME"
  us() { awk -v t="$1" -v n="$LOOPS_SAME" 'BEGIN { printf "%.2f", t * 1e6 / n }'; }
  o=$(median "${SAMPLES[$key|ours]}")
  for floor in blocking uring; do
    f=$(median "${SAMPLES[$key|$floor]}")
    r=$(pair_ratio "${SAMPLES[$key|$floor]}" "${SAMPLES[$key|ours]}")
    text="blocking write/read pair"
    [[ "$floor" == uring ]] && text="raw liburing, send linked to recv"
    echo "| uds single sync ($SIZE B, $LOOPS_SAME calls) against the floor: $text (uds_floor) | all on CPU 0 | us/msg (floor / ours) | $(us "$f") ($(us "$(best "${SAMPLES[$key|$floor]}" min)")) | $(us "$o") ($(us "$(best "${SAMPLES[$key|ours]}" min)")) | $r | | |"
  done
fi
if want sysv; then
  for q in "${SYSV_QUEUES[@]}"; do
    s=$(median "${SAMPLES[sysv|$q|seed]}")
    o=$(median "${SAMPLES[sysv|$q|ours]}")
    r=$(pair_ratio "${SAMPLES[sysv|$q|seed]}" "${SAMPLES[sysv|$q|ours]}")
    echo "| sysv $q queue(s), ${SYSV_SECONDS} s | pair i on CPU i | total round trips | $s ($(best "${SAMPLES[sysv|$q|seed]}" max)) | $o ($(best "${SAMPLES[sysv|$q|ours]}" max)) | $r | >= 0.95 | $(verdict "$r" ">=" 0.95) |"
  done
fi
if want dgram; then
  for conn in connected unconnected; do
    for placement in same free; do
      key="dgram|$conn|$placement"
      s=$(median "${SAMPLES[$key|seed_wait]}")
      o=$(median "${SAMPLES[$key|ours_wait]}")
      r=$(pair_ratio "${SAMPLES[$key|seed_wait]}" "${SAMPLES[$key|ours_wait]}")
      # Both exchangers run the same loop, so the expected ratio is 1.0 exactly; "no slower" is
      # judged against this machine's run-to-run noise of about 5%.
      echo "| dgram-fanin $conn, 800 clients, 20000 msgs: the wait | $(placement_text "$placement") | ms (seed: select(), ours: io_uring) | $s ($(best "${SAMPLES[$key|seed_wait]}" min)) | $o ($(best "${SAMPLES[$key|ours_wait]}" min)) | $r | <= 1.0 (noise 5%) | $(verdict "$r" "<=" 1.05) |"
    done
  done
  for conn in connected unconnected; do
    for placement in same free; do
      key="dgram|$conn|$placement"
      s=$(median "${SAMPLES[$key|seed]}")
      o=$(median "${SAMPLES[$key|ours]}")
      r=$(pair_ratio "${SAMPLES[$key|seed]}" "${SAMPLES[$key|ours]}")
      echo "| dgram-fanin $conn: whole program, wall clock | $(placement_text "$placement") | ms (seed: select(), ours: io_uring) | $s ($(best "${SAMPLES[$key|seed]}" min)) | $o ($(best "${SAMPLES[$key|ours]}" min)) | $r | | |"
    done
  done
  for conn in connected unconnected; do
    for placement in same free; do
      key="dgram|$conn|$placement"
      u=$(median "${SAMPLES[$key|uring_wait]}")
      sl=$(median "${SAMPLES[$key|select_wait]}")
      r=$(pair_ratio "${SAMPLES[$key|select_wait]}" "${SAMPLES[$key|uring_wait]}")
      echo "| dgram-fanin $conn: our process, wait only, both waiters in one run | $(placement_text "$placement") | ms (select / io_uring) | $sl ($(best "${SAMPLES[$key|select_wait]}" min)) | $u ($(best "${SAMPLES[$key|uring_wait]}" min)) | $r | | |"
    done
  done
fi
