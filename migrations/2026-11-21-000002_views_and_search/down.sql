DROP INDEX entities_public;
ALTER TABLE entities
    DROP COLUMN public_props,
    DROP COLUMN domain_props,
    DROP COLUMN search_private,
    DROP COLUMN search_domain,
    DROP COLUMN search_public;
