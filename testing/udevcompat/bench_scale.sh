#!/bin/sh
# bench udev-rules --guest: does the cost per device stay flat from a hundred to thousands of
# devices? Boots the boot harness's guest (testing/initramfs/qemu_boot.sh, qemu TCG) with
# Debian's own initramfs (mkinitramfs, testing/initramfs/mkimage_debian.sh) and this machine's
# whole udev setup, as guest_compare.sh --rules does (every file of /lib/udev/rules.d and
# /etc/udev/rules.d, hwdb.bin, the programs in /lib/udev the rules call with their libraries,
# /etc/passwd and /etc/group), once with Debian's systemd-udevd 252 and once with hotring's
# drop-in in its place (`mkimage_debian.sh --hotring`); the two images differ in nothing else.
# Per run it boots, for the base (size 0: no scsi_debug, no dummy) and then for each size N, each
# image once, udevd first, hotring second. The guest's /init (written below, replacing
# initramfs-tools'):
#   1. mounts /proc, /sys, /dev, /run; loads the drivers of the guest's own devices (every
#      modalias, until the device count is still) and sd_mod and sg, so that no module load and
#      no device appearing falls in the measured window (udevd's 80-drivers.rules would load sg
#      there, which adds an sg device per disk);
#   2. adds about N devices: scsi_debug with N/2 devices' worth of disks (one target per disk,
#      1 MiB of RAM shared by all; a disk is 8 devices: target, scsi_device twice, scsi_disk,
#      block, bdi, bsg, scsi_generic) and dummy with numdummies=N/2 (an interface is 1 device),
#      and waits until every disk is there and the device count is still;
#   3. starts the daemon as initramfs-tools does (`/lib/systemd/systemd-udevd --daemon`,
#      SYSTEMD_LOG_LEVEL=notice as with `quiet`; the names in OWNER/GROUP resolve early, udevd's
#      default) and Debian's `udevadm monitor --kernel --udev` (the same binary in both images);
#   4. the measured window: `udevadm trigger --type=subsystems --action=add`, `udevadm trigger
#      --type=devices --action=add`, `udevadm settle` (initramfs-tools' three commands, with the
#      device manager's own udevadm: Debian's, or hotring's drop-in);
#   5. reports the events (the monitor's UDEV lines: events the daemon handled and announced;
#      its KERNEL lines: the kernel's uevents), the daemon's CPU over the window and the window's
#      wall time, then `udevadm control --exit` and powers off.
# A "device" is what `udevadm trigger --type=devices` enumerates (every subsystem: Debian's
# udevadm, --dry-run, counted in the guest before and after step 2). N counts the devices step 2
# adds; the guest's own devices (280: CPU, memory blocks, ACPI, PCI, ttys, the harness's virtio
# disk, NICs, IDE CD drive and USB keyboard) and the subsystem, module and driver objects the
# first trigger replays (about 220 events) come on top at every size.
# CPU: utime + stime + cutime + cstime (/proc/PID/stat) of the daemon's process and of every
# process below it, read before the first trigger and after settle returns, the difference: all
# its threads, the workers (udevd) and every program the rules ran (scsi_id, ...), live or
# reaped, and nothing else; the same for both daemons, and what `hotring bench udev-rules` counts
# on the host. Not the guest's /proc/stat busy time, which would add the triggers' own work, the
# kernel's uevents and the monitor (results.txt keeps it for reference). The resolution is the
# clock tick (10 ms); a window is seconds long.
# Settle wall: /proc/uptime before the first trigger and after `udevadm settle` returned (10 ms
# resolution): the daemon, and its own trigger and settle.
# CPU per event = that CPU / the UDEV events. CPU per added event = (CPU - the same run's base
# CPU) / (events - the base's events): the cost of the scsi_debug and dummy devices alone. The
# events of the base (ttys, ACPI, modules, drivers: cheap) are most of the events at N = 100 and
# few at 4,000, so CPU per event grows with N even where nothing costs more per device; CPU per
# added event keeps the mix fixed (a disk's 8 devices to 8 interfaces) and says whether a device
# costs more when there are more of them.
#
#   bench_scale.sh [--hotring BIN] [--sizes "100 1000 4000"] [--runs K (default 3)]
#                  [--smp N (default 1)] [--memory MIB (default 1536)] [--keep DIR]
#                  [--base MKINITRAMFS_IMAGE] [--timeout S (default 1800, one boot)]
#                  [--daemons "udevd hotring"] [--export-db] [--boost] [--qemu-args "ARGS"]
#                  [--action add|change]
#
# Prints a table per size (events, CPU per event and per added event in µs, settle wall in ms:
# medians of the runs with their range, for both daemons, and hotring/udevd), then each daemon's
# CPU per event at the largest size over the smallest (the flatness figure; hotring's goal is
# 1.3x at most), and the same per added event. --keep DIR keeps the images, consoles and
# results.txt (one line per boot); --base reuses an image made by an earlier run (DIR/base.img:
# mkinitramfs with scsi_debug, dummy, sd_mod and sg added). --export-db (needs --keep) also
# writes, after the window, the processes' /proc/PID/stat before and after it, the monitor's
# lines, Debian's `udevadm info --export-db`, hotring's `control status` and the kernel's log to
# DIR/db-DAEMON-SIZE-runK.txt (a second serial port), to compare what the two daemons did.
# --action change: the triggers write `change` instead. --qemu-args: more for qemu (`-cpu max`).
# BIN: a static hotring (default bazel-bin/hotring). qemu: TCG only, never KVM (it hangs on our
# machines). A boot takes 40 s to a few minutes (4,000 devices): about 8 minutes per run.
# --boost: each qemu in a session of its own whose scheduler group (autogroup) has nice -15, as
# bench_boot.sh --boost (root, kernel.sched_autogroup_enabled=1). The guest's clocks run on while
# the host does not run its vCPU, and that time is charged to whatever the guest was running: on
# a busy host every figure, CPU included, grows with the host's load unless the guest comes
# first. Say which was used with the figures.
# The console stays quiet (`quiet`: only the kernel's errors, and the daemons' error lines, which
# /dev/kmsg cuts off after a burst; the guest reports how many it dropped).
# Needs (Debian, root): qemu-system-x86, initramfs-tools, udev, the kernel's image and modules
# (linux-image-amd64).
set -eu
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
initramfs="$here/../initramfs"
hotring="" sizes="100 1000 4000" runs=3 smp=1 memory=1536 keep="" base="" timeout=1800
daemons="udevd hotring" export_db=0 boost=0 more_qemu="" action=add
while [ $# -gt 0 ]; do
  case "$1" in
    --hotring) hotring=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --daemons) daemons=$2; shift 2 ;;
    --export-db) export_db=1; shift ;;
    --boost) boost=1; shift ;;
    --qemu-args) more_qemu=$2; shift 2 ;;
    --action) action=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_scale.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for n in $sizes; do
  case "$n" in ''|*[!0-9]*) echo "bench_scale.sh: --sizes: $n is not a number" >&2; exit 2 ;; esac
  [ "$n" -ge 2 ] || { echo "bench_scale.sh: --sizes: $n: at least 2" >&2; exit 2; }
done
for d in $daemons; do
  case "$d" in udevd|hotring) ;; *) echo "bench_scale.sh: --daemons: udevd or hotring, not $d" >&2; exit 2 ;; esac
done
case "$action" in add|change) ;; *) echo "bench_scale.sh: --action: add or change, not $action" >&2; exit 2 ;; esac
[ "$export_db" = 0 ] || [ -n "$keep" ] || { echo "bench_scale.sh: --export-db needs --keep DIR" >&2; exit 2; }
[ -n "$hotring" ] || hotring="$here/../../bazel-bin/hotring"
case " $daemons " in *" hotring "*)
  [ -x "$hotring" ] || { echo "bench_scale.sh: no hotring at $hotring (--hotring BIN)" >&2; exit 2; } ;;
esac
if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-scale.XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
work=$(cd "$work" && pwd)
version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
kernel="/boot/vmlinuz-$version"
. "$here/../debian_packages.sh"
install_missing initramfs-tools udev qemu-system-x86

# --- Debian's image with the four modules added as a user adds them (conf/modules).
if [ -z "$base" ]; then
  base="$work/base.img"
  if [ ! -s "$base" ]; then
    echo "bench_scale.sh: mkinitramfs" >&2
    rm -rf "$work/conf"
    cp -r /etc/initramfs-tools "$work/conf"
    printf 'scsi_debug\ndummy\nsd_mod\nsg\n' >>"$work/conf/modules"
    mkinitramfs -d "$work/conf" -o "$base.tmp" "$version" >/dev/null
    mv "$base.tmp" "$base"
  fi
fi

# --- The overlay both images get: the whole udev setup, Debian's udevadm for the monitor and the
# counts (/usr/lib/guest/udevadm: hotring's drop-in takes /usr/bin/udevadm), and /init.
o="$work/overlay"
rm -rf "$o"
mkdir -p "$o/usr/lib/guest"
. "$initramfs/copy_program.sh"
copy_udev_setup "$o"
copy_program "$o" usr /bin/udevadm
cp /bin/udevadm "$o/usr/lib/guest/udevadm"
cat >"$o/init" <<'EOF'
#!/bin/sh
# bench_scale.sh's /init: see there.
export PATH=/sbin:/usr/sbin:/bin:/usr/bin SYSTEMD_PAGER=cat SYSTEMD_COLORS=0
mkdir -p /proc /sys /dev /run /tmp
mount -t proc -o nodev,noexec,nosuid proc /proc
mount -t sysfs -o nodev,noexec,nosuid sysfs /sys
mount -t devtmpfs -o nosuid,mode=0755 udev /dev
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /run
say() { echo "bench-scale: $*"; }
finish() { say "end"; sync; poweroff -f; sleep 30; }
guest=/usr/lib/guest/udevadm
disks=0 ifaces=0 export_db=0 action=add
for x in $(cat /proc/cmdline); do
  case $x in
    bench.disks=*) disks=${x#*=} ;;
    bench.ifaces=*) ifaces=${x#*=} ;;
    bench.export_db) export_db=1 ;;
    bench.action=*) action=${x#*=} ;;
  esac
done
count() { "$guest" trigger --dry-run --verbose --type=devices | wc -l; }
# utime + stime + cutime + cstime of process $1 and every process below it, in clock ticks.
tree_cpu() {
  for f in /proc/[0-9]*/stat; do read -r l <"$f" && echo "$l"; done 2>/dev/null | awk -v root="$1" '
    { s = $0; sub(/^.*\) /, "", s); split(s, f, " "); ppid[$1] = f[2]; t[$1] = f[12] + f[13] + f[14] + f[15] }
    END { for (p in t) { q = p; while (q > 1) { if (q == root) { sum += t[p]; break }; q = ppid[q] } }; print sum + 0 }'
}
busy() { read -r _ u n s _ _ q sq st _ </proc/stat; echo "$((u + n + s + q + sq + st))"; }

# 1. The guest's own drivers, until nothing more appears; sd_mod and sg.
modprobe -a -q sd_mod sg
last=-1 still=0 round=0
while [ "$still" -lt 3 ] && [ "$round" -lt 30 ]; do
  find /sys/devices -name modalias -type f | xargs cat 2>/dev/null | sort -u | xargs modprobe -a -b -q 2>/dev/null
  sleep 0.5
  n=$(count)
  if [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; fi
  last=$n round=$((round + 1))
done
base=$last

# 2. The devices of the size.
if [ "$disks" -gt 0 ]; then
  modprobe scsi_debug add_host=1 num_tgts="$disks" max_luns=1 dev_size_mb=1 delay=0 || say "error: scsi_debug"
fi
[ "$ifaces" -eq 0 ] || modprobe dummy numdummies="$ifaces" || say "error: dummy"
i=0
ndisks() { ls "/sys/class/$1" 2>/dev/null | wc -l; }
while [ "$(ndisks scsi_disk)" -lt "$disks" ] || [ "$(ndisks scsi_generic)" -lt "$disks" ]; do
  i=$((i + 1))
  [ "$i" -lt 6000 ] || { say "error: $(ndisks scsi_disk) of $disks disks appeared"; break; }
  sleep 0.1
done
last=-1 still=0 round=0
while [ "$still" -lt 3 ] && [ "$round" -lt 60 ]; do
  sleep 0.5
  n=$(count)
  if [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; fi
  last=$n round=$((round + 1))
done
total=$last
say "devices base=$base total=$total added=$((total - base)) disks=$(ndisks scsi_disk) ifaces=$(ls -d /sys/class/net/dummy* 2>/dev/null | wc -l)"

# 3. The daemon, as initramfs-tools starts it, and the monitor.
[ ! -w /sys/kernel/uevent_helper ] || echo >/sys/kernel/uevent_helper
SYSTEMD_LOG_LEVEL=notice /lib/systemd/systemd-udevd --daemon || say "error: systemd-udevd --daemon exited $?"
pid=$(for f in /proc/[0-9]*/stat; do read -r l <"$f" && echo "$l"; done 2>/dev/null |
  awk '($2 == "(systemd-udevd)" || $2 == "(hotring)") && $4 == 1 {print $1; exit}')
[ -n "$pid" ] || { say "error: no systemd-udevd process"; finish; }
"$guest" monitor --kernel --udev >/run/monitor.txt 2>&1 &
monitor=$!
i=0
until grep -q '^UDEV - ' /run/monitor.txt; do
  i=$((i + 1)); [ "$i" -lt 600 ] || { say "error: the monitor did not start"; break; }; sleep 0.05
done

# 4. The window.
snapshot() { for f in /proc/[0-9]*/stat; do read -r l <"$f" && echo "$l"; done 2>/dev/null; }
snapshot >/run/ps0
cpu0=$(tree_cpu "$pid")
m0=$(wc -l </proc/modules)
b0=$(busy)
read -r t0 _ </proc/uptime
udevadm trigger --type=subsystems --action="$action" || say "error: trigger subsystems exited $?"
udevadm trigger --type=devices --action="$action" || say "error: trigger devices exited $?"
settle=0
udevadm settle --timeout=3600 || settle=$?
read -r t1 _ </proc/uptime
b1=$(busy)
cpu1=$(tree_cpu "$pid")
m1=$(wc -l </proc/modules)
snapshot >/run/ps1

# 5. The report.
sleep 1
kill -INT "$monitor"; wait "$monitor" 2>/dev/null || :
after=$(count)
kernel=$(grep -c '^KERNEL\[' /run/monitor.txt)
udev=$(grep -c '^UDEV  *\[' /run/monitor.txt)
say "window kernel=$kernel udev=$udev cpu_ticks=$((cpu1 - cpu0)) busy_ticks=$((b1 - b0)) wall_ms=$(awk "BEGIN {printf \"%d\", ($t1 - $t0) * 1000}") settle_exit=$settle modules_before=$m0 modules_after=$m1 devices_after=$after pid=$pid"
say "udev-by-subsystem $(sed -n 's/^UDEV  *\[[^]]*\] *[a-z]* *[^ ]* (\(.*\))$/\1/p' /run/monitor.txt | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')"
if [ "$export_db" = 1 ] && [ -e /dev/ttyS1 ]; then
  {
    echo "=== processes before"; cat /run/ps0
    echo "=== processes after"; cat /run/ps1
    echo "=== monitor"; cat /run/monitor.txt
    echo "=== export-db"; "$guest" info --export-db
    if [ -x /usr/bin/hotring ]; then echo "=== hotring status"; hotring control status; fi
    echo "=== dmesg"; dmesg
    echo "=== end"
  } >/dev/ttyS1 2>&1
fi
udevadm control --exit || say "error: udevadm control --exit exited $?"
i=0
while [ -d "/proc/$pid" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
# The daemon's lines in the kernel's log; /dev/kmsg drops a writer's lines beyond a burst and says
# how many when the writer closes it.
say "kmsg daemon_lines=$(dmesg | grep -c 'udevd') suppressed=$(dmesg | sed -n 's/.*udevd: \([0-9]*\) output lines suppressed due to ratelimiting.*/\1/p' | awk '{s += $1} END {print s + 0}')"
finish
EOF
chmod 755 "$o/init"

# --- The two images.
for d in $daemons; do
  img="$work/$d.img"
  if [ "$d" = udevd ]; then
    sh "$initramfs/mkimage_debian.sh" --base "$base" --overlay "$o" --out "$img"
  else
    sh "$initramfs/mkimage_debian.sh" --base "$base" --overlay "$o" --hotring "$hotring" --out "$img"
  fi
done
disk="$work/disk.img"
[ -s "$disk" ] || truncate -s 1M "$disk"

# --- The boots: per run, per size, udevd then hotring.
boosted=0
if [ "$boost" = 1 ]; then
  if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
    boosted=1
  else
    echo "bench_scale.sh: --boost needs root and kernel.sched_autogroup_enabled=1; running without" >&2
  fi
fi
launch() {
  if [ "$boosted" = 1 ]; then
    setsid -w sh -c 'echo -15 >/proc/self/autogroup && exec "$@"' boosted "$@"
  else
    "$@"
  fi
}
results="$work/results.txt"
# daemon size run base total added kernel udev cpu_ticks busy_ticks wall_ms settle_exit
# modules_before modules_after host_load (the host's 1-minute load average when the boot started)
# devices_after (counted again after the window)
: >"$results"
failed="$work/failed.txt"
: >"$failed"
# Size 0 is the base boot (no scsi_debug, no dummy): the guest's own devices alone.
boots="0"
for n in $sizes; do [ "$n" = 0 ] || boots="$boots $n"; done
v() { echo " $2 " | sed -n "s/.* $1=\([0-9-]*\) .*/\1/p"; }
for run in $(seq 1 "$runs"); do
  for n in $boots; do
    ifaces=$((n / 2))
    disks=$(((n - ifaces + 4) / 8))
    for d in $daemons; do
      log="$work/console-$d-$n-run$run.log"
      qargs="-m ${memory}M $more_qemu"
      append="bench.disks=$disks bench.ifaces=$ifaces bench.action=$action"
      if [ "$export_db" = 1 ]; then
        qargs="$qargs -serial file:$work/db-$d-$n-run$run.txt"
        append="$append bench.export_db"
      fi
      echo "bench_scale.sh: run $run, size $n ($disks disks, $ifaces interfaces), $d, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      status=0
      load=$(cut -d' ' -f1 /proc/loadavg)
      start=$(date +%s)
      launch sh "$initramfs/qemu_boot.sh" --kernel "$kernel" --initrd "$work/$d.img" --disk "$disk" \
        --log "$log" --smp "$smp" --timeout "$timeout" --append "$append" --qemu-args "$qargs" || status=$?
      took=$(( $(date +%s) - start ))
      c=$(tr -d '\r' <"$log")
      dev=$(echo "$c" | sed -n 's/^bench-scale: devices //p' | head -n 1)
      win=$(echo "$c" | sed -n 's/^bench-scale: window //p' | head -n 1)
      echo "$c" | grep '^bench-scale: error' >&2 || :
      if [ -z "$win" ]; then
        echo "bench_scale.sh: $d size $n run $run: no report (qemu $status after ${took} s), see $log" >&2
        echo "$d $n $run $status" >>"$failed"
        continue
      fi
      line="$d $n $run $(v base "$dev") $(v total "$dev") $(v added "$dev") $(v kernel "$win") $(v udev "$win")"
      line="$line $(v cpu_ticks "$win") $(v busy_ticks "$win") $(v wall_ms "$win") $(v settle_exit "$win")"
      line="$line $(v modules_before "$win") $(v modules_after "$win") $load $(v devices_after "$win")"
      echo "$line" >>"$results"
      echo "bench_scale.sh:   $line (boot ${took} s)" >&2
    done
  done
done

# --- The table.
median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
range() { sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR == 0) print "-"; else printf "%s-%s\n", lo, hi}'; }
# Field F of daemon D at size N, one line per run: cpu (µs per event), wall (ms), events (the
# monitor's UDEV lines), kernel (its KERNEL lines), added, total (devices), disks, ifaces; cpu_added:
# (CPU - the same run's base CPU) / (events - the base's events), µs: the cost of the added
# devices alone, whose mix does not change with the size.
col() {
  awk -v d="$1" -v n="$2" -v f="$3" '
    $1 == d && $2 == 0 { bcpu[$3] = $9; bev[$3] = $8 }
    $1 == d && $2 == n { cpu[$3] = $9; ev[$3] = $8; wall[$3] = $11; k[$3] = $7; a[$3] = $6; t[$3] = $5 }
    END { for (r in ev) {
      if (f == "cpu") printf "%.1f\n", (ev[r] > 0 ? cpu[r] * 10000 / ev[r] : 0);
      else if (f == "cpu_added") { if ((r in bev) && ev[r] > bev[r]) printf "%.1f\n", (cpu[r] - bcpu[r]) * 10000 / (ev[r] - bev[r]) }
      else if (f == "wall") print wall[r]; else if (f == "events") print ev[r]; else if (f == "kernel") print k[r];
      else if (f == "added") print a[r]; else if (f == "total") print t[r] } }' "$results"
}
label() { [ "$1" = udevd ] && echo systemd-udevd || echo hotring; }
both=0
case " $daemons " in *" udevd "*) case " $daemons " in *" hotring "*) both=1 ;; esac ;; esac
first=${daemons%% *}
echo
b=""
[ "$boosted" = 0 ] || b=", --boost"
echo "bench udev-rules --guest: $kernel, qemu TCG$b, $smp vCPU(s), ${memory} MiB, Debian's udev setup"
echo "($(ls /lib/udev/rules.d | wc -l) rules files), $runs runs interleaved; medians (range); CPU: the daemon's processes and"
echo "the programs they ran, per event the daemon announced; settle wall: trigger + trigger + settle"
for n in $boots; do
  echo
  if [ "$n" = 0 ]; then
    echo "base (no scsi_debug, no dummy): $(col "$first" 0 total | median) devices in the guest"
  else
    echo "size $n: $(col "$first" "$n" added | median) devices added ($(((n - n / 2 + 4) / 8)) scsi_debug disks, $((n / 2)) dummy interfaces), $(col "$first" "$n" total | median) in the guest"
  fi
  printf '  %-14s %5s %13s %20s %20s %20s\n' daemon boots "events k/udev" "CPU/event us" "CPU/added event us" "settle wall ms"
  for d in $daemons; do
    added="-"
    [ "$n" = 0 ] || added="$(col "$d" "$n" cpu_added | median) ($(col "$d" "$n" cpu_added | range))"
    printf '  %-14s %5s %13s %20s %20s %20s\n' "$(label "$d")" "$(col "$d" "$n" events | wc -l)/$runs" \
      "$(col "$d" "$n" kernel | median)/$(col "$d" "$n" events | median)" \
      "$(col "$d" "$n" cpu | median) ($(col "$d" "$n" cpu | range))" "$added" \
      "$(col "$d" "$n" wall | median) ($(col "$d" "$n" wall | range))"
  done
  if [ "$both" = 1 ]; then
    awk -v cu="$(col udevd "$n" cpu | median)" -v ch="$(col hotring "$n" cpu | median)" \
      -v au="$(col udevd "$n" cpu_added | median)" -v ah="$(col hotring "$n" cpu_added | median)" \
      -v wu="$(col udevd "$n" wall | median)" -v wh="$(col hotring "$n" wall | median)" 'BEGIN {
      if (cu + 0 > 0 && wu + 0 > 0) printf "  hotring/udevd: CPU per event %.3fx (goal <= 0.2x), settle wall %.3fx (goal <= 0.5x)", ch / cu, wh / wu
      if (au + 0 > 0) printf ", CPU per added event %.3fx", ah / au
      print "" }'
  fi
done
# shellcheck disable=SC2086
small=$(printf '%s\n' $sizes | sort -n | head -n 1)
# shellcheck disable=SC2086
large=$(printf '%s\n' $sizes | sort -n | tail -n 1)
echo
for d in $daemons; do
  goal=""
  [ "$d" = hotring ] && goal=" (goal <= 1.3x)"
  awk -v a="$(col "$d" "$small" cpu | median)" -v b="$(col "$d" "$large" cpu | median)" \
    -v c="$(col "$d" "$small" cpu_added | median)" -v e="$(col "$d" "$large" cpu_added | median)" \
    -v who="$(label "$d")" -v s="$small" -v l="$large" -v g="$goal" 'BEGIN {
    if (a + 0 > 0 && b + 0 > 0) printf "flatness, %s: CPU per event at %s devices over at %s %.2fx%s", who, l, s, b / a, g
    if (c + 0 > 0 && e + 0 > 0) printf "; per added event %.2fx", e / c
    print "" }'
done
awk '$7 != $8 {print "bench_scale.sh: " $1 " size " $2 " run " $3 ": the kernel sent " $7 " events, the daemon announced " $8}
  $12 != 0 {print "bench_scale.sh: " $1 " size " $2 " run " $3 ": udevadm settle exited " $12}
  $13 != $14 {print "bench_scale.sh: " $1 " size " $2 " run " $3 ": modules loaded in the window (" $13 " -> " $14 ")"}
  $16 != $5 {print "bench_scale.sh: " $1 " size " $2 " run " $3 ": " $5 " devices before the window, " $16 " after"}' "$results"
awk 'NR == 1 {lo = $15; hi = $15} $15 < lo {lo = $15} $15 > hi {hi = $15} END {if (NR) print "host load average (1 min) at the boots: " lo "-" hi}' "$results"
lost=$(wc -l <"$failed")
[ "$lost" -eq 0 ] || { echo "bench_scale.sh: $lost boots gave no report and are not in the medians (daemon size run qemu-exit):"; sed 's/^/  /' "$failed"; }
