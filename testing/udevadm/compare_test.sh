#!/bin/sh
# Runs every snippet of `cases` with hotring's udevadm, in the namespace make_goldens.sh ran
# Debian's udevadm 252 in (namespace.sh: the same tree, database, nodes and links), and
# compares its stdout and exit status with golden/NAME.{out,exit}. Where 252 prints a hash
# set (DEVLINKS, TAGS, CURRENT_TAGS words; runs of S:, G:, Q: lines) the order is not
# compared. A case listed in `known_differences` (NAME, a tab, why) is reported and allowed to
# differ; one listed there that matches fails the test, so that the list stays true.
# TAGS=:a:b: sorts its words as well (sorting puts the empty ones first, in both).
#
# usage: compare_test.sh HOTRING MAKE_TREE   (as root: mount namespaces)
# Exit status: 0 when every case matches or is a listed difference, 1 otherwise.
set -u
export LC_ALL=C
export PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin"
HOTRING=$(realpath "${1:?usage: compare_test.sh HOTRING MAKE_TREE}")
MAKE_TREE=$(realpath "${2:?usage: compare_test.sh HOTRING MAKE_TREE}")
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "udevadm compare: needs root (mount namespaces)" >&2
  exit 1
fi
WORK=$(mktemp -d "${TEST_TMPDIR:-/tmp}/udevadm-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PRISTINE="$WORK/pristine"
"$MAKE_TREE" "$PRISTINE" > "$WORK/devices" || { echo "udevadm compare: make_tree failed" >&2; exit 1; }
BIN_DIR="$WORK/bin"
mkdir -p "$BIN_DIR"
ln -s "$HOTRING" "$BIN_DIR/udevadm"
DATA="$here"
FIXTURE="$here/fixtures/database"
. "$here/namespace.sh"

# The hash-ordered parts of 252's outputs, put in one order.
normalize() {
  awk '
    function flush() { if (n > 0) { cmd = "sort"; for (i = 1; i <= n; i++) print run[i] | cmd; close(cmd); n = 0 } }
    /^(E: )?(DEVLINKS|TAGS|CURRENT_TAGS)=/ {
      flush()
      eq = index($0, "="); head = substr($0, 1, eq); sep = (head ~ /TAGS=$/) ? ":" : " "
      m = split(substr($0, eq + 1), w, sep)
      for (i = 2; i <= m; i++) { v = w[i]; j = i - 1; while (j > 0 && w[j] > v) { w[j + 1] = w[j]; j-- } w[j + 1] = v }
      line = head; for (i = 1; i <= m; i++) line = line (i > 1 ? sep : "") w[i]
      print line; next
    }
    /^[SGQ]: ?/ { key = substr($0, 1, 2); if (n > 0 && key != runkey) flush(); runkey = key; run[++n] = $0; next }
    { flush(); print }
    END { flush() }
  ' "$1"
}

known() { grep -q "^$1	" "$here/known_differences" 2>/dev/null; }

pass=0 fail=0 listed=0
# UDEVADM_CASES=REGEX runs only the cases whose names match.
grep -v '^#' "$here/cases" | grep -E "^(${UDEVADM_CASES:-.*})	" > "$WORK/cases"
while IFS="	" read -r name snippet; do
  [ -n "$name" ] || continue
  [ -f "$here/golden/$name.out" ] || { echo "MISSING GOLDEN $name"; fail=$((fail + 1)); continue; }
  run_case "$snippet" "$WORK/$name.out" < /dev/null
  ok=1
  normalize "$here/golden/$name.out" > "$WORK/$name.want"
  normalize "$WORK/$name.out" > "$WORK/$name.got"
  cmp -s "$WORK/$name.want" "$WORK/$name.got" || ok=0
  [ "$(cat "$here/golden/$name.exit")" = "$(cat "$WORK/$name.out.exit")" ] || ok=0
  if known "$name"; then
    if [ $ok = 1 ]; then
      echo "FAIL $name: listed in known_differences but matches 252 now"
      fail=$((fail + 1))
    else
      echo "KNOWN $name: $(grep "^$name	" "$here/known_differences" | cut -f2)"
      listed=$((listed + 1))
    fi
  elif [ $ok = 1 ]; then
    pass=$((pass + 1))
  else
    echo "FAIL $name: exit $(cat "$WORK/$name.out.exit"), 252 exits $(cat "$here/golden/$name.exit")"
    diff -u "$WORK/$name.want" "$WORK/$name.got" | head -40
    sed 's/^/  stderr: /' "$WORK/$name.out.err" | head -5
    fail=$((fail + 1))
  fi
done < "$WORK/cases"
echo "udevadm compare: $pass match 252, $listed known differences, $fail failed"
[ $fail = 0 ]
