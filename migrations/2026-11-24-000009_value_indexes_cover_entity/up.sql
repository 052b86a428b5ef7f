-- A filter finds its values through these indexes and needs only their
-- entities' ids: with the id in the index, that is an index-only scan
-- instead of one heap visit per matching value.
DROP INDEX property_values_string;
DROP INDEX property_values_number;
CREATE INDEX property_values_string ON property_values (db, prop, string) INCLUDE (entity_id) WHERE deleted_at IS NULL;
CREATE INDEX property_values_number ON property_values (db, prop, number) INCLUDE (entity_id) WHERE deleted_at IS NULL;
