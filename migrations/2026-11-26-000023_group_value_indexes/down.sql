DROP INDEX property_values_boolean;
DROP INDEX property_values_prop_reference;
CREATE INDEX property_values_prop_reference ON property_values (db, prop, reference)
    WHERE deleted_at IS NULL AND reference IS NOT NULL;
