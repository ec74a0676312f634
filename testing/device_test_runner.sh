#!/bin/sh
# Runs one hotring_device_test (testing/defs.bzl): `hotring replay` of a recording, compared
# with a golden manifest; with --update (bazel run NAME.update) the golden file in the source
# tree is rewritten instead. Arguments are runfiles paths made by the macro.
set -eu
hotring= recording= config= golden= update= modules_root= firmware_root=
execs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hotring) hotring=$2; shift 2 ;;
    --recording) recording=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --golden) golden=$2; shift 2 ;;
    --exec) execs="$execs --exec $2"; shift 2 ;;
    --update) update=1; shift ;;
    --modules)
      # The filegroup's files: the root is what comes before /lib/modules/ in their paths.
      shift
      while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do
        case "$1" in
          */lib/modules/*) [ -n "$modules_root" ] || modules_root=${1%%/lib/modules/*} ;;
          lib/modules/*) [ -n "$modules_root" ] || modules_root=. ;;
        esac
        shift
      done
      [ -n "$modules_root" ] || { echo "modules: no file under a lib/modules/ directory" >&2; exit 2; }
      ;;
    --firmware)
      # The filegroup's files: the root is their lib/firmware/ directory.
      shift
      while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do
        case "$1" in
          */lib/firmware/*) [ -n "$firmware_root" ] || firmware_root=${1%%/lib/firmware/*}/lib/firmware ;;
          lib/firmware/*) [ -n "$firmware_root" ] || firmware_root=lib/firmware ;;
        esac
        shift
      done
      [ -n "$firmware_root" ] || { echo "firmware: no file under a lib/firmware/ directory" >&2; exit 2; }
      ;;
    *) echo "device_test_runner: unknown argument $1" >&2; exit 2 ;;
  esac
done
modules_args=""
[ -z "$modules_root" ] || modules_args="--modules-root $modules_root"
[ -z "$firmware_root" ] || modules_args="$modules_args --firmware-root $firmware_root"
if [ -n "$update" ]; then
  : "${BUILD_WORKSPACE_DIRECTORY:?run NAME.update with bazel run}"
  case "$golden" in
    ../*) echo "the golden file must be in this workspace, not $golden" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086
  exec "$hotring" replay "$recording" --config "$config" $modules_args $execs \
    --golden "$BUILD_WORKSPACE_DIRECTORY/$golden" --update
fi
# shellcheck disable=SC2086
exec "$hotring" replay "$recording" --config "$config" $modules_args $execs --golden "$golden"
