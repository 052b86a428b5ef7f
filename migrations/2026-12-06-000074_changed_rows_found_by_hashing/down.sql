CREATE OR REPLACE FUNCTION entities_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dbs text[];
    ids text[];
BEGIN
    -- most updates change none of it (a document, a name): nothing to do
    SELECT array_agg(n.db), array_agg(n.id) INTO dbs, ids
        FROM updated n JOIN previous o ON o.db = n.db AND o.id = n.id
        WHERE (o.type_id, o.audience, o.public_props, o.domain_props, o.deleted_at IS NULL)
            IS DISTINCT FROM (n.type_id, n.audience, n.public_props, n.domain_props, n.deleted_at IS NULL);
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO audiences (db, id, sharing, viewers, noaccess)
        SELECT DISTINCT ON (db, audience) db, audience, sharing, viewers, noaccess FROM updated
        WHERE sharing <> 'private' OR cardinality(viewers) > 0
        ON CONFLICT DO NOTHING;
    -- through the changed ids, so each entity's values are found by index
    UPDATE property_values v
        SET type_id = e.type_id, audience = e.audience,
            level = value_level(v.prop, e.public_props, e.domain_props)
        FROM unnest(dbs, ids) AS c (db, id) JOIN entities e ON e.db = c.db AND e.id = c.id
        WHERE v.db = c.db AND v.entity_id = c.id AND v.deleted_at IS NULL;
    INSERT INTO entity_tallies AS t (db, type_id, audience, count)
        SELECT db, type_id, audience, sum(delta) FROM (
            SELECT o.db, o.type_id, o.audience, -1 AS delta FROM previous o WHERE o.deleted_at IS NULL
            UNION ALL
            SELECT n.db, n.type_id, n.audience, 1 FROM updated n WHERE n.deleted_at IS NULL
        ) changes
        GROUP BY db, type_id, audience HAVING sum(delta) <> 0
        ON CONFLICT (db, type_id, audience) DO UPDATE SET count = t.count + EXCLUDED.count;
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
    ), counted AS MATERIALIZED (
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
