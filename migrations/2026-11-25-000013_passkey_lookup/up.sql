-- A passkey's login identity is `passkey:<credential id>.<key digest>`: the
-- key digest keeps a second credential claiming the same id (made with
-- another key) from ever matching the first one's persons. Signing in, the
-- device names only the credential id: its login methods are found by that
-- prefix, which this index serves in any collation.
CREATE INDEX property_values_passkeys ON property_values (secret_lookup text_pattern_ops)
    WHERE login_provider = 'passkey' AND deleted_at IS NULL;
