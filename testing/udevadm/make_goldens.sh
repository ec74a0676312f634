#!/bin/sh
# Regenerates the udevadm goldens with Debian 12's own udevadm 252 (package udev; nothing is
# started): builds the comparison tree (make_tree), gives its devices database entries with
# `udevadm test --action=add` and Debian's rules (fixtures/database; loop0 and misc/a stay
# without one, md0's is marked db_persist, the I: times are made fixed), then runs every snippet
# of `cases` in a private mount and network namespace (namespace.sh) and keeps its stdout and
# exit status as golden/NAME.out and golden/NAME.exit. compare_test.sh runs hotring's udevadm on
# the same snippets. Nothing of the host changes.
#
#   sh testing/udevadm/make_goldens.sh [--keep-database]   (as root, on Debian 12)
# --keep-database reuses fixtures/database (its udevadm test runs take minutes).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
. "$repo/testing/debian_packages.sh"
need_reference_udev
version=$(dpkg-query -W -f='${Version}' udev)
bazel build //testing/udevadm:make_tree >/dev/null 2>&1
WORK=$(mktemp -d /tmp/udevadm-goldens.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PRISTINE="$WORK/pristine"
"$repo/bazel-bin/testing/udevadm/make_tree" "$PRISTINE" > "$WORK/devices"
DATA="$here"
. "$here/namespace.sh"

keep_database=0
[ "${1:-}" = --keep-database ] && [ -s "$here/fixtures/database" ] && keep_database=1

# The database, made by udevd's own rules.
if [ $keep_database = 0 ]; then
: > "$WORK/empty"
FIXTURE="$WORK/empty"
run_case '
for uevent in $(find /sys/devices -name uevent | sort); do
  dir=$(dirname "$uevent")
  [ -L "$dir/subsystem" ] || continue
  case "$dir" in */virtual/block/loop0|*/virtual/misc/a) continue ;; esac
  udevadm test --action=add "$dir" > /dev/null 2>&1 || echo "udevadm test failed for $dir" >&2
done
n=0
for f in $(ls /run/udev/data | sort); do
  n=$((n + 1))
  mode=$(stat -c %a "/run/udev/data/$f")
  case "$f" in b9:0) mode=1644 ;; esac
  echo "== $f $mode"
  sed "s/^I:.*/I:$((1000000 * n))/" "/run/udev/data/$f"
done
for f in $(cd /run/udev && find tags -type f | sort); do echo "== $f"; done
' "$WORK/database"
[ "$(cat "$WORK/database.exit")" = 0 ] || { cat "$WORK/database.err" >&2; exit 1; }
mkdir -p "$here/fixtures"
{ echo "# udevadm test --action=add of every device (udev $version); testing/udevadm/make_goldens.sh made this"
  cat "$WORK/database"; } > "$here/fixtures/database"
fi

FIXTURE="$here/fixtures/database"
rm -rf "$here/golden"
mkdir -p "$here/golden"
grep -v '^#' "$here/cases" | while IFS="	" read -r name snippet; do
  [ -n "$name" ] || continue
  run_case "$snippet" "$here/golden/$name.out" < /dev/null
  mv "$here/golden/$name.out.exit" "$here/golden/$name.exit"
  rm -f "$here/golden/$name.out.err"
done
echo "udev $version" > "$here/golden/VERSION"
echo "make_goldens: $(ls "$here/golden" | grep -c '\.out$') goldens in $here/golden"
