DROP INDEX property_values_string;
DROP INDEX property_values_number;
CREATE INDEX property_values_string ON property_values (db, prop, string) WHERE deleted_at IS NULL;
CREATE INDEX property_values_number ON property_values (db, prop, number) WHERE deleted_at IS NULL;
