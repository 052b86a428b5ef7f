-- An entry whose computation fails is tried again later (`not_before`), and
-- after `actors.formula_attempts` failures parked: kept for an operator to
-- see, but no longer taken, so it never holds up the entries behind it.
ALTER TABLE formula_queue
    ADD COLUMN attempts   integer     NOT NULL DEFAULT 0,
    ADD COLUMN not_before timestamptz,
    ADD COLUMN parked_at  timestamptz;
-- the worker's scan, oldest first: parked entries are not in its way
CREATE INDEX formula_queue_waiting ON formula_queue (id) WHERE parked_at IS NULL;
