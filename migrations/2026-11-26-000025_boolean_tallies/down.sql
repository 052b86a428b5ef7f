DROP INDEX property_values_boolean;
CREATE INDEX property_values_boolean ON property_values (db, prop, boolean)
    INCLUDE (entity_id, type_id, audience, level) WHERE deleted_at IS NULL AND boolean IS NOT NULL;
DROP TRIGGER boolean_values_updated ON property_values;
DROP TRIGGER boolean_values_inserted ON property_values;
DROP FUNCTION boolean_values_updated();
DROP FUNCTION boolean_values_inserted();
DROP TABLE boolean_tallies;
