-- The pending sign-in states of one client address are counted before
-- another is issued (at most `limits.pending_sign_ins_per_address`).
CREATE INDEX sign_in_states_pending ON sign_in_states (client_ip) WHERE consumed_at IS NULL;
