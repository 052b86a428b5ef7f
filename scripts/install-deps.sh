#!/bin/sh
# Installs what building and running eds needs, when it is missing:
# PostgreSQL server binaries, libpq headers and pkg-config (diesel), PgBouncer
# (the tests run eds behind it; they start their own), jq (the
# README walk-through), pip (for libpdfium, fetched last by fetch-pdfium.sh),
# Chromium and Python's venv (the tests render /docs and validate the OpenAPI
# document with openapi-spec-validator, fetched by fetch-python-tools.sh).
# Uses apt; as a non-root user it goes through sudo.
set -eu

missing=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
[ -e /usr/include/postgresql/libpq-fe.h ] || missing="$missing libpq-dev"
[ -x /usr/sbin/pgbouncer ] || missing="$missing pgbouncer"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v pip3 >/dev/null 2>&1 || python3 -m pip --version >/dev/null 2>&1 || missing="$missing python3-pip"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
# Debian's Python makes virtualenvs only with python3-venv; try one to know.
venv_works() {
    probe="$(mktemp -d)"
    python3 -m venv "$probe/venv" >/dev/null 2>&1 && status=0 || status=1
    rm -rf "$probe"
    return $status
}
[ -x .data/venv/bin/python ] || venv_works || missing="$missing python3-venv"

fetch() {
    "$(dirname "$0")/fetch-python-tools.sh"
    exec "$(dirname "$0")/fetch-pdfium.sh"
}

if [ -z "$missing" ]; then
    fetch
fi

# shellcheck disable=SC2086
"$(dirname "$0")/apt-install.sh" $missing
# Debian's packages start a system cluster and a system PgBouncer; eds and
# its tests run their own.
if command -v systemctl >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    for service in postgresql pgbouncer; do
        if echo "$missing" | grep -q "$service"; then
            $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
        fi
    done
fi

fetch
