#!/bin/sh
# Debian's own initramfs on hotring: the image initramfs-tools' mkinitramfs makes (its scripts,
# its rules.d) booted twice in qemu from the same disk with root=UUID=, once as Debian ships it
# (systemd-udevd and udevadm 252) and once with those two files replaced by links to hotring
# (mkimage_debian.sh --hotring; nothing else changed). The disk's /sbin/init (root_report.sh)
# reports what the initramfs left behind once the root is mounted and switched to. Asserted:
#   - with hotring, the root is mounted (/dev/vda, ext4) and its init runs;
#   - the same modules are loaded as with systemd-udevd in the same test (ext4 among them);
#   - the same /dev/disk links exist (by-diskseq compared by target: the kernel numbers disks
#     in probe order), and the root device's database entry has the same properties, links and
#     tags (DISKSEQ aside);
#   - the device database in /run/udev has as many entries as udevd's (it is handed over to the
#     root across switch_root);
#   - no device manager is left running after init-bottom's `udevadm control --exit`;
#   - the console shows no line from the drop-in (a `quiet` boot stays quiet).
# Then both again with input devices (a USB keyboard and a USB tablet) and what an image needs
# for them (mkimage_debian.sh --input: evdev and udev's input rules), and Debian's udevadm and
# libinput on the root disk (mkdisk.sh --input-tools): in the booted root, `udevadm info` of
# every event node and `libinput list-devices` (from the database hotring wrote in the
# initramfs) must say what they say after systemd-udevd, and libinput must list the keyboard
# and the tablet.
# The consoles are kept in $TEST_UNDECLARED_OUTPUTS_DIR. HOTRING_DEBIAN_BOOT_SMP (default 1);
# HOTRING_DEBIAN_BOOT_BASE: an image mkinitramfs made before, instead of running it (minutes).
# mkinitramfs needs initramfs-tools and udev (mkimage_debian.sh installs them when missing).
set -u
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${TEST_SRCDIR:-}" ]; then
  runfiles="$TEST_SRCDIR/${TEST_WORKSPACE:-hotring}"
  here="$runfiles/testing/initramfs"
  hotring="${HOTRING_BIN:-$runfiles/hotring}"
else
  hotring="${HOTRING_BIN:-$here/../../bazel-bin/hotring}"
fi
out="${TEST_UNDECLARED_OUTPUTS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/debian-boot-test.XXXXXX")}"
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/debian-boot-work.XXXXXX")
trap 'rm -rf "$work"' EXIT
smp="${HOTRING_DEBIAN_BOOT_SMP:-1}"
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
if ! file -L "$hotring" | grep -q 'statically linked'; then
  . "$here/../skip_test.sh"
  skip_test debian_boot_test "$hotring is not statically linked (a sanitizer build?); the boot needs the static binary"
fi
version=$(ls /lib/modules | grep -- '-amd64$' | sort -V | tail -n 1)
kernel="/boot/vmlinuz-$version"
[ -r "$kernel" ] || { echo "debian_boot_test: no Debian kernel in /boot (linux-image-amd64)" >&2; exit 1; }

base_args=""
[ -z "${HOTRING_DEBIAN_BOOT_BASE:-}" ] || base_args="--base $HOTRING_DEBIAN_BOOT_BASE"
# shellcheck disable=SC2086
sh "$here/mkimage_debian.sh" --out "$work/udev.img" --kernel-version "$version" $base_args ||
  { echo "debian_boot_test: mkimage_debian.sh (mkinitramfs) failed" >&2; exit 1; }
sh "$here/mkimage_debian.sh" --base "$work/udev.img" --hotring "$hotring" --out "$work/hotring.img" ||
  { echo "debian_boot_test: mkimage_debian.sh --hotring failed" >&2; exit 1; }
sh "$here/mkimage_debian.sh" --base "$work/udev.img" --input --out "$work/udev-input.img" ||
  { echo "debian_boot_test: mkimage_debian.sh --input failed" >&2; exit 1; }
sh "$here/mkimage_debian.sh" --base "$work/udev-input.img" --hotring "$hotring" --out "$work/hotring-input.img" ||
  { echo "debian_boot_test: mkimage_debian.sh --input --hotring failed" >&2; exit 1; }
sh "$here/mkdisk.sh" --out "$work/disk.img" --report-root || { echo "debian_boot_test: mkdisk.sh failed" >&2; exit 1; }
sh "$here/mkdisk.sh" --out "$work/disk-input.img" --report-root --input-tools ||
  { echo "debian_boot_test: mkdisk.sh --input-tools failed" >&2; exit 1; }
uuid=$(blkid -o value -s UUID "$work/disk.img")
uuid_input=$(blkid -o value -s UUID "$work/disk-input.img")
[ -n "$uuid" ] && [ -n "$uuid_input" ] || { echo "debian_boot_test: a disk has no UUID" >&2; exit 1; }
echo "debian_boot_test: kernel $kernel, hotring $hotring, smp $smp, root=UUID=$uuid"

boot() {  # IMAGE DISK UUID [QEMU ARGS]
  status=0
  sh "$here/qemu_boot.sh" --kernel "$kernel" --initrd "$work/$1.img" --disk "$work/$2" \
    --log "$out/console-$1.log" --smp "$smp" --timeout 360 --append "root=UUID=$3" \
    --qemu-args "${4:-}" || status=$?
  tr -d '\r' <"$out/console-$1.log" >"$work/$1.console"
  [ "$status" -eq 0 ] && pass "$1: the guest powered off (qemu exit 0)" ||
    fail "$1: qemu exited $status (124: timeout)"
  grep -q '^hotring-report: end' "$work/$1.console" && pass "$1: the root's init reported" ||
    fail "$1: no report from the root's init; console tail: $(tail -n 8 "$work/$1.console" | tr '\n' '|')"
}
for image in udev hotring; do boot "$image" disk.img "$uuid"; done
fact() { sed -n "s|^hotring-report: $2 ||p" "$work/$1.console"; }
echo "--- hotring's report ---"
grep '^hotring-report' "$work/hotring.console" | cut -c1-300
echo "---"

root=$(fact hotring root)
[ "$root" = "/dev/vda ext4" ] && pass "hotring: root=UUID=$uuid mounted: $root" ||
  fail "hotring: the root is '${root:-not mounted}', want /dev/vda ext4"

for image in udev hotring; do fact "$image" modules | tr ' ' '\n' | sed '/^$/d' | sort -u >"$work/$image.modules"; done
if [ -s "$work/udev.modules" ] && cmp -s "$work/udev.modules" "$work/hotring.modules"; then
  pass "the same $(wc -l <"$work/hotring.modules") modules as systemd-udevd's"
else
  fail "modules differ from systemd-udevd's (< udev, > hotring): $(diff "$work/udev.modules" "$work/hotring.modules" | grep '^[<>]' | tr '\n' ' ')"
fi
grep -qx ext4 "$work/hotring.modules" && pass "ext4 is loaded" || fail "ext4 is not loaded"

# Links: by-diskseq names depend on the kernel's probe order, so those compare by target.
links() { fact "$1" link | sed 's|^by-diskseq/[0-9]* |by-diskseq/N |' | sort; }
links udev >"$work/udev.links"; links hotring >"$work/hotring.links"
if [ -s "$work/udev.links" ] && cmp -s "$work/udev.links" "$work/hotring.links"; then
  pass "the same $(wc -l <"$work/hotring.links") /dev/disk links as systemd-udevd's"
else
  fail "/dev/disk links differ (< udev, > hotring): $(diff "$work/udev.links" "$work/hotring.links" | grep '^[<>]' | tr '\n' ' ')"
fi
grep -q "^by-uuid/$uuid -> ../../vda$" "$work/hotring.links" && pass "by-uuid/$uuid -> ../../vda" ||
  fail "no by-uuid/$uuid link to vda"

entry() { fact "$1" rootdb | grep -v '^E:DISKSEQ=' | sed 's|^S:disk/by-diskseq/[0-9]*$|S:disk/by-diskseq/N|' | sort; }
entry udev >"$work/udev.rootdb"; entry hotring >"$work/hotring.rootdb"
if [ -s "$work/udev.rootdb" ] && cmp -s "$work/udev.rootdb" "$work/hotring.rootdb"; then
  pass "the root device's database entry matches udevd's ($(wc -l <"$work/hotring.rootdb") lines)"
else
  fail "the root device's database entry differs (< udev, > hotring): $(diff "$work/udev.rootdb" "$work/hotring.rootdb" | grep '^[<>]' | tr '\n' ' ')"
fi
db_udev=$(fact udev db) db_hotring=$(fact hotring db)
[ -n "$db_hotring" ] && [ "$db_hotring" = "$db_udev" ] && pass "device database handed over: $db_hotring" ||
  fail "device database: hotring '$db_hotring', udevd '$db_udev'"

left=$(fact hotring left | tr '\n' ';')
[ -z "$left" ] && pass "no device manager left after udevadm control --exit" || fail "still running: $left"
[ -z "$(fact udev left)" ] || echo "note: systemd-udevd left running: $(fact udev left | tr '\n' ';')"

noise=$(grep -E '^(udevd|udevadm|systemd-udevd|hotring)[: ]' "$work/hotring.console" | head -n 3 | tr '\n' '|')
[ -z "$noise" ] && pass "the quiet console got no line from the drop-in" || fail "the drop-in wrote to the console: $noise"

# --- with input devices ---
for image in udev-input hotring-input; do
  boot "$image" disk-input.img "$uuid_input" "-device usb-tablet,bus=xhci.0"
done
echo "--- hotring-input's report (input and libinput lines) ---"
grep -E '^hotring-report: (input|libinput) ' "$work/hotring-input.console" | cut -c1-300
echo "---"
fact hotring-input input | sort >"$work/hotring.input"
fact udev-input input | sort >"$work/udev.input"
if [ -s "$work/udev.input" ] && cmp -s "$work/udev.input" "$work/hotring.input"; then
  pass "udevadm info in the root: the same properties of $(wc -l <"$work/hotring.input") event nodes as after systemd-udevd"
else
  fail "udevadm info of the event nodes differs (< udev, > hotring): $(diff "$work/udev.input" "$work/hotring.input" | grep '^[<>]' | tr '\n' ' ')"
fi
fact hotring-input libinput >"$work/hotring.libinput"
fact udev-input libinput >"$work/udev.libinput"
if [ -s "$work/udev.libinput" ] && cmp -s "$work/udev.libinput" "$work/hotring.libinput"; then
  pass "libinput list-devices in the root: the same $(grep -c '^Device:' "$work/hotring.libinput") devices as after systemd-udevd"
else
  fail "libinput list-devices differs (< udev, > hotring): $(diff "$work/udev.libinput" "$work/hotring.libinput" | grep '^[<>]' | tr '\n' ' ')"
fi
for device in "QEMU QEMU USB Keyboard" "QEMU QEMU USB Tablet"; do
  grep -qx "Device: $device" "$work/hotring.libinput" &&
    pass "libinput lists the $device" || fail "libinput does not list the $device"
done

boot_time() { fact "$1" time; }
echo "times (ms, from the kernel's Run /init to the root's init): udev $(boot_time udev); hotring $(boot_time hotring)"
if [ "$failures" -eq 0 ]; then
  echo "debian_boot_test: all assertions passed"
  exit 0
fi
echo "debian_boot_test: $failures assertion(s) failed (consoles in $out)"
exit 1
