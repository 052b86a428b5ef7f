ALTER TABLE databases DROP COLUMN entity_id;
