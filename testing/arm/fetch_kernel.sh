#!/bin/sh
# Fetches Debian's kernel (with its modules) and busybox-static for an ARM architecture with
# `apt-get download` and unpacks them, never installs them, into $HOTRING_ARM_CACHE (default
# /var/cache/hotring-arm)/DEB_ARCH, once. The package has no module indexes (its postinst makes
# them on an installed system), so depmod makes them in the unpacked tree, for mkimage.sh.
#
#   fetch_kernel.sh aarch64|armhf
#
# Prints shell assignments for `eval`: deb_arch, triplet, kernel (the vmlinuz), version (the
# kernel release), modroot (the tree holding lib/modules/VERSION) and busybox (its binary).
# aarch64 is linux-image-arm64; armhf is linux-image-armmp-lpae, Debian's flavour for
# Cortex-A7/A15 and later cores (qemu's -cpu cortex-a15). Both have io_uring, the PL011 serial
# console and the virt machine's PCI host built in; virtio_pci, virtio_blk and virtio_net are
# modules.
set -eu
export PATH="$PATH:/usr/sbin:/sbin"
case "${1:-}" in
  aarch64) deb_arch=arm64 triplet=aarch64-linux-gnu flavour=arm64 ;;
  armhf) deb_arch=armhf triplet=arm-linux-gnueabihf flavour=armmp-lpae ;;
  *) echo "fetch_kernel.sh: the architecture is aarch64 or armhf" >&2; exit 2 ;;
esac
cache="${HOTRING_ARM_CACHE:-/var/cache/hotring-arm}/$deb_arch"
mkdir -p "$cache"
fetch() {  # fetch PACKAGE DIR
  [ -d "$cache/$2" ] && return 0
  (cd "$cache" && apt-get download "$1:$deb_arch" >/dev/null 2>"$cache/$2.apt") || {
    echo "fetch_kernel.sh: apt-get download $1:$deb_arch failed:" >&2
    cat "$cache/$2.apt" >&2
    return 1
  }
  deb=$(ls -t "$cache"/"$1"_*_"$deb_arch".deb | head -n 1)
  rm -rf "$cache/$2.tmp"
  dpkg-deb -x "$deb" "$cache/$2.tmp" && mv "$cache/$2.tmp" "$cache/$2" && rm -f "$deb" "$cache/$2.apt"
}
kernel_pkg=$(apt-cache depends "linux-image-$flavour:$deb_arch" 2>/dev/null |
  sed -n "s/.*Depends: \(linux-image-[0-9][^:]*\).*/\1/p" | head -n 1)
[ -n "$kernel_pkg" ] || {
  echo "fetch_kernel.sh: no linux-image-$flavour for $deb_arch (dpkg --add-architecture $deb_arch; apt-get update)" >&2
  exit 1
}
fetch "$kernel_pkg" "$kernel_pkg"
fetch busybox-static busybox
modroot="$cache/$kernel_pkg"
kernel=$(ls "$modroot"/boot/vmlinuz-* | head -n 1)
version=${kernel##*/vmlinuz-}
# depmod reads any architecture's modules; the indexes are written beside them.
if [ ! -f "$modroot/lib/modules/$version/modules.dep" ]; then
  depmod -b "$modroot" "$version" >&2
fi
echo "deb_arch=$deb_arch triplet=$triplet kernel=$kernel version=$version modroot=$modroot busybox=$cache/busybox/bin/busybox"
