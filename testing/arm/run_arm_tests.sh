#!/bin/sh
# Runs hotring's unit tests on ARM: builds the cc_test targets with the board toolchain
# (bazel --config=aarch64|armhf, static binaries), packs them with their runfiles, busybox and
# guest_init.sh into an initramfs, boots it with Debian's kernel for that architecture in qemu
# (-M virt, TCG; io_uring does not work under qemu's user-mode emulation, so a whole machine)
# and reads the results from the serial console.
#
#   run_arm_tests.sh [--arch aarch64|armhf] [--smp N] [--timeout S] [--keep DIR]
#                    [--bench] [TARGET...]
#
# TARGETs are Bazel labels or patterns (default: every cc_test of //core/... //io/...
# //hotplug/...), minus SKIPPED below. --timeout bounds the whole boot (default 3600 s).
# --keep DIR keeps the console log there. --bench runs no tests but `hotring bench reactor`
# and `bench events` in the guest (sizes cut for TCG), their output prefixed by BENCH.
# Prints the guest's `TEST path PASS|FAIL` lines and a failed test's output, then one closing
# line "arm tests (ARCH): N passed, M failed" counting GoogleTest cases, as run_tests.sh does.
# Exit status: 0 only when every test passed and the guest reported its summary.
#
# The kernel (linux-image-*-arm64 / linux-image-*-armmp-lpae) and busybox-static of the
# architecture are fetched with `apt-get download` and unpacked, never installed, into
# $HOTRING_ARM_CACHE (default /var/cache/hotring-arm). testing/install_deps.sh installs the
# cross compilers, the architecture's static libraries and qemu.
set -u
cd "$(dirname "$0")/../.."
arch=aarch64 smp=1 timeout=3600 keep="" bench=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    --) shift; break ;;
    -*) echo "run_arm_tests.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done

# Tests that need what only the build machine has, with the reason.
SKIPPED="
//hotplug/modules:kmod_compare_test compares with the host's kmod tools and /lib/modules
"

case "$arch" in
  aarch64)
    deb_arch=arm64 triplet=aarch64-linux-gnu flavour=arm64
    qemu="qemu-system-aarch64 -M virt -cpu cortex-a57"
    ;;
  armhf)
    deb_arch=armhf triplet=arm-linux-gnueabihf flavour=armmp-lpae
    qemu="qemu-system-arm -M virt,highmem=off -cpu cortex-a15"
    ;;
  *) echo "run_arm_tests.sh: --arch is aarch64 or armhf" >&2; exit 2 ;;
esac

cache="${HOTRING_ARM_CACHE:-/var/cache/hotring-arm}/$deb_arch"
mkdir -p "$cache"
# apt-get download: Debian's kernel and busybox for the architecture, unpacked once.
fetch() {  # fetch PACKAGE DIR
  [ -d "$cache/$2" ] && return 0
  (cd "$cache" && apt-get download "$1:$deb_arch" >/dev/null 2>"$cache/$2.apt") || {
    echo "run_arm_tests.sh: apt-get download $1:$deb_arch failed:" >&2
    cat "$cache/$2.apt" >&2
    return 1
  }
  deb=$(ls -t "$cache"/"$1"_*_"$deb_arch".deb | head -n 1)
  dpkg-deb -x "$deb" "$cache/$2.tmp" && mv "$cache/$2.tmp" "$cache/$2" && rm -f "$deb" "$cache/$2.apt"
}
kernel_pkg=$(apt-cache depends "linux-image-$flavour:$deb_arch" 2>/dev/null |
  sed -n "s/.*Depends: \(linux-image-[0-9][^:]*\).*/\1/p" | head -n 1)
[ -n "$kernel_pkg" ] || {
  echo "run_arm_tests.sh: no linux-image-$flavour for $deb_arch (dpkg --add-architecture $deb_arch; apt-get update)" >&2
  exit 1
}
fetch "$kernel_pkg" "$kernel_pkg" || exit 1
fetch busybox-static busybox || exit 1
kernel=$(ls "$cache/$kernel_pkg"/boot/vmlinuz-* | head -n 1)

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

# shellcheck disable=SC2086
bazel build --config="$arch" //:hotring $targets || exit 1
bin=$(bazel info --config="$arch" bazel-bin 2>/dev/null)

work=$(mktemp -d "${TMPDIR:-/tmp}/arm-tests.XXXXXX")
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/runfiles/hotring"
cp "$cache/busybox/bin/busybox" "$root/bin/busybox"
cp testing/arm/guest_init.sh "$root/init"
chmod 755 "$root/init"
cp "$bin/hotring" "$root/runfiles/hotring/hotring"
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
  echo "$pkg/$name" >>"$root/tests.txt"
done
# Debug information is most of each static binary's size; the guest only needs the code.
find "$root/runfiles" -type f -perm -u+x | while read -r f; do
  head -c 4 "$f" | grep -q 'ELF' && chmod u+w "$f" && "$triplet-strip" --strip-debug "$f"
done
(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio"
size_mb=$(( $(stat -c %s "$work/initrd.cpio") / 1048576 ))
# The image is unpacked into RAM; the tests' temporary files live in RAM too.
mem=$(( size_mb * 2 + 768 ))
echo "arm tests ($arch): $(wc -l <"$root/tests.txt") test binaries, initramfs ${size_mb} MiB, guest ${mem} MiB, $smp vCPU (TCG)"

log="${keep:-$work}/console-$arch.log"
[ -n "$keep" ] && mkdir -p "$keep"
status=0
# shellcheck disable=SC2086
timeout --kill-after=5 "$timeout" $qemu -accel tcg -m "${mem}M" -smp "$smp" \
  -display none -monitor none -serial "file:$log" -no-reboot -nic none \
  -kernel "$kernel" -initrd "$work/initrd.cpio" \
  -append "console=ttyAMA0 quiet panic=-1 rdinit=/init" \
  </dev/null >/dev/null 2>"$log.qemu" || status=$?
tr -d '\r' <"$log" | grep -E '^(RUNNER|TEST|\| |SUMMARY)'
summary=$(tr -d '\r' <"$log" | grep '^SUMMARY' | tail -n 1)
if [ -z "$summary" ]; then
  echo "run_arm_tests.sh: the guest ended without a summary (qemu exit $status); console: $log" >&2
  tail -n 20 "$log" >&2
  cat "$log.qemu" >&2
  echo "arm tests ($arch): 0 passed, 1 failed"
  exit 1
fi
# SUMMARY T tests, F failed; cases: P passed, C failed
tests_failed=$(echo "$summary" | sed -n 's/.* tests, \([0-9]*\) failed;.*/\1/p')
cases_passed=$(echo "$summary" | sed -n 's/.*cases: \([0-9]*\) passed.*/\1/p')
cases_failed=$(echo "$summary" | sed -n 's/.*passed, \([0-9]*\) failed$/\1/p')
echo "arm tests ($arch): $cases_passed passed, $cases_failed failed"
[ "$tests_failed" = 0 ] && [ "$cases_failed" = 0 ]
