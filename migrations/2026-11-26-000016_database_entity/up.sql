-- A database's own entity: the `database` entity whose owners decide where
-- the persons of new logins go (`add_user`). Any person may create another
-- entity of that type; it decides nothing.
ALTER TABLE databases ADD COLUMN entity_id text;

-- Existing databases: their oldest live `database` entity, the one seeded
-- with them.
UPDATE databases d SET entity_id = (
    SELECT e.id FROM entities e
    JOIN entities t ON t.db = e.db AND t.id = e.type_id
    WHERE e.db = d.name AND e.deleted_at IS NULL AND t.name = 'database'
    ORDER BY e.created_at, e.id
    LIMIT 1
);
