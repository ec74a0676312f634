#!/bin/sh
# Regenerates the goldens of the udev rules tests (golden/SET/DEVICE[.ACTION].golden) with
# Debian 12's own udevadm 252: for each rule set and device, `udevadm test --action=ACTION
# /sys/DEVPATH` runs in a private mount and network namespace over the test devices' tree
# (make_tree), with the set's rules over /etc/udev/rules.d, empty system rule directories (the
# "debian" set keeps Debian's /lib/udev/rules.d), tmpfs over /run/udev (holding the fixtures'
# database entries) and /dev (holding /dev/null and the device's node, root:root 0600), the
# fixtures' passwd, group, kernel command line and /proc/sys, and the rules' programs in
# /lib/udev. Nothing of the host changes. What udevadm printed, the node's owner and mode
# afterwards, the files it wrote, its database entry and what it logged while loading the rules
# become the golden (udevadm_to_golden.py says how). Builtins udevd ran are run again with
# `udevadm test-builtin` and their answers recorded, so that tests can replay those hotring
# does not have.
#
#   sh testing/udevrules/make_goldens.sh            (as root, on Debian 12; installs udev)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

. "$repo/testing/debian_packages.sh"
need_reference_udev  # installed without starting anything
version=$(dpkg-query -W -f='${Version}' udev)

bazel build //testing/udevrules:make_tree >/dev/null 2>&1
work=$(mktemp -d /tmp/udevrules-goldens.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$repo/bazel-bin/testing/udevrules/make_tree" "$work/pristine" > "$work/devices"
mkdir -p "$work/empty"

devpath_of() { awk -v n="$1" '$1 == n { print $2 }' "$work/devices"; }

# The mounts of one run, then the command "$@", inside the namespace.
# Environment: SET (rule set), SYS (tree), PROCSYS (a copy of fixtures/proc_sys), NODE
# ("c MAJ MIN NAME" or "").
namespace_script() {
  cat <<SCRIPT
set -e
mount --bind "$SYS" /sys
mount -t tmpfs tmpfs /run/udev
mkdir -p /run/udev/data
awk '/^== / { f = "/run/udev/data/" \$2; next } { print > f }' "$here/fixtures/database"
mount -t tmpfs tmpfs /dev
mknod -m 0666 /dev/null c 1 3
if [ -n "$NODE" ]; then
  set -- $NODE
  mkdir -p "/dev/\$(dirname "\$4")"
  mknod -m 0600 "/dev/\$4" "\$1" "\$2" "\$3"
fi
mount --bind "$here/fixtures/root/etc/passwd" /etc/passwd
mount --bind "$here/fixtures/root/etc/group" /etc/group
mount --bind "$here/fixtures/cmdline" /proc/cmdline
# In a container systemd reads the command line of PID 1 instead.
mount --bind "$here/fixtures/cmdline" /proc/1/cmdline
mount --bind "$PROCSYS" /proc/sys
if [ "$SET" = debian ]; then
  mount --bind "$work/empty" /etc/udev/rules.d
else
  mount -t tmpfs tmpfs /usr/lib/udev
  mkdir -p /usr/lib/udev/rules.d
  cp "$here"/bin/* "$here/fixtures/rt-import.env" /usr/lib/udev/
  if [ -d "$here/rules/$SET/etc" ]; then
    mount --bind "$here/rules/$SET/etc" /etc/udev/rules.d
    cp -P "$here/rules/$SET"/lib/* /usr/lib/udev/rules.d/
    mkdir -p /run/udev/rules.d
    cp -P "$here/rules/$SET"/run/* /run/udev/rules.d/
  else
    mount --bind "$here/rules/$SET" /etc/udev/rules.d
  fi
fi
export SYSTEMD_DEVICE_VERIFY_SYSFS=0
SCRIPT
}

# One run: set, device name, action.
run_one() {
  SET=$1
  name=$2
  action=$3
  devpath=$(devpath_of "$name")
  [ -n "$devpath" ] || { echo "make_goldens: no device $name" >&2; exit 1; }
  run="$work/run"
  rm -rf "$run"
  mkdir -p "$run"
  SYS="$run/sys"
  cp -a "$work/pristine" "$SYS"
  PROCSYS="$run/proc_sys"
  cp -a "$here/fixtures/proc_sys" "$PROCSYS"
  NODE=""
  uevent="$SYS$devpath/uevent"
  major=$(sed -n 's/^MAJOR=//p' "$uevent")
  minor=$(sed -n 's/^MINOR=//p' "$uevent")
  devname=$(sed -n 's/^DEVNAME=//p' "$uevent")
  if [ -n "$major" ] && [ -n "$devname" ]; then
    kind=c
    [ "$(basename "$(readlink "$SYS$devpath/subsystem")")" = block ] && kind=b
    NODE="$kind $major $minor $devname"
  fi
  export SET SYS PROCSYS NODE
  { namespace_script
    cat <<SCRIPT
udevadm test --action=$action /sys$devpath > "$run/stdout" 2> "$run/stderr" || echo "exit \$?" > "$run/exit"
if [ -n "$devname" ] && [ -e "/dev/$devname" ]; then stat -c '%u %g %a' "/dev/$devname" > "$run/node"; fi
for f in /run/udev/data/*; do
  case "\$f" in *:*|*/n[0-9]*) ;; *) continue ;; esac
  echo "== \$(basename "\$f") \$(stat -c %a "\$f")" >> "$run/db"
  cat "\$f" >> "$run/db"
done
SCRIPT
  } > "$run/script"
  unshare -m -n --propagation private sh "$run/script"
  # The builtins udevd ran, asked again one by one.
  sed -n "s/.*Importing properties from results of builtin command '\(.*\)'\$/\1/p" "$run/stderr" |
    sort -u > "$run/builtins"
  while IFS= read -r command; do
    SYS="$run/sys2"
    rm -rf "$SYS"
    cp -a "$work/pristine" "$SYS"
    export SYS
    { namespace_script
      printf 'udevadm test-builtin "%s" "/sys%s" > "%s/b.out" 2>/dev/null && echo "#ok" >> "%s/b.out" || echo "#failed" >> "%s/b.out"\n' \
        "$command" "$devpath" "$run" "$run" "$run"
    } > "$run/bscript"
    unshare -m -n --propagation private sh "$run/bscript"
    { printf '%s\n' "$command"; cat "$run/b.out"; printf '#end\n'; } >> "$run/builtin_answers"
    SYS="$run/sys"
    export SYS
  done < "$run/builtins"
  out="$here/golden/$SET/$name$([ "$action" = add ] || echo ".$action").golden"
  mkdir -p "$(dirname "$out")"
  # The rules files udevd read, in order (the same for every device of a set).
  sed -n 's/^Reading rules file: //p' "$run/stderr" > "$here/golden/$SET/rules.files"
  python3 "$here/udevadm_to_golden.py" --run "$run" --pristine "$work/pristine" \
    --proc-sys "$here/fixtures/proc_sys" --action "$action" --devpath "$devpath" \
    --version "$version" > "$out"
  echo "$out"
}

rm -rf "$here/golden"
for name in ttyS0 e1000-eth0 virtio-eth1 board-eth2 vda vda1 usbkbd-event2 ttyUSB0; do
  run_one keys "$name" add
done
run_one keys ttyS0 change
run_one keys ttyS0 remove
for name in ttyS0 ttyUSB0 ttyACM0 gpiochip0 i2c-dev-1 touch-event5 usbkbd-event2 board-eth2 \
            e1000-eth0 virtio-eth1 vda vda1; do
  run_one board "$name" add
done
run_one board ttyACM0 remove
run_one errors ttyS0 add
run_one layers ttyS0 add
for name in $(awk '{ print $1 }' "$work/devices"); do
  run_one debian "$name" add
done
# How large Debian's rules were, to tell a test whether this machine's are the same.
( cd /lib/udev/rules.d && ls *.rules | sort | xargs cat | wc -c ) > "$here/golden/debian/rules.size"
