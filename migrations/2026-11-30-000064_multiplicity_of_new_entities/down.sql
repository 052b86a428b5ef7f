-- The functions as migration property_multiplicity made them.
CREATE OR REPLACE FUNCTION property_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION property_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
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
