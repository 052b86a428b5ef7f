-- `eds import` loads a database a thousand entities per statement in one
-- transaction, and each statement added its values to the tallies: every
-- bucket's row was rewritten once per chunk, its old versions kept until
-- commit (a million books left number_tallies at 95 MB for 752 kB of rows,
-- and each rewrite walked the row's versions). An import now says its
-- tallies come later (eds.value_tallies_later, for its transaction) and
-- counts them once, at its end, from the rows it loaded.

CREATE OR REPLACE FUNCTION number_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.value_tallies_later', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO number_tallies AS t (db, prop, type_id, audience, level, bucket, count)
        SELECT db, prop, type_id, audience, level, number_bucket(number), count(*) FROM inserted
        WHERE deleted_at IS NULL AND number IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, number_bucket(number)
        ON CONFLICT (db, prop, bucket, type_id, audience, level) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION number_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.value_tallies_later', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO number_tallies AS t (db, prop, type_id, audience, level, bucket, count)
        SELECT db, prop, type_id, audience, level, bucket, sum(delta) FROM (
            SELECT o.db, o.prop, o.type_id, o.audience, o.level, number_bucket(o.number) AS bucket, -1 AS delta
            FROM previous o
            WHERE o.deleted_at IS NULL AND o.number IS NOT NULL AND o.audience IS NOT NULL
            UNION ALL
            SELECT n.db, n.prop, n.type_id, n.audience, n.level, number_bucket(n.number), 1 FROM updated n
            WHERE n.deleted_at IS NULL AND n.number IS NOT NULL AND n.audience IS NOT NULL
        ) changes
        GROUP BY db, prop, type_id, audience, level, bucket HAVING sum(delta) <> 0
        ON CONFLICT (db, prop, bucket, type_id, audience, level) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION boolean_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.value_tallies_later', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO boolean_tallies AS t (db, prop, type_id, audience, level, value, count)
        SELECT db, prop, type_id, audience, level, boolean, count(*) FROM inserted
        WHERE deleted_at IS NULL AND boolean IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, boolean
        ON CONFLICT (db, prop, type_id, audience, level, value) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION boolean_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('eds.value_tallies_later', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO boolean_tallies AS t (db, prop, type_id, audience, level, value, count)
        SELECT db, prop, type_id, audience, level, boolean, sum(delta) FROM (
            SELECT o.db, o.prop, o.type_id, o.audience, o.level, o.boolean, -1 AS delta FROM previous o
            WHERE o.deleted_at IS NULL AND o.boolean IS NOT NULL AND o.audience IS NOT NULL
            UNION ALL
            SELECT n.db, n.prop, n.type_id, n.audience, n.level, n.boolean, 1 FROM updated n
            WHERE n.deleted_at IS NULL AND n.boolean IS NOT NULL AND n.audience IS NOT NULL
        ) changes
        GROUP BY db, prop, type_id, audience, level, boolean HAVING sum(delta) <> 0
        ON CONFLICT (db, prop, type_id, audience, level, value) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

-- Database `the_db`'s value tallies counted anew from its value rows.
CREATE FUNCTION recount_value_tallies(the_db text) RETURNS void LANGUAGE sql AS $$
    DELETE FROM number_tallies WHERE db = the_db;
    INSERT INTO number_tallies (db, prop, type_id, audience, level, bucket, count)
        SELECT db, prop, type_id, audience, level, number_bucket(number), count(*) FROM property_values
        WHERE db = the_db AND deleted_at IS NULL AND number IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, number_bucket(number);
    DELETE FROM boolean_tallies WHERE db = the_db;
    INSERT INTO boolean_tallies (db, prop, type_id, audience, level, value, count)
        SELECT db, prop, type_id, audience, level, boolean, count(*) FROM property_values
        WHERE db = the_db AND deleted_at IS NULL AND boolean IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, boolean;
$$;
