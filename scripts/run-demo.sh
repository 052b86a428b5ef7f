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
    # not through a pipe: a refusal (say, `demo` made by another checkout
    # against the same DATABASE_URL) must stop here, not leave an empty state
    if ! "$eds" db create demo --email demo@example.com --name "Demo User" > "$state.tmp"; then
        rm -f "$state.tmp"
        echo "make run: database demo exists but $state (its owner's id) is missing;" \
            "run \`eds key create demo PERSON_ID\`, or remove .data to start afresh" >&2
        exit 1
    fi
    cat "$state.tmp"
    # keep the ids, not the key: the key is shown once
    jq -c '{database, person}' "$state.tmp" > "$state"
    rm -f "$state.tmp"
fi
exec "$eds" serve
