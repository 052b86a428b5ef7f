#!/bin/sh
# Installs openapi-spec-validator (PyPI), which the tests run on the served
# OpenAPI document, into its own virtualenv under .data/ (Debian's Python
# refuses system-wide pip installs). Usage: scripts/fetch-openapi-validator.sh [VENV_DIR]
set -eu

venv="${1:-.data/venv}"
version="0.9.0"
[ -x "$venv/bin/openapi-spec-validator" ] && exit 0

python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "openapi-spec-validator==$version"
