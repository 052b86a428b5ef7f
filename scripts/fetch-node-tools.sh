#!/bin/sh
# Installs the Node.js packages the tests run, from the npm registry, when
# missing, exactly as each package-lock.json pins them: tests/oidc (the
# OpenID Connect provider the sign-in tests sign in at) and
# tests/mcp/conformance (the official MCP conformance suite, with the
# Node.js 22 it runs under). Needs Node.js 20 or later.
set -eu

root="$(dirname "$0")/.."
install() {
    [ -e "$1/node_modules/$2" ] && return 0
    if ! command -v npm >/dev/null 2>&1; then
        echo "npm is missing: install Node.js 20 or later (the tests run Node.js tools)" >&2
        exit 1
    fi
    npm ci --prefix "$1" --no-audit --no-fund --loglevel=error
}
install "$root/tests/oidc" oidc-provider
install "$root/tests/mcp/conformance" @modelcontextprotocol/conformance
