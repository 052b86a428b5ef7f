-- Databases served by this instance.
CREATE TABLE databases (
    name       text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One row per entity. Besides its lifecycle, the row holds the entity's read
-- projection, rebuilt from its live values in the transaction of every write,
-- so reads never reassemble an entity from its value rows.
CREATE TABLE entities (
    db             text        NOT NULL REFERENCES databases (name),
    id             text        NOT NULL,
    created_at     timestamptz NOT NULL,
    created_by     text,
    deleted_at     timestamptz,
    deleted_by     text,
    -- projection
    type_id        text,
    parent_ids     text[]      NOT NULL DEFAULT '{}',
    name           text,
    sharing        text        NOT NULL DEFAULT 'private',
    inherit_rights boolean     NOT NULL DEFAULT false,
    -- effective rights: cumulative (owners within editors within expanders
    -- within viewers), inherited where asked, with _noaccess removed
    owners         text[]      NOT NULL DEFAULT '{}',
    editors        text[]      NOT NULL DEFAULT '{}',
    expanders      text[]      NOT NULL DEFAULT '{}',
    viewers        text[]      NOT NULL DEFAULT '{}',
    noaccess       text[]      NOT NULL DEFAULT '{}',
    doc            jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (db, id)
);
CREATE INDEX entities_type ON entities (db, type_id, id) WHERE deleted_at IS NULL;
CREATE INDEX entities_name ON entities (db, name) WHERE deleted_at IS NULL;
CREATE INDEX entities_parents ON entities USING gin (parent_ids);
CREATE INDEX entities_viewers ON entities USING gin (viewers);

-- Every value ever written. Nothing is physically deleted: a removed or
-- overwritten value gets deleted_at/deleted_by and stays for the audit trail.
CREATE TABLE property_values (
    db            text        NOT NULL,
    id            text        NOT NULL,
    entity_id     text        NOT NULL,
    prop          text        NOT NULL,
    string        text,
    number        double precision,
    boolean       boolean,
    date          date,
    datetime      timestamptz,
    reference     text,
    filename      text,
    filesize      bigint,
    filetype      text,
    language      text,
    -- credential material (an API key's scrypt hash); never shown
    secret        text,
    -- short digest of an API key, to find its row without trying every hash
    secret_lookup text,
    created_at    timestamptz NOT NULL,
    created_by    text,
    deleted_at    timestamptz,
    deleted_by    text,
    PRIMARY KEY (db, id),
    FOREIGN KEY (db, entity_id) REFERENCES entities (db, id)
);
CREATE INDEX property_values_entity ON property_values (db, entity_id, prop);
CREATE INDEX property_values_string ON property_values (db, prop, string) WHERE deleted_at IS NULL;
CREATE INDEX property_values_number ON property_values (db, prop, number) WHERE deleted_at IS NULL;
CREATE INDEX property_values_reference ON property_values (db, reference) WHERE deleted_at IS NULL AND reference IS NOT NULL;
CREATE INDEX property_values_secret ON property_values (secret_lookup) WHERE secret_lookup IS NOT NULL AND deleted_at IS NULL;
