#!/bin/sh
# Prints the directory of Debian 12's kmod source package (kmod 30+20221128, whose
# testsuite/rootfs-pristine holds kmod's own test fixtures), fetching it on first use with
# `apt-get source` through a private apt configuration: a deb-src entry for bookworm on the
# mirror this machine's apt already uses, lists and archives in the cache. The machine's apt
# state is not touched. The cache is outside the repository and is never committed:
#   ${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/kmod-source
# KMOD_SOURCE_MIRROR=URL chooses another Debian mirror. Exit 1 (and a reason on stderr) when
# the package cannot be had.
set -eu
cache=${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/kmod-source
repo=$(cd "$(dirname "$0")/../.." && pwd)
case "$cache/" in
  "$repo"/*) echo "kmod_source.sh: the cache $cache is inside the repository" >&2; exit 1 ;;
esac
found() {
  for d in "$cache"/src/kmod-30*/; do
    [ -d "$d/testsuite/rootfs-pristine/test-modprobe" ] && [ -f "$d/testsuite/test-modprobe.c" ] &&
      { echo "${d%/}"; return 0; }
  done
  return 1
}
found && exit 0

command -v apt-get >/dev/null 2>&1 || { echo "kmod_source.sh: no apt-get" >&2; exit 1; }
command -v dpkg-source >/dev/null 2>&1 || { echo "kmod_source.sh: no dpkg-source (dpkg-dev)" >&2; exit 1; }
mirror=${KMOD_SOURCE_MIRROR:-}
if [ -z "$mirror" ]; then
  # The machine's own Debian mirror: deb822 "URIs:" lines, then one-line "deb URL SUITE" ones.
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' |
           tr ' ' '\n' | grep -v security | grep '/debian/\{0,1\}$' | head -n 1 || true)
fi
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
           sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^ ]*\).*/\2/p' |
           grep -v security | grep '/debian/\{0,1\}$' | head -n 1 || true)
fi
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || { echo "kmod_source.sh: no $keyring (debian-archive-keyring)" >&2; exit 1; }

apt="$cache/apt"
rm -rf "$apt" "$cache/src.tmp"
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/parts" "$apt/preferences.d" \
  "$cache/src.tmp"
echo "deb-src [signed-by=$keyring] $mirror bookworm main" >"$apt/sources.list"
set -- -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts" \
  -o "Dir::Etc::PreferencesParts=$apt/preferences.d" -o "Dir::State::Lists=$apt/lists" \
  -o "Dir::Cache=$apt" -o "Dir::Cache::Archives=$apt/archives" -o "APT::Sandbox::User=root"
# apt-get update warns and still succeeds when the mirror cannot be reached: look for the list.
if ! apt-get "$@" -qq update >"$apt/update.log" 2>&1 || ! ls "$apt/lists/"*_Sources* >/dev/null 2>&1; then
  echo "kmod_source.sh: apt-get update of $mirror bookworm (deb-src) failed: $(tail -n 1 "$apt/update.log")" >&2
  exit 1
fi
if ! (cd "$cache/src.tmp" && apt-get "$@" -qq source kmod) >"$apt/source.log" 2>&1; then
  echo "kmod_source.sh: apt-get source kmod failed:" >&2
  tail -n 3 "$apt/source.log" >&2
  exit 1
fi
rm -rf "$cache/src"
mv "$cache/src.tmp" "$cache/src"
found || { echo "kmod_source.sh: bookworm's kmod source is not kmod 30: $(ls "$cache/src")" >&2; exit 1; }
