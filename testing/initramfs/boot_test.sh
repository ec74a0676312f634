#!/bin/sh
# The boot test: hotring as the device manager of a real initramfs. Builds hotring's image
# (mkimage.sh), boots Debian's kernel in qemu (qemu_boot.sh: virtio disk, e1000 and virtio-net
# NICs, USB keyboard) and asserts on the console's `hotring-report:` block:
#   - /dev/vda exists, a block device with the owner, group and mode of the image's mdev.conf;
#   - both NICs exist, bound to e1000 and virtio_net (drivers hotring loaded from MODALIAS);
#   - the USB keyboard is an input device;
#   - the status counters add up: received = handled, nothing failed or timed out, no overrun,
#     nothing dropped, and the bus controllers' drivers were loaded first (modules_first);
#   - the loaded modules are exactly those Debian's udev initrd loads (expected_modules.txt);
#   - the daemon wrote at most 5 lines to the kernel log, and the kernel's rate limit dropped none;
#   - the guest's timeline (printed with hotring.timeline) makes a report and an SVG picture
#     (boot-timeline.svg in the outputs) with the module loads on it.
# The guest waits for the USB keyboard's HID device (hotring.settle_for=SUBSYSTEM=hid): the hub
# thread enumerates it only after xhci_pci is loaded, so it may come after coldplug settled.
# A second boot with root=LABEL=hotring-root (mkdisk.sh's label) must find /dev/vda by its
# superblock (settle --for LABEL=), switch to the ext4 root and run its marker program.
# Every assertion prints PASS or FAIL with what it saw; the consoles are kept in
# $TEST_UNDECLARED_OUTPUTS_DIR (bazel-testlogs/.../test.outputs/).
#
# HOTRING_BOOT_TEST_ARCH=aarch64 boots the same guest as qemu-system-aarch64's virt machine
# with Debian's arm64 kernel, its modules and busybox (testing/arm/fetch_kernel.sh) and
# HOTRING_BIN, a static aarch64 hotring (testing/arm/run_arm_tests.sh --boot runs it so). No
# Debian udev list exists for that guest: the loaded modules must include the drivers of its
# devices (expected_modules_aarch64.txt) and are printed; the timeline report is made by
# HOTRING_HOST_BIN (a host build) when given, since the board's binary cannot run here.
#
# Environment: HOTRING_BOOT_TEST_IMAGE_ARGS: extra mkimage.sh arguments (for instance
# "--with-shell --modprobe-handler" to have busybox modprobe load the drivers on a hotring
# without its modules stage); HOTRING_BOOT_TEST_SMP (default 1); HOTRING_BIN (default: the
# //:hotring of the runfiles).
set -u
# Bazel's strict action environment leaves out the sbin directories (depmod, mkfs.ext4).
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${TEST_SRCDIR:-}" ]; then
  runfiles="$TEST_SRCDIR/${TEST_WORKSPACE:-hotring}"
  here="$runfiles/testing/initramfs"
  hotring="${HOTRING_BIN:-$runfiles/hotring}"
else
  hotring="${HOTRING_BIN:-$here/../../bazel-bin/hotring}"
fi
out="${TEST_UNDECLARED_OUTPUTS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/boot-test.XXXXXX")}"
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/boot-test-work.XXXXXX")
trap 'rm -rf "$work"' EXIT
smp="${HOTRING_BOOT_TEST_SMP:-1}"
arch="${HOTRING_BOOT_TEST_ARCH:-x86_64}"

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "boot_test: $1 is missing (run testing/install_deps.sh)" >&2; exit 1; }
}
need file; need "qemu-system-$arch"; need cpio; need mkfs.ext4; need zstd; need depmod; need modprobe
[ -x /bin/busybox ] || { echo "boot_test: /bin/busybox is missing (busybox-static)" >&2; exit 1; }
# The sanitizer builds link dynamically: such a hotring cannot be an initramfs's /init.
if ! file -L "$hotring" | grep -q 'statically linked'; then
  . "$here/../skip_test.sh"
  skip_test boot_test "$hotring is not statically linked (a sanitizer build?); the boot needs the static binary"
fi
image_args="" disk_args="" host_hotring="${HOTRING_HOST_BIN:-}"
if [ "$arch" = x86_64 ]; then
  version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
  kernel="/boot/vmlinuz-$version"
  [ -r "$kernel" ] || { echo "boot_test: no Debian kernel in /boot (linux-image-amd64)" >&2; exit 1; }
  [ -n "$host_hotring" ] || host_hotring=$hotring
  image_args="--kernel-version $version"
else
  eval "$(sh "$here/../arm/fetch_kernel.sh" "$arch")" || { echo "boot_test: fetch_kernel.sh failed" >&2; exit 1; }
  image_args="--arch $arch"
  disk_args="--busybox $busybox"
fi
echo "boot_test: $arch, kernel $kernel, hotring $hotring, smp $smp"

# shellcheck disable=SC2086
sh "$here/mkimage.sh" --hotring "$hotring" --out "$work/hotring.img" $image_args \
  --mdev-conf "$here/mdev.conf" ${HOTRING_BOOT_TEST_IMAGE_ARGS:-} || { echo "boot_test: mkimage.sh failed" >&2; exit 1; }
# shellcheck disable=SC2086
sh "$here/mkdisk.sh" --out "$work/disk.img" $disk_args || { echo "boot_test: mkdisk.sh failed" >&2; exit 1; }

# --- boot 1: coldplug, report, power off ---
log="$out/console-test.log"
status=0
sh "$here/qemu_boot.sh" --kernel "$kernel" --initrd "$work/hotring.img" --disk "$work/disk.img" \
  --log "$log" --smp "$smp" --arch "$arch" --timeout 360 --append "hotring.test hotring.stat=/dev/vda hotring.settle_timeout=240 hotring.settle_for=SUBSYSTEM=hid hotring.timeline" \
  || status=$?
tr -d '\r' <"$log" >"$work/console"
fact() { sed -n "s|^hotring-report: $1 ||p" "$work/console"; }
echo "--- console (hotring lines) ---"
grep '^hotring' "$work/console" | grep -v '^hotring-timeline: ' | cut -c1-300
echo "---"
[ "$status" -eq 0 ] && pass "guest 1 powered off (qemu exit 0)" || fail "guest 1: qemu exited $status (124: timeout)"
grep -q '^hotring-report: end' "$work/console" && pass "report block complete" ||
  fail "no complete hotring-report block; console tail: $(tail -n 5 "$work/console" | tr '\n' '|')"
if grep -q '^hotring init: ' "$work/console"; then
  fail "init reported errors: $(grep '^hotring init: ' "$work/console" | head -n 3 | tr '\n' '|')"
fi
grep -q '^hotring: settled ' "$work/console" && pass "summary line printed" || fail "no summary line"

# /dev/vda: block device, owner and mode from mdev.conf (vd[a-z] 0:6 0640).
node=$(fact 'node /dev/vda')
case "$node" in
  *"type=block"*"uid=0 gid=6 mode=0640"*) pass "/dev/vda: $node" ;;
  *"type=block"*) fail "/dev/vda exists but not as mdev.conf says (want uid=0 gid=6 mode=0640): $node (rules stage missing?)" ;;
  *) fail "/dev/vda: ${node:-not reported} (virtio_blk not loaded?)" ;;
esac

# Both NICs, bound to their drivers.
nets=$(fact net | tr '\n' ';')
for driver in e1000 virtio_net; do
  echo "$nets" | grep -q "driver=$driver;" && pass "a NIC bound to $driver" ||
    fail "no NIC bound to $driver (have: ${nets:-none}; module not loaded from MODALIAS?)"
done

# The USB keyboard is an input device.
kbd=$(fact input | grep '/usb' | grep -i 'keyboard' | head -n 1)
[ -n "$kbd" ] && pass "USB keyboard: $kbd" ||
  fail "no USB keyboard among the input devices: $(fact input | tr '\n' ';') (xhci_pci/usbhid not loaded?)"

# Status counters.
st=$(fact status)
val() { echo " $st " | sed -n "s/.* $1=\([0-9]*\) .*/\1/p"; }
received=$(val received) handled=$(val handled)
if [ -z "$st" ]; then
  fail "no status line"
else
  [ -n "$received" ] && [ "$received" -gt 0 ] && [ "$received" = "$handled" ] &&
    pass "received = handled = $received" || fail "received=$received handled=$handled"
  for key in failed timed_out killed netlink_overruns held queued running; do
    v=$(val "$key")
    [ "$v" = 0 ] && pass "$key = 0" || fail "$key = ${v:-absent}"
  done
  drops=$(echo "$st" | tr ' ' '\n' | grep '^dropped_' | grep -v '=0$' | tr '\n' ' ')
  [ -z "$drops" ] && pass "nothing dropped" || fail "dropped: $drops"
  # The modules stage loads the drivers: its counter must be there (a status without it means
  # no stage loaded them) and say that no load failed.
  mf=$(val modules_failed)
  [ "$mf" = 0 ] && pass "modules_failed = 0" || fail "modules_failed = ${mf:-absent (no modules stage?)}"
  # The bus controllers' drivers went first: the xHCI chain (usb_common, usbcore, xhci_hcd,
  # xhci_pci), and not the IDE controller's.
  if [ "$arch" = x86_64 ]; then
    first=$(val modules_first)
    [ "$first" = 4 ] && pass "modules_first = $first (the xHCI controller's drivers first)" ||
      fail "modules_first = ${first:-absent} (want 4: usb_common, usbcore, xhci_hcd, xhci_pci)"
  fi
fi

# The kernel rate-limits /dev/kmsg writers (about 10 lines per 5 s): the daemon must say little
# (one summary when settled, errors aggregated), and nothing of it may have been suppressed.
km=$(fact kmsg)
kl=$(echo " $km " | sed -n 's/.* hotring_lines=\([0-9]*\) .*/\1/p')
ks=$(echo " $km " | sed -n 's/.* suppressed_notes=\([0-9]*\) .*/\1/p')
if [ -z "$kl" ]; then
  fail "no kmsg fact in the report"
else
  [ "$kl" -le 5 ] && pass "the daemon wrote $kl lines to the kernel log (at most 5)" ||
    fail "the daemon wrote $kl lines to the kernel log (want at most 5: the rate limit drops the rest)"
  [ "$ks" = 0 ] && pass "no kernel log line suppressed by the rate limit" ||
    fail "the kernel suppressed log lines ($ks notes): something the operator needs may be lost"
fi

# Loaded modules = Debian's udev initrd's (aarch64: include its devices' drivers).
fact modules | tr ' ' '\n' | sed '/^$/d' | sort -u >"$work/loaded"
expected_file="$here/expected_modules.txt"
[ "$arch" = x86_64 ] || expected_file="$here/expected_modules_$arch.txt"
grep -v '^#' "$expected_file" | sed '/^$/d' | sort -u >"$work/expected"
if [ "$arch" != x86_64 ]; then
  missing=$(comm -13 "$work/loaded" "$work/expected" | tr '\n' ' ')
  [ -z "$missing" ] && pass "loaded modules include the $(wc -l <"$work/expected") of $(basename "$expected_file"); all $(wc -l <"$work/loaded"): $(tr '\n' ' ' <"$work/loaded")" ||
    fail "modules not loaded: [$missing]; loaded: [$(tr '\n' ' ' <"$work/loaded")]"
elif cmp -s "$work/loaded" "$work/expected"; then
  pass "loaded modules = Debian udev's ($(wc -l <"$work/expected"))"
else
  fail "loaded modules differ from expected_modules.txt: missing [$(comm -13 "$work/loaded" "$work/expected" | tr '\n' ' ')] extra [$(comm -23 "$work/loaded" "$work/expected" | tr '\n' ' ')]"
fi

# The guest's timeline (hotring.timeline printed it): the report and its picture, kept with the
# consoles; module loads are on it as steps of the events that asked for them.
{ echo "# hotring timeline 1"; sed -n 's|^hotring-timeline: ||p' "$work/console"; } >"$out/timeline.txt"
if [ -z "$host_hotring" ]; then
  echo "NOTE: no HOTRING_HOST_BIN: the timeline picture is not made (the board's hotring cannot run here)"
elif "$host_hotring" report --from "$out/timeline.txt" --svg "$out/boot-timeline.svg" >"$out/report.txt" 2>&1 &&
  grep -q '<svg' "$out/boot-timeline.svg"; then
  pass "boot report and timeline picture ($(grep -c '^R ' "$out/timeline.txt") events, $(grep -c '^M ' "$out/timeline.txt") module loads): boot-timeline.svg"
else
  fail "hotring report on the guest's timeline: $(head -n 3 "$out/report.txt" | tr '\n' '|')"
fi
[ "$(grep -c '^M ' "$out/timeline.txt")" -gt 0 ] && pass "module loads on the timeline" ||
  fail "no module load on the guest's timeline"

# --- boot 2: switch_root to the ext4 disk ---
log2="$out/console-root.log"
status=0
sh "$here/qemu_boot.sh" --kernel "$kernel" --initrd "$work/hotring.img" --disk "$work/disk.img" \
  --log "$log2" --smp "$smp" --arch "$arch" --timeout 360 --append "root=LABEL=hotring-root rootfstype=ext4 hotring.settle_timeout=240" || status=$?
tr -d '\r' <"$log2" >"$work/console2"
echo "--- console of the root= boot (hotring and marker lines) ---"
grep -E '^hotring(:| init:|-marker:)' "$work/console2" | cut -c1-300
echo "---"
grep -q '^hotring init: root=LABEL=hotring-root is /dev/vda$' "$work/console2" &&
  pass "root=LABEL=hotring-root resolved to /dev/vda" ||
  fail "root=LABEL=hotring-root was not resolved to /dev/vda: $(grep '^hotring init: ' "$work/console2" | head -n 3 | tr '\n' '|')"
marker=$(grep '^hotring-marker: switched to the ext4 root' "$work/console2" | head -n 1)
case "$marker" in
  *"pid 1, root /dev/vda ext4"*) pass "switch_root: $marker" ;;
  "") fail "no marker from the ext4 root; console tail: $(tail -n 5 "$work/console2" | tr '\n' '|')" ;;
  *) fail "marker ran, but not as PID 1 on /dev/vda ext4: $marker" ;;
esac

if [ "$failures" -eq 0 ]; then
  echo "boot_test: all assertions passed"
  exit 0
fi
echo "boot_test: $failures assertion(s) failed (consoles in $out)"
exit 1
