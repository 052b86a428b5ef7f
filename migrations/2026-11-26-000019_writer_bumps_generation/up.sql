-- A writer's transaction (one per batch of writes) bumps its database's
-- generation itself, once, as its last statement, and says so in the
-- transaction-local setting below: its entity rows then queue no trigger
-- event each, which every commit ran one by one. Every other transaction
-- that changes entities (formulas, background re-projection, imports) still
-- has the generation bumped at its commit by this trigger.
DROP TRIGGER entities_bump_generation ON entities;

CREATE CONSTRAINT TRIGGER entities_bump_generation
    AFTER INSERT OR UPDATE ON entities
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (current_setting('eds.bumps_generation', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION bump_database_generation();
