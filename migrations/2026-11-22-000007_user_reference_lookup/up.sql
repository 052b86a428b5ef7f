-- Which entities reference a given one through their own (not system)
-- properties: the formulas to recompute after a write. Without it the lookup
-- reads every `_owner` and `_created` reference to a person, a million rows in
-- a database that person owns.
CREATE INDEX property_values_user_reference ON property_values (db, reference)
    WHERE deleted_at IS NULL AND reference IS NOT NULL AND prop NOT LIKE '\_%';
