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
$$;

CREATE OR REPLACE FUNCTION entities_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, id, created_by, 'create', '{}', created_at)::entity_change FROM created
        WHERE deleted_at IS NULL));
    RETURN NULL;
END
$$;
