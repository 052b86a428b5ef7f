ALTER TABLE databases DROP COLUMN moved_at;
DROP TABLE placements;
