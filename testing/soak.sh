#!/bin/bash
# Soak: runs a hotring daemon for N minutes against a mixed load and fails if its memory,
# descriptors or threads grow without bound, or if its counters do not add up.
#
# The load, all at once until the time is up:
#   - kernel-format uevents injected on netlink group 1 inside a private network namespace
#     (they never leave it), SEQNUMs in order with gaps that never fill and duplicates; some
#     events ask the handler to hang (killed at --event-timeout), crash (SIGSEGV) or flood
#     its stdout and stderr;
#   - `hotring send --wait` clients, one after another;
#   - `hotring control reload` and SIGHUP;
#   - monitors that stop reading (a `hotring monitor` whose pipe nobody drains), replaced
#     every minute.
# Every --sample seconds it records the daemon's RSS, anonymous memory, descriptors, threads
# and counters (`control status`) in OUT/samples.tsv. At the end it stops the load, waits for
# the daemon to settle and checks:
#   - received = handled + failed + timed_out, nothing held, queued or running;
#   - every injected SEQNUM that is no duplicate was received, every duplicate dropped as one,
#     every send --wait client was answered;
#   - once the daemon's bounded histories are full (after 5,000 events), the last third's
#     lowest RSS, anonymous memory, descriptor and thread figures are not above the first
#     third's highest (by more than a small margin): flat, not growing.
# Needs root (a network namespace) and python3 (the netlink injector).
#
# usage: testing/soak.sh [--minutes N] [--hotring PATH] [--out DIR] [--sample S] [--rate N]
set -euo pipefail

minutes=30
hotring=""
out=""
sample=10
rate=20  # injected uevents per second
# The daemon's bounded histories grow until full: the timeline (kept small here) and the 4,096
# devices remembered for settle --for. Growth is only judged on samples taken after this many
# events, when both are full.
timeline_keep=1024
steady_after=5000
# Injected SEQNUMs start far above the kernel's: the host's own uevents reach every network
# namespace, and with their lower SEQNUMs they are then dropped as duplicates (and counted)
# instead of moving the daemon's expected SEQNUM under the injected ones.
seqnum_base=1000000000
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --hotring) hotring="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --sample) sample="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^# usage/p' "$0"; exit 0 ;;
    *) echo "soak: unknown argument $1" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "$hotring" ]; then
  hotring="$(cd "$here/.." && bazel info bazel-bin 2>/dev/null)/hotring"
fi
[ -x "$hotring" ] || { echo "soak: no hotring binary at $hotring (bazel build //:hotring)" >&2; exit 2; }
hotring="$(readlink -f "$hotring")"
[ "$(id -u)" = 0 ] || { echo "soak: needs root (a private network namespace)" >&2; exit 2; }
# Debian's python3 first: a version manager's shim costs a second per call on a busy machine.
py="$(command -v /usr/bin/python3 || command -v python3 || true)"
[ -n "$py" ] || { echo "soak: needs python3" >&2; exit 2; }

# Everything below runs in a private network namespace: injected uevents stay in it.
if [ -z "${HOTRING_SOAK_IN_NETNS:-}" ]; then
  export HOTRING_SOAK_IN_NETNS=1
  exec unshare --net -- "$0" --minutes "$minutes" --hotring "$hotring" \
    ${out:+--out "$out"} --sample "$sample" --rate "$rate"
fi

out="${out:-$(mktemp -d /tmp/hotring-soak.XXXXXX)}"
mkdir -p "$out"
socket="@hotring-soak-$$"
deadline=$(( $(date +%s) + minutes * 60 ))
echo "soak: $minutes min, output in $out, socket $socket"

# The handler: what each event's SOAK variable asks for.
cat >"$out/handler.sh" <<'EOF'
#!/bin/sh
case "${SOAK:-}" in
  hang) exec sleep 3600 ;;
  crash) kill -SEGV $$ ;;
  flood) head -c 2000000 /dev/zero | tr '\0' x; head -c 2000000 /dev/zero | tr '\0' y >&2 ;;
esac
exit 0
EOF
chmod +x "$out/handler.sh"
mkdir -p "$out/sys" "$out/dev"  # an empty tree for the overrun resync, a private /dev

"$hotring" daemon --socket "$socket" --exec "$out/handler.sh" --netlink-trust-userspace \
  --seqnum-file '' --expect-seqnum $((seqnum_base + 1)) --reorder-timeout 1 --event-timeout 2 --kill-grace 1 \
  --sysfs-root "$out/sys" --config /dev/null --dev-root "$out/dev" --no-modules \
  --timeline-keep "$timeline_keep" --log-level warning 2>"$out/daemon.log" &
daemon=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$daemon" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do
  "$hotring" control status --socket "$socket" --timeout 1 >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { echo "soak: the daemon did not start:" >&2; cat "$out/daemon.log" >&2; exit 1; }
  sleep 0.1
done

# Injector: prints "sent unique duplicates hang crash flood" when it ends.
"$py" - "$deadline" "$rate" "$seqnum_base" >"$out/injector.out" 2>"$out/injector.err" <<'EOF' &
import random, socket, sys, time
deadline, rate, base = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
s.bind((0, 0))
rnd = random.Random(13)
seq, sent, unique, dups = 0, 0, 0, 0
kinds = {"hang": 0, "crash": 0, "flood": 0}
last = None
def send(msg):
    global sent
    s.sendto(msg, (0, 1))
    sent += 1
start = time.time()
n = 0
while time.time() < deadline:
    r = rnd.random()
    if r < 0.03 and last is not None:
        send(last); dups += 1
    else:
        seq += 2 if r < 0.05 else 1  # a gap that never fills
        dev = "/devices/virtual/hotring_soak/dev%d" % (seq % 500)
        action = "remove" if rnd.random() < 0.2 else "add"
        env = ["ACTION=" + action, "DEVPATH=" + dev, "SUBSYSTEM=soak", "SEQNUM=%d" % (base + seq)]
        k = rnd.random()
        kind = "hang" if k < 0.005 else "crash" if k < 0.02 else "flood" if k < 0.025 else ""
        if kind:
            env.append("SOAK=" + kind); kinds[kind] += 1
        last = ("%s@%s\0" % (action, dev) + "\0".join(env) + "\0").encode()
        send(last); unique += 1
    n += 1
    time.sleep(max(0.0, start + n / rate - time.time()))
print(sent, unique, dups, kinds["hang"], kinds["crash"], kinds["flood"])
EOF
pids+=($!)

# send --wait clients, one after another; each failure is one line in clients.failed.
( n=0; ok=0
  while [ "$(date +%s)" -lt "$deadline" ]; do
    n=$((n + 1))
    if "$hotring" send soak --socket "$socket" --wait=30 --env ACTION=change \
        --env "DEVPATH=/devices/virtual/hotring_soak/client$((n % 50))" --env SUBSYSTEM=soak \
        >/dev/null 2>>"$out/clients.err"; then
      ok=$((ok + 1))
    else
      echo "$n" >>"$out/clients.failed"
    fi
    sleep 0.2
  done
  echo "$n $ok" >"$out/clients.out" ) &
pids+=($!)

# Reloads: the control request and SIGHUP, in turn.
( while [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 15
    "$hotring" control reload --socket "$socket" >/dev/null 2>&1 || echo reload >>"$out/reloads.failed"
    sleep 15
    kill -HUP "$daemon"
  done ) &
pids+=($!)

# Monitors that stop reading: the pipe fills, then the monitor's socket does.
( while [ "$(date +%s)" -lt "$deadline" ]; do
    timeout 60 "$hotring" monitor --env --socket "$socket" 2>/dev/null | sleep 60 || true
  done ) &
pids+=($!)

field() { awk -v k="$2" '$1 == k":" || $1 == k { print $2; exit }' "$1"; }
counter() { "$hotring" control status --socket "$socket" --timeout 5 --json 2>/dev/null \
  | "$py" -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(str(d.get(k,0)) for k in sys.argv[1:]))' "$@"; }
keys="received handled failed timed_out killed held queued running netlink_received dropped_duplicate monitor_drops reorder_timeouts missing_seqnums"
printf 'time\trss_kib\tanon_kib\tfds\tthreads\t%s\n' "$(echo $keys | tr ' ' '\t')" >"$out/samples.tsv"
start=$(date +%s)
next=$start
while [ "$(date +%s)" -lt "$deadline" ]; do
  next=$((next + sample))
  now=$(date +%s)
  [ "$now" -lt "$next" ] && sleep $((next - now))
  kill -0 "$daemon" 2>/dev/null || { echo "soak: FAIL: the daemon died" >&2; exit 1; }
  st=/proc/$daemon/status
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(( $(date +%s) - start ))" "$(field $st VmRSS)" \
    "$(field $st RssAnon)" "$(ls /proc/$daemon/fd | wc -l)" "$(field $st Threads)" \
    "$(counter $keys | tr ' ' '\t')" >>"$out/samples.tsv"
done

# Stop the load and let the daemon finish what it accepted.
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()
"$hotring" settle --socket "$socket" --timeout 300 >"$out/settle.out" 2>&1 || true
sleep 3  # the idle trim (2 s)
st=/proc/$daemon/status
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "end" "$(field $st VmRSS)" "$(field $st RssAnon)" \
  "$(ls /proc/$daemon/fd | wc -l)" "$(field $st Threads)" "$(counter $keys | tr ' ' '\t')" \
  >>"$out/samples.tsv"
"$hotring" control status --socket "$socket" >"$out/status.txt" 2>&1 || true

read -r sent unique dups hangs crashes floods <"$out/injector.out"
read -r clients clients_ok <"$out/clients.out"
read -r received handled failed timed_out killed held queued running netlink_received \
  dropped_duplicate monitor_drops reorder_timeouts missing_seqnums <<<"$(counter $keys)"

fail=0
skipped=0
check() {  # check DESCRIPTION CONDITION...
  local what="$1"; shift
  if "$@"; then echo "ok    $what"; else echo "FAIL  $what"; fail=1; fi
}
echo "injected: $sent datagrams, $unique events, $dups duplicates ($hangs hang, $crashes crash, $floods flood)"
echo "other netlink datagrams (the host's uevents): $((netlink_received - sent))"
echo "clients: $clients send --wait, $clients_ok answered; monitor drops $monitor_drops"
echo "daemon: received $received, handled $handled, failed $failed, timed out $timed_out (killed $killed)"
check "received = handled + failed + timed_out ($received = $handled + $failed + $timed_out)" \
  test "$received" -eq $((handled + failed + timed_out))
check "nothing held, queued or running ($held, $queued, $running)" \
  test $((held + queued + running)) -eq 0
check "every injected datagram read from netlink ($netlink_received >= $sent)" \
  test "$netlink_received" -ge "$sent"
check "every duplicate dropped as one ($dropped_duplicate >= $dups)" \
  test "$dropped_duplicate" -ge "$dups"
check "every injected event and answered client received ($received >= $unique + $clients_ok)" \
  test "$received" -ge $((unique + clients_ok))
check "every hanging handler timed out ($timed_out >= $hangs)" test "$timed_out" -ge "$hangs"
check "every crashing handler failed ($failed >= $crashes)" test "$failed" -ge "$crashes"
check "every send --wait client answered ($clients_ok of $clients)" \
  test "$clients_ok" -eq "$clients"

# Flat, not growing: among the samples taken once the bounded histories are full (received
# >= steady_after), the last third's lowest against the first third's highest. Margins: the
# heap settling in, a monitor or client connected at the moment of a sample, children running.
flat() {  # flat COLUMN MARGIN
  "$py" - "$out/samples.tsv" "$1" "$2" "$steady_after" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
col, rec = rows[0].index(sys.argv[2]), rows[0].index("received")
margin, steady = int(sys.argv[3]), int(sys.argv[4])
vals = [int(r[col]) for r in rows[1:]
        if r[0] != "end" and r[col].isdigit() and r[rec].isdigit() and int(r[rec]) >= steady]
if len(vals) < 6:
    print("%s: %d samples after %d events (a run too short to judge)" % (sys.argv[2], len(vals), steady))
    sys.exit(2)
third = len(vals) // 3
first, last = max(vals[:third]), min(vals[-third:])
print("%s: %d steady samples, first third max %d, last third min %d, max %d" % (
    sys.argv[2], len(vals), first, last, max(vals)))
sys.exit(0 if last <= first + margin else 1)
EOF
}
for figure in "rss_kib 256" "anon_kib 256" "fds 8" "threads 2"; do
  # shellcheck disable=SC2086
  set +e; line="$(flat $figure)"; status=$?; set -e
  case "$status" in
    0) echo "ok    flat: $line" ;;
    2) echo "skip  $line"; skipped=1 ;;
    *) echo "FAIL  grows: $line"; fail=1 ;;
  esac
done
[ -s "$out/reloads.failed" ] && { echo "FAIL  $(wc -l <"$out/reloads.failed") reloads failed"; fail=1; }
if [ "$fail" != 0 ]; then
  echo "soak: FAIL (see $out)"
elif [ "$skipped" != 0 ]; then
  echo "soak: counters PASS, growth NOT JUDGED (run longer; see $out)"
else
  echo "soak: PASS ($minutes min)"
fi
exit "$fail"
