-- The functions as migrations visibility_in_value_rows, change_log_rows_written_once,
-- multiplicity_of_new_entities and change_log made them.
CREATE OR REPLACE FUNCTION audience_key(sharing text, viewers text[], noaccess text[]) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ('x' || left(md5(sharing || '|' || array_to_string(viewers, ',') || '|'
        || array_to_string(noaccess, ',')), 16))::bit(64)::bigint;

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

CREATE OR REPLACE FUNCTION property_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.values_of_new_entities', true) = 'on' THEN
        PERFORM set_config('eds.values_of_new_entities', 'off', true);
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
    PERFORM record_changes(ARRAY(
        SELECT ROW(db, entity_id, min(created_by), 'update', array_agg(DISTINCT prop ORDER BY prop),
            max(created_at))::entity_change
        FROM written WHERE deleted_at IS NULL GROUP BY db, entity_id));
    RETURN NULL;
END
$$;
