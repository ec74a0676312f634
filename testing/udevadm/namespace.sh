# Sourced by make_goldens.sh and compare_test.sh. namespace_setup prints the shell commands that
# lay out one run inside a private mount namespace: TREE (the comparison tree, a fresh copy per
# run) over /sys, a tmpfs over /run whose /run/udev holds the database of FIXTURE (its "== ID MODE"
# sections; "== tags/TAG/ID" for the tag index), a tmpfs over /dev with /dev/null, every
# device's node (root 0600, as devtmpfs makes them) and the database's links (lay_out.py, one
# process: a process per device is minutes on a busy machine). Nothing of the host changes.
namespace_setup() {
  cat <<SCRIPT
set -e
mount --bind "$TREE" /sys
mount -t tmpfs tmpfs /run
mkdir -p /run/udev
mount -t tmpfs tmpfs /dev
mknod -m 0666 /dev/null c 1 3
python3 "$DATA/lay_out.py" "$FIXTURE"
export SYSTEMD_DEVICE_VERIFY_SYSFS=0
set +e
SCRIPT
}

# Runs snippet $1 in a namespace laid out by namespace_setup, with PATH starting at $BIN_DIR
# (hotring's udevadm) when set; stdout to $2, stderr to $2.err, exit status to $2.exit.
run_case() {
  rm -rf "$WORK/tree"
  cp -a "$PRISTINE" "$WORK/tree"
  TREE="$WORK/tree"
  { namespace_setup
    echo "export DATA=\"$DATA\""
    [ -n "${BIN_DIR:-}" ] && echo "export PATH=\"$BIN_DIR:\$PATH\""
    printf '( %s ) > "%s" 2> "%s.err"\necho $? > "%s.exit"\n' "$1" "$2" "$2" "$2"
  } > "$WORK/script"
  unshare -m -n --propagation private sh "$WORK/script"
}
