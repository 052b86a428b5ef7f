-- A create wrote its change-log row twice: the entity's insert logged it
-- with no properties, then its values' insert rewrote the row with them (a
-- second row version and its index entries, in every create). The entity's
-- row carries its projection, whose keys are the properties it is created
-- with, so the create is logged with them at once; and a later statement of
-- the transaction rewrites the row only when it adds something to it.
CREATE OR REPLACE FUNCTION record_changes(changes entity_change[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO change_log AS c (db, entity_id, actor, action, properties, at)
        SELECT db, entity_id, actor, action, properties, at FROM unnest(changes)
    ON CONFLICT (db, xact, entity_id) DO UPDATE SET
        actor = coalesce(c.actor, EXCLUDED.actor),
        action = CASE
            WHEN 'delete' IN (c.action, EXCLUDED.action) THEN 'delete'
            WHEN 'create' IN (c.action, EXCLUDED.action) THEN 'create'
            ELSE 'update' END,
        properties = ARRAY(SELECT DISTINCT p FROM unnest(c.properties || EXCLUDED.properties) p ORDER BY p),
        at = greatest(c.at, EXCLUDED.at)
    WHERE NOT EXCLUDED.properties <@ c.properties
        OR (c.actor IS NULL AND EXCLUDED.actor IS NOT NULL)
        OR EXCLUDED.at > c.at
        OR (EXCLUDED.action = 'delete' AND c.action <> 'delete')
        OR (EXCLUDED.action = 'create' AND c.action = 'update')
$$;

CREATE OR REPLACE FUNCTION entities_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, id, created_by, 'create',
            ARRAY(SELECT p FROM jsonb_object_keys(doc) p WHERE p <> '_id' ORDER BY p),
            created_at)::entity_change
        FROM created
        WHERE deleted_at IS NULL));
    RETURN NULL;
END
$$;
