-- Which properties are single-valued, exactly, per database: how many
-- entities hold two or more live values of each property. Where none does,
-- a sort by the property, or a group by it, can take each value row as its
-- entity's key: no per-entity smallest or largest value over the matches
-- (a hash aggregate over every matching entity), and a sort whose filter
-- bounds the property on the other side still reads its keys from the
-- matching values alone. Kept by the statement that inserts value rows or
-- deletes (or restores) them, from its transition tables; the writes that
-- change it hold the database's write lock, so they take turns on its rows.
CREATE TABLE property_multiplicity (
    db      text   NOT NULL REFERENCES databases (name),
    prop    text   NOT NULL,
    several bigint NOT NULL,
    PRIMARY KEY (db, prop)
);
INSERT INTO property_multiplicity (db, prop, several)
    SELECT db, prop, count(*) FROM (
        SELECT db, entity_id, prop FROM property_values WHERE deleted_at IS NULL
        GROUP BY db, entity_id, prop HAVING count(*) > 1
    ) held GROUP BY db, prop;

-- Each function gathers, per (database, entity, property) the statement
-- touched, the live values it added (negative: removed); with the live
-- values now, that tells whether the entity held several before and after.
CREATE FUNCTION property_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH changes AS (
        SELECT db, entity_id, prop, count(*) AS added FROM inserted WHERE deleted_at IS NULL
        GROUP BY db, entity_id, prop
    ), counted AS (
        SELECT c.db, c.prop, c.added, (SELECT count(*) FROM property_values v WHERE v.db = c.db
            AND v.entity_id = c.entity_id AND v.prop = c.prop AND v.deleted_at IS NULL) AS now
        FROM changes c
    )
    INSERT INTO property_multiplicity AS m (db, prop, several)
    SELECT db, prop, sum((now >= 2)::int - (now - added >= 2)::int) FROM counted
    GROUP BY db, prop HAVING sum((now >= 2)::int - (now - added >= 2)::int) <> 0
    ON CONFLICT (db, prop) DO UPDATE SET several = m.several + EXCLUDED.several;
    RETURN NULL;
END
$$;

-- Most updates of value rows carry their entity's visibility and leave
-- every value live or deleted as it was: nothing changes.
CREATE FUNCTION property_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH changes AS (
        SELECT n.db, n.entity_id, n.prop, sum(CASE WHEN n.deleted_at IS NULL THEN 1 ELSE -1 END) AS added
        FROM updated n JOIN previous o ON o.db = n.db AND o.id = n.id
        WHERE (o.deleted_at IS NULL) <> (n.deleted_at IS NULL)
        GROUP BY n.db, n.entity_id, n.prop
    ), counted AS (
        SELECT c.db, c.prop, c.added, (SELECT count(*) FROM property_values v WHERE v.db = c.db
            AND v.entity_id = c.entity_id AND v.prop = c.prop AND v.deleted_at IS NULL) AS now
        FROM changes c
    )
    INSERT INTO property_multiplicity AS m (db, prop, several)
    SELECT db, prop, sum((now >= 2)::int - (now - added >= 2)::int) FROM counted
    GROUP BY db, prop HAVING sum((now >= 2)::int - (now - added >= 2)::int) <> 0
    ON CONFLICT (db, prop) DO UPDATE SET several = m.several + EXCLUDED.several;
    RETURN NULL;
END
$$;

CREATE TRIGGER property_values_inserted AFTER INSERT ON property_values
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION property_values_inserted();
CREATE TRIGGER property_values_updated AFTER UPDATE ON property_values
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION property_values_updated();
