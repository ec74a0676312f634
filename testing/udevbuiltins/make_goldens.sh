#!/bin/sh
# Regenerates the builtins' goldens (golden/cases.golden) with Debian 12's own udevadm 252: for
# each line of cases.txt, `udevadm test-builtin COMMAND /sys/DEVPATH` runs in private mount and
# network namespaces over the test devices' tree (make_builtin_tree), with tmpfs over
# /run/udev, /run/systemd (no logind) and /dev (holding the device's node: for a case with an
# image, a block node of a read-only loop device over the image of images/ unpacked, its
# numbers and disk sequence written into the case's copy of the tree, since 252 opens only a
# node whose numbers match the device's; otherwise an empty file) and debug logging; its
# properties, the key codes its log says it maps and the attributes it wrote become the case's
# answer. The disk images are made again first (make_images.sh, packed into images/*.sectors)
# unless --keep-images. Nothing of the host changes but a loop device for the length of a case;
# this machine's hwdb.bin is recorded by size (the test is skipped on a machine with another).
#
#   sh testing/udevbuiltins/make_goldens.sh [--keep-images]    (root, Debian 12)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
. "$repo/testing/debian_packages.sh"
need_reference_udev
version=$(dpkg-query -W -f='${Version}' udev)
work=$(mktemp -d /tmp/udevbuiltins-goldens.XXXXXX)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" != --keep-images ]; then
  sh "$here/make_images.sh" "$work/made" >/dev/null
  mkdir -p "$here/images"
  rm -f "$here/images/"*.sectors
  for f in "$work/made"/*; do
    python3 "$here/pack_image.py" pack "$f" > "$here/images/$(basename "$f").sectors"
  done
fi
mkdir -p "$work/images"
for f in "$here/images/"*.sectors; do
  python3 "$here/pack_image.py" unpack "$f" "$work/images/$(basename "$f" .sectors)"
done

bazel build //testing/udevbuiltins:make_builtin_tree >/dev/null 2>&1
"$repo/bazel-bin/testing/udevbuiltins/make_builtin_tree" "$work/pristine" > "$work/devices"
devpath_of() { awk -v n="$1" '$1 == n { print $2 }' "$work/devices"; }

out="$here/golden/cases.golden"
mkdir -p "$here/golden"
{
  echo "# udevadm test-builtin (udev $version); testing/udevbuiltins/make_goldens.sh made this"
  echo "hwdb $(stat -c %s /lib/udev/hwdb.bin)"
} > "$out.tmp"
echo "udev $version" > "$here/golden/VERSION"
grep -v '^#' "$here/cases.txt" | grep -v '^$' | while IFS= read -r line; do
  name=${line%% *}
  rest=${line#* }
  image=""
  case "$rest" in image=*) image=${rest%% *}; image=${image#image=}; rest=${rest#* } ;; esac
  command=$rest
  devpath=$(devpath_of "$name")
  [ -n "$devpath" ] || { echo "make_goldens: no device $name" >&2; exit 1; }
  run="$work/run"
  rm -rf "$run"
  mkdir -p "$run"
  cp -a "$work/pristine" "$run/sys"
  devname=$(sed -n 's/^DEVNAME=//p' "$run/sys$devpath/uevent")
  loop="" minor=""
  if [ -n "$image" ]; then
    loop=$(losetup -f --show -r "$work/images/$image")
    minor=${loop#/dev/loop}
    seq=$(cat "/sys/block/loop$minor/diskseq" 2>/dev/null || true)
    sed -i -e "s/^MAJOR=.*/MAJOR=7/" -e "s/^MINOR=.*/MINOR=$minor/" -e "s/^DISKSEQ=.*/DISKSEQ=$seq/" \
      "$run/sys$devpath/uevent"
    [ ! -f "$run/sys$devpath/dev" ] || echo "7:$minor" > "$run/sys$devpath/dev"
  fi
  cat > "$run/script" <<SCRIPT
set -e
mount --bind "$run/sys" /sys
mount -t tmpfs tmpfs /run/udev
mount -t tmpfs tmpfs /run/systemd
mount -t tmpfs tmpfs /dev
mknod -m 0666 /dev/null c 1 3
if [ -n "$devname" ]; then
  mkdir -p "/dev/\$(dirname "$devname")"
  if [ -n "$minor" ]; then mknod -m 0444 "/dev/$devname" b 7 "$minor"; else : > "/dev/$devname"; fi
fi
export SYSTEMD_DEVICE_VERIFY_SYSFS=0 SYSTEMD_LOG_LEVEL=debug
udevadm test-builtin '$(printf '%s' "$command" | sed "s/'/'\\\\''/g")' "/sys$devpath" > "$run/stdout" 2> "$run/stderr" && echo ok > "$run/result" || echo failed > "$run/result"
SCRIPT
  unshare -m -n --propagation private sh "$run/script"
  [ -z "$loop" ] || losetup -d "$loop"
  {
    echo "== $name${image:+ image=$image} $command"
    echo "devpath $devpath"
    sed -n 's/^\([A-Za-z0-9_]*=.*\)$/property \1/p' "$run/stdout"
    sed -n 's/.*keyboard: mapping scan code \([0-9]*\) (0x[0-9a-f]*) to key code \([0-9]*\) .*/keycode \1 \2/p' "$run/stderr"
    for attr in sensitivity force_release; do
      find "$run/sys/devices" -name "$attr" -type f | sort | while read -r f; do
        rel=${f#"$run/sys"}
        if ! cmp -s "$f" "$work/pristine$rel"; then
          echo "write $(dirname "$rel") $attr $(cat "$f")"
        fi
      done
    done
    echo "result $(cat "$run/result")"
  } >> "$out.tmp"
done
mv "$out.tmp" "$out"
echo "$out"
