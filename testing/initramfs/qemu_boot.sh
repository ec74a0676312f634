#!/bin/sh
# Boots one initramfs in the test guest and writes its serial console to a log file.
#
#   qemu_boot.sh --kernel VMLINUZ --initrd IMAGE --disk EXT4_IMAGE --log FILE
#                [--smp N] [--append "KERNEL ARGS"] [--timeout S (default 120)]
#                [--qemu-args "MORE QEMU ARGS"]   (split on blanks: more devices, a second serial)
#                [--arch x86_64|aarch64] [--console-input FILE]
#
# The guest: qemu-system-x86_64 with TCG (never KVM: it hangs on our machines), 512 MiB, a
# virtio disk, an e1000 and a virtio-net NIC, a USB keyboard behind an xHCI controller, serial
# console. The NICs sit on qemu hubs with nothing else attached: no packet can leave the host.
# The kernel powers the guest off (or panics, with panic=-1 and -no-reboot, which ends qemu too).
# no_timer_check: a TCG guest starved by a busy host misses the kernel's early IO-APIC timer
# check and panics ("IO-APIC + timer doesn't work!"), as seen here under load average 18.
# --arch aarch64: the same devices (all on PCI) in qemu-system-aarch64's virt machine with a
# Cortex-A57, console on its PL011 (ttyAMA0); the x86-only no_timer_check is left out.
# --console-input FILE: the serial console's input is read from FILE (a FIFO the caller writes
# to, to type into a shell on the console); its output still goes to --log.
# Exit status: qemu's, or 124 when the timeout killed it.
set -eu
kernel="" initrd="" disk="" log="" smp=1 append="" timeout=120 qemu_args="" arch=x86_64 input=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) kernel=$2; shift 2 ;;
    --initrd) initrd=$2; shift 2 ;;
    --disk) disk=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --append) append=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --qemu-args) qemu_args=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --console-input) input=$2; shift 2 ;;
    *) echo "qemu_boot.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$kernel" ] && [ -n "$initrd" ] && [ -n "$disk" ] && [ -n "$log" ] || {
  echo "qemu_boot.sh: --kernel, --initrd, --disk and --log are required" >&2; exit 2; }
case "$arch" in
  x86_64) machine="qemu-system-x86_64" console="console=ttyS0 no_timer_check" ;;
  aarch64) machine="qemu-system-aarch64 -M virt -cpu cortex-a57" console="console=ttyAMA0" ;;
  *) echo "qemu_boot.sh: --arch is x86_64 or aarch64" >&2; exit 2 ;;
esac
# The console: written to the log, or with --console-input on qemu's stdio (stdin from FILE,
# stdout to the log).
serial="file:$log" in="/dev/null" out="/dev/null"
[ -z "$input" ] || { serial=stdio in=$input out=$log; }
status=0
# shellcheck disable=SC2086
timeout --kill-after=5 "$timeout" $machine \
  -accel tcg -m 512M -smp "$smp" \
  -display none -monitor none -serial "$serial" -no-reboot \
  -kernel "$kernel" -initrd "$initrd" \
  -append "$console quiet panic=-1 $append" \
  -drive "file=$disk,if=virtio,format=raw,snapshot=on" \
  -nic none \
  -netdev hubport,id=net0,hubid=0 -device e1000,netdev=net0 \
  -netdev hubport,id=net1,hubid=1 -device virtio-net-pci,netdev=net1 \
  -device qemu-xhci,id=xhci -device usb-kbd,bus=xhci.0 \
  $qemu_args \
  <"$in" >"$out" 2>"$log.qemu" || status=$?
exit "$status"
