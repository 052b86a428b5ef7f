ALTER TABLE property_values DROP COLUMN object_id;
