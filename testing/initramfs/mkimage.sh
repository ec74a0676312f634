#!/bin/sh
# Makes hotring's initramfs: a compressed cpio with the static hotring, /init -> hotring, the
# kernel's modules with their indexes (depmod) and modprobe.d, /etc/mdev.conf, /etc/passwd and
# /etc/group, and nothing else the boot needs.
#
#   mkimage.sh --hotring BIN --out IMAGE [options]
#     --kernel-version V     modules of /lib/modules/V (default: the newest *-amd64 there)
#     --modules-root DIR     where lib/modules lives (default /)
#     --arch aarch64|armhf   hotring is a board's build (bazel --config=ARCH): it is not run on
#                            this machine (kmod's modprobe resolves the modules; /sbin/modprobe is
#                            still hotring), and the kernel's modules and busybox are Debian's for
#                            that architecture (testing/arm/fetch_kernel.sh fetches them) unless
#                            --modules-root / --kernel-version / --busybox say otherwise
#     --busybox FILE         the busybox-static of --with-shell (default /bin/busybox)
#     (module choice, default: the "most" set below, like initramfs-tools' MODULES=most)
#     --host-only            only what this machine's modaliases resolve to, with dependencies
#                            and softdeps (like dracut's host-only mode)
#     --modules LIST         exactly these modules (comma or space separated), with deps
#     --add-modules LIST     these modules too, whatever the set (e.g. evdev for libinput)
#     --mdev-conf FILE       the image's /etc/mdev.conf (default: mdev.conf beside this script)
#     --with-shell           add busybox-static (/bin/sh and a few applets)
#     --modprobe-handler     (needs --with-shell) the daemon runs `--exec` of a tiny script that
#                            does `modprobe -b $MODALIAS`: for kernels and builds where hotring
#                            does not load modules itself
#     --daemon-arg ARG       one more `hotring daemon` argument (repeatable)
#     --compress zstd|gzip|none   (default zstd; Debian's 6.1 kernel has RD_ZSTD and RD_GZIP)
#     --init SCRIPT          /init is SCRIPT instead of hotring, and hotring is left out (the
#                            other loaders `bench boot` compares; needs --with-shell)
#     --add SRC=DEST         copy file SRC to DEST in the image (repeatable)
#
# With depmod's output in the image, hotring (or a modprobe) resolves MODALIAS in the guest.
# /sbin/modprobe is hotring itself when this hotring has the `modprobe` applet (so the kernel's
# request_module, e.g. for fs-ext4 at mount time, works without kmod), else busybox's when there
# is a shell.
set -eu
# Bazel's strict action environment leaves out the sbin directories (depmod, mkfs.ext4).
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd)
hotring="" out="" version="" modroot=/ mode=most modules="" mdev_conf="$here/mdev.conf"
with_shell=0 modprobe_handler=0 compress=zstd daemon_args="" init_script="" adds="" more_modules=""
arch="" busybox=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hotring) hotring=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --kernel-version) version=$2; shift 2 ;;
    --modules-root) modroot=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --busybox) busybox=$2; shift 2 ;;
    --host-only) mode=host; shift ;;
    --modules) mode=list; modules=$(echo "$2" | tr ',' ' '); shift 2 ;;
    --add-modules) more_modules="$more_modules $(echo "$2" | tr ',' ' ')"; shift 2 ;;
    --mdev-conf) mdev_conf=$2; shift 2 ;;
    --with-shell) with_shell=1; shift ;;
    --modprobe-handler) modprobe_handler=1; shift ;;
    --daemon-arg) daemon_args="$daemon_args$2
"; shift 2 ;;
    --compress) compress=$2; shift 2 ;;
    --init) init_script=$2; shift 2 ;;
    --add) adds="$adds$2
"; shift 2 ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "mkimage.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "mkimage.sh: --out is required" >&2; exit 2; }
if [ -n "$init_script" ]; then
  [ "$with_shell" = 1 ] || { echo "mkimage.sh: --init needs --with-shell" >&2; exit 2; }
else
  [ -n "$hotring" ] || { echo "mkimage.sh: --hotring is required" >&2; exit 2; }
  [ -x "$hotring" ] || { echo "mkimage.sh: $hotring is not executable" >&2; exit 1; }
  file -L "$hotring" | grep -q 'statically linked' || { echo "mkimage.sh: $hotring is not static" >&2; exit 1; }
fi
if [ -n "$arch" ]; then
  # Debian's kernel and busybox for the board; what the caller named wins.
  eval "$(sh "$here/../arm/fetch_kernel.sh" "$arch" | sed 's/\([a-z_]*\)=/fetched_\1=/g')"
  [ "$modroot" != / ] || { modroot=$fetched_modroot; [ -n "$version" ] || version=$fetched_version; }
  [ -n "$busybox" ] || busybox=$fetched_busybox
fi
[ -n "$busybox" ] || busybox=/bin/busybox
[ -n "$version" ] || version=$(ls "$modroot/lib/modules" | grep -- '-amd64$' | sort -V | tail -n 1)
moddir="$modroot/lib/modules/$version"
[ -f "$moddir/modules.dep" ] || { echo "mkimage.sh: no modules.dep in $moddir" >&2; exit 1; }
if [ "$modprobe_handler" = 1 ] && [ "$with_shell" = 0 ]; then
  echo "mkimage.sh: --modprobe-handler needs --with-shell (it is a shell script)" >&2; exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mkimage.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root/bin" "$root/sbin" "$root/etc/hotring" "$root/dev" "$root/proc" "$root/sys" \
  "$root/run" "$root/root" "$root/lib/modules/$version"

# Resolution (aliases, dependencies, softdeps) by hotring's own modprobe when this hotring has
# one (its options are kmod's), else by kmod's. Resolution only: nothing is loaded here.
resolver=modprobe
# A board's hotring has the same applets as this tree's host build; it just cannot run here.
hotring_modprobe=0
if [ -n "$hotring" ] && [ -n "$arch" ]; then
  hotring_modprobe=1
elif [ -n "$hotring" ] && "$hotring" modprobe --help >/dev/null 2>&1; then
  hotring_modprobe=1
  resolver="$hotring modprobe"
fi

# The module names to put in, before dependencies.
case "$mode" in
  most)
    # initramfs-tools' MODULES=most, trimmed to what an x86 PC or VM can boot from: storage,
    # NICs, USB hosts and HID, keyboards, i2c buses, and the usual root filesystems.
    for d in drivers/block drivers/ata drivers/scsi drivers/nvme drivers/virtio drivers/net/ethernet \
      drivers/usb/host drivers/usb/storage drivers/hid drivers/input/keyboard drivers/i2c/busses \
      drivers/mmc; do
      [ -d "$moddir/kernel/$d" ] && find "$moddir/kernel/$d" -name '*.ko*'
    done | sed 's|.*/||; s|\.ko.*||' >"$work/names"
    printf '%s\n' virtio_net virtio_pci virtio_mmio ext4 ext2 vfat btrfs xfs isofs psmouse atkbd \
      af_packet >>"$work/names"
    ;;
  host)
    # Every modalias this machine's devices announce, resolved to module names.
    find /sys/devices -name modalias -type f 2>/dev/null | xargs cat 2>/dev/null | sort -u |
      while read -r alias; do
        $resolver -S "$version" -d "$modroot" -R "$alias" 2>/dev/null || true
      done >"$work/names"
    # What mounts the root and reads the console here, which are no modaliases.
    printf '%s\n' ext4 >>"$work/names"
    ;;
  list)
    printf '%s\n' $modules >"$work/names"
    ;;
esac
[ -z "$more_modules" ] || printf '%s\n' $more_modules >>"$work/names"
sort -u "$work/names" -o "$work/names"

# Dependencies and softdeps: --show-depends lists what modprobe would insmod, in order.
: >"$work/paths"
xargs -r $resolver -S "$version" -d "$modroot" --show-depends -a <"$work/names" 2>"$work/missing" |
  sed -n 's/^insmod \([^ ]*\).*/\1/p' | sort -u >"$work/paths" || true
if [ -s "$work/missing" ]; then
  sed 's/^/mkimage.sh: /' "$work/missing" >&2
  # A name someone listed must exist; the generated sets may name modules this kernel lacks.
  [ "$mode" = list ] && { echo "mkimage.sh: --modules names modules $version does not have" >&2; exit 1; }
fi
count=$(wc -l <"$work/paths")
# One cpio pass copies them all with their directories (a cp per file is minutes on a busy host).
sed "s|^$moddir/||" "$work/paths" | (cd "$moddir" && cpio -pdm --quiet "$root/lib/modules/$version")
for f in modules.order modules.builtin modules.builtin.modinfo; do
  [ -f "$moddir/$f" ] && cp "$moddir/$f" "$root/lib/modules/$version/"
done
depmod -b "$root" "$version"
for d in lib/modprobe.d etc/modprobe.d; do
  if [ -d "$modroot/$d" ]; then
    mkdir -p "$root/$d"
    find "$modroot/$d" -maxdepth 1 -name '*.conf' -exec cp {} "$root/$d/" \;
  fi
done

if [ -n "$init_script" ]; then
  cp "$init_script" "$root/init"
  chmod 755 "$root/init"
else
  # Stripped, as initramfs builders do: the symbols and debug sections are most of an
  # unstripped build (18 MB against 4 MB), and every MB of image delays /init (~0.07 s here).
  case "$arch" in
    aarch64) strip_tool=aarch64-linux-gnu-strip ;;
    armhf) strip_tool=arm-linux-gnueabihf-strip ;;
    *) strip_tool=strip ;;
  esac
  if command -v "$strip_tool" >/dev/null 2>&1; then
    "$strip_tool" -o "$root/bin/hotring" "$hotring"
  else
    echo "mkimage.sh: no $strip_tool: hotring goes in unstripped" >&2
    cp "$hotring" "$root/bin/hotring"
  fi
  ln -s bin/hotring "$root/init"
fi
cp "$mdev_conf" "$root/etc/mdev.conf"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\ntty:x:5:\ninput:x:101:\n' >"$root/etc/group"
printf '%s' "$daemon_args" >"$root/etc/hotring/daemon.args"
if [ -z "$init_script" ] && [ "$hotring_modprobe" = 1 ]; then
  ln -s ../bin/hotring "$root/sbin/modprobe"
fi
if [ "$with_shell" = 1 ]; then
  cp "$busybox" "$root/bin/busybox"
  for a in sh ls cat mount umount poweroff mdev find xargs sort uniq awk sleep wc grep tr cut \
    readlink basename head tail; do ln -s busybox "$root/bin/$a"; done
  [ -e "$root/sbin/modprobe" ] || ln -s ../bin/busybox "$root/sbin/modprobe"
fi
if [ "$modprobe_handler" = 1 ]; then
  mkdir -p "$root/lib/hotring"
  cat >"$root/lib/hotring/modalias-handler" <<'H'
#!/bin/sh
# An alias no module serves is normal (most devices need none): not a failed event.
[ "$ACTION" = add ] && [ -n "$MODALIAS" ] && /sbin/modprobe -b -q "$MODALIAS"
exit 0
H
  chmod 755 "$root/lib/hotring/modalias-handler"
  printf -- '--exec\n/lib/hotring/modalias-handler\n' >>"$root/etc/hotring/daemon.args"
fi
printf '%s' "$adds" | while IFS= read -r spec; do
  [ -n "$spec" ] || continue
  mkdir -p "$root/$(dirname "${spec#*=}")"
  cp "${spec%%=*}" "$root/${spec#*=}"
done
# The kernel opens /dev/console before /init; hotring reopens it from devtmpfs if this fails.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

case "$compress" in
  zstd) cz="zstd -q -9 -T0 -c" ;;
  gzip) cz="gzip -6 -c" ;;
  none) cz="cat" ;;
  *) echo "mkimage.sh: unknown --compress $compress" >&2; exit 2 ;;
esac
( cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) | $cz >"$out.tmp"
mv "$out.tmp" "$out"
echo "mkimage.sh: $out: $count modules, $(du -k "$out" | cut -f1) KiB ($compress)" >&2
