-- Groups by one property's values (`group=instock.boolean`,
-- `group=author.reference`) read those values with what decides who may see
-- each, so a whole type's groups are an index-only scan of one property's
-- values, as filters on strings and numbers already are.
CREATE INDEX property_values_boolean ON property_values (db, prop, boolean)
    INCLUDE (entity_id, type_id, audience, level) WHERE deleted_at IS NULL AND boolean IS NOT NULL;
-- Same key and predicate as before, now covering.
DROP INDEX property_values_prop_reference;
CREATE INDEX property_values_prop_reference ON property_values (db, prop, reference)
    INCLUDE (entity_id, type_id, audience, level) WHERE deleted_at IS NULL AND reference IS NOT NULL;
