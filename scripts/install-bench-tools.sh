#!/bin/sh
# Installs the outside tools the benchmarks drive, when missing: wrk (the
# query benchmark's load generator) and vipsthumbnail (the thumbnail
# benchmark's reference), with apt.
set -eu

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v vipsthumbnail >/dev/null 2>&1 || missing="$missing libvips-tools"
# shellcheck disable=SC2086
exec "$(dirname "$0")/apt-install.sh" $missing
