-- Which entities reference something through a given property: a filter on a
-- property's `string` also matches references whose target has that name, and
-- needs to know fast whether the property holds references at all.
CREATE INDEX property_values_prop_reference ON property_values (db, prop, reference)
    WHERE deleted_at IS NULL AND reference IS NOT NULL;
