DROP TRIGGER entities_bump_generation ON entities;
DROP FUNCTION bump_database_generation();
ALTER TABLE databases DROP COLUMN generation;
