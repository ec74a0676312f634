#!/bin/sh
# Debian's modprobe (kmod 30) and `hotring modprobe` side by side in chroots (lib.sh), on:
#   show-config  `modprobe -c` on each case of hotplug/modules/testdata/show_config (modprobe.d
#                files in kmod's directories, modules.softdep, /proc/cmdline, damaged
#                indexes); --update-goldens writes Debian's output as CASE/expected.out, which
#                show_config_test checks hotring against without root or kmod;
#   real-tree    `modprobe -c` on this machine's Debian kernel tree and configuration (the dumps
#                of the real modules.alias.bin and modules.symbols.bin, 30,000 lines);
#   damaged      that kernel tree with one index made empty or given a bad magic, in turn:
#                -R and --show-depends of a module name, a modules.alias alias, a symbol, a
#                builtin module and a builtin alias (each lookup touches a different index).
# stdout, the meaning of stderr and the exit status must agree. Prints one row per check and a
# closing line "kmod comparisons: N agree, N differ", or "kmod comparisons: skipped: REASON"
# with exit status 77 without root or Debian's modprobe. Exit 0 when all agree.
#
#   compare_modprobe.sh [--hotring BIN] [--keep DIR] [--update-goldens]
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
update_goldens=0
KMOD_EXTRA_FLAGS=--update-goldens kmod_setup "kmod comparisons" "$@"

agree=0 differ=0 row=0
echo "| part | case | command | Debian's modprobe | hotring modprobe | |"
echo "| --- | --- | --- | --- | --- | --- |"
# compare PART CASE ROOT ARGS...
compare() {
  part=$1 case_name=$2 root=$3
  shift 3
  row=$((row + 1))
  kmod_side_by_side "$root" "$work/$row" "$@"
  if [ "$kmod_verdict" = agree ]; then agree=$((agree + 1)); else differ=$((differ + 1)); fi
  echo "| $part | $case_name | modprobe $* | $(kmod_describe_run "$work/$row.debian") | $(kmod_describe_run "$work/$row.hotring") | $kmod_verdict |"
  [ "$kmod_verdict" = agree ] || kmod_show_difference "$work/$row"
}

# show-config: the committed cases.
for case_dir in "$repo"/hotplug/modules/testdata/show_config/*/; do
  case_name=$(basename "$case_dir")
  root="$work/show-config.$case_name"
  rm -rf "$root"
  cp -a "$case_dir/root" "$root"
  kmod_populate "$root" "$hotring"
  compare show-config "$case_name" "$root" -S 4.4.4 -c
  if [ "$update_goldens" = 1 ]; then
    [ "$(cat "$work/$row.debian.rc")" = 0 ] || { echo "Debian's modprobe -c failed on $case_name" >&2; exit 1; }
    cp "$work/$row.debian.out" "$case_dir/expected.out"
  fi
done

# The installed Debian kernel: its indexes (placeholders for the .ko files modules.dep names:
# kmod checks they exist) and this machine's modprobe.d directories.
version=""
for dir in /lib/modules/*/; do
  [ -f "$dir/modules.dep.bin" ] && version=$(basename "$dir")
done
if [ -z "$version" ]; then
  echo "| real-tree | - | - | - | - | not checked: no Debian kernel tree in /lib/modules (linux-image-amd64) |"
else
  base="$work/real.base"
  mkdir -p "$base/lib/modules/$version" "$base/proc"
  cp /lib/modules/"$version"/modules.* "$base/lib/modules/$version/"
  sed -n 's/^\([^:]*\):.*/\1/p' "/lib/modules/$version/modules.dep" | while read -r ko; do
    mkdir -p "$base/lib/modules/$version/$(dirname "$ko")"
    : >"$base/lib/modules/$version/$ko"
  done
  for d in /etc/modprobe.d /run/modprobe.d /usr/local/lib/modprobe.d /lib/modprobe.d; do
    [ -d "$d" ] || continue
    mkdir -p "$base$d"
    cp -a "$d/." "$base$d/"
  done
  cp /proc/cmdline "$base/proc/cmdline"
  kmod_populate "$base" "$hotring"
  compare real-tree "$version" "$base" -S "$version" -c

  # One of each kind of lookup, from the tree itself.
  mods="/lib/modules/$version"
  name=$(sed -n 's|^[^:]*/\([^/:]*\)\.ko[^:]*: .*|\1|p' "$mods/modules.dep" | head -n 1)
  alias=$(sed -n 's/^alias \(pci:[^?[]*\) [^ ]*$/\1/p' "$mods/modules.alias" | head -n 1 | tr -d '*')
  symbol=$(sed -n 's/^alias \(symbol:[^ ]*\) .*/\1/p' "$mods/modules.symbols" | head -n 1)
  builtin=$(sed -n 's|^.*/\([^/]*\)\.ko$|\1|p' "$mods/modules.builtin" | head -n 1)
  builtin_alias=$(tr '\0' '\n' <"$mods/modules.builtin.modinfo" | sed -n 's/^[^.]*\.alias=\([^?[]*\)$/\1/p' |
                  head -n 1 | tr -d '*')
  for file in modules.dep.bin modules.alias.bin modules.symbols.bin modules.builtin.bin \
              modules.builtin.alias.bin; do
    for damage in empty bad-magic; do
      root="$work/damaged.$file.$damage"
      rm -rf "$root"
      cp -al "$base" "$root"
      rm -f "$root/lib/modules/$version/$file"
      case "$damage" in
        empty) : >"$root/lib/modules/$version/$file" ;;
        bad-magic) { printf 'XXXX'; tail -c +5 "$mods/$file"; } >"$root/lib/modules/$version/$file" ;;
      esac
      for query in "$name" "$alias" "$symbol" "$builtin" "$builtin_alias"; do
        [ -n "$query" ] || continue
        compare damaged "$file $damage" "$root" -S "$version" -R "$query"
        compare damaged "$file $damage" "$root" -S "$version" --show-depends "$query"
      done
    done
  done
fi
echo "kmod comparisons: $agree agree, $differ differ"
[ "$differ" -eq 0 ]
