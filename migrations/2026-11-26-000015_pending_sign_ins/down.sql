DROP INDEX sign_in_states_pending;
