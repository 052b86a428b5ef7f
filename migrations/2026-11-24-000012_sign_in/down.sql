DROP INDEX databases_created_by_login;
ALTER TABLE databases DROP COLUMN created_by_login;
DROP TABLE sign_in_states;
ALTER TABLE property_values DROP COLUMN login_provider;
