#!/usr/bin/env python3
"""A minute of unauthenticated OAuth authorize requests from one address,
and what they leave in the sign-in state table.

Registers a client whose signed id is as large as registration allows (ten
long redirect URIs, ~14 KB), then sends `GET /auth/authorize` for it with
the largest `state` and `code_challenge` the server keeps, from 8 threads,
for SECONDS; prints the requests sent, their answers and the growth of
`sign_in_states` (rows and bytes, as PostgreSQL counts them).

    scripts/sign-in-flood.py BASE_URL DATABASE_URL [SECONDS] [DB] [STATE_BYTES]

BASE_URL is the server (`http://127.0.0.1:8080`), DATABASE_URL its
PostgreSQL (read with `psql`), DB a database it serves (default `demo`),
STATE_BYTES the length of `state` (default 1,024, the most eds keeps; a
server without that cap stores a longer one whole).
"""

import json
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def table_size(database_url):
    query = "SELECT count(*), pg_total_relation_size('sign_in_states') FROM sign_in_states"
    out = subprocess.run(["psql", database_url, "-At", "-c", query], check=True, capture_output=True, text=True)
    rows, size = out.stdout.strip().split("|")
    return int(rows), int(size)


def register(base):
    # random, so PostgreSQL's compression of large values does not hide their size
    uris = [f"https://client.example/{i}/" + secrets.token_urlsafe(700) for i in range(10)]
    body = json.dumps({"client_name": "flood", "redirect_uris": uris}).encode()
    request = urllib.request.Request(f"{base}/auth/register", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["client_id"], uris[0]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def main():
    base, database_url = sys.argv[1].rstrip("/"), sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
    db = sys.argv[4] if len(sys.argv) > 4 else "demo"
    client_id, redirect_uri = register(base)
    state_bytes = int(sys.argv[5]) if len(sys.argv) > 5 else 1024
    state = secrets.token_urlsafe(state_bytes)[:state_bytes]
    query = urllib.parse.urlencode({
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "state": state,
        "db": db,
        "provider": "e-mail",
    })
    url = f"{base}/auth/authorize?{query}"
    opener = urllib.request.build_opener(NoRedirect)
    before = table_size(database_url)
    answers, lock = {}, threading.Lock()
    deadline = time.monotonic() + seconds

    def flood():
        while time.monotonic() < deadline:
            try:
                with opener.open(url) as answer:
                    outcome = answer.status
            except urllib.error.HTTPError as error:
                location = error.headers.get("Location") or ""
                outcome = "302 error=" + urllib.parse.parse_qs(urllib.parse.urlsplit(location).query).get(
                    "error", ["none (to the sign-in)"])[0] if error.code == 302 else error.code
            with lock:
                answers[outcome] = answers.get(outcome, 0) + 1

    threads = [threading.Thread(target=flood) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after = table_size(database_url)
    print(f"url length {len(url)} bytes, {sum(answers.values())} requests in {seconds:.0f} s: {answers}")
    print(f"sign_in_states: {before[0]} -> {after[0]} rows, {before[1]:,} -> {after[1]:,} bytes")


if __name__ == "__main__":
    main()
