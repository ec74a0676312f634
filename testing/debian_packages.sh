# Sourced (not run) by the scripts that install Debian packages or run Debian's own udev as the
# reference: install_deps.sh, the goldens' scripts of udevadm, udevrules and udevbuiltins,
# udevbuiltins/make_images.sh, udevcompat/guest_compare.sh, and initramfs/mkimage_udev.sh,
# mkimage_debian.sh and mkdisk.sh.
# Nothing they install may start a service (udev's postinst would start systemd-udevd, which
# would then handle this machine's devices), and no reference run may share the machine with a
# running udevd. Messages name the calling script ($0). Variables are prefixed with _dp_: a
# sourced function shares the caller's.

# The PACKAGEs that are not installed, on one line (empty when all are).
missing_packages() {
  _dp_missing=""
  for _dp_p in "$@"; do
    dpkg-query -W -f='${Status}' "$_dp_p" 2>/dev/null | grep -q "install ok installed" ||
      _dp_missing="$_dp_missing $_dp_p"
  done
  echo "${_dp_missing# }"
}

# apt-get install PACKAGE... with a policy-rc.d that refuses every start, removed again unless it
# was there before. Does nothing without a PACKAGE. Returns apt-get's status.
install_without_starting() {
  [ $# -gt 0 ] || return 0
  _dp_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    _dp_policy=1
  fi
  _dp_status=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
    _dp_status=$?
  [ -z "$_dp_policy" ] || rm -f /usr/sbin/policy-rc.d
  return "$_dp_status"
}

# Installs those of PACKAGE... that are missing, without starting anything, and says so.
install_missing() {
  _dp_need=$(missing_packages "$@")
  [ -n "$_dp_need" ] || return 0
  echo "${0##*/}: installing $_dp_need" >&2
  # shellcheck disable=SC2086
  install_without_starting $_dp_need
}

# Debian's udev (udevadm, its rules and hwdb.bin) installed and not started; exits 1 where a
# systemd-udevd runs on this machine, since a reference run must not race one.
need_reference_udev() {
  install_missing udev
  if pgrep -x systemd-udevd >/dev/null; then
    echo "${0##*/}: a systemd-udevd runs on this machine; refusing to go on" >&2
    exit 1
  fi
}
