-- A database's generation changes with every committed transaction that
-- changes its entities, so a list answer cached for one generation is known
-- to be current while the generation stays the same (every value write
-- re-projects its entity, so the entity rows see every change).
ALTER TABLE databases ADD COLUMN generation bigint NOT NULL DEFAULT 0;

-- Runs at commit, after every other statement of the transaction: the row
-- lock on `databases` is then always the last lock a write takes, so writers
-- holding other locks (counters, entities) cannot deadlock on it. Once per
-- database and transaction: a row this transaction already updated is skipped.
CREATE FUNCTION bump_database_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE databases SET generation = generation + 1
        WHERE name = NEW.db AND xmin <> pg_current_xact_id()::xid;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER entities_bump_generation
    AFTER INSERT OR UPDATE ON entities
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_database_generation();
