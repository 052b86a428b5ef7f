-- Consent a person gave an OAuth client, remembered 30 days so the consent
-- page is not shown at every authorization. Keyed by the person (an entity
-- of `db`), the client (SHA-256 of its `client_id`, which can be ~14 KB), the
-- redirect URI and the scopes asked (space-separated, sorted): another
-- redirect URI or a wider scope asks again.
CREATE TABLE oauth_consents (
    db            text        NOT NULL,
    person        text        NOT NULL,
    client_digest text        NOT NULL,
    redirect_uri  text        NOT NULL,
    scope         text        NOT NULL,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (db, person, client_digest, redirect_uri, scope)
);
CREATE INDEX oauth_consents_expiry ON oauth_consents (expires_at);
