-- The change log: a row per entity per writing transaction, kept
-- by triggers in the transaction that writes, for the change feed and the
-- webhooks' outbox. Every transaction that writes entities or values of a
-- database holds the database's write lock from before its first row, and
-- releases it only at commit, so within a database the ids drawn here
-- increase in commit order (across databases they interleave).
CREATE SEQUENCE change_log_ids;
CREATE TABLE change_log (
    db         text        NOT NULL REFERENCES databases (name),
    id         bigint      NOT NULL DEFAULT nextval('change_log_ids'),
    -- the writing transaction: several statements of it merge into one row
    xact       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    entity_id  text        NOT NULL,
    actor      text,
    action     text        NOT NULL CHECK (action IN ('create', 'update', 'delete')),
    properties text[]      NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (db, id),
    UNIQUE (db, xact, entity_id)
);
CREATE INDEX change_log_at ON change_log (at);

-- What one statement changed of one entity.
CREATE TYPE entity_change AS (db text, entity_id text, actor text, action text, properties text[], at timestamptz);

-- Records changes into the transaction's row for their entity, if any: a
-- deletion outweighs a creation, which outweighs an update, the properties
-- touched add up, and the first person known stays the author.
CREATE FUNCTION record_changes(changes entity_change[]) RETURNS void LANGUAGE sql AS $$
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

CREATE FUNCTION entities_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, id, created_by, 'create', '{}', created_at)::entity_change FROM created
        WHERE deleted_at IS NULL));
    RETURN NULL;
END
$$;
CREATE TRIGGER entities_created AFTER INSERT ON entities
    REFERENCING NEW TABLE AS created
    FOR EACH STATEMENT EXECUTE FUNCTION entities_created();

-- A deletion, or an undeletion (which brings the entity back as created).
CREATE FUNCTION entity_deletion_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.deleted_at IS NOT NULL THEN
        PERFORM record_changes(ARRAY[ROW(NEW.db, NEW.id, NEW.deleted_by, 'delete', '{}',
            NEW.deleted_at)::entity_change]);
    ELSE
        PERFORM record_changes(ARRAY[ROW(NEW.db, NEW.id, NULL, 'create', '{}', now())::entity_change]);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER entity_deletion_changed AFTER UPDATE OF deleted_at ON entities
    FOR EACH ROW WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at)
    EXECUTE FUNCTION entity_deletion_changed();

CREATE FUNCTION values_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, entity_id, min(created_by), 'update', array_agg(DISTINCT prop ORDER BY prop),
            max(created_at))::entity_change
        FROM written WHERE deleted_at IS NULL GROUP BY db, entity_id));
    RETURN NULL;
END
$$;
CREATE TRIGGER values_written AFTER INSERT ON property_values
    REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION values_written();

CREATE FUNCTION value_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM record_changes(ARRAY[ROW(NEW.db, NEW.entity_id, NEW.deleted_by, 'update', ARRAY[NEW.prop],
        NEW.deleted_at)::entity_change]);
    RETURN NULL;
END
$$;
CREATE TRIGGER value_deleted AFTER UPDATE OF deleted_at ON property_values
    FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
    EXECUTE FUNCTION value_deleted();
