#!/bin/sh
# Installs the Node.js packages the tests run, from the npm registry, when
# missing: tests/oidc (the OpenID Connect provider the sign-in tests sign in
# at), exactly as its package-lock.json pins them. Needs Node.js 20 or later.
set -eu

dir="$(dirname "$0")/../tests/oidc"
[ -d "$dir/node_modules/oidc-provider" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing: install Node.js 20 or later (the sign-in tests run an OpenID Connect provider under it)" >&2
    exit 1
fi
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
