DROP INDEX formula_queue_waiting;
ALTER TABLE formula_queue DROP COLUMN attempts, DROP COLUMN not_before, DROP COLUMN parked_at;
