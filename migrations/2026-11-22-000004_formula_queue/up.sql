-- Entities whose formulas must be computed again because something they read
-- changed. Rows are only ever inserted by writes (never updated, so a write
-- never waits on the queue) and deleted by whoever computes the entity.
CREATE TABLE formula_queue (
    id        bigserial PRIMARY KEY,
    db        text        NOT NULL REFERENCES databases (name),
    entity_id text        NOT NULL,
    -- how many re-computations led here: a cycle that never settles stops
    hops      integer     NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX formula_queue_entity ON formula_queue (db, entity_id);
