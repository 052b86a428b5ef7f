-- Views and full-text search in the projection.
--  public_props / domain_props: properties shown in the public and domain
--  views (besides _type, _parent and _sharing, which always show).
--  search_*: lowercased searchable text of each view, for `q`.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE entities
    ADD COLUMN public_props   text[] NOT NULL DEFAULT '{}',
    ADD COLUMN domain_props   text[] NOT NULL DEFAULT '{}',
    ADD COLUMN search_private text   NOT NULL DEFAULT '',
    ADD COLUMN search_domain  text   NOT NULL DEFAULT '',
    ADD COLUMN search_public  text   NOT NULL DEFAULT '';

CREATE INDEX entities_search_private ON entities USING gin (search_private gin_trgm_ops);
CREATE INDEX entities_search_domain ON entities USING gin (search_domain gin_trgm_ops);
CREATE INDEX entities_search_public ON entities USING gin (search_public gin_trgm_ops);
CREATE INDEX entities_public ON entities (db, id) WHERE deleted_at IS NULL AND sharing = 'public';
