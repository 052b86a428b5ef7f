#!/bin/sh
# Installs the Python tools the tests run, from PyPI, into their own
# virtualenv under .data/ (Debian's Python refuses system-wide pip installs):
# openapi-spec-validator (checks the served OpenAPI document), aiosmtpd
# (the SMTP server that receives the sign-in mails), mcp (the official MCP
# Python SDK, the client that drives the MCP endpoint in tests/api/mcp.rs) and
# schemathesis (property-based calls of every operation of the OpenAPI
# document, tests/contract.rs).
# Usage: scripts/fetch-python-tools.sh [VENV_DIR]
set -eu

venv="${1:-.data/venv}"
validator="openapi-spec-validator==0.9.0"
smtpd="aiosmtpd==1.4.6"
mcp="mcp==1.26.0"
schemathesis="schemathesis==4.32.5"
[ -x "$venv/bin/openapi-spec-validator" ] && [ -x "$venv/bin/aiosmtpd" ] && [ -x "$venv/bin/mcp" ] \
    && [ -x "$venv/bin/schemathesis" ] && exit 0

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$validator" "$smtpd" "$mcp" "$schemathesis"
