-- Visibility decided in the value indexes. A filter, a sort or a count must
-- know whether the caller may see a value without visiting its entity's
-- wide row, so every live value row carries what decides it:
--  * `type_id`: its entity's type (for `_type` filters beside value filters);
--  * `audience`: its entity's effective read-audience (sharing, viewers and
--    `_noaccess` after inheritance) as one number, the same for every entity
--    with the same audience, its lists kept once in `audiences`;
--  * `level`: the widest view showing the value's property on its entity
--    (2 public, 1 domain, 0 only its viewers).
-- A caller sees a value when its audience lists the caller as a viewer, or
-- it is shared beyond private, does not list the caller in `_noaccess` and
-- the level is at least domain; an anonymous caller when the audience is
-- public and the level too. All three columns follow the entity row in the
-- statement that changes it (triggers below), so a narrowing holds at commit.

-- Same lists, same number. Arrays are written sorted, but an unsorted one
-- would only give a second number for the same audience, never a wrong one.
-- Two different audiences sharing a number would share the first one's
-- lists: with 64 bits of MD5 that takes about 4 billion distinct audiences
-- in one database (person ids are the server's, not the caller's choice).
CREATE FUNCTION audience_key(sharing text, viewers text[], noaccess text[]) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN ('x' || left(md5(sharing || '|' || array_to_string(viewers, ',') || '|'
        || array_to_string(noaccess, ',')), 16))::bit(64)::bigint;

CREATE FUNCTION value_level(prop text, public_props text[], domain_props text[]) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE
        WHEN prop IN ('_type', '_parent', '_sharing') OR prop = ANY (public_props) THEN 2
        WHEN prop = ANY (domain_props) THEN 1
        ELSE 0
    END;

ALTER TABLE entities
    ADD COLUMN audience bigint GENERATED ALWAYS AS (audience_key(sharing, viewers, noaccess)) STORED;

CREATE TABLE audiences (
    db       text   NOT NULL REFERENCES databases (name),
    id       bigint NOT NULL,
    sharing  text   NOT NULL,
    viewers  text[] NOT NULL,
    noaccess text[] NOT NULL,
    PRIMARY KEY (db, id)
);
INSERT INTO audiences (db, id, sharing, viewers, noaccess)
    SELECT DISTINCT ON (db, audience) db, audience, sharing, viewers, noaccess FROM entities;

ALTER TABLE property_values
    ADD COLUMN type_id  text,
    ADD COLUMN audience bigint,
    ADD COLUMN level    smallint;

DROP INDEX property_values_string;
DROP INDEX property_values_number;
UPDATE property_values v
    SET type_id = e.type_id, audience = e.audience, level = value_level(v.prop, e.public_props, e.domain_props)
    FROM entities e
    WHERE v.db = e.db AND v.entity_id = e.id AND v.deleted_at IS NULL;
CREATE INDEX property_values_string ON property_values (db, prop, string)
    INCLUDE (entity_id, type_id, audience, level) WHERE deleted_at IS NULL AND string IS NOT NULL;
CREATE INDEX property_values_number ON property_values (db, prop, number)
    INCLUDE (entity_id, type_id, audience, level) WHERE deleted_at IS NULL AND number IS NOT NULL;

-- Value rows inserted without them (`insert_values` sets them from the
-- entity row in its own statement; any other insert gets them here).
CREATE FUNCTION take_value_visibility() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT e.type_id, e.audience, value_level(NEW.prop, e.public_props, e.domain_props)
        INTO NEW.type_id, NEW.audience, NEW.level
        FROM entities e WHERE e.db = NEW.db AND e.id = NEW.entity_id;
    RETURN NEW;
END
$$;
CREATE TRIGGER property_values_take_visibility BEFORE INSERT ON property_values
    FOR EACH ROW WHEN (NEW.audience IS NULL)
    EXECUTE FUNCTION take_value_visibility();

-- Tallies: how many live entities each (database, type, audience) has,
-- kept by the statement that creates, deletes or re-types an entity or
-- changes who may read it. A list of a whole type (or database) counts its
-- matches for any caller by adding the tallies of the audiences the caller
-- may read, instead of visiting every entity. The writes that change them
-- hold the database's write lock, so they take turns on its tally rows.
CREATE TABLE entity_tallies (
    db       text   NOT NULL REFERENCES databases (name),
    type_id  text,
    audience bigint NOT NULL,
    count    bigint NOT NULL,
    UNIQUE NULLS NOT DISTINCT (db, type_id, audience)
);
INSERT INTO entity_tallies (db, type_id, audience, count)
    SELECT db, type_id, audience, count(*) FROM entities WHERE deleted_at IS NULL
    GROUP BY db, type_id, audience;

-- Once per statement, over all the rows it wrote (a re-projection writes a
-- thousand entities of a type in one, which then update its tally row
-- once): a new audience gets its row (rows are never removed; an unused one
-- matches nothing), the live values of an entity whose type, audience or
-- views changed follow it, and the tallies take the changes. A bare new row
-- (private, no viewers) is visible to no one and needs no audience row.
CREATE FUNCTION entities_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audiences (db, id, sharing, viewers, noaccess)
        SELECT DISTINCT ON (db, audience) db, audience, sharing, viewers, noaccess FROM inserted
        WHERE sharing <> 'private' OR cardinality(viewers) > 0
        ON CONFLICT DO NOTHING;
    INSERT INTO entity_tallies AS t (db, type_id, audience, count)
        SELECT db, type_id, audience, count(*) FROM inserted WHERE deleted_at IS NULL
        GROUP BY db, type_id, audience
        ON CONFLICT (db, type_id, audience) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE FUNCTION entities_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    dbs text[];
    ids text[];
BEGIN
    -- most updates change none of it (a document, a name): nothing to do
    SELECT array_agg(n.db), array_agg(n.id) INTO dbs, ids
        FROM updated n JOIN previous o ON o.db = n.db AND o.id = n.id
        WHERE (o.type_id, o.audience, o.public_props, o.domain_props, o.deleted_at IS NULL)
            IS DISTINCT FROM (n.type_id, n.audience, n.public_props, n.domain_props, n.deleted_at IS NULL);
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO audiences (db, id, sharing, viewers, noaccess)
        SELECT DISTINCT ON (db, audience) db, audience, sharing, viewers, noaccess FROM updated
        WHERE sharing <> 'private' OR cardinality(viewers) > 0
        ON CONFLICT DO NOTHING;
    -- through the changed ids, so each entity's values are found by index
    UPDATE property_values v
        SET type_id = e.type_id, audience = e.audience,
            level = value_level(v.prop, e.public_props, e.domain_props)
        FROM unnest(dbs, ids) AS c (db, id) JOIN entities e ON e.db = c.db AND e.id = c.id
        WHERE v.db = c.db AND v.entity_id = c.id AND v.deleted_at IS NULL;
    INSERT INTO entity_tallies AS t (db, type_id, audience, count)
        SELECT db, type_id, audience, sum(delta) FROM (
            SELECT o.db, o.type_id, o.audience, -1 AS delta FROM previous o WHERE o.deleted_at IS NULL
            UNION ALL
            SELECT n.db, n.type_id, n.audience, 1 FROM updated n WHERE n.deleted_at IS NULL
        ) changes
        GROUP BY db, type_id, audience HAVING sum(delta) <> 0
        ON CONFLICT (db, type_id, audience) DO UPDATE SET count = t.count + EXCLUDED.count;
    RETURN NULL;
END
$$;

CREATE TRIGGER entities_inserted AFTER INSERT ON entities
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION entities_inserted();
CREATE TRIGGER entities_updated AFTER UPDATE ON entities
    REFERENCING OLD TABLE AS previous NEW TABLE AS updated
    FOR EACH STATEMENT EXECUTE FUNCTION entities_updated();
