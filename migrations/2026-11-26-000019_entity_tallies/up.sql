-- How many live entities each (database, type, audience) has, kept in the
-- statement that creates, deletes or re-types an entity or changes who may
-- read it. A list of a whole type (or database) counts its matches for any
-- caller by adding the tallies of the audiences the caller is in, instead
-- of visiting every entity. Writers of a database take its write lock
-- first, so they take turns on its tally rows.
CREATE TABLE entity_tallies (
    db       text   NOT NULL REFERENCES databases (name),
    type_id  text,
    audience bigint NOT NULL,
    count    bigint NOT NULL,
    UNIQUE NULLS NOT DISTINCT (db, type_id, audience)
);
INSERT INTO entity_tallies (db, type_id, audience, count)
    SELECT db, type_id, audience, count(*) FROM entities WHERE deleted_at IS NULL
    GROUP BY db, type_id, audience;

CREATE FUNCTION tally_entity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL THEN
        UPDATE entity_tallies SET count = count - 1
            WHERE db = OLD.db AND type_id IS NOT DISTINCT FROM OLD.type_id AND audience = OLD.audience;
    END IF;
    IF NEW.deleted_at IS NULL THEN
        INSERT INTO entity_tallies (db, type_id, audience, count) VALUES (NEW.db, NEW.type_id, NEW.audience, 1)
            ON CONFLICT (db, type_id, audience) DO UPDATE SET count = entity_tallies.count + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_tally_insert AFTER INSERT ON entities
    FOR EACH ROW EXECUTE FUNCTION tally_entity();
CREATE TRIGGER entities_tally_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type_id, OLD.audience, OLD.deleted_at IS NULL)
        IS DISTINCT FROM (NEW.type_id, NEW.audience, NEW.deleted_at IS NULL))
    EXECUTE FUNCTION tally_entity();
