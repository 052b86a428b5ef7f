-- Sign-in.
--
-- A `service_user` value is a login method when `login_provider` is set; its
-- `secret_lookup` is then `<provider>:<uid>`, the identity sign-in matches in
-- every database (through the index on secret_lookup). Without a provider it
-- is a pending invitation.
ALTER TABLE property_values ADD COLUMN login_provider text;

-- Short-lived sign-in state: e-mail links, issued session tokens (and later
-- WebAuthn challenges and OpenID Connect requests). Written when issued, so a
-- flow begun on one process finishes on another and survives a restart; used
-- once, by one conditional UPDATE, whichever process takes it. `id` is the
-- SHA-256 of a random token (never the token) or a JWT's `jti`. Rows past
-- their expiry are swept.
CREATE TABLE sign_in_states (
    id          text        PRIMARY KEY,
    kind        text        NOT NULL,
    -- the client address the state is bound to
    client_ip   text        NOT NULL,
    data        jsonb       NOT NULL DEFAULT '{}',
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz
);
CREATE INDEX sign_in_states_expiry ON sign_in_states (expires_at);

-- The login that created a database through POST /api/new (its daily limit).
ALTER TABLE databases ADD COLUMN created_by_login text;
CREATE INDEX databases_created_by_login ON databases (created_by_login, created_at)
    WHERE created_by_login IS NOT NULL;
