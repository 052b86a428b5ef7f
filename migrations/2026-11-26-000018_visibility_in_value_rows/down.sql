DROP TRIGGER entities_updated ON entities;
DROP TRIGGER entities_inserted ON entities;
DROP FUNCTION entities_updated();
DROP FUNCTION entities_inserted();
DROP TRIGGER property_values_take_visibility ON property_values;
DROP FUNCTION take_value_visibility();
DROP INDEX property_values_string;
DROP INDEX property_values_number;
ALTER TABLE property_values DROP COLUMN type_id, DROP COLUMN audience, DROP COLUMN level;
CREATE INDEX property_values_string ON property_values (db, prop, string) INCLUDE (entity_id)
    WHERE deleted_at IS NULL AND string IS NOT NULL;
CREATE INDEX property_values_number ON property_values (db, prop, number) INCLUDE (entity_id)
    WHERE deleted_at IS NULL AND number IS NOT NULL;
DROP TABLE entity_tallies;
DROP TABLE audiences;
ALTER TABLE entities DROP COLUMN audience;
DROP FUNCTION value_level(text, text[], text[]);
DROP FUNCTION audience_key(text, text[], text[]);
