#!/bin/sh
# Installs the given Debian packages with apt (through sudo unless root).
set -eu
[ "$#" -gt 0 ] || exit 0
echo "installing: $*" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "$@"
