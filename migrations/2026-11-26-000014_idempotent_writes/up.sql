-- Safe retries: a write sent with an `Idempotency-Key` records the key and
-- what it wrote in the write's own transaction, so a repeat by the same
-- caller (after a lost answer, a crash or a restart) answers the first
-- outcome instead of writing again. `fingerprint` is the SHA-256 of the
-- request (method, path, body): the same key on another request is refused.
-- `outcome` is the write's result as the server renders it again (file
-- values re-signed; an API key's plain text is never stored). Rows older
-- than 24 hours no longer count and are swept.
CREATE TABLE idempotent_writes (
    db          text        NOT NULL REFERENCES databases (name),
    caller      text        NOT NULL,
    key         text        NOT NULL,
    fingerprint text        NOT NULL,
    outcome     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (db, caller, key)
);
CREATE INDEX idempotent_writes_age ON idempotent_writes (created_at);
