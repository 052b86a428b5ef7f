-- Webhooks: the `webhook` entities' delivery settings as the outbox trigger
-- reads them, the outbox of events to deliver, and each attempt made.

-- One row per live webhook entity, kept by the outbox trigger from its
-- values; `parked_at` set when its endpoint failed for `webhooks.retry_hours`.
CREATE TABLE webhooks (
    db          text        NOT NULL REFERENCES databases (name),
    id          text        NOT NULL,
    url         text,
    events      text[]      NOT NULL,
    entity_type text,
    parked_at   timestamptz,
    PRIMARY KEY (db, id)
);
CREATE INDEX webhooks_parked ON webhooks (parked_at) WHERE parked_at IS NOT NULL;

-- An event waiting for delivery to one webhook; deleted once delivered.
-- `since` starts the retry period (the event's recording, or the
-- webhook's resumption); `next_at` is when a worker may take it next.
CREATE TABLE webhook_outbox (
    id         bigserial   PRIMARY KEY,
    db         text        NOT NULL,
    webhook_id text        NOT NULL,
    entity_id  text        NOT NULL,
    event      text        NOT NULL,
    at         timestamptz NOT NULL,
    attempts   integer     NOT NULL DEFAULT 0,
    since      timestamptz NOT NULL DEFAULT now(),
    next_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (db, webhook_id) REFERENCES webhooks (db, id) ON DELETE CASCADE
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_at);
CREATE INDEX webhook_outbox_webhook ON webhook_outbox (db, webhook_id);

-- Each delivery attempt, for the webhook's owners to read.
CREATE TABLE webhook_attempts (
    db          text        NOT NULL REFERENCES databases (name),
    id          bigserial,
    webhook_id  text        NOT NULL,
    message_id  text        NOT NULL,
    event       text        NOT NULL,
    attempt     integer     NOT NULL,
    at          timestamptz NOT NULL,
    status      integer,
    duration_ms integer     NOT NULL,
    error       text,
    PRIMARY KEY (db, id)
);
CREATE INDEX webhook_attempts_webhook ON webhook_attempts (db, webhook_id, id DESC);

-- A webhook entity's settings as its live values say; any write to it
-- resumes it when parked, its waiting events starting a new retry period.
CREATE FUNCTION webhook_refresh(the_db text, the_id text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    was_parked boolean;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM entities WHERE db = the_db AND id = the_id AND deleted_at IS NULL) THEN
        DELETE FROM webhooks WHERE db = the_db AND id = the_id;
        RETURN;
    END IF;
    SELECT parked_at IS NOT NULL INTO was_parked FROM webhooks WHERE db = the_db AND id = the_id;
    INSERT INTO webhooks (db, id, url, events, entity_type)
    SELECT the_db, the_id,
        (SELECT string FROM property_values
            WHERE db = the_db AND entity_id = the_id AND prop = 'url' AND deleted_at IS NULL
            ORDER BY created_at DESC LIMIT 1),
        ARRAY(SELECT DISTINCT string FROM property_values
            WHERE db = the_db AND entity_id = the_id AND prop = 'events' AND deleted_at IS NULL
                AND string IS NOT NULL),
        (SELECT reference FROM property_values
            WHERE db = the_db AND entity_id = the_id AND prop = 'entity_type' AND deleted_at IS NULL
            ORDER BY created_at DESC LIMIT 1)
    ON CONFLICT (db, id) DO UPDATE SET
        url = EXCLUDED.url, events = EXCLUDED.events, entity_type = EXCLUDED.entity_type, parked_at = NULL;
    IF was_parked THEN
        UPDATE webhook_outbox SET since = now(), next_at = now()
        WHERE db = the_db AND webhook_id = the_id;
    END IF;
END
$$;

-- Runs at commit for each change-log row of the transaction, so the
-- event carries the row's final action (later statements of the
-- transaction merge into it). A write to a webhook refreshes it first.
CREATE FUNCTION webhook_outbox_fill() RETURNS trigger LANGUAGE plpgsql AS $$
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
    INSERT INTO webhook_outbox (db, webhook_id, entity_id, event, at)
    SELECT change.db, w.id, change.entity_id, change.action, change.at
    FROM webhooks w
    WHERE w.db = change.db AND w.parked_at IS NULL AND w.url IS NOT NULL
        AND change.action = ANY (w.events)
        AND (w.entity_type IS NULL OR w.entity_type = changed_type);
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER webhook_outbox_fill AFTER INSERT ON change_log
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION webhook_outbox_fill();
