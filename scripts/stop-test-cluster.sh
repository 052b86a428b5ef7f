#!/bin/sh
# Stops the throwaway PostgreSQL cluster the test suite started in $1.
set -eu
dir="$1"
[ -f "$dir/postmaster.pid" ] || exit 0
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir" stop -m fast -w >/dev/null
else
    "$bin/pg_ctl" -D "$dir" stop -m fast -w >/dev/null
fi
