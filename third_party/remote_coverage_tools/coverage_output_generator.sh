#!/bin/sh
echo "coverage is not collected in this build" >&2
exit 0
