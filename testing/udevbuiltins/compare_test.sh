#!/bin/sh
# Runs hotring's udev builtins (builtin_tool) on every case of cases.txt, over the same test
# devices (make_builtin_tree) and disk images (images/*.sectors, each the device's node under
# --dev-root), and compares each answer with the one of Debian's `udevadm test-builtin` 252 in
# golden/cases.golden (make_goldens.sh). A case listed in known_differences (the case's line of
# cases.txt, a tab, why) is reported and allowed to differ; one listed there that matches fails
# the test, so that the list stays true. The hwdb answers (and net_id's OUI lookups) depend on
# the hwdb.bin the goldens were made with: on a machine with another one the test is skipped.
# As 252 had, btrfs sees no /dev/btrfs-control and uaccess no logind; net_setup_link runs in an
# empty network namespace (unshare -n), and is skipped where none can be made (not root).
#
# usage: compare_test.sh BUILTIN_TOOL MAKE_BUILTIN_TREE
# Exit status: 0 when every case matches or is a listed difference, 1 otherwise.
set -u
export LC_ALL=C
TOOL=$(realpath "${1:?usage: compare_test.sh BUILTIN_TOOL MAKE_BUILTIN_TREE}")
MAKE_TREE=$(realpath "${2:?usage: compare_test.sh BUILTIN_TOOL MAKE_BUILTIN_TREE}")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip_test.sh"
golden="$here/golden/cases.golden"
hwdb=/lib/udev/hwdb.bin
want_size=$(sed -n 's/^hwdb //p' "$golden")
if [ ! -f "$hwdb" ] || [ "$(stat -c %s "$hwdb")" != "$want_size" ]; then
  skip_test udevbuiltins_compare "the goldens need the hwdb.bin of $(head -1 "$golden" | sed 's/.*(udev \([^)]*\)).*/udev \1/') ($want_size bytes) at $hwdb"
fi
if ! command -v python3 >/dev/null 2>&1; then
  skip_test udevbuiltins_compare "python3 (to unpack the disk images) is missing"
fi
WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/udevbuiltins-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$MAKE_TREE" "$WORK/sys" > "$WORK/devices" || { echo "udevbuiltins compare: make_builtin_tree failed" >&2; exit 1; }
mkdir -p "$WORK/images"
for f in "$here/images/"*.sectors; do
  python3 "$here/pack_image.py" unpack "$f" "$WORK/images/$(basename "$f" .sectors)" || exit 1
done
devpath_of() { awk -v n="$1" '$1 == n { print $2 }' "$WORK/devices"; }

# The golden's answer of each case, by the case's line.
awk -v dir="$WORK/want" 'BEGIN { system("mkdir -p " dir) }
  /^== / { n++; f = dir "/" n; print substr($0, 4) > (dir "/" n ".case"); next }
  n > 0 { print > f }' "$golden"

known() { awk -F '\t' -v c="$1" '$1 == c { found = 1 } END { exit !found }' "$here/known_differences"; }
reason() { awk -F '\t' -v c="$1" '$1 == c { print $2 }' "$here/known_differences"; }

pass=0 fail=0 listed=0 skipped=0 n=0
netns=0
unshare -n true 2>/dev/null && netns=1
grep -v '^#' "$here/cases.txt" | grep -v '^$' > "$WORK/cases"
while IFS= read -r line; do
  n=$((n + 1))
  name=${line%% *}
  rest=${line#* }
  image=""
  case "$rest" in image=*) image=${rest%% *}; image=${image#image=}; rest=${rest#* } ;; esac
  command=$rest
  if [ ! -f "$WORK/want/$n.case" ] || [ "$(cat "$WORK/want/$n.case")" != "$line" ]; then
    echo "FAIL $line: no golden (run make_goldens.sh)"
    fail=$((fail + 1))
    continue
  fi
  devpath=$(devpath_of "$name")
  # The device's node: the image, or an empty file (as 252 had).
  dev="$WORK/dev.$n"
  mkdir -p "$dev"
  devname=$(sed -n 's/^DEVNAME=//p' "$WORK/sys$devpath/uevent")
  if [ -n "$devname" ]; then
    mkdir -p "$dev/$(dirname "$devname")"
    if [ -n "$image" ]; then cp "$WORK/images/$image" "$dev/$devname"; else : > "$dev/$devname"; fi
  fi
  wrap=""
  case "$command" in
    net_setup_link*)
      if [ "$netns" = 0 ]; then
        echo "SKIP $line: no network namespace can be made here"
        skipped=$((skipped + 1))
        continue
      fi
      wrap="unshare -n"
      ;;
  esac
  {
    echo "devpath $devpath"
    $wrap "$TOOL" "$WORK/sys" "$devpath" "$command" --hwdb "$hwdb" --dev-root "$dev" --links \
      --btrfs-control "$WORK/none/btrfs-control" --seats-dir "$WORK/none/seats/" < /dev/null 2> "$WORK/$n.err"
  } > "$WORK/$n.got"
  rm -rf "$dev"
  ok=1
  cmp -s "$WORK/want/$n" "$WORK/$n.got" || ok=0
  if known "$line"; then
    if [ $ok = 1 ]; then
      echo "FAIL $line: listed in known_differences but matches 252 now"
      fail=$((fail + 1))
    else
      echo "KNOWN $line: $(reason "$line")"
      listed=$((listed + 1))
    fi
  elif [ $ok = 1 ]; then
    pass=$((pass + 1))
  else
    echo "FAIL $line"
    diff -u "$WORK/want/$n" "$WORK/$n.got" | sed 1,2d | head -30
    sed 's/^/  stderr: /' "$WORK/$n.err" | head -5
    fail=$((fail + 1))
  fi
done < "$WORK/cases"
echo "udevbuiltins compare: $pass match, $listed known differences, $skipped skipped, $fail fail"
[ $fail = 0 ]
