DROP TRIGGER entities_tally_update ON entities;
DROP TRIGGER entities_tally_insert ON entities;
DROP FUNCTION tally_entity();
DROP TABLE entity_tallies;
