-- The webhooks' outbox trigger, deferred to commit, ran for every change-log
-- row: a create paid for it (two entity look-ups and a webhooks probe, 20
-- µs) in a database without a single webhook. A change-log row now says
-- whether it may concern a webhook, and the trigger is queued only for those
-- that may. A create statement decides it once for all its entities: when
-- the database has a live webhook, or when one of them is a webhook (whose
-- settings the trigger keeps). Every other change is logged as before.
ALTER TABLE change_log ADD COLUMN for_webhooks boolean NOT NULL DEFAULT true;

DROP TRIGGER webhook_outbox_fill ON change_log;
CREATE CONSTRAINT TRIGGER webhook_outbox_fill AFTER INSERT ON change_log
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.for_webhooks) EXECUTE FUNCTION webhook_outbox_fill();

DROP FUNCTION record_changes(entity_change[]);
CREATE FUNCTION record_changes(changes entity_change[], for_webhooks boolean DEFAULT true)
    RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO change_log AS c (db, entity_id, actor, action, properties, at, for_webhooks)
        SELECT db, entity_id, actor, action, properties, at, record_changes.for_webhooks FROM unnest(changes)
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

CREATE OR REPLACE FUNCTION entities_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, id, created_by, 'create',
            ARRAY(SELECT p FROM jsonb_object_keys(doc) p WHERE p <> '_id' ORDER BY p),
            created_at)::entity_change
        FROM created
        WHERE deleted_at IS NULL),
        -- as the outbox trigger tells a webhook: by its type's name (each
        -- type looked up once: a statement may create thousands)
        EXISTS (SELECT 1 FROM webhooks w WHERE w.db IN (SELECT db FROM created) AND w.parked_at IS NULL)
        OR EXISTS (SELECT 1 FROM (SELECT DISTINCT db, type_id FROM created) n
            JOIN entities t ON t.db = n.db AND t.id = n.type_id WHERE t.name = 'webhook'));
    RETURN NULL;
END
$$;
