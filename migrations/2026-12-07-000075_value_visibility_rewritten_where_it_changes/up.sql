-- A change to an entity's views rewrote the visibility of every one of its
-- live values, though most keep theirs: a definition shown more widely
-- changes the level of that property's values only. Each rewritten value
-- row adds an entry to every index of the table; the others are now left
-- as they are. The value tallies count from the rows an update changed, so
-- a row left alone changes none of them.

CREATE OR REPLACE FUNCTION entities_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dbs text[];
    ids text[];
BEGIN
    -- most updates change none of it (a document, a name): nothing to do
    SELECT array_agg(c.db), array_agg(c.id) INTO dbs, ids FROM (
        SELECT db, id, type_id, audience, public_props, domain_props, deleted_at IS NULL FROM updated
        EXCEPT
        SELECT db, id, type_id, audience, public_props, domain_props, deleted_at IS NULL FROM previous
    ) c;
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
        WHERE v.db = c.db AND v.entity_id = c.id AND v.deleted_at IS NULL
        AND (v.type_id, v.audience, v.level)
            IS DISTINCT FROM (e.type_id, e.audience, value_level(v.prop, e.public_props, e.domain_props));
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
