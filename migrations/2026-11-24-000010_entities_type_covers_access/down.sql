DROP INDEX entities_type;
CREATE INDEX entities_type ON entities (db, type_id, id) WHERE deleted_at IS NULL;
