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

-- A new audience gets its row in the statement that first gives it to an
-- entity; rows are never removed (an unused one matches nothing).
CREATE FUNCTION record_audience() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audiences (db, id, sharing, viewers, noaccess)
        VALUES (NEW.db, NEW.audience, NEW.sharing, NEW.viewers, NEW.noaccess)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

-- The entity's live values follow a change of its type, audience or views.
CREATE FUNCTION follow_value_visibility() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE property_values
        SET type_id = NEW.type_id, audience = NEW.audience,
            level = value_level(prop, NEW.public_props, NEW.domain_props)
        WHERE db = NEW.db AND entity_id = NEW.id AND deleted_at IS NULL;
    RETURN NULL;
END
$$;

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

-- A bare new row (private, no viewers) is visible to no one and needs no
-- audience row until its projection is written.
CREATE TRIGGER entities_record_audience_insert AFTER INSERT ON entities
    FOR EACH ROW WHEN (NEW.sharing <> 'private' OR cardinality(NEW.viewers) > 0)
    EXECUTE FUNCTION record_audience();
CREATE TRIGGER entities_record_audience_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN (OLD.audience IS DISTINCT FROM NEW.audience)
    EXECUTE FUNCTION record_audience();
CREATE TRIGGER entities_value_visibility AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type_id, OLD.audience, OLD.public_props, OLD.domain_props)
        IS DISTINCT FROM (NEW.type_id, NEW.audience, NEW.public_props, NEW.domain_props))
    EXECUTE FUNCTION follow_value_visibility();
