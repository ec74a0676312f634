#!/bin/sh
# bench boot: boots the test guest (qemu_boot.sh) with several initramfs images, interleaved,
# and prints medians of
#   kernel start -> /init, /init -> settled (CLOCK_BOOTTIME / /proc/uptime read in the guest),
#   modules loaded at settled, the image's size, and the guest's CPU time from /init to
#   settled, busy and idle (/proc/stat, summed over the vCPUs; idle: a vCPU had nothing to
#   run, e.g. while drivers sleep in their probes),
# for a 1-vCPU and a 2-vCPU guest. The images:
#   hotring          hotring's image (mkimage.sh): `hotring init`, drivers loaded by hotring
#                    from MODALIAS (with a hotring that has no modules stage yet: by its
#                    --exec handler running busybox modprobe; the table says which)
#   hotring-serial   hotring's image booted with hotring.modules_serial (one load at a time)
#   hotring-walk     hotring's image booted with hotring.drivers_first=0 (coldplug in
#                    udevadm's order only, not the devices that wait for a driver first)
#   hotring-all      hotring's image booted with hotring.coldplug_subsystems (coldplug
#                    writes the module, bus and driver objects too)
#   hotring-4t       hotring's image booted with hotring.modules_threads=4 (the default on
#                    one or two CPUs; compare hotring-16t)
#   hotring-16t      hotring's image booted with hotring.modules_threads=16
#   hotring-fifo     hotring's image booted with hotring.controllers_first=0 (drivers load in
#                    the order their devices came; by default the USB, storage and SD host
#                    controllers' drivers go first, at a higher CPU priority)
#   hotring-hostonly the same with --host-only (only this machine's modaliases: smaller)
#   mdev             busybox `mdev -d` with the modalias idiom
#                    `$MODALIAS=.* 0:0 660 @modprobe -b "$MODALIAS"` plus a sysfs modalias scan;
#                    settled = when /proc/modules last changed with no modprobe left running
#   udev             Debian's initramfs-tools + systemd-udevd (mkimage_udev.sh), settled =
#                    `udevadm settle` returned
#   kernel-serial    the kernel's own share: one `modprobe -a` of exactly expected_modules.txt
#   kernel-parallel  one modprobe per module of that list, all started at once (the floor
#                    a parallel loader can reach with 2 vCPUs)
#   kernel-serial-hid  kernel-serial, settled once the USB keyboard's HID device also has its
#                    driver: the criterion hotring's settled point uses (`modprobe -a` returns
#                    before the hub thread has enumerated the keyboard)
#   kernel-parallel-hid  kernel-parallel, settled once the keyboard's HID device also has its
#                    driver (hotring's criterion, as kernel-serial-hid is for kernel-serial)
#   hotring-full     hotring's image booted with hotring.coldplug_needed=0: coldplug every
#                    device (by default only the devices mdev.conf acts on, that wait for a
#                    driver, that have a node or are a network interface, and their parents)
#   hotring-late     hotring's image booted with hotring.early_coldplug=0 (/init waits for
#                    the daemon's readiness before coldplug's first write; the default with
#                    one CPU)
#   hotring-early    the same with hotring.early_coldplug=1 (the default with more CPUs)
#   hotring-nohid    hotring's image settled on coldplug alone, like kernel-serial: the
#                    keyboard's HID device may come (and its drivers load) after settled
#   debian-udev      Debian's initramfs as mkinitramfs makes it (mkimage_debian.sh), booted to
#                    the root with root=UUID= of a disk whose /sbin/init reports
#                    (mkdisk.sh --report-root): "settled" is when the root's init started
#                    (/init -> root mounted, init-bottom's `udevadm control --exit` done)
#   debian-hotring   the same image with systemd-udevd and udevadm replaced by links to
#                    hotring (mkimage_debian.sh --hotring), the same criterion
# All but udev and debian-* carry the same modules (mkimage.sh's default set).
#
#   bench_boot.sh [--hotring BIN] [--runs N (default 3)] [--smp "1 2"] [--images "LIST"]
#                 [--keep DIR] [--timeout S] [--boost]
#
# --boost runs each qemu in a session of its own whose scheduler group (autogroup) has nice
# -15: on a host busy with other work, the guest's vCPU threads then get the CPU first, so
# the images still compare with each other (root and kernel.sched_autogroup_enabled=1; else
# a warning and no boost). A quiet host needs none; say which was used with the figures.
set -eu
# The sbin directories (depmod, mkfs.ext4, mkinitramfs) may be missing from PATH.
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
hotring="" runs=3 smps="1 2" images="hotring hotring-hostonly mdev udev kernel-serial kernel-parallel"
keep="" timeout=240 boost=0
while [ $# -gt 0 ]; do
  case "$1" in
    --hotring) hotring=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --smp) smps=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --boost) boost=1; shift ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_boot.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$hotring" ] || hotring="$here/../../bazel-bin/hotring"
version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
kernel="/boot/vmlinuz-$version"
if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-boot.XXXXXX"); trap 'rm -rf "$work"' EXIT; fi
list="$work/modules.list"
grep -v '^#' "$here/expected_modules.txt" | sed '/^$/d' >"$list"

# The shell /init scripts. Each prints the same report lines as `hotring init`.
report_tail='
ms() { awk "BEGIN {printf \"%.1f\", $1 * 1000}"; }
echo "hotring-report: time init_ms=$(ms "$t0") settled_ms=$(ms "$t1")"
echo "hotring-report: cpu busy_ms=$(( (u1 + n1 + s1 + q1 + sq1 + st1 - u0 - n0 - s0 - q0 - sq0 - st0) * 10 )) idle_ms=$(( (i1 + w1 - i0 - w0) * 10 ))"
echo "hotring-report: modules $(cut -d" " -f1 /proc/modules | sort | tr "\n" " ")"
echo "hotring-report: end"
poweroff -f'
head_part='#!/bin/sh
mount -t proc proc /proc
read -r t0 _ </proc/uptime
read -r _ u0 n0 s0 i0 w0 q0 sq0 st0 _ </proc/stat
cpu1() { read -r _ u1 n1 s1 i1 w1 q1 sq1 st1 _ </proc/stat; }
mount -t sysfs sysfs /sys
mount -t devtmpfs -o mode=0755 devtmpfs /dev
mkdir -p /run && mount -t tmpfs tmpfs /run'
# mdev: settled is the last time /proc/modules changed, once it has been still (and no
# modprobe ran) for 0.3 s; the 0.3 s of watching are not counted.
cat >"$work/init-mdev" <<EOF2
$head_part
mdev -d
find /sys/devices -name modalias -type f | xargs cat | sort -u | xargs modprobe -b -a -q 2>/dev/null
last=\$(wc -l </proc/modules); read -r t1 _ </proc/uptime
while :; do
  read -r now _ </proc/uptime
  n=\$(wc -l </proc/modules)
  busy=\$(cat /proc/[0-9]*/comm 2>/dev/null | grep -c modprobe)
  if [ "\$n" != "\$last" ] || [ "\$busy" != 0 ]; then last=\$n; t1=\$now; fi
  awk "BEGIN {exit !(\$now - \$t1 >= 0.3)}" && break
  sleep 0.05
done
cpu1
$report_tail
EOF2
cat >"$work/mdev-idiom.conf" <<'EOF2'
$MODALIAS=.* 0:0 660 @modprobe -b "$MODALIAS"
.* 0:0 660
EOF2
cat >"$work/init-kernel-serial" <<EOF2
$head_part
modprobe -a \$(cat /etc/bench.modules)
read -r t1 _ </proc/uptime
cpu1
$report_tail
EOF2
cat >"$work/init-kernel-serial-hid" <<EOF2
$head_part
modprobe -a \$(cat /etc/bench.modules)
until ls -d /sys/bus/hid/devices/*/driver >/dev/null 2>&1; do sleep 0.01; done
read -r t1 _ </proc/uptime
cpu1
$report_tail
EOF2
cat >"$work/init-kernel-parallel-hid" <<EOF2
$head_part
for m in \$(cat /etc/bench.modules); do modprobe \$m & done
wait
until ls -d /sys/bus/hid/devices/*/driver >/dev/null 2>&1; do sleep 0.01; done
read -r t1 _ </proc/uptime
cpu1
$report_tail
EOF2
cat >"$work/init-kernel-parallel" <<EOF2
$head_part
for m in \$(cat /etc/bench.modules); do modprobe \$m & done
wait
read -r t1 _ </proc/uptime
cpu1
$report_tail
EOF2

# hotring's modules stage, or the busybox handler until there is one.
hotring_args=""
hotring_label="hotring"
if ! "$hotring" modprobe --help >/dev/null 2>&1; then
  hotring_args="--with-shell --modprobe-handler"
  hotring_label="hotring+busybox-modprobe-handler"
fi
# The image file an image name boots (hotring-serial, -walk, -all, -4t and -16t are hotring's
# image with another command line).
image_file() {
  case "$1" in
    hotring-serial|hotring-walk|hotring-all|hotring-4t|hotring-16t|hotring-fifo|hotring-nohid|hotring-full|hotring-late|hotring-early) echo "$work/hotring.img" ;;
    *) echo "$work/$1.img" ;;
  esac
}
build() {
  img=$(image_file "$1")
  [ -s "$img" ] && return 0
  echo "bench_boot: building $1" >&2
  case "$1" in
    # shellcheck disable=SC2086
    hotring|hotring-serial|hotring-walk|hotring-all|hotring-4t|hotring-16t|hotring-fifo|hotring-nohid|hotring-full|hotring-late|hotring-early)
      sh "$here/mkimage.sh" --hotring "$hotring" --out "$img" $hotring_args ;;
    # shellcheck disable=SC2086
    hotring-hostonly) sh "$here/mkimage.sh" --hotring "$hotring" --out "$img" --host-only $hotring_args ;;
    mdev) sh "$here/mkimage.sh" --with-shell --init "$work/init-mdev" --mdev-conf "$work/mdev-idiom.conf" --out "$img" ;;
    udev) sh "$here/mkimage_udev.sh" --out "$img" --kernel-version "$version" ;;
    debian-udev) sh "$here/mkimage_debian.sh" --out "$img" --kernel-version "$version" ;;
    debian-hotring)
      build debian-udev  # (sets img: the path is spelt out below)
      sh "$here/mkimage_debian.sh" --base "$work/debian-udev.img" --hotring "$hotring" --out "$work/debian-hotring.img" ;;
    kernel-serial|kernel-parallel|kernel-serial-hid|kernel-parallel-hid)
      sh "$here/mkimage.sh" --with-shell --init "$work/init-$1" --add "$list=etc/bench.modules" --out "$img" ;;
    *) echo "bench_boot: unknown image $1" >&2; return 1 ;;
  esac
}
[ -s "$work/disk.img" ] || sh "$here/mkdisk.sh" --out "$work/disk.img"
# The debian-* images boot to the root: a disk whose init reports, found by its UUID.
root_uuid=""
case " $images " in
  *" debian-"*)
    [ -s "$work/disk-report.img" ] || sh "$here/mkdisk.sh" --out "$work/disk-report.img" --report-root
    root_uuid=$(blkid -o value -s UUID "$work/disk-report.img") ;;
esac
for i in $images; do build "$i"; done

# --boost: each boot in a new session (a new autogroup) at nice -15, set by the session's shell.
boosted=0
if [ "$boost" = 1 ]; then
  if [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
    boosted=1
  else
    echo "bench_boot: --boost needs root and kernel.sched_autogroup_enabled=1; running without" >&2
  fi
fi
launch() {
  if [ "$boosted" = 1 ]; then
    setsid -w sh -c 'echo -15 >/proc/self/autogroup && exec "$@"' boosted "$@"
  else
    "$@"
  fi
}
results="$work/results.txt"  # image smp run kernel_to_init_ms init_to_settled_ms modules busy_ms idle_ms
failed_boots="$work/failed.txt"  # image smp run qemu_status: boots that printed no time line
: >"$results"
: >"$failed_boots"
for run in $(seq 1 "$runs"); do
  for smp in $smps; do
    for i in $images; do
      log="$work/console-$i-smp$smp-run$run.log"
      status=0
      # Like the shell images' criteria (every module loaded), hotring's settled point waits
      # for the USB keyboard's HID device, which the hub thread enumerates after coldplug. The
      # host-only image may have no USB driver: it settles on coldplug alone.
      append="hotring.test"
      case "$i" in
        hotring) append="$append hotring.settle_for=SUBSYSTEM=hid" ;;
        hotring-serial) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.modules_serial" ;;
        hotring-walk) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.drivers_first=0" ;;
        hotring-all) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.coldplug_subsystems" ;;
        hotring-4t) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.modules_threads=4" ;;
        hotring-16t) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.modules_threads=16" ;;
        hotring-fifo) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.controllers_first=0" ;;
        hotring-late) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.early_coldplug=0" ;;
        hotring-early) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.early_coldplug=1" ;;
        hotring-nohid) ;;
        debian-*) append="root=UUID=$root_uuid" ;;
        hotring-full) append="$append hotring.settle_for=SUBSYSTEM=hid hotring.coldplug_needed=0" ;;
      esac
      disk="$work/disk.img"
      case "$i" in debian-*) disk="$work/disk-report.img" ;; esac
      launch sh "$here/qemu_boot.sh" --kernel "$kernel" --initrd "$(image_file "$i")" --disk "$disk" \
        --log "$log" --smp "$smp" --timeout "$timeout" --append "$append" || status=$?
      line=$(tr -d '\r' <"$log" | sed -n 's/^hotring-report: time //p' | head -n 1)
      mods=$(tr -d '\r' <"$log" | sed -n 's/^hotring-report: modules //p' | head -n 1 | wc -w)
      init_ms=$(echo "$line" | sed -n 's/.*init_ms=\([0-9.]*\).*/\1/p')
      settled_ms=$(echo "$line" | sed -n 's/.*settled_ms=\([0-9.]*\).*/\1/p')
      if [ -z "$init_ms" ] || [ -z "$settled_ms" ]; then
        echo "bench_boot: $i smp $smp run $run: no time line (qemu $status), see $log" >&2
        echo "$i $smp $run $status" >>"$failed_boots"
        continue
      fi
      cpu=$(tr -d '\r' <"$log" | sed -n 's/^hotring-report: cpu //p' | head -n 1)
      busy=$(echo " $cpu " | sed -n 's/.* busy_ms=\([0-9]*\) .*/\1/p')
      idle=$(echo " $cpu " | sed -n 's/.* idle_ms=\([0-9]*\) .*/\1/p')
      echo "$i $smp $run $init_ms $(awk "BEGIN {printf \"%.1f\", $settled_ms - $init_ms}") $mods ${busy:--} ${idle:--}" | tee -a "$results" >&2
    done
  done
done

median() { sort -n | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
# A boot that printed no time line is left out of its medians: "boots" says how many of the
# runs each median is over.
echo "bench boot: $kernel, qemu TCG, $runs runs interleaved, medians (ms) of the boots that printed their times"
printf '%-34s %4s %6s %16s %18s %8s %10s %9s %9s\n' image vCPUs boots "kernel->/init" "/init->settled" modules "image KiB" "CPU busy" "CPU idle"
for smp in $smps; do
  for i in $images; do
    label=$i
    [ "$i" = hotring ] && label=$hotring_label
    [ "$i" = hotring-hostonly ] && label="$hotring_label --host-only"
    [ "$i" = hotring-serial ] && label="$hotring_label modules_serial"
    [ "$i" = hotring-walk ] && label="$hotring_label drivers_first=0"
    [ "$i" = hotring-all ] && label="$hotring_label coldplug_subsystems"
    [ "$i" = hotring-4t ] && label="$hotring_label modules_threads=4"
    [ "$i" = hotring-16t ] && label="$hotring_label modules_threads=16"
    [ "$i" = hotring-fifo ] && label="$hotring_label controllers_first=0"
    [ "$i" = hotring-nohid ] && label="$hotring_label, no HID wait"
    [ "$i" = hotring-full ] && label="$hotring_label coldplug_needed=0"
    [ "$i" = hotring-late ] && label="$hotring_label early_coldplug=0"
    [ "$i" = hotring-early ] && label="$hotring_label early_coldplug=1"
    k=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s {print $4}' "$results" | median)
    t=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s {print $5}' "$results" | median)
    m=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s {print $6}' "$results" | median)
    b=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s && $7 != "-" {print $7}' "$results" | median)
    d=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s && $8 != "-" {print $8}' "$results" | median)
    ok=$(awk -v i="$i" -v s="$smp" '$1 == i && $2 == s' "$results" | wc -l)
    printf '%-34s %4s %6s %16s %18s %8s %10s %9s %9s\n' "$label" "$smp" "$ok/$runs" "$k" "$t" "$m" "$(du -k "$(image_file "$i")" | cut -f1)" "$b" "$d"
  done
done
total=$(( runs * $(echo $smps | wc -w) * $(echo $images | wc -w) ))
lost=$(wc -l <"$failed_boots")
if [ "$lost" -eq 0 ]; then
  echo "bench boot: all $total boots printed their times"
else
  echo "bench boot: $lost of $total boots printed no time line and are not in the medians (image vCPUs run qemu-exit):"
  sed 's/^/  /' "$failed_boots"
fi
