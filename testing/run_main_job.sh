#!/bin/sh
# hotring's main job on the machine it runs on: build the static binary, check the kernel's
# io_uring, and measure the reactor.
set -eu
cd "$(dirname "$0")/.."
bazel build //:hotring
bin="$(bazel info bazel-bin 2>/dev/null)/hotring"
file -L "$bin"
"$bin" --version
"$bin" selfcheck
"$bin" bench reactor
