#!/bin/sh
# Installs the outside tools the benchmarks drive, when missing: wrk (the
# query benchmark's load generator) and vipsthumbnail (the thumbnail
# benchmark's reference). Uses apt; as a non-root user it goes through sudo.
set -eu

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v vipsthumbnail >/dev/null 2>&1 || missing="$missing libvips-tools"
[ -z "$missing" ] && exit 0

echo "installing:$missing" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
