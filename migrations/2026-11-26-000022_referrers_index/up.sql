-- Referrers (`_reference.reference=ID`): the references of an entity's own
-- (not system) properties, with what decides who may see each, so listing
-- and counting the entities that refer to ID is an index-only scan. It
-- takes the place of `property_values_user_reference` (same key and
-- predicate), which the formula lookups used and now find here.
CREATE INDEX property_values_referrers ON property_values (db, reference)
    INCLUDE (entity_id, prop, type_id, audience, level)
    WHERE deleted_at IS NULL AND reference IS NOT NULL AND prop NOT LIKE '\_%';
DROP INDEX property_values_user_reference;
