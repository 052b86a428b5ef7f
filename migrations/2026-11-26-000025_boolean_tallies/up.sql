-- Tallies of boolean values: how many live values each (database,
-- property, type, audience, view level, value) has, kept by the statement
-- that writes value rows, as entity_tallies are by the one that writes
-- entities. A group by a boolean property no entity holds twice (see
-- property_multiplicity) counts each group by adding the tallies the caller
-- may see, instead of visiting every value. The writes that change them
-- hold the database's write lock, so they take turns on its tally rows.
CREATE TABLE boolean_tallies (
    db       text     NOT NULL REFERENCES databases (name),
    prop     text     NOT NULL,
    type_id  text,
    audience bigint   NOT NULL,
    level    smallint,
    value    boolean  NOT NULL,
    count    bigint   NOT NULL,
    UNIQUE NULLS NOT DISTINCT (db, prop, type_id, audience, level, value)
);
INSERT INTO boolean_tallies (db, prop, type_id, audience, level, value, count)
    SELECT db, prop, type_id, audience, level, boolean, count(*) FROM property_values
    WHERE deleted_at IS NULL AND boolean IS NOT NULL AND audience IS NOT NULL
    GROUP BY db, prop, type_id, audience, level, boolean;

CREATE FUNCTION boolean_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO boolean_tallies AS t (db, prop, type_id, audience, level, value, count)
        SELECT db, prop, type_id, audience, level, boolean, count(*) FROM inserted
        WHERE deleted_at IS NULL AND boolean IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, boolean
        ON CONFLICT (db, prop, type_id, audience, level, value) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

-- An update moves a value between tallies when it is deleted or restored,
-- or when its entity's type, audience or views change.
CREATE FUNCTION boolean_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO boolean_tallies AS t (db, prop, type_id, audience, level, value, count)
        SELECT db, prop, type_id, audience, level, boolean, sum(delta) FROM (
            SELECT o.db, o.prop, o.type_id, o.audience, o.level, o.boolean, -1 AS delta FROM previous o
            WHERE o.deleted_at IS NULL AND o.boolean IS NOT NULL AND o.audience IS NOT NULL
            UNION ALL
            SELECT n.db, n.prop, n.type_id, n.audience, n.level, n.boolean, 1 FROM updated n
            WHERE n.deleted_at IS NULL AND n.boolean IS NOT NULL AND n.audience IS NOT NULL
        ) changes
        GROUP BY db, prop, type_id, audience, level, boolean HAVING sum(delta) <> 0
        ON CONFLICT (db, prop, type_id, audience, level, value) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE TRIGGER boolean_values_inserted AFTER INSERT ON property_values
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION boolean_values_inserted();
CREATE TRIGGER boolean_values_updated AFTER UPDATE ON property_values
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION boolean_values_updated();

-- Each group's first entity (lowest `_id`) is the first visible row of its
-- value in this index's order.
DROP INDEX property_values_boolean;
CREATE INDEX property_values_boolean ON property_values (db, prop, boolean, entity_id)
    INCLUDE (type_id, audience, level) WHERE deleted_at IS NULL AND boolean IS NOT NULL;
