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

DROP FUNCTION record_changes(entity_change[], boolean);
CREATE FUNCTION record_changes(changes entity_change[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
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
        OR (EXCLUDED.action = 'create' AND c.action = 'update');
END
$$;

DROP TRIGGER webhook_outbox_fill ON change_log;
CREATE CONSTRAINT TRIGGER webhook_outbox_fill AFTER INSERT ON change_log
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION webhook_outbox_fill();

ALTER TABLE change_log DROP COLUMN for_webhooks;
