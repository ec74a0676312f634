#!/bin/sh
# Builds Abseil from Debian 12's own source package, the version of libabsl-dev installed (whose
# headers hotring compiles against), as static archives with Debian's own flags plus
# -ffunction-sections -fdata-sections, and installs the archives into a cache outside the
# repository (never committed):
#   ${HOTRING_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hotring}/absl/TRIPLET/lib/libabsl_*.a
# Debian's archives have one section per object file, so the link's --gc-sections keeps every
# function of an object it needs one of (absl::Status pulls in all of absl::Cord, and with it
# std::cout); with a section per function it keeps what is called. third_party/BUILD links the
# cached archives instead of Debian's when they are there and of the installed version
# (third_party/absl_cache.bzl); otherwise Debian's.
#
#   build_absl.sh [--arch amd64|arm64|armhf]   (default amd64; the others with the cross g++)
#
# The source comes through testing/debian_source.sh's private apt configuration. Prints the
# archives' directory; does nothing when they are there for this version. Exit 1 (and why on
# stderr) when they cannot be built: hotring then links Debian's archives.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/testing/debian_source.sh"
arch=amd64
case "${1:-}" in
  --arch) arch=${2:?--arch needs amd64, arm64 or armhf} ;;
  "") ;;
  -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "build_absl.sh: unknown option $1" >&2; exit 2 ;;
esac
case "$arch" in
  amd64) triplet=x86_64-linux-gnu cross="" ;;
  arm64) triplet=aarch64-linux-gnu cross=aarch64-linux-gnu- ;;
  armhf) triplet=arm-linux-gnueabihf cross=arm-linux-gnueabihf- ;;
  *) echo "build_absl.sh: no such architecture $arch (amd64, arm64, armhf)" >&2; exit 2 ;;
esac
cache=$(hotring_cache_dir absl "$repo")
dest="$cache/$triplet"
version=$(dpkg-query -W -f='${Version}' "libabsl-dev:$arch" 2>/dev/null) ||
  { echo "build_absl.sh: libabsl-dev:$arch is not installed" >&2; exit 1; }
# The stamp says what the archives are: third_party/absl_cache.bzl links them only when its
# version is the installed libabsl-dev's (its headers must match the archives).
stamp="abseil $version"
if [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$stamp" ] && [ -f "$dest/lib/libabsl_base.a" ]; then
  echo "$dest/lib"
  exit 0
fi
for tool in cmake make "${cross}g++"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build_absl.sh: no $tool" >&2; exit 1; }
done

src=""
for d in "$cache"/source/src/abseil-*/; do
  [ -f "$cache/source/src/abseil_$version.dsc" ] && [ -f "$d/CMakeLists.txt" ] && src=${d%/}
done
if [ -z "$src" ]; then
  fetch_debian_source "abseil=$version" "$cache/source" || exit 1
  for d in "$cache"/source/src/abseil-*/; do [ -f "$d/CMakeLists.txt" ] && src=${d%/}; done
  [ -n "$src" ] || { echo "build_absl.sh: no Abseil source in $cache/source/src" >&2; exit 1; }
fi

# Debian's flags for the architecture (what debian/rules builds with: dpkg-buildflags' CPPFLAGS
# and CXXFLAGS, C++17, static), without -g: these archives only ever go into stripped binaries.
# From the source directory, as in a package build (its -ffile-prefix-map maps it to ".").
flags=$(cd "$src" && DEB_HOST_ARCH=$arch dpkg-buildflags --get CPPFLAGS)" "$(cd "$src" &&
        DEB_HOST_ARCH=$arch dpkg-buildflags --get CXXFLAGS)
flags=$(echo "$flags" | sed 's/\(^\| \)-g\( \|$\)/ /')
flags="$flags -ffunction-sections -fdata-sections"
build="$cache/build-$triplet"
rm -rf "$build" "$dest.tmp"
set -- -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=OFF \
  -DBUILD_TESTING=OFF -DABSL_BUILD_TESTING=OFF -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_PREFIX="$dest.tmp" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags"
if [ -n "$cross" ]; then
  set -- "$@" -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="${triplet%%-*}" \
    -DCMAKE_C_COMPILER="${cross}gcc" -DCMAKE_CXX_COMPILER="${cross}g++"
fi
echo "build_absl.sh: building Abseil $version for $arch with section flags (a few minutes)" >&2
start=$(date +%s)
if ! { cmake -S "$src" -B "$build" "$@" && make -C "$build" -j"$(nproc)" &&
       make -C "$build" install; } >"$cache/build-$triplet.log" 2>&1; then
  echo "build_absl.sh: the build failed; the end of $cache/build-$triplet.log:" >&2
  tail -n 15 "$cache/build-$triplet.log" >&2
  exit 1
fi
# Only the archives: the headers hotring compiles against stay Debian's (/usr/include).
rm -rf "$dest.tmp/include" "$dest.tmp/lib/cmake" "$dest.tmp/lib/pkgconfig" "$build"
echo "$stamp" >"$dest.tmp/VERSION"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "build_absl.sh: built in $(( $(date +%s) - start )) s" >&2
echo "$dest/lib"
