-- The webhooks' outbox leaves out two kinds of change: those of webhook
-- entities, for the webhooks of any type (no `entity_type`): a webhook is
-- a credential holder, not data, and would be told of its own writes (a
-- webhook naming the webhook type still is); and the update naming no
-- property that logs an entity whose rights followed its parent's (no
-- value of it changed).
CREATE OR REPLACE FUNCTION webhook_outbox_fill() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change change_log;
    changed_type text;
    changed_type_name text;
BEGIN
    SELECT e.type_id, t.name INTO changed_type, changed_type_name
    FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id
    WHERE e.db = NEW.db AND e.id = NEW.entity_id;
    IF changed_type_name = 'webhook' THEN
        PERFORM webhook_refresh(NEW.db, NEW.entity_id);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM webhooks WHERE db = NEW.db AND parked_at IS NULL) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO change FROM change_log WHERE db = NEW.db AND id = NEW.id;
    IF change.action = 'update' AND change.properties = '{}' THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_outbox (db, webhook_id, entity_id, event, at)
    SELECT change.db, w.id, change.entity_id, change.action, change.at
    FROM webhooks w
    WHERE w.db = change.db AND w.parked_at IS NULL AND w.url IS NOT NULL
        AND change.action = ANY (w.events)
        AND (w.entity_type IS NULL AND changed_type_name IS DISTINCT FROM 'webhook'
            OR w.entity_type = changed_type);
    RETURN NULL;
END
$$;
