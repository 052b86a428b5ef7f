-- A person's activity (`GET /api/{db}/entity/{id}/activity`): the values they
-- wrote and those they deleted, newest first, each read from its own index.
CREATE INDEX property_values_written_by ON property_values (db, created_by, created_at)
    WHERE created_by IS NOT NULL;
CREATE INDEX property_values_deleted_by ON property_values (db, deleted_by, deleted_at)
    WHERE deleted_by IS NOT NULL;
