#!/bin/sh
# Runs hotring's unit tests on ARM: builds the cc_test targets with the board toolchain
# (bazel --config=aarch64|armhf, static binaries), packs them with their runfiles, busybox and
# guest_init.sh into an initramfs, boots it with Debian's kernel for that architecture in qemu
# (-M virt, TCG; io_uring does not work under qemu's user-mode emulation, so a whole machine)
# and reads the results from the serial console.
#
#   run_arm_tests.sh [--arch aarch64|armhf] [--smp N] [--timeout S] [--keep DIR]
#                    [--time-scale N] [--bench | --boot] [TARGET...]
#
# TARGETs are Bazel labels or patterns (default: every cc_test of //core/... //io/...
# //hotplug/...), minus SKIPPED below. --timeout bounds the whole boot (default 3600 s).
# --keep DIR keeps the console log there. --time-scale N (default 10) is the guest's
# HOTRING_TEST_TIME_SCALE: the tests' deadlines that only guard against a hang (settle,
# readiness, stop) and the daemon timeouts a test sets short to run quickly are N times longer
# (testing::ScaledForEmulation); the bounds a test asserts as behaviour are not scaled.
# --bench runs no tests but `hotring bench reactor` and `bench events` in the guest (sizes cut
# for TCG), their output prefixed by BENCH.
# --boot (aarch64 only) runs no tests either but the boot test (testing/initramfs/boot_test.sh)
# with the board's hotring as the initramfs's /init, on qemu-system-aarch64's virt machine.
# Prints the guest's `TEST path PASS|FAIL` lines and a failed test's output, then one closing
# line "arm tests (ARCH): N passed, S skipped, M failed" counting GoogleTest cases, as
# run_tests.sh does.
# Exit status: 0 only when every test passed and the guest reported its summary.
#
# The kernel (linux-image-*-arm64 / linux-image-*-armmp-lpae) and busybox-static of the
# architecture are fetched with `apt-get download` and unpacked, never installed, into
# $HOTRING_ARM_CACHE (default /var/cache/hotring-arm) by fetch_kernel.sh.
# testing/install_deps.sh --all installs the cross compilers, the architecture's static libraries and
# qemu.
set -u
cd "$(dirname "$0")/../.."
arch=aarch64 smp=1 timeout=3600 keep="" bench="" boot="" time_scale=10
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --time-scale) time_scale=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    --boot) boot=1; shift ;;
    --) shift; break ;;
    -*) echo "run_arm_tests.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done

# Tests that need what only the build machine has, with the reason.
SKIPPED="
//hotplug/modules:kmod_compare_test compares with the host's kmod tools and /lib/modules
//hotplug/udevcompat:libudev_monitor_test links Debian's shared libudev, which the static board build does not have
"
# Cases that need it, as a GoogleTest filter per binary (the guest runs the rest), with the
# reason: the guest has busybox, not the host's gdisk, e2fsprogs, dosfstools, squashfs-tools,
# util-linux (blkid, sfdisk, setpriv, prlimit) or kmod.
SKIPPED_CASES="
//hotplug/udevcompat:udevcompat_handler_test -UdevCompatHandlerTest.VirtioDiskAndPartition:UdevCompatHandlerTest.LinkTakenByAnotherDeviceIsNotRemoved:UdevCompatHandlerTest.LabelsNeverLeaveTheDevRoot:UdevCompatHandlerTest.SymlinkedDirectoryInTheDevRootIsRefused:UdevCompatHandlerTest.MalformedSuperblockIsCountedAndTheEventStillHandled:UdevCompatHandlerTest.EventWithoutSeqnumIsRecordedButNotAnnounced make their disk images with the host's sgdisk and mkfs.ext4
//hotplug/udevcompat:blkid_test BlkidTest.LoopingExtendedChainIsAnError:BlkidTest.RandomBytesAfterSignaturesNeverCrash the others make images with the host's mkfs.*, sgdisk and sfdisk and compare with its blkid
//hotplug/modules:kmod_resolver_test -KmodResolverAgainstKmodTest.* compares with the host's kmod (modprobe)
//hotplug/replay:replay_test -ReplayTest.UnprivilegedReplayWritesTheSameManifest drops to nobody with the host's setpriv (util-linux)
//hotplug:daemon_faults_test -DaemonFaultsTest.ProcessCreationFailingFailsTheEventAndHandlersRunAgainAfterwards limits the daemon's processes with the host's prlimit (util-linux)
"

case "$arch" in
  aarch64) qemu="qemu-system-aarch64 -M virt -cpu cortex-a57" ;;
  # highmem=off: a 32-bit guest without the virt machine's PCI window above 4 GiB.
  armhf) qemu="qemu-system-arm -M virt,highmem=off -cpu cortex-a15" ;;
  *) echo "run_arm_tests.sh: --arch is aarch64 or armhf" >&2; exit 2 ;;
esac

# Sets deb_arch, triplet, kernel, version, modroot, busybox.
fetched=$(sh testing/arm/fetch_kernel.sh "$arch") || exit 1
eval "$fetched"

if [ -n "$boot" ]; then
  [ "$arch" = aarch64 ] || { echo "run_arm_tests.sh: --boot is for aarch64" >&2; exit 2; }
  bazel build --config="$arch" //:hotring || exit 1
  board_bin=$(bazel info --config="$arch" bazel-bin 2>/dev/null)/hotring
  # The host's build, if there is one, draws the guest's timeline (boot_test.sh).
  host_bin=$(bazel info bazel-bin 2>/dev/null)/hotring
  [ -x "$host_bin" ] || host_bin=""
  out=${keep:-$(mktemp -d "${TMPDIR:-/tmp}/arm-boot.XXXXXX")}
  mkdir -p "$out"
  HOTRING_BOOT_TEST_ARCH=$arch HOTRING_BIN=$board_bin HOTRING_HOST_BIN=$host_bin \
    HOTRING_BOOT_TEST_SMP=$smp TEST_UNDECLARED_OUTPUTS_DIR=$out \
    timeout --kill-after=5 "$timeout" sh testing/initramfs/boot_test.sh
  exit $?
fi

if [ -n "$bench" ]; then
  set --
elif [ $# -eq 0 ]; then
  set -- $(bazel query 'kind(cc_test, //core/... + //io/... + //hotplug/...)' 2>/dev/null)
else
  set -- $(bazel query "kind(cc_test, $(echo "$@" | sed 's/ / + /g'))" 2>/dev/null)
fi
targets=""
for t in "$@"; do
  echo "$SKIPPED" | grep -q "^$t " && continue
  targets="$targets $t"
done
[ -n "$targets" ] || [ -n "$bench" ] || { echo "run_arm_tests.sh: no tests to run" >&2; exit 2; }
[ -n "$bench" ] || echo "$SKIPPED" | sed -n 's|^\(//[^ ]*\) \(.*\)|SKIP \1: \2|p'
for t in $targets; do
  echo "$SKIPPED_CASES" | sed -n "s|^$t \([^ ]*\) \(.*\)|SKIP $t in part (runs GTEST_FILTER=\1): \2|p"
done

# hotring-bench (the benchmarks, beside hotring) only for --bench.
extra=""
[ -z "$bench" ] || extra=//:hotring-bench
# shellcheck disable=SC2086
bazel build --config="$arch" //:hotring $extra $targets || exit 1
bin=$(bazel info --config="$arch" bazel-bin 2>/dev/null)

work=$(mktemp -d "${TMPDIR:-/tmp}/arm-tests.XXXXXX")
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/etc" "$root/runfiles/hotring"
cp "$busybox" "$root/bin/busybox"
# A board's user and group names (mdev.conf's root:disk, tty...): Debian's base files, as on
# the build machine.
cp /etc/passwd /etc/group "$root/etc/"
cp testing/arm/guest_init.sh "$root/init"
chmod 755 "$root/init"
cp "$bin/hotring" "$root/runfiles/hotring/hotring"
[ -z "$bench" ] || cp "$bin/hotring-bench" "$root/runfiles/hotring/hotring-bench"
: >"$root/tests.txt"
if [ -n "$bench" ]; then
  # TCG runs ARM code many times slower than the host: a tenth of the default sizes.
  cat >"$root/bench.txt" <<'BENCH'
./hotring bench reactor --nops 200000 --pingpongs 20000
./hotring bench events --events 10000 --exec-events 200 --seed-events 50 --reorder-timeout 1
BENCH
fi
for t in $targets; do
  pkg=${t#//}
  pkg=${pkg%%:*}
  name=${t##*:}
  # Each test's runfiles tree (the binary and its data: //:hotring, helper programs), merged.
  cp -RLn "$bin/$pkg/$name.runfiles/hotring/." "$root/runfiles/hotring/"
  # The binary and its GoogleTest filter (empty: every case).
  echo "$pkg/$name $(echo "$SKIPPED_CASES" | sed -n "s|^$t \([^ ]*\) .*|\1|p")" >>"$root/tests.txt"
done
# Debug information is most of each static binary's size; the guest only needs the code.
find "$root/runfiles" -type f -perm -u+x | while read -r f; do
  head -c 4 "$f" | grep -q 'ELF' && chmod u+w "$f" && "$triplet-strip" --strip-debug "$f"
done
(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio"
size_mb=$(( $(stat -c %s "$work/initrd.cpio") / 1048576 ))
# The image is unpacked into RAM; the tests' temporary files live in RAM too.
mem=$(( size_mb * 2 + 768 ))
# armhf: at least 1 GiB, so the 32-bit kernel has high memory (its direct map ends near
# 760 MiB) and the tests cover what hotring does there: Debian's 6.1 armmp-lpae kernel oopses
# (NULL pointer in io_buffer_select) when a registered provided-buffer ring is pinned in high
# memory, so hotring provides buffers with IORING_OP_PROVIDE_BUFFERS instead (io/high_memory.h).
# The guest's RUNNER lines show HighTotal and `hotring selfcheck`.
[ "$arch" = armhf ] && [ "$mem" -lt 1024 ] && mem=1024
echo "arm tests ($arch): $(wc -l <"$root/tests.txt") test binaries, initramfs ${size_mb} MiB, guest ${mem} MiB, $smp vCPU (TCG)"

log="${keep:-$work}/console-$arch.log"
[ -n "$keep" ] && mkdir -p "$keep"
status=0
# shellcheck disable=SC2086
timeout --kill-after=5 "$timeout" $qemu -accel tcg -m "${mem}M" -smp "$smp" \
  -display none -monitor none -serial "file:$log" -no-reboot -nic none \
  -kernel "$kernel" -initrd "$work/initrd.cpio" \
  -append "console=ttyAMA0 quiet panic=-1 rdinit=/init hotring_test_time_scale=$time_scale" \
  </dev/null >/dev/null 2>"$log.qemu" || status=$?
tr -d '\r' <"$log" | grep -E '^(RUNNER|TEST|\| |SUMMARY|BENCH)'
summary=$(tr -d '\r' <"$log" | grep '^SUMMARY' | tail -n 1)
if [ -z "$summary" ]; then
  echo "run_arm_tests.sh: the guest ended without a summary (qemu exit $status); console: $log" >&2
  tail -n 20 "$log" >&2
  cat "$log.qemu" >&2
  echo "arm tests ($arch): 0 passed, 0 skipped, 1 failed"
  exit 1
fi
# SUMMARY T tests, F failed; cases: P passed, S skipped, C failed
tests_failed=$(echo "$summary" | sed -n 's/.* tests, \([0-9]*\) failed;.*/\1/p')
cases_passed=$(echo "$summary" | sed -n 's/.*cases: \([0-9]*\) passed.*/\1/p')
cases_skipped=$(echo "$summary" | sed -n 's/.* \([0-9]*\) skipped,.*/\1/p')
cases_failed=$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
echo "arm tests ($arch): $cases_passed passed, ${cases_skipped:-0} skipped, $cases_failed failed"
[ "$tests_failed" = 0 ] && [ "$cases_failed" = 0 ]
