#!/bin/sh
# Installs the Node.js packages the tests run, from the npm registry, when
# missing, exactly as each package-lock.json pins them: tests/oidc (the
# OpenID Connect provider the sign-in tests sign in at) and tests/mcp/sdk
# (the official MCP TypeScript SDK and a strict OAuth client, run as clients
# of eds). Needs Node.js 20 or later.
set -eu

root="$(dirname "$0")/.."
for dir in "$root/tests/oidc" "$root/tests/mcp/sdk"; do
    # npm writes its record of the tree last: without it the install did not finish
    [ -f "$dir/node_modules/.package-lock.json" ] && continue
    if ! command -v npm >/dev/null 2>&1; then
        echo "npm is missing: install Node.js 20 or later (the sign-in and MCP tests run Node.js packages)" >&2
        exit 1
    fi
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
done
