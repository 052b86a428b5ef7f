#!/bin/sh
# `make run`: a demo database and its API key, then the server.
# The first run creates database `demo` and prints `eds db create`'s line;
# later runs print a fresh key for the same owner.
set -eu
eds=${EDS_BIN:-./target/release/eds}
state=.data/demo.json

"$eds" migrate >/dev/null
if [ -f "$state" ]; then
    person=$(jq -r .person "$state")
    "$eds" key create demo "$person"
else
    mkdir -p .data
    "$eds" db create demo --email demo@example.com --name "Demo User" | tee "$state.tmp"
    # keep the ids, not the key: the key is shown once
    jq -c '{database, person}' "$state.tmp" > "$state"
    rm -f "$state.tmp"
fi
exec "$eds" serve
