#!/bin/sh
# Fetches libpdfium.so (thumbnails of PDF files) into .data/pdfium/, unless it
# is there already. The only reachable build ships inside the pypdfium2 wheel
# on PyPI: download the wheel with pip and take pypdfium2_raw/libpdfium.so.
# Usage: scripts/fetch-pdfium.sh [DEST_DIR]   (default .data/pdfium)
set -eu

dest="${1:-.data/pdfium}"
[ -f "$dest/libpdfium.so" ] && exit 0

pip=""
for candidate in pip3 pip; do
    if command -v "$candidate" >/dev/null 2>&1; then pip="$candidate"; break; fi
done
if [ -z "$pip" ]; then
    if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
        pip="python3 -m pip"
    else
        echo "fetch-pdfium: pip is missing (apt-get install python3-pip)" >&2
        exit 1
    fi
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
$pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" pypdfium2
wheel="$(ls "$tmp"/pypdfium2-*.whl | head -n 1)"
python3 - "$wheel" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in ("pypdfium2_raw/libpdfium.so", "pypdfium2_raw/version.json"):
        wheel.extract(name, sys.argv[2])
PY
mkdir -p "$dest"
cp "$tmp/pypdfium2_raw/version.json" "$dest/version.json"
# Copy then rename, so a half-written library is never picked up.
cp "$tmp/pypdfium2_raw/libpdfium.so" "$dest/libpdfium.so.partial"
mv "$dest/libpdfium.so.partial" "$dest/libpdfium.so"
echo "fetch-pdfium: $(cat "$dest/version.json" | tr -d '\n ') -> $dest/libpdfium.so" >&2
