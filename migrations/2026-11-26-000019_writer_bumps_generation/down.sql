DROP TRIGGER entities_bump_generation ON entities;

CREATE CONSTRAINT TRIGGER entities_bump_generation
    AFTER INSERT OR UPDATE ON entities
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_database_generation();
