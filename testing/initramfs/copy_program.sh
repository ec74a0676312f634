# Sourced by the image scripts: copies a dynamically linked program of this machine into an image
# tree with the libraries ldd names, so Debian's own tools (udevadm, libinput) run in a guest.
#
#   copy_program ROOT LAYOUT FILE...
# LAYOUT usr:   everything goes under ROOT/usr (an initramfs-tools image, whose /lib and /bin
#               are links into /usr: an archive entry "lib" would replace the link);
#        as-is: every file at its own path under ROOT.
# The name a program or the loader asks for (a soname link, /lib64/ld-linux-x86-64.so.2) is
# copied as well as the file it resolves to.
#
#   copy_udev_setup ROOT
# This machine's whole udev setup into an initramfs-tools image tree (usr layout): every file of
# /lib/udev/rules.d and /etc/udev/rules.d, hwdb.bin, the programs in /lib/udev the rules call
# (ata_id, scsi_id, cdrom_id, ..., and scripts) with their libraries, /etc/passwd and /etc/group.
copy_file_to() {  # ROOT LAYOUT FILE
  real=$(readlink -f "$3")
  dest=$real name=$3
  if [ "$2" = usr ]; then
    case "$real" in /usr/*) ;; *) dest="/usr$real" ;; esac
    case "$3" in /usr/*) ;; *) name="/usr$3" ;; esac
  fi
  mkdir -p "$1$(dirname "$dest")"
  cp -L "$3" "$1$dest"
  [ "$name" = "$dest" ] || { mkdir -p "$1$(dirname "$name")"; cp -L "$3" "$1$name"; }
}
copy_program() {  # ROOT LAYOUT FILE...
  cp_root=$1 cp_layout=$2
  shift 2
  for cp_bin in "$@"; do
    copy_file_to "$cp_root" "$cp_layout" "$cp_bin"
    ldd "$cp_bin" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
      sort -u | while read -r cp_lib; do copy_file_to "$cp_root" "$cp_layout" "$cp_lib"; done
  done
}
copy_udev_setup() {  # ROOT
  mkdir -p "$1/usr/lib/udev/rules.d" "$1/etc"
  cp -a /lib/udev/rules.d/. "$1/usr/lib/udev/rules.d/"
  if [ -n "$(ls /etc/udev/rules.d 2>/dev/null)" ]; then
    mkdir -p "$1/etc/udev/rules.d"; cp -a /etc/udev/rules.d/. "$1/etc/udev/rules.d/"
  fi
  [ ! -e /lib/udev/hwdb.bin ] || cp /lib/udev/hwdb.bin "$1/usr/lib/udev/hwdb.bin"
  [ ! -e /etc/udev/hwdb.bin ] || { mkdir -p "$1/etc/udev"; cp /etc/udev/hwdb.bin "$1/etc/udev/hwdb.bin"; }
  for cu_program in /lib/udev/*; do
    if [ -f "$cu_program" ] && [ -x "$cu_program" ]; then copy_program "$1" usr "$cu_program"; fi
  done
  cp /etc/passwd /etc/group "$1/etc/"
}
