# Sourced (not run) by the scripts that need one of Debian 12's source packages in a cache
# outside the repository: kmod/kmod_source.sh (kmod's test fixtures) and absl/build_absl.sh
# (Abseil rebuilt with section flags). Nothing here touches the machine's apt state: a private
# apt configuration (a deb-src entry for bookworm on the mirror this machine's apt already uses,
# its lists and archives) lives in the cache. DEBIAN_SOURCE_MIRROR=URL chooses another mirror.
# Messages name the calling script ($0); variables are prefixed with _ds_.

# The cache directory of hotring's fetched and built things, NAME beneath it:
#   ${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/NAME
# Exits 1 when that is inside the repository at REPO (it must never be committed).
hotring_cache_dir() {  # NAME REPO
  _ds_cache=${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/$1
  case "$_ds_cache/" in
    "$2"/*) echo "${0##*/}: the cache $_ds_cache is inside the repository" >&2; exit 1 ;;
  esac
  echo "$_ds_cache"
}

# `apt-get source SPEC` (a source package, or PACKAGE=VERSION) from bookworm into DIR/src,
# unpacked, with the private apt configuration in DIR/apt. DIR/src is replaced only when the
# fetch succeeds. Returns 1 (and says why on stderr) when the package cannot be had.
fetch_debian_source() {  # SPEC DIR
  _ds_spec=$1
  _ds_dir=$2
  command -v apt-get >/dev/null 2>&1 || { echo "${0##*/}: no apt-get" >&2; return 1; }
  command -v dpkg-source >/dev/null 2>&1 || { echo "${0##*/}: no dpkg-source (dpkg-dev)" >&2; return 1; }
  _ds_mirror=${DEBIAN_SOURCE_MIRROR:-${KMOD_SOURCE_MIRROR:-}}
  if [ -z "$_ds_mirror" ]; then
    # The machine's own Debian mirror: deb822 "URIs:" lines, then one-line "deb URL SUITE" ones.
    _ds_mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs:[[:space:]]*//p' |
                 tr ' ' '\n' | grep -v security | grep '/debian/\{0,1\}$' | head -n 1 || true)
  fi
  if [ -z "$_ds_mirror" ]; then
    _ds_mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                 sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^ ]*\).*/\2/p' |
                 grep -v security | grep '/debian/\{0,1\}$' | head -n 1 || true)
  fi
  [ -n "$_ds_mirror" ] || _ds_mirror=http://deb.debian.org/debian
  _ds_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$_ds_keyring" ] || { echo "${0##*/}: no $_ds_keyring (debian-archive-keyring)" >&2; return 1; }

  _ds_apt="$_ds_dir/apt"
  rm -rf "$_ds_apt" "$_ds_dir/src.tmp"
  mkdir -p "$_ds_apt/lists/partial" "$_ds_apt/archives/partial" "$_ds_apt/parts" \
    "$_ds_apt/preferences.d" "$_ds_dir/src.tmp"
  echo "deb-src [signed-by=$_ds_keyring] $_ds_mirror bookworm main" >"$_ds_apt/sources.list"
  set -- -o "Dir::Etc::SourceList=$_ds_apt/sources.list" -o "Dir::Etc::SourceParts=$_ds_apt/parts" \
    -o "Dir::Etc::PreferencesParts=$_ds_apt/preferences.d" -o "Dir::State::Lists=$_ds_apt/lists" \
    -o "Dir::Cache=$_ds_apt" -o "Dir::Cache::Archives=$_ds_apt/archives" -o "APT::Sandbox::User=root"
  # apt-get update warns and still succeeds when the mirror cannot be reached: look for the list.
  if ! apt-get "$@" -qq update >"$_ds_apt/update.log" 2>&1 || ! ls "$_ds_apt/lists/"*_Sources* >/dev/null 2>&1; then
    echo "${0##*/}: apt-get update of $_ds_mirror bookworm (deb-src) failed: $(tail -n 1 "$_ds_apt/update.log")" >&2
    return 1
  fi
  if ! (cd "$_ds_dir/src.tmp" && apt-get "$@" -qq source "$_ds_spec") >"$_ds_apt/source.log" 2>&1; then
    echo "${0##*/}: apt-get source $_ds_spec failed:" >&2
    tail -n 3 "$_ds_apt/source.log" >&2
    return 1
  fi
  rm -rf "$_ds_dir/src"
  mv "$_ds_dir/src.tmp" "$_ds_dir/src"
}
