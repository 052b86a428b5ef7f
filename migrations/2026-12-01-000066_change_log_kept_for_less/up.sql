-- The change log and the entities' audience, kept for less.
--
-- audience_key, the generated column of every entity row written, was an
-- IMMUTABLE SQL function calling array_to_string (STABLE), which PostgreSQL
-- therefore never inlines: each row paid a SQL function's set-up (12 µs
-- a create, 7 in PL/pgSQL). Same expression, same keys.
CREATE OR REPLACE FUNCTION audience_key(sharing text, viewers text[], noaccess text[]) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN ('x' || left(md5(sharing || '|' || array_to_string(viewers, ',') || '|'
        || array_to_string(noaccess, ',')), 16))::bit(64)::bigint;
END
$$;

-- record_changes was a SQL function, whose statements PostgreSQL plans anew
-- on every call: a third of its time in a create. In PL/pgSQL its insert is
-- planned once per connection.
CREATE OR REPLACE FUNCTION record_changes(changes entity_change[]) RETURNS void LANGUAGE plpgsql AS $$
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

-- The statement inserting every value of entities created in its
-- transaction (eds.values_of_new_entities on) logged a change for each of
-- them that the entity's own create row already holds: every value is a key
-- of the projection the entity was inserted with, at the same time, by the
-- same actor. record_changes found that out by probing the log's unique
-- index for every entity and rewrote nothing. values_written, the last of
-- the statement's triggers (they fire in the order of their names), now
-- skips it and clears the setting; property_values_inserted only reads it.
CREATE OR REPLACE FUNCTION property_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.values_of_new_entities', true) = 'on' THEN
        INSERT INTO property_multiplicity AS m (db, prop, several)
        SELECT db, prop, count(*) FROM (
            SELECT db, prop FROM inserted WHERE deleted_at IS NULL
            GROUP BY db, entity_id, prop HAVING count(*) >= 2
        ) several
        GROUP BY db, prop
        ON CONFLICT (db, prop) DO UPDATE SET several = m.several + EXCLUDED.several;
        RETURN NULL;
    END IF;
    WITH changes AS (
        SELECT db, entity_id, prop, count(*) AS added FROM inserted WHERE deleted_at IS NULL
        GROUP BY db, entity_id, prop
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

CREATE OR REPLACE FUNCTION values_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.values_of_new_entities', true) = 'on' THEN
        PERFORM set_config('eds.values_of_new_entities', 'off', true);
        RETURN NULL;
    END IF;
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, entity_id, min(created_by), 'update', array_agg(DISTINCT prop ORDER BY prop),
            max(created_at))::entity_change
        FROM written WHERE deleted_at IS NULL GROUP BY db, entity_id));
    RETURN NULL;
END
$$;
