#!/bin/sh
# Prints the directory of Debian 12's kmod source package (kmod 30+20221128, whose
# testsuite/rootfs-pristine holds kmod's own test fixtures), fetching it on first use with
# `apt-get source` through a private apt configuration (testing/debian_source.sh): the
# machine's apt state is not touched. The cache is outside the repository and is never
# committed:
#   ${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/kmod-source
# KMOD_SOURCE_MIRROR=URL chooses another Debian mirror. Exit 1 (and a reason on stderr) when
# the package cannot be had.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/testing/debian_source.sh"
cache=$(hotring_cache_dir kmod-source "$repo")
found() {
  for d in "$cache"/src/kmod-30*/; do
    [ -d "$d/testsuite/rootfs-pristine/test-modprobe" ] && [ -f "$d/testsuite/test-modprobe.c" ] &&
      { echo "${d%/}"; return 0; }
  done
  return 1
}
found && exit 0
fetch_debian_source kmod "$cache" || exit 1
found || { echo "kmod_source.sh: bookworm's kmod source is not kmod 30: $(ls "$cache/src")" >&2; exit 1; }
