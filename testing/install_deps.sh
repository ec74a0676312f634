#!/bin/sh
# Installs what hotring needs to build and test on Debian 12 (run as root). Idempotent: does
# nothing when everything is present.
set -eu
pkgs="bazel-bootstrap g++ liburing-dev libabsl-dev libgtest-dev libgmock-dev file kmod linux-image-amd64"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
