-- Tallies of number values by bucket: how many live values each (database,
-- property, type, audience, view level, bucket) has, kept by the statements
-- that write value rows, as boolean_tallies are. A range of a number
-- property no entity holds twice counts its whole buckets by adding the
-- tallies the caller may see, and scans the value index only in the
-- buckets at its ends.
--
-- A number's bucket is its IEEE 754 bits, made to order as the numbers do
-- (a negative number's magnitude negated), without their lowest 42: 1,024
-- buckets to each power of two, each a tenth of a percent of its numbers
-- wide. The server computes the same buckets from the same bits
-- (`query::sql::tallies`).
CREATE FUNCTION number_bucket(number double precision) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    bits bigint := ('x' || encode(float8send(number), 'hex'))::bit(64)::bigint;
BEGIN
    RETURN (CASE WHEN bits >= 0 THEN bits ELSE -(bits & 9223372036854775807) END) >> 42;
END
$$;

CREATE TABLE number_tallies (
    db       text     NOT NULL REFERENCES databases (name),
    prop     text     NOT NULL,
    type_id  text,
    audience bigint   NOT NULL,
    level    smallint,
    bucket   bigint   NOT NULL,
    count    bigint   NOT NULL,
    UNIQUE NULLS NOT DISTINCT (db, prop, bucket, type_id, audience, level)
);
INSERT INTO number_tallies (db, prop, type_id, audience, level, bucket, count)
    SELECT db, prop, type_id, audience, level, number_bucket(number), count(*) FROM property_values
    WHERE deleted_at IS NULL AND number IS NOT NULL AND audience IS NOT NULL
    GROUP BY db, prop, type_id, audience, level, number_bucket(number);

CREATE FUNCTION number_values_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO number_tallies AS t (db, prop, type_id, audience, level, bucket, count)
        SELECT db, prop, type_id, audience, level, number_bucket(number), count(*) FROM inserted
        WHERE deleted_at IS NULL AND number IS NOT NULL AND audience IS NOT NULL
        GROUP BY db, prop, type_id, audience, level, number_bucket(number)
        ON CONFLICT (db, prop, bucket, type_id, audience, level) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

-- An update moves a value between tallies when it is deleted or restored,
-- or when its entity's type, audience or views change.
CREATE FUNCTION number_values_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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

CREATE TRIGGER number_values_inserted AFTER INSERT ON property_values
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION number_values_inserted();
CREATE TRIGGER number_values_updated AFTER UPDATE ON property_values
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION number_values_updated();
